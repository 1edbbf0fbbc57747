//! Telemetry: every request, response, summary update and degradation, as `tracing`
//! events and, optionally, as JSON lines in a file (the seed's `[Memory]` log).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Sender, channel};
use std::thread::JoinHandle;

use bevy::prelude::*;
use serde::Serialize;

use crate::llm::{Purpose, TokenUsage};
use crate::memory::{Degradation, LogIndex, NpcId, PromptMessage, SummaryTrigger};

/// The `tracing` target of every telemetry event. Filter on it, for example with
/// `RUST_LOG=bevy_npc_memory::telemetry=debug`.
pub const TELEMETRY_TARGET: &str = "bevy_npc_memory::telemetry";

/// One telemetry record. In the JSON-lines file each is one object whose `event`
/// field names the variant: `request`, `response`, `summary_updated`, `reply_cut`,
/// `degraded`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum TelemetryEvent {
    /// A request was sent to a backend.
    Request {
        /// For whom.
        npc: NpcId,
        /// Reply or summary.
        purpose: Purpose,
        /// The backend's name.
        backend: String,
        /// Game time, in seconds.
        at: f64,
        /// Exactly what was sent.
        messages: Vec<PromptMessage>,
        /// Estimated prompt tokens.
        estimated_tokens: usize,
    },
    /// A backend answered or failed.
    Response {
        /// For whom.
        npc: NpcId,
        /// Reply or summary.
        purpose: Purpose,
        /// Wall-clock time of the request, in milliseconds.
        latency_ms: f64,
        /// Retries the backend made.
        retries: u32,
        /// The text, when it succeeded.
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// Why it failed, when it did.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Estimated tokens of the text.
        estimated_tokens: usize,
        /// Token counts reported by the provider.
        #[serde(skip_serializing_if = "Option::is_none")]
        usage: Option<TokenUsage>,
    },
    /// A summary was accepted and the system prompt rewritten.
    SummaryUpdated {
        /// Whose memory.
        npc: NpcId,
        /// The summary before.
        old: String,
        /// The summary now.
        new: String,
        /// First log index folded in.
        covered_from: LogIndex,
        /// One past the last log index folded in.
        covered_to: LogIndex,
        /// Time over all attempts, in milliseconds.
        latency_ms: f64,
        /// Why it ran.
        trigger: SummaryTrigger,
        /// Pinned-fact changes it brought, in words (empty unless facts are on).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        fact_changes: Vec<String>,
        /// Messages the forgetting policy took out of recall afterwards.
        #[serde(skip_serializing_if = "is_zero")]
        forgotten_messages: usize,
    },
    /// A reply was longer than `NpcMemorySettings::max_reply_chars` and was cut
    /// before it entered memory.
    ReplyCut {
        /// Whose reply.
        npc: NpcId,
        /// Characters the backend sent.
        chars: usize,
        /// Characters kept.
        kept: usize,
    },
    /// Memory lost quality.
    Degraded {
        /// Whose memory.
        npc: NpcId,
        /// What happened.
        degradation: Degradation,
        /// The same, in words.
        reason: String,
    },
}

/// Where telemetry goes. Every event is a `tracing` event; with a trace file, it is
/// also written as a JSON line by a background thread, never on the frame.
#[derive(Resource, Default)]
pub struct Telemetry {
    file: Option<TraceFile>,
}

struct TraceFile {
    sender: Option<Sender<TelemetryEvent>>,
    writer: Option<JoinHandle<()>>,
    path: PathBuf,
}

impl Telemetry {
    /// Telemetry that also writes JSON lines to `path`, replacing the file.
    pub fn with_file(path: impl AsRef<Path>) -> std::io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let mut out = BufWriter::new(File::create(&path)?);
        let (sender, receiver) = channel::<TelemetryEvent>();
        let writer = std::thread::Builder::new()
            .name("npc-memory-trace".into())
            .spawn(move || {
                for event in receiver {
                    let written = serde_json::to_writer(&mut out, &event)
                        .map_err(std::io::Error::from)
                        .and_then(|()| out.write_all(b"\n"))
                        .and_then(|()| out.flush());
                    if let Err(error) = written {
                        tracing::warn!(target: TELEMETRY_TARGET, %error, "the trace file could not be written; tracing stops");
                        return;
                    }
                }
            })?;
        Ok(Self {
            file: Some(TraceFile {
                sender: Some(sender),
                writer: Some(writer),
                path,
            }),
        })
    }

    /// The trace file, if one is written.
    pub fn file_path(&self) -> Option<&Path> {
        self.file.as_ref().map(|file| file.path.as_path())
    }

    /// Whether anything listens: a trace file, or a `tracing` subscriber at debug
    /// level for the telemetry target. Callers skip building events when not.
    pub fn is_recording(&self) -> bool {
        self.file.is_some() || tracing::enabled!(target: TELEMETRY_TARGET, tracing::Level::DEBUG)
    }

    /// Records an event.
    pub fn emit(&self, event: TelemetryEvent) {
        log_event(&event);
        if let Some(sender) = self.file.as_ref().and_then(|file| file.sender.as_ref()) {
            let _ = sender.send(event);
        }
    }
}

impl Drop for TraceFile {
    fn drop(&mut self) {
        // Closing the channel ends the writer once it has written what is queued, so
        // the file is complete when the app exits.
        self.sender.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

fn log_event(event: &TelemetryEvent) {
    match event {
        TelemetryEvent::Request {
            npc,
            purpose,
            messages,
            estimated_tokens,
            ..
        } => tracing::debug!(
            target: TELEMETRY_TARGET, %npc, purpose = purpose.as_str(),
            messages = messages.len(), estimated_tokens, "[Memory] request"
        ),
        TelemetryEvent::Response {
            npc,
            purpose,
            latency_ms,
            error,
            ..
        } => tracing::debug!(
            target: TELEMETRY_TARGET, %npc, purpose = purpose.as_str(), latency_ms,
            ok = error.is_none(), "[Memory] response"
        ),
        TelemetryEvent::SummaryUpdated {
            npc,
            covered_from,
            covered_to,
            latency_ms,
            new,
            ..
        } => tracing::info!(
            target: TELEMETRY_TARGET, %npc, covered_from, covered_to, latency_ms,
            summary = %new, "[Memory] summary updated"
        ),
        TelemetryEvent::ReplyCut { npc, chars, kept } => tracing::warn!(
            target: TELEMETRY_TARGET, %npc, chars, kept,
            "[Memory] a runaway reply was cut to the reply limit"
        ),
        TelemetryEvent::Degraded { npc, reason, .. } => tracing::warn!(
            target: TELEMETRY_TARGET, %npc, %reason, "[Memory] degraded"
        ),
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}
