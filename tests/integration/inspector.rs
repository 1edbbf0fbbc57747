//! bevy-inspector-egui shows the plugin's settings: every field is reflected and
//! none is reported as unsupported.

use bevy::prelude::*;
use bevy_inspector_egui::bevy_inspector::ui_for_resource;
use bevy_inspector_egui::egui;
use bevy_npc_memory::prelude::*;

use crate::support::Harness;
use bevy_npc_memory::saves::SaveSettings;

/// Every piece of text the inspector drew for the resource `R`.
fn inspector_text<R: Resource<Mutability = bevy::ecs::component::Mutable> + Reflect>(
    world: &mut World,
) -> String {
    let ctx = egui::Context::default();
    let mut text = String::new();
    // Two passes: egui lays out collapsing headers on the first and opens them on
    // the second.
    for _ in 0..2 {
        let output = ctx.run_ui(egui::RawInput::default(), |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| ui_for_resource::<R>(world, ui));
        });
        text.clear();
        for clipped in output.shapes {
            if let egui::epaint::Shape::Text(shape) = clipped.shape {
                text.push_str(shape.galley.text());
                text.push('\n');
            }
        }
    }
    text
}

#[test]
fn the_inspector_shows_every_setting() {
    let mut h = Harness::new(NpcMemoryPlugin::default());
    let world = h.app.world_mut();
    let settings = inspector_text::<NpcMemorySettings>(world);
    for field in [
        "memory",
        "max_queued_lines",
        "request_timeout",
        "collect_budget",
    ] {
        assert!(settings.contains(field), "{field} is shown:\n{settings}");
    }
    let saves = inspector_text::<SaveSettings>(world);
    assert!(saves.contains("max_file_bytes"), "{saves}");
    for text in [&settings, &saves] {
        for problem in ["not registered", "ReflectDefault", "not reflect"] {
            assert!(
                !text.contains(problem),
                "the inspector reports {problem:?}:\n{text}"
            );
        }
    }
}
