//! Personas: what an NPC is, loaded from `*.npc.ron` assets, and the NPC component.

use std::collections::BTreeMap;

use bevy::asset::{AssetLoader, LoadContext, io::Reader};

use super::data_file::{MAX_PERSONA_FILE_BYTES, read_file_text};
use bevy::prelude::*;
use serde::{Deserialize, Serialize};

mod applied;
mod bindings;
mod tier_bindings;

pub(crate) use applied::{AppliedPersona, PersonaChange};
pub(crate) use bindings::{PersonaBindings, on_npc_inserted};

use super::npc::{MemoryTier, PersonaFeatures, TierMemory, TierOverrides};
use crate::memory::limits::MAX_REPLY_FIELDS;
use crate::memory::{
    MemoryConfig, NpcId, PersonaPrompt, PromptLanguage, ReplyFieldSet, SummaryStyle,
    check_reply_field, shorten_to_chars,
};

/// What an NPC is: its name, its system prompt, and how its memory is worded and
/// sized. Loaded from `assets/npcs/*.npc.ron`, or built in code.
///
/// ```ron
/// (
///     name: "ECHO-7",
///     system_prompt: "You are ECHO-7, the bunker's security and guidance AI.",
///     language: English,            // or Chinese: picks the built-in wording
///     summary_label: "[Previously]: ",   // optional
///     max_context_window: 20,        // optional, overrides the plugin default
///     summary_threshold: 10,         // optional
///     features: (recall: true, pinned_facts: true, segments: true,
///                prompt_budget: 2000, forgetting: false), // optional, each optional
///     groups: ["crew"],              // optional: which group lore this NPC knows
///     tier: Some(Background),        // optional: how urgent its summaries are
///     tiers: (                       // optional: memory per tier, each optional
///         background: (summary_threshold: 16, features: (pinned_facts: false)),
///     ),
///     actions: ["open_door"],        // optional: game actions it may call, "*" for all
///     reply_fields: {"mood": ["calm", "alarmed"]}, // optional: tagged values per reply
/// )
/// ```
#[derive(Asset, Reflect, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[type_path = "bevy_npc_memory"]
#[reflect(Debug, PartialEq, Clone)]
#[serde(deny_unknown_fields)]
pub struct Persona {
    /// The NPC's display name.
    pub name: String,
    /// The persona text. Memory is appended to it, never written over it.
    pub system_prompt: String,
    /// Picks the built-in wording of summary requests and the summary label.
    #[serde(default)]
    pub language: PromptLanguage,
    /// Put before the summary in the system prompt. Defaults by language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_label: Option<String>,
    /// The summarizer's instruction. Defaults by language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer_instruction: Option<String>,
    /// This NPC's window, overriding the plugin default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_context_window: Option<usize>,
    /// This NPC's summary threshold, overriding the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_threshold: Option<usize>,
    /// This NPC's memory features, each overriding the plugin default when set.
    #[serde(default, skip_serializing_if = "PersonaFeatures::is_empty")]
    pub features: PersonaFeatures,
    /// The groups this NPC belongs to: it knows the lore scoped to any of them
    /// ([`LoreScope::Group`](crate::memory::LoreScope::Group)). None by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// This NPC's default [`MemoryTier`](crate::schedule::MemoryTier), e.g.
    /// `tier: Some(Background)` for a crowd NPC; the game's
    /// [`MemoryTier`](crate::schedule::MemoryTier) component or
    /// [`SetMemoryTier`](crate::schedule::SetMemoryTier) overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<MemoryTier>,
    /// Memory settings per [`MemoryTier`](crate::schedule::MemoryTier), applied on
    /// top of the persona's own while the NPC is in that tier, e.g. a larger
    /// threshold and no pinned facts in the background (see [`TierMemory`]).
    #[serde(default, skip_serializing_if = "TierMemory::is_empty")]
    pub tiers: TierMemory,
    /// The game actions this NPC may call (registered with
    /// [`register_npc_action`](crate::prelude::NpcActionsAppExt::register_npc_action)),
    /// by name: `actions: ["open_door"]`, or `["*"]` for every registered action.
    /// None by default: an NPC acts only where its persona says so.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
    /// Reply fields: values from sets the game defines, such as a mood or an
    /// animation, that the model gives in a tag at the start of each reply:
    /// `reply_fields: {"mood": ["calm", "alarmed", "angry"]}`. The system prompt
    /// asks for the tag (`[mood: alarmed] Who goes there?`); the tag never
    /// reaches the text, and the values arrive in
    /// [`NpcReplied::fields`](crate::prelude::NpcReplied::fields). None by
    /// default: the prompt then asks for no tag and replies are never parsed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub reply_fields: BTreeMap<String, Vec<String>>,
}

/// Most actions one persona may list.
const MAX_PERSONA_ACTIONS: usize = 256;

/// Most groups one persona may name.
const MAX_PERSONA_GROUPS: usize = 64;

impl Persona {
    /// A persona with the default English wording.
    pub fn new(name: impl Into<String>, system_prompt: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            system_prompt: system_prompt.into(),
            language: PromptLanguage::English,
            summary_label: None,
            summarizer_instruction: None,
            max_context_window: None,
            summary_threshold: None,
            features: PersonaFeatures::default(),
            groups: Vec::new(),
            tier: None,
            tiers: TierMemory::default(),
            actions: Vec::new(),
            reply_fields: BTreeMap::new(),
        }
    }

    /// Declares a reply field and its allowed values, e.g.
    /// `.with_reply_field("mood", ["calm", "alarmed", "angry"])` (see
    /// [`reply_fields`](Self::reply_fields)).
    pub fn with_reply_field<V: Into<String>>(
        mut self,
        name: impl Into<String>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        let values = values.into_iter().map(Into::into).collect();
        self.reply_fields.insert(name.into(), values);
        self
    }

    /// The reply fields as the memory core parses them.
    pub fn reply_field_set(&self) -> ReplyFieldSet {
        ReplyFieldSet::new(self.reply_fields.clone())
    }

    /// Lets this NPC call these actions (`"*"` for every registered one).
    pub fn with_actions<A: Into<String>>(mut self, actions: impl IntoIterator<Item = A>) -> Self {
        self.actions = actions.into_iter().map(Into::into).collect();
        self
    }

    /// Sets this NPC's memory settings while it is in `tier`.
    pub fn with_tier_memory(mut self, tier: MemoryTier, overrides: TierOverrides) -> Self {
        *self.tiers.get_mut(tier) = overrides;
        self
    }

    /// Gives this NPC a default [`MemoryTier`](crate::schedule::MemoryTier).
    pub fn with_tier(mut self, tier: MemoryTier) -> Self {
        self.tier = Some(tier);
        self
    }

    /// Makes this NPC a member of these groups, for group lore.
    pub fn with_groups<G: Into<String>>(mut self, groups: impl IntoIterator<Item = G>) -> Self {
        self.groups = groups.into_iter().map(Into::into).collect();
        self
    }

    /// Uses the built-in wording of a language.
    pub fn with_language(mut self, language: PromptLanguage) -> Self {
        self.language = language;
        self
    }

    /// Gives this NPC its own window size.
    pub fn with_window(mut self, max_context_window: usize) -> Self {
        self.max_context_window = Some(max_context_window);
        self
    }

    /// Gives this NPC its own summary threshold.
    pub fn with_summary_threshold(mut self, threshold: usize) -> Self {
        self.summary_threshold = Some(threshold);
        self
    }

    /// Switches this NPC's memory features, overriding the plugin's.
    pub fn with_features(mut self, features: PersonaFeatures) -> Self {
        self.features = features;
        self
    }

    /// Parses a persona from RON text.
    /// Optional fields take plain values (`max_context_window: 20`, not `Some(20)`).
    pub fn from_ron(text: &str) -> Result<Self, PersonaError> {
        let persona: Self = ron::Options::default()
            .with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME)
            .from_str(text)
            .map_err(|error| {
                PersonaError::Parse(shorten_to_chars(&error.to_string(), 500).into_owned())
            })?;
        // The same limits a save is held to: a persona file is data from outside too.
        persona
            .check_config(&MemoryConfig::default())
            .map_err(PersonaError::Parse)?;
        let long_group = persona
            .groups
            .iter()
            .any(|g| g.chars().count() > crate::memory::limits::MAX_LORE_KEY_CHARS);
        if persona.groups.len() > MAX_PERSONA_GROUPS || long_group {
            return Err(PersonaError::Parse(format!(
                "groups: at most {MAX_PERSONA_GROUPS}, each at most {} characters",
                crate::memory::limits::MAX_LORE_KEY_CHARS
            )));
        }
        let bad_action = persona
            .actions
            .iter()
            .find(|a| *a != "*" && !crate::memory::is_action_name(a));
        if persona.actions.len() > MAX_PERSONA_ACTIONS || bad_action.is_some() {
            return Err(PersonaError::Parse(format!(
                "actions: at most {MAX_PERSONA_ACTIONS} names of letters, digits, '_' or '-', or \"*\"{}",
                bad_action
                    .map(|a| format!("; not {:?}", shorten_to_chars(a, 80)))
                    .unwrap_or_default()
            )));
        }
        if persona.reply_fields.len() > MAX_REPLY_FIELDS {
            return Err(PersonaError::Parse(format!(
                "reply_fields: at most {MAX_REPLY_FIELDS}"
            )));
        }
        for (name, values) in &persona.reply_fields {
            check_reply_field(name, values).map_err(PersonaError::Parse)?;
        }
        Ok(persona)
    }

    /// The persona as the memory core sees it.
    pub fn prompt(&self) -> PersonaPrompt {
        let mut style = SummaryStyle::for_language(self.language);
        if let Some(label) = &self.summary_label {
            style.label.clone_from(label);
        }
        if let Some(instruction) = &self.summarizer_instruction {
            style.instruction.clone_from(instruction);
        }
        // The tag's instruction follows the persona text, so every backend's model
        // reads it; a persona without reply fields asks for nothing.
        let text = match self.reply_field_set().instruction(self.language) {
            Some(instruction) => format!("{}\n\n{instruction}", self.system_prompt).into(),
            None => self.system_prompt.as_str().into(),
        };
        PersonaPrompt {
            name: self.name.clone(),
            text,
            style,
        }
    }

    /// Why the memory settings this persona gives over `defaults` (its tiers'
    /// too) are outside what a save may hold, if they are. The plugin refuses such
    /// a persona as it refuses a file that fails to load, so no NPC ever has
    /// memory that would not save.
    pub(crate) fn check_config(&self, defaults: &MemoryConfig) -> Result<(), String> {
        let config = self.memory_config(defaults);
        config.check().map_err(|invalid| invalid.to_string())?;
        self.tiers.check(&config)
    }

    /// The memory configuration for this persona: `defaults`, with the persona's own
    /// window, threshold and feature switches applied.
    pub fn memory_config(&self, defaults: &MemoryConfig) -> MemoryConfig {
        let mut config = defaults.clone();
        if let Some(window) = self.max_context_window {
            config.max_context_window = window;
            if self.summary_threshold.is_none() {
                config.summary_threshold = None;
            }
        }
        if let Some(threshold) = self.summary_threshold {
            config.summary_threshold = Some(threshold);
        }
        self.features.apply(&mut config.features);
        config
    }

    /// [`memory_config`](Self::memory_config) with the settings of `tier`
    /// ([`tiers`](Self::tiers)) applied on top: the NPC's configuration in that tier.
    pub fn memory_config_in(&self, defaults: &MemoryConfig, tier: MemoryTier) -> MemoryConfig {
        self.tiers.config(&self.memory_config(defaults), tier)
    }

    /// Whether the persona's configuration wins over one set at run time when it is
    /// applied again: it sets sizes or switches, in any tier.
    fn overrides_config(&self) -> bool {
        self.max_context_window.is_some()
            || self.summary_threshold.is_some()
            || !self.features.is_empty()
            || !self.tiers.is_empty()
    }
}

/// Why a persona could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum PersonaError {
    /// The file could not be read.
    #[error("could not read the persona file: {0}")]
    Io(#[from] std::io::Error),
    /// The text is not a valid persona.
    #[error("invalid persona: {0}")]
    Parse(String),
}

/// Loads [`Persona`] assets from `*.npc.ron` files. A file over 4 MiB is refused
/// unread, as is one that is not UTF-8.
#[derive(Default, TypePath)]
pub struct PersonaLoader;

impl AssetLoader for PersonaLoader {
    type Asset = Persona;
    type Settings = ();
    type Error = PersonaError;

    async fn load(
        &self,
        reader: &mut dyn Reader,
        _settings: &(),
        _load_context: &mut LoadContext<'_>,
    ) -> Result<Persona, PersonaError> {
        let text = read_file_text(reader, MAX_PERSONA_FILE_BYTES, PersonaError::Parse).await?;
        Persona::from_ron(&text)
    }

    fn extensions(&self) -> &[&str] {
        &["npc.ron"]
    }
}

/// Marks an entity as an NPC with memory.
///
/// The memory belongs to `id`, not to the entity: despawn the entity with its level,
/// spawn another with the same id later, and the NPC remembers.
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_npc_memory::prelude::*;
/// // A persona from a `*.npc.ron` asset...
/// fn spawn_echo7(mut commands: Commands, assets: Res<AssetServer>) {
///     commands.spawn(Npc::new("echo7", assets.load("npcs/echo7.npc.ron")));
/// }
///
/// // ...or built in code.
/// fn spawn_guard(mut commands: Commands, mut personas: ResMut<Assets<Persona>>) {
///     let persona = personas.add(Persona::new("Guard", "You guard the north gate."));
///     commands.spawn(Npc::new("guard", persona));
/// }
/// # App::new()
/// #     .add_plugins((MinimalPlugins, AssetPlugin::default(), NpcMemoryPlugin::default()))
/// #     .add_systems(Startup, (spawn_echo7, spawn_guard))
/// #     .update();
/// ```
///
/// Every NPC entity gets an [`NpcState`](crate::prelude::NpcState) showing what it
/// is doing. Inserting an `Npc` with another id on the same entity rebinds it: the
/// entity speaks for the new id from then on (entity events, state, persona), and
/// the old id keeps its memory, as when an entity is despawned. Removing `Npc` or
/// despawning the entity ends its entity events; the memory stays with the id.
///
/// `Npc` is reflected, so NPCs can be placed in scene files and reflection-based
/// saves; the persona is stored as its asset path.
#[derive(Component, Clone, Debug, Reflect)]
#[type_path = "bevy_npc_memory"]
#[reflect(Component, Debug, Clone)]
#[require(super::npc::NpcState)]
pub struct Npc {
    /// Whose memory this entity speaks with.
    pub id: NpcId,
    /// What the NPC is.
    pub persona: Handle<Persona>,
}

impl Npc {
    /// An NPC with an id and a persona.
    pub fn new(id: impl Into<NpcId>, persona: Handle<Persona>) -> Self {
        Self {
            id: id.into(),
            persona,
        }
    }
}

/// Applies a persona to every NPC bound to it.
pub(crate) fn persona_config(
    persona: &Persona,
    defaults: &MemoryConfig,
) -> (PersonaPrompt, MemoryConfig, bool) {
    (
        persona.prompt(),
        persona.memory_config(defaults),
        persona.overrides_config(),
    )
}
