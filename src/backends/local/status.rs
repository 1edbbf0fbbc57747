//! What the worker tells the rest of the game: whether the model is loaded, and
//! how fast the last request ran.

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::backends::Purpose;

/// Where the prompt format came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChatTemplateSource {
    /// The chat template stored in the GGUF file.
    Gguf,
    /// The file has none, so ChatML is used (a warning was logged).
    ChatMlFallback,
}

/// The state of a local model.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelStatus {
    /// The worker thread is still loading it. Requests made now wait.
    Loading,
    /// Loaded and answering.
    Ready {
        /// How long loading took.
        load_time: Duration,
        /// Where the prompt format came from.
        template: ChatTemplateSource,
        /// The context size in use, in tokens (at most what the model was trained for).
        context_size: u32,
    },
    /// It could not be loaded. Every request fails with
    /// [`BackendError::ModelUnavailable`](crate::backends::BackendError::ModelUnavailable).
    Failed {
        /// Why, naming the file.
        reason: String,
    },
}

/// Timing of one finished request, for benchmarks and debug displays.
#[derive(Clone, Debug, PartialEq)]
pub struct GenerationStats {
    /// Whether it was a reply or a summary.
    pub purpose: Purpose,
    /// Tokens in the prompt as the model saw it.
    pub prompt_tokens: usize,
    /// Of those, the tokens the context held already from the NPC's last request,
    /// which were not read again.
    pub cached_prompt_tokens: usize,
    /// Time spent reading the prompt (the new tokens only).
    pub prompt_time: Duration,
    /// Tokens generated.
    pub generated_tokens: usize,
    /// Time spent generating them.
    pub generation_time: Duration,
}

impl GenerationStats {
    /// Prompt tokens read per second; tokens the context held already were not
    /// read, so they do not count.
    pub fn prompt_tokens_per_second(&self) -> f64 {
        rate(
            self.prompt_tokens.saturating_sub(self.cached_prompt_tokens),
            self.prompt_time,
        )
    }

    /// Tokens generated per second.
    pub fn generation_tokens_per_second(&self) -> f64 {
        rate(self.generated_tokens, self.generation_time)
    }
}

fn rate(tokens: usize, time: Duration) -> f64 {
    if time.is_zero() {
        0.0
    } else {
        tokens as f64 / time.as_secs_f64()
    }
}

/// State shared between the backend's handles and its worker.
#[derive(Debug)]
pub(crate) struct Shared {
    status: Mutex<ModelStatus>,
    changed: Condvar,
    last: Mutex<Option<GenerationStats>>,
}

impl Default for Shared {
    fn default() -> Self {
        Self {
            status: Mutex::new(ModelStatus::Loading),
            changed: Condvar::new(),
            last: Mutex::new(None),
        }
    }
}

/// A panic elsewhere never makes the status unreadable: it is plain data.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    pub(crate) fn set_status(&self, status: ModelStatus) {
        *lock(&self.status) = status;
        self.changed.notify_all();
    }

    pub(crate) fn status(&self) -> ModelStatus {
        lock(&self.status).clone()
    }

    pub(crate) fn is_loading(&self) -> bool {
        matches!(*lock(&self.status), ModelStatus::Loading)
    }

    pub(crate) fn wait_loaded(&self, timeout: Duration) -> ModelStatus {
        let deadline = Instant::now() + timeout;
        let mut status = lock(&self.status);
        while matches!(*status, ModelStatus::Loading) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            status = self
                .changed
                .wait_timeout(status, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        status.clone()
    }

    pub(crate) fn record(&self, stats: GenerationStats) {
        *lock(&self.last) = Some(stats);
    }

    pub(crate) fn last(&self) -> Option<GenerationStats> {
        lock(&self.last).clone()
    }
}
