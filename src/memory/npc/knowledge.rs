//! What an NPC knows besides its own conversation: events it saw, things other NPCs
//! told it, and what it may pass on. Each becomes an entry of the full log, so it is
//! summarized, recalled and saved like the conversation, and shown quoted with its
//! time and source.

use std::sync::Arc;

use super::super::clock::Now;
use super::super::message::{ChatMessage, LogIndex, Role};
use super::super::origin::{Hearsay, MAX_CHAIN, Origin, Source, Teller};
use super::super::recall::{RecallIndex, RecallQuery, RecallReason};
use super::LayersMut;
use crate::memory::{LoreHit, NpcId, SummaryJob};

/// What noting an event or a piece of hearsay did.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Noted {
    /// The entry's index in the log.
    pub index: LogIndex,
    /// Set when the window hit its hard cap and uncovered messages left the prompt.
    pub overflow: Option<super::super::context::Degradation>,
    /// A summary that became due, to send.
    pub summary: Option<SummaryJob>,
}

/// Something an NPC can pass on: the text as it remembers it, and how it came to
/// know it, ready for the listener's [`LayersMut::hear`].
#[derive(Clone, Debug, PartialEq)]
pub struct Told {
    /// What is passed on.
    pub text: Arc<str>,
    /// Who tells it, and where it started.
    pub hearsay: Hearsay,
    /// The entry in the teller's log it came from; `None` for lore
    /// ([`tell_lore`](LayersMut::tell_lore)), which no log holds.
    pub from_index: Option<LogIndex>,
}

/// Most entries one query-based telling passes on.
pub const MAX_TOLD_PER_QUERY: usize = 8;

impl LayersMut<'_> {
    /// Marks a player line already said as private, as when the player asks
    /// afterwards ("keep that to yourself"), and the NPC's replies to it with it,
    /// wherever they sit (see [`replies_to`](Self::replies_to)).
    /// Returns whether the entry is a player line and is now private. Another
    /// NPC's line is not a player's: what an NPC said in a conversation is not
    /// this NPC's to keep from it.
    pub fn mark_private(&mut self, index: LogIndex) -> bool {
        let by_player = |m: &ChatMessage| {
            is_line_to_npc(m) && m.speaker.as_ref().is_none_or(|s| s.as_npc().is_none())
        };
        if !self.log.get(index).is_some_and(by_player) {
            return false;
        }
        self.set_origin(index, Origin::SaidPrivately);
        for reply in self.replies_to(index) {
            self.set_origin(reply, Origin::SaidPrivately);
        }
        true
    }

    /// What the NPC said in answer to the line at `line`: everything it said after
    /// that line and before the next one. That may be more than one entry (words
    /// that came with actions, then the answer after their results), and action
    /// calls and results, events and hearsay recorded while a reply was generated
    /// may sit between them, so a reply is not always the next entry.
    pub fn replies_to(&self, line: LogIndex) -> Vec<LogIndex> {
        self.log
            .range(line.saturating_add(1)..self.log.next_index())
            .iter()
            .filter(|m| is_spoken(m))
            .take_while(|m| m.role == Role::Assistant)
            .map(|m| m.index)
            .collect()
    }

    /// The NPC saw `text` happen. `importance` (0 to 1, clamped) is the game's
    /// rating. The event enters the log like a line of the conversation, so it is
    /// summarized and recalled, but prompts show it as a quoted, dated note.
    pub fn witness(
        &mut self,
        text: impl Into<Arc<str>>,
        importance: f32,
        now: impl Into<Now>,
    ) -> Noted {
        let importance = if importance.is_finite() {
            importance.clamp(0.0, 1.0)
        } else {
            0.5
        };
        self.note(text, Origin::Witnessed { importance }, now.into())
    }

    /// Another NPC told this one something (see [`tell`](Self::tell)). Returns
    /// `None`, changing nothing, when the NPC already holds the same words: it
    /// knew it already, and a telling must not echo back along a chain. Also
    /// `None` for hearsay that names no teller. Longer names, questions and
    /// chains than a save can hold are cut to fit as they enter, so what is heard
    /// always saves.
    pub fn hear(&mut self, told: Told, now: impl Into<Now>) -> Option<Noted> {
        if self.log.messages().iter().any(|m| m.content == told.text) {
            return None;
        }
        let now = now.into();
        let hearsay = told.hearsay.bounded(now.seconds)?;
        Some(self.note(told.text, Origin::Heard(Arc::new(hearsay)), now))
    }

    /// What this NPC, called `teller`, can pass on of entry `index` of its log:
    /// `None` when there is no such entry or it is private. An NPC can only ever
    /// tell what is in its own log.
    pub fn tell(&self, index: LogIndex, teller: &Teller) -> Option<Told> {
        let message = self.log.get(index)?;
        if message.is_retracted() || !self.context.features.sharing.allows(&message.origin) {
            return None;
        }
        let mut asked = None;
        let (source, chain, hops, original_time) = match &message.origin {
            Origin::SaidPrivately | Origin::Acted(_) => return None,
            Origin::Said => {
                let speaker = match message.role {
                    // Whoever said it: a co-op player or an NPC by its own name,
                    // the default player by the persona's label.
                    Role::User => message
                        .speaker_label(&self.context.persona.style.player_name)
                        .to_owned(),
                    Role::Assistant => {
                        asked = self.answered_line(index);
                        teller.name.clone()
                    }
                    Role::System => return None,
                };
                (
                    Source::Said {
                        speaker,
                        private: false,
                    },
                    vec![teller.clone()],
                    1,
                    message.timestamp,
                )
            }
            Origin::Witnessed { .. } => (
                Source::Witnessed {
                    witness: teller.name.clone(),
                },
                vec![teller.clone()],
                1,
                message.timestamp,
            ),
            Origin::Heard(_) if message.origin.is_private_hearsay() => return None,
            Origin::Heard(heard) => {
                asked.clone_from(&heard.asked);
                let mut chain = Vec::with_capacity(heard.chain.len() + 1);
                chain.push(teller.clone());
                chain.extend(heard.chain.iter().take(MAX_CHAIN - 1).cloned());
                (
                    heard.source.clone(),
                    chain,
                    heard.hops.saturating_add(1),
                    heard.original_time,
                )
            }
        };
        Some(Told {
            text: message.content.clone(),
            hearsay: Hearsay {
                chain,
                source,
                original_time,
                hops,
                asked,
            },
            from_index: Some(index),
        })
    }

    /// Lore entry `hit`, which this NPC (called `teller`) may know, told as
    /// hearsay: for a listener outside the entry's scope. `now` is when the teller
    /// tells it; lore has no time of its own. `None` when the persona passes on
    /// nothing it knows first-hand of the world (`sharing.seen` off): lore counts
    /// as seen.
    pub fn tell_lore(&self, hit: &LoreHit, teller: &Teller, now: f64) -> Option<Told> {
        if !self.context.features.sharing.seen {
            return None;
        }
        Some(Told {
            text: hit.text.clone(),
            hearsay: Hearsay {
                chain: vec![teller.clone()],
                source: Source::Lore {
                    entry: hit.id.clone(),
                    retracted: false,
                },
                original_time: now,
                hops: 1,
                asked: None,
            },
            from_index: None,
        })
    }

    /// Retracts every piece of lore this NPC was told that no longer holds:
    /// `current(id)` is the entry's text now, `None` when it is gone. A retracted
    /// entry stays in the log (which is append-only) but no prompt, recall hit or
    /// telling shows its text again. Returns how many entries were retracted.
    ///
    /// Lore found for earlier lines that no longer holds is in the last prompt
    /// too: then the next prompt is built afresh, not extended from it.
    pub fn retract_lore(&mut self, current: impl Fn(&str) -> Option<Arc<str>>) -> usize {
        let found_stale = self.context.last_prompt().is_some_and(|prompt| {
            prompt
                .lore
                .iter()
                .any(|hit| current(&hit.id).is_none_or(|text| text != hit.text))
        });
        if found_stale {
            self.context.conversation = Default::default();
        }
        let stale = self.restated_hearsay(|message, heard| {
            let Source::Lore {
                entry,
                retracted: false,
            } = &heard.source
            else {
                return None;
            };
            let holds = current(entry).is_some_and(|text| text == message.content);
            (!holds).then(|| Source::Lore {
                entry: entry.clone(),
                retracted: true,
            })
        });
        for (index, origin) in &stale {
            self.set_origin(*index, origin.clone());
        }
        stale.len()
    }

    /// NPC `source` made private the lines it was first told with `texts` (a
    /// player line and the NPC's replies to it, see
    /// [`mark_private`](Self::mark_private)): what this NPC heard of them stays in
    /// its memory, but is never passed on again. Returns how many entries
    /// changed. The prompts do not change, so the next one still extends the last.
    pub fn withhold_told(&mut self, source: &NpcId, texts: &[Arc<str>]) -> usize {
        let withheld = self.restated_hearsay(|message, heard| {
            let Source::Said {
                speaker,
                private: false,
            } = &heard.source
            else {
                return None;
            };
            let first_hand = heard.first_told_by(source);
            (first_hand && texts.contains(&message.content)).then(|| Source::Said {
                speaker: speaker.clone(),
                private: true,
            })
        });
        for (index, origin) in &withheld {
            self.log.set_origin(*index, origin.clone());
        }
        withheld.len()
    }

    /// The hearsay entries `restate` gives a new source, with their origin so
    /// changed; their text and the rest of their hearsay stay as they are.
    fn restated_hearsay(
        &self,
        restate: impl Fn(&ChatMessage, &Hearsay) -> Option<Source>,
    ) -> Vec<(LogIndex, Origin)> {
        let restated = self.log.messages().iter().filter_map(|message| {
            let Origin::Heard(heard) = &message.origin else {
                return None;
            };
            let source = restate(message, heard)?;
            let mut hearsay = (**heard).clone();
            hearsay.source = source;
            Some((message.index, Origin::Heard(Arc::new(hearsay))))
        });
        restated.collect()
    }

    /// The player line a reply at `index` answered, if it may be passed on.
    fn answered_line(&self, index: LogIndex) -> Option<Arc<str>> {
        let line = self
            .log
            .range(0..index)
            .iter()
            .rev()
            .find(|m| is_line_to_npc(m))?;
        (line.origin == Origin::Said).then(|| line.content.clone())
    }

    /// What this NPC can pass on about `query`: its best matching entries (not
    /// neighbours, never private ones), at most `max` (capped at
    /// [`MAX_TOLD_PER_QUERY`]). Works whether or not recall is on for this NPC.
    pub fn tell_about(&mut self, query: &str, max: usize, teller: &Teller) -> Vec<Told> {
        let messages = self.log.messages();
        let mut config = self.context.features.recall.clone();
        config.enabled = true;
        config.neighbours = false;
        config.max_messages = max.min(MAX_TOLD_PER_QUERY) * 2;
        let recall_query = RecallQuery {
            line: query,
            context: &[],
            exclude: 0..0,
            line_index: None,
            now: messages.last().map_or(0.0, |m| m.timestamp),
            own_name: "",
        };
        let own_index = self.context.features.recall.enabled;
        let hits = if own_index {
            self.context
                .recall
                .candidates(&recall_query, messages, &config)
        } else {
            // Recall is off for this NPC, so it keeps no index: build one for this
            // telling, which is rare next to replies.
            RecallIndex::from_log_with_calendar(messages, config.calendar).candidates(
                &recall_query,
                messages,
                &config,
            )
        };
        let told: Vec<Told> = hits
            .into_iter()
            .filter(|hit| matches!(hit.reason, RecallReason::Matched { .. }))
            .filter_map(|hit| self.tell(hit.index, teller))
            .take(max.min(MAX_TOLD_PER_QUERY))
            .collect();
        // Only what is passed on was recalled; the spare candidates were not.
        if own_index {
            let recalled = told.iter().filter_map(|t| t.from_index);
            self.context.recall.count_access(recalled);
        }
        told
    }
}

/// Whether an entry is part of the conversation itself: a line someone said, not an
/// action, an event, hearsay or a note.
fn is_spoken(message: &ChatMessage) -> bool {
    message.role != Role::System && matches!(message.origin, Origin::Said | Origin::SaidPrivately)
}

pub(super) use crate::memory::privacy::is_line_to_npc;

#[cfg(test)]
mod tests;
