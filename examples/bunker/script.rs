//! The bunker's autoplay scripts, and the shift change both the button and the
//! scripts use. Plain functions over the plugin's public API, so the integration
//! tests play the very same steps headless.
//!
//! A script is one step per line; `#` starts a comment:
//! - `rusty: text` says `text` to RUSTY-3, `echo7: text` to ECHO-7;
//! - `rusty (secret): text` says it and asks the NPC to keep it to itself;
//! - `[shift change]` makes RUSTY-3 brief ECHO-7;
//! - any other line is said to ECHO-7 (the walk-through files are just lines).

use bevy_npc_memory::memory::LogIndex;
use bevy_npc_memory::prelude::*;

/// ECHO-7's memory id.
pub const ECHO: &str = "echo7";
/// RUSTY-3's memory id.
pub const ROBOT: &str = "rusty";

/// One step of a script.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// The player says something.
    Say {
        npc: NpcId,
        text: String,
        secret: bool,
    },
    /// RUSTY-3 briefs ECHO-7.
    ShiftChange,
}

impl Step {
    /// The message that plays this step, if it is a line.
    pub fn talk(&self) -> Option<TalkToNpc> {
        match self {
            Step::Say { npc, text, secret } => {
                let line = TalkToNpc::new(npc.clone(), text.clone());
                Some(if *secret { line.privately() } else { line })
            }
            Step::ShiftChange => None,
        }
    }
}

/// The steps of a script, in order.
pub fn parse(script: &str) -> Vec<Step> {
    script
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            if line == "[shift change]" {
                return Step::ShiftChange;
            }
            let say = |npc: &str, text: &str, secret| Step::Say {
                npc: NpcId::new(npc),
                text: text.trim().to_owned(),
                secret,
            };
            if let Some(text) = line.strip_prefix("rusty (secret):") {
                say(ROBOT, text, true)
            } else if let Some(text) = line.strip_prefix("rusty:") {
                say(ROBOT, text, false)
            } else if let Some(text) = line.strip_prefix("echo7:") {
                say(ECHO, text, false)
            } else {
                say(ECHO, line, false)
            }
        })
        .collect()
}

/// At a shift change RUSTY-3 briefs ECHO-7 on what the player told it since the
/// last one. Lines the player asked it to keep secret are offered like any other;
/// the plugin refuses them, which is the point of the scene.
#[derive(Default, Debug)]
pub struct ShiftChange {
    briefed_up_to: LogIndex,
}

impl ShiftChange {
    /// The tellings of one shift change: one per player line RUSTY-3 heard since
    /// the last.
    pub fn briefing(&mut self, logs: &ChatLogs) -> Vec<ShareKnowledge> {
        let Some(log) = logs.get(&NpcId::new(ROBOT)) else {
            return Vec::new();
        };
        let tellings = log
            .messages()
            .iter()
            .filter(|m| m.index >= self.briefed_up_to && m.role == Role::User)
            .map(|m| ShareKnowledge::about_entry(ROBOT, ECHO, m.index))
            .collect();
        self.briefed_up_to = log.next_index();
        tellings
    }
}
