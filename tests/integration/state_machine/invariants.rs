//! The invariants checked after every step: the layers' rules, privacy, prompt
//! budgets and conversations.

use bevy::prelude::*;
use bevy_npc_memory::backends::ChatRequest;
use bevy_npc_memory::memory::{
    AssembledPrompt, MemoryConfig, PromptMessage, SectionKind, ShortLogs, estimate_prompt_tokens,
};
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::saves::{SaveFormat, SaveGame};

use super::backend::{NOTE_TAG, tags};
use super::play::{Log, Play};
use super::steps::NPCS;
use bevy_npc_memory::backends::Purpose;

impl Play {
    pub fn check(&self) {
        let now: Vec<Log> = (0..NPCS).map(|npc| self.log(npc)).collect();
        // L2 only grows, but for a clear or a load.
        let steps = self.before.iter().zip(&now).zip(&self.may_shrink);
        for (npc, ((before, now), _)) in steps.enumerate().filter(|(_, (_, shrink))| !**shrink) {
            assert!(now.len() >= before.len(), "NPC {npc}'s log shrank");
            for (i, (was, is)) in before.iter().zip(now).enumerate() {
                assert_eq!(was, is, "NPC {npc}'s entry {i} changed");
            }
        }
        // Every log stays in time order, numbered in order, whatever the clock does.
        let logs = self.h.app.world().resource::<ChatLogs>();
        for (npc, id) in self.ids.iter().enumerate() {
            let Some(log) = logs.get(id) else { continue };
            for pair in log.messages().windows(2) {
                assert!(
                    pair[0].timestamp.is_finite() && pair[0].timestamp <= pair[1].timestamp,
                    "NPC {npc}'s log is out of time order: {} then {}",
                    pair[0].timestamp,
                    pair[1].timestamp
                );
                assert!(
                    pair[0].index < pair[1].index,
                    "NPC {npc}'s log is out of order"
                );
            }
        }
        // What a load or a killed autosave brings back, the NPC had at some point.
        if self.may_shrink.iter().all(|&s| s) {
            for (npc, (held, history)) in now.iter().zip(&self.history).enumerate() {
                assert!(
                    held.is_empty() || history.iter().any(|log| log.starts_with(held)),
                    "NPC {npc} loaded a log it never had"
                );
            }
        }
        self.check_lifts(self.acted_before);
        // Every state saves, and the save reads back equal.
        let save = self.current();
        save.validate().expect("the writer accepts the state");
        let bytes = save.to_bytes(SaveFormat::Json).expect("the state encodes");
        let read = SaveGame::from_bytes(&bytes).expect("the save loads");
        assert_eq!(read.npcs, save.npcs, "the save loads back equal");
        assert!(
            self.h.inbox::<MemorySaveFailed>().is_empty(),
            "a save failed: {:?}",
            self.h.inbox::<MemorySaveFailed>()
        );
        // Private lines and replies to them stay with their NPC.
        for private in &self.private {
            let needle = format!("⟦{}⟧", private.tag);
            for other in (0..NPCS).filter(|&o| o != private.owner && !private.held_by.contains(&o))
            {
                assert!(
                    !self.holds(other, &private.tag),
                    "{} reached NPC {other}'s log",
                    private.tag
                );
                for request in self.requests.iter().filter(|r| r.npc == self.ids[other]) {
                    assert!(
                        !request.messages.iter().any(|m| m.content.contains(&needle)),
                        "{} reached a prompt of NPC {other}: {:?}",
                        private.tag,
                        request
                            .messages
                            .iter()
                            .find(|m| m.content.contains(&needle))
                    );
                }
            }
        }
        // A private line, and the replies to it, reach no prompt the owner answers
        // the other player from.
        for private in &self.private {
            let needle = format!("⟦{}⟧", private.tag);
            let owner = &self.ids[private.owner];
            for request in self
                .requests
                .iter()
                .filter(|r| r.npc == *owner && r.purpose() == Purpose::Reply)
            {
                // A window of two can hold only an action's call and its result:
                // the request then answers the newest line said to the NPC.
                let newest = request
                    .messages
                    .iter()
                    .rev()
                    .find(|m| m.role == Role::User)
                    .map(|m| m.content.to_string())
                    .unwrap_or_else(|| self.newest_line(private.owner));
                let to_co_op = tags(&newest).iter().any(|t| self.co_op_tags.contains(*t));
                if to_co_op != private.co_op {
                    assert!(
                        !request.messages.iter().any(|m| m.content.contains(&needle)),
                        "{} reached a prompt NPC {} answered the other player from (conversation step: {:?}): {:#?}",
                        private.tag,
                        private.owner,
                        self.conversing,
                        request.messages
                    );
                }
            }
        }
        // No prompt passes its cap, and what a layered NPC sent is what it built.
        let contexts = self.h.app.world().resource::<ContextMemoryManager>();
        for (npc, id) in self.ids.iter().enumerate() {
            let config = &save
                .npcs
                .iter()
                .find(|n| n.id == *id)
                .expect("saved")
                .memory
                .config;
            let sent: Vec<&ChatRequest> = self
                .requests
                .iter()
                .filter(|r| r.purpose() == Purpose::Reply && r.npc == *id)
                .collect();
            if config.features.budget.max_tokens.is_none() {
                for request in sent {
                    let messages = request.messages.len();
                    let cap = config.hard_cap();
                    assert!(
                        messages <= cap,
                        "NPC {npc}: {messages} messages, hard cap {cap}"
                    );
                }
            } else if let [first, rounds @ ..] = sent.as_slice() {
                let built = contexts
                    .get(id)
                    .and_then(|c| c.last_prompt())
                    .expect("a prompt");
                assert!(
                    sent.iter().any(|r| r.messages == built.messages),
                    "NPC {npc} sent the prompt it built"
                );
                if rounds.is_empty() {
                    check_layered_cap(npc, config, built);
                } else {
                    // A turn with actions: its later rounds are its prompt with
                    // the calls and results appended, so the cap holds the first.
                    check_turn_cap(npc, config, &first.messages);
                }
            }
        }
        self.check_conversations();
        // Notes are for recall only: no prompt ever shows one.
        for request in self
            .requests
            .iter()
            .filter(|r| r.purpose() == Purpose::Reply)
        {
            assert!(
                !request
                    .messages
                    .iter()
                    .any(|m| m.content.contains(NOTE_TAG)),
                "a note reached a reply prompt"
            );
        }
        // Every line got its reply or its failure.
        assert_eq!(
            self.count::<NpcReplied>() + self.count::<NpcReplyFailed>(),
            self.talks,
            "every line has an outcome"
        );
        self.check_turns();
        self.check_lore();
        self.check_shared();
    }
}

/// A layered prompt fits its budget (a follow-up: the budget plus its growth).
/// A log sent whole before its first fold (no summary, nothing recalled) may pass
/// it by half the follow-ups' growth. Only one built afresh may pass that, when
/// lines no summary covers yet must be sent, and then it holds at most the hard
/// cap of lines besides its system notes.
fn check_layered_cap(npc: usize, config: &MemoryConfig, built: &AssembledPrompt) {
    let budget = &config.features.budget;
    let tokens = estimate_prompt_tokens(&built.messages);
    if built.follow_up {
        let cap = budget.follow_up_cap().expect("follow-ups are on");
        assert!(
            tokens <= cap,
            "NPC {npc}: a follow-up of {tokens} tokens, cap {cap}"
        );
        return;
    }
    let lines = built
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .count();
    let max = budget.max_tokens.expect("a budget");
    let whole = budget.short_logs == ShortLogs::SentWhole
        && built.recalled.is_empty()
        && built
            .section(SectionKind::Summaries)
            .is_none_or(|summaries| summaries.tokens == 0);
    let growth = budget.follow_up_cap().map_or(0, |cap| cap - max);
    let limit = if whole { max + growth / 2 } else { max };
    let cap = config.hard_cap();
    assert!(
        tokens <= limit || lines <= cap,
        "NPC {npc}: {tokens} tokens over a limit of {limit} (budget {max}, sent whole: {whole}), and {lines} lines over the hard cap {cap}"
    );
}

/// The first prompt of a turn with actions, which may be a follow-up or fresh.
fn check_turn_cap(npc: usize, config: &MemoryConfig, messages: &[PromptMessage]) {
    let budget = &config.features.budget;
    let tokens = estimate_prompt_tokens(messages);
    let cap = budget
        .follow_up_cap()
        .or(budget.max_tokens)
        .expect("a budget");
    let lines = messages.iter().filter(|m| m.role != Role::System).count();
    assert!(
        tokens <= cap || lines <= config.hard_cap(),
        "NPC {npc}: a turn's prompt of {tokens} tokens and {lines} lines"
    );
}
