//! The turn pipeline: game events in, memory changes and requests out. Each
//! stage is a system with its own small system parameter, makes one call into
//! the memory core per event, and hands the rest of the turn on through
//! [`NpcRequests`](crate::dialogue::NpcRequests): lines ready to answer,
//! requests for the scheduler, results to record.
//!
//! - `core.rs`: [`TurnCore`](core::TurnCore), what every stage borrows.
//! - `intake.rs`: the game's requests, one system per kind.
//! - `turns.rs`: lines are answered; `knowledge.rs`: events, tellings and
//!   privacy marks enter memory.
//! - `personas.rs`: personas and tiers reach memory; `reconfigure.rs`: NPC-wide
//!   changes; `interrupt.rs`: a turn is cut short.
//! - `dispatch.rs`: requests are queued and sent; `results.rs`: replies and
//!   summaries come back; `actions.rs`: the actions a reply called go to the game
//!   and enter memory.
//! - `conversing/`: conversations among NPCs go round, turn by turn (`flow.rs`:
//!   start, hand-over and end; `lines.rs`: each line goes round; `news.rs`: what
//!   the pipeline reported that a conversation waits for).
//! - `settle.rs`: what a load or restore leaves for turns.
//! - `outbox.rs`: what the game hears, as messages and entity events.

mod actions;
mod conversing;
mod core;
mod dispatch;
mod intake;
mod interrupt;
mod knowledge;
mod outbox;
mod personas;
mod reconfigure;
mod results;
mod settle;
mod turns;

use bevy::prelude::*;

pub(crate) use intake::FactCursors;

use crate::plugin::actions::rounds_answered;
use crate::plugin::conversations::{EndConversation, StartConversation};
use crate::plugin::messages::{
    ClearNpcMemory, InterruptNpc, ReconfigureNpcMemory, SummarizeNow, SwitchBackend, TalkToNpc,
};
use crate::plugin::persona::PersonaChange;
use crate::plugin::sets::{CollectStep, IntakeStep, LoadStep, NpcMemorySystems, PersistStep};
use crate::plugin::settings::NpcMemorySettings;
use dispatch::{dispatch_requests, outbound_waiting, queue_outbound};
use intake::{
    apply_facts, clear_npcs, reconfigure_npcs, summarize_npcs, switch_backends, sync_line_rules,
    take_lines,
};
use interrupt::interrupt_npcs;
use results::{receive_results, record_results, results_arrived};
use turns::{lines_ready, start_lines};

/// Each chain below is one step's work: the entity events its stages trigger
/// are applied once after the chain, with no sync point between the stages,
/// which read none of them.
pub(crate) fn plugin(app: &mut App) {
    app.add_message::<PersonaChange>()
        .init_resource::<FactCursors>()
        .add_systems(
            Update,
            (
                sync_line_rules
                    .run_if(resource_changed::<NpcMemorySettings>)
                    .before(LoadStep::Swap)
                    .in_set(NpcMemorySystems::Personas),
                settle::settle_loads.in_set(LoadStep::Settle),
                personas::resolve_personas.in_set(LoadStep::Personas),
                personas::apply_personas
                    .run_if(on_message::<PersonaChange>)
                    .in_set(LoadStep::Bind),
                start_lines.run_if(lines_ready).in_set(LoadStep::Answer),
                personas::apply_tiers.in_set(IntakeStep::Tiers),
                knowledge::take_knowledge.in_set(IntakeStep::Knowledge),
                // Each kind only on frames that have one: the game's requests
                // cost nothing on the frames without.
                (
                    switch_backends.run_if(on_message::<SwitchBackend>),
                    apply_facts,
                    reconfigure_npcs.run_if(on_message::<ReconfigureNpcMemory>),
                    clear_npcs.run_if(on_message::<ClearNpcMemory>),
                    conversing::start_and_end_conversations.run_if(
                        on_message::<StartConversation>.or_eager(on_message::<EndConversation>),
                    ),
                    interrupt_npcs.run_if(on_message::<InterruptNpc>),
                    take_lines.run_if(on_message::<TalkToNpc>),
                    start_lines.run_if(lines_ready),
                    summarize_npcs.run_if(on_message::<SummarizeNow>),
                )
                    .chain_ignore_deferred()
                    .in_set(IntakeStep::Lines),
            ),
        )
        .add_systems(
            Update,
            (
                // Cancelled turns leave the queue before their calls could reach
                // the game's handlers.
                (
                    queue_outbound.run_if(outbound_waiting),
                    receive_results,
                    actions::take_calls.run_if(results_arrived),
                    record_results.run_if(results_arrived),
                    start_lines.run_if(lines_ready),
                )
                    .chain_ignore_deferred()
                    .in_set(CollectStep::Results),
                (apply_facts, actions::record_actions)
                    .chain()
                    .run_if(rounds_answered)
                    .in_set(CollectStep::Record),
                (
                    conversing::take_turn_news,
                    conversing::advance_conversations.run_if(conversing::conversations_running),
                    start_lines.run_if(lines_ready),
                )
                    .chain_ignore_deferred()
                    .in_set(CollectStep::Converse),
                (queue_outbound.run_if(outbound_waiting), dispatch_requests)
                    .chain_ignore_deferred()
                    .in_set(CollectStep::Dispatch),
                (
                    settle::settle_io,
                    personas::settle_imports,
                    start_lines.run_if(lines_ready),
                )
                    .chain_ignore_deferred()
                    .in_set(PersistStep::Settle),
            ),
        )
        // Independent of the exit flush: held lines are in no save.
        .add_systems(Last, settle::hand_back_on_exit);
}
