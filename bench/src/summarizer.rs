//! Who writes the summaries of a replay: the offline backend, as every figure
//! but one uses, or a real model behind an OpenAI-compatible server
//! (`memory_bench --notes summarizer --base-url URL`), whose replies carry the
//! notes on lines it writes (feature `http`).

use bevy_npc_memory::backends::OfflineBackend;
use bevy_npc_memory::memory::SummaryJob;

/// Writes summary replies for a replay.
pub enum Summarizer {
    /// The crate's offline backend: no model, no notes.
    Offline(OfflineBackend),
    /// A server's model, one blocking request per summary.
    #[cfg(feature = "http")]
    Server {
        /// Runs the requests.
        runtime: tokio::runtime::Runtime,
        /// The crate's own HTTP backend.
        backend: bevy_npc_memory::backends::OpenAiBackend,
    },
}

impl Summarizer {
    /// The offline backend.
    pub fn offline() -> Self {
        Self::Offline(OfflineBackend::default())
    }

    /// The model `model` at `base_url` (an OpenAI-compatible `/v1` root).
    #[cfg(feature = "http")]
    pub fn server(base_url: &str, model: &str) -> Result<Self, String> {
        use bevy_npc_memory::backends::{OpenAiBackend, OpenAiConfig};
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let mut config = OpenAiConfig::custom("bench", base_url, model);
        config.stream = false;
        let backend = OpenAiBackend::new(config).map_err(|e| e.to_string())?;
        Ok(Self::Server { runtime, backend })
    }

    /// The reply to `job`, or why there is none.
    pub fn summarize(&self, job: &SummaryJob) -> Result<String, String> {
        match self {
            Self::Offline(backend) => Ok(backend.summarize(&job.input)),
            #[cfg(feature = "http")]
            Self::Server { runtime, backend } => {
                use bevy_npc_memory::backends::{ChatBackend, ChatRequest, Progress, RequestKind};
                use bevy_npc_memory::memory::NpcId;
                let request = ChatRequest {
                    npc: NpcId::new("bench"),
                    kind: RequestKind::Summary(job.input.clone()),
                    messages: job.messages.clone(),
                    actions: Vec::new(),
                };
                runtime
                    .block_on(backend.complete(request, Progress::silent()))
                    .map(|response| response.content)
                    .map_err(|error| error.to_string())
            }
        }
    }
}
