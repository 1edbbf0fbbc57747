//! Conversations among NPCs, turn by turn. A conversation starts with its
//! opening said, or cued to its first speaker; each line is then passed to
//! every participant and bystander, and the next speaker answers it through the
//! same turn pipeline as a player line, once it is free, until the rules or the
//! game end the conversation. The pure rules are in
//! [`TurnTaking`](crate::memory::TurnTaking).

mod flow;
mod lines;
mod news;

use bevy::prelude::*;

use crate::plugin::conversations::{
    ConversationEnd, EndConversation, NpcConversations, StartConversation, Step, TurnNewsItem,
};
use crate::plugin::messages::InterruptNpc;

use flow::Conversing;
pub(crate) use news::take_turn_news;

/// The game's starts and ends. Before the frame's interrupts, which cut off the
/// lines of the conversations ended here.
pub(crate) fn start_and_end_conversations(
    mut c: Conversing,
    mut start: MessageReader<StartConversation>,
    mut end: MessageReader<EndConversation>,
    mut interrupt: MessageWriter<InterruptNpc>,
) {
    for request in start.read() {
        c.start(request);
    }
    for request in end.read() {
        let found = c
            .conversations
            .running
            .iter()
            .position(|conv| match request {
                EndConversation::Id(id) => conv.id == *id,
                EndConversation::Involving(npc) => conv.participants.contains(npc),
            });
        let Some(at) = found else { continue };
        let conv = &mut c.conversations.running[at];
        match &mut conv.step {
            Step::Speaking {
                speaker, ending, ..
            } => {
                *ending = true;
                interrupt.write(InterruptNpc::new(conv.participants[*speaker].clone()));
            }
            Step::Deliver { .. } => c.end(at, ConversationEnd::Ended),
        }
    }
}

/// Whether any conversation runs: frames without cost nothing.
pub(crate) fn conversations_running(conversations: Res<NpcConversations>) -> bool {
    !conversations.running.is_empty()
}

/// Lines said this frame go round, and next speakers that are free answer.
pub(crate) fn advance_conversations(mut c: Conversing) {
    let news = std::mem::take(&mut c.conversations.news);
    // Usage first: a turn's reply arrives in the same frame as its figures.
    for item in news
        .iter()
        .filter(|i| matches!(i, TurnNewsItem::Reported(..)))
    {
        if let TurnNewsItem::Reported(npc, tokens) = item {
            c.reported(npc, *tokens);
        }
    }
    for item in news {
        match item {
            TurnNewsItem::Loaded => {
                while !c.conversations.running.is_empty() {
                    c.end(0, ConversationEnd::Loaded);
                }
            }
            TurnNewsItem::Reported(..) => {}
            TurnNewsItem::Started(started) => c.joined(&started),
            TurnNewsItem::Replied(replied) => {
                c.replied(&replied.npc, replied.turn, replied.text, replied.index);
            }
            TurnNewsItem::Failed(failed) => {
                if let Some(turn) = failed.turn {
                    c.failed(&failed.npc, turn, &failed.error);
                }
            }
        }
    }
    c.step_all();
}
