//! The strategies compared: what each sends for a question.

use std::collections::BTreeMap;
use std::time::Instant;

use bevy_npc_memory::memory::{LogIndex, PromptMessage, Role, estimate_prompt_tokens};
use bevy_npc_memory_bench::strategies::full_history;
use serde_json::{Value, json};

use crate::replay::Replay;

/// How a strategy builds the context for a question. One small type each.
pub(crate) trait Strategy {
    /// The messages sent, each with the log index it came from (None: not a log message).
    fn context(&self, replay: &Replay, question: &str) -> Vec<(Option<LogIndex>, PromptMessage)>;

    /// The log indices whose messages were sent word for word, and the prompt, when
    /// the strategy builds and budgets its prompt itself (recalled messages ride
    /// inside the system message, so they have no message of their own).
    fn assembled(
        &self,
        _replay: &Replay,
        _question: &str,
    ) -> Option<(Vec<LogIndex>, Vec<PromptMessage>)> {
        None
    }

    /// Microseconds each prompt assembly took (recall query included), if measured.
    fn assembly_micros(&self) -> Vec<f64> {
        Vec::new()
    }

    /// Mean tokens and items per prompt section, if the strategy has sections.
    fn section_means(&self) -> Value {
        Value::Null
    }
}

/// Every message: the upper bound, and the cost of sending everything.
pub(crate) struct Full;
/// The system prompt and the last `window - 1` messages, as the original design's L1 alone.
pub(crate) struct WindowOnly;
/// L1 + L3 as the plugin runs them: persona + summary, then the window.
pub(crate) struct Summary;

impl Strategy for Full {
    fn context(&self, replay: &Replay, question: &str) -> Vec<(Option<LogIndex>, PromptMessage)> {
        let log = replay.memory.log.messages().iter().map(|m| Some(m.index));
        let mut context: Vec<_> = std::iter::once(None)
            .chain(log)
            .zip(full_history(&replay.memory))
            .collect();
        context.push((None, PromptMessage::new(Role::User, question)));
        context
    }
}

impl Strategy for WindowOnly {
    fn context(&self, replay: &Replay, question: &str) -> Vec<(Option<LogIndex>, PromptMessage)> {
        let messages = replay.memory.log.messages();
        // The question takes one place in the window, the system prompt another.
        let keep = replay.window.saturating_sub(2).min(messages.len());
        let mut context = vec![(
            None,
            PromptMessage::new(Role::System, replay.memory.context.persona().text.clone()),
        )];
        context.extend(
            messages[messages.len() - keep..]
                .iter()
                .map(|m| (Some(m.index), m.to_prompt())),
        );
        context.push((None, PromptMessage::new(Role::User, question)));
        context
    }
}

impl Strategy for Summary {
    fn context(&self, replay: &Replay, question: &str) -> Vec<(Option<LogIndex>, PromptMessage)> {
        // The exact prompt the plugin would send: record the line on a copy, as the
        // plugin does before a reply request, and read the window back.
        let mut memory = replay.memory.clone();
        let next = memory.log.next_index();
        let mut layers = memory.layers();
        layers.record(Role::User, question, replay.last_timestamp);
        let window = &memory.window;
        let system = bevy_npc_memory::memory::preview_prompt(&memory.log, window, &memory.context)
            .messages
            .swap_remove(0);
        let mut context = vec![(None, system)];
        context.extend(window.messages(&memory.log).iter().map(|m| {
            (
                if m.index == next { None } else { Some(m.index) },
                m.to_prompt(),
            )
        }));
        context
    }
}

/// Every feature beyond basic mode, as the plugin runs them: the assembled, budgeted
/// prompt with recalled messages, pinned facts and summary segments.
#[derive(Default)]
pub(crate) struct Layered {
    micros: std::cell::RefCell<Vec<f64>>,
    /// Per section kind: summed tokens, summed items sent, prompts.
    sections: std::cell::RefCell<BTreeMap<String, (f64, f64, f64)>>,
}

impl Strategy for Layered {
    fn context(&self, replay: &Replay, question: &str) -> Vec<(Option<LogIndex>, PromptMessage)> {
        let (_, messages) = self.assembled(replay, question).unwrap_or_default();
        messages.into_iter().map(|m| (None, m)).collect()
    }

    fn assembled(
        &self,
        replay: &Replay,
        question: &str,
    ) -> Option<(Vec<LogIndex>, Vec<PromptMessage>)> {
        let mut memory = replay.memory.clone();
        let mut layers = memory.layers();
        let asked = layers
            .record(Role::User, question, replay.last_timestamp)
            .index;
        // Best of three, as the recall bench times queries: on a shared machine
        // a single timing's tail is mostly other processes. Assembly reads the
        // memory only, so the three prompts are the same.
        let mut fastest = f64::INFINITY;
        let mut prompt = None;
        for _ in 0..3 {
            let started = Instant::now();
            let assembled = layers.assemble();
            fastest = fastest.min(started.elapsed().as_secs_f64() * 1e6);
            prompt = Some(assembled);
        }
        let prompt = prompt.expect("assembled three times");
        self.micros.borrow_mut().push(fastest);
        let mut sections = self.sections.borrow_mut();
        for section in &prompt.sections {
            let entry = sections.entry(format!("{:?}", section.kind)).or_default();
            entry.0 += section.tokens as f64;
            entry.1 += section.included.len() as f64;
            entry.2 += 1.0;
        }
        let sent = prompt.log_indices().filter(|&i| i != asked).collect();
        Some((sent, prompt.messages.clone()))
    }

    fn assembly_micros(&self) -> Vec<f64> {
        self.micros.borrow().clone()
    }

    fn section_means(&self) -> Value {
        let sections = self.sections.borrow();
        let means = sections
            .iter()
            .map(|(kind, (tokens, items, n))| {
                (
                    kind.clone(),
                    json!({"tokens": tokens / n, "items": items / n}),
                )
            })
            .collect::<serde_json::Map<_, _>>();
        Value::Object(means)
    }
}

/// Drops the oldest log messages until the context fits the budget.
pub(crate) fn apply_budget(
    mut context: Vec<(Option<LogIndex>, PromptMessage)>,
    budget: Option<usize>,
) -> Vec<(Option<LogIndex>, PromptMessage)> {
    let Some(budget) = budget else { return context };
    let tokens = |c: &[(Option<LogIndex>, PromptMessage)]| {
        estimate_prompt_tokens(&c.iter().map(|(_, m)| m.clone()).collect::<Vec<_>>())
    };
    while tokens(&context) > budget {
        match context.iter().position(|(index, _)| index.is_some()) {
            Some(oldest) => {
                context.remove(oldest);
            }
            None => break,
        }
    }
    context
}
