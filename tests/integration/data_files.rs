//! The game's own data files are input too: persona and lore files of any content
//! load or are refused with a short error naming what is wrong, never panic, and
//! what loads, saves and loads back.

use bevy::prelude::*;
use bevy_npc_memory::prelude::*;
use proptest::prelude::*;

use crate::support::{Harness, temp_dir};
use bevy_npc_memory::lore::LoreFile;

/// Any Unicode, now and then long.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![4 => "\\PC{0,40}", 2 => any::<String>(), 1 => "\\PC{2000,6000}"]
}

/// Any number a file could hold, most of them absurd.
fn number() -> impl Strategy<Value = u64> {
    prop_oneof![0..64u64, any::<u64>(), Just(u64::MAX)]
}

fn quoted(text: &str) -> String {
    ron::to_string(text).unwrap()
}

/// A persona file with every field drawn, or plain garbage, or deep nesting.
fn persona_file() -> impl Strategy<Value = String> {
    let fields = (
        text(),
        text(),
        prop::option::of(number()),
        prop::option::of(number()),
        prop::option::of(number()),
        prop::collection::vec(text(), 0..4),
        prop::collection::vec(text(), 0..3),
        any::<bool>(),
        prop::option::of((text(), prop::collection::vec(text(), 0..3))),
    )
        .prop_map(
            |(name, prompt, window, threshold, budget, groups, actions, recall, field)| {
                let list = |items: &[String]| {
                    items
                        .iter()
                        .map(|i| quoted(i))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let mut file = format!(
                    "(name: {}, system_prompt: {}, groups: [{}], actions: [{}]",
                    quoted(&name),
                    quoted(&prompt),
                    list(&groups),
                    list(&actions)
                );
                if let Some(window) = window {
                    file.push_str(&format!(", max_context_window: {window}"));
                }
                if let Some(threshold) = threshold {
                    file.push_str(&format!(", summary_threshold: {threshold}"));
                }
                if let Some((field, values)) = field {
                    file.push_str(&format!(
                        ", reply_fields: {{{}: [{}]}}",
                        quoted(&field),
                        list(&values)
                    ));
                }
                let budget = budget.map_or(String::new(), |b| format!(", prompt_budget: {b}"));
                file.push_str(&format!(", features: (recall: {recall}{budget}))"));
                file
            },
        );
    prop_oneof![
        6 => fields,
        1 => any::<String>(),
        1 => (1..5_000usize).prop_map(|depth| format!("{}{}", "(".repeat(depth), ")".repeat(depth))),
    ]
}

/// A lore file with entries drawn field by field.
fn lore_file() -> impl Strategy<Value = String> {
    let entry = (text(), text(), prop::collection::vec(text(), 0..3), 0..3u8).prop_map(
        |(id, text, keys, scope)| {
            let scope = match scope {
                0 => "World".to_owned(),
                1 => format!("Group({})", quoted(&id)),
                _ => format!("Npc({})", quoted("keeper")),
            };
            let keys: Vec<String> = keys.iter().map(|k| quoted(k)).collect();
            format!(
                "(id: {}, scope: {scope}, keys: [{}], text: {})",
                quoted(&id),
                keys.join(", "),
                quoted(&text)
            )
        },
    );
    prop_oneof![
        6 => prop::collection::vec(entry, 0..6).prop_map(|e| format!("[{}]", e.join(", "))),
        1 => any::<String>(),
        1 => (1..5_000usize).prop_map(|depth| format!("{}{}", "[".repeat(depth), "]".repeat(depth))),
    ]
}

/// An NPC with `persona` (and the lore, if any) talks, the memory saves, and the
/// save loads back with the same log.
fn plays_and_saves(persona: Persona, lore: Option<LoreFile>, case: usize) {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    // Held as a game holds what `assets.load` gave it.
    let _lore = lore.map(|lore| {
        h.app
            .world_mut()
            .resource_mut::<Assets<LoreFile>>()
            .add(lore)
    });
    h.spawn("keeper", persona);
    h.say("keeper", "Hello, keeper. नमस्ते 👩‍🔧");
    h.settle();
    let before = h.messages("keeper");
    let path = temp_dir(&format!("data-files-{case}")).join("save.json");
    h.save_to(&path);
    assert!(
        h.inbox::<MemorySaveFailed>().is_empty(),
        "{:?}",
        h.inbox::<MemorySaveFailed>()
    );
    h.load_ok(&path);
    assert_eq!(h.messages("keeper"), before, "the save loads back");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn any_persona_file_loads_and_saves_or_is_refused_briefly(file in persona_file()) {
        static CASE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        match Persona::from_ron(&file) {
            Ok(persona) => {
                let case = CASE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                plays_and_saves(persona, None, case);
            }
            Err(error) => {
                let said = error.to_string();
                prop_assert!(!said.is_empty() && said.chars().count() < 1_000, "{said}");
            }
        }
    }

    #[test]
    fn any_lore_file_loads_and_saves_or_is_refused_briefly(file in lore_file()) {
        static CASE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        match LoreFile::from_ron(&file) {
            Ok(lore) => {
                let case = 10_000 + CASE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                plays_and_saves(Persona::new("Keeper", "You keep the archive."), Some(lore), case);
            }
            Err(error) => {
                let said = error.to_string();
                prop_assert!(!said.is_empty() && said.chars().count() < 1_000, "{said}");
            }
        }
    }
}
