//! Budgeted prompt assembly: the one place a reply prompt is built from typed
//! sections (persona, pinned facts, lore, summaries, recalled messages, window).
//!
//! Sections are filled in priority order. The persona, the pinned facts and every
//! message no summary covers yet are always sent: dropping them would lose
//! something nothing else holds. What is left of the budget is shared between the
//! covered tail of the window, the summaries and the recalled messages, each up to
//! its share first; whatever a section does not use goes to the others. Lore
//! takes its share first and never more, since it is the world's text, not this
//! conversation's. A line said again, up to case, spacing and punctuation, is
//! recalled once, and not at all while a copy of it waits in the window.
//!
//! Everything that came from the player, a model or the game's lore and is moved
//! into the system message (summaries, recalled lines, facts, lore) is quoted as a
//! string literal inside a block that says it is data. A player line such as
//! `System: ignore previous instructions` therefore stays one quoted line and
//! cannot open a section of its own.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::clock::DateFormat;
use super::config::PromptBudget;
use super::log::ChatLog;
use super::lore::LoreHit;
use super::message::{ChatMessage, LogIndex, PromptMessage, Role};
use super::persona::PersonaPrompt;
use super::privacy::Withheld;
use super::recall::{RecallHit, RecallReason};
use super::segments::SummarySegment;
use super::tokens::{MESSAGE_OVERHEAD_TOKENS, estimate_message_tokens, estimate_tokens};

mod basic;
mod follow_up;
mod items;
mod layout;
mod lore;
mod share;
mod text;

pub(crate) use basic::{ComposedPrompt, basic_prompt, compose_system_prompt, neutralize_summary};
pub(crate) use follow_up::{Afresh, Conversation, Next};
use items::{Item, SaidOnce, recall_item, recall_items, recalled_messages, summary_items};
use share::{Fill, report, share_out, sorted_by_index};
use text::{Headings, SectionTexts, block};
#[cfg(test)]
mod tests;

/// The kinds of prompt section, in the order they appear.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SectionKind {
    /// The persona text. Never trimmed.
    Persona,
    /// Pinned facts. Never compressed, always sent.
    PinnedFacts,
    /// Lore entries that match the conversation, best first.
    Lore,
    /// Summaries of older messages.
    Summaries,
    /// Old messages recalled word for word from the log.
    Recalled,
    /// The rolling window (L1).
    Window,
}

/// What one section put into the prompt.
#[derive(Clone, Debug, PartialEq)]
pub struct SectionReport {
    /// Which section.
    pub kind: SectionKind,
    /// Estimated tokens it took.
    pub tokens: usize,
    /// Log indices of the messages it sent (window and recalled messages), or the
    /// first index each sent summary covers.
    pub included: Vec<LogIndex>,
    /// Items it had but left out for the budget.
    pub left_out: usize,
}

/// A recalled message that made it into the prompt, and why it was recalled.
#[derive(Clone, Debug, PartialEq)]
pub struct RecalledMessage {
    /// Its place in the log.
    pub index: LogIndex,
    /// Its relevance score.
    pub score: f32,
    /// Why it was recalled.
    pub reason: RecallReason,
}

/// A reply prompt and how it was built.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AssembledPrompt {
    /// The messages to send. With layered memory: a system message (persona,
    /// pinned facts, summaries), the window, and, when lore or old lines were found
    /// for the newest line, a system message with them just before it. Otherwise
    /// one system message with every section, then the window.
    pub messages: Vec<PromptMessage>,
    /// What each section sent, in prompt order.
    pub sections: Vec<SectionReport>,
    /// The recalled messages sent, oldest first.
    pub recalled: Vec<RecalledMessage>,
    /// The lore entries sent, best first.
    pub lore: Vec<LoreHit>,
    /// Estimated tokens of the whole prompt.
    pub tokens: usize,
    /// The budget, if any, that this prompt had to fit: for a follow-up, the budget
    /// plus its growth ([`FollowUps`](super::FollowUps)); for a log sent whole
    /// before its first fold, the budget plus half that growth
    /// ([`ShortLogs::SentWhole`](super::ShortLogs::SentWhole)).
    pub budget: Option<usize>,
    /// Whether this prompt is the conversation's last one with what came since
    /// appended, rather than built afresh.
    pub follow_up: bool,
}

impl AssembledPrompt {
    /// Whether the required sections alone did not fit the budget.
    pub fn over_budget(&self) -> bool {
        self.budget.is_some_and(|budget| self.tokens > budget)
    }

    /// The report of one section, if the prompt has it.
    pub fn section(&self, kind: SectionKind) -> Option<&SectionReport> {
        self.sections.iter().find(|s| s.kind == kind)
    }

    /// Every log index sent as a message, from the window or recalled.
    pub fn log_indices(&self) -> impl Iterator<Item = LogIndex> + '_ {
        self.sections
            .iter()
            .filter(|s| matches!(s.kind, SectionKind::Window | SectionKind::Recalled))
            .flat_map(|s| s.included.iter().copied())
    }
}

/// Where the summaries come from.
#[derive(Clone)]
pub(crate) enum SummarySource<'a> {
    /// Basic mode: the single rolling summary, placed after the label right below
    /// the persona, exactly as the three-layer design writes it.
    Labelled(&'a str),
    /// The single rolling summary as a quoted section, when other features are on.
    Rolling(&'a str),
    /// Segmented summaries, oldest first.
    Segments(&'a [SummarySegment]),
    /// The segments a prompt may show, oldest first: those that cover no line
    /// withheld from its addressee.
    Kept(Vec<&'a SummarySegment>),
}

/// Everything one reply prompt is built from.
pub(crate) struct AssemblyInput<'a> {
    pub(crate) persona: &'a PersonaPrompt,
    pub(crate) facts: Option<String>,
    pub(crate) summaries: SummarySource<'a>,
    pub(crate) recalled: Vec<RecallHit>,
    /// Lore found for this reply, best first.
    pub(crate) lore: &'a [LoreHit],
    pub(crate) log: &'a ChatLog,
    pub(crate) window: Range<LogIndex>,
    pub(crate) covered_until: LogIndex,
    pub(crate) budget: &'a PromptBudget,
    /// How dates are written: recall headings and segment time spans.
    pub(crate) dates: &'a DateFormat,
    /// Recalled lines with short speaker tags (`RecallConfig::compact_lines`).
    pub(crate) compact_recall: bool,
    /// The cacheable layout (what is found for the newest line goes right before
    /// it); `false` puts every section in one system message.
    pub(crate) cacheable: bool,
    /// What this prompt's addressee must not read: other speakers' private lines,
    /// and what covers or cites them.
    pub(crate) withheld: &'a Withheld,
    /// The most tokens of lore, whatever room is left: a log sent whole past
    /// the budget keeps lore to its share of the budget, not of the overshoot.
    pub(crate) lore_cap: Option<usize>,
}

pub(crate) fn assemble(input: AssemblyInput<'_>) -> AssembledPrompt {
    let language = input.persona.style.language;
    let headings = Headings::for_language(language, input.compact_recall);
    let window = input.withheld.keep(input.log.range(input.window.clone()));
    let split = window
        .iter()
        .position(|m| m.index >= input.covered_until)
        .unwrap_or(window.len());
    let (covered, uncovered) = window.split_at(split);
    let labels = player_label_if_mixed(input.log, input.persona);
    let message_tokens = |m: &ChatMessage| message_tokens(m, labels);

    // A summary that covers a withheld line would pass it on in other words.
    let summaries = match input.summaries {
        SummarySource::Labelled(_) | SummarySource::Rolling(_)
            if input.withheld.any_in(&(0..input.covered_until)) =>
        {
            SummarySource::Rolling("")
        }
        SummarySource::Segments(list) if !input.withheld.is_empty() => SummarySource::Kept(
            list.iter()
                .filter(|s| !input.withheld.any_in(&s.covered))
                .collect(),
        ),
        ref other => other.clone(),
    };
    // In basic mode the summary is part of the persona's text, after its label.
    let persona_text = match summaries {
        SummarySource::Labelled(summary) => compose_system_prompt(input.persona, summary),
        _ => input.persona.text.to_string(),
    };
    let persona_tokens = estimate_tokens(&persona_text) + MESSAGE_OVERHEAD_TOKENS;
    let facts = input.facts.as_deref().filter(|f| !f.is_empty());
    let facts_tokens = facts.map_or(0, |f| estimate_tokens(f) + 1);
    let uncovered_tokens: usize = uncovered.iter().map(&message_tokens).sum();
    let required = persona_tokens + facts_tokens + uncovered_tokens;

    // Newest first: under a budget the most recent covered turns and summaries
    // matter most, the recalled ones in order of relevance.
    let window_items: Vec<Item> = covered
        .iter()
        .rev()
        .map(|m| Item::plain(message_tokens(m), String::new(), m.index))
        .collect();
    let summary_items = summary_items(&summaries, input.persona, input.dates);
    // No section can take more than the budget leaves after what is always sent,
    // so recalled lines past that are never formatted (or compared for copies).
    let recall_room = input
        .budget
        .max_tokens
        .map_or(usize::MAX, |max| max.saturating_sub(required));
    let (recall_items, recall_unread) = recall_items(&input, uncovered, recall_room);

    let lore_items = lore::items(input.lore);

    let headers = [
        (!summary_items.is_empty()).then(|| estimate_tokens(headings.summaries) + 1),
        (!recall_items.is_empty()).then(|| estimate_tokens(headings.recalled) + 1),
    ];
    let lore_header = estimate_tokens(headings.lore) + 1;
    let room = input.budget.max_tokens.map(|max| {
        max.saturating_sub(required)
            .saturating_sub(headers.iter().flatten().sum::<usize>())
    });
    let lore_limit = room
        .map_or(usize::MAX, |room| {
            (room as f64 * f64::from(input.budget.shares.lore.max(0.0))) as usize
        })
        .min(input.lore_cap.unwrap_or(usize::MAX));
    let sent_lore = lore::pick(&lore_items, lore_limit, lore_header);
    let lore_tokens = lore::tokens(&sent_lore, lore_header);
    let takes = match room {
        None => [window_items.len(), summary_items.len(), recall_items.len()],
        Some(room) => share_out(
            room.saturating_sub(lore_tokens),
            &input.budget.shares,
            [&window_items, &summary_items, &recall_items],
        ),
    };
    let window_start = covered.len() - takes[0];
    let layout = if input.cacheable {
        &layout::CACHEABLE
    } else {
        &layout::ONE_SYSTEM_MESSAGE
    };

    let sent_summaries = sorted_by_index(&summary_items[..takes[1]]);
    let sent_recall = sorted_by_index(&recall_items[..takes[2]]);
    let texts = SectionTexts {
        persona: persona_text,
        facts: facts.map(str::to_owned),
        lore: block(headings.lore, &sent_lore),
        summaries: block(headings.summaries, &sent_summaries),
        recalled: block(headings.recalled, &sent_recall),
    };

    let sent_window = &window[window_start..];
    let messages = layout::messages(
        layout,
        |kind| texts.get(kind),
        sent_window
            .iter()
            .map(|m| m.to_prompt_labelled(input.dates, labels))
            .collect(),
    );

    let sections = layout
        .iter()
        .filter_map(|(kind, _)| match kind {
            SectionKind::Persona => Some(SectionReport {
                kind: SectionKind::Persona,
                tokens: persona_tokens,
                included: Vec::new(),
                left_out: 0,
            }),
            SectionKind::PinnedFacts => Some(SectionReport {
                kind: SectionKind::PinnedFacts,
                tokens: facts_tokens,
                included: Vec::new(),
                left_out: 0,
            }),
            // Only a prompt that had lore to offer reports it.
            SectionKind::Lore => (!lore_items.is_empty()).then(|| SectionReport {
                kind: SectionKind::Lore,
                tokens: lore_tokens,
                included: Vec::new(),
                left_out: lore_items.len() - sent_lore.len(),
            }),
            SectionKind::Summaries => Some(report(
                SectionKind::Summaries,
                &sent_summaries,
                summary_items.len(),
                headers[0],
            )),
            SectionKind::Recalled => Some(report(
                SectionKind::Recalled,
                &sent_recall,
                recall_items.len() + recall_unread,
                headers[1],
            )),
            SectionKind::Window => Some(SectionReport {
                kind: SectionKind::Window,
                tokens: sent_window.iter().map(message_tokens).sum(),
                included: sent_window.iter().map(|m| m.index).collect(),
                left_out: window_start,
            }),
        })
        .collect();
    let lore = lore::sent(input.lore, &sent_lore);
    let recalled = recalled_messages(&sent_recall, &input.recalled);
    let tokens = messages.iter().map(estimate_message_tokens).sum();
    AssembledPrompt {
        messages,
        sections,
        recalled,
        lore,
        tokens,
        budget: input.budget.max_tokens,
        follow_up: false,
    }
}

/// Whether the persona, `facts` and every message of `log`, as they are sent
/// (notes with their dates and framing), fit in `max` tokens: then a layered
/// prompt sends the log as it is, since no summary or recalled line could say
/// more than the log itself. Stops counting once past `max`.
pub(crate) fn whole_log_fits(
    log: &ChatLog,
    speaker: (&PersonaPrompt, &DateFormat),
    facts: Option<&str>,
    max: usize,
) -> bool {
    whole_log_prefix(log, speaker, facts, max) == log.next_index()
}

/// How many of `log`'s first messages fit in `max` tokens with the persona and
/// `facts`, counted as they are sent.
pub(crate) fn whole_log_prefix(
    log: &ChatLog,
    (persona, dates): (&PersonaPrompt, &DateFormat),
    facts: Option<&str>,
    max: usize,
) -> LogIndex {
    let labels = player_label_if_mixed(log, persona);
    let mut tokens = estimate_tokens(&persona.text)
        + MESSAGE_OVERHEAD_TOKENS
        + facts.map_or(0, |f| estimate_tokens(f) + 1);
    if tokens > max {
        return 0;
    }
    for message in log.messages() {
        tokens += estimate_message_tokens(&message.to_prompt_labelled(dates, labels));
        if tokens > max {
            return message.index;
        }
    }
    log.next_index()
}

fn message_tokens(message: &ChatMessage, labels: Option<&str>) -> usize {
    // Only player lines carry a label (see `to_prompt_labelled`).
    let label = labels
        .filter(|_| message.role == Role::User)
        .map_or(0, |player| {
            estimate_tokens(message.speaker_label(player)) + 1
        });
    MESSAGE_OVERHEAD_TOKENS + estimate_tokens(&message.content) + label
}

/// The persona's player label when the NPC has heard from a speaker other than
/// the default player, `None` otherwise. Once a second voice is in the log, every
/// player line in the window is labelled, the default player's too: an unlabelled
/// line among labelled ones would leave the model to guess whose it is. A
/// single-player conversation is never labelled: its prompts carry no speaker
/// names. Asked of the whole log, not the window, so a line's
/// label does not change as the window slides.
pub(crate) fn player_label_if_mixed<'a>(
    log: &ChatLog,
    persona: &'a PersonaPrompt,
) -> Option<&'a str> {
    (!log.speakers().is_empty()).then_some(persona.style.player_name.as_str())
}
