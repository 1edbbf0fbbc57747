//! The wording of a summary request: the instruction, the previous summary or the
//! segments to merge, and the transcript, one line per message.

use std::sync::Arc;

use super::{SummaryInput, SummaryJob};
use crate::memory::context::ContextMemory;
use crate::memory::context::SummaryKind;
use crate::memory::facts::{
    facts_instruction, indexed_transcript, notes_instruction, speakers_instruction,
};
use crate::memory::log::ChatLog;
use crate::memory::message::{ChatMessage, PromptMessage, Role};
use crate::memory::persona::PersonaPrompt;
use crate::memory::text::push_one_line;

/// The request for the job in flight: the instruction, then the body (previous
/// summary and transcript, or the segments to merge). No persona, no chat history.
pub(crate) fn job_for_in_flight(log: &ChatLog, context: &ContextMemory) -> SummaryJob {
    {
        let job = context.in_flight.as_ref().expect("a job is in flight");
        let persona = &context.persona;
        let style = &persona.style;
        let wants_facts = context.features.facts.enabled && job.kind == SummaryKind::Fold;
        let (messages, segments) = match &job.kind {
            SummaryKind::Compact { segments } => {
                let texts: Vec<Arc<str>> = context.segments.list()[segments.clone()]
                    .iter()
                    .map(|s| s.text.clone())
                    .collect();
                (&[][..], texts)
            }
            SummaryKind::Fold => (log.range(job.covered.clone()), Vec::new()),
        };
        let (instruction, body) = match &job.kind {
            SummaryKind::Compact { .. } => {
                let mut body = style.segments_heading().to_owned();
                for text in &segments {
                    body.push_str("\n- ");
                    body.push_str(text);
                }
                (style.compaction_instruction().to_owned(), body)
            }
            SummaryKind::Fold if context.features.segments.enabled => (
                style.segment_instruction().to_owned(),
                format!(
                    "{}\n{}",
                    style.transcript_heading,
                    numbered_transcript(persona, messages, wants_facts)
                ),
            ),
            SummaryKind::Fold => {
                let previous = if context.summary.is_empty() {
                    style.no_previous.as_str()
                } else {
                    &context.summary
                };
                let body = format!(
                    "{}\n{}\n\n{}\n{}",
                    style.previous_heading,
                    previous,
                    style.transcript_heading,
                    numbered_transcript(persona, messages, wants_facts)
                );
                (style.instruction.clone(), body)
            }
        };
        let instruction = if wants_facts {
            let mut instruction = format!("{instruction}\n\n{}", facts_instruction(style.language));
            let features = &context.features;
            if features.facts.notes && features.recall.enabled {
                instruction.push('\n');
                instruction.push_str(notes_instruction(style.language));
            }
            // Only when another speaker is in this transcript: a single-player
            // request says nothing of speakers.
            if messages.iter().any(|m| m.speaker.is_some()) {
                instruction.push('\n');
                instruction.push_str(speakers_instruction(style.language));
            }
            instruction
        } else {
            instruction
        };
        SummaryJob {
            id: job.id,
            kind: job.kind.clone(),
            covered: job.covered.clone(),
            attempt: job.attempt,
            trigger: job.trigger,
            messages: vec![
                PromptMessage::new(Role::System, instruction),
                PromptMessage::new(Role::User, body),
            ],
            input: SummaryInput {
                // A segment stands alone, so it is written without the previous one.
                previous_summary: if context.features.segments.enabled {
                    Arc::from("")
                } else {
                    context.summary.clone()
                },
                transcript: messages.to_vec(),
                player_name: style.player_name.clone(),
                npc_name: persona.name.clone(),
                segments,
                wants_facts,
                covered: job.covered.clone(),
            },
        }
    }
}

/// The transcript; numbered (and one line per message) when the model must cite
/// evidence for fact updates.
fn numbered_transcript(
    persona: &PersonaPrompt,
    messages: &[ChatMessage],
    numbered: bool,
) -> String {
    if numbered {
        indexed_transcript(messages, &persona.style.player_name, &persona.name)
    } else {
        transcript(persona, messages)
    }
}

/// The transcript of messages as the summarizer reads it, one `Speaker: text` line each.
fn transcript(persona: &PersonaPrompt, messages: &[ChatMessage]) -> String {
    let mut out = String::new();
    for message in messages {
        let (speaker, text) = message.transcript_parts(&persona.style.player_name, &persona.name);
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&speaker);
        out.push_str(": ");
        // One line per message: a line break inside a message would let it forge a
        // turn of another speaker, or the summary label, for the summarizer to copy.
        push_one_line(&mut out, &text);
    }
    out
}
