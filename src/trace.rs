//! The `tracing` target shared by every layer that reports telemetry. It lives at
//! the bottom, so the backends can log under it without knowing the plugin.

/// The `tracing` target of every telemetry event. Filter on it, for example with
/// `RUST_LOG=bevy_npc_memory::telemetry=debug`.
pub const TELEMETRY_TARGET: &str = "bevy_npc_memory::telemetry";
