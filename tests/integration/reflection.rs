//! Reflection: NPCs placed in scene files, and the settings editable the way an
//! inspector edits them.

use bevy::prelude::*;
use bevy::reflect::GetPath;
use bevy::world_serialization::serde::WorldDeserializer;
use bevy_npc_memory::prelude::*;
use serde::de::DeserializeSeed;

use crate::support::Harness;
use bevy_npc_memory::lore::NpcLore;
use bevy_npc_memory::memory::LoreScope;
use bevy_npc_memory::memory::SpeakerId;

/// A scene file placing ECHO-7, as a level designer would write it: the NPC's id
/// and its persona's asset path. Type paths are stable: `bevy_npc_memory::Npc`.
const BUNKER_SCENE: &str = r#"(
  resources: {},
  entities: {
    1: (
      components: {
        "bevy_npc_memory::Npc": (
          id: "echo7",
          persona: Path("npcs/echo7.npc.ron"),
        ),
      },
    ),
  },
)"#;

fn spawn_scene(h: &mut Harness, text: &str) {
    let world = h.app.world_mut();
    let mut assets = world.resource::<AssetServer>().clone();
    let registry = world.resource::<AppTypeRegistry>().clone();
    let scene = {
        let registry = registry.read();
        let mut deserializer = ron::Deserializer::from_str(text).unwrap();
        WorldDeserializer {
            type_registry: &registry,
            load_from_path: &mut assets,
        }
        .deserialize(&mut deserializer)
        .expect("the scene parses")
    };
    scene
        .write_to_world(world, &mut Default::default())
        .expect("the scene spawns");
}

#[test]
fn an_npc_placed_in_a_scene_file_talks_and_remembers() {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    spawn_scene(&mut h, BUNKER_SCENE);
    let npc = NpcId::new("echo7");
    h.run_until("the scene's persona loads", |world| {
        world.resource::<ContextMemoryManager>().get(&npc).is_some()
    });
    let system_prompt = h.window("echo7")[0].content.to_string();
    assert!(
        system_prompt.contains("ECHO-7"),
        "the persona file named in the scene: {system_prompt}"
    );
    h.say("echo7", "My name is Alex.");
    h.wait_for_replies(1);
    h.say("echo7", "What is my name?");
    h.wait_for_replies(2);
    let said: Vec<_> = h.log("echo7").into_iter().map(|(_, text)| text).collect();
    assert_eq!(said.len(), 4, "{said:?}");
    assert_eq!(said[0], "My name is Alex.");
    assert_eq!(said[2], "What is my name?");
}

/// What bevy-inspector-egui does: find the resource by reflection and edit a field
/// by path. The plugin then works with the edited value.
#[test]
fn settings_and_features_are_edited_by_reflection() {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    let registry = h.app.world().resource::<AppTypeRegistry>().clone();
    {
        let registry = registry.read();
        for path in [
            "bevy_npc_memory::Npc",
            "bevy_npc_memory::NpcMemorySettings",
            "bevy_npc_memory::SaveSettings",
            "bevy_npc_memory::NpcMemorySnapshot",
            "bevy_npc_memory::Persona",
            "bevy_npc_memory::memory::MemoryFeatures",
            "bevy_npc_memory::memory::NpcId",
        ] {
            assert!(
                registry.get_with_type_path(path).is_some(),
                "{path} is registered"
            );
        }
        // Resources are components of resource entities; an inspector edits them
        // through `ReflectComponent`.
        let reflect = registry
            .get_with_type_path("bevy_npc_memory::NpcMemorySettings")
            .unwrap()
            .data::<ReflectComponent>()
            .expect("reflected as a resource");
        let world = h.app.world_mut();
        let id = reflect.register_component(world);
        let entity = world.resource_entities().get(id).unwrap();
        let mut reflected = reflect.reflect_mut(world.entity_mut(entity)).unwrap();
        let value: &mut dyn Reflect = &mut *reflected;
        *value
            .reflect_path_mut("memory.max_context_window")
            .unwrap()
            .try_downcast_mut::<usize>()
            .unwrap() = 4;
        *value
            .reflect_path_mut("memory.features.recall.enabled")
            .unwrap()
            .try_downcast_mut::<bool>()
            .unwrap() = true;
    }
    let settings = h.app.world().resource::<NpcMemorySettings>();
    assert_eq!(settings.memory.max_context_window, 4);
    assert!(settings.memory.features.recall.enabled);
    h.spawn("guard", crate::support::persona("Guard"));
    for line in ["one", "two", "three"] {
        h.say("guard", line);
        h.settle();
    }
    assert!(
        h.window("guard").len() <= 4,
        "the NPC spawned after the edit uses the edited window"
    );
}

/// What a console command or Bevy's remote protocol does: build a message from
/// text by reflection and write it.
fn write_by_reflection(h: &mut Harness, type_path: &str, ron_text: &str) {
    use bevy::ecs::reflect::ReflectMessage;
    use bevy::reflect::serde::TypedReflectDeserializer;

    let registry = h.app.world().resource::<AppTypeRegistry>().clone();
    let registry = registry.read();
    let registration = registry
        .get_with_type_path(type_path)
        .unwrap_or_else(|| panic!("{type_path} is registered"));
    let message = TypedReflectDeserializer::new(registration, &registry)
        .deserialize(&mut ron::Deserializer::from_str(ron_text).unwrap())
        .unwrap();
    registration
        .data::<ReflectMessage>()
        .expect("reflected as a message")
        .write_message(h.app.world_mut(), &*message, &registry);
}

#[test]
fn messages_can_be_written_by_reflection() {
    let dir = crate::support::temp_dir("reflected-save");
    let path = dir.join("slot.json");
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", crate::support::persona("ECHO-7"));
    write_by_reflection(
        &mut h,
        "bevy_npc_memory::TalkToNpc",
        r#"(npc: "echo7", text: "Remember the blue door.")"#,
    );
    h.wait_for_replies(1);
    write_by_reflection(
        &mut h,
        "bevy_npc_memory::SetPinnedFact",
        r#"(npc: "echo7", key: "current_goal", value: "open the blue door")"#,
    );
    write_by_reflection(
        &mut h,
        "bevy_npc_memory::SaveMemory",
        &format!("(path: {:?})", path.to_str().unwrap()),
    );
    h.wait_for::<MemorySaved>(1);
    let saved = std::fs::read_to_string(&path).unwrap();
    assert!(saved.contains("Remember the blue door."));
    assert!(
        saved.contains("open the blue door"),
        "the pinned fact was set"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn lore_is_changed_by_reflection() {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", crate::support::persona("ECHO-7"));
    write_by_reflection(
        &mut h,
        "bevy_npc_memory::AddLore",
        r#"(entry: (id: "flood", scope: Group("crew"), keys: ["flood"], text: "The lower level flooded."))"#,
    );
    h.app.update();
    let text = |h: &Harness, id: &str| {
        h.app
            .world()
            .resource::<NpcLore>()
            .entries()
            .find(|entry| entry.id == id)
            .map(|entry| (entry.text.to_string(), entry.scope.clone()))
    };
    assert_eq!(
        text(&h, "flood"),
        Some((
            "The lower level flooded.".to_owned(),
            LoreScope::group("crew")
        ))
    );
    write_by_reflection(
        &mut h,
        "bevy_npc_memory::UpdateLore",
        r#"(id: "flood", text: "The water has drained.")"#,
    );
    h.app.update();
    assert_eq!(text(&h, "flood").unwrap().0, "The water has drained.");
    write_by_reflection(&mut h, "bevy_npc_memory::RemoveLore", r#"(id: "flood")"#);
    h.app.update();
    assert_eq!(text(&h, "flood"), None);

    // Lore files are reflected assets, so asset inspectors can list them.
    let registry = h.app.world().resource::<AppTypeRegistry>().read();
    let file = registry
        .get_with_type_path("bevy_npc_memory::LoreFile")
        .expect("LoreFile is registered");
    assert!(file.data::<bevy::asset::ReflectAsset>().is_some());
}

#[test]
fn a_line_with_its_speaker_can_be_written_by_reflection() {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    h.spawn("echo7", crate::support::persona("ECHO-7"));
    write_by_reflection(
        &mut h,
        "bevy_npc_memory::TalkToNpc",
        r#"(npc: "echo7", text: "Bob here.", speaker: (id: "p2", name: "Bob"))"#,
    );
    h.wait_for_replies(1);
    let logs = h.app.world().resource::<ChatLogs>();
    let line = &logs.get(&NpcId::new("echo7")).unwrap().messages()[0];
    assert_eq!(line.speaker, Some(SpeakerId::new("p2", "Bob").unwrap()));
}
