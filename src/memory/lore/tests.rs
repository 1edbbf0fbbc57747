use proptest::prelude::*;

use super::*;
use crate::memory::npc_id::NpcId;

fn store() -> LoreStore {
    let mut store = LoreStore::new();
    let entries = [
        LoreEntry::new("bunker", "The bunker is called Vault 7, built in 2061.")
            .with_keys(["bunker", "vault"]),
        LoreEntry::new("crew_code", "The crew's door code is 4711.")
            .with_scope(LoreScope::group("crew"))
            .with_keys(["door code"]),
        LoreEntry::new("echo_secret", "ECHO-7 sealed the north wing itself.")
            .with_scope(LoreScope::npc("echo7"))
            .with_keys(["north wing"]),
        LoreEntry::new("reactor", "The reactor runs on thorium and hums at night."),
        LoreEntry::new("cat", "地堡里有一只猫，叫小白。").with_keys(["猫"]),
    ];
    for entry in entries {
        store.insert(entry).unwrap();
    }
    store
}

fn ids(hits: &[LoreHit]) -> Vec<&str> {
    hits.iter().map(|h| h.id.as_str()).collect()
}

fn ask(store: &LoreStore, npc: &str, groups: &[&str], line: &str) -> Vec<LoreHit> {
    let npc = NpcId::new(npc);
    let groups: Vec<String> = groups.iter().map(|g| (*g).to_owned()).collect();
    store.query(
        &LoreReader::new(&npc, &groups),
        line,
        &[],
        &LoreLimits::default(),
    )
}

#[test]
fn each_scope_reaches_only_its_readers() {
    let store = store();
    assert_eq!(
        ids(&ask(&store, "guest", &[], "Tell me about the bunker")),
        ["bunker"]
    );
    let code = "What is the door code?";
    assert_eq!(ids(&ask(&store, "rusty", &["crew"], code)), ["crew_code"]);
    assert!(ask(&store, "guest", &["visitors"], code).is_empty());
    let wing = "Who sealed the north wing?";
    assert_eq!(ids(&ask(&store, "echo7", &[], wing)), ["echo_secret"]);
    assert!(ask(&store, "rusty", &["crew"], wing).is_empty());
}

#[test]
fn text_words_match_with_the_same_stemming_as_recall() {
    let store = store();
    assert_eq!(
        ids(&ask(&store, "x", &[], "Does the reactor hum?")),
        ["reactor"]
    );
    assert_eq!(
        ids(&ask(&store, "x", &[], "what runs on THORIUM")),
        ["reactor"]
    );
}

#[test]
fn keys_match_inside_the_line_ignoring_case_for_cjk_and_phrases() {
    let store = store();
    // "猫" alone is no term of "你的猫在哪" (bigrams only): the key finds it.
    assert_eq!(ids(&ask(&store, "x", &[], "你的猫在哪？")), ["cat"]);
    assert_eq!(
        ids(&ask(&store, "x", &["crew"], "the DOOR CODE please")),
        ["crew_code"]
    );
}

#[test]
fn keys_outrank_a_passing_mention_and_ties_come_by_id() {
    let mut store = LoreStore::new();
    store
        .insert(LoreEntry::new(
            "a_mention",
            "Somewhere there is a generator room.",
        ))
        .unwrap();
    store
        .insert(LoreEntry::new("b_key", "It is in the basement.").with_keys(["generator"]))
        .unwrap();
    // A passing mention is left out next to an entry keyed on the word...
    assert_eq!(
        ids(&ask(&store, "x", &[], "where is the generator")),
        ["b_key"]
    );
    // ...and comes when it is the best there is.
    assert_eq!(ids(&ask(&store, "x", &[], "which room")), ["a_mention"]);
    store.insert(LoreEntry::new("c", "same words")).unwrap();
    store.insert(LoreEntry::new("b", "same words")).unwrap();
    assert_eq!(ids(&ask(&store, "x", &[], "same words")), ["b", "c"]);
}

#[test]
fn the_recent_conversation_helps_at_a_lower_weight() {
    let store = store();
    let npc = NpcId::new("x");
    let hits = store.query(
        &LoreReader::new(&npc, &[]),
        "And how old is it?",
        &["Tell me about the reactor."],
        &LoreLimits::default(),
    );
    assert_eq!(ids(&hits), ["reactor"]);
}

#[test]
fn an_update_replaces_the_text_everywhere_and_the_old_words_stop_matching() {
    let mut store = store();
    let old = store.update("reactor", "The reactor was shut down for repairs.");
    assert!(old.unwrap().unwrap().text.contains("thorium"));
    assert!(ask(&store, "x", &[], "thorium").is_empty());
    let hits = ask(&store, "x", &[], "what about the reactor repairs");
    assert_eq!(&*hits[0].text, "The reactor was shut down for repairs.");
    assert_eq!(store.update("nobody", "x"), Ok(None));
    assert_eq!(
        store.get("crew_code").unwrap().scope,
        LoreScope::group("crew")
    );
}

#[test]
fn removal_takes_the_entry_out_of_the_index() {
    let mut store = store();
    assert!(store.remove("bunker").is_some());
    assert!(ask(&store, "x", &[], "bunker vault").is_empty());
    assert_eq!(store.len(), 4);
    // The slot is reused cleanly.
    store
        .insert(LoreEntry::new("new", "A vault of seeds."))
        .unwrap();
    assert_eq!(ids(&ask(&store, "x", &[], "vault")), ["new"]);
}

#[test]
fn limits_cap_the_count_and_the_tokens() {
    let mut store = LoreStore::new();
    for i in 0..10 {
        store
            .insert(LoreEntry::new(
                format!("e{i}"),
                format!("generator note {i}"),
            ))
            .unwrap();
    }
    store
        .insert(LoreEntry::new("long", "generator ".repeat(200)))
        .unwrap();
    let npc = NpcId::new("x");
    let limits = LoreLimits {
        max_entries: 3,
        max_tokens: 100,
    };
    let hits = store.query(&LoreReader::new(&npc, &[]), "generator", &[], &limits);
    assert_eq!(hits.len(), 3);
    assert!(hits.iter().all(|h| h.id != "long"), "too long for the cap");
}

#[test]
fn entries_over_the_limits_are_refused() {
    let mut store = LoreStore::new();
    let too_long = LoreEntry::new("x", "a".repeat(MAX_LORE_TEXT_CHARS + 1));
    assert!(store.insert(too_long).is_err());
    assert!(store.insert(LoreEntry::new(" ", "empty id")).is_err());
    let many_keys = LoreEntry::new("k", "t").with_keys(vec!["k"; MAX_LORE_KEYS + 1]);
    assert!(store.insert(many_keys).is_err());
    assert!(store.is_empty());
    store.insert(LoreEntry::new("ok", "fine")).unwrap();
    assert!(
        store
            .update("ok", "b".repeat(MAX_LORE_TEXT_CHARS + 1))
            .is_err()
    );
    assert_eq!(&*store.get("ok").unwrap().text, "fine");
}

#[test]
fn changes_validate_counts_ids_and_duplicates() {
    let mut changes = LoreChanges {
        entries: vec![LoreEntry::new("a", "x")],
        removed: vec!["b".into()],
    };
    assert_eq!(changes.validate(), Ok(()));
    changes.removed.push("a".into());
    assert!(changes.validate().is_err(), "an id both set and removed");
    changes.removed = vec!["r".into(); MAX_LORE_ENTRIES + 1];
    assert!(changes.validate().is_err());
}

#[test]
fn entries_read_from_ron() {
    let text = r#"[
        (id: "w", text: "World."),
        (id: "g", scope: Group("crew"), keys: ["a"], text: "Group."),
        (id: "n", scope: Npc("echo7"), text: "One."),
    ]"#;
    let entries: Vec<LoreEntry> = ron::from_str(text).unwrap();
    assert_eq!(entries[0].scope, LoreScope::World);
    assert_eq!(entries[1].scope, LoreScope::group("crew"));
    assert_eq!(entries[2].scope, LoreScope::npc("echo7"));
}

fn scope_strategy() -> impl Strategy<Value = LoreScope> {
    prop_oneof![
        Just(LoreScope::World),
        "[a-c]".prop_map(LoreScope::Group),
        "[a-c]".prop_map(|npc| LoreScope::Npc(NpcId::new(npc))),
    ]
}

proptest! {
    /// Whatever the texts, keys and question, an entry outside the reader's scope
    /// never comes back.
    #[test]
    fn an_entry_out_of_scope_is_never_returned(
        entries in proptest::collection::vec(
            (scope_strategy(), "\\PC{0,40}", proptest::collection::vec("\\PC{0,8}", 0..3)),
            1..12,
        ),
        npc in "[a-c]",
        groups in proptest::collection::vec("[a-c]", 0..3),
        line in "\\PC{0,80}",
        recent in "\\PC{0,40}",
    ) {
        let mut store = LoreStore::new();
        for (i, (scope, text, keys)) in entries.into_iter().enumerate() {
            let mut keys = keys;
            // Keys also taken from the text, so that some entries match.
            keys.push(text.chars().take(3).collect());
            let entry = LoreEntry::new(format!("e{i}"), text).with_scope(scope).with_keys(keys);
            store.insert(entry).unwrap();
        }
        let npc = NpcId::new(npc);
        let reader = LoreReader::new(&npc, &groups);
        let limits = LoreLimits { max_entries: 100, max_tokens: usize::MAX / 2 };
        for query in [line.as_str(), recent.as_str()] {
            let hits = store.query(&reader, query, &[recent.as_str()], &limits);
            for hit in hits {
                let entry = store.get(&hit.id).unwrap();
                prop_assert!(reader.sees(&entry.scope), "{:?} leaked to {:?}", entry, npc);
                prop_assert!(hit.score.is_finite() && hit.score > 0.0);
            }
        }
    }
}
