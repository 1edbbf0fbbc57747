//! Summaries that index: the summarizer's notes reach recall through the core's
//! one call for a summary result, and never a prompt.

use crate::memory::{
    Line, MemoryConfig, MemoryFeatures, MemoryParts, NpcMemory, PersonaPrompt, Role, SummaryKind,
    SummaryOutcome, SummaryStyle,
};

fn persona() -> PersonaPrompt {
    PersonaPrompt {
        name: "ECHO-7".into(),
        text: "You are ECHO-7.".into(),
        style: SummaryStyle::english(),
    }
}

fn layered() -> MemoryConfig {
    let mut config = MemoryConfig {
        summary_threshold: Some(4),
        ..MemoryConfig::with_window(6)
    };
    config.features = MemoryFeatures::layered(400);
    // Folds from the first threshold on, as a long conversation would have them.
    config.features.budget.short_logs = crate::memory::ShortLogs::Layered;
    config
}

const FILLER: &[&str] = &[
    "The corridor lights keep flickering near the storage area.",
    "Check the water filters before the night cycle starts.",
    "I found some canned food and two batteries in the locker.",
    "The radio only picks up static on every channel today.",
    "Door seven is jammed again, we need a crowbar for it.",
    "Keep your voice down, the ventilation carries sound far.",
];

/// The player mentions pottery on line 0; every summary answers with a note on
/// its first line, about hobbies for line 0 and chores for the others.
fn memory_with_notes(config: &MemoryConfig) -> (NpcMemory, Vec<usize>) {
    let mut memory = NpcMemory::new(persona(), config);
    let mut layers = memory.layers();
    let mut noted = Vec::new();
    let mut lines = vec!["I signed up for a pottery class on Tuesdays."];
    for _ in 0..4 {
        lines.extend(FILLER);
    }
    for (i, line) in lines.iter().enumerate() {
        let t = i as f64 * 10.0;
        let turn = layers.say(Line::new(*line), t);
        let replied = layers.reply("Noted.", t + 1.0);
        let mut job = turn.summary.or(replied.summary);
        while let Some(due) = job.take() {
            let first = due.covered.start;
            let fold = due.kind == SummaryKind::Fold;
            let about = if first == 0 {
                "hobbies: ceramics, crafts"
            } else {
                "chores: repairs, supplies"
            };
            let raw = if fold {
                format!(
                    r#"{{"summary": "Talk about the bunker.", "facts": [], "notes": [{{"text": "{about}", "lines": [{first}]}}, {{"text": "bad", "lines": [999999]}}]}}"#
                )
            } else {
                "Talk about the bunker.".to_owned()
            };
            if let SummaryOutcome::Updated(update) =
                layers.finish_summary(due.id, Ok(&raw), Default::default())
            {
                if fold {
                    assert_eq!((update.notes_added, update.notes_dropped), (1, 1));
                    noted.push(first as usize);
                }
                job = update.next;
            }
        }
    }
    (memory, noted)
}

#[test]
fn the_summarizer_is_asked_for_notes_when_recall_is_on() {
    let mut memory = NpcMemory::new(persona(), &layered());
    let mut layers = memory.layers();
    layers.say("Hello.", 0.0);
    let job = layers.summarize_now().expect("a summary");
    assert!(job.messages[0].content.contains(r#""notes""#));
    // Off with recall off, or notes off: the request is as before.
    for off in [
        |c: &mut MemoryConfig| c.features.recall.enabled = false,
        |c: &mut MemoryConfig| c.features.facts.notes = false,
    ] {
        let mut config = layered();
        off(&mut config);
        let mut memory = NpcMemory::new(persona(), &config);
        let mut layers = memory.layers();
        layers.say("Hello.", 0.0);
        let job = layers.summarize_now().expect("a summary");
        assert!(!job.messages[0].content.contains(r#""notes""#));
    }
}

#[test]
fn a_line_is_recalled_by_its_notes_and_no_prompt_shows_them() {
    let (mut memory, noted) = memory_with_notes(&layered());
    assert!(noted.contains(&0), "{noted:?}");
    let turn = memory
        .layers()
        .say("Tell me about my hobbies again?", 1000.0);
    let text: String = turn
        .messages
        .iter()
        .map(|m| m.content.to_string())
        .collect();
    assert!(recalled(&turn.messages).contains("pottery class"), "{text}");
    assert!(
        !text.contains("ceramics"),
        "a note reached a prompt: {text}"
    );
    assert!(
        !memory
            .log
            .messages()
            .iter()
            .any(|m| m.content.contains("ceramics"))
    );
    assert!(
        memory
            .log
            .messages()
            .iter()
            .all(|m| m.role != Role::System || !m.content.contains("hobbies"))
    );
}

#[test]
fn notes_are_saved_and_loaded_with_memory() {
    let (memory, _) = memory_with_notes(&layered());
    let parts = MemoryParts::of(&memory.log, &memory.window, &memory.context);
    assert!(!parts.recall.notes.is_empty());
    let json = serde_json::to_string(&parts).unwrap();
    let back: MemoryParts = serde_json::from_str(&json).unwrap();
    let mut loaded = back.into_memory().unwrap();
    assert_eq!(loaded.context.recall.notes(), memory.context.recall.notes());
    let question = "Tell me about my hobbies again?";
    let after = loaded.layers().say(question, 1000.0).messages;
    assert!(recalled(&after).contains("pottery class"), "{after:#?}");
}

/// The prompt's recalled lines.
fn recalled(messages: &[crate::memory::PromptMessage]) -> String {
    messages
        .iter()
        .filter(|m| m.content.starts_with("[Recalled"))
        .map(|m| m.content.to_string())
        .collect()
}

#[test]
fn a_save_with_a_bad_note_is_refused_with_its_field() {
    let (memory, _) = memory_with_notes(&layered());
    let mut parts = MemoryParts::of(&memory.log, &memory.window, &memory.context);
    parts.recall.notes[0].lines = vec![1_000_000];
    let error = parts.validate().unwrap_err();
    assert_eq!(error.field, "recall.notes[0]");
    let mut parts = MemoryParts::of(&memory.log, &memory.window, &memory.context);
    parts.recall.notes[0].text = "x".repeat(1000).into();
    assert_eq!(parts.validate().unwrap_err().field, "recall.notes[0]");
    let mut parts = MemoryParts::of(&memory.log, &memory.window, &memory.context);
    parts.recall.notes[0].text = " padded ".into();
    assert_eq!(parts.validate().unwrap_err().field, "recall.notes[0]");
}
