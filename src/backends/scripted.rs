//! A backend that plays a script, for tests and reproducible demos.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::memory::ActionCall;

use super::backend::{
    BackendError, BackendFuture, ChatBackend, ChatRequest, ChatResponse, Progress, Purpose,
    stream_words,
};

/// One scripted answer.
#[derive(Clone, Debug, PartialEq)]
pub enum ScriptStep {
    /// Answer with this text after a delay.
    Reply {
        /// The text.
        text: String,
        /// How long to wait first.
        delay: Duration,
    },
    /// Fail with this error after a delay.
    Fail {
        /// The error.
        error: BackendError,
        /// How long to wait first.
        delay: Duration,
    },
    /// Call game actions, with the words said along with them (often none).
    /// Played to a request that offers no actions, the calls go back all the
    /// same, as a model that ignores its tools would send them.
    Calls {
        /// The words said with the calls.
        text: String,
        /// The calls, in order.
        calls: Vec<ActionCall>,
    },
    /// Never answer, like a server that hangs.
    Hang,
}

#[derive(Debug, Default)]
struct Script {
    replies: VecDeque<ScriptStep>,
    summaries: VecDeque<ScriptStep>,
    requests: Vec<ChatRequest>,
}

impl Script {
    fn queue(&mut self, purpose: Purpose) -> &mut VecDeque<ScriptStep> {
        match purpose {
            Purpose::Reply => &mut self.replies,
            Purpose::Summary => &mut self.summaries,
        }
    }
}

/// A backend that answers from two queues, one for replies and one for summaries,
/// and records every request it receives.
///
/// Clones share the script and the record, so a test keeps one clone and gives the
/// other to the plugin. A request with no step left fails with a clear error.
///
/// ```
/// use bevy_npc_memory::prelude::*;
/// use bevy_npc_memory::backends::Purpose;
/// use bevy_npc_memory::backends::ScriptedBackend;
///
/// let backend = ScriptedBackend::new();
/// backend.push_reply("Logged.").push_summary("The player is Alex.");
/// assert_eq!(backend.remaining(Purpose::Reply), 1);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ScriptedBackend {
    script: Arc<Mutex<Script>>,
}

impl ScriptedBackend {
    /// An empty script.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues a step for requests of one purpose.
    pub fn push(&self, purpose: Purpose, step: ScriptStep) -> &Self {
        self.lock().queue(purpose).push_back(step);
        self
    }

    /// Queues an immediate reply.
    pub fn push_reply(&self, text: impl Into<String>) -> &Self {
        self.push_reply_after(Duration::ZERO, text)
    }

    /// Queues a reply that arrives after `delay`.
    pub fn push_reply_after(&self, delay: Duration, text: impl Into<String>) -> &Self {
        self.push(
            Purpose::Reply,
            ScriptStep::Reply {
                text: text.into(),
                delay,
            },
        )
    }

    /// Queues an immediate reply that calls actions, with `text` said along
    /// with them (often empty).
    ///
    /// ```
    /// use bevy_npc_memory::memory::ActionCall;
    /// use bevy_npc_memory::prelude::*;
    /// use bevy_npc_memory::backends::ScriptedBackend;
    ///
    /// let backend = ScriptedBackend::new();
    /// backend
    ///     .push_calls("", vec![ActionCall::new("c1", "open_door", r#"{"door":"north"}"#)])
    ///     .push_reply("The north door is open.");
    /// ```
    pub fn push_calls(&self, text: impl Into<String>, calls: Vec<ActionCall>) -> &Self {
        self.push(
            Purpose::Reply,
            ScriptStep::Calls {
                text: text.into(),
                calls,
            },
        )
    }

    /// Queues an immediate summary.
    pub fn push_summary(&self, text: impl Into<String>) -> &Self {
        self.push_summary_after(Duration::ZERO, text)
    }

    /// Queues a summary that arrives after `delay`.
    pub fn push_summary_after(&self, delay: Duration, text: impl Into<String>) -> &Self {
        self.push(
            Purpose::Summary,
            ScriptStep::Reply {
                text: text.into(),
                delay,
            },
        )
    }

    /// Queues an immediate failure.
    pub fn push_failure(&self, purpose: Purpose, error: BackendError) -> &Self {
        self.push(
            purpose,
            ScriptStep::Fail {
                error,
                delay: Duration::ZERO,
            },
        )
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.lock().requests.clone()
    }

    /// The requests of one purpose, in order.
    pub fn requests_for(&self, purpose: Purpose) -> Vec<ChatRequest> {
        let script = self.lock();
        script
            .requests
            .iter()
            .filter(|r| r.purpose() == purpose)
            .cloned()
            .collect()
    }

    /// Steps left for one purpose.
    pub fn remaining(&self, purpose: Purpose) -> usize {
        self.lock().queue(purpose).len()
    }

    fn lock(&self) -> MutexGuard<'_, Script> {
        // A panic while the lock was held cannot leave the script half-written, so a
        // poisoned lock is still safe to use.
        self.script
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

impl ChatBackend for ScriptedBackend {
    fn name(&self) -> &str {
        "scripted"
    }

    fn complete(&self, request: ChatRequest, progress: Progress) -> BackendFuture {
        let purpose = request.purpose();
        let step = {
            let mut script = self.lock();
            script.requests.push(request);
            script.queue(purpose).pop_front()
        };
        Box::pin(async move {
            match step {
                Some(ScriptStep::Reply { text, delay }) => {
                    wait(delay).await;
                    if purpose == Purpose::Reply {
                        stream_words(&text, &progress);
                    }
                    Ok(ChatResponse::text(text))
                }
                Some(ScriptStep::Fail { error, delay }) => {
                    wait(delay).await;
                    Err(error)
                }
                Some(ScriptStep::Calls { text, calls }) => {
                    stream_words(&text, &progress);
                    Ok(ChatResponse::calls(text, calls))
                }
                Some(ScriptStep::Hang) => std::future::pending().await,
                None => Err(BackendError::Other(format!(
                    "the scripted backend has no {} left",
                    purpose.as_str()
                ))),
            }
        })
    }
}

/// Waits `delay` on any executor; no timer at all for the common zero delay.
async fn wait(delay: Duration) {
    if !delay.is_zero() {
        async_io::Timer::after(delay).await;
    }
}
