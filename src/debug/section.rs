//! The panel's sections, so a game (or a screenshot) can point the panel at one.

use bevy_egui::egui;

/// One section of the debug panel, in the order the panel shows them. Set
/// [`NpcMemoryDebugState::focus`](super::NpcMemoryDebugState::focus) to open some and
/// fold the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DebugSection {
    /// L1: the rolling window, as the next request sends it.
    Window,
    /// L3: the current summary and the summaries before it.
    ContextMemory,
    /// Pinned facts, with their history.
    PinnedFacts,
    /// Summary segments.
    Segments,
    /// How the last reply prompt was built: sections, tokens, recalled lines.
    LastPrompt,
    /// What the NPC saw, heard (with the chain of tellers), keeps private, and the
    /// lore it can see.
    Knowledge,
    /// The actions the NPC took, turn by turn, with what came of each.
    Actions,
    /// L2: the full log, searchable.
    FullLog,
    /// What went wrong and how memory coped.
    Degradations,
    /// Tokens and calls.
    Usage,
}

impl DebugSection {
    /// Draws the section under `title`. Its open state is kept under the section,
    /// not its title, because titles carry counts that change every turn and would
    /// reset it. While some sections have the focus they are open and the others
    /// are folded, so they show whatever the panel's size.
    pub(super) fn show(
        self,
        ui: &mut egui::Ui,
        title: impl Into<egui::WidgetText>,
        focus: &[DebugSection],
        contents: impl FnOnce(&mut egui::Ui),
    ) {
        let focused = focus.contains(&self);
        let response = egui::CollapsingHeader::new(title)
            .id_salt(self)
            .default_open(matches!(
                self,
                Self::Window | Self::ContextMemory | Self::PinnedFacts | Self::LastPrompt
            ))
            .open((!focus.is_empty()).then_some(focused))
            .show(ui, contents);
        if focus.first() == Some(&self) {
            response
                .header_response
                .scroll_to_me(Some(egui::Align::TOP));
        }
    }
}
