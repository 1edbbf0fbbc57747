//! Talking to and interrupting an NPC through its `EntityCommands`.

use bevy::prelude::*;

use super::entity_events::{Interrupt, TalkTo};

/// Talk to and interrupt NPC entities from `commands.entity(npc)`: shorthands for
/// triggering [`TalkTo`] and [`Interrupt`].
///
/// ```
/// # use bevy::prelude::*;
/// # use bevy_npc_memory::prelude::*;
/// fn spawn_and_greet(mut commands: Commands, mut personas: ResMut<Assets<Persona>>) {
///     let persona = personas.add(Persona::new("Guard", "You guard the north gate."));
///     commands
///         .spawn(Npc::new("guard", persona))
///         .observe(|replied: On<Replied>| info!("guard ({}): {}", replied.turn, replied.text))
///         .talk("Who goes there?");
/// }
///
/// fn skip_dialogue(mut commands: Commands, npcs: Query<Entity, With<Npc>>) {
///     for npc in &npcs {
///         // Stop the current answer; lines already said still get theirs.
///         commands.entity(npc).interrupt_npc();
///     }
/// }
/// # App::new()
/// #     .add_plugins((MinimalPlugins, AssetPlugin::default(), NpcMemoryPlugin::default()))
/// #     .add_systems(Startup, spawn_and_greet)
/// #     .add_systems(Update, skip_dialogue)
/// #     .update();
/// ```
pub trait NpcCommandsExt {
    /// The player says `text` to this NPC, as [`TalkTo`].
    fn talk(&mut self, text: impl Into<String>) -> &mut Self;

    /// Interrupts this NPC's reply; its waiting lines are still answered. See
    /// [`InterruptNpc`](crate::dialogue::InterruptNpc) for what memory keeps.
    fn interrupt_npc(&mut self) -> &mut Self;

    /// Interrupts this NPC's reply and drops the lines waiting for it.
    fn interrupt_npc_clearing_queue(&mut self) -> &mut Self;
}

impl NpcCommandsExt for EntityCommands<'_> {
    fn talk(&mut self, text: impl Into<String>) -> &mut Self {
        let event = TalkTo::new(self.id(), text);
        self.commands().trigger(event);
        self
    }

    fn interrupt_npc(&mut self) -> &mut Self {
        let event = Interrupt::new(self.id());
        self.commands().trigger(event);
        self
    }

    fn interrupt_npc_clearing_queue(&mut self) -> &mut Self {
        let event = Interrupt::clearing_queue(self.id());
        self.commands().trigger(event);
        self
    }
}
