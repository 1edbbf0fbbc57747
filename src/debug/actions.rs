//! The panel's Actions section: what the NPC did, turn by turn, under the player
//! line each turn answered, with what came of every call.

use bevy_egui::egui;

use super::report::NpcMemoryReport;
use super::section::DebugSection;
use crate::memory::{ActionStep, first_chars};

pub(super) fn draw(ui: &mut egui::Ui, report: &NpcMemoryReport, focus: &[DebugSection]) {
    let turns = report
        .actions
        .chunk_by(|a, b| a.turn_line == b.turn_line)
        .count();
    DebugSection::Actions.show(
        ui,
        format!("Actions: {} in {turns} turn(s)", report.actions.len()),
        focus,
        |ui| {
            if report.actions.is_empty() {
                ui.weak("(none yet)");
            }
            for turn in report.actions.chunk_by(|a, b| a.turn_line == b.turn_line) {
                let asked = turn[0].turn_line.and_then(|index| {
                    let row = report.log.iter().find(|row| row.index == Some(index))?;
                    let line: String = row.text.chars().take(80).collect();
                    Some(format!("#{index} player: {line}"))
                });
                ui.label(
                    egui::RichText::new(asked.unwrap_or_else(|| "before any player line".into()))
                        .small()
                        .strong(),
                );
                for action in turn {
                    let (colour, outcome) = match &action.outcome {
                        None => (egui::Color32::GRAY, "waiting for the game".to_owned()),
                        Some((step, text)) => {
                            let colour = match step {
                                ActionStep::Done => egui::Color32::from_rgb(120, 220, 140),
                                ActionStep::Refused => egui::Color32::from_rgb(255, 190, 60),
                                _ => egui::Color32::LIGHT_RED,
                            };
                            let word = format!("{step:?}").to_lowercase();
                            (colour, format!("{word}: {}", first_chars(text, 160)))
                        }
                    };
                    ui.label(format!(
                        "#{} {}({})",
                        action.index,
                        action.name,
                        first_chars(&action.arguments, 120)
                    ));
                    ui.colored_label(colour, format!("   -> {outcome}"));
                }
            }
        },
    );
}
