//! Tells the game when a local model finished loading (feature `local-llm`).

use std::path::PathBuf;
use std::time::Duration;

use bevy::prelude::*;

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
#[derive(Resource)]
struct PendingModelLoads(Vec<LocalLlmBackend>);

pub(crate) fn plugin(app: &mut App, backends: Vec<LocalLlmBackend>) {
    app.add_message::<LocalModelLoaded>()
        .add_message::<LocalModelFailed>();
    let mut unique: Vec<LocalLlmBackend> = Vec::new();
    for backend in backends {
        if !unique.iter().any(|known| known.same_model(&backend)) {
            unique.push(backend);
        }
    }
    if unique.is_empty() {
        return;
    }
    app.insert_resource(PendingModelLoads(unique)).add_systems(
        PreUpdate,
        report_model_loads.run_if(resource_exists::<PendingModelLoads>),
    );
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
