//! Personas and tiers reach memory. [`resolve_personas`] reads the persona assets
//! and works out what each NPC gets; memory, lore and actions then take their
//! part from the [`PersonaChange`] it writes. A tier change gives an NPC its
//! tier's memory settings.

use bevy::asset::AssetLoadFailedEvent;
use bevy::ecs::system::SystemParam;
use bevy::prelude::*;

use super::core::TurnCore;
use super::reconfigure::Reconfigure;
use crate::memory::{MemoryConfig, NpcId};
use crate::plugin::messages::ReplyError;
use crate::plugin::npc::TierMemory;
use crate::plugin::persona::{
    AppliedPersona, Persona, PersonaBindings, PersonaChange, persona_config,
};
use crate::plugin::schedule::NpcMemoryScheduler;
use crate::plugin::settings::NpcMemorySettings;

/// Personas that were spawned, loaded, edited or failed: what each of their NPCs
/// gets, as a [`PersonaChange`].
pub(crate) fn resolve_personas(
    mut bindings: ResMut<PersonaBindings>,
    mut scheduler: ResMut<NpcMemoryScheduler>,
    settings: Res<NpcMemorySettings>,
    personas: Res<Assets<Persona>>,
    mut events: MessageReader<AssetEvent<Persona>>,
    mut failures: MessageReader<AssetLoadFailedEvent<Persona>>,
    mut changes: MessageWriter<PersonaChange>,
) {
    for failure in failures.read() {
        let reason = format!("{}: {}", failure.path, failure.error);
        failed(&mut bindings, &mut changes, failure.id, reason);
    }
    let mut changed = bindings.take_spawned();
    changed.extend(events.read().filter_map(|event| match event {
        AssetEvent::Added { id }
        | AssetEvent::Modified { id }
        | AssetEvent::LoadedWithDependencies { id } => Some(*id),
        _ => None,
    }));
    if changed.is_empty() {
        return;
    }
    changed.sort_unstable();
    changed.dedup();
    for id in changed {
        let Some(persona) = personas.get(id) else {
            continue;
        };
        // A persona made in code, or the plugin's defaults, can ask for sizes no
        // save holds; such a persona fails like a file that does not load.
        if let Err(problem) = persona.check_config(&settings.memory) {
            let reason = format!("the persona's memory settings: {problem}");
            failed(&mut bindings, &mut changes, id, reason);
            continue;
        }
        bindings.mark_loaded(id);
        for npc in bindings.npcs(id).to_vec() {
            bindings.set_reply_fields(&npc, persona.reply_field_set());
            scheduler.set_persona_tier(&npc, persona.tier);
            let (prompt, config, overrides) = persona_config(persona, &settings.memory);
            let tiers = tiers_of(&settings, &npc, persona, &config);
            let config = bindings
                .tiers
                .bind(&npc, config, &tiers, scheduler.tier(&npc));
            changes.write(PersonaChange::Applied(Box::new(AppliedPersona {
                npc,
                prompt,
                config,
                overrides,
                groups: persona.groups.clone(),
                actions: persona.actions.clone(),
            })));
        }
    }
}

/// A persona failed to load: lines waiting for it fail rather than wait forever.
/// An NPC that already has memory keeps its last good persona.
fn failed(
    bindings: &mut PersonaBindings,
    changes: &mut MessageWriter<PersonaChange>,
    persona: AssetId<Persona>,
    reason: String,
) {
    tracing::error!("NPC persona failed to load: {reason}");
    bindings.mark_failed(persona, reason.clone());
    for npc in bindings.npcs(persona).to_vec() {
        changes.write(PersonaChange::Failed {
            npc,
            reason: reason.clone(),
        });
    }
}

/// The persona's tiers over the plugin's. The persona's were checked when it
/// loaded; the plugin's are checked against each persona here, and dropped
/// for one they do not fit rather than let its lines go unsummarized.
fn tiers_of(
    settings: &NpcMemorySettings,
    npc: &NpcId,
    persona: &Persona,
    config: &MemoryConfig,
) -> TierMemory {
    if settings.tiers.is_empty() {
        return persona.tiers.clone();
    }
    let merged = persona.tiers.or(&settings.tiers);
    match merged.check(config) {
        Ok(()) => merged,
        Err(invalid) => {
            tracing::warn!(
                "{npc}: the plugin's memory tiers do not fit its persona ({invalid}); \
                 it keeps the persona's own"
            );
            persona.tiers.clone()
        }
    }
}

/// The memory side of persona changes: an NPC gets its memory, or its new
/// persona and settings, and answers any line that waited for it.
pub(crate) fn apply_personas(mut core: TurnCore, mut changes: MessageReader<PersonaChange>) {
    for change in changes.read() {
        match change {
            PersonaChange::Applied(applied) => {
                let npc = &applied.npc;
                let reconfigured = core.layers.ensure(
                    npc,
                    applied.prompt.clone(),
                    &applied.config,
                    applied.overrides,
                );
                if let Some(reconfigured) = reconfigured {
                    core.report_overflow(npc, reconfigured.overflow);
                    core.send_summary(npc, reconfigured.summary);
                }
                core.next_line(npc);
            }
            PersonaChange::Failed { npc, reason } => {
                if core.layers.contains(npc) {
                    continue;
                }
                for line in core.requests.drain(npc) {
                    let error = ReplyError::PersonaUnavailable {
                        npc: npc.clone(),
                        reason: reason.clone(),
                    };
                    core.reject(npc, error, Some(line.turn), line.text);
                }
            }
        }
    }
}

/// What giving NPCs their tier's memory settings borrows.
#[derive(SystemParam)]
pub(crate) struct Tiers<'w, 's> {
    changes: Reconfigure<'w, 's>,
    scheduler: ResMut<'w, NpcMemoryScheduler>,
    bindings: ResMut<'w, PersonaBindings>,
}

/// NPCs whose tier changed get the memory settings of their new tier, if their
/// persona sets any that differ, before this frame's lines are taken. Costs
/// nothing on frames without a tier change.
pub(crate) fn apply_tiers(mut tiers: Tiers) {
    let (mut npcs, default_changed) = tiers.scheduler.take_retiered();
    if default_changed {
        npcs.extend(tiers.bindings.tiers.ids());
    }
    for npc in npcs {
        let tier = tiers.scheduler.tier(&npc);
        if let Some(config) = tiers.bindings.tiers.retier(&npc, tier) {
            tiers.changes.reconfigure(&npc, &config);
        }
    }
}

/// A memory was put in place from outside (imported): what was asked of the
/// memory it replaced ends, and if its persona sets memory per tier, it gets the
/// settings of the NPC's tier now, not those it was saved with.
pub(crate) fn settle_imports(mut tiers: Tiers) {
    for npc in tiers.changes.loads.take_imports() {
        tiers.changes.imported(&npc);
        let tier = tiers.scheduler.tier(&npc);
        if let Some(config) = tiers.bindings.tiers.current(&npc, tier) {
            tiers.changes.reconfigure(&npc, &config);
        }
    }
}
