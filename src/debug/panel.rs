//! The egui window: every NPC's L1, L2 and L3, live, with actions.

use std::path::PathBuf;

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPlugin, EguiPrimaryContextPass, egui};

use super::message_row::message;
use super::report::NpcMemoryReport;
use super::section::DebugSection;
use crate::memory::{MemoryConfig, NpcId};
use crate::plugin::{
    ChatLogs, ClearNpcMemory, ContextMemoryManager, LlmUsage, LoadMemory, NpcRequests,
    ReconfigureNpcMemory, RollingWindows, SaveMemory, SaveSettings, SummarizeNow, UsageStats,
};

/// Adds the memory debug panel. One line in a game:
///
/// ```no_run
/// # use bevy::prelude::*;
/// # use bevy_npc_memory::prelude::*;
/// # let mut app = App::new();
/// app.add_plugins(bevy_npc_memory::debug::NpcMemoryDebugPlugin::default()); // F1 toggles it
/// ```
///
/// It adds `EguiPlugin` unless the game already has (add yours first).
#[derive(Clone, Debug)]
pub struct NpcMemoryDebugPlugin {
    toggle_key: KeyCode,
    open: bool,
}

impl Default for NpcMemoryDebugPlugin {
    fn default() -> Self {
        Self {
            toggle_key: KeyCode::F1,
            open: false,
        }
    }
}

impl NpcMemoryDebugPlugin {
    /// Toggles the panel with another key.
    pub fn with_toggle_key(mut self, key: KeyCode) -> Self {
        self.toggle_key = key;
        self
    }

    /// Shows the panel from the first frame.
    pub fn open(mut self) -> Self {
        self.open = true;
        self
    }
}

impl Plugin for NpcMemoryDebugPlugin {
    fn build(&self, app: &mut App) {
        if !app.is_plugin_added::<EguiPlugin>() {
            app.add_plugins(EguiPlugin::default());
        }
        app.insert_resource(NpcMemoryDebugState {
            open: self.open,
            toggle_key: self.toggle_key,
            selected: None,
            search: String::new(),
            focus: Vec::new(),
            focus_frames: 0,
            window_edit: 20,
            threshold_edit: 10,
            recall_edit: false,
            facts_edit: false,
            segments_edit: false,
            edits_for: None,
            path: String::new(),
        })
        .add_systems(Update, toggle_panel)
        .add_systems(EguiPrimaryContextPass, draw_panel);
    }
}

/// The panel's state: whether it is open, and which NPC it shows.
#[derive(Resource, Clone, Debug)]
pub struct NpcMemoryDebugState {
    /// Whether the panel shows.
    pub open: bool,
    /// The key that toggles it.
    pub toggle_key: KeyCode,
    /// The NPC shown; the first by id when `None`.
    pub selected: Option<NpcId>,
    /// The L2 search text.
    pub search: String,
    /// Sections to open, folding the others, the next time the panel shows an NPC
    /// (the first is scrolled into view). It is emptied a few frames later, and the
    /// player's own clicks rule after.
    pub focus: Vec<DebugSection>,
    focus_frames: u8,
    window_edit: usize,
    threshold_edit: usize,
    recall_edit: bool,
    facts_edit: bool,
    segments_edit: bool,
    edits_for: Option<NpcId>,
    path: String,
}

fn toggle_panel(keys: Res<ButtonInput<KeyCode>>, mut state: ResMut<NpcMemoryDebugState>) {
    if keys.just_pressed(state.toggle_key) {
        state.open = !state.open;
    }
}

#[derive(SystemParam)]
struct Sources<'w> {
    logs: Res<'w, ChatLogs>,
    windows: Res<'w, RollingWindows>,
    contexts: Res<'w, ContextMemoryManager>,
    requests: Res<'w, NpcRequests>,
    usage: Res<'w, LlmUsage>,
    saves: Res<'w, SaveSettings>,
    lore: Option<Res<'w, crate::plugin::NpcLore>>,
    scheduler: Option<Res<'w, crate::plugin::NpcMemoryScheduler>>,
}

#[derive(SystemParam)]
struct Actions<'w> {
    summarize: MessageWriter<'w, SummarizeNow>,
    clear: MessageWriter<'w, ClearNpcMemory>,
    save: MessageWriter<'w, SaveMemory>,
    load: MessageWriter<'w, LoadMemory>,
    reconfigure: MessageWriter<'w, ReconfigureNpcMemory>,
}

fn draw_panel(
    mut egui: EguiContexts,
    mut state: ResMut<NpcMemoryDebugState>,
    sources: Sources,
    mut actions: Actions,
) -> Result {
    if !state.open {
        return Ok(());
    }
    let ctx = egui.ctx_mut()?;
    let mut ids: Vec<&NpcId> = sources.contexts.iter().map(|(id, _)| id).collect();
    ids.sort();
    let selected = state
        .selected
        .clone()
        .filter(|id| ids.contains(&id))
        .or_else(|| ids.first().map(|id| (*id).clone()));
    let report = selected.as_ref().and_then(|npc| {
        NpcMemoryReport::build(
            npc,
            &sources.logs,
            &sources.windows,
            &sources.contexts,
            &sources.requests,
            &sources.usage,
        )
    });
    if state.path.is_empty() {
        state.path = sources
            .saves
            .autosave
            .as_ref()
            .map_or("savegame.json".to_owned(), |p| p.display().to_string());
    }

    egui::Window::new("NPC memory")
        .default_pos([830.0, 10.0])
        .default_size([440.0, 680.0])
        .show(ctx, |ui| {
            ui.horizontal(|ui| {
                ui.label("NPC");
                egui::ComboBox::from_id_salt("npc")
                    .selected_text(
                        selected
                            .as_ref()
                            .map_or("(none)".to_owned(), ToString::to_string),
                    )
                    .show_ui(ui, |ui| {
                        for id in &ids {
                            if ui
                                .selectable_label(selected.as_ref() == Some(*id), id.as_str())
                                .clicked()
                            {
                                state.selected = Some((*id).clone());
                            }
                        }
                    });
            });
            let Some(report) = report else {
                ui.label("No NPC has memory yet.");
                return;
            };
            if state.edits_for.as_ref() != Some(&report.npc) {
                // Start the live edits from what the NPC has now.
                state.window_edit = report.window_limits.0;
                state.threshold_edit = report.threshold;
                let features = &report.config.features;
                state.recall_edit = features.recall.enabled;
                state.facts_edit = features.facts.enabled;
                state.segments_edit = features.segments.enabled;
                state.edits_for = Some(report.npc.clone());
            }
            // Held for a few frames: the section opens with an animation, and it can
            // only be scrolled to once its contents have their full height.
            let focus = state.focus.clone();
            state.focus_frames += u8::from(!focus.is_empty());
            if state.focus_frames > 10 {
                state.focus.clear();
                state.focus_frames = 0;
            }
            draw_status(ui, &report);
            if let Some(scheduler) = &sources.scheduler {
                super::schedule::draw_schedule(ui, scheduler, &report.npc);
            }
            draw_actions(ui, &mut state, &report, &mut actions);
            ui.separator();
            egui::ScrollArea::vertical()
                .id_salt("sections")
                // Keep the panel's size when sections fold.
                .auto_shrink([false, false])
                .show(ui, |ui| {
                    DebugSection::Window.show(
                        ui,
                        format!(
                            "L1 rolling window: {} of {} (cap {}), ~{} tokens",
                            report.window.len(),
                            report.window_limits.0,
                            report.window_limits.1,
                            report.window_tokens
                        ),
                        &focus,
                        |ui| report.window.iter().for_each(|row| message(ui, row)),
                    );
                    DebugSection::ContextMemory.show(
                        ui,
                        format!("L3 context memory: {} summaries", report.history.len()),
                        &focus,
                        |ui| {
                            ui.label(egui::RichText::new("Current summary").strong());
                            ui.label(if report.summary.is_empty() {
                                "(none yet)"
                            } else {
                                &report.summary
                            });
                            for (n, row) in report.history.iter().enumerate() {
                                ui.label(
                                    egui::RichText::new(format!(
                                        "#{} covers {}..{} · {:?} · {} ms · {} attempt(s)",
                                        n + 1,
                                        row.covered.start,
                                        row.covered.end,
                                        row.trigger,
                                        row.latency.as_millis(),
                                        row.attempts
                                    ))
                                    .small(),
                                );
                                ui.label(egui::RichText::new(&row.summary).weak());
                            }
                        },
                    );
                    super::layered::draw(ui, &report, &focus);
                    super::knowledge::draw(ui, &report, sources.lore.as_deref(), &focus);
                    super::actions::draw(ui, &report, &focus);
                    DebugSection::FullLog.show(
                        ui,
                        format!("L2 full log: {} messages", report.log.len()),
                        &focus,
                        |ui| {
                            ui.horizontal(|ui| {
                                ui.label("Search");
                                ui.text_edit_singleline(&mut state.search);
                            });
                            egui::ScrollArea::vertical()
                                .id_salt("log")
                                .max_height(220.0)
                                .show(ui, |ui| {
                                    report
                                        .search_log(&state.search)
                                        .into_iter()
                                        .for_each(|row| message(ui, row));
                                });
                        },
                    );
                    DebugSection::Degradations.show(
                        ui,
                        format!("Degradations: {}", report.degradations.len()),
                        &focus,
                        |ui| {
                            for degradation in &report.degradations {
                                ui.colored_label(egui::Color32::LIGHT_RED, degradation);
                            }
                        },
                    );
                    DebugSection::Usage.show(ui, "Usage", &focus, |ui| {
                        usage(ui, "Replies", report.reply_usage.as_ref());
                        usage(ui, "Summaries", report.summary_usage.as_ref());
                    });
                });
        });
    Ok(())
}

fn draw_status(ui: &mut egui::Ui, report: &NpcMemoryReport) {
    ui.label(format!(
        "Summary due at {}/{} uncovered messages · L2 holds {}",
        report.pending,
        report.threshold,
        report.log.len()
    ));
    let mut activity = Vec::new();
    if report.reply_in_flight {
        activity.push("reply in flight".to_owned());
    }
    if report.summary_in_flight {
        activity.push("summary in flight".to_owned());
    }
    if !report.queued_lines.is_empty() {
        activity.push(format!("{} queued", report.queued_lines.len()));
    }
    ui.label(if activity.is_empty() {
        "Idle".to_owned()
    } else {
        activity.join(" · ")
    });
}

fn draw_actions(
    ui: &mut egui::Ui,
    state: &mut NpcMemoryDebugState,
    report: &NpcMemoryReport,
    actions: &mut Actions,
) {
    let npc = report.npc.clone();
    ui.horizontal(|ui| {
        if ui.button("Summarize now").clicked() {
            actions.summarize.write(SummarizeNow::new(npc.clone()));
        }
        if ui.button("Clear memory").clicked() {
            actions.clear.write(ClearNpcMemory::new(npc.clone()));
        }
    });
    ui.horizontal(|ui| {
        ui.text_edit_singleline(&mut state.path);
        if ui.button("Save").clicked() {
            actions
                .save
                .write(SaveMemory::new(PathBuf::from(&state.path)));
        }
        if ui.button("Load").clicked() {
            actions
                .load
                .write(LoadMemory::new(PathBuf::from(&state.path)));
        }
    });
    ui.horizontal(|ui| {
        ui.label("Window");
        ui.add(egui::DragValue::new(&mut state.window_edit).range(2..=200));
        ui.label("Threshold");
        ui.add(egui::DragValue::new(&mut state.threshold_edit).range(1..=200));
        ui.checkbox(&mut state.recall_edit, "Recall");
        ui.checkbox(&mut state.facts_edit, "Facts");
        ui.checkbox(&mut state.segments_edit, "Segments");
        if ui.button("Apply").clicked() {
            // Start from the NPC's own config, so the edit changes only what it shows.
            let mut config = MemoryConfig {
                max_context_window: state.window_edit,
                summary_threshold: Some(state.threshold_edit),
                hard_cap: None,
                ..report.config.clone()
            };
            config.features.recall.enabled = state.recall_edit;
            config.features.facts.enabled = state.facts_edit;
            config.features.segments.enabled = state.segments_edit;
            actions
                .reconfigure
                .write(ReconfigureNpcMemory::new(npc, config));
        }
    });
}

fn usage(ui: &mut egui::Ui, title: &str, stats: Option<&UsageStats>) {
    let Some(stats) = stats else {
        ui.label(format!("{title}: none yet"));
        return;
    };
    let ms = |d: Option<std::time::Duration>| {
        d.map_or("-".to_owned(), |d| {
            format!("{:.0}", d.as_secs_f64() * 1000.0)
        })
    };
    ui.label(format!(
        "{title}: {} requests, {} failed, {} retries · tokens {} in / {} out / {} cached ({}) · p50 {} ms, p95 {} ms",
        stats.requests,
        stats.failures,
        stats.retries,
        stats.prompt_tokens,
        stats.completion_tokens,
        stats.cached_tokens,
        stats
            .cached_share()
            .map_or("-".to_owned(), |share| format!("{:.0} %", share * 100.0)),
        ms(stats.latency_p50()),
        ms(stats.latency_p95()),
    ));
}
