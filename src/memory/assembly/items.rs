//! Candidate lines of the flexible sections, written and costed: recalled lines
//! (each said line once, quoted) and summaries.

use std::collections::HashSet;

use super::{AssemblyInput, RecalledMessage, SummarySource};
use crate::memory::clock::DateFormat;
use crate::memory::message::{ChatMessage, LogIndex, Role};
use crate::memory::origin::Origin;
use crate::memory::persona::{PersonaPrompt, PromptLanguage};
use crate::memory::quote::quote;
use crate::memory::recall::RecallHit;
use crate::memory::segments::{SegmentPriority, SummarySegment};
use crate::memory::speaker::SpeakerId;
use crate::memory::text::sameness_key;
use crate::memory::tokens::estimate_tokens;

/// One candidate line of a flexible section and its cost.
pub(super) struct Item {
    pub(super) tokens: usize,
    pub(super) text: String,
    pub(super) index: LogIndex,
    /// A heading the item shares with its neighbours (the time of recalled lines),
    /// written and paid for once per run of items with the same heading.
    pub(super) group: Option<String>,
}

impl Item {
    pub(super) fn plain(tokens: usize, text: String, index: LogIndex) -> Self {
        Self {
            tokens,
            text,
            index,
            group: None,
        }
    }
}

/// The recalled lines as candidate items, best first, each line said again (and
/// each line the always-sent `uncovered` messages hold) left out, until their
/// tokens pass `room`; with how many hits were not read for that.
pub(super) fn recall_items(
    input: &AssemblyInput<'_>,
    uncovered: &[ChatMessage],
    room: usize,
) -> (Vec<Item>, usize) {
    let mut held = SaidOnce::default();
    for message in uncovered {
        held.is_new(message);
    }
    let mut items = Vec::new();
    let mut tokens = 0usize;
    for (read, hit) in input.recalled.iter().enumerate() {
        if tokens > room {
            return (items, input.recalled.len() - read);
        }
        let Some(message) = input.log.get(hit.index) else {
            continue;
        };
        if input.withheld.contains(hit.index) || !held.is_new(message) {
            continue;
        }
        let item = recall_item(message, input.persona, input.dates, input.compact_recall);
        tokens += item.tokens;
        items.push(item);
    }
    (items, 0)
}

/// A recalled line as a candidate item, under the heading of its time.
pub(super) fn recall_item(
    message: &ChatMessage,
    persona: &PersonaPrompt,
    dates: &DateFormat,
    compact: bool,
) -> Item {
    let text = recalled_line(message, persona, dates, compact);
    Item {
        tokens: estimate_tokens(&text) + 1,
        text,
        index: message.index,
        group: Some(format!("[{}]", dates.format(message.timestamp))),
    }
}

/// The recall hits behind the sent items, oldest first as the items are.
pub(super) fn recalled_messages(sent: &[&Item], hits: &[RecallHit]) -> Vec<RecalledMessage> {
    sent.iter()
        .filter_map(|item| hits.iter().find(|hit| hit.index == item.index))
        .map(|hit| RecalledMessage {
            index: hit.index,
            score: hit.score,
            reason: hit.reason.clone(),
        })
        .collect()
}

/// The said lines a prompt holds, by who said them and what they say up to case,
/// spacing and punctuation. A line said again and again ("Halt! Who goes there?"
/// at every patrol) is recalled once: each copy would spend the budget on words
/// the prompt already holds. Events seen or heard are never merged, since an
/// alarm that went off twice is two memories.
#[derive(Default)]
pub(super) struct SaidOnce(HashSet<(Role, Option<SpeakerId>, String)>);

impl SaidOnce {
    /// Whether `message` says something the prompt does not hold yet; from now on
    /// it does.
    pub(super) fn is_new(&mut self, message: &ChatMessage) -> bool {
        let said = matches!(message.origin, Origin::Said | Origin::SaidPrivately);
        !said
            || self.0.insert((
                message.role,
                message.speaker.clone(),
                sameness_key(&message.content),
            ))
    }
}

/// Summaries as candidate lines: high priority first, then newest first.
pub(super) fn summary_items(
    source: &SummarySource<'_>,
    persona: &PersonaPrompt,
    dates: &DateFormat,
) -> Vec<Item> {
    match source {
        // Part of the persona's text, not a section of its own.
        SummarySource::Labelled(_) => Vec::new(),
        SummarySource::Rolling("") => Vec::new(),
        SummarySource::Rolling(text) => {
            let line = format!("- {}", quote(text));
            vec![Item::plain(estimate_tokens(&line) + 1, line, 0)]
        }
        SummarySource::Segments(segments) => {
            segment_items(segments.iter().collect(), persona, dates)
        }
        SummarySource::Kept(segments) => segment_items(segments.clone(), persona, dates),
    }
}

/// Segments as summary items, high priority first, then newest first.
fn segment_items(
    mut order: Vec<&SummarySegment>,
    persona: &PersonaPrompt,
    dates: &DateFormat,
) -> Vec<Item> {
    order.sort_by(|a, b| {
        (b.priority == SegmentPriority::High)
            .cmp(&(a.priority == SegmentPriority::High))
            .then(b.covered.start.cmp(&a.covered.start))
    });
    order
        .into_iter()
        .map(|segment| {
            let line = segment_line(segment, persona.style.language, dates);
            Item::plain(estimate_tokens(&line) + 1, line, segment.covered.start)
        })
        .collect()
}

fn segment_line(segment: &SummarySegment, language: PromptLanguage, dates: &DateFormat) -> String {
    let mark = if segment.priority == SegmentPriority::High {
        "!"
    } else {
        ""
    };
    let (from, to) = (
        dates.format(segment.from_time),
        dates.format(segment.to_time),
    );
    let last = segment
        .covered
        .end
        .saturating_sub(1)
        .max(segment.covered.start);
    match language {
        PromptLanguage::English => format!(
            "- {mark}#{}-#{last} ({from} to {to}): {}",
            segment.covered.start,
            quote(&segment.text)
        ),
        PromptLanguage::Chinese => format!(
            "- {mark}#{}-#{last}（{from} 至 {to}）：{}",
            segment.covered.start,
            quote(&segment.text)
        ),
    }
}

fn recalled_line(
    message: &ChatMessage,
    persona: &PersonaPrompt,
    dates: &DateFormat,
    compact: bool,
) -> String {
    if !message.origin.is_said() && !matches!(message.origin, Origin::SaidPrivately) {
        return format!("- {}", message.note(dates));
    }
    if compact && let Some(tag) = compact_tag(message) {
        // The tag is one of ours, never the speaker's text, so only the quoted
        // literal carries anything the player or a model wrote.
        return format!("{tag}: {}", quote(&message.content));
    }
    let (speaker, text) = message.transcript_parts(&persona.style.player_name, &persona.name);
    format!("- {}: {}", quote(&speaker), quote(&text))
}

/// The compact tag of a line said by the default player (`P`) or by the NPC
/// itself (`Y`), as the compact heading explains; `None` for any other speaker,
/// whose line keeps its quoted name.
fn compact_tag(message: &ChatMessage) -> Option<&'static str> {
    match message.role {
        Role::User if message.speaker.as_ref().is_none_or(|s| s.is_player()) => Some("P"),
        Role::Assistant => Some("Y"),
        _ => None,
    }
}
