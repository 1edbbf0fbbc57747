//! Which backend runs (a local GGUF, an HTTP provider, the demo model or the
//! offline one), and the corner label that names it.

use std::path::PathBuf;

use bevy_npc_memory::backends::{OpenAiBackend, OpenAiConfig};
use bevy_npc_memory::prelude::*;

// Only `follow_model` reads the local model's messages.
#[cfg(feature = "local-llm")]
use bevy::prelude::*;
#[cfg(feature = "local-llm")]
use bevy_npc_memory::LocalModelFailed;
#[cfg(feature = "local-llm")]
use bevy_npc_memory::LocalModelLoaded;

use crate::Args;
#[cfg(feature = "local-llm")]
use crate::Scene;
use crate::script::AutoplayBackend;

type WithBackend = Box<dyn FnOnce(NpcMemoryPlugin) -> NpcMemoryPlugin>;

/// Which backend runs, and what the corner label calls it (`None`: offline).
pub(crate) fn backend(args: &Args, autoplay: &AutoplayBackend) -> (WithBackend, Option<String>) {
    let http = |config: OpenAiConfig| {
        OpenAiBackend::new(config)
            .map_err(|e| eprintln!("{e}"))
            .ok()
            .map(|backend| {
                let label = format!("{} over HTTP", backend.config().provider);
                let with: WithBackend = Box::new(move |plugin| plugin.with_backend(backend));
                (with, Some(label))
            })
    };
    let autoplay = autoplay.clone();
    let chosen = if args.autoplay {
        let with: WithBackend = Box::new(move |plugin| plugin.with_backend(autoplay));
        return (with, None);
    } else if let Some(path) = &args.model {
        local(path.clone())
    } else if std::env::var_os("DEEPSEEK_API_KEY").is_some() {
        http(OpenAiConfig::deepseek())
    } else if std::env::var_os("OPENAI_API_KEY").is_some() {
        http(OpenAiConfig::openai())
    } else if let Ok(url) = std::env::var("LLAMA_SERVER_URL") {
        http(OpenAiConfig::llama_cpp(url))
    } else {
        default_model().and_then(local)
    };
    chosen.unwrap_or_else(|| {
        (
            Box::new(|plugin: NpcMemoryPlugin| plugin.with_backend(OfflineBackend::default())),
            None,
        )
    })
}

#[cfg(feature = "local-llm")]
fn default_model() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(bevy_npc_memory::backends::DEFAULT_MODEL_PATH);
    path.is_file().then_some(path)
}

#[cfg(not(feature = "local-llm"))]
fn default_model() -> Option<PathBuf> {
    None
}

/// The GGUF at `path`, run in-process; it loads in the background while the scene
/// starts.
#[cfg(feature = "local-llm")]
fn local(path: PathBuf) -> Option<(WithBackend, Option<String>)> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let config = LocalLlmConfig::new(path).with_max_tokens(160);
    let backend = LocalLlmBackend::new(config)
        .map_err(|e| eprintln!("{e}"))
        .ok()?;
    let with: WithBackend = Box::new(move |plugin| plugin.with_backend(backend));
    Some((with, Some(format!("local {name} (loading)"))))
}

#[cfg(not(feature = "local-llm"))]
fn local(path: PathBuf) -> Option<(WithBackend, Option<String>)> {
    eprintln!(
        "--model {} needs the local-llm feature: cargo run --example bunker --features debug-ui,local-llm -- --model PATH",
        path.display()
    );
    None
}

/// Keeps the corner label true to the model's state.
#[cfg(feature = "local-llm")]
pub(crate) fn follow_model(
    mut scene: ResMut<Scene>,
    mut loaded: MessageReader<LocalModelLoaded>,
    mut failed: MessageReader<LocalModelFailed>,
) {
    for model in loaded.read() {
        scene.backend = Some(format!(
            "local {} (loaded in {} ms)",
            model.path.file_name().unwrap_or_default().to_string_lossy(),
            model.load_time.as_millis()
        ));
    }
    for model in failed.read() {
        scene.backend = Some(format!("local model FAILED: {}", model.reason));
    }
}
