//! Follow-up lines: each prompt of a conversation extends the last one, rebuilds
//! within the refill, and a follow-up's best find.

use super::*;

/// Follow-up lines: within a conversation each layered prompt is the whole of the
/// last one with what came since appended, so a provider's cache and the local
/// model's KV cache reuse all of it; a prompt is built afresh, within the budget,
/// only when appending would pass the budget plus its growth, or after a pause.
#[test]
fn within_a_conversation_each_layered_prompt_extends_the_whole_last_one() {
    let mut config = MemoryConfig::with_window(20);
    config.features = MemoryFeatures::layered(600);
    // A larger share than the default, so a follow-up's own finds show at this size.
    config.features.budget.follow_ups.recall = 0.3;
    let cap = config.features.budget.follow_up_cap().unwrap();
    assert_eq!(cap, 900);
    let mut memory = NpcMemory::new(persona(), &config);
    let mut previous: Option<Vec<PromptMessage>> = None;
    let (mut extended, mut fresh, mut found_for_a_follow_up) = (0, 0, 0);
    // The most old lines one follow-up recalled for its own line.
    let mut most_recalled = 0;
    let mut recalled_before = 0;
    for turn in 0..80u32 {
        let mut layers = memory.layers();
        let t = f64::from(turn) * 30.0;
        let line = format!(
            "Report {turn}: the {} valve in bay {} is stuck again.",
            ["red", "blue", "green"][turn as usize % 3],
            turn % 7
        );
        let said = layers.say(line.as_str(), t);
        let messages = said.messages.clone();
        let prompt = layers.context().last_prompt().unwrap().clone();
        assert_eq!(prompt.messages, messages);
        assert_eq!(
            messages.last().unwrap().content.as_ref(),
            line,
            "the line comes last"
        );
        assert!(
            prompt.tokens <= cap,
            "turn {turn}: {} tokens",
            prompt.tokens
        );
        match &previous {
            Some(before) if messages.starts_with(before) => {
                extended += 1;
                let added = &messages[before.len()..];
                assert_eq!(added[0].role, Role::Assistant, "the reply comes first");
                if added.len() == 3 {
                    assert_eq!(added[1].role, Role::System);
                    assert!(added[1].content.contains("Recalled word for word"));
                    found_for_a_follow_up += 1;
                }
                most_recalled = most_recalled.max(prompt.recalled.len() - recalled_before);
            }
            _ => {
                fresh += 1;
                assert!(prompt.tokens <= 600, "a fresh prompt keeps to the budget");
            }
        }
        layers.answer_offline(said.summary);
        let replied = layers.reply(format!("Logged report {turn}."), t + 1.0);
        layers.answer_offline(replied.summary);
        previous = Some(messages);
        recalled_before = prompt.recalled.len();
    }
    assert!(extended >= 60, "{extended} of 80 prompts extended the last");
    assert!(fresh >= 3, "outgrowing the cap builds afresh: {fresh}");
    assert!(found_for_a_follow_up >= 10, "{found_for_a_follow_up}");
    assert!(
        memory.context.history().len() >= 2,
        "folds went on meanwhile"
    );

    // After a pause the line is the first of a new conversation: it recalls as
    // much as a fresh prompt would, appended if that fits, afresh if not.
    let mut layers = memory.layers();
    layers.reply("Anything else?", 80.0 * 30.0);
    let before = layers.context().last_prompt().unwrap().clone();
    layers.say("Which valve was stuck in bay 3?", 80.0 * 30.0 + 301.0);
    let after = layers.context().last_prompt().unwrap().clone();
    let recalled_now = if after.follow_up {
        after.recalled.len() - before.recalled.len()
    } else {
        after.recalled.len()
    };
    assert!(
        recalled_now > most_recalled,
        "{recalled_now} lines after a pause, at most {most_recalled} for a follow-up"
    );
}

/// Plays `turns` lines 30 s apart and returns every prompt built afresh after the
/// first, with whether the line before it came within `pause_secs` (so the
/// conversation went on and outgrew its cap).
fn rebuilt_prompts(config: &MemoryConfig, turns: u32) -> Vec<AssembledPrompt> {
    let mut memory = NpcMemory::new(persona(), config);
    let mut rebuilt = Vec::new();
    for turn in 0..turns {
        let mut layers = memory.layers();
        let t = f64::from(turn) * 30.0;
        let line = format!(
            "Report {turn}: valve {} in bay {} is stuck.",
            turn % 5,
            turn % 7
        );
        let said = layers.say(line.as_str(), t);
        let prompt = layers.context().last_prompt().unwrap().clone();
        if turn > 0 && !prompt.follow_up {
            rebuilt.push(prompt);
        }
        layers.answer_offline(said.summary);
        let replied = layers.reply(format!("Logged report {turn}, bay {}.", turn % 7), t + 1.0);
        layers.answer_offline(replied.summary);
    }
    rebuilt
}

/// A conversation that outgrows its cap is rebuilt within `refill` of the budget,
/// so it can grow for longer before the next rebuild (which no cache serves);
/// with `refill` 1 the rebuilds fill the whole budget, as a new conversation does.
#[test]
fn a_conversation_that_outgrows_its_cap_is_rebuilt_within_the_refill() {
    let mut config = MemoryConfig::with_window(20);
    config.features = MemoryFeatures::layered(600);
    assert_eq!(config.features.budget.follow_ups.refill, 0.6);
    let smaller = rebuilt_prompts(&config, 80);
    assert!(smaller.len() >= 3, "{} rebuilds", smaller.len());
    for prompt in &smaller {
        assert_eq!(prompt.budget, Some(360));
        assert!(prompt.tokens <= 360, "{} tokens", prompt.tokens);
    }

    config.features.budget.follow_ups.refill = 1.0;
    let whole = rebuilt_prompts(&config, 80);
    assert!(whole.iter().all(|p| p.budget == Some(600)));
    assert!(
        whole.iter().any(|p| p.tokens > 360),
        "whole rebuilds fill more than the refill: {:?}",
        whole.iter().map(|p| p.tokens).collect::<Vec<_>>()
    );
    assert!(
        whole.len() > smaller.len(),
        "smaller rebuilds come less often: {} against {}",
        smaller.len(),
        whole.len()
    );
}

/// A follow-up line always gets its best old line: beyond its share when that is
/// too small, and in a prompt built afresh when the cap leaves no room for it.
#[test]
fn a_follow_up_question_about_something_old_gets_its_best_find() {
    let mut config = MemoryConfig::with_window(8);
    config.features = MemoryFeatures::layered(600);
    config.features.facts.enabled = false;
    // No share at all for a follow-up's own finds.
    config.features.budget.follow_ups.recall = 0.0;
    // Summaries that keep nothing: only recall can bring the code back.
    let forget = |layers: &mut LayersMut<'_>, mut job: Option<SummaryJob>| {
        while let Some(current) = job {
            job = match layers.finish_summary(current.id, Ok("Small talk."), Duration::ZERO) {
                SummaryOutcome::Updated(update) => update.next,
                _ => None,
            };
        }
    };
    let mut follow_ups = 0;
    for fillers in 12..40u32 {
        let mut memory = NpcMemory::new(persona(), &config);
        let mut layers = memory.layers();
        let said = layers.say("Remember this: the vault code is 9182.", 0.0);
        forget(&mut layers, said.summary);
        let replied = layers.reply("Noted.", 1.0);
        forget(&mut layers, replied.summary);
        for turn in 1..=fillers {
            let t = f64::from(turn) * 30.0;
            let line = format!(
                "Pump {turn} in bay {}: pressure steady, gauges read, filters cleaned, seals tight.",
                turn % 4
            );
            let said = layers.say(line, t);
            forget(&mut layers, said.summary);
            let replied = layers.reply("Pumps logged, the night crew signed for them.", t + 1.0);
            forget(&mut layers, replied.summary);
        }
        let asked = layers.say(
            "What was the vault code again?",
            f64::from(fillers) * 30.0 + 20.0,
        );
        let prompt = layers.context().last_prompt().unwrap().clone();
        follow_ups += usize::from(prompt.follow_up);
        assert!(
            asked.messages[..asked.messages.len() - 1]
                .iter()
                .any(|m| m.content.contains("9182")),
            "{fillers} fillers, follow-up {}: {:#?}",
            prompt.follow_up,
            asked.messages
        );
    }
    assert!(
        follow_ups >= 5,
        "{follow_ups} of the questions were follow-ups"
    );
}

/// A pause starts a new conversation, which recalls with the whole recall share,
/// but a prompt that still holds every message of the log has nothing to recall:
/// it goes on extending instead of being built afresh near its cap.
#[test]
fn after_a_pause_a_prompt_that_holds_the_whole_log_is_still_extended() {
    let mut config = MemoryConfig::with_window(4);
    config.hard_cap = Some(200);
    config.features = MemoryFeatures::layered(400);
    let cap = config.features.budget.follow_up_cap().unwrap();
    let mut memory = NpcMemory::new(persona(), &config);
    let mut layers = memory.layers();
    let mut t = 0.0;
    // Past the budget but short of the cap, with too little room left for a whole
    // recall share: before, a pause rebuilt the prompt here.
    let room_for_recall = (400.0 * 0.7 / 2.0) as usize;
    let mut turn = 0;
    loop {
        let said = layers.say(format!("Line {turn} about the pumps."), t);
        layers.answer_offline(said.summary);
        let prompt = layers.context().last_prompt().unwrap().clone();
        assert!(
            turn == 0 || prompt.follow_up,
            "turn {turn} extends the last"
        );
        let replied = layers.reply(format!("Pumps logged, {turn}."), t + 1.0);
        layers.answer_offline(replied.summary);
        if prompt.tokens > 400 && cap - prompt.tokens < room_for_recall + 20 {
            break;
        }
        turn += 1;
        t += 30.0;
        assert!(turn < 100, "the prompt never came near its cap");
    }
    let before = layers.context().last_prompt().unwrap().messages.clone();
    let after = layers.say("Back again. Anything new?", t + 600.0).messages;
    assert!(after.starts_with(&before), "the pause kept the prompt");
    let log = layers.log().messages();
    for message in log {
        assert!(
            after.iter().any(|m| m.content == message.content),
            "message {} is still sent",
            message.index
        );
    }
}
