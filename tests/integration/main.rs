//! The integration tests: one binary (every test file used to link all of Bevy on
//! its own), one module per area, sharing the harness in `support`.

mod support;

mod action_facts;
mod actions;
mod autoplay;
mod backend_switch;
mod bunker_screenshot;
mod busy_queue;
mod conversations;
mod data_files;
mod debug_report;
mod degradation;
mod echo7_walkthrough;
mod fact_gossip;
mod game_clock;
mod game_save;
mod hostile_saves;
#[cfg(feature = "http")]
mod http_actions;
#[cfg(feature = "http")]
mod http_backend;
mod inspector;
mod isolation;
mod knowledge;
mod knowledge_bench;
mod layered_memory;
mod lifecycle;
mod load_journal;
mod load_lines;
mod loads;
#[cfg(feature = "local-llm")]
mod local_actions;
#[cfg(feature = "local-llm")]
mod local_llm;
#[cfg(feature = "local-llm")]
mod local_reuse;
mod lore;
mod observers;
mod persistence;
mod personas;
#[cfg(feature = "http")]
mod prompt_cache;
mod public_api;
#[cfg(feature = "http")]
mod real_server;
mod reflection;
mod reply_fields;
mod scheduler;
mod server_script;
mod shift_change;
mod slot_copies;
mod speakers;
mod state_machine;
mod telemetry;
#[cfg(feature = "http")]
mod terminal_chat;
mod tier_memory;
mod unicode_fuzz;
