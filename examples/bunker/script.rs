//! The bunker's autoplay scripts, and the shift change both the button and the
//! scripts use. Plain functions over the plugin's public API, so the integration
//! tests play the very same steps headless.
//!
//! A script is one step per line; `#` starts a comment:
//! - `rusty: text` says `text` to RUSTY-3, `echo7: text` to ECHO-7;
//! - `rusty (secret): text` says it and asks the NPC to keep it to itself;
//! - `[shift change]` makes ECHO-7 and RUSTY-3 talk about what each saw on its
//!   shift, then RUSTY-3 brief ECHO-7;
//! - `echo7 says: text` scripts the NPC's next reply, for its lines in a talk
//!   among NPCs (the autoplay backend plays each NPC's in order; `rusty says:`
//!   likewise);
//! - `echo7 acts: open_door {"door": "reactor"} => text` scripts the NPC's next
//!   answer: it calls the action with those arguments, then says `text` (the
//!   scripted backend plays it; `rusty acts:` likewise);
//! - any other line is said to ECHO-7 (the walk-through files are just lines).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use bevy_npc_memory::backends::ScriptedBackend;
use bevy_npc_memory::backends::{
    BackendFuture, ChatRequest, ChatResponse, Progress, Purpose, stream_words,
};
use bevy_npc_memory::conversations::{ConversationEnded, StartConversation};
use bevy_npc_memory::knowledge::ShareKnowledge;
use bevy_npc_memory::memory::ActionCall;
use bevy_npc_memory::memory::LogIndex;
use bevy_npc_memory::prelude::*;

/// ECHO-7's memory id.
pub const ECHO: &str = "echo7";
/// RUSTY-3's memory id.
pub const ROBOT: &str = "rusty";
/// What ECHO-7 and RUSTY-3 talk about at the shift change.
pub const SHIFT_TOPIC: &str = "what each of you saw on your shift";
/// How many lines that talk lasts, both NPCs together.
pub const SHIFT_TALK_LINES: u32 = 4;

/// One step of a script.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// The player says something.
    Say {
        npc: NpcId,
        text: String,
        secret: bool,
    },
    /// ECHO-7 and RUSTY-3 talk, then RUSTY-3 briefs ECHO-7.
    ShiftChange,
    /// The NPC's next reply is `text`: a script queues each NPC's lines of a
    /// talk among NPCs this way, before the step that starts the talk.
    Says { npc: NpcId, text: String },
    /// The NPC's next answer calls `action` with `arguments` (JSON), then says
    /// `follow_up`.
    Act {
        npc: NpcId,
        action: String,
        arguments: String,
        follow_up: String,
    },
}

impl Step {
    /// The message that plays this step, if it is a line.
    pub fn talk(&self) -> Option<TalkToNpc> {
        match self {
            Step::Say { npc, text, secret } => {
                let line = TalkToNpc::new(npc.clone(), text.clone());
                Some(if *secret { line.privately() } else { line })
            }
            Step::ShiftChange | Step::Act { .. } | Step::Says { .. } => None,
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
            if let Some(act) = acting(line) {
                return act;
            }
            if let Some((npc, text)) = line.split_once(" says:") {
                return Step::Says {
                    npc: NpcId::new(npc.trim()),
                    text: text.trim().to_owned(),
                };
            }
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

/// `npc acts: action {json} => follow-up`, as a step.
fn acting(line: &str) -> Option<Step> {
    let (npc, rest) = line.split_once(" acts:")?;
    let (call, follow_up) = rest.split_once("=>")?;
    let call = call.trim();
    let (action, arguments) = call.split_once(char::is_whitespace).unwrap_or((call, "{}"));
    Some(Step::Act {
        npc: NpcId::new(npc.trim()),
        action: action.to_owned(),
        arguments: arguments.trim().to_owned(),
        follow_up: follow_up.trim().to_owned(),
    })
}

/// At a shift change ECHO-7 and RUSTY-3 talk about what each saw, then RUSTY-3
/// briefs ECHO-7 on what the player told it since the last one. Lines the player
/// asked it to keep secret are offered like any other; the plugin refuses them,
/// which is the point of the scene.
///
/// The briefing comes last so that it is the newest thing ECHO-7 holds when the
/// player asks for news: with a small window, the talk would push it out.
#[derive(Default, Debug)]
pub struct ShiftChange {
    briefed_up_to: LogIndex,
    briefing_due: bool,
}

impl ShiftChange {
    /// Starts a shift change: the talk to send now. The briefing follows when
    /// the talk ends ([`talk_ended`](Self::talk_ended)).
    pub fn start(&mut self) -> StartConversation {
        self.briefing_due = true;
        Self::talk()
    }

    /// Whether a shift change waits for its talk to end before the briefing.
    pub fn briefing_due(&self) -> bool {
        self.briefing_due
    }

    /// The briefing due once the shift change's talk ended, or was refused
    /// (the briefing does not need the talk); nothing for other conversations.
    pub fn talk_ended(
        &mut self,
        ended: &ConversationEnded,
        logs: &ChatLogs,
    ) -> Vec<ShareKnowledge> {
        let ours = ended.participants == [NpcId::new(ECHO), NpcId::new(ROBOT)];
        if !ours || !std::mem::take(&mut self.briefing_due) {
            return Vec::new();
        }
        self.briefing(logs)
    }

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

    /// The shift change's talk: ECHO-7 opens, RUSTY-3 answers, each from its own
    /// memory, so each learns what the other saw.
    pub fn talk() -> StartConversation {
        StartConversation::between([ECHO, ROBOT])
            .about(SHIFT_TOPIC)
            .max_turns(SHIFT_TALK_LINES)
    }
}

/// The autoplay's backend: what a script's `says:` lines queue, each NPC's in
/// order; what its `acts:` lines queue, through the scripted backend; and the
/// offline backend for everything else.
#[derive(Clone, Default)]
pub struct AutoplayBackend {
    pub scripted: ScriptedBackend,
    /// Each NPC's next conversation lines. Keyed by NPC, because the plugin
    /// decides who speaks when, and one queue for both would tie the script to
    /// that order.
    lines: Arc<Mutex<HashMap<NpcId, VecDeque<String>>>>,
    offline: OfflineBackend,
}

impl AutoplayBackend {
    /// Queues an `acts:` step: the next reply calls the action, the one after says
    /// the follow-up. Queues a `says:` step for its NPC: that NPC's next reply
    /// says it.
    pub fn queue(&self, step: &Step) {
        match step {
            Step::Act {
                action,
                arguments,
                follow_up,
                ..
            } => {
                let call = ActionCall::new(format!("autoplay-{action}"), action, arguments);
                self.scripted
                    .push_calls("", vec![call])
                    .push_reply(follow_up.clone());
            }
            Step::Says { npc, text } => {
                self.lines
                    .lock()
                    .unwrap()
                    .entry(npc.clone())
                    .or_default()
                    .push_back(text.clone());
            }
            Step::Say { .. } | Step::ShiftChange => {}
        }
    }

    fn next_line(&self, npc: &NpcId) -> Option<String> {
        self.lines.lock().unwrap().get_mut(npc)?.pop_front()
    }
}

impl ChatBackend for AutoplayBackend {
    fn name(&self) -> &str {
        "autoplay"
    }

    fn complete(&self, request: ChatRequest, progress: Progress) -> BackendFuture {
        if request.purpose() == Purpose::Reply
            && let Some(line) = self.next_line(&request.npc)
        {
            stream_words(&line, &progress);
            return Box::pin(async move { Ok(ChatResponse::text(line)) });
        }
        if self.scripted.remaining(request.purpose()) > 0 {
            self.scripted.complete(request, progress)
        } else {
            self.offline.complete(request, progress)
        }
    }
}
