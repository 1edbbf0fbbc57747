//! One message as every section of the panel draws it: who, where, its size, and
//! whether a summary has folded it in yet.

use bevy_egui::egui;

use super::report::MessageRow;
use crate::memory::{Origin, Role, Source};

const UNSUMMARIZED: egui::Color32 = egui::Color32::from_rgb(255, 190, 60);

pub(super) fn message(ui: &mut egui::Ui, row: &MessageRow) {
    let who = who(row);
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

/// Who the row is from, and how it came to the NPC.
fn who(row: &MessageRow) -> String {
    let who = match (&row.origin, row.role) {
        (Origin::Witnessed { .. }, _) => "saw",
        (Origin::Heard(heard), _) if matches!(heard.source, Source::Said { private: true, .. }) => {
            "heard · private at source"
        }
        (Origin::Heard(_), _) => "heard",
        (Origin::Acted(_), _) => "acted",
        (Origin::SaidPrivately, Role::User) => "player · private",
        (Origin::SaidPrivately, _) => "npc · private",
        (_, Role::System) => "system",
        (_, Role::User) => "player",
        (_, Role::Assistant) => "npc",
    };
    // Co-op players and NPC speakers by name; the single player stays "player".
    match (&row.speaker, who.strip_prefix("player")) {
        (Some(speaker), Some(rest)) => format!("{} ({}){rest}", speaker.name(), speaker.id()),
        _ => who.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::memory::{Hearsay, SpeakerId, Teller};

    fn row(role: Role, origin: Origin, speaker: Option<SpeakerId>) -> MessageRow {
        MessageRow {
            index: Some(0),
            role,
            text: String::new(),
            tokens: 0,
            timestamp: 0.0,
            unsummarized: false,
            origin,
            speaker,
            notes: Vec::new(),
        }
    }

    fn heard(private: bool) -> Origin {
        Origin::Heard(Arc::new(Hearsay {
            chain: vec![Teller {
                id: "dana".into(),
                name: "Dana".into(),
            }],
            source: Source::Said {
                speaker: "Player".into(),
                private,
            },
            original_time: 0.0,
            hops: 1,
            asked: None,
        }))
    }

    #[test]
    fn rows_say_who_and_how_private() {
        let bob = SpeakerId::new("bob", "Bob").unwrap();
        let cases = [
            (row(Role::System, heard(false), None), "heard"),
            (
                row(Role::System, heard(true), None),
                "heard · private at source",
            ),
            (
                row(Role::User, Origin::SaidPrivately, None),
                "player · private",
            ),
            (
                row(Role::User, Origin::SaidPrivately, Some(bob.clone())),
                "Bob (bob) · private",
            ),
            (row(Role::Assistant, Origin::Said, None), "npc"),
            (row(Role::User, heard(false), Some(bob.clone())), "heard"),
        ];
        for (row, label) in cases {
            assert_eq!(who(&row), label);
        }
    }
}
