//! Where a log entry came from: a line of the conversation, something the NPC saw,
//! or something another NPC told it. Entries that are not the NPC's own
//! conversation are data about the world, and prompts always show them quoted, with
//! their time and source, so none can pose as the player or the NPC.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::action::ActionNote;
use super::npc_id::NpcId;
use super::text::first_chars;

/// Where an entry of the log came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A line of the NPC's conversation, said by the player (role `User`) or the NPC
    /// (role `Assistant`).
    #[default]
    Said,
    /// A player line the player asked the NPC to keep to itself, or the NPC's reply
    /// to one (which may well repeat it): it is never passed on to another NPC.
    SaidPrivately,
    /// Something the NPC saw happen, reported by the game.
    Witnessed {
        /// The game's rating, from 0 (trivial) to 1 (unforgettable).
        importance: f32,
    },
    /// Something another NPC told this one.
    Heard(Arc<Hearsay>),
    /// An action the NPC called, or what came of it: data about the world, never
    /// an instruction, so its arguments (written by a model) stay quoted.
    Acted(Arc<ActionNote>),
}

impl Origin {
    /// Whether this is a plain line of the conversation (the default, not saved).
    pub fn is_said(&self) -> bool {
        matches!(self, Origin::Said)
    }

    /// Whether the entry may be passed on to another NPC.
    pub fn is_shareable(&self) -> bool {
        !matches!(self, Origin::SaidPrivately)
    }

    /// Whether this is hearsay of a line made private at its source after it was
    /// told: kept, but passed on to no other NPC, by telling or in conversation.
    pub(crate) fn is_private_hearsay(&self) -> bool {
        matches!(self, Origin::Heard(heard) if matches!(heard.source, Source::Said { private: true, .. }))
    }

    /// Hops from the original source: 0 first-hand, 1 told by who saw or heard it.
    pub fn hops(&self) -> u32 {
        match self {
            Origin::Heard(hearsay) => hearsay.hops,
            _ => 0,
        }
    }
}

/// How an NPC came to know something it was told: who told it, and where the
/// knowledge started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hearsay {
    /// Who told it, nearest first: the teller, then whoever told the teller, and so
    /// on back to the first-hand source's NPC.
    pub chain: Vec<Teller>,
    /// Where the knowledge started.
    pub source: Source,
    /// When the original was said, seen or written, in game seconds.
    pub original_time: f64,
    /// How many tellings lie between the source and this NPC (1 for a direct tell).
    pub hops: u32,
    /// For an answer, the line it answered: "Who taught you?" goes with "An old hand
    /// called Mira", or the listener could never tell what the answer was about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked: Option<Arc<str>>,
}

impl Hearsay {
    /// The NPC that told it.
    pub fn teller(&self) -> Option<&Teller> {
        self.chain.first()
    }

    /// Whether `npc` is the first NPC of the chain: it told this first-hand.
    pub(crate) fn first_told_by(&self, npc: &NpcId) -> bool {
        first_told_by(&self.chain, npc)
    }
}

/// Whether `npc` is the last link of `chain`: the NPC that told it first-hand.
pub(crate) fn first_told_by(chain: &[Teller], npc: &NpcId) -> bool {
    chain.last().is_some_and(|teller| teller.id == *npc)
}

/// One NPC in a chain of tellings.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Teller {
    /// Its memory's id.
    pub id: NpcId,
    /// Its display name, as prompts show it.
    pub name: String,
}

/// Where a piece of knowledge started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Said in a conversation, by this speaker (the player's or an NPC's name).
    Said {
        /// Who said it.
        speaker: String,
        /// Set when the line was made private at its source after it was told
        /// ([`MarkPrivate`](crate::knowledge::MarkPrivate)): the listener keeps
        /// what it heard, but never passes it on, by telling or in a
        /// conversation among NPCs, even once the source NPC has forgotten the
        /// line or is gone.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        private: bool,
    },
    /// Seen by an NPC.
    Witnessed {
        /// Who saw it.
        witness: String,
    },
    /// A lore entry the teller knew and the listener may not: world knowledge
    /// passed on. The listener's prompts and recall drop it once the entry says
    /// something else or is gone ([`LayersMut::retract_lore`](crate::memory::LayersMut::retract_lore)).
    Lore {
        /// The lore entry's id.
        entry: String,
        /// Set when the entry changed or went away after it was told: the text is
        /// no longer true of the world, so no prompt or recall hit shows it, and
        /// it is not passed on again. Kept in the log, which is append-only.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        retracted: bool,
    },
}

/// The most tellers a chain keeps; older links are dropped, the hop count stays.
pub const MAX_CHAIN: usize = 8;

/// Longest name a chain or source may hold, in characters; a save with more is
/// damaged or hostile.
const MAX_NAME_CHARS: usize = 256;

/// Longest question a piece of hearsay carries, in characters.
const MAX_ASKED_CHARS: usize = 20_000;

/// Brings a chain the game or another NPC supplies within what loads (see
/// [`check_chain`]), so that storing it can never make a save fail: at most
/// [`MAX_CHAIN`] tellers, the newest kept; names and ids cut to their first
/// 256 characters; at least one hop per teller. Returns `false`, for the caller to
/// refuse it, when the chain names no teller.
pub(crate) fn bound_chain(chain: &mut Vec<Teller>, hops: &mut u32) -> bool {
    chain.truncate(MAX_CHAIN);
    for teller in chain.iter_mut() {
        // Ids need nothing here: `NpcId::new` already keeps them to what loads.
        bound_name(&mut teller.name);
    }
    *hops = (*hops).max(chain.len() as u32);
    !chain.is_empty()
}

fn bound_name(name: &mut String) {
    if name.chars().count() > MAX_NAME_CHARS {
        *name = first_chars(name, MAX_NAME_CHARS).to_owned();
    }
}

impl Hearsay {
    /// This hearsay within what loads (see [`bound_chain`]): also its source's name
    /// and its question cut to their limits, and a time that is not a number
    /// replaced by `now`. `None` when the chain names no teller.
    pub(crate) fn bounded(mut self, now: f64) -> Option<Self> {
        if !bound_chain(&mut self.chain, &mut self.hops) {
            return None;
        }
        match &mut self.source {
            Source::Said { speaker, .. } => bound_name(speaker),
            Source::Witnessed { witness } => bound_name(witness),
            Source::Lore { entry, .. } => bound_name(entry),
        }
        if let Some(asked) = &self.asked
            && asked.chars().count() > MAX_ASKED_CHARS
        {
            self.asked = Some(first_chars(asked, MAX_ASKED_CHARS).into());
        }
        if !self.original_time.is_finite() {
            self.original_time = now;
        }
        Some(self)
    }

    pub(crate) fn check(&self) -> Result<(), String> {
        check_chain(&self.chain, self.hops)?;
        if self
            .asked
            .as_ref()
            .is_some_and(|asked| asked.chars().count() > MAX_ASKED_CHARS)
        {
            return Err(format!(
                "asked holds more than {MAX_ASKED_CHARS} characters"
            ));
        }
        if !self.original_time.is_finite() {
            return Err("has an original time that is not a finite number".into());
        }
        let source_name = match &self.source {
            Source::Said { speaker, .. } => speaker,
            Source::Witnessed { witness } => witness,
            Source::Lore { entry, .. } => entry,
        };
        check_name(source_name)
    }
}

/// Why a chain of tellers cannot be loaded, if it cannot: 1 to [`MAX_CHAIN`]
/// tellers with bounded names, and at least one hop per teller. Hearsay entries
/// and heard facts both carry one.
pub(crate) fn check_chain(chain: &[Teller], hops: u32) -> Result<(), String> {
    if chain.is_empty() || chain.len() > MAX_CHAIN {
        return Err(format!(
            "has a chain of {} tellers, not 1 to {MAX_CHAIN}",
            chain.len()
        ));
    }
    if hops < chain.len() as u32 {
        return Err(format!(
            "has {hops} hops, fewer than its {} tellers",
            chain.len()
        ));
    }
    chain.iter().try_for_each(Teller::check)
}

fn check_name(name: &str) -> Result<(), String> {
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!(
            "names someone in more than {MAX_NAME_CHARS} characters"
        ));
    }
    Ok(())
}

impl Teller {
    /// Why this teller cannot be loaded, if it cannot.
    pub(crate) fn check(&self) -> Result<(), String> {
        check_name(&self.name)?;
        check_name(self.id.as_str())
    }
}
