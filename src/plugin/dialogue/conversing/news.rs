//! What the turn pipeline reported this frame that a conversation may wait for.

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use crate::backends::Purpose;
use crate::plugin::conversations::{NpcConversations, TurnNewsItem};
use crate::plugin::messages::{NpcReplied, NpcReplyFailed, NpcReplyStarted};
use crate::plugin::saves::{MemoryLoaded, MemoryRestored};
use crate::plugin::usage::RequestFinished;

/// The turn pipeline's messages a conversation waits for.
#[derive(SystemParam)]
pub(crate) struct TurnNews<'w, 's> {
    started: MessageReader<'w, 's, NpcReplyStarted>,
    replied: MessageReader<'w, 's, NpcReplied>,
    failed: MessageReader<'w, 's, NpcReplyFailed>,
    finished: MessageReader<'w, 's, RequestFinished>,
    loaded: MessageReader<'w, 's, MemoryLoaded>,
    restored: MessageReader<'w, 's, MemoryRestored>,
}

/// What the turn pipeline reported this frame, kept for
/// [`advance_conversations`](super::advance_conversations) (which writes those messages, so cannot read them).
pub(crate) fn take_turn_news(mut news: TurnNews, mut conversations: ResMut<NpcConversations>) {
    if conversations.running.is_empty() {
        news.clear();
        return;
    }
    let inbox = &mut conversations.news;
    if news.loaded.read().count() + news.restored.read().count() > 0 {
        inbox.push(TurnNewsItem::Loaded);
    }
    for finished in news.finished.read() {
        if finished.purpose == Purpose::Reply
            && let Some(usage) = finished.outcome.usage
        {
            let tokens = usage.prompt_tokens + usage.completion_tokens;
            inbox.push(TurnNewsItem::Reported(finished.npc.clone(), tokens));
        }
    }
    inbox.extend(news.started.read().cloned().map(TurnNewsItem::Started));
    inbox.extend(news.replied.read().cloned().map(TurnNewsItem::Replied));
    inbox.extend(news.failed.read().cloned().map(TurnNewsItem::Failed));
}

impl TurnNews<'_, '_> {
    fn clear(&mut self) {
        self.started.clear();
        self.replied.clear();
        self.failed.clear();
        self.finished.clear();
        self.loaded.clear();
        self.restored.clear();
    }
}
