//! Follow-up lines ([`FollowUps`]): the next prompt of a conversation is the last
//! one with what came since appended, so a provider's prompt cache and a local
//! model's KV cache hold all of the last prompt.
//!
//! What a follow-up appends, in order: the log messages after the last prompt's
//! newest line (the NPC's reply, events, other speakers), then a system message
//! with lore and old lines found for the newest line that the prompt does not hold
//! yet, then the newest line. Nothing already sent is rewritten: a summary that
//! arrived meanwhile waits for the next fresh prompt, and the lines it covers are
//! still in this one word for word.

use std::collections::HashSet;
use std::sync::Arc;

use super::{
    AssembledPrompt, Fill, Headings, Item, RecalledMessage, SaidOnce, SectionKind, block,
    message_tokens, recall_item, recalled_messages, sorted_by_index,
};
use crate::memory::clock::DateFormat;
use crate::memory::config::MemoryFeatures;
use crate::memory::log::ChatLog;
use crate::memory::lore::LoreHit;
use crate::memory::message::{ChatMessage, LogIndex, PromptMessage, Role};
use crate::memory::persona::PersonaPrompt;
use crate::memory::privacy::Withheld;
use crate::memory::recall::RecallHit;
use crate::memory::speaker::SpeakerId;
use crate::memory::tokens::{MESSAGE_OVERHEAD_TOKENS, estimate_message_tokens, estimate_tokens};

/// The last prompt of the conversation, and what it was built from. Derived from
/// the memory, never saved: a load or a clear starts with a fresh prompt.
#[derive(Clone, Debug)]
pub(crate) struct Thread {
    prompt: Arc<AssembledPrompt>,
    persona: PersonaPrompt,
    facts: Option<String>,
    labels: Option<String>,
    dates: DateFormat,
    features: MemoryFeatures,
    /// Who the prompt spoke to: a prompt for another holds what they may read.
    addressee: Option<SpeakerId>,
    /// Whether it left out private lines of someone else, who may now be the one
    /// the next line is from.
    withheld_any: bool,
    /// The log's next index when the prompt was built: what follows is new.
    end: LogIndex,
}

/// The conversation's last prompt, if the next line may extend it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Conversation(Option<Arc<Thread>>);

/// Why the next prompt is built afresh instead of extending the last one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Afresh {
    /// A conversation starts: the NPC's first line, the first after a load, a
    /// clear or a pause that does not fit, or the inputs changed. Built within the
    /// whole budget.
    Start,
    /// The conversation went on past the cap: built within
    /// [`FollowUps::refill`](crate::memory::FollowUps::refill) of the budget.
    Outgrown,
}

/// A cache is not memory: two contexts that remember the same are equal whatever
/// prompt each sent last.
impl PartialEq for Conversation {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// What the next prompt is built from.
pub(crate) struct Next<'a> {
    pub(crate) log: &'a ChatLog,
    pub(crate) persona: &'a PersonaPrompt,
    pub(crate) facts: Option<String>,
    pub(crate) labels: Option<&'a str>,
    pub(crate) dates: &'a DateFormat,
    pub(crate) features: &'a MemoryFeatures,
    /// Old lines found for the newest line, best first.
    pub(crate) recalled: &'a [RecallHit],
    /// Lore found for the newest line, best first.
    pub(crate) lore: &'a [LoreHit],
    /// Who the newest line is from, whom the prompt speaks to.
    pub(crate) addressee: Option<&'a SpeakerId>,
    /// What that addressee must not read.
    pub(crate) withheld: &'a Withheld,
}

impl Conversation {
    /// The last prompt extended by what came since, or why the next prompt must
    /// be built afresh (see [`FollowUps`]).
    pub(crate) fn extend(&self, next: &Next<'_>) -> Result<AssembledPrompt, Afresh> {
        let thread = self.0.as_deref().ok_or(Afresh::Start)?;
        let budget = &next.features.budget;
        let (Some(cap), Some(max)) = (budget.follow_up_cap(), budget.max_tokens) else {
            return Err(Afresh::Start);
        };
        let same_inputs = thread.persona == *next.persona
            && thread.labels.as_deref() == next.labels
            && thread.dates.same_as(next.dates)
            && thread.features == *next.features;
        // Changed pinned facts are appended, as the summaries' are folded in at the
        // next fresh prompt; facts that are gone cannot be, so they start afresh.
        let facts_update = match (&thread.facts, &next.facts) {
            (old, new) if old == new => None,
            (_, Some(new)) if !new.is_empty() => Some(new.as_str()),
            _ => return Err(Afresh::Start),
        };
        if !same_inputs || next.log.next_index() <= thread.end || thread.withholds(next) {
            return Err(Afresh::Start);
        }
        let new = next.log.range(thread.end..next.log.next_index());
        let Some((newest, between)) = new.split_last() else {
            return Err(Afresh::Start);
        };
        let previous = between.last().or_else(|| next.log.get(thread.end - 1));
        let Some(previous) = previous.filter(|_| newest.role == Role::User) else {
            return Err(Afresh::Start);
        };
        // A prompt that still holds every message of the log has nothing to
        // recall: after a pause it goes on as within a conversation.
        let paused = newest.timestamp - previous.timestamp > budget.follow_ups.pause_secs
            && !thread.holds_whole_log();
        // Past the cap a conversation that went on is rebuilt smaller, one that
        // starts again after a pause is rebuilt whole.
        let outgrown = if paused {
            Afresh::Start
        } else {
            Afresh::Outgrown
        };

        let between = next.withheld.keep(between);
        let mut messages = thread.prompt.messages.clone();
        messages.extend(
            between
                .iter()
                .map(|m| m.to_prompt_labelled(next.dates, next.labels)),
        );
        let newest_message = newest.to_prompt_labelled(next.dates, next.labels);
        let mut tokens: usize = messages[thread.prompt.messages.len()..]
            .iter()
            .chain([&newest_message])
            .map(estimate_message_tokens)
            .sum::<usize>()
            + thread.prompt.tokens;
        let headings = Headings::for_language(
            next.persona.style.language,
            next.features.recall.compact_lines,
        );
        let facts_text = facts_update.map(|facts| format!("{}\n{facts}", headings.facts_update));
        // What is found goes in one more message, which costs its overhead too.
        tokens += facts_text.as_deref().map_or(0, estimate_tokens) + MESSAGE_OVERHEAD_TOKENS + 1;
        let room = cap.checked_sub(tokens).ok_or(outgrown)?;

        // After a pause the line is the first of a new conversation: it recalls as
        // much as a fresh prompt would, or gets one when that does not fit.
        let recall_share = if paused {
            1.0
        } else {
            budget.follow_ups.recall
        };
        if paused && (room as f64) < max as f64 * f64::from(budget.shares.recall) / 2.0 {
            return Err(Afresh::Start);
        }
        let found = Found::pick(thread, next, max, recall_share, room);
        // A line whose best find has no room left is better served afresh than
        // without it.
        if found.left_out_best {
            return Err(outgrown);
        }
        let block: Vec<&str> = facts_text
            .iter()
            .chain(&found.text)
            .map(String::as_str)
            .collect();
        if !block.is_empty() {
            messages.push(PromptMessage::new(Role::System, block.join("\n\n")));
        }
        messages.push(newest_message);
        let tokens = messages.iter().map(estimate_message_tokens).sum();
        // Estimates of parts need not add up to the estimate of the whole; the cap
        // holds for the whole.
        if tokens > cap {
            return Err(outgrown);
        }

        let mut prompt = (*thread.prompt).clone();
        let sent: Vec<&ChatMessage> = between.iter().chain([newest]).collect();
        let appended: Vec<LogIndex> = sent.iter().map(|m| m.index).collect();
        for section in &mut prompt.sections {
            match section.kind {
                SectionKind::Window => {
                    section.tokens += sent
                        .iter()
                        .map(|m| message_tokens(m, next.labels))
                        .sum::<usize>();
                    section.included.extend(&appended);
                }
                SectionKind::Recalled => {
                    section.tokens += found.recalled_tokens;
                    section
                        .included
                        .extend(found.recalled.iter().map(|r| r.index));
                }
                SectionKind::Lore => section.tokens += found.lore_tokens,
                SectionKind::PinnedFacts => {
                    section.tokens += facts_text.as_deref().map_or(0, estimate_tokens);
                }
                _ => {}
            }
        }
        prompt.recalled.extend(found.recalled);
        prompt.recalled.sort_by_key(|r| r.index);
        prompt.lore.extend(found.lore);
        prompt.messages = messages;
        prompt.tokens = tokens;
        prompt.budget = Some(cap);
        prompt.follow_up = true;
        Ok(prompt)
    }

    /// Whether the last prompt held every message of the log up to its newest
    /// line, so the next line extends a whole log.
    pub(crate) fn holds_whole_log(&self) -> bool {
        self.0.as_deref().is_some_and(Thread::holds_whole_log)
    }

    /// Remembers `prompt`, built from `next`, as the one the next line extends.
    pub(crate) fn remember(&mut self, prompt: Arc<AssembledPrompt>, next: &Next<'_>) {
        if next.features.budget.follow_up_cap().is_none() {
            self.0 = None;
            return;
        }
        self.0 = Some(Arc::new(Thread {
            prompt,
            persona: next.persona.clone(),
            facts: next.facts.clone(),
            labels: next.labels.map(str::to_owned),
            dates: next.dates.clone(),
            features: next.features.clone(),
            addressee: next.addressee.cloned(),
            withheld_any: !next.withheld.is_empty(),
            end: next.log.next_index(),
        }));
    }
}

impl Thread {
    /// Whether the prompt cannot go on for the next line's addressee: it spoke to
    /// someone else while private lines exist (it holds what they may read, or
    /// lacks what the new addressee may), or it sends a line withheld now.
    fn withholds(&self, next: &Next<'_>) -> bool {
        let private = self.withheld_any || !next.withheld.is_empty();
        (private && self.addressee.as_ref() != next.addressee)
            || self.prompt.log_indices().any(|i| next.withheld.contains(i))
    }

    /// Whether the prompt holds every message of the log up to its newest line:
    /// its window has every index below `end`.
    fn holds_whole_log(&self) -> bool {
        self.prompt.sections.iter().any(|section| {
            section.kind == SectionKind::Window && section.included.len() == self.end as usize
        })
    }
}

/// What a follow-up line found that the prompt does not hold yet.
#[derive(Default)]
struct Found {
    /// The system message before the newest line, if anything was found.
    text: Option<String>,
    recalled: Vec<RecalledMessage>,
    recalled_tokens: usize,
    lore: Vec<LoreHit>,
    lore_tokens: usize,
    /// An old line was found for the newest line, but not even the best one fit.
    left_out_best: bool,
}

impl Found {
    /// The best lore and old lines the prompt does not hold yet: lore within its
    /// share of `max`, old lines within `recall_share` of theirs; together never
    /// past `room`.
    fn pick(thread: &Thread, next: &Next<'_>, max: usize, recall_share: f32, room: usize) -> Self {
        let budget = &next.features.budget;
        let share_of_max = |share: f32| (max as f64 * f64::from(share.max(0.0))) as usize;
        let headings = Headings::for_language(
            next.persona.style.language,
            next.features.recall.compact_lines,
        );

        let new_lore: Vec<LoreHit> = next
            .lore
            .iter()
            .filter(|hit| {
                !thread
                    .prompt
                    .lore
                    .iter()
                    .any(|held| held.id == hit.id && held.text == hit.text)
            })
            .cloned()
            .collect();
        let lore_items = super::lore::items(&new_lore);
        let lore_header = estimate_tokens(headings.lore) + 1;
        // Lore is what the world says about this very line: a follow-up finds it
        // with the whole of its share, as a fresh prompt would.
        let lore_limit = share_of_max(budget.shares.lore).min(room);
        let sent_lore = super::lore::pick(&lore_items, lore_limit, lore_header);
        let lore_tokens = super::lore::tokens(&sent_lore, lore_header);

        let held: HashSet<LogIndex> = thread.prompt.log_indices().collect();
        let mut said = SaidOnce::default();
        let recall_items: Vec<Item> = next
            .recalled
            .iter()
            .filter(|hit| !held.contains(&hit.index) && !next.withheld.contains(hit.index))
            .filter_map(|hit| next.log.get(hit.index))
            .filter(|message| said.is_new(message))
            .map(|message| {
                recall_item(
                    message,
                    next.persona,
                    next.dates,
                    next.features.recall.compact_lines,
                )
            })
            .collect();
        let recall_header = estimate_tokens(headings.recalled) + 1;
        let recall_limit = share_of_max(recall_share * budget.shares.recall.max(0.0))
            .min(room.saturating_sub(lore_tokens))
            .saturating_sub(recall_header);
        let mut fill = Fill::default();
        fill.take(&recall_items, recall_limit);
        // The line's best find goes in even when its share is too small for it:
        // a question about something old is what recall is for.
        if fill.taken == 0 {
            let room = room
                .saturating_sub(lore_tokens)
                .saturating_sub(recall_header);
            fill.take(&recall_items[..recall_items.len().min(1)], room);
        }
        let sent_recall = sorted_by_index(&recall_items[..fill.taken]);
        let recalled_tokens = if sent_recall.is_empty() {
            0
        } else {
            fill.used + recall_header
        };

        let blocks: Vec<String> = [
            block(headings.lore, &sent_lore),
            block(headings.recalled, &sent_recall),
        ]
        .into_iter()
        .flatten()
        .collect();
        let recalled = recalled_messages(&sent_recall, next.recalled);
        let lore = super::lore::sent(&new_lore, &sent_lore);
        Self {
            text: (!blocks.is_empty()).then(|| blocks.join("\n\n")),
            recalled,
            recalled_tokens,
            lore,
            lore_tokens,
            left_out_best: !recall_items.is_empty() && fill.taken == 0,
        }
    }
}
