//! The panel's sections for memory beyond basic mode: pinned facts, summary segments,
//! and how the last reply prompt was built, with what was recalled and why.

use bevy_egui::egui;

use super::report::NpcMemoryReport;
use super::section::DebugSection;
use crate::memory::FactStatus;

pub(super) fn draw(ui: &mut egui::Ui, report: &NpcMemoryReport, focus: &[DebugSection]) {
    DebugSection::PinnedFacts.show(
        ui,
        format!("Pinned facts: {}", report.facts.len()),
        focus,
        |ui| {
            if report.facts.is_empty() {
                ui.label("(none)");
            }
            for fact in &report.facts {
                let text = format!(
                    "{} = {:?} · {:?} by {:?} · evidence {:?}",
                    fact.key, fact.value, fact.status, fact.source, fact.evidence
                );
                if fact.status == FactStatus::Active {
                    ui.label(text);
                } else {
                    ui.label(egui::RichText::new(text).weak().strikethrough());
                }
            }
        },
    );
    DebugSection::Segments.show(
        ui,
        format!("Summary segments: {}", report.segments.len()),
        focus,
        |ui| {
            for segment in &report.segments {
                ui.label(
                    egui::RichText::new(format!(
                        "{}..{} · level {} · {:?}",
                        segment.covered.start, segment.covered.end, segment.level, segment.priority
                    ))
                    .small(),
                );
                ui.label(egui::RichText::new(&segment.text).weak());
            }
        },
    );
    let title = match report.prompt_tokens {
        Some((tokens, Some(budget))) if report.prompt_follow_up => {
            format!("Last prompt: ~{tokens} of {budget} tokens, extending the one before")
        }
        Some((tokens, Some(budget))) => format!("Last prompt: ~{tokens} of {budget} tokens"),
        Some((tokens, None)) => format!("Last prompt: ~{tokens} tokens, no budget"),
        None => "Last prompt: basic mode's window and summary".to_owned(),
    };
    DebugSection::LastPrompt.show(ui, title, focus, |ui| {
        for section in &report.prompt_sections {
            ui.label(format!(
                "{:?}: ~{} tokens · {} sent · {} left out",
                section.kind, section.tokens, section.sent, section.left_out
            ));
        }
        for recalled in &report.recalled {
            ui.label(
                egui::RichText::new(format!(
                    "recalled #{} ({:.2}, {})",
                    recalled.index, recalled.score, recalled.why
                ))
                .small(),
            );
            ui.label(egui::RichText::new(&recalled.text).weak());
        }
    });
}
