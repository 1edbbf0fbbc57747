//! Actions the NPC took: each call and what came of it enter the log as quoted
//! notes, and the prompt for the NPC's next words is built from the log as usual.

use std::sync::Arc;

use super::super::action::{
    ActionCall, ActionNote, ActionOutcome, ActionStep, MAX_ACTION_NAME_CHARS, MAX_ARGUMENTS_CHARS,
    MAX_CALL_ID_CHARS,
};
use super::super::clock::Now;
use super::super::context::Degradation;
use super::super::lore::SharedKnowledge;
use super::super::message::{LogIndex, PromptMessage, Role};
use super::super::origin::Origin;
use super::super::summary::SummaryJob;
use super::super::text::first_chars;
use super::{LayersMut, ReplyInput};

/// One action of a round, as it ended: the model's call and what came of it.
#[derive(Clone, Debug, PartialEq)]
pub struct ActionRecord {
    /// What the model asked for.
    pub call: ActionCall,
    /// What came of it.
    pub outcome: ActionOutcome,
}

/// What recording a round of actions did ([`LayersMut::act`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ActionsRecorded {
    /// The new entries' indices, in log order: the NPC's words if any, then each
    /// call followed by its result.
    pub indices: Vec<LogIndex>,
    /// Set when the window hit its hard cap and uncovered messages left the prompt.
    pub overflow: Option<Degradation>,
    /// The follow-up request, so the NPC can say what came of its actions: exactly
    /// these messages.
    pub messages: Vec<PromptMessage>,
    /// The same request's parts, for backends that answer without a model.
    pub reply: ReplyInput,
    /// A summary that became due, to send as well.
    pub summary: Option<SummaryJob>,
}

impl LayersMut<'_> {
    /// The NPC answered with actions: `said`, the text that came with them if any,
    /// enters the log as its line, then each call (its arguments as the model wrote
    /// them) and its result, in order. Prompts show calls and results as quoted
    /// notes, so a model's arguments can never pose as an instruction. Send
    /// [`ActionsRecorded::messages`] for the NPC's next words, then call
    /// [`reply`](Self::reply) or `act` again with the answer.
    pub fn act(
        &mut self,
        said: Option<&str>,
        actions: &[ActionRecord],
        now: impl Into<Now>,
    ) -> ActionsRecorded {
        let now = now.into();
        self.context.dates = now.format;
        let mut indices = Vec::with_capacity(actions.len() * 2 + 1);
        let mut overflow = None;
        let mut keep = |recorded: super::Recorded| {
            indices.push(recorded.index);
            overflow = recorded.overflow.or(overflow.take());
        };
        if let Some(text) = said.map(str::trim).filter(|t| !t.is_empty()) {
            let origin = self.reply_origin();
            keep(self.record_from(Role::Assistant, text, now.seconds, origin));
        }
        for ActionRecord { call, outcome } in actions {
            let note = |step| {
                Origin::Acted(Arc::new(ActionNote {
                    name: first_chars(&call.name, MAX_ACTION_NAME_CHARS).to_owned(),
                    call: first_chars(&call.id, MAX_CALL_ID_CHARS).to_owned(),
                    step,
                }))
            };
            let arguments = first_chars(&call.arguments, MAX_ARGUMENTS_CHARS);
            let called = note(ActionStep::Called);
            keep(self.record_from(Role::System, arguments, now.seconds, called));
            let result = first_chars(outcome.text(), MAX_ARGUMENTS_CHARS);
            let ended = note(outcome.step());
            keep(self.record_from(Role::System, result, now.seconds, ended));
        }
        let (messages, reply) = self.reply_request(&SharedKnowledge::default());
        ActionsRecorded {
            indices,
            overflow,
            messages,
            reply,
            summary: self.start_summary(),
        }
    }
}

#[cfg(test)]
mod tests;
