//! What the HTTP backend tells a server so each NPC's prompt stays cached, and
//! what it reads back: cached prompt tokens in every shape servers report them.

use crate::support::fake_llm::{FakeLlm, FakeReply, completion, reply_request};
use bevy_npc_memory::backends::{CacheRouting, ChatRequest, OpenAiBackend, OpenAiConfig, Progress};
use bevy_npc_memory::prelude::*;

fn send(routing: CacheRouting, requests: &[ChatRequest]) -> Vec<serde_json::Value> {
    let server = FakeLlm::start();
    server.set_fallback(FakeReply::ok(completion("Noted.")));
    let mut config =
        OpenAiConfig::custom("fake", server.base_url(), "fake-model").with_cache_routing(routing);
    config.stream = false;
    let backend = OpenAiBackend::new(config).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for request in requests {
        runtime
            .block_on(backend.complete(request.clone(), Progress::silent()))
            .expect("a reply");
    }
    server.received().iter().map(|r| r.json()).collect()
}

fn to(npc: &str) -> ChatRequest {
    let mut request = reply_request("You are a vault AI.", "Hello.");
    request.npc = NpcId::new(npc);
    request
}

#[test]
fn each_npc_is_steered_to_its_own_cache_only_when_asked() {
    let bodies = send(CacheRouting::Off, &[to("vault9")]);
    assert!(bodies[0].get("prompt_cache_key").is_none());
    assert!(bodies[0].get("id_slot").is_none());

    let bodies = send(CacheRouting::PromptCacheKey, &[to("vault9"), to("echo7")]);
    assert_eq!(bodies[0]["prompt_cache_key"], "vault9/reply");
    assert_eq!(bodies[1]["prompt_cache_key"], "echo7/reply");
    assert!(bodies[0].get("id_slot").is_none());

    let slots = CacheRouting::LlamaSlot { slots: 4 };
    let bodies = send(slots, &[to("vault9"), to("echo7"), to("vault9")]);
    let slot = |i: usize| bodies[i]["id_slot"].as_u64().expect("a slot");
    assert_eq!(slot(0), slot(2), "one NPC keeps to one slot");
    assert!(slot(0) < 4 && slot(1) < 4);
    assert!(bodies[0].get("prompt_cache_key").is_none());
}

#[test]
fn llama_cpp_timings_count_as_cached_tokens() {
    let server = FakeLlm::start();
    server.push(FakeReply::ok(
        serde_json::json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Noted."}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 640, "completion_tokens": 3},
            "timings": {"cache_n": 621, "prompt_n": 19, "prompt_ms": 109.0}
        })
        .to_string(),
    ));
    let mut config = OpenAiConfig::llama_cpp(server.base_url());
    config.stream = false;
    let backend = OpenAiBackend::new(config).unwrap();
    let response = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(backend.complete(to("vault9"), Progress::silent()))
        .expect("a reply");
    let usage = response.usage.expect("usage");
    assert_eq!((usage.prompt_tokens, usage.cached_tokens), (640, Some(621)));
}
