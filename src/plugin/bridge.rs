//! The async task bridge: backend requests run on Bevy's IO task pool (or on the
//! game's tokio runtime, when it gives one), and results come back over a channel
//! that a system drains. Nothing here blocks the frame.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use async_lock::Semaphore;
use bevy::platform::time::Instant;
use bevy::prelude::*;
use bevy::tasks::{IoTaskPool, Task, futures_lite::future};
use crossbeam_channel::{Receiver, Sender, unbounded};

use super::messages::{SummaryBackend, SwitchBackend};
#[cfg(feature = "http")]
use crate::backends::AbortOnDrop;
use crate::backends::{
    BackendError, BackendFuture, ChatBackend, ChatRequest, ChatResponse, Progress, Purpose,
};
use crate::memory::{NpcId, shorten_to_chars};

/// Identifies one backend request, so results of cancelled requests are recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TaskId(u64);

impl TaskId {
    /// Request ids are handed out by [`NpcRequests`](super::requests::NpcRequests),
    /// one counter for the app.
    pub(crate) fn new(id: u64) -> Self {
        Self(id)
    }

    /// A number no other request of this app has.
    pub(crate) fn key(self) -> u64 {
        self.0
    }
}

/// A request in flight, or queued in the scheduler and not sent yet. Dropping it
/// cancels the request, which is how requests still running when the app closes
/// are abandoned rather than waited for.
#[derive(Debug)]
pub(crate) struct Ticket {
    pub(crate) id: TaskId,
    _running: Running,
}

#[derive(Debug)]
#[allow(
    dead_code,
    reason = "each handle is held only so that dropping it cancels"
)]
enum Running {
    /// Waiting in the scheduler: nothing runs yet, so nothing needs stopping.
    Queued,
    /// Bevy's tasks stop when their handle is dropped.
    Pool(Task<()>),
    #[cfg(feature = "http")]
    Tokio(AbortOnDrop),
}

impl Ticket {
    pub(crate) fn cancel(self) {
        drop(self);
    }

    /// A ticket for request `id` waiting in the scheduler (again, after a rate
    /// limit, or for the first time).
    pub(crate) fn queued(id: TaskId) -> Self {
        Self {
            id,
            _running: Running::Queued,
        }
    }

    /// Whether the request still waits in the scheduler.
    pub(crate) fn is_queued(&self) -> bool {
        matches!(self._running, Running::Queued)
    }
}

/// What a request task reports back.
pub(crate) enum TaskEvent {
    Delta {
        npc: NpcId,
        task: TaskId,
        text: String,
    },
    /// The backend waits out a rate limit and will try again itself.
    RateLimited {
        npc: NpcId,
        task: TaskId,
        retry_after: Option<Duration>,
    },
    Done(Finished),
}

/// A request that finished, successfully or not.
pub(crate) struct Finished {
    pub(crate) npc: NpcId,
    /// The backend that ran it: after a switch it may no longer be the current one.
    pub(crate) backend: Arc<str>,
    pub(crate) task: TaskId,
    /// What the request was for, known here even once its NPC's slot forgot it.
    pub(crate) purpose: Purpose,
    pub(crate) result: Result<ChatResponse, BackendError>,
    pub(crate) latency: Duration,
    pub(crate) retries: u32,
}

/// The backends, where their requests run, and the result channel.
#[derive(Resource)]
pub(crate) struct LlmBridge {
    #[cfg(feature = "http")]
    runtime: Option<tokio::runtime::Handle>,
    sender: Sender<TaskEvent>,
    receiver: Receiver<TaskEvent>,
    reply_backend: Arc<dyn ChatBackend>,
    /// `None` while summaries use the reply backend, so that switching replies
    /// switches them too.
    summary_backend: Option<Arc<dyn ChatBackend>>,
    timeout: Duration,
    /// A backstop only: the scheduler already sends no more than this many at
    /// once, so requests wait in its priority order, not in the semaphore's.
    slots: Arc<Semaphore>,
}

impl LlmBridge {
    pub(crate) fn new(
        #[cfg(feature = "http")] runtime: Option<tokio::runtime::Handle>,
        reply_backend: Arc<dyn ChatBackend>,
        summary_backend: Option<Arc<dyn ChatBackend>>,
        timeout: Duration,
        max_concurrent_requests: usize,
    ) -> Self {
        let (sender, receiver) = unbounded();
        Self {
            #[cfg(feature = "http")]
            runtime,
            sender,
            receiver,
            reply_backend,
            summary_backend,
            timeout,
            slots: Arc::new(Semaphore::new(max_concurrent_requests.max(1))),
        }
    }

    pub(crate) fn backend_name(&self, purpose: Purpose) -> &str {
        self.backend(purpose).name()
    }

    fn backend(&self, purpose: Purpose) -> &Arc<dyn ChatBackend> {
        match (purpose, &self.summary_backend) {
            (Purpose::Summary, Some(summaries)) => summaries,
            _ => &self.reply_backend,
        }
    }

    /// Later requests go to the new backends; requests in flight keep the backend
    /// they started on, which they hold.
    pub(crate) fn switch(&mut self, switch: &SwitchBackend) {
        if let Some(replies) = &switch.replies {
            self.reply_backend = replies.clone();
        }
        match &switch.summaries {
            SummaryBackend::Unchanged => {}
            SummaryBackend::SameAsReplies => self.summary_backend = None,
            SummaryBackend::Own(summaries) => self.summary_backend = Some(summaries.clone()),
        }
    }

    /// Has the backends drop what they keep for `npc` (every NPC with `None`).
    pub(crate) fn forget(&self, npc: Option<&NpcId>) {
        self.reply_backend.forget(npc);
        if let Some(summaries) = &self.summary_backend {
            summaries.forget(npc);
        }
    }

    /// Starts the request `task` was reserved for and returns at once. The request
    /// waits for a slot under the global concurrency cap before its timeout starts.
    pub(crate) fn spawn(&mut self, task: TaskId, request: ChatRequest) -> Ticket {
        let npc = request.npc.clone();
        let purpose = request.purpose();
        let progress = match purpose {
            Purpose::Reply => {
                let sender = self.sender.clone();
                let npc = npc.clone();
                Progress::streaming(move |text| {
                    let _ = sender.send(TaskEvent::Delta {
                        npc: npc.clone(),
                        task,
                        text: text.to_owned(),
                    });
                })
            }
            Purpose::Summary => Progress::silent(),
        };
        let progress = {
            let sender = self.sender.clone();
            let npc = npc.clone();
            progress.on_rate_limit(move |retry_after| {
                let _ = sender.send(TaskEvent::RateLimited {
                    npc: npc.clone(),
                    task,
                    retry_after,
                });
            })
        };
        let backend = self.backend(purpose).clone();
        let backend_name: Arc<str> = backend.name().into();
        let timeout = self.timeout;
        let sender = self.sender.clone();
        let slots = self.slots.clone();
        let work = async move {
            let slot = slots.acquire_arc().await;
            let started = Instant::now();
            let call = CatchPanic::call(&*backend, request, progress.clone());
            let timed_out = async {
                async_io::Timer::after(timeout).await;
                Err(BackendError::Timeout {
                    backend: backend.name().to_owned(),
                    after: timeout,
                })
            };
            let result = future::or(call, timed_out).await;
            // Free the slot before reporting: the scheduler counts this request as
            // running until it applies the result, and may then send the next.
            drop(slot);
            // The receiver only goes away with the app; nothing is left to tell then.
            let _ = sender.send(TaskEvent::Done(Finished {
                npc,
                backend: backend_name,
                task,
                purpose,
                result,
                latency: started.elapsed(),
                retries: progress.retries(),
            }));
        };
        #[cfg(feature = "http")]
        if let Some(runtime) = &self.runtime {
            let join = runtime.spawn(work);
            return Ticket {
                id: task,
                _running: Running::Tokio(AbortOnDrop(join.abort_handle())),
            };
        }
        Ticket {
            id: task,
            _running: Running::Pool(IoTaskPool::get().spawn(work)),
        }
    }

    /// The next finished event, if any.
    pub(crate) fn try_next(&mut self) -> Option<TaskEvent> {
        self.receiver.try_recv().ok()
    }
}
/// A backend call whose panics become [`BackendError::Panicked`]. Without it, a
/// panic would end the task before it reports, and the NPC would wait for that
/// reply for the rest of the session.
struct CatchPanic {
    backend: String,
    future: Option<BackendFuture>,
}

/// Longest panic message kept in an error, in characters.
const MAX_PANIC_MESSAGE_CHARS: usize = 300;

impl CatchPanic {
    /// Starts the call, catching a panic in `complete` itself as well as in the
    /// future it returns.
    fn call(backend: &dyn ChatBackend, request: ChatRequest, progress: Progress) -> Self {
        let name = backend.name().to_owned();
        let started =
            std::panic::catch_unwind(AssertUnwindSafe(|| backend.complete(request, progress)));
        let future = started.unwrap_or_else(|payload| {
            let error = panicked(&name, payload.as_ref());
            Box::pin(std::future::ready(Err(error)))
        });
        Self {
            backend: name,
            future: Some(future),
        }
    }
}

impl Future for CatchPanic {
    type Output = Result<ChatResponse, BackendError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(future) = self.future.as_mut() else {
            return Poll::Ready(Err(BackendError::Cancelled));
        };
        match std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(poll) => poll,
            Err(payload) => {
                // A future that panicked must not be polled again.
                self.future = None;
                Poll::Ready(Err(panicked(&self.backend, payload.as_ref())))
            }
        }
    }
}

fn panicked(backend: &str, payload: &(dyn std::any::Any + Send)) -> BackendError {
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned());
    tracing::error!(
        target: crate::trace::TELEMETRY_TARGET,
        backend, message = %shorten_to_chars(&message, MAX_PANIC_MESSAGE_CHARS),
        "a backend panicked; the request failed and the NPC keeps working"
    );
    BackendError::Panicked {
        backend: backend.to_owned(),
        message: shorten_to_chars(&message, MAX_PANIC_MESSAGE_CHARS).into_owned(),
    }
}
