//! The worker thread that owns the model: it loads it, then answers requests one at
//! a time. llama.cpp blocks while it computes, so it must never run on the frame or
//! on a task pool's worker; one dedicated OS thread keeps both free.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::time::Instant;

use super::config::LocalLlmConfig;
use super::engine::{Engine, Job};
use super::loading::load;
use super::oneshot;
use super::status::{ModelStatus, Shared};
use super::tokenizer::SpecialToken;

use crate::backends::BackendError;
use crate::memory::{NpcId, PromptMessage};

/// What the worker is asked to do.
// Sent once per request over a channel, next to a model run of seconds: boxing
// the job would buy nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Work {
    /// Answer a request.
    Chat(Job),
    /// Say which tokens the model would read for these messages as a reply prompt.
    Tokenize {
        messages: Vec<PromptMessage>,
        reply: oneshot::Sender<Result<Vec<i32>, BackendError>>,
    },
    /// List the vocabulary's special tokens.
    SpecialTokens {
        reply: oneshot::Sender<Result<Vec<SpecialToken>, BackendError>>,
    },
    /// Drop the evaluated prompts kept for an NPC (every NPC with `None`).
    Forget { npc: Option<NpcId> },
}

/// Lowers this thread's priority; llama.cpp's own threads inherit it. Only Linux
/// has per-thread nice values; elsewhere this does nothing.
#[cfg(target_os = "linux")]
fn yield_to_the_game(niceness: i32) {
    if niceness <= 0 {
        return;
    }
    // SAFETY: `setpriority` takes plain integers and touches no memory of ours; on
    // Linux, PRIO_PROCESS with id 0 names the calling thread only.
    let result = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, niceness.min(19)) };
    if result != 0 {
        tracing::debug!("could not lower the inference thread's priority");
    }
}

#[cfg(not(target_os = "linux"))]
fn yield_to_the_game(_niceness: i32) {}

/// Marks the model failed and answers every request with why, until every handle
/// to the backend is gone, so nothing waits forever on a model that will never come.
fn fail_every_request(name: &str, shared: &Shared, jobs: Receiver<Work>, reason: String) {
    tracing::error!(target: crate::trace::TELEMETRY_TARGET, backend = %name, "{reason}");
    shared.set_status(ModelStatus::Failed {
        reason: reason.clone(),
    });
    let unavailable = || BackendError::ModelUnavailable {
        backend: name.to_owned(),
        reason: reason.clone(),
    };
    for work in jobs {
        match work {
            Work::Chat(job) => drop(job.reply.send(Err(unavailable()))),
            Work::Tokenize { reply, .. } => drop(reply.send(Err(unavailable()))),
            Work::SpecialTokens { reply } => drop(reply.send(Err(unavailable()))),
            Work::Forget { .. } => {}
        }
    }
}

/// The worker's loop. Returns when every handle to the backend is gone.
pub(crate) fn run(config: LocalLlmConfig, name: String, shared: Arc<Shared>, jobs: Receiver<Work>) {
    yield_to_the_game(config.inference_niceness);
    let started = Instant::now();
    let loaded = catch_unwind(AssertUnwindSafe(|| load(&config)))
        .unwrap_or_else(|_| Err("loading the model panicked".to_owned()));
    let model = match loaded {
        Ok(model) => model,
        Err(reason) => return fail_every_request(&name, &shared, jobs, reason),
    };
    let mut engine = match Engine::new(&model, &config, name.clone()) {
        Ok(engine) => engine,
        Err(reason) => return fail_every_request(&name, &shared, jobs, reason),
    };
    let load_time = started.elapsed();
    tracing::info!(
        target: crate::trace::TELEMETRY_TARGET,
        backend = %name, path = %config.model_path.display(), ?load_time,
        template = ?model.template_source(), context = engine.n_ctx, threads = config.threads,
        "local model loaded"
    );
    shared.set_status(ModelStatus::Ready {
        load_time,
        template: model.template_source(),
        context_size: engine.n_ctx,
    });
    let panicked = || BackendError::Other("the local model panicked".to_owned());
    for work in jobs {
        match work {
            // A closed reply was cancelled while it waited in the queue.
            Work::Chat(job) if !job.reply.is_closed() => {
                let result = catch_unwind(AssertUnwindSafe(|| engine.answer(&job)))
                    .unwrap_or_else(|_| Err(panicked()));
                let result = result.map(|(response, stats)| {
                    shared.record(stats);
                    response
                });
                let _ = job.reply.send(result);
            }
            Work::Tokenize { messages, reply } if !reply.is_closed() => {
                let result = catch_unwind(AssertUnwindSafe(|| engine.reply_tokens(&messages)))
                    .unwrap_or_else(|_| Err(panicked()));
                let _ = reply.send(result);
            }
            Work::SpecialTokens { reply } => {
                let _ = reply.send(Ok(model.tokenizer.special_tokens()));
            }
            Work::Forget { npc } => engine.reuse.forget(&mut engine.context, npc.as_ref()),
            Work::Chat(_) | Work::Tokenize { .. } => {}
        }
    }
}
