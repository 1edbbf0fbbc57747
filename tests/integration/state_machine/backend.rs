//! The stage: a backend that answers as each step asks and records every request.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bevy_npc_memory::backends::BackendError;
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::{BackendFuture, ChatRequest, ChatResponse, Progress, stream_words};
use bevy_npc_memory::memory::ActionCall;
use bevy_npc_memory::memory::PromptMessage;
use bevy_npc_memory::prelude::*;

/// One answer the stage gives.
#[derive(Clone, Debug)]
pub enum Answer {
    Say(String),
    Fail,
    Hang,
    /// These words stream, then nothing more comes.
    Stall(String),
    Call {
        action: &'static str,
        arguments: String,
    },
}

#[derive(Default)]
struct Script {
    answers: HashMap<NpcId, VecDeque<Answer>>,
    requests: Vec<ChatRequest>,
    /// Replies the stage gave back, per NPC: how many, and how many of them failed
    /// or said nothing.
    returned: HashMap<NpcId, (u64, u64)>,
}

#[derive(Clone, Default)]
pub struct Stage(Arc<Mutex<Script>>);

/// The tags (`p7`, `s7`, `r:p7`) in `text`, without their brackets.
pub fn tags(text: &str) -> Vec<&str> {
    bracketed(text, |tag| {
        let plain = tag.strip_prefix("r:").unwrap_or(tag);
        numbered(plain, ['p', 's', 'w'])
    })
}

/// Whether `mark` is one of the `kinds` letters and a number (`s7`).
pub fn numbered<const N: usize>(mark: &str, kinds: [char; N]) -> bool {
    mark.len() > 1 && mark.starts_with(kinds) && mark[1..].bytes().all(|b| b.is_ascii_digit())
}

/// What `text` holds in `⟦…⟧` brackets that `keep` accepts, without the brackets.
pub fn bracketed(text: &str, keep: impl Fn(&str) -> bool) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('⟦') {
        rest = &rest[open + '⟦'.len_utf8()..];
        let Some(close) = rest.find('⟧') else { break };
        let mark = &rest[..close];
        if keep(mark) {
            found.push(mark);
        }
        rest = &rest[close..];
    }
    found
}

fn last_line(messages: &[PromptMessage]) -> &str {
    messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map_or("", |m| m.content.as_ref())
}

impl Stage {
    fn lock(&self) -> MutexGuard<'_, Script> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What `npc`'s next requests get, in order; words with no tags once these run out.
    pub fn answer(&self, npc: &NpcId, answers: Vec<Answer>) {
        self.lock().answers.insert(npc.clone(), answers.into());
    }

    /// Every request since the last call.
    pub fn take_requests(&self) -> Vec<ChatRequest> {
        std::mem::take(&mut self.lock().requests)
    }

    /// The replies the stage has given back to `npc` (a hung one never comes
    /// back), and how many of them failed or said nothing.
    pub fn returned_replies(&self, npc: &NpcId) -> (u64, u64) {
        self.lock().returned.get(npc).copied().unwrap_or_default()
    }
}

impl ChatBackend for Stage {
    fn name(&self) -> &str {
        "stage"
    }

    fn complete(&self, request: ChatRequest, progress: Progress) -> BackendFuture {
        let answer = match request.purpose() {
            Purpose::Summary => {
                // A summary repeats every tag it was shown, so a summary that
                // reached another NPC would show.
                let seen: Vec<String> = request
                    .messages
                    .iter()
                    .flat_map(|m| tags(&m.content).into_iter().map(|t| format!("⟦{t}⟧")))
                    .take(24)
                    .collect();
                let summary = format!("Noted {}", seen.join(" "));
                Answer::Say(match notes_for(&request) {
                    // Asked for notes: a JSON reply with one on the first line
                    // folded, tagged so that any prompt it reached would show.
                    Some(first) => serde_json::json!({
                        "summary": summary,
                        "facts": [],
                        "notes": [{"text": format!("{NOTE_TAG} note on {first}"), "lines": [first]}],
                    })
                    .to_string(),
                    None => summary,
                })
            }
            Purpose::Reply => {
                let mut script = self.lock();
                let next = script
                    .answers
                    .get_mut(&request.npc)
                    .and_then(VecDeque::pop_front);
                let echo: Vec<String> = tags(last_line(&request.messages))
                    .iter()
                    .filter(|t| !t.starts_with("r:"))
                    .map(|t| format!("⟦r:{t}⟧"))
                    .collect();
                match next.unwrap_or(Answer::Say(String::new())) {
                    Answer::Say(text) => Answer::Say(format!("{text} {}", echo.join(" "))),
                    // The tags first, so that the part shown carries them.
                    Answer::Stall(text) => Answer::Stall(format!("cut {} {text}", echo.join(" "))),
                    other => other,
                }
            }
        };
        let returned =
            (request.purpose() == Purpose::Reply).then(|| (self.clone(), request.npc.clone()));
        self.lock().requests.push(request);
        Box::pin(async move {
            if let Some((stage, npc)) = returned {
                let failed = match &answer {
                    Answer::Say(text) => text.trim().is_empty(),
                    Answer::Fail => true,
                    Answer::Hang | Answer::Stall(_) | Answer::Call { .. } => false,
                };
                if !matches!(answer, Answer::Hang | Answer::Stall(_)) {
                    let mut script = stage.lock();
                    let count = script.returned.entry(npc).or_default();
                    count.0 += 1;
                    count.1 += u64::from(failed);
                }
            }
            match answer {
                Answer::Say(text) => {
                    stream_words(&text, &progress);
                    Ok(ChatResponse::text(text))
                }
                Answer::Fail => Err(BackendError::Other("the stage is down".into())),
                Answer::Hang => std::future::pending().await,
                Answer::Stall(text) => {
                    // A piece now and then, as a model streams: the game's
                    // interrupt lands wherever the stream has got to.
                    for piece in text.split_inclusive(' ') {
                        progress.delta(piece);
                        async_io::Timer::after(std::time::Duration::from_millis(2)).await;
                    }
                    std::future::pending().await
                }
                Answer::Call { action, arguments } => {
                    // Ids never repeat, as a model's do not: a game's late answer
                    // names one call only.
                    static NEXT: std::sync::atomic::AtomicU64 =
                        std::sync::atomic::AtomicU64::new(1);
                    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    Ok(ChatResponse::calls(
                        "",
                        vec![ActionCall::new(format!("call-{id}"), action, arguments)],
                    ))
                }
            }
        })
    }
}

/// What every note the stage writes holds: no prompt may ever show it.
pub const NOTE_TAG: &str = "⟦note⟧";

/// The first line a facts summary folds, when its instruction asks for notes.
fn notes_for(request: &ChatRequest) -> Option<u64> {
    let instruction = &request.messages.first()?.content;
    if !instruction.contains(r#""notes""#) {
        return None;
    }
    let body = &request.messages.get(1)?.content;
    body.lines().find_map(|line| {
        let number = line.strip_prefix('#')?.split(' ').next()?;
        number.parse().ok()
    })
}
