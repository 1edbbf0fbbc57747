//! The OpenAI-compatible backend against a scripted server on 127.0.0.1: faults,
//! retries, streaming, usage, hostile servers, and no credential in any output.
//! One file per topic; the setup they share is here.

use std::time::{Duration, Instant, SystemTime};

use crate::support::fake_llm::{
    FakeLlm, FakeReply, Flood, completion, http_date, reply_request, stream_events,
};
use crate::support::logs::captured_logs;
use crate::support::{Harness, persona, read_trace, temp_dir};
use bevy_npc_memory::backends::BackendError;
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::{
    ApiKey, OpenAiBackend, OpenAiConfig, Progress, ResponseLimits, ResponsePart, RetryPolicy,
};
use bevy_npc_memory::dialogue::NpcMemoryDegraded;
use bevy_npc_memory::dialogue::NpcReplyDelta;
use bevy_npc_memory::dialogue::ReconfigureNpcMemory;
use bevy_npc_memory::memory::Role;
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::schedule::NpcMemoryScheduler;
use bevy_npc_memory::telemetry::LlmUsage;

mod faults;
mod hostile_servers;
mod requests;
mod secrets;

/// No allocation may come near a flood: a few times the largest limit.
const ALLOCATION_BOUND: usize = 32 << 20;
/// What a client that stopped reading can have let through: its limit plus the
/// loopback socket buffers. A client that reads a flood to the end lets 200 MB through.
const FLOOD_READ_BOUND: u64 = 64 << 20;
/// Errors, log entries and degradations after a flood stay this short.
const TEXT_BOUND: usize = 2_000;

const KEY: &str = "sk-test-0451-DO-NOT-LEAK";

/// Everything the crate logs in this test binary, at every level.
struct Setup {
    h: Harness,
    server: FakeLlm,
    trace: std::path::PathBuf,
    backend: OpenAiBackend,
    /// The runtime the requests run on when the test watches their allocations;
    /// dropped after the app.
    _runtime: Option<tokio::runtime::Runtime>,
}

fn config(server: &FakeLlm) -> OpenAiConfig {
    let mut config = OpenAiConfig::custom("fake", server.base_url(), "fake-model")
        .with_summary_model("fake-summarizer");
    config.retry = RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_secs(5),
    };
    config.read_timeout = Duration::from_millis(300);
    config
}

fn setup(name: &str, configure: impl FnOnce(&mut OpenAiConfig)) -> Setup {
    setup_on(name, configure, None)
}

/// A setup whose requests run on a runtime of the test's own, whose threads report
/// their largest allocation (see `support::alloc`): other tests in this binary
/// allocate large buffers of their own, which must not count.
fn setup_watched(name: &str, configure: impl FnOnce(&mut OpenAiConfig)) -> Setup {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .on_thread_start(crate::support::alloc::watch_this_thread)
        .enable_all()
        .build()
        .unwrap();
    let mut setup = setup_on(name, configure, Some(runtime));
    // A flood is megabytes of tiny events, each parsed and passed on as a piece
    // of the reply: seconds of work in a debug build on a busy machine. These
    // tests bound bytes and allocations, not speed, so they wait longer.
    setup.h.wait_secs = 60;
    setup
}

fn setup_on(
    name: &str,
    configure: impl FnOnce(&mut OpenAiConfig),
    runtime: Option<tokio::runtime::Runtime>,
) -> Setup {
    captured_logs();
    let server = FakeLlm::start();
    let mut config = config(&server);
    configure(&mut config);
    let backend = OpenAiBackend::with_api_key(config, ApiKey::new(KEY)).unwrap();
    // Traces append: a file left by an earlier run with this pid must not add lines.
    let trace = crate::support::temp_dir(&format!("http-trace-{name}")).join("trace.jsonl");
    let mut plugin = NpcMemoryPlugin::default()
        .with_backend(backend.clone())
        .with_trace_file(&trace);
    if let Some(runtime) = &runtime {
        plugin = plugin.with_runtime(runtime.handle().clone());
    }
    let mut h = Harness::new(plugin);
    h.spawn("echo7", persona("ECHO-7"));
    Setup {
        h,
        server,
        trace,
        backend,
        _runtime: runtime,
    }
}

impl Setup {
    /// Says `line` and waits for the reply or the failure. A hostile server that
    /// holds the NPC up fails the test here, after the harness's few seconds.
    fn say_and_wait(&mut self, line: &str) {
        let before = self.h.inbox::<NpcReplied>().len() + self.h.inbox::<NpcReplyFailed>().len();
        self.h.say("echo7", line);
        self.h.run_until("a reply or a failure", |w| {
            w.resource::<crate::support::Inbox<NpcReplied>>().0.len()
                + w.resource::<crate::support::Inbox<NpcReplyFailed>>()
                    .0
                    .len()
                > before
        });
    }

    fn failure(&self) -> ReplyError {
        self.h
            .inbox::<NpcReplyFailed>()
            .last()
            .expect("a failure")
            .error
            .clone()
    }

    fn reply_usage(&self) -> bevy_npc_memory::telemetry::UsageStats {
        let usage = self.h.app.world().resource::<LlmUsage>();
        usage
            .npc(&NpcId::new("echo7"), Purpose::Reply)
            .expect("usage recorded")
            .clone()
    }

    /// After a hostile server: each flood stopped early, nothing large was allocated
    /// or kept, and the NPC answers its next line.
    fn survives_floods(&mut self, floods: usize) {
        let server = self.server.clone();
        wait_for(|| server.flooded().len() == floods, "the floods end");
        for sent in self.server.flooded() {
            assert!(
                sent < FLOOD_READ_BOUND,
                "the client let {sent} bytes of a flood through"
            );
        }
        let largest = crate::support::alloc::largest_watched_allocation();
        assert!(
            largest < ALLOCATION_BOUND,
            "an allocation of {largest} bytes"
        );
        for failure in self.h.inbox::<NpcReplyFailed>() {
            let text = format!("{} {:?}", failure.error, failure.error);
            assert!(text.len() < TEXT_BOUND, "an error of {} bytes", text.len());
        }
        for degraded in self.h.inbox::<NpcMemoryDegraded>() {
            let text = degraded.degradation.to_string();
            assert!(
                text.len() < TEXT_BOUND,
                "a degradation of {} bytes",
                text.len()
            );
        }

        // Whatever the NPC asks next (a reply, or a summary retry), the server is well again.
        self.server.set_fallback(if self.backend.config().stream {
            FakeReply::Stream {
                events: stream_events(&["Still ", "here."], true),
                done: true,
            }
        } else {
            FakeReply::ok(completion("Still here."))
        });
        self.say_and_wait("Are you still there?");
        assert_eq!(
            self.h.replies("echo7").last().map(String::as_str),
            Some("Still here.")
        );
        for (_, text) in self.h.log("echo7") {
            assert!(
                text.len() < TEXT_BOUND,
                "an L2 entry of {} bytes",
                text.len()
            );
        }
    }

    /// The player's line is in L2, and the key is nowhere.
    fn finish(self, line: &str) {
        assert_eq!(
            self.h.log("echo7")[0],
            (Role::User, line.to_owned()),
            "the player's line is kept"
        );
        let errors: Vec<String> = self
            .h
            .inbox::<NpcReplyFailed>()
            .iter()
            .map(|f| format!("{} {:?}", f.error, f.error))
            .collect();
        let backend_debug = format!("{:?}", self.backend);
        let Setup { h, trace, .. } = self;
        drop(h);
        let trace_text = std::fs::read_to_string(&trace).unwrap();
        let logs = String::from_utf8(captured_logs().lock().unwrap().clone()).unwrap();
        for (what, text) in [
            ("errors", errors.join("\n")),
            ("Debug output", backend_debug),
            ("the trace file", trace_text),
            ("the logs", logs),
        ] {
            assert!(
                !text.contains(KEY) && !text.contains("0451-DO-NOT"),
                "the key leaked into {what}"
            );
        }
        std::fs::remove_file(trace).ok();
    }
}

fn s_received(server: &FakeLlm) -> usize {
    server.received().len()
}

fn wait_for(done: impl Fn() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}
