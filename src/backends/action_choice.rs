//! Whether a model answers in words or calls one of the NPC's actions.

/// Whether a model may, must, or must not call the actions a request offers
/// (OpenAI's `tool_choice`). Requests without actions (summaries, NPCs without
/// actions, a turn whose action rounds are used up) are answered in words
/// whatever this says, so a turn always ends with words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ActionChoice {
    /// The model decides: it answers in words or calls one action.
    #[default]
    Auto,
    /// Every answer to a request with actions is one call of an offered action,
    /// with arguments valid for its schema. The plugin's `max_action_rounds` then
    /// decides when the NPC stops acting and speaks.
    Required,
    /// The actions are not offered: the model always answers in words.
    Off,
}
