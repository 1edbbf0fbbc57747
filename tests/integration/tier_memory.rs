//! Memory settings per tier, set in the persona: a crowd NPC in the background
//! summarizes less often and keeps no facts; when the player walks up and the game
//! makes it `Foreground`, it gets its persona's full memory at once, and no
//! unsummarized line leaves its window on the way.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bevy::prelude::*;
use bevy_npc_memory::backends::{BackendFuture, ChatBackend, ChatRequest, Progress};
use bevy_npc_memory::memory::SummaryInput;
use bevy_npc_memory::prelude::*;

use crate::support::Harness;
use bevy_npc_memory::dialogue::NpcMemoryDegraded;
use bevy_npc_memory::schedule::MemoryTier;
use bevy_npc_memory::schedule::SetMemoryTier;
use bevy_npc_memory::schedule::TierOverrides;

/// Answers like the offline backend (which pins facts when a summary asks for
/// them) and keeps every summary request.
#[derive(Clone, Default)]
struct Recording {
    summaries: Arc<Mutex<Vec<SummaryInput>>>,
}

impl Recording {
    fn summaries(&self) -> Vec<SummaryInput> {
        self.summaries.lock().unwrap().clone()
    }
}

impl ChatBackend for Recording {
    fn name(&self) -> &str {
        "recording"
    }

    fn complete(&self, request: ChatRequest, progress: Progress) -> BackendFuture {
        if let bevy_npc_memory::backends::RequestKind::Summary(input) = &request.kind {
            self.summaries.lock().unwrap().push(input.clone());
        }
        OfflineBackend::default().complete(request, progress)
    }
}

/// A summary every exchange and pinned facts, but in the background one every
/// three exchanges and no facts.
const CROWD: &str = r#"(
    name: "Mara",
    system_prompt: "You are Mara, a trader in the market crowd.",
    max_context_window: 8,
    summary_threshold: 2,
    features: (pinned_facts: true),
    tier: Background,
    tiers: (background: (summary_threshold: 6, features: (pinned_facts: false))),
)"#;

fn harness(backend: &Recording) -> Harness {
    let mut settings = NpcMemorySettings::default();
    // A background summary that is due goes at once, so one that never went was
    // never due.
    settings.schedule.background_delay = Duration::ZERO;
    Harness::new(
        NpcMemoryPlugin::default()
            .with_backend(backend.clone())
            .with_settings(settings),
    )
}

fn say(h: &mut Harness, line: &str) {
    let replies = h.inbox::<NpcReplied>().len();
    h.say("mara", line);
    h.wait_for_replies(replies + 1);
    h.settle();
}

/// Every log entry no summary covers yet is still in the model's view.
fn assert_uncovered_in_window(h: &Harness) {
    let npc = NpcId::new("mara");
    let world = h.app.world();
    let covered = world
        .resource::<ContextMemoryManager>()
        .get(&npc)
        .unwrap()
        .covered_until();
    let start = world
        .resource::<RollingWindows>()
        .get(&npc)
        .unwrap()
        .start();
    assert!(
        start <= covered,
        "window starts at {start}, covered {covered}"
    );
    assert!(h.inbox::<NpcMemoryDegraded>().is_empty());
}

fn facts(h: &Harness) -> usize {
    let contexts = h.app.world().resource::<ContextMemoryManager>();
    contexts.get(&NpcId::new("mara")).unwrap().facts().len()
}

fn threshold(h: &Harness) -> usize {
    let contexts = h.app.world().resource::<ContextMemoryManager>();
    contexts.get(&NpcId::new("mara")).unwrap().threshold()
}

#[test]
fn a_background_npc_summarizes_late_without_facts_until_the_player_walks_up() {
    let backend = Recording::default();
    let mut h = harness(&backend);
    let mara = h.spawn("mara", Persona::from_ron(CROWD).unwrap());
    assert_eq!(threshold(&h), 6, "the persona's default tier is Background");

    say(&mut h, "My name is Alex.");
    say(&mut h, "I need to fix the power system.");
    assert!(
        backend.summaries().is_empty(),
        "4 messages: due at the persona's threshold of 2, not at the background 6"
    );
    assert_uncovered_in_window(&h);
    say(&mut h, "Do you sell fuses?");
    let summaries = backend.summaries();
    assert_eq!(summaries.len(), 1, "due at the background threshold");
    assert_eq!(summaries[0].covered, 0..6);
    assert!(!summaries[0].wants_facts, "no fact work in the background");
    assert_eq!(facts(&h), 0);
    assert_uncovered_in_window(&h);

    say(&mut h, "I need to find the reactor.");
    assert_eq!(backend.summaries().len(), 1);
    h.app
        .world_mut()
        .entity_mut(mara)
        .insert(MemoryTier::Foreground);
    h.app.update();
    assert_eq!(threshold(&h), 2, "the persona's own threshold, at once");
    h.settle();
    let summaries = backend.summaries();
    assert_eq!(summaries.len(), 2, "the 2 uncovered messages are due now");
    assert_eq!(summaries[1].covered, 6..8, "nothing skipped");
    assert!(summaries[1].wants_facts);
    assert!(facts(&h) > 0, "the foreground summary pinned the goal");
    assert_uncovered_in_window(&h);

    // Back in the crowd: nothing is due at 2 any more.
    h.app.world_mut().entity_mut(mara).remove::<MemoryTier>();
    h.app.update();
    assert_eq!(threshold(&h), 6);
    say(&mut h, "Thanks, bye.");
    h.settle();
    assert_eq!(backend.summaries().len(), 2);
    assert_uncovered_in_window(&h);
}

/// Raising the threshold never lets a line leave the window unsummarized: the
/// window keeps every uncovered line up to its hard cap.
#[test]
fn dropping_to_the_background_keeps_every_uncovered_line() {
    let backend = Recording::default();
    let mut h = harness(&backend);
    // Twelve uncovered messages in a window of eight: it has to stretch.
    let crowd = CROWD
        .replace("tier: Background,", "")
        .replace("summary_threshold: 6", "summary_threshold: 12");
    let persona = Persona::from_ron(&crowd).unwrap();
    h.spawn("mara", persona);
    h.app
        .world_mut()
        .write_message(SetMemoryTier::new("mara", MemoryTier::Background));
    h.app.update();
    assert_eq!(threshold(&h), 12);
    for line in ["One.", "Two.", "Three.", "Four.", "Five.", "Six.", "Seven."] {
        say(&mut h, line);
        assert_uncovered_in_window(&h);
    }
    assert!(backend.summaries().iter().all(|s| !s.wants_facts));
    let summaries = backend.summaries();
    assert_eq!(summaries.len(), 1, "one at 12 messages");
    assert_eq!(summaries[0].covered, 0..12);
}

/// A save holds the configuration in force when it was written; loading it gives
/// the NPC its tier's settings now, not the saved tier's.
#[test]
fn a_save_from_the_foreground_loads_into_the_background_tier() {
    let backend = Recording::default();
    let mut h = harness(&backend);
    let mara = h.spawn("mara", Persona::from_ron(CROWD).unwrap());
    h.app
        .world_mut()
        .entity_mut(mara)
        .insert(MemoryTier::Foreground);
    say(&mut h, "My name is Alex.");
    assert_eq!(threshold(&h), 2);
    let path = crate::support::temp_dir("tier-memory").join("slot.ron");
    h.save_to(&path);

    h.app.world_mut().entity_mut(mara).remove::<MemoryTier>();
    h.app.update();
    assert_eq!(threshold(&h), 6);
    h.load_ok(&path);
    assert_eq!(threshold(&h), 6, "the live tier wins over the saved config");
    assert_eq!(h.log("mara").len(), 2);
    say(&mut h, "Do you sell fuses?");
    say(&mut h, "Thanks.");
    assert_eq!(backend.summaries().len(), 1, "none due at 6 after the load");
    assert_uncovered_in_window(&h);
}

/// NPCs that follow the default tier follow a new default, settings and all.
#[test]
fn a_new_default_tier_reaches_npcs_that_follow_it() {
    let backend = Recording::default();
    let mut h = harness(&backend);
    let persona = Persona::from_ron(&CROWD.replace("tier: Background,", "")).unwrap();
    h.spawn("mara", persona);
    // The asset's own events apply the persona again a frame later; let them pass,
    // so only the default's change can move the tier below.
    h.app.update();
    h.app.update();
    assert_eq!(threshold(&h), 2, "Nearby by default: the persona's own");
    h.app
        .world_mut()
        .resource_mut::<NpcMemorySettings>()
        .schedule
        .default_tier = MemoryTier::Background;
    h.app.update();
    assert_eq!(threshold(&h), 6);
    say(&mut h, "My name is Alex.");
    say(&mut h, "Do you sell fuses?");
    assert!(backend.summaries().is_empty());
}

/// A persona with no tiers of its own, sized by the plugin-wide settings instead.
const PLAIN: &str = r#"(
    name: "Mara",
    system_prompt: "You are Mara, a trader in the market crowd.",
    max_context_window: 8,
    summary_threshold: 2,
    tier: Background,
)"#;

#[test]
fn the_plugin_sizes_every_tier_a_persona_leaves_unset() {
    let backend = Recording::default();
    let mut settings = NpcMemorySettings::default();
    settings.schedule.background_delay = Duration::ZERO;
    settings.tiers.background = TierOverrides::default().with_summary_threshold(6);
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_backend(backend.clone())
            .with_settings(settings.clone()),
    );
    h.spawn("mara", Persona::from_ron(PLAIN).unwrap());
    h.settle();
    assert_eq!(threshold(&h), 6, "the plugin's background tier");
    for line in ["One.", "Two."] {
        say(&mut h, line);
    }
    assert!(
        backend.summaries().is_empty(),
        "two exchanges are not six messages"
    );
    say(&mut h, "Three.");
    assert_eq!(backend.summaries().len(), 1);

    // The persona's own entry for a tier wins over the plugin's.
    let own = PLAIN.replace(
        "tier: Background,",
        "tier: Background, tiers: (background: (summary_threshold: 4)),",
    );
    let mut h = Harness::new(NpcMemoryPlugin::default().with_settings(settings.clone()));
    h.spawn("mara", Persona::from_ron(&own).unwrap());
    h.settle();
    assert_eq!(threshold(&h), 4);

    // A plugin tier that does not fit a persona (threshold above its hard cap of
    // 16) is left out for it, so its lines never leave the window unsummarized.
    settings.tiers.background = TierOverrides::default().with_summary_threshold(40);
    let mut h = Harness::new(NpcMemoryPlugin::default().with_settings(settings));
    h.spawn("mara", Persona::from_ron(PLAIN).unwrap());
    h.settle();
    assert_eq!(threshold(&h), 2, "the persona's own threshold");
}
