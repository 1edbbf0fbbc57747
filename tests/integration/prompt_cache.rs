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

/// The request bodies of reply prompts the server received, as JSON message lists.
fn reply_prompts(server: &FakeLlm) -> Vec<Vec<serde_json::Value>> {
    server
        .received()
        .iter()
        .map(|r| r.json())
        .filter(|body| body["model"] == "fake-model")
        .map(|body| body["messages"].as_array().expect("messages").clone())
        .collect()
}

/// Follow-up lines, as a server sees them: within a conversation each reply
/// prompt starts with the whole of the one before it, so a provider's cache holds
/// it; a prompt that would outgrow the budget plus its growth is built afresh, and
/// so is the first after a load or a clear (what the server cached may be gone,
/// and the memory it described is).
#[test]
fn a_conversations_lines_extend_the_prompt_the_server_saw_last() {
    let server = FakeLlm::start();
    server.set_fallback(FakeReply::ok(completion(
        "Noted: that reading is in the log for the next shift.",
    )));
    let mut config = OpenAiConfig::custom("fake", server.base_url(), "fake-model")
        .with_summary_model("fake-summarizer");
    config.stream = false;
    let backend = OpenAiBackend::new(config).unwrap();
    // The fake server answers summaries in plain text, which facts would refuse.
    let mut features = MemoryFeatures::layered(250);
    features.facts.enabled = false;
    let plugin = NpcMemoryPlugin::default()
        .with_backend(backend)
        .with_features(features);
    let mut h = crate::support::Harness::new(plugin);
    h.spawn("echo7", crate::support::persona("ECHO-7"));
    let mut said = 0;
    let mut say = |h: &mut crate::support::Harness| {
        h.say(
            "echo7",
            &format!(
                "Reading {said}: valve {} in bay {said} shows {} bar.",
                said % 3,
                said * 7
            ),
        );
        said += 1;
        h.wait_for_replies(said);
    };
    for _ in 0..16 {
        say(&mut h);
    }
    let prompts = reply_prompts(&server);
    assert_eq!(prompts.len(), 16);
    let extends = |i: usize| prompts[i].starts_with(&prompts[i - 1]);
    let extended = (1..16).filter(|&i| extends(i)).count();
    assert!(extended >= 10, "{extended} of 15 prompts extended the last");
    assert!(extended < 15, "a prompt outgrowing its cap is built afresh");
    // The report says which the last prompt was; a line right after a rebuild
    // extends it.
    assert_eq!(h.report("echo7").prompt_follow_up, extends(15));
    if !extends(15) {
        say(&mut h);
        let prompts = reply_prompts(&server);
        assert!(prompts[16].starts_with(&prompts[15]));
    }
    assert!(h.report("echo7").prompt_follow_up);

    let path = crate::support::temp_dir("follow-ups").join("slot.json");
    h.save_to(&path);
    h.load_ok(&path);
    let before = reply_prompts(&server).len();
    say(&mut h);
    let prompts = reply_prompts(&server);
    assert!(
        !prompts[before].starts_with(&prompts[before - 1]),
        "a load starts afresh"
    );
    assert!(!h.report("echo7").prompt_follow_up);
    say(&mut h);
    let prompts = reply_prompts(&server);
    assert!(
        prompts[before + 1].starts_with(&prompts[before]),
        "then the conversation goes on"
    );

    h.app
        .world_mut()
        .write_message(ClearNpcMemory::new(NpcId::new("echo7")));
    h.app.update();
    say(&mut h);
    let prompts = reply_prompts(&server);
    assert!(
        !prompts[before + 2].starts_with(&prompts[before + 1]),
        "a clear starts afresh"
    );
    assert_eq!(
        prompts[before + 2].len(),
        2,
        "the persona and the line: nothing remembered"
    );
}
