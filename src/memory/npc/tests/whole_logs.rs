//! Short logs sent whole, folds that wait for them, and pinned facts changed
//! mid-conversation.

use super::*;

/// A layered prompt sends a short log as it is: the persona and every message,
/// with no summary requested, past the window's hard cap, and on as a follow-up
/// past the budget. Folds start only once the whole log comes within the lead of
/// the follow-up cap, so the summaries are in by the time the conversation is
/// rebuilt, and the rebuilt prompt has them.
#[test]
fn a_log_that_fits_the_budget_is_sent_whole_and_folds_wait() {
    let mut config = MemoryConfig::with_window(4);
    config.features = MemoryFeatures::layered(400);
    let cap = config.features.budget.follow_up_cap().unwrap();
    let mut memory = NpcMemory::new(persona(), &config);
    let mut first_fold = None;
    for turn in 0..60u32 {
        let mut layers = memory.layers();
        let t = f64::from(turn) * 30.0;
        let said = layers.say(format!("Line {turn} about the pumps."), t);
        let prompt = layers.context().last_prompt().unwrap().clone();
        let folded = said.summary.is_some() || !layers.context().history().is_empty();
        if first_fold.is_none() && !folded {
            let log = layers.log().messages();
            // One system message, then the whole log word for word.
            assert_eq!(said.messages.len(), 1 + log.len(), "turn {turn}");
            for (sent, message) in said.messages[1..].iter().zip(log) {
                assert_eq!(sent.content, message.content);
            }
            assert!(prompt.tokens <= cap - (cap - 400) / 2, "turn {turn}");
        } else if first_fold.is_none() {
            // The fold waited past the budget, until the lead of the cap.
            assert!(prompt.tokens > 400, "turn {turn}: {}", prompt.tokens);
            first_fold = Some(turn);
        } else if !prompt.follow_up {
            // The rebuild that outgrew the cap finds every message before its
            // window in a summary.
            let window = prompt
                .sections
                .iter()
                .find(|s| s.kind == SectionKind::Window);
            let oldest = window.unwrap().included[0];
            assert!(layers.context().covered_until() >= oldest, "{prompt:?}");
            assert!(
                layers.context().degradations().is_empty(),
                "nothing was forced out of the window"
            );
            return;
        }
        layers.answer_offline(said.summary);
        let replied = layers.reply(format!("Pumps logged, {turn}."), t + 1.0);
        if first_fold.is_none() {
            assert!(
                replied.summary.is_none(),
                "turn {turn}: the log is still held"
            );
        }
        layers.answer_offline(replied.summary);
    }
    panic!("no rebuild after the first fold at {first_fold:?}");
}

/// Folds wait on what is sent, not on the log's words: notes go out with their
/// dates and framing, so a log of notes can stop fitting before its words do,
/// and from the first prompt that does not hold the whole log, folds run.
#[test]
fn folds_wait_only_while_what_is_sent_is_the_whole_log() {
    let mut config = MemoryConfig::with_window(4);
    config.features = MemoryFeatures::layered(300);
    let mut memory = NpcMemory::new(persona(), &config);
    let mut layered = 0;
    for turn in 0..40u32 {
        let t = f64::from(turn) * 600.0;
        let mut layers = memory.layers();
        let noted = layers.witness(format!("Crate {turn} was moved to bay {turn}."), 0.5, t);
        layers.answer_offline(noted.summary);
        let said = layers.say(format!("Crate {turn}?").as_str(), t + 1.0);
        let prompt = layers.context().last_prompt().unwrap().clone();
        let window = prompt.section(SectionKind::Window).unwrap();
        if window.included.len() < layers.log().messages().len() {
            layered += 1;
            let folding = said.summary.is_some() || layers.context().covered_until() > 0;
            assert!(folding, "turn {turn}: layered, and folds still wait");
        }
        layers.answer_offline(said.summary);
        let replied = layers.reply("Logged.", t + 2.0);
        layers.answer_offline(replied.summary);
    }
    assert!(layered > 0, "the log outgrew its prompt");
}

/// Until the first fold, a fresh prompt (here the first after a load) sends the
/// whole log past the budget, up to half the follow-ups' growth, as the
/// conversation's prompt did; no fold is due until then.
#[test]
fn before_the_first_fold_a_fresh_prompt_sends_the_whole_log_past_the_budget() {
    let mut config = MemoryConfig::with_window(4);
    config.features = MemoryFeatures::layered(300);
    let mut memory = NpcMemory::new(persona(), &config);
    let mut t = 0.0;
    while memory.context.last_prompt().is_none_or(|p| p.tokens <= 310) {
        let mut layers = memory.layers();
        let said = layers.say("Is the pump on line four still rattling?", t);
        assert!(
            said.summary.is_none(),
            "no fold before the log outgrows 375"
        );
        let replied = layers.reply("It rattles, but it holds.", t + 1.0);
        assert!(replied.summary.is_none());
        t += 10.0;
    }
    let parts = MemoryParts::of(&memory.log, &memory.window, &memory.context);
    let mut loaded = parts.into_memory().unwrap();
    let said = loaded.layers().say("Still there?", t + 400.0);
    let prompt = loaded.context.last_prompt().unwrap();
    assert!(!prompt.follow_up && prompt.tokens > 300, "{prompt:?}");
    assert_eq!(said.messages.len(), 1 + loaded.log.messages().len());
}

/// A pinned fact that changes mid-conversation is appended before the next line,
/// under a heading that says it replaces the facts above, so the prompt still
/// extends the last one; the next fresh prompt has it in the system message.
#[test]
fn a_fact_changed_mid_conversation_is_appended_not_rebuilt() {
    let mut config = MemoryConfig::with_window(20);
    config.features = MemoryFeatures::layered(2000);
    let mut memory = NpcMemory::new(persona(), &config);
    let mut layers = memory.layers();
    let first = layers.say("The hatch is jammed.", 1.0).messages;
    layers.reply("Logged.", 2.0);
    layers
        .set_fact(FactKey::CURRENT_GOAL, "open the hatch", vec![0])
        .unwrap();
    let second = layers.say("Can you help?", 3.0).messages;
    assert!(second.starts_with(&first), "the last prompt is kept whole");
    let added = &second[first.len()..];
    assert_eq!(added.len(), 3, "{added:?}");
    assert_eq!(added[1].role, Role::System);
    assert!(added[1].content.starts_with("[Pinned facts have changed"));
    assert!(added[1].content.contains("open the hatch"));
    assert!(layers.context().last_prompt().unwrap().follow_up);

    // Unchanged since, the facts are not appended again.
    layers.reply("On my way.", 4.0);
    let third = layers.say("Thanks.", 5.0).messages;
    assert!(third.starts_with(&second));
    assert!(
        !third[second.len()..]
            .iter()
            .any(|m| m.content.contains("have changed"))
    );

    // After a load the next prompt is fresh, with the fact in its system message.
    let parts = MemoryParts::of(&memory.log, &memory.window, &memory.context);
    let mut loaded = parts.into_memory().unwrap();
    let fresh = loaded.layers().say("Still there?", 400.0).messages;
    assert!(fresh[0].content.contains("open the hatch"));
    assert!(!loaded.context.last_prompt().unwrap().follow_up);
}

/// A log is sent whole only when what is sent fits the budget: notes go out with
/// their dates and framing, so a log whose words fit can come to more, and then
/// the prompt is layered, its window within the hard cap.
#[test]
fn a_log_is_sent_whole_only_when_what_is_sent_fits() {
    let mut config = MemoryConfig::with_window(2);
    config.features = MemoryFeatures::layered(160);
    config.features.budget.follow_ups.growth = 0.0;
    let budget = 160;
    let mut memory = NpcMemory::new(persona(), &config);
    let mut past_the_cap = 0;
    for turn in 0..12u32 {
        let t = f64::from(turn) * 10.0;
        let mut layers = memory.layers();
        layers.witness(format!("Crate {turn} was moved to bay {turn}."), 0.5, t);
        layers.say(format!("Crate {turn}?").as_str(), t + 1.0);
        let prompt = layers.context().last_prompt().unwrap().clone();
        layers.record(Role::Assistant, "Logged.", t + 2.0);
        let lines = prompt
            .messages
            .iter()
            .filter(|m| m.role != Role::System)
            .count();
        if lines > config.hard_cap() {
            past_the_cap += 1;
            assert!(
                prompt.tokens <= budget,
                "turn {turn}: the whole log went out at {} tokens",
                prompt.tokens
            );
        }
    }
    assert!(past_the_cap > 0, "some whole logs were sent");
}
