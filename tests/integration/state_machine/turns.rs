//! The turn contract, line by line: each line the player says ends exactly once,
//! as a reply or a failure, and the messages about it agree with each other and
//! with the log. The count of outcomes alone would pass a line answered twice
//! and another never.

use std::collections::HashMap;

use bevy::prelude::World;
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::dialogue::{NpcReplyDelta, NpcReplyStarted, TurnId};
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::telemetry::LlmUsage;

use super::backend::tags;
use super::play::Play;

/// A line the player said, under its tag: to which NPC, and its exact text.
pub(super) struct Said {
    pub(super) npc: usize,
    pub(super) line: String,
}

/// How far each inbox had been read when the step began.
#[derive(Clone, Copy, Default)]
pub(super) struct Seen {
    replied: usize,
    failed: usize,
    pub(super) shared: usize,
}

/// Each NPC's reply requests and failures as the usage figures count them.
fn counted(world: &World, ids: &[NpcId]) -> Vec<(u64, u64)> {
    let usage = world.resource::<LlmUsage>();
    ids.iter()
        .map(|id| {
            usage
                .npc(id, Purpose::Reply)
                .map_or((0, 0), |stats| (stats.requests, stats.failures))
        })
        .collect()
}

impl Play {
    /// Every reply request that came back is counted once in the usage figures,
    /// and each one that failed or said nothing as a failure, also one cancelled
    /// after it was sent: the provider answered it. A result can reach the plugin
    /// a frame after the NPCs went idle, so this waits for the count.
    pub(super) fn wait_for_usage(&mut self) {
        let (stage, ids) = (self.stage.clone(), self.ids.clone());
        let returned = move || -> Vec<(u64, u64)> {
            ids.iter().map(|id| stage.returned_replies(id)).collect()
        };
        let ids = self.ids.clone();
        let expected = returned.clone();
        self.h.run_until(
            "the usage figures count every reply that came back",
            move |world| counted(world, &ids) == expected(),
        );
        assert_eq!(counted(self.h.app.world(), &self.ids), returned());
    }

    pub(super) fn seen(&self) -> Seen {
        Seen {
            replied: self.count::<NpcReplied>(),
            failed: self.count::<NpcReplyFailed>(),
            shared: self.count::<bevy_npc_memory::knowledge::KnowledgeShared>(),
        }
    }

    fn npc_of(&self, id: &NpcId) -> usize {
        self.ids.iter().position(|i| i == id).expect("one of ours")
    }

    /// The tag of the player's line in `text`, if it is one of ours.
    fn said_in(&self, text: &str) -> Option<&str> {
        tags(text)
            .into_iter()
            .find_map(|tag| self.said.get_key_value(tag))
            .map(|(tag, _)| tag.as_str())
    }

    pub(super) fn check_turns(&self) {
        // Every turn started for a line: the player's, exactly as said, or one a
        // conversation gave an NPC to answer.
        let mut lines: HashMap<(NpcId, TurnId), Option<&str>> = HashMap::new();
        for start in self.h.inbox::<NpcReplyStarted>() {
            let tag = self.said_in(&start.line);
            if let Some(tag) = tag {
                let said = &self.said[tag];
                assert_eq!(
                    (said.npc, said.line.as_str()),
                    (self.npc_of(&start.npc), start.line.as_ref()),
                    "a turn started with a line other than the one said"
                );
            }
            let again = lines.insert((start.npc.clone(), start.turn), tag);
            assert!(again.is_none(), "turn {:?} started twice", start.turn);
        }
        // Every started turn ends once, as a reply or a failure; a line handed
        // back never started.
        let mut ended: HashMap<(NpcId, TurnId), usize> = HashMap::new();
        let mut handed_back: HashMap<&str, usize> = HashMap::new();
        for reply in self.h.inbox::<NpcReplied>() {
            let key = (reply.npc.clone(), reply.turn);
            assert!(
                lines.contains_key(&key),
                "a reply to a turn that never started: {reply:?}"
            );
            *ended.entry(key).or_default() += 1;
        }
        for failure in self.h.inbox::<NpcReplyFailed>() {
            let started = failure
                .turn
                .map(|turn| (failure.npc.clone(), turn))
                .filter(|key| lines.contains_key(key));
            match (&failure.unrecorded_line, started) {
                (Some(line), None) => {
                    let tag = self.said_in(line).unwrap_or_else(|| {
                        panic!("a line handed back that nobody said: {failure:?}")
                    });
                    assert_eq!(
                        line, &self.said[tag].line,
                        "a line handed back other than it was said"
                    );
                    *handed_back.entry(tag).or_default() += 1;
                }
                (Some(_), Some(_)) => {
                    panic!("a line handed back as unrecorded after its turn started: {failure:?}")
                }
                (None, Some(key)) => *ended.entry(key).or_default() += 1,
                (None, None) => panic!("a failure of a turn that never started: {failure:?}"),
            }
        }
        for (key, tag) in &lines {
            let times = ended.get(key).copied().unwrap_or(0);
            assert_eq!(times, 1, "turn {key:?} ({tag:?}) ended {times} times");
        }
        // Every line the player said either started a turn or came back, once.
        let started: HashMap<&str, usize> =
            lines
                .values()
                .flatten()
                .fold(HashMap::new(), |mut count, tag| {
                    *count.entry(*tag).or_default() += 1;
                    count
                });
        for (tag, said) in &self.said {
            let times = started.get(tag.as_str()).copied().unwrap_or(0)
                + handed_back.get(tag.as_str()).copied().unwrap_or(0);
            assert_eq!(
                times, 1,
                "the line {tag} to NPC {} started or came back {times} times",
                said.npc
            );
        }
        self.check_new_outcomes(&lines);
        let streamed = self.check_deltas(&lines);
        self.check_cut_offs(&streamed);
        // The persona comes first in every reply prompt, whole.
        for request in self
            .requests
            .iter()
            .filter(|r| r.purpose() == Purpose::Reply)
        {
            let npc = self.npc_of(&request.npc);
            let persona = &self.personas[npc].1;
            let first = &request.messages[0];
            assert!(
                first.role == Role::System && first.content.starts_with(persona.as_str()),
                "NPC {npc}'s reply prompt does not open with its persona {persona:?}: {first:?}"
            );
        }
        // With every turn ended, no NPC still shows one.
        for (npc, &entity) in self.entities.iter().enumerate() {
            if let Some(state) = self.h.app.world().get::<NpcState>(entity) {
                assert_eq!(
                    *state,
                    NpcState::Idle,
                    "NPC {npc} is idle once its turns ended"
                );
            }
        }
    }

    /// What ended in this step, checked against the logs as the step left them:
    /// a handed-back line is in no log, and a reply, with the line it answers, is
    /// where its index says, unless the step replaced that NPC's log.
    fn check_new_outcomes(&self, lines: &HashMap<(NpcId, TurnId), Option<&str>>) {
        for failure in &self.h.inbox::<NpcReplyFailed>()[self.seen_before.failed..] {
            if let Some(line) = &failure.unrecorded_line {
                let tag = self.said_in(line).expect("checked above");
                let npc = self.said[tag].npc;
                assert!(
                    !self.holds(npc, tag),
                    "NPC {npc}'s log holds {tag}, handed back as unrecorded"
                );
            }
        }
        for reply in &self.h.inbox::<NpcReplied>()[self.seen_before.replied..] {
            let npc = self.npc_of(&reply.npc);
            if self.may_shrink[npc] {
                continue;
            }
            if let Some(tag) = lines[&(reply.npc.clone(), reply.turn)] {
                assert!(
                    self.holds(npc, tag),
                    "NPC {npc} answered {tag}, not in its log"
                );
            }
            let logs = self.h.app.world().resource::<ChatLogs>();
            let entry = logs
                .get(&reply.npc)
                .and_then(|log| log.get(reply.index))
                .unwrap_or_else(|| {
                    panic!("NPC {npc}'s reply index {} is not in its log", reply.index)
                });
            assert_eq!(
                (entry.role, entry.content.as_ref()),
                (Role::Assistant, reply.text.as_ref()),
                "NPC {npc}'s reply is not at its index"
            );
        }
    }

    /// The pieces of a reply add up to its text; returns each turn's pieces,
    /// joined.
    fn check_deltas(
        &self,
        lines: &HashMap<(NpcId, TurnId), Option<&str>>,
    ) -> HashMap<(NpcId, TurnId), String> {
        let mut streamed: HashMap<(NpcId, TurnId), String> = HashMap::new();
        for delta in self.h.inbox::<NpcReplyDelta>() {
            let key = (delta.npc.clone(), delta.turn);
            assert!(
                lines.contains_key(&key),
                "a delta for a turn that never started: {delta:?}"
            );
            streamed.entry(key).or_default().push_str(&delta.delta);
        }
        for reply in self.h.inbox::<NpcReplied>() {
            let key = (reply.npc.clone(), reply.turn);
            if let Some(pieces) = streamed.get(&key) {
                assert_eq!(
                    pieces.as_str(),
                    reply.text.as_ref(),
                    "the pieces of a reply add up to another text"
                );
            }
        }
        streamed
    }

    /// An interrupt records exactly what the player saw streamed as the NPC's
    /// reply, cut off, and nothing when nothing had streamed.
    fn check_cut_offs(&self, streamed: &HashMap<(NpcId, TurnId), String>) {
        let logs = self.h.app.world().resource::<ChatLogs>();
        for failure in &self.h.inbox::<NpcReplyFailed>()[self.seen_before.failed..] {
            let ReplyError::Interrupted { kept } = failure.error else {
                continue;
            };
            let npc = self.npc_of(&failure.npc);
            let shown = failure
                .turn
                .and_then(|turn| streamed.get(&(failure.npc.clone(), turn)))
                .map_or("", String::as_str);
            match kept {
                None => assert_eq!(shown, "", "NPC {npc} kept nothing of what it streamed"),
                Some(index) if !self.may_shrink[npc] => {
                    let entry = logs
                        .get(&failure.npc)
                        .and_then(|log| log.get(index))
                        .unwrap_or_else(|| panic!("NPC {npc} kept entry {index}, not in its log"));
                    assert_eq!(
                        (entry.role, entry.content.as_ref()),
                        (Role::Assistant, shown),
                        "NPC {npc} kept other than what it streamed"
                    );
                }
                Some(_) => {}
            }
        }
    }
}
