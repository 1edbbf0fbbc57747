//! One message as every section of the panel draws it: who, where, its size, and
//! whether a summary has folded it in yet.

use bevy_egui::egui;

use super::report::MessageRow;
use crate::memory::{Origin, Role};

const UNSUMMARIZED: egui::Color32 = egui::Color32::from_rgb(255, 190, 60);

pub(super) fn message(ui: &mut egui::Ui, row: &MessageRow) {
    let who = match (&row.origin, row.role) {
        (Origin::Witnessed { .. }, _) => "saw",
        (Origin::Heard(_), _) => "heard",
        (Origin::Acted(_), _) => "acted",
        (Origin::SaidPrivately, Role::User) => "player · private",
        (Origin::SaidPrivately, _) => "npc · private",
        (_, Role::System) => "system",
        (_, Role::User) => "player",
        (_, Role::Assistant) => "npc",
    };
    // Co-op players and NPC speakers by name; the single player stays "player".
    let who = match &row.speaker {
        Some(speaker) if row.role == Role::User => {
            format!(
                "{} ({}){}",
                speaker.name(),
                speaker.id(),
                &who["player".len()..]
            )
        }
        _ => who.to_owned(),
    };
    let index = row.index.map_or(String::new(), |i| format!("#{i} "));
    let marker = if row.unsummarized {
        " ● unsummarized"
    } else {
        ""
    };
    let head =
        egui::RichText::new(format!("{index}{who} · ~{} tokens{marker}", row.tokens)).small();
    ui.label(if row.unsummarized {
        head.color(UNSUMMARIZED)
    } else {
        head
    });
    let text: String = row.text.chars().take(400).collect();
    ui.label(text);
    if !row.notes.is_empty() {
        let notes: Vec<&str> = row.notes.iter().map(|n| &**n).collect();
        ui.label(
            egui::RichText::new(format!("notes (recall only): {}", notes.join(" · ")))
                .small()
                .weak(),
        );
    }
}
