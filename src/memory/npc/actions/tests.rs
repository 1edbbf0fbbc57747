//! Actions in the core: calls and results enter the log in order, reach prompts
//! and the summarizer as quoted notes, are recalled, survive parts, and are
//! checked on load.

use std::sync::Arc;

use super::*;
use crate::backends::OfflineBackend;
use crate::memory::limits::MAX_ACTION_NAME_CHARS;
use crate::memory::{MemoryConfig, MemoryParts, NpcMemory, PersonaPrompt, SummaryStyle, Teller};

fn npc(config: &MemoryConfig) -> NpcMemory {
    let persona = PersonaPrompt {
        name: "ECHO-7".into(),
        text: "You are ECHO-7.".into(),
        style: SummaryStyle::english(),
    };
    NpcMemory::new(persona, config)
}

fn opened(door: &str) -> ActionRecord {
    ActionRecord {
        call: ActionCall::new("c1", "open_door", format!(r#"{{"door":"{door}"}}"#)),
        outcome: ActionOutcome::Done(format!("The {door} door grinds open.")),
    }
}

#[test]
fn calls_and_results_enter_the_log_in_order_as_quoted_notes() {
    let mut echo = npc(&MemoryConfig::with_window(20));
    let mut layers = echo.layers();
    layers.say("Open the armory.", 1.0);
    let acted = layers.act(Some("On it."), &[opened("armory")], 2.0);
    assert_eq!(acted.indices, [1, 2, 3]);
    let roles: Vec<Role> = layers.log().messages().iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::System, Role::System]
    );
    let notes: Vec<&str> = acted.messages[3..].iter().map(|m| &*m.content).collect();
    assert_eq!(
        notes,
        [
            r#"You used the action open_door (day 1 00:00) with the arguments "{\"door\":\"armory\"}""#,
            r#"The action open_door was done (day 1 00:00): "The armory door grinds open.""#,
        ]
    );
    let job = layers.summarize_now().unwrap();
    let body = &job.messages.last().unwrap().content;
    assert!(
        body.contains("Note: The action open_door was done (day 1 00:00)"),
        "{body}"
    );
}

#[test]
fn an_action_is_recalled_after_it_left_the_window() {
    let mut config = MemoryConfig {
        summary_threshold: Some(4),
        ..MemoryConfig::with_window(6)
    };
    config.features.recall.enabled = true;
    let mut echo = npc(&config);
    let backend = OfflineBackend::default();
    let mut layers = echo.layers();
    layers.say("Open the armory.", 1.0);
    let index = layers.act(None, &[opened("armory")], 2.0).indices[1];
    layers.reply("Done.", 3.0);
    for turn in 0..10 {
        let t = 10.0 + turn as f64;
        layers.record(Role::User, format!("Filler {turn} about the weather."), t);
        layers.record(Role::Assistant, "Noted.", t);
        layers.summarize_due(|job| Ok(backend.summarize(&job.input)));
    }
    assert!(
        layers.window().start() > index,
        "the result left the window"
    );
    let turn = layers.say("Is the armory door open?", 100.0);
    assert!(
        turn.messages
            .iter()
            .any(|m| m.content.contains("The armory door grinds open.")),
        "{:#?}",
        turn.messages
    );
}

#[test]
fn actions_survive_parts_are_never_told_and_are_checked_on_load() {
    let mut echo = npc(&MemoryConfig::with_window(20));
    echo.layers().act(None, &[opened("north")], 1.0);
    let parts = MemoryParts::of(&echo.log, &echo.window, &echo.context);
    let json = serde_json::to_string(&parts).unwrap();
    let back: MemoryParts = serde_json::from_str(&json).unwrap();
    assert_eq!(back.clone().into_memory().unwrap().log, echo.log);
    let teller = Teller {
        id: "echo7".into(),
        name: "ECHO-7".into(),
    };
    assert!(echo.layers().tell(0, &teller).is_none());

    let mut forged = parts.clone();
    forged.log[0].role = Role::Assistant;
    assert!(forged.validate().unwrap_err().field.ends_with(".origin"));
    let mut forged = parts;
    forged.log[1].origin = Origin::Acted(Arc::new(ActionNote {
        name: "x".repeat(MAX_ACTION_NAME_CHARS + 1),
        call: "c1".into(),
        step: ActionStep::Done,
    }));
    assert!(forged.validate().is_err());
}
