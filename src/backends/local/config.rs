//! Settings of the in-process llama.cpp backend.

use std::num::NonZeroU32;
use std::path::PathBuf;

use crate::backends::ActionChoice;

/// Where the demo model lands when `scripts/fetch-model.sh` fetches it, relative
/// to the crate root (or the game's working directory).
pub const DEFAULT_MODEL_PATH: &str = "assets/models/SmolLM2-135M-Instruct.Q4_1.gguf";

/// How summary requests are worded for the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SummaryForm {
    /// A short structured summary, `Name: / Goal: / Facts:`, built from one short
    /// greedy question per field about the player's own lines, each answer started
    /// for the model ("The player's name is"). Answers that are unknown or use words
    /// the player never said keep the previous value. Small models (under ~1B
    /// parameters) answer one narrow question far better than they follow an open
    /// summarizing instruction. The wording is English and the persona's summarizer
    /// instruction is not used.
    #[default]
    Compact,
    /// The persona's own summarizer instruction, exactly as the plugin built it.
    /// Use this with bigger models or non-English personas.
    Persona,
}

/// What happens when a reply or summary reaches its token limit before the model
/// ended it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MaxTokensPolicy {
    /// Keep the text so far. The response's `finish_reason` is `"length"` and a
    /// warning is logged, as OpenAI-compatible servers do.
    #[default]
    Keep,
    /// Fail with [`BackendError::MaxTokens`](crate::backends::BackendError::MaxTokens), so a
    /// cut-off sentence never reaches memory.
    Fail,
}

/// Settings of a [`LocalLlmBackend`](super::LocalLlmBackend).
///
/// ```
/// use bevy_npc_memory::backends::LocalLlmConfig;
///
/// let config = LocalLlmConfig::new("assets/models/my-model.gguf")
///     .with_context_size(4096)
///     .with_threads(2)
///     .with_max_tokens(128);
/// assert_eq!(config.threads, 2);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct LocalLlmConfig {
    /// The GGUF file.
    pub model_path: PathBuf,
    /// Tokens the context holds: prompt and answer together. Prompts that do not
    /// fit lose their oldest messages first (see the backend's docs).
    pub context_size: NonZeroU32,
    /// CPU threads for inference. The default leaves one core for the game.
    pub threads: u32,
    /// Nice value of the inference threads on Linux (0 = as the game, 19 = lowest).
    /// The default, 10, lets the game's threads win a contended core, so frames stay
    /// smooth while the model generates; generation slows only when the CPU is busy.
    pub inference_niceness: i32,
    /// Most tokens per reply.
    pub max_tokens: u32,
    /// Most tokens per summary.
    pub summary_max_tokens: u32,
    /// Sampling temperature of replies; 0 picks the likeliest token every time.
    pub temperature: f32,
    /// Sampling temperature of summaries; low, so they stay factual.
    pub summary_temperature: f32,
    /// Text that ends a reply when the model writes it (it is not included).
    pub stop: Vec<String>,
    /// Text that ends a summary.
    pub summary_stop: Vec<String>,
    /// How summary requests are worded.
    pub summary_form: SummaryForm,
    /// What a reply or summary that hits its token limit becomes.
    pub on_max_tokens: MaxTokensPolicy,
    /// A fixed sampling seed for reproducible output; `None` varies per request.
    pub seed: Option<u32>,
    /// Whether a reply to a request that offers actions may, must, or must not be a
    /// call. Calls are sampled under a grammar made from each action's schema, so
    /// even a small model sends valid arguments; an action whose schema the grammar
    /// cannot express (string `pattern`s or `format`s, recursive types, `allOf`,
    /// any-value fields) is not offered, with a warning. A call needs tokens:
    /// keep `max_tokens` above about 32 plus the action's longest arguments.
    pub action_choice: ActionChoice,
    /// Forward llama.cpp's own log lines to `tracing` (target `llama-cpp-2`). Off by
    /// default: loading a model logs hundreds of lines. The first backend created
    /// in a process decides this for all of them.
    pub llama_logs: bool,
    /// Bytes of evaluated prompts kept for NPCs other than the one the model last
    /// answered, so that each NPC's next request reads only what is new after the
    /// prefix it shares with its last one. Least recently used first out; 0 keeps
    /// only the last NPC's. The demo model's state is about 23 KB a token, so the
    /// default, 256 MiB, keeps about ten 1,000-token prompts.
    pub prompt_cache_bytes: usize,
}

impl LocalLlmConfig {
    /// Defaults for the model at `model_path`.
    pub fn new(model_path: impl Into<PathBuf>) -> Self {
        Self {
            model_path: model_path.into(),
            context_size: NonZeroU32::new(4096).expect("non-zero"),
            threads: default_threads(),
            inference_niceness: 10,
            max_tokens: 256,
            summary_max_tokens: 96,
            temperature: 0.7,
            summary_temperature: 0.1,
            stop: vec!["\nPlayer:".into(), "\nUser:".into()],
            summary_stop: vec!["\n\n".into(), "\nPlayer:".into(), "\nUser:".into()],
            summary_form: SummaryForm::Compact,
            on_max_tokens: MaxTokensPolicy::Keep,
            seed: None,
            action_choice: ActionChoice::Auto,
            llama_logs: false,
            prompt_cache_bytes: 256 * 1024 * 1024,
        }
    }

    /// The demo model at [`DEFAULT_MODEL_PATH`].
    pub fn demo() -> Self {
        Self::new(DEFAULT_MODEL_PATH)
    }

    /// Sets how many bytes of other NPCs' evaluated prompts are kept (see
    /// [`prompt_cache_bytes`](Self::prompt_cache_bytes)).
    pub fn with_prompt_cache_bytes(mut self, bytes: usize) -> Self {
        self.prompt_cache_bytes = bytes;
        self
    }

    /// Sets the context size in tokens (at least 64).
    pub fn with_context_size(mut self, tokens: u32) -> Self {
        self.context_size = NonZeroU32::new(tokens.max(64)).expect("non-zero");
        self
    }

    /// Sets the inference threads (at least 1).
    pub fn with_threads(mut self, threads: u32) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// Sets the most tokens per reply.
    pub fn with_max_tokens(mut self, tokens: u32) -> Self {
        self.max_tokens = tokens.max(1);
        self
    }

    /// Sets the most tokens per summary.
    pub fn with_summary_max_tokens(mut self, tokens: u32) -> Self {
        self.summary_max_tokens = tokens.max(1);
        self
    }

    /// Sets the temperature of replies.
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = temperature.max(0.0);
        self
    }

    /// Sets the temperature of summaries.
    pub fn with_summary_temperature(mut self, temperature: f32) -> Self {
        self.summary_temperature = temperature.max(0.0);
        self
    }

    /// Replaces the reply stop sequences.
    pub fn with_stop(mut self, stop: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.stop = stop.into_iter().map(Into::into).collect();
        self
    }

    /// Picks how summaries are worded.
    pub fn with_summary_form(mut self, form: SummaryForm) -> Self {
        self.summary_form = form;
        self
    }

    /// Picks what a generation that hits its token limit becomes.
    pub fn with_on_max_tokens(mut self, policy: MaxTokensPolicy) -> Self {
        self.on_max_tokens = policy;
        self
    }

    /// Fixes the sampling seed.
    pub fn with_seed(mut self, seed: u32) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Picks whether replies may, must, or must not call the offered actions.
    pub fn with_action_choice(mut self, choice: ActionChoice) -> Self {
        self.action_choice = choice;
        self
    }

    /// Forwards llama.cpp's log to `tracing`.
    pub fn with_llama_logs(mut self, enabled: bool) -> Self {
        self.llama_logs = enabled;
        self
    }
}

/// All cores but one, so the game's main thread keeps a core to itself.
fn default_threads() -> u32 {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    u32::try_from(cores.saturating_sub(1).max(1)).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_leave_a_core_for_the_game() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let config = LocalLlmConfig::demo();
        assert!(config.threads >= 1);
        assert!(config.threads < cores || cores == 1);
    }

    #[test]
    fn setters_clamp_nonsense() {
        let config = LocalLlmConfig::demo()
            .with_threads(0)
            .with_context_size(0)
            .with_temperature(-1.0);
        assert_eq!(config.threads, 1);
        assert_eq!(config.context_size.get(), 64);
        assert_eq!(config.temperature, 0.0);
    }
}
