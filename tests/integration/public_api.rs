//! The public surface stays small and has one path per type: a prelude of what a
//! typical game touches, and feature modules for the rest.

// Each feature module is where its types live; these paths are the documented ones.
use bevy::prelude::*;
use bevy_npc_memory::dialogue::NpcRequests;
use bevy_npc_memory::lore::NpcLore;
use bevy_npc_memory::memory::limits::MAX_NPC_ID_CHARS;
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::saves::{SaveFormat, SaveGame};
use bevy_npc_memory::schedule::{MemoryTier, NpcMemoryScheduler};
use bevy_npc_memory::telemetry::LlmUsage;

/// The names `pub use`d inside `pub mod prelude { ... }` of the crate root.
fn prelude_names() -> Vec<String> {
    let lib = include_str!("../../src/lib.rs");
    let start = lib
        .find("pub mod prelude {")
        .expect("the crate has a prelude");
    let end = start + lib[start..].find("\n}\n").expect("the prelude ends");
    let mut names = Vec::new();
    for statement in lib[start..end].split("pub use ").skip(1) {
        let statement = &statement[..statement.find(';').unwrap_or(statement.len())];
        let list = statement.find('{').map_or_else(
            || statement.rsplit("::").next().unwrap(),
            |i| &statement[i + 1..],
        );
        names.extend(
            list.split([',', '}'])
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_owned),
        );
    }
    names
}

#[test]
fn the_prelude_holds_at_most_forty_names_each_once() {
    let names = prelude_names();
    assert!(
        names.len() <= 40,
        "the prelude grew to {}: {names:?}",
        names.len()
    );
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "a name is in the prelude twice");
    // What every game needs is in it.
    for name in [
        "NpcMemoryPlugin",
        "Npc",
        "Persona",
        "TalkToNpc",
        "NpcReplied",
        "SaveMemory",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} left the prelude");
    }
}

#[test]
fn a_game_reaches_each_feature_through_its_module() {
    let mut app = App::new();
    app.add_plugins((
        MinimalPlugins,
        AssetPlugin::default(),
        NpcMemoryPlugin::default(),
    ));
    app.update();
    let world = app.world();
    // Each feature's resource, named by its module path, is the plugin's.
    assert!(world.contains_resource::<NpcLore>());
    assert!(world.contains_resource::<LlmUsage>());
    assert!(world.contains_resource::<NpcMemoryScheduler>());
    assert!(world.contains_resource::<NpcRequests>());
    assert_eq!(MemoryTier::default(), MemoryTier::Nearby);
    // A save made through the saves module reads back through it.
    let save = SaveGame::new(Vec::new()).with_clock(90.0);
    let bytes = save.to_bytes(SaveFormat::Json).unwrap();
    let read = SaveGame::from_bytes(&bytes).unwrap();
    assert_eq!((read.npcs.len(), read.clock), (0, 90.0));
    let long = NpcId::new("x".repeat(1000));
    assert_eq!(long.as_str().chars().count(), MAX_NPC_ID_CHARS);
}
