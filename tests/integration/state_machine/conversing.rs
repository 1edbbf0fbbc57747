//! The conversation step: NPCs talk among themselves, a third may join or
//! overhear, and the player may join; and what is checked after it.

use bevy_npc_memory::backends::{ChatRequest, Purpose};
use bevy_npc_memory::conversations::{
    ConversationEnded, ConversationLine, ConversationStarted, EndConversation, NpcConversations,
    StartConversation,
};
use bevy_npc_memory::dialogue::NpcReplyStarted;
use bevy_npc_memory::prelude::*;

use super::backend::{Answer, tags};
use super::play::Play;
use super::steps::{PlayerJoins, Talks, Third};
use crate::support::Inbox;

/// What a conversation step did, for the checks.
#[derive(Debug)]
pub(super) struct Conversing {
    pub(super) participants: Vec<usize>,
    pub(super) earshot: Option<usize>,
    /// How many conversation lines had been said before the step.
    pub(super) lines_before: usize,
    /// The tag of the line the player said to a participant, if any.
    pub(super) player_tag: Option<String>,
}

impl Play {
    /// NPCs talk among themselves; every turn answers with a shareable tag, so
    /// where each line went can be read off the logs.
    pub(super) fn converse(&mut self, talks: &Talks) {
        let lines_before = self.count::<ConversationLine>();
        let mut participants = vec![talks.first, talks.second];
        let mut earshot = None;
        match talks.third {
            Third::Away => {}
            Third::Joins => participants.push(talks.other()),
            Third::Overhears => earshot = Some(talks.other()),
        }
        for &npc in &participants {
            let answers = (0..talks.turns)
                .map(|_| Answer::Say(format!("⟦{}⟧ all quiet", self.tag('s'))))
                .collect();
            self.stage.answer(&self.ids[npc], answers);
        }
        let started = self.count::<NpcReplyStarted>();
        let ended = self.count::<ConversationEnded>();
        let ids: Vec<NpcId> = participants.iter().map(|&n| self.ids[n].clone()).collect();
        let mut start = StartConversation::between(ids.clone())
            .about(talks.topic.as_str())
            .max_turns(talks.turns);
        if let Some(opening) = &talks.opening {
            let tag = self.tag('s');
            start = start.opening_with(format!("⟦{tag}⟧ {opening}"));
        }
        if let Some(npc) = earshot {
            start = start.within_earshot([self.ids[npc].clone()]);
        }
        self.write(start);
        if talks.end_early || talks.player.is_some() {
            self.h
                .run_until("the first line is said or the start refused", |world| {
                    world.resource::<Inbox<ConversationLine>>().0.len() > lines_before
                        || world.resource::<Inbox<ConversationEnded>>().0.len() > ended
                });
        }
        let player_tag = talks
            .player
            .as_ref()
            .map(|joins| self.player_joins(talks, joins));
        if talks.end_early {
            self.write(EndConversation::involving(ids[0].clone()));
        }
        self.h.run_until("the conversation ends", |world| {
            world.resource::<Inbox<ConversationEnded>>().0.len() > ended
        });
        self.h.settle();
        // Each turn answered a line of its own: one outcome each. The player's
        // line has one whether or not it was answered.
        let turns = self.h.inbox::<NpcReplyStarted>()[started..]
            .iter()
            .filter(|s| {
                player_tag
                    .as_ref()
                    .is_none_or(|tag| !tags(&s.line).contains(&tag.as_str()))
            })
            .count();
        self.talks += turns + usize::from(player_tag.is_some());
        self.conversing = Some(Conversing {
            participants,
            earshot,
            lines_before,
            player_tag,
        });
    }

    /// The player says a line to a participant in the middle of a
    /// conversation; returns its tag.
    fn player_joins(&mut self, talks: &Talks, joins: &PlayerJoins) -> String {
        let npc = if joins.to_second {
            talks.second
        } else {
            talks.first
        };
        let tag = self.tag(if joins.private { 'p' } else { 's' });
        if joins.private {
            self.said_privately(&tag, npc, false);
        }
        let said = format!("⟦{tag}⟧ {}", joins.text);
        self.said.insert(
            tag.clone(),
            super::turns::Said {
                npc,
                line: said.clone(),
            },
        );
        let mut line = TalkToNpc::new(self.ids[npc].clone(), said);
        if joins.private {
            line = line.privately();
        }
        self.write(line);
        tag
    }

    /// No conversation outlives its step; a conversation's prompts hold no
    /// private line of anyone (but a prompt answering the player who joined
    /// it); every line it said is in the other participants' logs, and known to
    /// the NPC within earshot.
    pub(super) fn check_conversations(&self) {
        assert!(
            self.h.app.world().resource::<NpcConversations>().is_empty(),
            "a conversation is still running"
        );
        assert!(
            self.count::<ConversationEnded>() >= self.count::<ConversationStarted>(),
            "a conversation never ended"
        );
        let Some(conversing) = &self.conversing else {
            return;
        };
        let answers_player = |request: &ChatRequest| {
            conversing.player_tag.as_ref().is_some_and(|tag| {
                request
                    .messages
                    .iter()
                    .rev()
                    .find(|m| m.role == Role::User)
                    .is_some_and(|m| tags(&m.content).contains(&tag.as_str()))
            })
        };
        for request in self
            .requests
            .iter()
            .filter(|r| r.purpose() == Purpose::Reply && !answers_player(r))
        {
            for private in &self.private {
                let needle = format!("⟦{}⟧", private.tag);
                assert!(
                    !request.messages.iter().any(|m| m.content.contains(&needle)),
                    "{} reached a prompt of a conversation among NPCs ({conversing:?}): {:#?}",
                    private.tag,
                    request.messages
                );
            }
        }
        let lines = &self.h.inbox::<ConversationLine>()[conversing.lines_before..];
        for line in lines {
            let said = line.text.trim();
            let listeners = conversing
                .participants
                .iter()
                .filter(|&&n| self.ids[n] != line.speaker);
            for &other in listeners {
                let heard = self.log(other);
                assert!(
                    heard
                        .iter()
                        .any(|(role, text)| *role == Role::User && said.starts_with(text.trim())),
                    "{said:?} is missing from NPC {other}'s log"
                );
            }
            if let (Some(npc), Some(tag)) = (conversing.earshot, tags(said).first()) {
                assert!(
                    self.holds(npc, tag),
                    "NPC {npc} within earshot never heard {said:?}"
                );
            }
        }
    }
}
