//! What NPCs know beyond their own conversation: events they witness, what they
//! tell each other, and lines the player asked them to keep private.
//!
//! Each NPC knows what it saw or was told, and nothing more. An event reaches only
//! its witnesses; a telling passes on only what the teller's own memory holds, never
//! a private line, and the listener remembers who told it and where it started.

use bevy::prelude::*;

use super::persona::Npc;
use crate::memory::{FactChange, FactKey, LogIndex, NpcId};

/// Some NPCs saw something happen: it enters each witness's memory (and only
/// theirs) as a dated event, which is summarized, recalled and saved like the
/// conversation, and which prompts show quoted, never as the player or the NPC.
/// Witnesses not spawned yet receive it under their id.
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_npc_memory::prelude::*;
/// fn reactor_alarm(mut seen: MessageWriter<NpcWitnessed>) {
///     seen.write(
///         NpcWitnessed::new(["echo7", "rusty"], "The reactor alarm went off in bay 4.")
///             .with_importance(0.9),
///     );
/// }
/// # App::new()
/// #     .add_plugins((MinimalPlugins, AssetPlugin::default(), NpcMemoryPlugin::default()))
/// #     .add_systems(Update, reactor_alarm)
/// #     .update();
/// ```
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct NpcWitnessed {
    /// Who saw it.
    pub witnesses: Vec<NpcId>,
    /// What happened, as the game describes it.
    pub text: String,
    /// The game's rating, from 0 (trivial) to 1 (unforgettable); 0.5 by default.
    pub importance: f32,
    /// When it happened, in the memory clock's seconds; now when `None`.
    pub at: Option<f64>,
}

impl NpcWitnessed {
    /// `witnesses` saw `text` happen, just now.
    pub fn new(
        witnesses: impl IntoIterator<Item = impl Into<NpcId>>,
        text: impl Into<String>,
    ) -> Self {
        Self {
            witnesses: witnesses.into_iter().map(Into::into).collect(),
            text: text.into(),
            importance: 0.5,
            at: None,
        }
    }

    /// How much it matters, from 0 to 1.
    pub fn with_importance(mut self, importance: f32) -> Self {
        self.importance = importance;
        self
    }

    /// When it happened, in the memory clock's seconds.
    pub fn at(mut self, seconds: f64) -> Self {
        self.at = Some(seconds);
        self
    }
}

/// [`NpcWitnessed`] by entity: `commands.trigger(Witness::new([guard, cook], text))`.
/// Entities without [`Npc`] are skipped with a warning.
#[derive(Event, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Event, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct Witness {
    /// The NPC entities that saw it.
    pub witnesses: Vec<Entity>,
    /// What happened.
    pub text: String,
    /// From 0 to 1; 0.5 by default.
    pub importance: f32,
}

impl Witness {
    /// The NPC entities `witnesses` saw `text` happen, just now.
    pub fn new(witnesses: impl IntoIterator<Item = Entity>, text: impl Into<String>) -> Self {
        Self {
            witnesses: witnesses.into_iter().collect(),
            text: text.into(),
            importance: 0.5,
        }
    }

    /// How much it matters, from 0 to 1.
    pub fn with_importance(mut self, importance: f32) -> Self {
        self.importance = importance;
        self
    }
}

/// What a telling is about.
#[derive(Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Debug, PartialEq, Clone)]
#[non_exhaustive]
pub enum About {
    /// One entry of the teller's log: a line, an event, or something it heard.
    Entry(LogIndex),
    /// Whatever the teller remembers that best matches `text`, at most `max`
    /// entries (capped at [`MAX_TOLD_PER_QUERY`](crate::memory::limits::MAX_TOLD_PER_QUERY)).
    Query {
        /// What the teller is asked about.
        text: String,
        /// Most entries passed on.
        max: usize,
    },
    /// The teller's active value of one pinned fact. The listener keeps it in its
    /// pinned facts as hearsay, which never replaces what the game set or what it
    /// learned first-hand, nor hearsay from fewer tellings away
    /// ([`FactSource::precedence`](crate::memory::FactSource::precedence)). A fact
    /// only private lines support is not passed on.
    Fact(FactKey),
}

/// NPC `from` tells NPC `to` what it knows `about` something: when two NPCs meet,
/// at a shift change. `to` remembers it as hearsay: who told it, the chain back to
/// where it started (the player, a witness), when it heard it, and how many
/// tellings away the source is; its prompts say so ("Rusty told you (day 3 10:00)
/// that Alex said: …"). Nothing is passed on that `from` does not hold in its own
/// memory, nor any line the player asked to keep private, nor what `to` knew
/// already. [`KnowledgeShared`] reports what `to` learned.
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_npc_memory::prelude::*;
/// # use bevy_npc_memory::knowledge::ShareKnowledge;
/// fn shift_change(mut share: MessageWriter<ShareKnowledge>) {
///     share.write(ShareKnowledge::about_query("rusty", "echo7", "the reactor", 3));
/// }
/// # App::new()
/// #     .add_plugins((MinimalPlugins, AssetPlugin::default(), NpcMemoryPlugin::default()))
/// #     .add_systems(Update, shift_change)
/// #     .update();
/// ```
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct ShareKnowledge {
    /// Who tells.
    pub from: NpcId,
    /// Who listens.
    pub to: NpcId,
    /// What about.
    pub about: About,
}

impl ShareKnowledge {
    /// `from` tells `to` about entry `index` of its own log.
    pub fn about_entry(from: impl Into<NpcId>, to: impl Into<NpcId>, index: LogIndex) -> Self {
        Self {
            from: from.into(),
            to: to.into(),
            about: About::Entry(index),
        }
    }

    /// `from` tells `to` its value of the pinned fact `key`, if it has one.
    pub fn about_fact(from: impl Into<NpcId>, to: impl Into<NpcId>, key: FactKey) -> Self {
        Self {
            from: from.into(),
            to: to.into(),
            about: About::Fact(key),
        }
    }

    /// `from` tells `to` what it remembers best matching `query`, at most `max`
    /// entries, and the lore it knows that matches and `to` may not know (told
    /// as hearsay whose source is the lore entry; see
    /// [`Source::Lore`](crate::memory::Source::Lore)).
    pub fn about_query(
        from: impl Into<NpcId>,
        to: impl Into<NpcId>,
        query: impl Into<String>,
        max: usize,
    ) -> Self {
        Self {
            from: from.into(),
            to: to.into(),
            about: About::Query {
                text: query.into(),
                max,
            },
        }
    }
}

/// What a [`ShareKnowledge`] passed on.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct KnowledgeShared {
    /// Who told.
    pub from: NpcId,
    /// Who listened.
    pub to: NpcId,
    /// The new entries in `to`'s log; empty when nothing was passed on (`from`
    /// did not know it, it was private, or `to` knew it already).
    pub learned: Vec<LogIndex>,
    /// For [`About::Fact`]: what the telling did to `to`'s pinned facts, applied
    /// or refused ([`FactChangeKind::Outranked`](crate::memory::FactChangeKind::Outranked)
    /// when `to` knew better). Empty when `from` had no such fact to tell, or
    /// may not pass it on.
    pub facts: Vec<FactChange>,
}

/// The player asks an NPC, after the fact, to keep a line to itself ("don't tell
/// anyone what I just said"): entry `index` of its log, a player line (a co-op
/// player's too, but not another NPC's), and the NPC's replies to it are never
/// passed on from now on, nor is a pinned fact resting on private lines alone.
/// NPCs they were told to before keep what they heard, but pass it on no
/// further, by telling or in a conversation among NPCs, even once this NPC has
/// forgotten it (a clear, or the NPC gone): the mark is saved with them.
#[derive(Message, Clone, Debug, PartialEq, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Message, Debug, PartialEq, Clone)]
#[non_exhaustive]
pub struct MarkPrivate {
    /// Whose log.
    pub npc: NpcId,
    /// The player line.
    pub index: LogIndex,
}

impl MarkPrivate {
    /// Entry `index` of `npc`'s log becomes private.
    pub fn new(npc: impl Into<NpcId>, index: LogIndex) -> Self {
        Self {
            npc: npc.into(),
            index,
        }
    }
}

pub(crate) fn plugin(app: &mut App) {
    app.add_message::<NpcWitnessed>()
        .add_message::<ShareKnowledge>()
        .add_message::<KnowledgeShared>()
        .add_message::<MarkPrivate>()
        .register_type::<NpcWitnessed>()
        .register_type::<Witness>()
        .register_type::<ShareKnowledge>()
        .register_type::<MarkPrivate>()
        .add_observer(on_witness);
}

/// A [`Witness`] becomes the [`NpcWitnessed`] of the entities' NPCs.
fn on_witness(witness: On<Witness>, npcs: Query<&Npc>, mut messages: MessageWriter<NpcWitnessed>) {
    let mut ids = Vec::with_capacity(witness.witnesses.len());
    for &entity in &witness.witnesses {
        match npcs.get(entity) {
            Ok(npc) => ids.push(npc.id.clone()),
            Err(_) => tracing::warn!("Witness names {entity}, which is not an NPC; skipped"),
        }
    }
    if !ids.is_empty() {
        messages.write(
            NpcWitnessed::new(ids, witness.text.clone()).with_importance(witness.importance),
        );
    }
}
