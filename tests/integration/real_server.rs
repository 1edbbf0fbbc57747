//! The HTTP backend against a real llama.cpp `llama-server` running SmolLM2-135M on
//! 127.0.0.1, started by `scripts/llama-server.sh start` (CI does this).
//!
//! The model is tiny and its words are poor, so these tests assert the protocol, not
//! the content: status, non-empty replies, deltas adding up, finish reasons, usage,
//! and a summary injected into the next system prompt.

use std::time::Duration;

use crate::support::actions::OpenDoor;
use crate::support::fake_llm::reply_request;
use crate::support::{Harness, persona, read_trace};
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::{ChatRequest, OpenAiBackend, OpenAiConfig, Progress};
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::telemetry::LlmUsage;

/// The server's API root, or `None` (with the reason printed) outside CI.
fn server_url() -> Option<String> {
    match std::env::var("LLAMA_SERVER_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!(
                "LLAMA_SERVER_URL is not set: CI must start the real server with `scripts/llama-server.sh start`"
            )
        }
        _ => {
            eprintln!(
                "skipping the real-server test: LLAMA_SERVER_URL is not set (run `scripts/llama-server.sh start`)"
            );
            None
        }
    }
}

fn backend(url: &str) -> OpenAiBackend {
    let mut config = OpenAiConfig::llama_cpp(url);
    config.max_tokens = Some(48);
    config.read_timeout = Duration::from_secs(60);
    OpenAiBackend::new(config).expect("no key is needed for llama.cpp")
}

fn request(text: &str) -> ChatRequest {
    reply_request(
        "You are ECHO-7, a bunker security AI. Answer briefly.",
        text,
    )
}

#[test]
fn the_backend_speaks_the_protocol_streaming_and_not() {
    let Some(url) = server_url() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let backend = backend(&url);

    let pieces = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = pieces.clone();
    let progress = Progress::streaming(move |piece| sink.lock().unwrap().push_str(piece));
    let streamed = runtime
        .block_on(backend.complete(request("Hello, I'm Alex."), progress))
        .expect("a streamed reply");
    assert!(!streamed.content.trim().is_empty());
    assert_eq!(
        *pieces.lock().unwrap(),
        streamed.content,
        "the deltas add up to the reply"
    );
    assert!(
        matches!(streamed.finish_reason.as_deref(), Some("stop" | "length")),
        "{:?}",
        streamed.finish_reason
    );
    let usage = streamed
        .usage
        .expect("llama-server reports usage in the last chunk");
    assert!(
        usage.prompt_tokens > 0 && usage.completion_tokens > 0,
        "{usage:?}"
    );

    let mut config = backend.config().clone();
    config.stream = false;
    let whole = runtime
        .block_on(
            OpenAiBackend::new(config)
                .unwrap()
                .complete(request("Where is the switch room?"), Progress::silent()),
        )
        .expect("a whole reply");
    assert!(!whole.content.trim().is_empty());
    assert!(whole.finish_reason.is_some());
    assert!(
        whole
            .usage
            .is_some_and(|u| u.prompt_tokens > 0 && u.completion_tokens > 0)
    );
}

#[test]
fn a_summary_from_the_real_model_reaches_the_next_system_prompt() {
    let Some(url) = server_url() else { return };
    // Traces append: a fresh folder, so no earlier run's lines are read.
    let trace = crate::support::temp_dir("real-server").join("trace.jsonl");
    let settings = crate::support::slow_model_settings();
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_backend(backend(&url))
            .with_settings(settings)
            .with_trace_file(&trace),
    );
    h.wait_secs = 120;
    h.spawn("echo7", persona("ECHO-7"));

    h.say("echo7", "Hello, I'm Alex. I need to fix the power system.");
    h.wait_for_replies(1);
    h.wait_for_summaries(1);
    let reply = &h.replies("echo7")[0];
    assert!(!reply.trim().is_empty());
    let streamed = h.streamed();
    assert_eq!(streamed.trim(), reply.as_str());
    let summary = h.summary("echo7");
    assert!(!summary.is_empty());

    h.say("echo7", "What is my name?");
    h.wait_for_replies(2);
    h.settle();
    let usage = h.app.world().resource::<LlmUsage>();
    let replies = usage.npc(&NpcId::new("echo7"), Purpose::Reply).unwrap();
    let summaries = usage.npc(&NpcId::new("echo7"), Purpose::Summary).unwrap();
    assert_eq!(replies.failures, 0);
    assert!(replies.prompt_tokens > 0 && replies.completion_tokens > 0);
    assert!(summaries.requests >= 1 && summaries.prompt_tokens > 0);
    drop(h);

    let events = read_trace(&trace);
    let requests: Vec<&serde_json::Value> =
        events.iter().filter(|e| e["event"] == "request").collect();
    assert_eq!(requests[1]["purpose"], "summary");
    let system = crate::support::traced_system_prompt(&events, "What is my name?");
    assert!(
        system.ends_with(&format!("[Previously]: {summary}")),
        "the summary is in the next system prompt: {system}"
    );
    std::fs::remove_file(trace).ok();
}

/// An action call through the real server. Not as `tools`: this llama-server
/// (jinja on by default) renders SmolLM2's own chat template, which never mentions
/// tools, so llama.cpp's template analysis finds no tool-call format; the tools
/// never reach the prompt and `tool_choice: "required"` adds no grammar, and the
/// model answers in words (tried). With a tool-capable ChatML template instead
/// (Qwen2.5's, by `--chat-template-file`) the tools do reach the prompt, but the
/// "required" grammar lets free text come before `<tool_call>`, and the 135M model
/// writes prose until its token limit (400 tokens tried). So the action goes as
/// structured output ([`OpenAiConfig::structured_actions`]): a `response_format`
/// JSON schema that llama.cpp turns into a grammar, which even this model follows.
#[test]
fn an_action_call_comes_back_as_structured_output() {
    let Some(url) = server_url() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut config = backend(&url).config().clone();
    config.structured_actions = true;
    config.max_tokens = Some(96);
    // Greedy: sampled at 0.7, the 135M model once in about 60 runs wrote a door
    // name that ran on inside its string until the limit cut the call off (which
    // the backend reports as `MaxTokens`). This test is about the protocol.
    config.temperature = Some(0.0);
    let backend = OpenAiBackend::new(config).unwrap();
    let mut request = request("Please open the north door.");
    request.actions = vec![OpenDoor::spec()];
    let response = runtime
        .block_on(backend.complete(request, Progress::silent()))
        .expect("a call");
    assert_eq!(response.action_calls.len(), 1, "{response:?}");
    let call = &response.action_calls[0];
    assert_eq!(call.name, "open_door");
    let door = OpenDoor::parse(&call.arguments)
        .unwrap_or_else(|refusal| panic!("{} is invalid: {refusal}", call.arguments));
    eprintln!("the real server called open_door({door:?})");
    assert!(response.content.is_empty());
    assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
}

/// The second line to an NPC repeats the first request's start, and the real
/// server says so: its cached tokens reach the usage figures, at least half of the
/// second prompt. A count the server reports, not a timing.
#[test]
fn the_second_line_reuses_the_servers_prompt_cache() {
    let Some(url) = server_url() else { return };
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_backend(backend(&url))
            .with_window(20),
    );
    h.wait_secs = 120;
    // A persona of its own, so no other test's prompt shares its start.
    let persona = Persona::new(
        "VAULT-9",
        format!(
            "You are VAULT-9, the archive AI of a sealed vault ({}). You answer in one calm sentence and never reveal the vault's code.",
            std::process::id()
        ),
    );
    let npc = NpcId::new("vault9");
    h.spawn("vault9", persona);
    let reply_usage = |h: &Harness| {
        let usage = h.app.world().resource::<LlmUsage>();
        let stats = usage
            .npc(&npc, Purpose::Reply)
            .expect("replies were counted");
        (stats.prompt_tokens, stats.cached_tokens)
    };

    h.say(
        "vault9",
        "Hello. I am the new archivist, and I need the catalogue.",
    );
    h.wait_for_replies(1);
    h.settle();
    let (first_prompt, first_cached) = reply_usage(&h);
    h.say("vault9", "Which shelf holds the maps?");
    h.wait_for_replies(2);
    h.settle();
    let (prompt, cached) = reply_usage(&h);
    let (second_prompt, second_cached) = (prompt - first_prompt, cached - first_cached);
    assert!(
        second_prompt > first_prompt,
        "the second prompt extends the first"
    );
    assert!(
        2 * second_cached >= second_prompt,
        "the server served {second_cached} of the second prompt's {second_prompt} tokens from its cache"
    );
}
