//! Tells the game when a local model finished loading (feature `local-llm`).

use std::path::PathBuf;
use std::time::Duration;

use bevy::prelude::*;

use super::messages::SwitchBackend;
use crate::backends::{LocalLlmBackend, ModelStatus};

/// A local model finished loading and answers now.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LocalModelLoaded {
    /// The backend's name, e.g. `"local:SmolLM2-135M-Instruct.Q4_1"`.
    pub backend: String,
    /// The GGUF file.
    pub path: PathBuf,
    /// How long loading took, on the model's own thread.
    pub load_time: Duration,
}

/// A local model could not be loaded: the file is missing, is not a GGUF, or is
/// damaged. Requests to it fail with
/// [`BackendError::ModelUnavailable`](crate::backends::BackendError::ModelUnavailable); the
/// game keeps running.
#[derive(Message, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LocalModelFailed {
    /// The backend's name.
    pub backend: String,
    /// The GGUF file.
    pub path: PathBuf,
    /// Why, in words for a log or a UI.
    pub reason: String,
}

/// Local models still loading. The resource is removed once all have reported,
/// so an app with a loaded model pays nothing per frame.
#[derive(Resource, Default)]
struct PendingModelLoads(Vec<LocalLlmBackend>);

impl PendingModelLoads {
    /// Watches a model unless one with the same file is watched already.
    fn watch(&mut self, backend: LocalLlmBackend) {
        if !self.0.iter().any(|known| known.same_model(&backend)) {
            self.0.push(backend);
        }
    }
}

pub(crate) fn plugin(app: &mut App, backends: Vec<LocalLlmBackend>) {
    app.add_message::<LocalModelLoaded>()
        .add_message::<LocalModelFailed>()
        .add_systems(
            PreUpdate,
            (
                watch_switched_models,
                report_model_loads.run_if(resource_exists::<PendingModelLoads>),
            )
                .chain(),
        );
    if !backends.is_empty() {
        let mut pending = PendingModelLoads::default();
        backends
            .into_iter()
            .for_each(|backend| pending.watch(backend));
        app.insert_resource(pending);
    }
}

/// A local model switched in while the game runs is reported like one given at
/// startup.
fn watch_switched_models(
    mut commands: Commands,
    mut switches: MessageReader<SwitchBackend>,
    pending: Option<ResMut<PendingModelLoads>>,
) {
    let models: Vec<_> = switches
        .read()
        .filter_map(|switch| switch.local_model.clone())
        .collect();
    if models.is_empty() {
        return;
    }
    let mut watched = PendingModelLoads::default();
    if let Some(mut pending) = pending {
        std::mem::swap(&mut watched, &mut *pending);
    }
    models
        .into_iter()
        .for_each(|backend| watched.watch(backend));
    commands.insert_resource(watched);
}

fn report_model_loads(
    mut commands: Commands,
    mut pending: ResMut<PendingModelLoads>,
    mut loaded: MessageWriter<LocalModelLoaded>,
    mut failed: MessageWriter<LocalModelFailed>,
) {
    pending.0.retain(|backend| {
        let name = crate::backends::ChatBackend::name(backend).to_owned();
        let path = backend.model_path().to_path_buf();
        match backend.status() {
            ModelStatus::Loading => true,
            ModelStatus::Ready { load_time, .. } => {
                loaded.write(LocalModelLoaded {
                    backend: name,
                    path,
                    load_time,
                });
                false
            }
            ModelStatus::Failed { reason } => {
                failed.write(LocalModelFailed {
                    backend: name,
                    path,
                    reason,
                });
                false
            }
        }
    });
    if pending.0.is_empty() {
        commands.remove_resource::<PendingModelLoads>();
    }
}
