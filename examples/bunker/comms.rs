//! The Comms panel: the conversation with the chosen NPC, streamed replies,
//! the line input and the shift change button, and the NPCs' talk at the shift
//! change, each line by its speaker.

use bevy::prelude::*;
use bevy_egui::{EguiContexts, egui};
use bevy_npc_memory::memory::{ActionStep, ChatMessage, Origin};
use bevy_npc_memory::prelude::*;

use bevy_npc_memory::conversations::{
    ConversationEnd, ConversationEnded, ConversationLine, StartConversation,
};
use bevy_npc_memory::dialogue::NpcReplyDelta;
use bevy_npc_memory::dialogue::NpcRequests;
use bevy_npc_memory::knowledge::KnowledgeShared;
use bevy_npc_memory::knowledge::ShareKnowledge;

use crate::script::{ECHO, ROBOT};
use crate::{Chat, Scene};

pub(crate) fn follow_replies(
    mut chat: ResMut<Chat>,
    mut deltas: MessageReader<NpcReplyDelta>,
    mut replies: MessageReader<NpcReplied>,
    mut failures: MessageReader<NpcReplyFailed>,
) {
    for delta in deltas.read() {
        chat.streaming
            .entry(delta.npc.clone())
            .or_default()
            .push_str(&delta.delta);
    }
    for reply in replies.read() {
        chat.streaming.remove(&reply.npc);
        chat.errors.remove(&reply.npc);
    }
    for failure in failures.read() {
        chat.streaming.remove(&failure.npc);
        chat.errors
            .insert(failure.npc.clone(), failure.error.to_string());
    }
}

/// Tells the panel what the last shift change passed on.
pub(crate) fn follow_briefing(mut chat: ResMut<Chat>, mut shared: MessageReader<KnowledgeShared>) {
    let learned: usize = shared.read().map(|told| told.learned.len()).sum();
    if learned > 0 {
        chat.briefing = Some(format!(
            "Shift change: RUSTY-3 briefed ECHO-7 on {learned} thing(s). Secrets stay with RUSTY-3."
        ));
    }
}

/// Follows the NPCs' talk: each line goes to the log output by its speaker (the
/// comms log shows it from the listeners' memories); when the shift change's
/// talk ends, RUSTY-3 briefs ECHO-7.
pub(crate) fn follow_talk(
    mut chat: ResMut<Chat>,
    contexts: Res<ContextMemoryManager>,
    logs: Res<ChatLogs>,
    mut lines: MessageReader<ConversationLine>,
    mut ended: MessageReader<ConversationEnded>,
    mut share: MessageWriter<ShareKnowledge>,
) {
    let name = |npc: &NpcId| {
        contexts
            .get(npc)
            .map_or(npc.to_string(), |c| c.persona().name.clone())
    };
    for line in lines.read() {
        info!("comms: {}: {}", name(&line.speaker), line.text);
    }
    for end in ended.read() {
        let who: Vec<String> = end.participants.iter().map(name).collect();
        chat.talk = Some(match &end.reason {
            ConversationEnd::Refused(why) => format!("No talk: {why}."),
            _ => format!("{} talked ({} line(s)).", who.join(" and "), end.lines),
        });
        let due = chat.shift.briefing_due();
        let tellings = chat.shift.talk_ended(end, &logs);
        if due && !chat.shift.briefing_due() {
            // Replaced by `follow_briefing` when RUSTY-3 passes something on.
            chat.briefing = Some("Shift change: RUSTY-3 had nothing new to pass on.".into());
        }
        share.write_batch(tellings);
    }
}

/// How the comms log shows one entry: who said it, or where the NPC got it.
fn comms_line(message: &ChatMessage, npc_name: &str) -> String {
    match (&message.origin, message.role) {
        (Origin::Heard(hearsay), _) => {
            let teller = hearsay.teller().map_or("someone", |t| t.name.as_str());
            format!("[{teller} told {npc_name}] {}", message.content)
        }
        (Origin::Witnessed { .. }, _) => format!("[{npc_name} saw] {}", message.content),
        (Origin::Acted(note), _) => match note.step {
            ActionStep::Called => format!("[{npc_name} uses {} {}]", note.name, message.content),
            _ => format!("[{} {:?}] {}", note.name, note.step, message.content),
        },
        (Origin::SaidPrivately, Role::User) => format!("You (secret): {}", message.content),
        (_, Role::User) => match &message.speaker {
            Some(speaker) if speaker.as_npc().is_some() => {
                format!("{}: {}", speaker.name(), message.content)
            }
            // The scene's cue that opens a talk.
            Some(speaker) if !speaker.is_player() => {
                format!("[{}] {}", speaker.name(), message.content)
            }
            _ => format!("You: {}", message.content),
        },
        _ => format!("{npc_name}: {}", message.content),
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn chat_panel(
    mut egui: EguiContexts,
    mut chat: ResMut<Chat>,
    scene: Res<Scene>,
    logs: Res<ChatLogs>,
    contexts: Res<ContextMemoryManager>,
    conversations: Res<NpcRequests>,
    mut talk: MessageWriter<TalkToNpc>,
    mut start: MessageWriter<StartConversation>,
) -> Result {
    let ctx = egui.ctx_mut()?;
    match &scene.backend {
        None => {
            egui::Area::new("offline".into()).fixed_pos([20.0, 8.0]).show(ctx, |ui| {
                ui.colored_label(egui::Color32::from_rgb(255, 120, 90), "OFFLINE: no language model connected, replies are placeholders (run scripts/fetch-model.sh, or set DEEPSEEK_API_KEY, OPENAI_API_KEY or LLAMA_SERVER_URL)");
            });
        }
        Some(backend) => {
            egui::Area::new("backend".into())
                .fixed_pos([20.0, 8.0])
                .show(ctx, |ui| {
                    ui.colored_label(
                        egui::Color32::from_rgb(150, 200, 160),
                        format!("Backend: {backend}"),
                    );
                });
        }
    }
    egui::Window::new("Comms")
        .default_pos([20.0, 400.0])
        .default_size([780.0, 300.0])
        .show(ctx, |ui| {
            ui.horizontal(|ui| {
                ui.label("Talk to");
                for (id, name) in [(ECHO, "ECHO-7"), (ROBOT, "RUSTY-3")] {
                    let npc = NpcId::new(id);
                    if ui.selectable_label(chat.talking_to == npc, name).clicked() {
                        chat.talking_to = npc;
                    }
                }
            });
            let npc = chat.talking_to.clone();
            let name = contexts
                .get(&npc)
                .map_or(npc.to_string(), |c| c.persona().name.clone());
            egui::ScrollArea::vertical()
                .max_height(190.0)
                .stick_to_bottom(true)
                .show(ui, |ui| {
                    for message in logs.get(&npc).map(|l| l.messages()).unwrap_or_default() {
                        ui.label(comms_line(message, &name));
                    }
                    match chat.streaming.get(&npc) {
                        Some(partial) => {
                            ui.label(format!("{name}: {partial}▌"));
                        }
                        None if conversations.reply_in_flight(&npc) => {
                            ui.weak(format!("{name} is thinking…"));
                        }
                        None => {}
                    }
                    if let Some(error) = chat.errors.get(&npc) {
                        ui.colored_label(egui::Color32::LIGHT_RED, format!("No answer: {error}"));
                    }
                });
            ui.horizontal(|ui| {
                let field = ui.add(
                    egui::TextEdit::singleline(&mut chat.input)
                        .desired_width(640.0)
                        .hint_text("Say something…"),
                );
                let enter = field.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
                let send = ui.button("Send").clicked() || enter;
                let secret = ui
                    .button("Send secretly")
                    .on_hover_text("The NPC answers, but never passes this line on")
                    .clicked();
                if (send || secret) && !chat.input.trim().is_empty() {
                    let line = TalkToNpc::new(npc.clone(), std::mem::take(&mut chat.input));
                    talk.write(if secret { line.privately() } else { line });
                    field.request_focus();
                }
            });
            ui.horizontal(|ui| {
                if ui
                    .button("Shift change")
                    .on_hover_text(
                        "ECHO-7 and RUSTY-3 talk about their shifts, then RUSTY-3 briefs ECHO-7 on what you told it",
                    )
                    .clicked()
                {
                    let shift_talk = chat.shift.start();
                    start.write(shift_talk);
                    chat.talk = Some("ECHO-7 and RUSTY-3 are talking…".into());
                    chat.briefing = None;
                }
                if let Some(talk) = &chat.talk {
                    ui.weak(talk);
                }
                if let Some(briefing) = &chat.briefing {
                    ui.weak(briefing);
                }
            });
        });
    Ok(())
}
