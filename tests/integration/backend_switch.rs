//! The backend switched while the game runs: requests in flight finish where they
//! started, the next ones go to the new backend, summaries follow replies unless
//! they have their own.

use std::time::Duration;

use crate::support::{Harness, persona};
use bevy_npc_memory::backends::ApiKey;
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::ScriptedBackend;
use bevy_npc_memory::dialogue::SwitchBackend;
use bevy_npc_memory::prelude::*;

#[test]
fn a_reply_in_flight_finishes_on_the_old_backend_and_the_next_uses_the_new_one() {
    let old = ScriptedBackend::new();
    old.push_reply_after(Duration::from_millis(200), "Old answer.");
    let new = ScriptedBackend::new();
    new.push_reply("New answer.");
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(old.clone()));
    h.spawn("echo7", persona("ECHO-7"));
    h.say("echo7", "First line.");
    let taken = old.clone();
    h.run_until("the old backend took the line", move |_| {
        taken.requests().len() == 1
    });
    h.app
        .world_mut()
        .write_message(SwitchBackend::replies(new.clone()));
    h.wait_for_replies(1);
    assert_eq!(h.replies("echo7"), ["Old answer."]);
    h.say("echo7", "Second line.");
    h.wait_for_replies(2);
    assert_eq!(h.replies("echo7"), ["Old answer.", "New answer."]);
    assert_eq!(old.requests().len(), 1);
    assert_eq!(new.requests().len(), 1);
    let log = h.log("echo7");
    assert_eq!(log.len(), 4, "memory went on across the switch: {log:?}");
}

#[test]
fn summaries_follow_the_replies_until_they_get_their_own_backend() {
    let first = ScriptedBackend::new();
    let mut h = Harness::new(
        NpcMemoryPlugin::default()
            .with_backend(first.clone())
            .with_window(4)
            .with_summary_threshold(2),
    );
    h.spawn("echo7", persona("ECHO-7"));
    let second = ScriptedBackend::new();
    second
        .push_reply("Logged, Alex.")
        .push_summary("The player is Alex.")
        .push_reply("Heading there.");
    h.app
        .world_mut()
        .write_message(SwitchBackend::replies(second.clone()));
    h.say("echo7", "I'm Alex.");
    h.wait_for_summaries(1);
    assert_eq!(h.summary("echo7"), "The player is Alex.");
    assert_eq!(
        first.requests().len(),
        0,
        "nothing went to the first backend"
    );

    let summarizer = ScriptedBackend::new();
    summarizer.push_summary("Alex heads to storage.");
    h.app
        .world_mut()
        .write_message(SwitchBackend::summaries(summarizer.clone()));
    h.say("echo7", "I'm going to storage.");
    h.wait_for_summaries(2);
    assert_eq!(h.summary("echo7"), "Alex heads to storage.");
    assert_eq!(h.replies("echo7"), ["Logged, Alex.", "Heading there."]);
    assert_eq!(second.requests_for(Purpose::Summary).len(), 1);
    assert_eq!(second.requests_for(Purpose::Reply).len(), 2);
    assert_eq!(summarizer.requests_for(Purpose::Summary).len(), 1);
    assert!(summarizer.requests_for(Purpose::Reply).is_empty());
}

#[cfg(feature = "http")]
#[test]
fn a_switch_to_a_keyed_backend_never_shows_the_key() {
    let key = "sk-player-pasted-0123456789";
    let backend = OpenAiBackend::with_api_key(
        OpenAiConfig::custom("player-provider", "http://127.0.0.1:9/v1", "model"),
        ApiKey::new(key),
    )
    .unwrap();
    let switch = SwitchBackend::both(backend);
    let shown = format!("{switch:?}");
    assert!(shown.contains("player-provider"), "{shown}");
    assert!(!shown.contains(key), "{shown}");
}
