//! The async task bridge: backend requests run on a tokio runtime, results come back
//! over a channel that a system drains. Nothing here blocks the frame.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bevy::prelude::*;
use tokio::runtime::{Handle, Runtime};
use tokio::sync::Semaphore;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::task::AbortHandle;

use crate::backends::{
    BackendError, BackendFuture, ChatBackend, ChatRequest, ChatResponse, Progress, Purpose,
};
use crate::memory::{NpcId, shorten_to_chars};

/// Identifies one backend request, so results of cancelled requests are recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct TaskId(u64);

/// A request in flight.
#[derive(Debug)]
pub(crate) struct Ticket {
    pub(crate) id: TaskId,
    abort: AbortHandle,
}

impl Ticket {
    pub(crate) fn cancel(self) {
        self.abort.abort();
    }
}

/// What a request task reports back.
pub(crate) enum TaskEvent {
    Delta {
        npc: NpcId,
        task: TaskId,
        text: String,
    },
    Done(Finished),
}

/// A request that finished, successfully or not.
pub(crate) struct Finished {
    pub(crate) npc: NpcId,
    pub(crate) task: TaskId,
    pub(crate) result: Result<ChatResponse, BackendError>,
    pub(crate) latency: Duration,
    pub(crate) retries: u32,
}

enum RuntimeSource {
    Owned(Option<Runtime>),
    Borrowed,
}

/// The runtime, the backends and the result channel.
#[derive(Resource)]
pub(crate) struct LlmBridge {
    source: RuntimeSource,
    handle: Handle,
    sender: UnboundedSender<TaskEvent>,
    receiver: UnboundedReceiver<TaskEvent>,
    reply_backend: Arc<dyn ChatBackend>,
    summary_backend: Arc<dyn ChatBackend>,
    timeout: Duration,
    slots: Arc<Semaphore>,
    next_task: u64,
}

impl LlmBridge {
    pub(crate) fn new(
        handle: Option<Handle>,
        reply_backend: Arc<dyn ChatBackend>,
        summary_backend: Arc<dyn ChatBackend>,
        timeout: Duration,
        max_concurrent_requests: usize,
    ) -> Self {
        let (source, handle) = match handle {
            Some(handle) => (RuntimeSource::Borrowed, handle),
            None => {
                // One worker is plenty: the tasks wait on I/O. Heavy local inference
                // gets its own thread inside its backend.
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("npc-memory-llm")
                    .enable_all()
                    .build()
                    .expect("the npc-memory tokio runtime could not start");
                let handle = runtime.handle().clone();
                (RuntimeSource::Owned(Some(runtime)), handle)
            }
        };
        let (sender, receiver) = unbounded_channel();
        Self {
            source,
            handle,
            sender,
            receiver,
            reply_backend,
            summary_backend,
            timeout,
            slots: Arc::new(Semaphore::new(max_concurrent_requests.max(1))),
            next_task: 0,
        }
    }

    pub(crate) fn backend_name(&self, purpose: Purpose) -> &str {
        self.backend(purpose).name()
    }

    fn backend(&self, purpose: Purpose) -> &Arc<dyn ChatBackend> {
        match purpose {
            Purpose::Reply => &self.reply_backend,
            Purpose::Summary => &self.summary_backend,
        }
    }

    /// Starts a request on the runtime and returns at once. The request waits for
    /// a slot under the global concurrency cap before its timeout starts.
    pub(crate) fn spawn(&mut self, request: ChatRequest) -> Ticket {
        let task = TaskId(self.next_task);
        self.next_task += 1;
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
        let backend = self.backend(purpose).clone();
        let timeout = self.timeout;
        let sender = self.sender.clone();
        let slots = self.slots.clone();
        let join = self.handle.spawn(async move {
            // The semaphore is never closed, so acquiring only waits.
            let _slot = slots.acquire_owned().await;
            let started = Instant::now();
            let call = CatchPanic::call(&*backend, request, progress.clone());
            let result = match tokio::time::timeout(timeout, call).await {
                Ok(result) => result,
                Err(_) => Err(BackendError::Timeout {
                    backend: backend.name().to_owned(),
                    after: timeout,
                }),
            };
            // The receiver only goes away with the app; nothing is left to tell then.
            let _ = sender.send(TaskEvent::Done(Finished {
                npc,
                task,
                result,
                latency: started.elapsed(),
                retries: progress.retries(),
            }));
        });
        Ticket {
            id: task,
            abort: join.abort_handle(),
        }
    }

    /// The next finished event, if any.
    pub(crate) fn try_next(&mut self) -> Option<TaskEvent> {
        self.receiver.try_recv().ok()
    }
}

impl Drop for LlmBridge {
    fn drop(&mut self) {
        if let RuntimeSource::Owned(runtime) = &mut self.source
            && let Some(runtime) = runtime.take()
        {
            // Requests still in flight are abandoned rather than waited for, so
            // closing the game never hangs on a slow server.
            runtime.shutdown_background();
        }
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
