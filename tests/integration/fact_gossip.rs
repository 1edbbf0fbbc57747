//! Pinned facts told from NPC to NPC, and lore passed on as hearsay, through the
//! plugin as a game uses it: the game's word beats first-hand, first-hand beats
//! hearsay, fewer hops beat more, history keeps every source, private facts stay
//! put, and lore told out of scope vanishes once the world changes.

use bevy::prelude::*;
use bevy_npc_memory::memory::{Fact, FactChangeKind, FactSource, Origin, Source};
use bevy_npc_memory::prelude::*;

use crate::support::{Harness, add_inbox, layered_plugin, persona, temp_dir};
use bevy_npc_memory::dialogue::NpcSummaryUpdated;
use bevy_npc_memory::knowledge::KnowledgeShared;
use bevy_npc_memory::knowledge::MarkPrivate;
use bevy_npc_memory::knowledge::ShareKnowledge;
use bevy_npc_memory::lore::AddLore;
use bevy_npc_memory::lore::RemoveLore;
use bevy_npc_memory::lore::UpdateLore;
use bevy_npc_memory::memory::LoreEntry;
use bevy_npc_memory::memory::LoreScope;

/// ECHO-7 and RUSTY-3 with every layered feature on; summaries (which pin facts
/// on the offline backend) run every two messages.
fn game(npcs: &[(&str, &str)]) -> Harness {
    let mut h = Harness::new(layered_plugin());
    add_inbox::<KnowledgeShared>(&mut h.app);
    for (id, name) in npcs {
        h.spawn(id, persona(name));
    }
    h
}

fn crew() -> Harness {
    game(&[("echo7", "ECHO-7"), ("rusty", "RUSTY-3")])
}

/// The player tells `npc` a line and the summary after it pins what it can.
fn tell_player_line(h: &mut Harness, npc: &str, line: &str, private: bool) {
    let summaries = h.inbox::<NpcSummaryUpdated>().len();
    let talk = TalkToNpc::new(npc, line);
    h.app
        .world_mut()
        .write_message(if private { talk.privately() } else { talk });
    h.app.update();
    h.settle();
    h.wait_for::<NpcSummaryUpdated>(summaries + 1);
}

fn fact(h: &Harness, npc: &str, key: &FactKey) -> Option<Fact> {
    let contexts = h.app.world().resource::<ContextMemoryManager>();
    contexts.get(&NpcId::new(npc))?.facts().get(key).cloned()
}

fn history(h: &Harness, npc: &str, key: &FactKey) -> Vec<Fact> {
    let contexts = h.app.world().resource::<ContextMemoryManager>();
    contexts
        .get(&NpcId::new(npc))
        .map(|c| c.facts().history(key).to_vec())
        .unwrap_or_default()
}

/// Shares and returns the report of the telling.
fn share(h: &mut Harness, message: ShareKnowledge) -> KnowledgeShared {
    let before = h.inbox::<KnowledgeShared>().len();
    h.app.world_mut().write_message(message);
    h.app.update();
    h.wait_for::<KnowledgeShared>(before + 1);
    h.inbox::<KnowledgeShared>().last().unwrap().clone()
}

fn tell_name(h: &mut Harness, from: &str, to: &str) -> KnowledgeShared {
    share(
        h,
        ShareKnowledge::about_fact(from, to, FactKey::PLAYER_NAME),
    )
}

fn prompt(h: &Harness, npc: &str) -> String {
    h.window(npc)
        .iter()
        .map(|m| m.content.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn hops(fact: &Fact) -> (u8, u32) {
    fact.source.precedence()
}

#[test]
fn a_fact_learned_first_hand_is_told_with_its_teller() {
    let mut h = crew();
    tell_player_line(&mut h, "echo7", "My name is Alex.", false);
    let known = fact(&h, "echo7", &FactKey::PLAYER_NAME).expect("pinned from the line");
    assert_eq!((&*known.value, &known.source), ("Alex", &FactSource::Model));

    let shared = tell_name(&mut h, "echo7", "rusty");
    assert_eq!(shared.facts.len(), 1);
    assert_eq!(shared.facts[0].kind, FactChangeKind::Added);
    assert!(shared.learned.is_empty(), "a fact is no log entry");

    let heard = fact(&h, "rusty", &FactKey::PLAYER_NAME).unwrap();
    assert_eq!(&*heard.value, "Alex");
    let teller = heard.source.heard().unwrap();
    assert_eq!(teller.hops, 1);
    assert_eq!(teller.teller().unwrap().name, "ECHO-7");
    let system = h.window("rusty")[0].content.to_string();
    assert!(
        system.contains("player_name = \"Alex\" (ECHO-7 told you)"),
        "{system}"
    );

    // Passed on again, the chain grows and names both.
    h.spawn("marta", persona("Marta"));
    tell_name(&mut h, "rusty", "marta");
    let marta = fact(&h, "marta", &FactKey::PLAYER_NAME).unwrap();
    assert_eq!(hops(&marta), (2, 2));
    assert!(
        prompt(&h, "marta").contains("(RUSTY-3 told you, who heard it from ECHO-7)"),
        "{}",
        prompt(&h, "marta")
    );

    // Who knows it, and from whom: the first-hand source first.
    let knowers = h
        .app
        .world()
        .resource::<ContextMemoryManager>()
        .who_knows_fact(&FactKey::PLAYER_NAME);
    let rows: Vec<(&str, (u8, u32))> = knowers
        .iter()
        .map(|k| (k.npc.as_str(), k.source.precedence()))
        .collect();
    assert_eq!(
        rows,
        [("echo7", (1, 0)), ("rusty", (2, 1)), ("marta", (2, 2))]
    );

    // The debug report lists the heard fact with its teller.
    let report = h.report("rusty");
    let knowledge = report.knowledge();
    assert_eq!(knowledge.heard_facts.len(), 1);
    assert_eq!(knowledge.heard_facts[0].value, "Alex");
}

#[test]
fn hearsay_never_replaces_first_hand_and_history_keeps_every_source() {
    let mut h = crew();
    tell_player_line(&mut h, "echo7", "My name is Alex.", false);
    tell_player_line(&mut h, "rusty", "My name is Sam.", false);
    let shared = tell_name(&mut h, "echo7", "rusty");
    assert_eq!(shared.facts[0].kind, FactChangeKind::Outranked);
    let active = fact(&h, "rusty", &FactKey::PLAYER_NAME).unwrap();
    assert_eq!(
        (&*active.value, &active.source),
        ("Sam", &FactSource::Model)
    );
    let kept = history(&h, "rusty", &FactKey::PLAYER_NAME);
    assert_eq!(kept.len(), 1);
    assert_eq!(&*kept[0].value, "Alex");
    assert!(kept[0].source.heard().is_some(), "with its teller");
    assert!(!prompt(&h, "rusty").contains("\"Alex\""));
}

#[test]
fn the_games_word_beats_everything() {
    let mut h = crew();
    tell_player_line(&mut h, "echo7", "My name is Alex.", false);
    h.app.world_mut().write_message(SetPinnedFact::new(
        "rusty",
        FactKey::PLAYER_NAME,
        "Commander",
    ));
    h.app.update();
    let shared = tell_name(&mut h, "echo7", "rusty");
    assert_eq!(shared.facts[0].kind, FactChangeKind::OverruledByGame);
    let active = fact(&h, "rusty", &FactKey::PLAYER_NAME).unwrap();
    assert_eq!(
        (&*active.value, &active.source),
        ("Commander", &FactSource::Game)
    );
    assert!(prompt(&h, "rusty").contains("player_name = \"Commander\"\n"));

    // And a game fact, told on, is hearsay to the listener.
    h.spawn("marta", persona("Marta"));
    tell_name(&mut h, "rusty", "marta");
    assert_eq!(
        hops(&fact(&h, "marta", &FactKey::PLAYER_NAME).unwrap()),
        (2, 1)
    );
}

#[test]
fn one_hop_beats_two() {
    let mut h = game(&[
        ("echo7", "ECHO-7"),
        ("rusty", "RUSTY-3"),
        ("dana", "Dana"),
        ("marta", "Marta"),
    ]);
    tell_player_line(&mut h, "echo7", "My name is Alex.", false);
    tell_player_line(&mut h, "dana", "My name is Al.", false);
    tell_name(&mut h, "dana", "marta");
    // Two hops first: Rusty has nothing better, so it takes it.
    let first = tell_name(&mut h, "marta", "rusty");
    assert_eq!(first.facts[0].kind, FactChangeKind::Added);
    assert_eq!(
        hops(&fact(&h, "rusty", &FactKey::PLAYER_NAME).unwrap()),
        (2, 2)
    );
    // One hop replaces it; two hops again cannot.
    let nearer = tell_name(&mut h, "echo7", "rusty");
    assert_eq!(nearer.facts[0].kind, FactChangeKind::Replaced);
    let farther = tell_name(&mut h, "marta", "rusty");
    assert_eq!(farther.facts[0].kind, FactChangeKind::Outranked);
    let active = fact(&h, "rusty", &FactKey::PLAYER_NAME).unwrap();
    assert_eq!((&*active.value, hops(&active)), ("Alex", (2, 1)));
    let sources: Vec<(String, (u8, u32))> = history(&h, "rusty", &FactKey::PLAYER_NAME)
        .iter()
        .map(|f| (f.value.to_string(), hops(f)))
        .collect();
    assert_eq!(
        sources,
        [("Al".to_owned(), (2, 2)), ("Al".to_owned(), (2, 2))],
        "the outdated and the refused value, each with its source"
    );
}

#[test]
fn a_fact_only_private_lines_support_is_not_told() {
    let mut h = crew();
    tell_player_line(&mut h, "echo7", "My name is Alex.", true);
    assert!(fact(&h, "echo7", &FactKey::PLAYER_NAME).is_some());
    let shared = tell_name(&mut h, "echo7", "rusty");
    assert!(shared.facts.is_empty() && shared.learned.is_empty());
    assert!(fact(&h, "rusty", &FactKey::PLAYER_NAME).is_none());
    assert!(!prompt(&h, "rusty").contains("Alex"));
}

/// A fact told before the line it rests on was made private goes no further
/// than the NPC it was told to, even once the NPC that learned it has forgotten
/// everything, and across a save.
#[test]
fn a_fact_told_before_its_line_was_made_private_goes_no_further() {
    let mut h = game(&[
        ("echo7", "ECHO-7"),
        ("rusty", "RUSTY-3"),
        ("marta", "Marta"),
    ]);
    tell_player_line(&mut h, "echo7", "My name is Alex.", false);
    assert_eq!(tell_name(&mut h, "echo7", "rusty").facts.len(), 1);
    h.app
        .world_mut()
        .write_message(MarkPrivate::new("echo7", 0));
    h.app
        .world_mut()
        .write_message(ClearNpcMemory::new("echo7"));
    h.app.update();
    h.settle();
    assert!(
        fact(&h, "echo7", &FactKey::PLAYER_NAME).is_none(),
        "forgotten"
    );

    let shared = tell_name(&mut h, "rusty", "marta");
    assert!(shared.facts.is_empty(), "{:?}", shared.facts);
    assert!(fact(&h, "marta", &FactKey::PLAYER_NAME).is_none());
    let kept = fact(&h, "rusty", &FactKey::PLAYER_NAME).expect("rusty keeps it");
    assert_eq!(&*kept.value, "Alex");

    let dir = temp_dir("fact-made-private");
    let path = dir.join("save.json");
    h.save_to(&path);
    let mut fresh = game(&[
        ("echo7", "ECHO-7"),
        ("rusty", "RUSTY-3"),
        ("marta", "Marta"),
    ]);
    fresh.load_ok(&path);
    assert!(tell_name(&mut fresh, "rusty", "marta").facts.is_empty());
    assert!(prompt(&fresh, "rusty").contains("Alex"));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn an_npc_cannot_tell_a_fact_it_does_not_have() {
    let mut h = crew();
    let shared = tell_name(&mut h, "echo7", "rusty");
    assert!(shared.facts.is_empty() && shared.learned.is_empty());
    assert!(fact(&h, "rusty", &FactKey::PLAYER_NAME).is_none());
}

#[test]
fn a_guard_that_repeats_no_rumours_does_not_pass_on_a_heard_fact() {
    let mut h = crew();
    let mut guard = persona("Guard");
    guard.features.sharing = Some(bevy_npc_memory::memory::SharingPolicy {
        heard: false,
        ..Default::default()
    });
    h.spawn("guard", guard);
    tell_player_line(&mut h, "echo7", "My name is Alex.", false);
    tell_name(&mut h, "echo7", "guard");
    assert!(fact(&h, "guard", &FactKey::PLAYER_NAME).is_some());
    let shared = tell_name(&mut h, "guard", "rusty");
    assert!(shared.facts.is_empty());
}

const THORIUM: &str = "The reactor runs on thorium.";

/// ECHO-7 alone knows the reactor's lore and tells RUSTY-3 about the reactor.
fn lore_told() -> Harness {
    let mut h = crew();
    h.app.world_mut().write_message(AddLore::new(
        LoreEntry::new("reactor", THORIUM)
            .with_keys(["reactor"])
            .with_scope(LoreScope::npc("echo7")),
    ));
    h.app.world_mut().write_message(AddLore::new(
        LoreEntry::new("bunker", "The bunker is Vault 7; its reactor is old.")
            .with_keys(["reactor"]),
    ));
    h.app.update();
    let shared = share(
        &mut h,
        ShareKnowledge::about_query("echo7", "rusty", "the reactor", 3),
    );
    assert_eq!(shared.learned.len(), 1, "only what Rusty could not see");
    h
}

fn told_lore_source(h: &Harness) -> Source {
    let logs = h.app.world().resource::<ChatLogs>();
    let log = logs.get(&NpcId::new("rusty")).unwrap();
    let entry = log.messages().last().unwrap();
    let Origin::Heard(heard) = &entry.origin else {
        panic!("{entry:?}");
    };
    assert_eq!(heard.teller().unwrap().name, "ECHO-7");
    heard.source.clone()
}

#[test]
fn lore_told_out_of_scope_carries_its_source_and_goes_when_the_world_changes() {
    let mut h = lore_told();
    assert_eq!(
        told_lore_source(&h),
        Source::Lore {
            entry: "reactor".into(),
            retracted: false
        }
    );
    let before = prompt(&h, "rusty");
    assert!(before.contains(THORIUM), "{before}");
    assert!(before.contains("ECHO-7 told you"), "{before}");

    h.app
        .world_mut()
        .write_message(UpdateLore::new("reactor", "The reactor was shut down."));
    h.app.update();
    let after = prompt(&h, "rusty");
    assert!(!after.contains("thorium"), "{after}");
    // Asked about it, Rusty recalls nothing of the old text either.
    h.say("rusty", "What does the reactor run on? Thorium?");
    h.settle();
    let contexts = h.app.world().resource::<ContextMemoryManager>();
    let last = contexts
        .get(&NpcId::new("rusty"))
        .unwrap()
        .last_prompt()
        .unwrap();
    let sent: String = last
        .messages
        .iter()
        .map(|m| m.content.to_string())
        .collect();
    assert!(!sent.contains(THORIUM), "{sent}");
    // Nor can Rusty pass the old text on.
    h.spawn("marta", persona("Marta"));
    let shared = share(
        &mut h,
        ShareKnowledge::about_query("rusty", "marta", "reactor thorium", 3),
    );
    let marta = prompt(&h, "marta");
    assert!(!marta.contains(THORIUM), "{marta} {shared:?}");
}

/// A save whose log holds lore told with a text the save's own lore no longer has
/// (edited by hand here): the load checks the told lore of the NPCs its rebuild
/// found holding any, and retracts it, as a live lore change would.
#[test]
fn told_lore_a_loaded_save_no_longer_backs_is_retracted_on_load() {
    let mut h = lore_told();
    let dir = temp_dir("told-lore-load");
    let path = dir.join("slot.json");
    h.save_to(&path);
    let mut saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let entries = saved["lore"]["entries"].as_array_mut().unwrap();
    let reactor = entries.iter_mut().find(|e| e["id"] == "reactor").unwrap();
    reactor["text"] = "The reactor was shut down.".into();
    std::fs::write(&path, serde_json::to_vec(&saved).unwrap()).unwrap();

    h.load_ok(&path);
    h.app.update();
    assert_eq!(
        told_lore_source(&h),
        Source::Lore {
            entry: "reactor".into(),
            retracted: true
        }
    );
    assert!(!prompt(&h, "rusty").contains(THORIUM));
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn removed_lore_goes_from_the_prompts_it_was_told_into() {
    let mut h = lore_told();
    h.app.world_mut().write_message(RemoveLore::new("reactor"));
    h.app.update();
    assert!(!prompt(&h, "rusty").contains(THORIUM));
}

#[test]
fn told_facts_and_lore_survive_a_save_and_a_bad_chain_is_refused() {
    let mut h = lore_told();
    tell_player_line(&mut h, "echo7", "My name is Alex.", false);
    tell_name(&mut h, "echo7", "rusty");
    let dir = temp_dir("fact-gossip");
    let path = dir.join("save.json");
    h.save_to(&path);

    let mut fresh = crew();
    fresh.load_ok(&path);
    let heard = fact(&fresh, "rusty", &FactKey::PLAYER_NAME).unwrap();
    assert_eq!(heard, fact(&h, "rusty", &FactKey::PLAYER_NAME).unwrap());
    assert_eq!(
        heard.source.heard().unwrap().teller().unwrap().name,
        "ECHO-7"
    );
    assert!(matches!(told_lore_source(&fresh), Source::Lore { .. }));
    assert!(prompt(&fresh, "rusty").contains("(ECHO-7 told you)"));

    let text = std::fs::read_to_string(&path).unwrap();
    let fact_chain = "\"chain\":[{\"id\":\"echo7\",\"name\":\"ECHO-7\"}],\"hops\":1";
    assert!(text.contains(fact_chain), "{text}");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, text.replace(fact_chain, "\"chain\":[],\"hops\":1")).unwrap();
    let failures = fresh.inbox::<MemoryLoadFailed>().len();
    fresh.load_from(&bad);
    let failed = &fresh.inbox::<MemoryLoadFailed>()[failures];
    let error = failed.error.to_string();
    assert!(error.contains("chain of 0 tellers"), "{error}");
    // The memory in use stays.
    assert!(fact(&fresh, "rusty", &FactKey::PLAYER_NAME).is_some());
}
