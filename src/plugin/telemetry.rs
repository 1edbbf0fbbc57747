//! Telemetry: every request, response, summary update, action and degradation, as `tracing`
//! events and, optionally, as JSON lines in a file (the `[Memory]` log of the original ECHO-7 game).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Sender, channel};
use std::thread::JoinHandle;

use bevy::prelude::*;
use serde::Serialize;

use crate::backends::{Purpose, TokenUsage};
use crate::memory::{ActionOutcome, Degradation, LogIndex, NpcId, PromptMessage, SummaryTrigger};
use crate::plugin::npc::TurnId;

pub use crate::trace::TELEMETRY_TARGET;

/// One telemetry record. In the JSON-lines file each is one object whose `event`
/// field names the variant: `request`, `response`, `summary_updated`, `reply_cut`,
/// `degraded`, `deferred`, `backoff`, `acted`. More may come, so matches need a `_` arm.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TelemetryEvent {
    /// A request was sent to a backend.
    Request {
        /// For whom.
        npc: NpcId,
        /// Reply or summary.
        purpose: Purpose,
        /// The backend's name.
        backend: String,
        /// Game time, in seconds, from the memory clock (`NpcMemoryClock`).
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
        /// Notes on lines the summarizer wrote that recall now indexes.
        #[serde(skip_serializing_if = "is_zero")]
        notes_added: usize,
        /// Notes it wrote that were dropped (malformed, too long, citing lines
        /// outside the summary, or past the limits).
        #[serde(skip_serializing_if = "is_zero")]
        notes_dropped: usize,
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
    /// A request waited in the scheduler before it was sent: behind replies and
    /// more urgent NPCs, for the budget, after a rate limit, or, for a background
    /// NPC's summary, on purpose, to cover more messages at once.
    Deferred {
        /// For whom.
        npc: NpcId,
        /// Reply or summary.
        purpose: Purpose,
        /// How long it waited, in milliseconds of real time.
        waited_ms: f64,
        /// Requests still queued after it.
        queue_depth: usize,
    },
    /// A provider rate-limited a request (HTTP 429): the scheduler pauses every
    /// request.
    Backoff {
        /// Whose request.
        npc: NpcId,
        /// Reply or summary.
        purpose: Purpose,
        /// How long dispatch pauses from now, in milliseconds.
        pause_ms: f64,
        /// Whether the provider said how long (`Retry-After`).
        retry_after: bool,
        /// Whether the request was queued again; otherwise it failed, having been
        /// rate limited too often, or the backend retries it itself.
        requeued: bool,
        /// Whether the backend waits out the limit and retries the request itself
        /// (the HTTP client's own retries): the request is still running.
        backend_retries: bool,
    },
    /// An NPC called an action and it came to `outcome`; the same as
    /// [`NpcActed`](crate::actions::NpcActed), for traces.
    Acted {
        /// Who acted.
        npc: NpcId,
        /// The turn it acted in.
        turn: TurnId,
        /// The model's id for the call.
        call_id: String,
        /// The action's name, as the model called it.
        name: String,
        /// The arguments as the model wrote them.
        arguments: String,
        /// What came of it: `{"done": "…"}`, `{"refused": "…"}` or `{"failed": "…"}`.
        outcome: ActionOutcome,
        /// The index of the result's entry in the NPC's log.
        index: LogIndex,
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
    file: Option<TraceWriter>,
}

/// The JSON-lines trace file: where it is and how large it may grow.
///
/// Lines are appended, so the traces of earlier runs stay. When a line would take
/// the file past `max_bytes`, the file is first renamed to `<name>.1` (replacing
/// an older `.1`) and a new file is started, so the trace never takes much more
/// than twice `max_bytes` on disk. A line is never split between the two files.
///
/// ```no_run
/// use bevy_npc_memory::telemetry::{Telemetry, TraceFile};
///
/// // At most about 2 MiB in trace.jsonl plus 2 MiB in trace.jsonl.1.
/// let telemetry = Telemetry::with_trace_file(TraceFile::new("trace.jsonl").with_max_bytes(2 << 20))?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceFile {
    /// The file the lines go to.
    pub path: PathBuf,
    /// The most bytes the file holds before it is rotated. A single line longer
    /// than this still gets written, alone in its file.
    pub max_bytes: u64,
}

impl TraceFile {
    /// The default size cap: 16 MiB, a few thousand requests with their prompts.
    pub const DEFAULT_MAX_BYTES: u64 = 16 << 20;

    /// A trace file at `path` with the default size cap.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            max_bytes: Self::DEFAULT_MAX_BYTES,
        }
    }

    /// Sets the size cap, in bytes.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Where the previous lines go when the file is rotated: the path with `.1`
    /// appended, e.g. `trace.jsonl.1`.
    pub fn rotated_path(&self) -> PathBuf {
        let mut name = self.path.clone().into_os_string();
        name.push(".1");
        PathBuf::from(name)
    }
}

/// The background thread that writes the file, and the way to reach it.
struct TraceWriter {
    sender: Option<Sender<TelemetryEvent>>,
    writer: Option<JoinHandle<()>>,
    path: PathBuf,
}

impl Telemetry {
    /// Telemetry that also appends JSON lines to `path`, rotating it at
    /// [`TraceFile::DEFAULT_MAX_BYTES`].
    pub fn with_file(path: impl AsRef<Path>) -> std::io::Result<Self> {
        Self::with_trace_file(TraceFile::new(path.as_ref()))
    }

    /// Telemetry that also appends JSON lines to a trace file, rotating it at its
    /// size cap. Fails if the file cannot be opened for appending.
    pub fn with_trace_file(settings: TraceFile) -> std::io::Result<Self> {
        let path = settings.path.clone();
        let mut sink = Sink::open(settings)?;
        let (sender, receiver) = channel::<TelemetryEvent>();
        let writer = std::thread::Builder::new()
            .name("npc-memory-trace".into())
            .spawn(move || {
                for event in receiver {
                    if let Err(error) = sink.write(&event) {
                        tracing::warn!(target: TELEMETRY_TARGET, %error, "the trace file could not be written; tracing stops");
                        return;
                    }
                }
            })?;
        Ok(Self {
            file: Some(TraceWriter {
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

impl Drop for TraceWriter {
    fn drop(&mut self) {
        // Closing the channel ends the writer once it has written what is queued, so
        // the file is complete when the app exits.
        self.sender.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// The open trace file on the writer thread.
struct Sink {
    settings: TraceFile,
    file: File,
    /// Bytes in the file, counted as they are written rather than asked of the file
    /// system each time.
    size: u64,
}

impl Sink {
    fn open(settings: TraceFile) -> std::io::Result<Self> {
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&settings.path)?;
        let mut size = file.metadata()?.len();
        // A run killed in the middle of a line left it without its newline; ours
        // start on a fresh line so they are not glued to it.
        if size > 0 {
            let mut last = [0u8];
            file.seek(SeekFrom::End(-1))?;
            file.read_exact(&mut last)?;
            if last[0] != b'\n' {
                file.write_all(b"\n")?;
                size += 1;
            }
        }
        Ok(Self {
            settings,
            file,
            size,
        })
    }

    /// Appends one event as one line, rotating first if the line would not fit.
    fn write(&mut self, event: &TelemetryEvent) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(event)?;
        line.push(b'\n');
        let len = line.len() as u64;
        if self.size > 0 && self.size.saturating_add(len) > self.settings.max_bytes {
            self.rotate()?;
        }
        // One write per line: an unbuffered file keeps a line whole even if the
        // process dies between two events.
        self.file.write_all(&line)?;
        self.size += len;
        Ok(())
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        match std::fs::rename(&self.settings.path, self.settings.rotated_path()) {
            Ok(()) => {}
            // Removed by someone else: there is nothing to keep.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
        self.file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.settings.path)?;
        self.size = self.file.metadata()?.len();
        Ok(())
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
        TelemetryEvent::Acted {
            npc,
            turn,
            name,
            outcome,
            ..
        } => tracing::info!(
            target: TELEMETRY_TARGET, %npc, turn = turn.get(), action = %name, %outcome,
            "[Memory] acted"
        ),
        TelemetryEvent::Degraded { npc, reason, .. } => tracing::warn!(
            target: TELEMETRY_TARGET, %npc, %reason, "[Memory] degraded"
        ),
        TelemetryEvent::Deferred {
            npc,
            purpose,
            waited_ms,
            queue_depth,
        } => tracing::debug!(
            target: TELEMETRY_TARGET, %npc, purpose = purpose.as_str(), waited_ms,
            queue_depth, "[Memory] sent after waiting in the scheduler"
        ),
        TelemetryEvent::Backoff {
            npc,
            purpose,
            pause_ms,
            retry_after,
            requeued,
            backend_retries,
        } => tracing::warn!(
            target: TELEMETRY_TARGET, %npc, purpose = purpose.as_str(), pause_ms,
            retry_after, requeued, backend_retries, "[Memory] rate limited; every request pauses"
        ),
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "npc-memory-telemetry-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// An event whose line is about `len` bytes longer than the smallest one and
    /// carries `n` so the order of lines can be checked.
    fn event(n: usize, len: usize) -> TelemetryEvent {
        TelemetryEvent::Response {
            npc: NpcId::new("echo7"),
            purpose: Purpose::Reply,
            latency_ms: n as f64,
            retries: 0,
            // Multi-byte text: the cap counts bytes, not characters.
            content: Some("é".repeat(len / 2)),
            error: None,
            estimated_tokens: 0,
            usage: None,
        }
    }

    /// The `latency_ms` of every line, in order; panics on a line that is not JSON.
    fn numbers(path: &Path) -> Vec<u64> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|line| {
                let value: serde_json::Value = serde_json::from_str(line)
                    .unwrap_or_else(|error| panic!("a split or broken line ({error}): {line:?}"));
                value["latency_ms"].as_f64().unwrap() as u64
            })
            .collect()
    }

    fn size(path: &Path) -> u64 {
        std::fs::metadata(path).map_or(0, |meta| meta.len())
    }

    #[test]
    fn crossing_the_cap_rotates_once_keeps_disk_use_bounded_and_never_splits_a_line() {
        let settings = TraceFile::new(dir("rotate").join("trace.jsonl")).with_max_bytes(2_000);
        let telemetry = Telemetry::with_trace_file(settings.clone()).unwrap();
        for n in 0..300 {
            telemetry.emit(event(n, (n * 37) % 300));
        }
        drop(telemetry);

        let (current, rotated) = (size(&settings.path), size(&settings.rotated_path()));
        assert!(rotated > 0, "the file was rotated");
        assert!(current <= 2_000 && rotated <= 2_000, "{current} {rotated}");
        // Whole lines only, in order, and the newest ones all kept: the rotated file
        // ends where the current one starts.
        let mut lines = numbers(&settings.rotated_path());
        lines.extend(numbers(&settings.path));
        let first = lines[0];
        assert_eq!(lines, (first..300).collect::<Vec<_>>());
        // No older generations pile up.
        let files = std::fs::read_dir(settings.path.parent().unwrap()).unwrap();
        assert_eq!(files.count(), 2);
    }

    #[test]
    fn a_second_run_appends_and_a_file_already_over_the_cap_is_rotated_first() {
        let settings = TraceFile::new(dir("append").join("trace.jsonl")).with_max_bytes(1_000);
        for n in 0..2 {
            let telemetry = Telemetry::with_trace_file(settings.clone()).unwrap();
            telemetry.emit(event(n, 10));
            drop(telemetry);
        }
        assert_eq!(
            numbers(&settings.path),
            [0, 1],
            "the first run's line stays"
        );
        assert_eq!(size(&settings.rotated_path()), 0);

        // A cap lowered between runs: the old file goes to `.1` before the first
        // new line, whole.
        let before = std::fs::read(&settings.path).unwrap();
        let telemetry = Telemetry::with_trace_file(settings.clone().with_max_bytes(50)).unwrap();
        telemetry.emit(event(2, 10));
        drop(telemetry);
        assert_eq!(std::fs::read(settings.rotated_path()).unwrap(), before);
        assert_eq!(numbers(&settings.path), [2]);
    }

    #[test]
    fn a_line_longer_than_the_cap_is_written_whole_in_its_own_file() {
        let settings = TraceFile::new(dir("long").join("trace.jsonl")).with_max_bytes(100);
        let telemetry = Telemetry::with_trace_file(settings.clone()).unwrap();
        telemetry.emit(event(0, 10));
        telemetry.emit(event(1, 1_000));
        telemetry.emit(event(2, 10));
        drop(telemetry);
        assert_eq!(numbers(&settings.rotated_path()), [1]);
        assert_eq!(numbers(&settings.path), [2]);
    }

    #[test]
    fn a_line_cut_off_by_a_killed_run_does_not_swallow_the_next_one() {
        let settings = TraceFile::new(dir("cut").join("trace.jsonl"));
        std::fs::write(&settings.path, "{\"event\":\"resp").unwrap();
        let telemetry = Telemetry::with_trace_file(settings.clone()).unwrap();
        telemetry.emit(event(7, 10));
        drop(telemetry);
        let text = std::fs::read_to_string(&settings.path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "{\"event\":\"resp");
        let value: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(value["latency_ms"], 7.0);
    }
}
