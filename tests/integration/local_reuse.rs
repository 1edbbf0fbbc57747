//! The in-process model reads only what is new: each NPC's next request evaluates
//! the tokens after the prefix it shares with that NPC's last one, whichever NPCs
//! spoke in between, and what is kept goes when the memory it came from goes.

use crate::local_llm::{config, model_path};
use crate::support::{Harness, persona, temp_dir};
use bevy_npc_memory::backends::{ChatRequest, GenerationStats, Progress, RequestKind};
use bevy_npc_memory::memory::{PromptMessage, ReplyInput, Role};
use bevy_npc_memory::prelude::*;

fn request(npc: &str, exchanges: usize) -> ChatRequest {
    let mut messages = vec![PromptMessage::new(
        Role::System,
        format!("You are {npc}, a bunker robot. Answer in one short sentence."),
    )];
    for i in 0..exchanges {
        messages.push(PromptMessage::new(
            Role::User,
            format!("Pipe {i} is leaking."),
        ));
        messages.push(PromptMessage::new(
            Role::Assistant,
            format!("I will fix pipe {i}."),
        ));
    }
    messages.push(PromptMessage::new(Role::User, "What is left to fix?"));
    ChatRequest {
        npc: NpcId::new(npc),
        kind: RequestKind::Reply(ReplyInput {
            npc_name: npc.into(),
            summary: "".into(),
        }),
        messages,
        actions: Vec::new(),
    }
}

/// The player's next line: the same conversation, one exchange longer.
fn next(mut request: ChatRequest) -> ChatRequest {
    request.messages.push(PromptMessage::new(
        Role::Assistant,
        "Only the vent is left.",
    ));
    request
        .messages
        .push(PromptMessage::new(Role::User, "Then fix the vent."));
    request
}

struct Bench {
    runtime: tokio::runtime::Runtime,
    backend: LocalLlmBackend,
}

impl Bench {
    fn new(config: LocalLlmConfig) -> Self {
        Self {
            runtime: tokio::runtime::Runtime::new().unwrap(),
            backend: LocalLlmBackend::new(config).unwrap(),
        }
    }

    fn run(&self, request: ChatRequest) -> GenerationStats {
        let response = self
            .runtime
            .block_on(self.backend.complete(request, Progress::silent()))
            .expect("a reply");
        let stats = self.backend.last_stats().expect("stats");
        assert_eq!(
            response.usage.and_then(|u| u.cached_tokens),
            Some(stats.cached_prompt_tokens as u64),
            "the usage reports the reused tokens"
        );
        stats
    }
}

#[test]
fn the_next_line_reads_only_what_follows_the_last_prompt() {
    let Some(path) = model_path() else { return };
    let bench = Bench::new(config(path));
    let first = bench.run(request("rusty", 6));
    assert_eq!(first.cached_prompt_tokens, 0, "nothing to reuse yet");
    let second = bench.run(next(request("rusty", 6)));
    assert!(
        second.cached_prompt_tokens >= first.prompt_tokens,
        "the whole first prompt is reused: {second:?} after {first:?}"
    );
    assert!(second.cached_prompt_tokens < second.prompt_tokens);
    // The same prompt again reads only its last token, which sampling needs.
    let again = bench.run(next(request("rusty", 6)));
    assert_eq!(again.cached_prompt_tokens, again.prompt_tokens - 1);
}

#[test]
fn npcs_taking_turns_keep_their_own_prompts_within_the_cap() {
    let Some(path) = model_path() else { return };
    for (cap, kept) in [(64 * 1024 * 1024, true), (0, false)] {
        let bench = Bench::new(config(path.clone()).with_prompt_cache_bytes(cap));
        let first = bench.run(request("rusty", 4));
        bench.run(request("echo", 4));
        let back = bench.run(next(request("rusty", 4)));
        if kept {
            assert!(
                back.cached_prompt_tokens >= first.prompt_tokens,
                "RUSTY's prompt was kept while ECHO spoke: {back:?}"
            );
        } else {
            assert_eq!(
                back.cached_prompt_tokens, 0,
                "with no room, only the last NPC's prompt is kept"
            );
        }
    }
}

#[test]
fn forgetting_an_npc_drops_only_its_prompt() {
    let Some(path) = model_path() else { return };
    let bench = Bench::new(config(path));
    bench.run(request("rusty", 3));
    bench.backend.forget(Some(&NpcId::new("echo")));
    assert!(bench.run(request("rusty", 3)).cached_prompt_tokens > 0);
    bench.backend.forget(Some(&NpcId::new("rusty")));
    assert_eq!(bench.run(request("rusty", 3)).cached_prompt_tokens, 0);
    bench.backend.forget(None);
    assert_eq!(bench.run(request("rusty", 3)).cached_prompt_tokens, 0);
}

/// Through the plugin: a cleared memory or a load leaves the model nothing to
/// reuse, although the next prompt starts exactly as the last one did.
#[test]
fn a_clear_or_a_load_drops_what_the_model_kept() {
    let Some(path) = model_path() else { return };
    let backend = LocalLlmBackend::new(config(path)).unwrap();
    // A window large enough that no summary runs: the figures read are the replies'.
    let settings = NpcMemorySettings {
        request_timeout: std::time::Duration::from_secs(120),
        ..Default::default()
    };
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_backend(backend.clone())
            .with_settings(settings),
    );
    h.wait_secs = 120;
    h.spawn("echo7", persona("ECHO-7"));
    let cached = |backend: &LocalLlmBackend| backend.last_stats().unwrap().cached_prompt_tokens;

    h.say("echo7", "Hello, I am Alex.");
    h.wait_for_replies(1);
    h.say("echo7", "I need to fix the power.");
    h.wait_for_replies(2);
    h.settle();
    assert!(cached(&backend) > 0, "the second line reused the first");

    let save = temp_dir("local-reuse").join("save.json");
    h.save_to(&save);
    h.app
        .world_mut()
        .write_message(ClearNpcMemory::new(NpcId::new("echo7")));
    h.settle();
    h.say("echo7", "Hello, I am Alex.");
    h.wait_for_replies(3);
    h.settle();
    assert_eq!(cached(&backend), 0, "the cleared memory's prompt is gone");

    h.load_ok(&save);
    h.say("echo7", "Where is the generator?");
    h.wait_for_replies(4);
    h.settle();
    assert_eq!(cached(&backend), 0, "a load drops what the model kept");
    std::fs::remove_file(save).ok();
}
