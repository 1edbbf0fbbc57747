//! Reply prompts: what the next reply sends, built afresh within the budget or
//! extending the conversation's last prompt, with what recall finds for the line.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::Arc;

use super::{LayersMut, ReplyInput};
use crate::memory::assembly::{
    Afresh, AssembledPrompt, AssemblyInput, Next, SummarySource, assemble, basic_prompt,
    player_label_if_mixed,
};
use crate::memory::context::ContextMemory;
use crate::memory::log::ChatLog;
use crate::memory::lore::{LoreHit, SharedKnowledge};
use crate::memory::message::{LogIndex, PromptMessage, Role};
use crate::memory::privacy::{Withheld, addressee, newest_line_to_npc};
use crate::memory::recall::{RecallHit, RecallQuery};
use crate::memory::window::RollingWindow;

/// Under a prompt budget, recall fetches one candidate per this many budget tokens
/// (a short chat line with its framing), so the recall share can be filled.
const BUDGET_TOKENS_PER_CANDIDATE: usize = 16;

impl LayersMut<'_> {
    /// The messages a reply request sends. In basic mode: the system prompt,
    /// then the window. With more features on: the assembled prompt (see
    /// [`assemble`](Self::assemble)).
    pub fn reply_prompt(&mut self) -> Vec<PromptMessage> {
        let withheld = Withheld::from(self.log, addressee(self.log), &self.context.facts);
        self.reply_prompt_with(&SharedKnowledge::default(), &withheld)
    }

    /// The reply request for the newest line: its prompt, and the same request's
    /// parts for backends that answer without a model. Neither holds what the
    /// line's speaker must not read: a summary covering a withheld line is left
    /// out of both.
    pub(super) fn reply_request(
        &mut self,
        knowledge: &SharedKnowledge,
    ) -> (Vec<PromptMessage>, ReplyInput) {
        let withheld = Withheld::from(self.log, addressee(self.log), &self.context.facts);
        let messages = self.reply_prompt_with(knowledge, &withheld);
        self.context.answering = newest_line_to_npc(self.log).map(|m| m.index);
        let summary = if withheld.any_in(&(0..self.context.covered_until)) {
            Arc::from("")
        } else {
            self.context.summary.clone()
        };
        let reply = ReplyInput {
            npc_name: self.context.persona.name.clone(),
            summary,
        };
        (messages, reply)
    }

    fn reply_prompt_with(
        &mut self,
        knowledge: &SharedKnowledge,
        withheld: &Withheld,
    ) -> Vec<PromptMessage> {
        if !self.context.features.any() && knowledge.is_empty() {
            let context = &mut *self.context;
            // A summary of a withheld line would pass it on in other words.
            let system = if withheld.any_in(&(0..context.covered_until)) {
                Arc::clone(&context.persona.text)
            } else {
                context.composed.get(&context.persona, &context.summary)
            };
            let window = self.log.range(self.window.start()..self.log.next_index());
            let window = withheld.keep(window);
            let labels = player_label_if_mixed(self.log, &context.persona);
            return basic_prompt(system, &window, &context.dates, labels);
        }
        self.assemble_for(knowledge, withheld).messages.clone()
    }

    /// Builds the reply prompt from its sections within the budget, recalling old
    /// messages for the newest player line, and remembers how it was built.
    pub fn assemble(&mut self) -> Arc<AssembledPrompt> {
        self.assemble_with(&SharedKnowledge::default())
    }

    /// [`assemble`](Self::assemble), with `knowledge` (lore) in its own section.
    pub fn assemble_with(&mut self, knowledge: &SharedKnowledge) -> Arc<AssembledPrompt> {
        let withheld = Withheld::from(self.log, addressee(self.log), &self.context.facts);
        self.assemble_for(knowledge, &withheld)
    }

    /// [`assemble_with`](Self::assemble_with), leaving out what `withheld` names:
    /// what the newest line's speaker must not read.
    fn assemble_for(
        &mut self,
        knowledge: &SharedKnowledge,
        withheld: &Withheld,
    ) -> Arc<AssembledPrompt> {
        let window = self.window.start()..self.log.next_index();
        let recalled = self.recall_for_reply(window);
        let context = &*self.context;
        let next = Next {
            log: self.log,
            persona: &context.persona,
            facts: context.facts_section(self.log.speakers(), withheld),
            addressee: addressee(self.log),
            withheld,
            labels: player_label_if_mixed(self.log, &context.persona),
            dates: &context.dates,
            features: &context.features,
            recalled: &recalled,
            lore: &knowledge.lore,
        };
        let (prompt, fresh) = match context.conversation.extend(&next) {
            Ok(prompt) => (Arc::new(prompt), false),
            Err(afresh) => {
                let prompt = build_prompt(
                    (self.log, self.window, context),
                    (recalled.clone(), &knowledge.lore),
                    withheld,
                    afresh,
                );
                (Arc::new(prompt), true)
            }
        };
        let mut conversation = context.conversation.clone();
        conversation.remember(prompt.clone(), &next);
        // Only what the prompt sends was recalled; what the budget left out was not,
        // and what an earlier line of the conversation recalled counted then.
        let sent: Vec<LogIndex> = prompt.recalled.iter().map(|r| r.index).collect();
        let counted: HashSet<LogIndex> = if fresh {
            HashSet::new()
        } else {
            context
                .last_prompt
                .iter()
                .flat_map(|p| p.recalled.iter().map(|r| r.index))
                .collect()
        };
        self.context.conversation = conversation;
        self.context
            .recall
            .count_access(sent.into_iter().filter(|i| !counted.contains(i)));
        self.context.last_prompt = Some(prompt.clone());
        prompt
    }

    fn recall_for_reply(&mut self, window: Range<LogIndex>) -> Vec<RecallHit> {
        let config = &self.context.features.recall;
        if !config.enabled {
            return Vec::new();
        }
        let messages = self.log.messages();
        let Some(line) = messages.last().filter(|m| m.role == Role::User) else {
            return Vec::new();
        };
        let recent = self.log.range(window.clone());
        let mut context: Vec<&str> = recent
            .iter()
            .rev()
            .skip(1)
            .take(config.context_messages)
            .map(|m| &*m.content)
            .collect();
        context.reverse();
        // Cloned only when used: the index below is borrowed mutably.
        let own_name = if config.skip_own_name {
            self.context.persona().name.clone()
        } else {
            String::new()
        };
        let query = RecallQuery {
            line: &line.content,
            context: &context,
            exclude: window,
            line_index: Some(line.index),
            now: line.timestamp,
            own_name: &own_name,
        };
        // Under a budget, fetch enough candidates to fill the recall share; the
        // assembly keeps the best that fit.
        let mut config = config.clone();
        if let Some(budget) = self.context.features.budget.max_tokens {
            config.max_messages = config
                .max_messages
                .max(budget / BUDGET_TOKENS_PER_CANDIDATE);
        }
        let mut hits = self.context.recall.candidates(&query, messages, &config);
        // Lore that changed since it was told is no memory worth a line.
        hits.retain(|hit| !self.log.get(hit.index).is_some_and(|m| m.is_retracted()));
        hits
    }
}

/// The prompt the next reply would send, from the same builder as every reply, but
/// without recalled lines: recall needs the player's next line, and a query would
/// count as a recall. In basic mode it is exactly the next reply's prompt minus that
/// line. For debug views and tools; it changes nothing.
pub fn preview_prompt(
    log: &ChatLog,
    window: &RollingWindow,
    context: &ContextMemory,
) -> AssembledPrompt {
    let withheld = Withheld::from(log, addressee(log), &context.facts);
    build_prompt(
        (log, window, context),
        (Vec::new(), &[]),
        &withheld,
        Afresh::Start,
    )
}

/// The one place a fresh reply prompt is built from the layers. While the whole
/// log fits a layered prompt's budget, the log is sent as it is, without summaries
/// or recalled lines.
fn build_prompt(
    (log, window, context): (&ChatLog, &RollingWindow, &ContextMemory),
    (recalled, lore): (Vec<RecallHit>, &[LoreHit]),
    withheld: &Withheld,
    afresh: Afresh,
) -> AssembledPrompt {
    let facts = context.facts_section(log.speakers(), withheld);
    let mut budget = context.features.budget.clone();
    if afresh == Afresh::Outgrown {
        let refill = f64::from(budget.follow_ups.refill.clamp(0.0, 1.0));
        budget.max_tokens = budget.max_tokens.map(|max| (max as f64 * refill) as usize);
    }
    let input = |facts, summaries, recalled, start, covered_until| AssemblyInput {
        persona: &context.persona,
        lore,
        facts,
        summaries,
        recalled,
        log,
        window: start..log.next_index(),
        covered_until,
        budget: &budget,
        dates: &context.dates,
        compact_recall: context.features.recall.compact_lines,
        // Layered memory lays its prompt out for caches; lore alone keeps basic
        // mode's one system message.
        cacheable: context.features.any(),
        withheld,
        lore_cap: None,
    };
    if context.sends_whole_log(log, facts.as_deref()) {
        // Lore found for the line shares what the whole log leaves of its limit,
        // within its share of the budget.
        let limit = context.whole_log_limit();
        let shares = &context.features.budget.shares;
        let lore_cap = (context.features.budget.max_tokens)
            .map(|max| (max as f64 * f64::from(shares.lore.max(0.0))) as usize);
        let whole_budget = crate::memory::PromptBudget {
            max_tokens: limit,
            ..context.features.budget.clone()
        };
        let whole = assemble(AssemblyInput {
            budget: &whole_budget,
            lore_cap,
            ..input(facts.clone(), SummarySource::Rolling(""), Vec::new(), 0, 0)
        });
        // The check that chose it cannot count the lore found for the line,
        // which can come to more, and then the assembler would cut the log's
        // start to fit.
        let sent = whole
            .section(crate::memory::SectionKind::Window)
            .map_or(0, |window| window.included.len());
        let fits = limit.is_none_or(|limit| whole.tokens <= limit);
        if fits && sent == withheld.keep(log.messages()).len() {
            return whole;
        }
    }
    // The hard cap waits while the log is sent whole; a log whose words fit but
    // whose sent text does not is layered within it all the same.
    assemble(input(
        facts,
        context.summary_source(),
        recalled,
        window.start().max(window.cap_start(log)),
        context.covered_until,
    ))
}
