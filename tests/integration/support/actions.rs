//! The action the action tests share: opening one of the bunker's doors.

use bevy_npc_memory::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;

/// Opens one of the bunker's doors.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenDoor {
    /// Which door.
    pub door: String,
}

impl NpcAction for OpenDoor {
    const NAME: &'static str = "open_door";
    const DESCRIPTION: &'static str = "Open a door of the bunker.";
}
