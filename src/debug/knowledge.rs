//! The panel's Knowledge section: what the NPC saw, what it was told and by whom,
//! what other NPCs said to it in conversations, what it keeps private, and the
//! lore it can see with each entry's scope.

use bevy_egui::egui;

use super::message_row::message;
use super::report::NpcMemoryReport;
use super::section::DebugSection;
use crate::memory::LoreScope;
use crate::plugin::NpcLore;

pub(super) fn draw(
    ui: &mut egui::Ui,
    report: &NpcMemoryReport,
    lore: Option<&NpcLore>,
    focus: &[DebugSection],
) {
    let known = report.knowledge();
    let visible: Vec<_> = lore
        .map(|lore| {
            lore.entries()
                .filter(|entry| lore.can_see(&report.npc, &entry.id))
                .collect()
        })
        .unwrap_or_default();
    DebugSection::Knowledge.show(
        ui,
        format!(
            "Knowledge: {} seen, {} heard, {} from NPCs, {} heard facts, {} private, {} lore",
            known.seen.len(),
            known.heard.len(),
            known.from_npcs.len(),
            known.heard_facts.len(),
            known.private.len(),
            visible.len()
        ),
        focus,
        |ui| {
            for (title, rows) in [
                ("First-hand (seen)", &known.seen),
                ("Heard (with the chain of tellers)", &known.heard),
                ("Kept private", &known.private),
            ] {
                if !rows.is_empty() {
                    ui.label(egui::RichText::new(title).strong());
                    rows.iter().for_each(|row| message(ui, row));
                }
            }
            if !known.from_npcs.is_empty() {
                ui.label(egui::RichText::new("Said to it by other NPCs").strong());
                for row in &known.from_npcs {
                    let name = row.speaker.as_ref().map_or("", |s| s.name());
                    // Rows carry the prompt's `[Name]: ` label once speakers mix.
                    let label = format!("[{name}]: ");
                    let text = row.text.strip_prefix(&label).unwrap_or(&row.text);
                    let text: String = text.chars().take(400).collect();
                    ui.label(format!("Heard from {name}: {text}"));
                }
            }
            if !known.heard_facts.is_empty() {
                ui.label(egui::RichText::new("Heard facts (with their teller)").strong());
                for fact in &known.heard_facts {
                    let tellers = fact.source.heard().map_or_else(String::new, |heard| {
                        heard
                            .chain
                            .iter()
                            .map(|t| t.name.as_str())
                            .collect::<Vec<_>>()
                            .join(" via ")
                    });
                    let hops = fact.source.precedence().1;
                    ui.label(
                        egui::RichText::new(format!(
                            "{} = {:?} · told by {tellers} · {hops} hop(s)",
                            fact.key, fact.value
                        ))
                        .small(),
                    );
                }
            }
            if !visible.is_empty() {
                ui.label(egui::RichText::new("Lore").strong());
                for entry in visible {
                    let scope = match &entry.scope {
                        LoreScope::World => "world".to_owned(),
                        LoreScope::Group(group) => format!("group {group}"),
                        LoreScope::Npc(npc) => format!("only {npc}"),
                    };
                    ui.label(egui::RichText::new(format!("{} · {scope}", entry.id)).small());
                    ui.label(egui::RichText::new(&*entry.text).weak());
                }
            }
        },
    );
}
