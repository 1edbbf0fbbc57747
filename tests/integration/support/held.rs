//! A reply backend a test can hold mid-stream: it streams some pieces, then waits
//! until the test releases it, like a slow model in the middle of a sentence.
//! Requests with no held step queued are echoed at once, streamed word by word, so
//! two NPCs answered concurrently still get replies a test can tell apart.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bevy_npc_memory::backends::{
    BackendFuture, ChatBackend, ChatRequest, ChatResponse, Progress, Purpose, stream_words,
};

/// Lets a held reply go on. Dropping it does not release it.
pub struct Gate(async_channel::Sender<()>);

impl Gate {
    fn new() -> (Self, async_channel::Receiver<()>) {
        let (sender, receiver) = async_channel::bounded(1);
        (Self(sender), receiver)
    }

    /// Lets every waiter on this gate go on.
    pub fn release(&self) {
        self.0.close();
    }
}

struct HeldStep {
    start: async_channel::Receiver<()>,
    pieces: Vec<String>,
    finish: async_channel::Receiver<()>,
    rest: String,
    late: Option<String>,
}

/// The gates of one held reply.
pub struct Held {
    /// Holds the reply before its first piece: the NPC is thinking.
    pub start: Gate,
    /// Holds it after the pieces: the NPC is mid-sentence.
    pub finish: Gate,
}

#[derive(Clone, Default)]
pub struct HeldBackend {
    steps: Arc<Mutex<VecDeque<HeldStep>>>,
    requests: Arc<Mutex<Vec<ChatRequest>>>,
    late_sent: Arc<AtomicUsize>,
}

/// What the backend answers to `line` when no held step is queued.
pub fn echo(npc: &str, line: &str) -> String {
    format!("{npc} heard: {line}")
}

impl HeldBackend {
    pub fn new() -> Self {
        Self::default()
    }

    /// The next reply streams `pieces` once `start` is released, waits for
    /// `finish`, then answers with the pieces and `rest` joined.
    pub fn push_held(&self, pieces: &[&str], rest: &str) -> Held {
        self.push_step(pieces, rest, None)
    }

    /// Like [`push_held`](Self::push_held), and when `finish` is released the
    /// backend's own thread also streams `late`, even if the request was cancelled
    /// meanwhile: a worker that outlives the request it served.
    pub fn push_held_with_late_piece(&self, pieces: &[&str], rest: &str, late: &str) -> Held {
        self.push_step(pieces, rest, Some(late.to_owned()))
    }

    fn push_step(&self, pieces: &[&str], rest: &str, late: Option<String>) -> Held {
        let (start, start_rx) = Gate::new();
        let (finish, finish_rx) = Gate::new();
        self.steps.lock().unwrap().push_back(HeldStep {
            start: start_rx,
            pieces: pieces.iter().map(|p| (*p).to_owned()).collect(),
            finish: finish_rx,
            rest: rest.to_owned(),
            late,
        });
        Held { start, finish }
    }

    /// How many late pieces the backend's threads have handed to the plugin.
    pub fn late_pieces_sent(&self) -> usize {
        self.late_sent.load(Ordering::SeqCst)
    }

    /// The reply requests received so far, in order.
    pub fn reply_requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl ChatBackend for HeldBackend {
    fn name(&self) -> &str {
        "held"
    }

    fn complete(&self, request: ChatRequest, progress: Progress) -> BackendFuture {
        if request.purpose() == Purpose::Summary {
            return Box::pin(async { Ok(ChatResponse::text("A summary.")) });
        }
        let line = request
            .messages
            .last()
            .map(|m| m.content.to_string())
            .unwrap_or_default();
        let reply = echo(request.npc.as_str(), &line);
        self.requests.lock().unwrap().push(request);
        let Some(step) = self.steps.lock().unwrap().pop_front() else {
            return Box::pin(async move {
                stream_words(&reply, &progress);
                Ok(ChatResponse::text(reply))
            });
        };
        if let Some(late) = step.late.clone() {
            let finish = step.finish.clone();
            let progress = progress.clone();
            let sent = self.late_sent.clone();
            std::thread::spawn(move || {
                let _ = finish.recv_blocking();
                progress.delta(&late);
                sent.fetch_add(1, Ordering::SeqCst);
            });
        }
        Box::pin(async move {
            let _ = step.start.recv().await;
            for piece in &step.pieces {
                progress.delta(piece);
            }
            let _ = step.finish.recv().await;
            let mut text = step.pieces.concat();
            text.push_str(&step.rest);
            Ok(ChatResponse::text(text))
        })
    }
}
