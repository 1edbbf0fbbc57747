//! The in-process llama.cpp backend (feature `local-llm`).
//!
//! One OS thread owns the model and its context. Requests queue on a channel and
//! run one at a time; a request whose future was dropped (the NPC's memory was
//! cleared, it timed out, the game closed) is skipped while queued and stopped
//! between two tokens while running.

mod actions;
mod config;
mod cpu;
mod engine;
mod generation;
mod grammar;
mod loading;
mod oneshot;
mod reuse;
mod segments;
mod status;
mod template;
mod tokenizer;
mod worker;

use std::fmt;
use std::future::Future;
use std::path::Path;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use config::{DEFAULT_MODEL_PATH, LocalLlmConfig, MaxTokensPolicy, SummaryForm};
pub use cpu::KernelFeatures;
pub use status::{ChatTemplateSource, GenerationStats, ModelStatus};
pub use tokenizer::SpecialToken;

use crate::backends::{BackendError, BackendFuture, ChatBackend, ChatRequest, Progress};
use crate::memory::{NpcId, PromptMessage};
use engine::Job;
use status::Shared;
use worker::Work;

/// Runs a GGUF model in-process with llama.cpp, on its own thread.
///
/// - **Loading** starts at once on the worker thread, never on the caller's.
///   [`status`](Self::status) says when it is done; with [`NpcMemoryPlugin`] the game
///   gets a `LocalModelLoaded` or `LocalModelFailed` message. Requests made while
///   it loads wait for it; if it fails, they fail with
///   [`BackendError::ModelUnavailable`].
/// - **One model serves replies and summaries.** They queue behind one worker, in
///   order.
/// - **Replies stream** token by token through [`Progress`]; stop sequences never
///   reach the stream.
/// - **The prompt format** is the GGUF's own chat template, or ChatML with a
///   warning when the file has none.
/// - **Only the template speaks in special tokens.** Message text is always read
///   as plain text: a player who types `<|im_end|><|im_start|>system` gets those
///   characters, never the control tokens. [`tokenize_prompt`](Self::tokenize_prompt)
///   shows what the model reads.
/// - **Actions** a request offers are described in the system prompt, and a
///   grammar built from their schemas holds the model to either words or one
///   valid call (or, with [`ActionChoice::Required`](crate::backends::ActionChoice::Required), to a call); see
///   [`LocalLlmConfig::action_choice`]. Calls get ids `local-1`, `local-2`, ...
///   A call is never streamed.
/// - **Prompts longer than the context** lose their oldest messages first, the way
///   the memory window trims (the system prompt and the newest message stay). If even
///   that does not fit, the request fails with [`BackendError::PromptTooLong`].
///
/// Clones share the model. The worker thread ends when the last clone is dropped.
///
/// ```no_run
/// use bevy_npc_memory::prelude::*;
/// use bevy_npc_memory::backends::BackendError;
///
/// let backend = LocalLlmBackend::new(LocalLlmConfig::demo().with_max_tokens(128))?;
/// let plugin = NpcMemoryPlugin::default().with_backend(backend);
/// # Ok::<(), BackendError>(())
/// ```
///
/// [`NpcMemoryPlugin`]: crate::NpcMemoryPlugin
#[derive(Clone)]
pub struct LocalLlmBackend {
    inner: Arc<Inner>,
}

struct Inner {
    config: LocalLlmConfig,
    name: String,
    // The worker reads jobs from the other end; a Mutex keeps `Inner` Sync on
    // every supported Rust regardless of the sender's own guarantees.
    jobs: Mutex<Sender<Work>>,
    shared: Arc<Shared>,
}

impl LocalLlmBackend {
    /// `backend` as a local model, if it is one. Backends are taken as values, so
    /// this is how the plugin learns which backends have a model to wait for,
    /// without a trait method every other backend would have to carry.
    pub(crate) fn of<B: crate::backends::ChatBackend>(backend: &B) -> Option<Self> {
        (backend as &dyn std::any::Any)
            .downcast_ref::<Self>()
            .cloned()
    }

    /// Starts the worker thread, which loads the model in the background. Returns
    /// at once; a missing or invalid file is reported through [`status`](Self::status),
    /// not here. Fails only if the thread cannot be started.
    pub fn new(config: LocalLlmConfig) -> Result<Self, BackendError> {
        let name = format!(
            "local:{}",
            config
                .model_path
                .file_stem()
                .map_or_else(|| "model".into(), |stem| stem.to_string_lossy())
        );
        let shared = Arc::new(Shared::default());
        let (sender, receiver) = channel();
        std::thread::Builder::new()
            .name("npc-memory-llama".into())
            .spawn({
                let config = config.clone();
                let name = name.clone();
                let shared = shared.clone();
                move || worker::run(config, name, shared, receiver)
            })
            .map_err(|error| {
                BackendError::Other(format!("could not start the local model thread: {error}"))
            })?;
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                name,
                jobs: Mutex::new(sender),
                shared,
            }),
        })
    }

    /// The settings in use.
    pub fn config(&self) -> &LocalLlmConfig {
        &self.inner.config
    }

    /// The GGUF file.
    pub fn model_path(&self) -> &Path {
        &self.inner.config.model_path
    }

    /// Whether the model is loading, ready, or failed. Cheap: one uncontended lock.
    pub fn status(&self) -> ModelStatus {
        self.inner.shared.status()
    }

    /// Whether the model is still loading.
    pub fn is_loading(&self) -> bool {
        self.inner.shared.is_loading()
    }

    /// Blocks until the model is loaded or failed, or `timeout` passes, and returns
    /// the status then. For tools, tests and benchmarks: never call it on the
    /// frame; a game reads `LocalModelLoaded` instead.
    pub fn wait_until_loaded(&self, timeout: Duration) -> ModelStatus {
        self.inner.shared.wait_loaded(timeout)
    }

    /// Token counts and timings of the last request that finished.
    pub fn last_stats(&self) -> Option<GenerationStats> {
        self.inner.shared.last()
    }

    /// Whether two handles share one model.
    pub fn same_model(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The token ids the model reads for `messages` sent as a reply request: the
    /// chat template's own tokens, the messages' text as plain text, trimmed to the
    /// context as a reply would be. For debugging prompt formats and for tests. It
    /// waits for the model to load and behind queued requests, so await it off the
    /// frame; it fails as a request would (e.g. [`BackendError::PromptTooLong`]).
    pub fn tokenize_prompt(
        &self,
        messages: &[PromptMessage],
    ) -> impl Future<Output = Result<Vec<i32>, BackendError>> + Send + 'static {
        let messages = messages.to_vec();
        self.ask(|reply| Work::Tokenize { messages, reply })
    }

    /// The vocabulary's special tokens that have text (see [`SpecialToken`]), by
    /// id: what only the chat template may produce. Waits for the model like
    /// [`tokenize_prompt`](Self::tokenize_prompt).
    pub fn special_tokens(
        &self,
    ) -> impl Future<Output = Result<Vec<SpecialToken>, BackendError>> + Send + 'static {
        self.ask(|reply| Work::SpecialTokens { reply })
    }

    /// Queues work for the worker and waits for its answer.
    fn ask<T: Send + 'static>(
        &self,
        work: impl FnOnce(oneshot::Sender<Result<T, BackendError>>) -> Work,
    ) -> impl Future<Output = Result<T, BackendError>> + Send + 'static {
        let (reply, answer) = oneshot::channel();
        let sent = self.inner.send(work(reply));
        let name = self.inner.name.clone();
        async move {
            sent?;
            answer
                .recv()
                .await
                .unwrap_or_else(|_| Err(worker_gone(&name)))
        }
    }
}

impl Inner {
    fn send(&self, work: Work) -> Result<(), BackendError> {
        self.jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .send(work)
            .map_err(|_| worker_gone(&self.name))
    }
}

impl fmt::Debug for LocalLlmBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalLlmBackend")
            .field("config", &self.inner.config)
            .field("status", &self.status())
            .finish()
    }
}

impl ChatBackend for LocalLlmBackend {
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// Drops the NPC's evaluated prompts: they were derived from memory that is
    /// gone.
    fn forget(&self, npc: Option<&NpcId>) {
        // A worker that has stopped keeps nothing to forget.
        let _ = self.inner.send(Work::Forget { npc: npc.cloned() });
    }

    fn complete(&self, request: ChatRequest, progress: Progress) -> BackendFuture {
        let inner = self.inner.clone();
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            let job = Job {
                request,
                progress,
                reply,
            };
            inner.send(Work::Chat(job))?;
            // If this future is dropped here, `answer` closes and the worker skips
            // or stops the job.
            answer
                .recv()
                .await
                .unwrap_or_else(|_| Err(worker_gone(&inner.name)))
        })
    }
}

fn worker_gone(name: &str) -> BackendError {
    BackendError::Other(format!("{name}: the local model thread has stopped"))
}

/// The demo model's vocabulary, for unit tests: `NPC_MEMORY_TEST_MODEL`, else the
/// demo path. `None`, with the reason printed, when it was not fetched; in CI a
/// missing model fails the test.
#[cfg(test)]
pub(crate) fn test_vocabulary() -> Option<llama_cpp_2::model::LlamaModel> {
    use llama_cpp_2::model::params::LlamaModelParams;
    let path = std::env::var_os("NPC_MEMORY_TEST_MODEL")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_MODEL_PATH));
    if !path.is_file() {
        assert!(
            std::env::var_os("CI").is_none(),
            "no model at {}",
            path.display()
        );
        eprintln!("skipped: no model at {}", path.display());
        return None;
    }
    let params = LlamaModelParams::default().with_vocab_only(true);
    let backend = loading::llama(false).unwrap();
    Some(llama_cpp_2::model::LlamaModel::load_from_file(backend, &path, &params).unwrap())
}
