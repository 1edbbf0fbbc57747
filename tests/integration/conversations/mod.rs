//! Conversations among NPCs, run by the plugin and driven as a game drives them:
//! one message starts it, the NPCs take turns, every line lands in every
//! participant's log with its speaker, bystanders witness it, the player
//! overhears and joins, private lines never reach a prompt for another NPC,
//! and the turn limit, the budget, repetition, the game's end and a load all
//! end it cleanly.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use bevy::prelude::*;
use bevy_npc_memory::backends::{
    BackendFuture, ChatBackend, ChatRequest, ChatResponse, Progress, Purpose, TokenUsage,
    stream_words,
};
use bevy_npc_memory::conversations::{
    ConversationEnd, ConversationEnded, ConversationLine, ConversationStarted, Converse,
    EndConversation, NpcConversations, StartConversation,
};
use bevy_npc_memory::dialogue::{NpcReplyDelta, Replied};
use bevy_npc_memory::knowledge::{KnowledgeShared, MarkPrivate, ShareKnowledge};
use bevy_npc_memory::memory::{ConversationStop, Origin, SpeakerId};
use bevy_npc_memory::prelude::*;

use crate::support::held::HeldBackend;
use crate::support::{Harness, add_inbox, persona, temp_dir};

mod endings;
mod hearing;
mod privacy;

/// Answers each NPC from its own script, in order; records every request.
#[derive(Clone, Default)]
struct TalkBackend {
    scripts: Arc<Mutex<HashMap<String, VecDeque<String>>>>,
    requests: Arc<Mutex<Vec<ChatRequest>>>,
    usage: Option<TokenUsage>,
}

impl TalkBackend {
    fn with(scripts: &[(&str, &[&str])]) -> Self {
        let backend = Self::default();
        for (npc, lines) in scripts {
            backend.scripts.lock().unwrap().insert(
                (*npc).to_owned(),
                lines.iter().map(|l| (*l).to_owned()).collect(),
            );
        }
        backend
    }

    fn reporting(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.usage = Some(TokenUsage {
            prompt_tokens,
            completion_tokens,
            cached_tokens: None,
        });
        self
    }

    fn replies_to(&self, npc: &str) -> Vec<ChatRequest> {
        self.requests
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.npc.as_str() == npc)
            .cloned()
            .collect()
    }
}

impl ChatBackend for TalkBackend {
    fn name(&self) -> &str {
        "talk"
    }

    fn complete(&self, request: ChatRequest, progress: Progress) -> BackendFuture {
        if request.purpose() == Purpose::Summary {
            return Box::pin(async { Ok(ChatResponse::text("A summary.")) });
        }
        let next = self
            .scripts
            .lock()
            .unwrap()
            .get_mut(request.npc.as_str())
            .and_then(VecDeque::pop_front);
        let text = next.unwrap_or_else(|| format!("{} has nothing more to add.", request.npc));
        self.requests.lock().unwrap().push(request);
        let usage = self.usage;
        Box::pin(async move {
            stream_words(&text, &progress);
            let mut response = ChatResponse::text(text);
            response.usage = usage;
            Ok(response)
        })
    }
}

const ECHO_LINES: &[&str] = &[
    "The coolant pump in bay four rattled all night.",
    "I logged a pressure drop near the east airlock.",
    "Alex asked me to watch the generator readings.",
];
const RUSTY_LINES: &[&str] = &[
    "I saw water pooling under the reactor stairs.",
    "The storage crates were moved before dawn.",
    "Somebody left the greenhouse lights burning.",
];

fn harness(backend: TalkBackend) -> Harness {
    harness_with_entities(backend).0
}

/// The harness, and the entities of ECHO-7 and RUSTY-3.
fn harness_with_entities(backend: TalkBackend) -> (Harness, Entity, Entity) {
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(backend));
    add_inbox::<ConversationStarted>(&mut h.app);
    add_inbox::<ConversationLine>(&mut h.app);
    add_inbox::<ConversationEnded>(&mut h.app);
    let echo = h.spawn("echo7", persona("ECHO-7"));
    let rusty = h.spawn("rusty3", persona("RUSTY-3"));
    h.spawn("mira", persona("Mira"));
    h.spawn("cato", persona("Cato"));
    (h, echo, rusty)
}

fn run_to_end(h: &mut Harness) -> ConversationEnded {
    let before = h.inbox::<ConversationEnded>().len();
    h.run_until("the conversation ends", |world| {
        world
            .resource::<crate::support::Inbox<ConversationEnded>>()
            .0
            .len()
            > before
    });
    h.settle();
    h.inbox::<ConversationEnded>().last().unwrap().clone()
}

fn speaker_lines(h: &Harness, npc: &str) -> Vec<(Role, Option<String>, String)> {
    h.messages(npc)
        .iter()
        .filter(|m| m.role != Role::System)
        .map(|m| {
            (
                m.role,
                m.speaker.as_ref().map(|s| s.id().to_owned()),
                m.content.to_string(),
            )
        })
        .collect()
}

/// Everything a request sends, as one text.
fn prompt_text(request: &ChatRequest) -> String {
    request
        .messages
        .iter()
        .map(|m| m.content.as_ref())
        .collect()
}

/// ECHO-7 opens a conversation of `turns` lines with RUSTY-3 and is held after
/// streaming `pieces`; the reply ends with `rest` once `finish` is released.
fn mid_sentence(
    pieces: &[&str],
    rest: &str,
    turns: u32,
) -> (Harness, HeldBackend, crate::support::held::Held) {
    let backend = HeldBackend::new();
    let held = backend.push_held(pieces, rest);
    let mut h = held_harness(&backend);
    h.app
        .world_mut()
        .write_message(StartConversation::between(["echo7", "rusty3"]).max_turns(turns));
    held.start.release();
    h.run_until("ECHO-7 is mid-sentence", |world| {
        world
            .resource::<crate::support::Inbox<NpcReplyDelta>>()
            .0
            .len()
            >= 2
    });
    (h, backend, held)
}

/// ECHO-7 and RUSTY-3 on `backend`, with conversation lines and ends recorded.
fn held_harness(backend: &HeldBackend) -> Harness {
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(backend.clone()));
    add_inbox::<ConversationLine>(&mut h.app);
    add_inbox::<ConversationEnded>(&mut h.app);
    h.spawn("echo7", persona("ECHO-7"));
    h.spawn("rusty3", persona("RUSTY-3"));
    h
}
