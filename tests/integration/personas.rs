//! Personas load from RON assets and shape each NPC's memory.

use crate::support::Harness;
use bevy::prelude::*;
use bevy_npc_memory::PersonaError;
use bevy_npc_memory::dialogue::ReconfigureNpcMemory;
use bevy_npc_memory::dialogue::SummarizeNow;
use bevy_npc_memory::memory::SummaryStyle;
use bevy_npc_memory::prelude::*;

#[test]
fn both_echo7_personas_load_from_assets() {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn_from_file("echo7_en", "npcs/echo7.npc.ron");
    h.spawn_from_file("echo7_zh", "npcs/echo7.zh.npc.ron");
    let contexts = h.app.world().resource::<ContextMemoryManager>();
    let en = contexts.get(&NpcId::new("echo7_en")).unwrap().persona();
    let zh = contexts.get(&NpcId::new("echo7_zh")).unwrap().persona();
    assert_eq!(en.name, "ECHO-7");
    assert!(en.text.contains("security and guidance AI (ECHO-7)"));
    assert_eq!(en.style, SummaryStyle::english());
    assert!(zh.text.starts_with("你是地堡安保与引导 AI（ECHO-7）"));
    assert_eq!(zh.style.label, "[前情提要]: ");
}

#[test]
fn a_persona_sets_its_own_window_and_threshold() {
    let mut h = Harness::new(NpcMemoryPlugin::default().with_window(20));
    h.spawn(
        "small",
        Persona::new("Small", "You are small.").with_window(6),
    );
    h.spawn("default", Persona::new("Default", "You are default."));
    let world = h.app.world();
    let windows = world.resource::<RollingWindows>();
    let contexts = world.resource::<ContextMemoryManager>();
    assert_eq!(
        windows
            .get(&NpcId::new("small"))
            .unwrap()
            .max_context_window(),
        6
    );
    assert_eq!(contexts.get(&NpcId::new("small")).unwrap().threshold(), 3);
    assert_eq!(
        windows
            .get(&NpcId::new("default"))
            .unwrap()
            .max_context_window(),
        20
    );
    assert_eq!(
        contexts.get(&NpcId::new("default")).unwrap().threshold(),
        10
    );
}

#[test]
fn lines_sent_before_the_persona_loads_wait_for_it() {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    let handle: Handle<Persona> = h
        .app
        .world()
        .resource::<AssetServer>()
        .load("npcs/echo7.npc.ron");
    h.app.world_mut().spawn(Npc::new("echo7", handle));
    h.say("echo7", "Hello?");
    h.wait_for_replies(1);
    assert!(h.inbox::<NpcReplyFailed>().is_empty());
    assert_eq!(h.log("echo7")[0].1, "Hello?");
}

#[test]
fn editing_a_persona_rewrites_the_prompt_but_keeps_the_summary() {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    let handle = h
        .app
        .world_mut()
        .resource_mut::<Assets<Persona>>()
        .add(Persona::new("Bot", "Old persona."));
    h.app.world_mut().spawn(Npc::new("bot", handle.clone()));
    h.say("bot", "I'm Alex.");
    h.wait_for_replies(1);
    h.app
        .world_mut()
        .write_message(SummarizeNow::new(NpcId::new("bot")));
    h.wait_for_summaries(1);
    h.app
        .world_mut()
        .resource_mut::<Assets<Persona>>()
        .get_mut(&handle)
        .unwrap()
        .system_prompt = "New persona.".into();
    h.run_until("the edit arrives", |w| {
        w.resource::<ContextMemoryManager>()
            .get(&NpcId::new("bot"))
            .unwrap()
            .persona()
            .text
            .starts_with("New persona.")
    });
    assert_eq!(
        h.window("bot")[0].content.as_ref(),
        "New persona.\n\n[Previously]: Player: I'm Alex."
    );
}

#[test]
fn bad_persona_text_gives_a_clear_error() {
    let error = Persona::from_ron("(name: \"x\")").unwrap_err();
    assert!(matches!(error, PersonaError::Parse(_)));
    assert!(error.to_string().contains("system_prompt"), "{error}");
    let error = Persona::from_ron("(name: \"x\", system_prompt: \"y\", mood: \"z\")").unwrap_err();
    assert!(error.to_string().contains("mood"), "{error}");
}

#[test]
fn persona_sizes_past_their_limits_are_refused_by_name() {
    let error = Persona::from_ron(
        "(name: \"x\", system_prompt: \"y\", max_context_window: 18446744073709551615)",
    )
    .unwrap_err();
    assert!(error.to_string().contains("max_context_window"), "{error}");
    let error = Persona::from_ron(
        "(name: \"x\", system_prompt: \"y\", features: (prompt_budget: 99999999999))",
    )
    .unwrap_err();
    assert!(error.to_string().contains("budget.max_tokens"), "{error}");
    // A hostile file's parse error is shortened, not quoted whole.
    let huge = format!("(name: {})", "x".repeat(100_000));
    let error = Persona::from_ron(&huge).unwrap_err();
    assert!(
        error.to_string().chars().count() < 1_000,
        "{} characters",
        error.to_string().len()
    );
}

#[test]
fn a_persona_that_fails_to_load_fails_its_lines_instead_of_hanging() {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    let handle: Handle<Persona> = h
        .app
        .world()
        .resource::<AssetServer>()
        .load("npcs/missing.npc.ron");
    h.app.world_mut().spawn(Npc::new("ghost", handle));
    h.say("ghost", "Anyone there?");
    h.run_until("the line fails", |w| {
        !w.resource::<crate::support::Inbox<NpcReplyFailed>>()
            .0
            .is_empty()
    });
    let failed = &h.inbox::<NpcReplyFailed>()[0];
    assert!(
        matches!(&failed.error, ReplyError::PersonaUnavailable { reason, .. } if reason.contains("missing.npc.ron")),
        "{:?}",
        failed.error
    );
    assert_eq!(failed.unrecorded_line.as_deref(), Some("Anyone there?"));
    // Later lines fail at once, with the same reason.
    h.say("ghost", "Hello?");
    h.run_until("the second line fails", |w| {
        w.resource::<crate::support::Inbox<NpcReplyFailed>>()
            .0
            .len()
            == 2
    });
}

#[test]
fn a_persona_switches_memory_features_for_its_npc_alone() {
    let ron = r#"(
        name: "Archivist",
        system_prompt: "You are the archivist.",
        max_context_window: 12,
        features: (recall: true, pinned_facts: true, prompt_budget: 900),
    )"#;
    let archivist = Persona::from_ron(ron).expect("features parse from RON");
    let mut plugin_features = MemoryFeatures::default();
    plugin_features.segments.enabled = true;
    let mut h = Harness::new(NpcMemoryPlugin::default().with_features(plugin_features));
    h.spawn("archivist", archivist);
    h.spawn("guard", Persona::new("Guard", "You are a guard."));
    let contexts = h.app.world().resource::<ContextMemoryManager>();
    let archivist = contexts.get(&NpcId::new("archivist")).unwrap().features();
    assert!(archivist.recall.enabled && archivist.facts.enabled);
    assert_eq!(archivist.budget.max_tokens, Some(900));
    assert!(
        archivist.segments.enabled,
        "unset switches keep the plugin's"
    );
    let guard = contexts.get(&NpcId::new("guard")).unwrap().features();
    assert!(!guard.recall.enabled && !guard.facts.enabled);
    assert!(guard.segments.enabled);

    let typo = r#"(name: "x", system_prompt: "y", features: (recal: true))"#;
    assert!(
        Persona::from_ron(typo).is_err(),
        "unknown switches are refused"
    );
}

#[test]
fn the_bunker_robot_persona_switches_on_layered_memory_from_its_file() {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn_from_file("rusty", "npcs/rusty.npc.ron");
    let contexts = h.app.world().resource::<ContextMemoryManager>();
    let features = contexts.get(&NpcId::new("rusty")).unwrap().features();
    assert!(features.recall.enabled && features.facts.enabled && features.segments.enabled);
    assert_eq!(features.budget.max_tokens, Some(1500));
}

/// A persona made in code is held to the limits a save is: one asking for a
/// window no save holds fails its lines with a reason naming the setting, as a
/// persona file would, and the game's saves go on working. Such an NPC used to
/// talk, and then every save failed.
#[test]
fn a_persona_made_in_code_past_what_a_save_holds_fails_clearly_and_saves_go_on() {
    use bevy_npc_memory::memory::limits::MAX_WINDOW_MESSAGES;
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn(
        "huge",
        Persona::new("Huge", "You remember everything.").with_window(MAX_WINDOW_MESSAGES + 1),
    );
    h.spawn("echo7", crate::support::persona("ECHO-7"));
    h.say("huge", "Do you remember me?");
    h.say("echo7", "Hello.");
    h.wait_for::<NpcReplyFailed>(1);
    let failed = &h.inbox::<NpcReplyFailed>()[0];
    assert!(
        matches!(&failed.error, ReplyError::PersonaUnavailable { reason, .. } if reason.contains("max_context_window")),
        "{:?}",
        failed.error
    );
    h.wait_for_replies(1);

    let dir = crate::support::temp_dir("persona-limits");
    let path = dir.join("slot.json");
    h.save_to(&path);
    assert!(h.inbox::<MemorySaveFailed>().is_empty());
    let (_, saved) = bevy_npc_memory::saves::SaveGame::read_from(&path, u64::MAX).unwrap();
    assert_eq!(saved.npcs.len(), 1, "ECHO-7 alone has memory");

    // Reconfiguring to such sizes is refused too: the memory keeps its settings.
    let window = |h: &Harness| {
        h.app
            .world()
            .resource::<RollingWindows>()
            .get(&NpcId::new("echo7"))
            .unwrap()
            .max_context_window()
    };
    let before = window(&h);
    h.app.world_mut().write_message(ReconfigureNpcMemory::new(
        "echo7",
        bevy_npc_memory::memory::MemoryConfig::with_window(MAX_WINDOW_MESSAGES + 1),
    ));
    h.app.update();
    assert_eq!(window(&h), before);
    h.save_to(&path);
    assert!(h.inbox::<MemorySaveFailed>().is_empty());
    std::fs::remove_dir_all(dir).ok();
}
