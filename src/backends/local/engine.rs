//! The model with its one context: one request at a time, the prompt fitted to the
//! context and read from the first token the context does not hold yet, then the
//! reply generated.

use std::collections::HashSet;
use std::num::NonZeroU32;
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;

use super::actions::{self, ActionPlan};
use super::config::{LocalLlmConfig, MaxTokensPolicy, SummaryForm};
use super::generation::{Calls, Generation, Limits, sampler};
use super::loading::Loaded;
use super::oneshot;
use super::reuse::{Owner, PromptReuse};
use super::segments::{Segment, Sentinels, chatml, content_of};
use super::status::GenerationStats;
use super::template::{Prompt, StopScanner, Utf8Buffer, compact_questions, compose_compact};

use crate::backends::call_object;
use crate::backends::{BackendError, ChatRequest, ChatResponse, Progress, Purpose, RequestKind};
use crate::memory::{PromptMessage, Role};

/// One request waiting for the worker.
pub(crate) struct Job {
    pub(crate) request: ChatRequest,
    pub(crate) progress: Progress,
    /// Closed when the caller's future was dropped: the NPC's memory was cleared,
    /// the request timed out, or the game closed. The worker then skips or stops
    /// the job.
    pub(crate) reply: oneshot::Sender<Result<ChatResponse, BackendError>>,
}

/// The model with its one context, ready to answer.
pub(super) struct Engine<'m> {
    loaded: &'m Loaded,
    pub(super) context: LlamaContext<'m>,
    config: LocalLlmConfig,
    name: String,
    pub(super) n_ctx: u32,
    batch: LlamaBatch<'static>,
    warned_template: bool,
    /// Actions already warned about as not offered, so each warns once.
    warned_actions: HashSet<String>,
    /// What the context holds, so a request reads only what is new.
    pub(super) reuse: PromptReuse,
}

impl<'m> Engine<'m> {
    pub(super) fn new(
        loaded: &'m Loaded,
        config: &LocalLlmConfig,
        name: String,
    ) -> Result<Self, String> {
        // A context larger than the model was trained for only produces nonsense.
        let trained = loaded.model.n_ctx_train().max(64);
        let n_ctx = config.context_size.get().min(trained);
        let threads = i32::try_from(config.threads.max(1)).unwrap_or(1);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(n_ctx.min(512))
            .with_n_ubatch(n_ctx.min(512))
            .with_n_threads(threads)
            .with_n_threads_batch(threads);
        let context = loaded
            .model
            .new_context(loaded.llama, params)
            .map_err(|error| {
                format!(
                    "could not create a {n_ctx}-token context for {}: {error}",
                    config.model_path.display()
                )
            })?;
        let batch_size = context.n_batch() as usize;
        Ok(Self {
            loaded,
            context,
            config: config.clone(),
            name,
            n_ctx,
            batch: LlamaBatch::new(batch_size, 1),
            warned_template: false,
            warned_actions: HashSet::new(),
            reuse: PromptReuse::new(config.prompt_cache_bytes),
        })
    }

    pub(super) fn answer(
        &mut self,
        job: &Job,
    ) -> Result<(ChatResponse, GenerationStats), BackendError> {
        let request = &job.request;
        // The compact form answers plain folds only: a request for fact JSON or a
        // compaction of segments needs the request's own instructions.
        if let RequestKind::Summary(input) = &request.kind
            && self.config.summary_form == SummaryForm::Compact
            && !input.wants_facts
            && input.segments.is_empty()
        {
            return self.compact_summary(job, input);
        }
        let summary = request.purpose() == Purpose::Summary;
        let plan = self.action_plan(request);
        let limits = if summary {
            Limits {
                max_tokens: self.config.summary_max_tokens,
                temperature: self.config.summary_temperature,
                stops: self.config.summary_stop.clone(),
                stream: false,
                calls: Calls::None,
            }
        } else {
            Limits {
                max_tokens: self.config.max_tokens,
                temperature: self.config.temperature,
                stops: self.config.stop.clone(),
                stream: job.progress.is_streaming(),
                calls: match &plan {
                    None => Calls::None,
                    Some((plan, _)) if plan.required => Calls::Only,
                    Some(_) => Calls::Maybe,
                },
            }
        };
        let (prompt, grammar) = match plan {
            Some((plan, grammar)) => (plan.prompt, Some(grammar)),
            None => (Prompt::plain(&request.messages), None),
        };
        let done = self.generate(job, &prompt, &limits, grammar)?;
        if limits.calls != Calls::None && call_object::is_call(&done.text) {
            return self.call(request, &done);
        }
        if done.finish == "length" {
            tracing::warn!(
                target: crate::trace::TELEMETRY_TARGET,
                backend = %self.name, npc = %request.npc, purpose = request.purpose().as_str(),
                max_tokens = done.max_tokens,
                "generation stopped at the token limit before the model finished"
            );
            if self.config.on_max_tokens == MaxTokensPolicy::Fail {
                return Err(BackendError::MaxTokens {
                    backend: self.name.clone(),
                    max_tokens: done.max_tokens,
                });
            }
        }
        let stats = done.stats(request.purpose());
        Ok((done.response(done.text.clone()), stats))
    }

    /// The action plan of a reply request, with its grammar sampler, or `None` to
    /// answer in words only. A grammar llama.cpp refuses is a bug of ours: the
    /// NPC then answers in words rather than not at all.
    fn action_plan(&mut self, request: &ChatRequest) -> Option<(ActionPlan, LlamaSampler)> {
        if request.purpose() != Purpose::Reply {
            return None;
        }
        let plan = actions::plan(
            &request.messages,
            &request.actions,
            self.config.action_choice,
            &mut self.warned_actions,
            &self.name,
        )?;
        match LlamaSampler::grammar(&self.loaded.model, &plan.grammar, "root") {
            Ok(grammar) => Some((plan, grammar)),
            Err(error) => {
                tracing::error!(
                    target: crate::trace::TELEMETRY_TARGET,
                    backend = %self.name, grammar = %plan.grammar,
                    "llama.cpp refused the actions' grammar ({error}); answering in words"
                );
                None
            }
        }
    }

    /// The response for a generation that is a call object.
    fn call(
        &self,
        request: &ChatRequest,
        done: &Generation,
    ) -> Result<(ChatResponse, GenerationStats), BackendError> {
        let call = call_object::parse_call(&done.text, "local").map_err(|reason| {
            if done.finish == "length" {
                BackendError::MaxTokens {
                    backend: self.name.clone(),
                    max_tokens: done.max_tokens,
                }
            } else {
                BackendError::Malformed {
                    backend: self.name.clone(),
                    reason,
                }
            }
        })?;
        tracing::debug!(
            target: crate::trace::TELEMETRY_TARGET,
            backend = %self.name, npc = %request.npc, action = %call.name, "the model called an action"
        );
        let mut response = done.response(String::new());
        response.action_calls = vec![call];
        response.finish_reason = Some("tool_calls".to_owned());
        Ok((response, done.stats(request.purpose())))
    }

    /// The compact summary: one short, greedy answer per field, merged into the
    /// previous summary (see `template::compact_questions`).
    fn compact_summary(
        &mut self,
        job: &Job,
        input: &crate::memory::SummaryInput,
    ) -> Result<(ChatResponse, GenerationStats), BackendError> {
        let mut stops = vec!["\n".to_owned()];
        stops.extend(self.config.summary_stop.iter().cloned());
        let limits = Limits {
            max_tokens: self.config.summary_max_tokens.min(24),
            temperature: self.config.summary_temperature,
            stops,
            stream: false,
            calls: Calls::None,
        };
        let mut answers = Vec::new();
        let mut total: Option<Generation> = None;
        for (field, prompt) in compact_questions(input) {
            let done = self.generate(job, &prompt, &limits, None)?;
            answers.push((field, done.text.clone()));
            total = Some(match total {
                None => done,
                Some(sum) => sum.plus(done),
            });
        }
        let total = total.expect("the form has fields");
        let content = compose_compact(input, &answers);
        let stats = total.stats(Purpose::Summary);
        let mut response = total.response(content);
        response.finish_reason = Some("stop".to_owned());
        Ok((response, stats))
    }

    /// Reads `prompt` and generates until the model ends, a stop sequence appears,
    /// or `limits.max_tokens` is reached. Streams when `limits.stream` says so,
    /// but never a call. `grammar` constrains what may be sampled.
    fn generate(
        &mut self,
        job: &Job,
        prompt: &Prompt,
        limits: &Limits,
        grammar: Option<LlamaSampler>,
    ) -> Result<Generation, BackendError> {
        let (max_tokens, limit) = self.budget(limits.max_tokens);
        let tokens = self.fit(prompt, limit)?;

        let started = Instant::now();
        let owner = Owner {
            npc: job.request.npc.clone(),
            purpose: job.request.purpose(),
        };
        let reused = self.reuse.prepare(&mut self.context, owner, &tokens);
        self.feed_prompt(&tokens, reused, &job.reply)?;
        let prompt_time = started.elapsed();

        let generating = Instant::now();
        let mut sampler = sampler(
            limits.temperature,
            self.config.seed,
            self.loaded.model.n_vocab(),
            grammar,
        );
        // Whether text goes out as it comes; `None` until the first character says
        // whether this is a call, which must not reach the player.
        let mut streaming = match limits.calls {
            _ if !limits.stream => Some(false),
            Calls::None => Some(true),
            Calls::Maybe => None,
            Calls::Only => Some(false),
        };
        let vocab = self.loaded.model.vocab();
        let mut utf8 = Utf8Buffer::default();
        let mut scanner = StopScanner::new(&limits.stops);
        let mut position = tokens.len() as i32;
        let mut generated = 0u32;
        let mut finish = "length";
        while generated < max_tokens {
            if job.reply.is_closed() {
                return Err(BackendError::Cancelled);
            }
            let token = sampler.sample(&self.context, self.batch.n_tokens() - 1);
            if vocab.is_eog(token) {
                finish = "stop";
                break;
            }
            generated += 1;
            let text = utf8.push(&vocab.token_to_piece(token, false, None));
            let shown = scanner.push(&text);
            if streaming.is_none() && !shown.is_empty() {
                streaming = Some(!call_object::is_call(shown));
            }
            if streaming == Some(true) {
                job.progress.delta(shown);
            }
            if scanner.stopped() {
                finish = "stop";
                break;
            }
            if generated == max_tokens {
                break;
            }
            self.batch.clear();
            self.batch
                .add(token, position, &[0], true)
                .map_err(|error| self.other(format!("could not queue a token: {error}")))?;
            position += 1;
            self.context
                .decode(&mut self.batch)
                .map_err(|error| self.other(format!("generation failed: {error}")))?;
            self.reuse.evaluated(&[token]);
        }
        if !scanner.stopped() {
            let rest = scanner.finish().to_owned();
            if streaming.is_none() && !rest.is_empty() {
                streaming = Some(!call_object::is_call(&rest));
            }
            if streaming == Some(true) {
                job.progress.delta(&rest);
            }
        }
        Ok(Generation {
            text: scanner.text().to_owned(),
            prompt_tokens: tokens.len(),
            cached_tokens: reused,
            generated: generated as usize,
            max_tokens,
            finish,
            prompt_time,
            generation_time: generating.elapsed(),
        })
    }

    /// Tokens for the answer and the most tokens left for the prompt. The answer's
    /// reserve never eats more than half the context.
    fn budget(&self, max_tokens: u32) -> (u32, usize) {
        let max_tokens = max_tokens.min(self.n_ctx / 2).max(1);
        (max_tokens, (self.n_ctx - max_tokens) as usize)
    }

    /// The token ids of `messages` as a reply prompt, trimmed as a reply would be.
    pub(super) fn reply_tokens(
        &mut self,
        messages: &[PromptMessage],
    ) -> Result<Vec<i32>, BackendError> {
        let (_, limit) = self.budget(self.config.max_tokens);
        let tokens = self.fit(&Prompt::plain(messages), limit)?;
        Ok(tokens.into_iter().map(|token| token.0).collect())
    }

    /// Tokens of the prompt, trimmed to `limit` the way the memory window trims:
    /// the system prompt and the newest message stay, the oldest messages leave
    /// first, and what is left starts with a player line.
    fn fit(&mut self, prompt: &Prompt, limit: usize) -> Result<Vec<LlamaToken>, BackendError> {
        let mut messages = prompt.messages.clone();
        let first = usize::from(messages.first().is_some_and(|m| m.role == Role::System));
        let mut dropped = 0;
        loop {
            let mut segments = self.segments(&messages);
            // Ours, but text all the same.
            segments.push(Segment::Content(prompt.prefill.clone()));
            let tokens = self
                .loaded
                .tokenizer
                .tokenize(&self.loaded.model.vocab(), &segments);
            if tokens.len() <= limit {
                if dropped > 0 {
                    tracing::warn!(
                        target: crate::trace::TELEMETRY_TARGET,
                        backend = %self.name, dropped, limit,
                        "the prompt did not fit the context; its oldest messages were left out"
                    );
                }
                return Ok(tokens);
            }
            if messages.len() <= first + 1 {
                return Err(BackendError::PromptTooLong {
                    backend: self.name.clone(),
                    prompt_tokens: tokens.len(),
                    limit,
                });
            }
            messages.remove(first);
            dropped += 1;
            while messages.len() > first + 1 && messages[first].role == Role::Assistant {
                messages.remove(first);
                dropped += 1;
            }
        }
    }

    /// The prompt as the chat template lays it out, with each message's text kept
    /// apart from the template's; ChatML if the template cannot be used.
    fn segments(&mut self, messages: &[PromptMessage]) -> Vec<Segment> {
        if let Some(template) = &self.loaded.template {
            match render(&self.loaded.model, template, messages) {
                Ok(segments) => return segments,
                Err(error) if !self.warned_template => {
                    self.warned_template = true;
                    tracing::warn!(
                        target: crate::trace::TELEMETRY_TARGET,
                        backend = %self.name,
                        "llama.cpp could not apply the model's chat template ({error}); using ChatML"
                    );
                }
                Err(_) => {}
            }
        }
        chatml(messages)
    }

    /// Evaluates the prompt from token `from` on (those before it are in the
    /// context already) in batches, stopping early if the caller went away.
    fn feed_prompt(
        &mut self,
        tokens: &[LlamaToken],
        from: usize,
        reply: &oneshot::Sender<Result<ChatResponse, BackendError>>,
    ) -> Result<(), BackendError> {
        let chunk = self.context.n_batch().max(1) as usize;
        let last = tokens.len().saturating_sub(1);
        let mut start = from;
        while start < tokens.len() {
            if reply.is_closed() {
                return Err(BackendError::Cancelled);
            }
            let end = (start + chunk).min(tokens.len());
            self.batch.clear();
            for (position, token) in tokens.iter().enumerate().take(end).skip(start) {
                self.batch
                    .add(*token, position as i32, &[0], position == last)
                    .map_err(|error| self.other(format!("could not queue the prompt: {error}")))?;
            }
            self.context
                .decode(&mut self.batch)
                .map_err(|error| self.other(format!("could not read the prompt: {error}")))?;
            self.reuse.evaluated(&tokens[start..end]);
            start = end;
        }
        Ok(())
    }

    fn other(&self, reason: String) -> BackendError {
        BackendError::Other(format!("{}: {reason}", self.name))
    }
}

/// Renders `template` over sentinels in place of the messages' text and cuts the
/// result at them, so the text never passes through the template as template.
pub(super) fn render(
    model: &LlamaModel,
    template: &LlamaChatTemplate,
    messages: &[PromptMessage],
) -> Result<Vec<Segment>, String> {
    let contents: Vec<String> = messages.iter().map(content_of).collect();
    let sentinels = Sentinels::new(contents.iter().map(String::as_str));
    let chat = messages
        .iter()
        .enumerate()
        .map(|(index, m)| LlamaChatMessage::new(m.role.as_str().to_owned(), sentinels.mark(index)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| error.to_string())?;
    let text = model
        .apply_chat_template(template, &chat, true)
        .map_err(|error| error.to_string())?;
    sentinels
        .split(&text, &contents)
        .ok_or_else(|| "the template did not keep the messages' places".to_owned())
}
