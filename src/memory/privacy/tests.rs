use super::*;
use crate::memory::{
    Line, MemoryConfig, MemoryFeatures, NpcId, NpcMemory, PersonaPrompt, PromptMessage,
    SummaryStyle,
};

const SECRET: &str = "The spare key is under the blue mat.";
const SECRET_REPLY: &str = "Under the blue mat. Your secret is safe.";

fn persona() -> PersonaPrompt {
    PersonaPrompt {
        name: "ECHO-7".into(),
        text: "You are ECHO-7.".into(),
        style: SummaryStyle::english(),
    }
}

fn rusty() -> SpeakerId {
    SpeakerId::npc(&NpcId::new("rusty3"), "RUSTY-3").unwrap()
}

/// Says `line`, answers `reply`, and runs every summary that falls due.
fn exchange(memory: &mut NpcMemory, line: Line, reply: &str, t: f64) -> Vec<PromptMessage> {
    let mut layers = memory.layers();
    let turn = layers.say(line, t);
    layers.answer_offline(turn.summary);
    let replied = layers.reply(reply, t + 1.0);
    layers.answer_offline(replied.summary);
    turn.messages
}

/// A memory (window 20) in which the player told the secret privately, answered.
fn told_a_secret() -> NpcMemory {
    let mut memory = NpcMemory::new(persona(), &MemoryConfig::with_window(20));
    exchange(
        &mut memory,
        Line::new(SECRET).privately(),
        SECRET_REPLY,
        0.0,
    );
    memory
}

fn mentions_secret(messages: &[PromptMessage]) -> bool {
    messages.iter().any(|m| m.content.contains("blue mat"))
}

/// The player tells the NPC a secret, then talks about other things for `lines`
/// more lines, so that summaries and recall have the secret to work with.
fn memory_with_a_secret(config: &MemoryConfig, lines: u32) -> NpcMemory {
    let mut memory = NpcMemory::new(persona(), config);
    exchange(
        &mut memory,
        Line::new("Hi, my name is Alex.").privately(),
        "Hello Alex.",
        0.0,
    );
    exchange(
        &mut memory,
        Line::new(SECRET).privately(),
        SECRET_REPLY,
        10.0,
    );
    for turn in 0..lines {
        let t = 20.0 + f64::from(turn) * 10.0;
        exchange(
            &mut memory,
            Line::new(format!("Pump {turn} in bay {} hums again.", turn % 5)),
            "Noted, pumps logged.",
            t,
        );
    }
    memory
}

fn configs() -> Vec<(&'static str, MemoryConfig)> {
    let basic = MemoryConfig::with_window(20);
    let mut layered = MemoryConfig::with_window(6);
    layered.features = MemoryFeatures::layered(2000);
    layered.features.budget.short_logs = crate::memory::ShortLogs::Layered;
    let mut whole = MemoryConfig::with_window(20);
    whole.features = MemoryFeatures::layered(2000);
    vec![
        ("basic", basic),
        ("layered", layered),
        ("sent whole", whole),
    ]
}

/// Another NPC asks about the very thing the player said privately: the prompt
/// addressed to it holds neither the line, nor the NPC's reply, nor a summary or
/// pinned fact made from them; the player's own next prompt still holds them.
#[test]
fn a_private_line_is_absent_from_every_prompt_addressed_to_someone_else() {
    for (name, config) in configs() {
        let mut memory = memory_with_a_secret(&config, 12);
        let asked = Line::new("Where is the spare key? Under which mat?").by(&rusty());
        let turn = memory.layers().say(asked, 500.0);
        let to_rusty = turn.messages;
        assert!(!mentions_secret(&to_rusty), "{name}: {to_rusty:#?}");
        // A backend that answers from the summary reads no more than the prompt.
        assert!(
            !turn.reply.summary.contains("blue mat"),
            "{name}: {}",
            turn.reply.summary
        );
        assert!(
            !to_rusty.iter().any(|m| m.content.contains("Alex")),
            "{name}: the name the player gave privately, as a fact or in a summary"
        );
        // The layered memory did summarize and recall it: the player gets it back.
        memory.layers().reply("I cannot say.", 501.0);
        let to_player = memory
            .layers()
            .say("Where did I hide the spare key, under which mat?", 510.0)
            .messages;
        assert!(mentions_secret(&to_player), "{name}: {to_player:#?}");
    }
}

/// A second player is no one to tell either, and a follow-up prompt built for the
/// first player is never extended for the second.
#[test]
fn a_second_player_never_reads_the_first_players_private_lines() {
    let bob = SpeakerId::new("bob", "Bob").unwrap();
    for (name, config) in configs() {
        let mut memory = memory_with_a_secret(&config, 2);
        let to_bob = memory
            .layers()
            .say(
                Line::new("Any spare key around? A mat maybe?").by(&bob),
                60.0,
            )
            .messages;
        assert!(!mentions_secret(&to_bob), "{name}: {to_bob:#?}");
        // Bob's own private line is his: the default player does not read it.
        memory.layers().reply("Not that I know.", 61.0);
        exchange(
            &mut memory,
            Line::new("Between us: I took the red crate.")
                .by(&bob)
                .privately(),
            "The red crate, understood.",
            70.0,
        );
        let to_player = memory
            .layers()
            .say("Anything about a crate?", 80.0)
            .messages;
        assert!(
            !to_player.iter().any(|m| m.content.contains("red crate")),
            "{name}: {to_player:#?}"
        );
        assert!(
            mentions_secret(&to_player),
            "{name}: the player's own secret stays"
        );
    }
}

#[test]
fn a_reply_belongs_to_the_line_it_answers() {
    let mut memory = told_a_secret();
    exchange(
        &mut memory,
        Line::new("Nice weather.").by(&rusty()),
        "Indeed.",
        10.0,
    );
    let log = &memory.log;
    assert_eq!(
        Withheld::from(log, Some(&rusty()), &PinnedFacts::default()),
        // RUSTY-3 is an NPC: hearsay made private at its source would be left
        // out too, and there is none.
        Withheld {
            entries: vec![0, 1],
            among_npcs: true,
            hides_facts: false,
        }
    );
    assert!(Withheld::from(log, None, &PinnedFacts::default()).is_empty());
    let withheld = Withheld::from(log, Some(&rusty()), &PinnedFacts::default());
    assert!(withheld.any_in(&(1..3)) && !withheld.any_in(&(2..4)));
    assert!(withheld.any_of(&[3, 0]) && !withheld.any_of(&[2, 3]));
    assert_eq!(addressee(log), Some(&rusty()));
}

/// In company, a reply is heard by everyone present: when lines from two speakers
/// came since the NPC last spoke (a conversation among NPCs the player joined),
/// the prompt is addressed to the group and leaves out every private line, the
/// player's own among them. Once the NPC answers the player alone again, the
/// player reads them again.
#[test]
fn a_prompt_answered_in_company_leaves_out_every_private_line() {
    for (name, config) in configs() {
        let mut memory = memory_with_a_secret(&config, 2);
        let mut layers = memory.layers();
        layers.listen(
            Line::new("Any news from the night shift?").by(&rusty()),
            60.0,
        );
        let in_company = layers
            .say(
                "Tell us both: where is the spare key? Under which mat?",
                61.0,
            )
            .messages;
        assert!(!mentions_secret(&in_company), "{name}: {in_company:#?}");
        layers.reply("I cannot say here.", 62.0);
        let alone = layers
            .say(
                "Now that we are alone: under which mat is the spare key?",
                70.0,
            )
            .messages;
        assert!(mentions_secret(&alone), "{name}: {alone:#?}");
    }
}

/// A line the NPC only listens to enters the log with its speaker, and asks for
/// no reply.
#[test]
fn a_line_listened_to_is_logged_with_its_speaker() {
    let mut memory = NpcMemory::new(persona(), &MemoryConfig::with_window(20));
    let noted = memory
        .layers()
        .listen(Line::new("The pump is fixed.").by(&rusty()), 5.0);
    let entry = memory.log.get(noted.index).unwrap();
    assert_eq!(entry.role, Role::User);
    assert_eq!(entry.speaker, Some(rusty()));
    assert_eq!(&*entry.content, "The pump is fixed.");
    assert!(noted.summary.is_none());
}

/// Two players whose lines meet because a reply failed are not company: the
/// second is answered as ever, with his own private lines.
#[test]
fn an_unanswered_line_of_another_player_is_not_company() {
    let bob = SpeakerId::new("bob", "Bob").unwrap();
    let mut memory = NpcMemory::new(persona(), &MemoryConfig::with_window(20));
    exchange(
        &mut memory,
        Line::new(SECRET).by(&bob).privately(),
        SECRET_REPLY,
        0.0,
    );
    let mut layers = memory.layers();
    // The player's line whose reply failed: nothing of the NPC's follows it.
    layers.say("Is the lift working?", 10.0);
    let to_bob = layers
        .say(Line::new("Which mat was it again?").by(&bob), 20.0)
        .messages;
    assert!(mentions_secret(&to_bob), "{to_bob:#?}");
}

/// A private line said in company is still said to the NPC: its own prompt
/// holds it, addressed to its speaker alone.
#[test]
fn a_private_line_said_in_company_reaches_its_own_prompt() {
    let mut memory = NpcMemory::new(persona(), &MemoryConfig::with_window(20));
    let mut layers = memory.layers();
    layers.listen(Line::new("The pumps are fine.").by(&rusty()), 0.0);
    let messages = layers.say(Line::new(SECRET).privately(), 5.0).messages;
    assert!(mentions_secret(&messages), "{messages:#?}");
}

/// Another NPC may speak (in a conversation) while the NPC answers a private
/// line: the reply is as private as the line its prompt answered, and belongs to
/// that line's speaker, though the other NPC's line came in between.
#[test]
fn a_reply_to_a_private_line_stays_private_when_another_npc_speaks_first() {
    let bob = SpeakerId::new("bob", "Bob").unwrap();
    let mut memory = NpcMemory::new(persona(), &MemoryConfig::with_window(20));
    let mut layers = memory.layers();
    layers.say(Line::new(SECRET).privately(), 0.0);
    layers.listen(Line::new("All quiet on level two.").by(&rusty()), 1.0);
    let replied = layers.reply(SECRET_REPLY, 2.0);
    let log = &memory.log;
    assert_eq!(
        log.get(replied.index).unwrap().origin,
        Origin::SaidPrivately
    );
    let withheld = |from: Option<&SpeakerId>| {
        Withheld::from(log, from, &PinnedFacts::default()).contains(replied.index)
    };
    assert!(withheld(Some(&bob)), "the other player never reads it");
    assert!(withheld(Some(&rusty())), "nor the NPC who spoke meanwhile");
    assert!(withheld(Some(SpeakerId::group())), "nor NPCs in company");
    assert!(!withheld(None), "the player it answered does");
}

/// A line the NPC says of its own accord (a conversation's opening) answers no
/// one: said right after a private exchange, it is still said in the open, and a
/// prompt addressed to another NPC holds it, without the secret.
#[test]
fn a_line_said_of_its_own_accord_after_a_private_exchange_is_said_in_the_open() {
    let mut memory = told_a_secret();
    let opening = memory.layers().speak("Shall we check the pumps?", 10.0);
    assert_eq!(memory.log.get(opening.index).unwrap().origin, Origin::Said);
    let to_rusty = memory
        .layers()
        .say(Line::new("Yes, let us.").by(&rusty()), 11.0)
        .messages;
    assert!(
        to_rusty
            .iter()
            .any(|m| m.content.contains("check the pumps")),
        "{to_rusty:#?}"
    );
    assert!(!mentions_secret(&to_rusty), "{to_rusty:#?}");
}
