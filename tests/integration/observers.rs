//! Entity-first dialogue: talking to NPC entities through `TalkTo` and the
//! `EntityCommands` extension, entity events with turn ids, interrupts, `NpcState`,
//! and NPC entities being rebound, duplicated and removed.

use bevy::prelude::*;
use bevy_npc_memory::memory::Role;
use bevy_npc_memory::prelude::*;

use crate::support::held::{HeldBackend, echo};
use crate::support::{Harness, persona};
use bevy_npc_memory::NpcEntities;
use bevy_npc_memory::dialogue::InterruptNpc;
use bevy_npc_memory::dialogue::NpcReplyDelta;
use bevy_npc_memory::dialogue::NpcReplyStarted;
use bevy_npc_memory::dialogue::NpcRequests;
use bevy_npc_memory::dialogue::ReplyDelta;
use bevy_npc_memory::dialogue::ReplyFailed;
use bevy_npc_memory::dialogue::ReplyStarted;
use bevy_npc_memory::dialogue::TurnId;

/// One entity event, as an observer saw it.
#[derive(Clone, Debug, PartialEq)]
enum Seen {
    Started {
        turn: TurnId,
        line: String,
    },
    Delta {
        turn: TurnId,
        text: String,
    },
    Replied {
        turn: TurnId,
        text: String,
    },
    Failed {
        turn: Option<TurnId>,
        error: ReplyError,
        unrecorded: Option<String>,
    },
}

impl Seen {
    fn turn(&self) -> Option<TurnId> {
        match self {
            Seen::Started { turn, .. } | Seen::Delta { turn, .. } | Seen::Replied { turn, .. } => {
                Some(*turn)
            }
            Seen::Failed { turn, .. } => *turn,
        }
    }
}

/// Every entity event the global observers saw: (target entity, NPC id, event).
#[derive(Resource, Default)]
struct EntityLog(Vec<(Entity, NpcId, Seen)>);

/// A harness whose global observers record every entity event the plugin fires.
fn watched(backend: &HeldBackend) -> Harness {
    let mut h = Harness::new(NpcMemoryPlugin::default().with_backend(backend.clone()));
    h.app
        .init_resource::<EntityLog>()
        .add_observer(|ev: On<ReplyStarted>, mut log: ResMut<EntityLog>| {
            let seen = Seen::Started {
                turn: ev.turn,
                line: ev.line.to_string(),
            };
            log.0.push((ev.entity, ev.npc.clone(), seen));
        })
        .add_observer(|ev: On<ReplyDelta>, mut log: ResMut<EntityLog>| {
            let seen = Seen::Delta {
                turn: ev.turn,
                text: ev.delta.clone(),
            };
            log.0.push((ev.entity, ev.npc.clone(), seen));
        })
        .add_observer(|ev: On<Replied>, mut log: ResMut<EntityLog>| {
            let seen = Seen::Replied {
                turn: ev.turn,
                text: ev.text.to_string(),
            };
            log.0.push((ev.entity, ev.npc.clone(), seen));
        })
        .add_observer(|ev: On<ReplyFailed>, mut log: ResMut<EntityLog>| {
            let seen = Seen::Failed {
                turn: ev.turn,
                error: ev.error.clone(),
                unrecorded: ev.unrecorded_line.clone(),
            };
            log.0.push((ev.entity, ev.npc.clone(), seen));
        });
    h
}

fn seen(h: &Harness) -> &[(Entity, NpcId, Seen)] {
    &h.app.world().resource::<EntityLog>().0
}

/// The events fired on `entity`, in order.
fn seen_on(h: &Harness, entity: Entity) -> Vec<Seen> {
    seen(h)
        .iter()
        .filter(|(e, _, _)| *e == entity)
        .map(|(_, _, s)| s.clone())
        .collect()
}

fn replied_on(h: &Harness, entity: Entity) -> usize {
    seen_on(h, entity)
        .iter()
        .filter(|s| matches!(s, Seen::Replied { .. }))
        .count()
}

/// Runs `f` with the world's commands and applies them, as a game system would.
fn command(h: &mut Harness, f: impl FnOnce(&mut Commands)) {
    let world = h.app.world_mut();
    f(&mut world.commands());
    world.flush();
}

fn state(h: &Harness, entity: Entity) -> NpcState {
    h.app
        .world()
        .get::<NpcState>(entity)
        .expect("an NPC entity has a state")
        .clone()
}

fn spawn_with(h: &mut Harness, id: &str, persona: Handle<Persona>) -> Entity {
    h.app.world_mut().spawn(Npc::new(id, persona)).id()
}

/// The one turn of `events` (started, deltas, reply), checked to be consistent:
/// every event of the turn carries the id, the deltas add up to the reply.
fn one_turn(events: &[Seen], line: &str) -> TurnId {
    let Some(Seen::Started {
        turn,
        line: started,
    }) = events.first()
    else {
        panic!("a turn begins with ReplyStarted: {events:?}");
    };
    assert_eq!(started, line);
    assert!(
        events.iter().all(|e| e.turn() == Some(*turn)),
        "every event of the turn carries its id: {events:?}"
    );
    let streamed: String = events
        .iter()
        .filter_map(|e| match e {
            Seen::Delta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let Some(Seen::Replied { text, .. }) = events.last() else {
        panic!("a turn ends with Replied: {events:?}");
    };
    assert!(events.len() > 2, "the reply streamed: {events:?}");
    assert_eq!(&streamed, text, "the deltas add up to the reply");
    *turn
}

#[test]
fn two_npcs_talked_to_by_entity_fire_entity_events_with_matching_turn_ids() {
    let backend = HeldBackend::new();
    let mut h = watched(&backend);
    let echo7 = h.spawn("echo7", persona("ECHO-7"));
    let guard = h.spawn("guard", persona("Guard"));
    // A per-entity observer hears its own NPC only.
    h.app.init_resource::<GuardReplies>();
    command(&mut h, |commands| {
        commands
            .entity(guard)
            .observe(|ev: On<Replied>, mut replies: ResMut<GuardReplies>| {
                replies.0.push((ev.npc.clone(), ev.turn));
            });
    });

    // One NPC through the trigger, the other through the EntityCommands extension.
    command(&mut h, |commands| {
        commands.trigger(TalkTo::new(echo7, "Hello, I'm Alex."));
        commands.entity(guard).talk("Open the gate.");
    });
    h.run_until("both NPCs replied", |w| {
        let log = &w.resource::<EntityLog>().0;
        [echo7, guard].iter().all(|e| {
            log.iter()
                .any(|(t, _, s)| t == e && matches!(s, Seen::Replied { .. }))
        })
    });

    let echo_turn = one_turn(&seen_on(&h, echo7), "Hello, I'm Alex.");
    let guard_turn = one_turn(&seen_on(&h, guard), "Open the gate.");
    assert_ne!(echo_turn, guard_turn, "each accepted line has its own turn");
    assert!(
        seen(&h)
            .iter()
            .all(|(e, npc, _)| (*e == echo7) == (npc.as_str() == "echo7")),
        "events fire on the entity of the NPC they are about"
    );
    assert_eq!(
        h.replies("echo7"),
        [echo("echo7", "Hello, I'm Alex.")],
        "the entity's line reached the NPC's memory"
    );
    // The messages, the bulk path, carry the same turns.
    let started = h.inbox::<NpcReplyStarted>();
    assert!(started.iter().any(|s| s.npc.as_str() == "echo7"
        && s.turn == echo_turn
        && &*s.line == "Hello, I'm Alex."));
    assert!(
        started
            .iter()
            .any(|s| s.npc.as_str() == "guard" && s.turn == guard_turn)
    );
    let replied = h.inbox::<NpcReplied>();
    assert!(
        replied
            .iter()
            .any(|r| r.npc.as_str() == "echo7" && r.turn == echo_turn)
    );
    assert!(
        replied
            .iter()
            .any(|r| r.npc.as_str() == "guard" && r.turn == guard_turn)
    );
    assert!(h.inbox::<NpcReplyDelta>().iter().all(|d| {
        d.turn
            == if d.npc.as_str() == "echo7" {
                echo_turn
            } else {
                guard_turn
            }
    }));

    // The next line to the same NPC is a new turn, and ends idle.
    command(&mut h, |commands| {
        commands.entity(echo7).talk("Where is the reactor?");
    });
    h.run_until("ECHO-7 answered again", |w| {
        w.resource::<EntityLog>()
            .0
            .iter()
            .filter(|(e, _, s)| *e == echo7 && matches!(s, Seen::Replied { .. }))
            .count()
            == 2
    });
    let events = seen_on(&h, echo7);
    let second_start = events
        .iter()
        .rposition(|s| matches!(s, Seen::Started { .. }))
        .unwrap();
    let second = one_turn(&events[second_start..], "Where is the reactor?");
    assert_ne!(second, echo_turn);
    assert!(
        second > echo_turn && second > guard_turn,
        "turn ids count up"
    );
    assert_eq!(state(&h, echo7), NpcState::Idle);
    assert_eq!(state(&h, guard), NpcState::Idle);
    let guard_replies = &h.app.world().resource::<GuardReplies>().0;
    assert_eq!(
        guard_replies.as_slice(),
        [(NpcId::new("guard"), guard_turn)]
    );
}

#[derive(Resource, Default)]
struct GuardReplies(Vec<(NpcId, TurnId)>);

#[test]
fn an_interrupt_mid_stream_records_what_streamed_and_the_queue_carries_on() {
    let backend = HeldBackend::new();
    let mut h = watched(&backend);
    let npc = h.spawn("echo7", persona("ECHO-7"));
    assert_eq!(state(&h, npc), NpcState::Idle, "a new NPC is idle");
    command(&mut h, |c| {
        c.entity(npc).talk("My name is Alex.");
    });
    h.wait_for_replies(1);

    let held =
        backend.push_held_with_late_piece(&["The reactor ", "is — ", "ünd "], "down.", "LATE ");
    // The queued line's reply is held too, so the cancelled request's late piece
    // arrives while another reply of the same NPC is in flight.
    let next = backend.push_held(&["Nobody ", "but me."], "");
    command(&mut h, |c| {
        c.entity(npc)
            .talk("What happened here?")
            .talk("Is anyone there?");
    });
    h.run_until("the NPC thinks", |w| {
        matches!(w.get::<NpcState>(npc), Some(NpcState::Thinking { .. }))
    });
    let Some(Seen::Started {
        turn: held_turn, ..
    }) = seen_on(&h, npc)
        .into_iter()
        .rfind(|s| matches!(s, Seen::Started { .. }))
    else {
        unreachable!()
    };
    assert_eq!(state(&h, npc).turn(), Some(held_turn));
    let requests = h.app.world().resource::<NpcRequests>();
    assert_eq!(requests.reply_turn(&NpcId::new("echo7")), Some(held_turn));
    assert_eq!(
        requests.queued_lines(&NpcId::new("echo7")).count(),
        1,
        "the second line waits"
    );

    held.start.release();
    h.run_until("the NPC is mid-sentence", |w| {
        w.get::<NpcState>(npc)
            .is_some_and(|s| s.partial() == "The reactor is — ünd")
    });
    assert_eq!(
        state(&h, npc),
        NpcState::Speaking {
            turn: held_turn,
            // The space after the last word waits for the next one.
            partial: "The reactor is — ünd".into()
        }
    );

    command(&mut h, |c| {
        c.entity(npc).interrupt_npc();
    });
    h.app.update();
    // The interrupted turn failed with the index of the recorded part...
    let failed = h
        .inbox::<NpcReplyFailed>()
        .iter()
        .find(|f| f.turn == Some(held_turn))
        .expect("the interrupted turn reports a failure")
        .clone();
    assert_eq!(failed.error, ReplyError::Interrupted { kept: Some(3) });
    assert_eq!(
        failed.unrecorded_line, None,
        "the player's line is in the log"
    );
    assert!(
        seen_on(&h, npc).iter().any(|s| matches!(
            s,
            Seen::Failed { turn: Some(t), error: ReplyError::Interrupted { .. }, .. } if *t == held_turn
        )),
        "the entity hears the failure too"
    );
    // ...and the waiting line, which kept its turn, starts next.
    h.run_until("the queued line starts", |w| {
        matches!(w.get::<NpcState>(npc), Some(NpcState::Thinking { turn }) if *turn > held_turn)
    });
    let queued_turn = state(&h, npc).turn().unwrap();
    // The backend's worker now streams a late piece of the cancelled request.
    held.finish.release();
    let late = backend.clone();
    h.run_until("the late piece is sent", move |_| {
        late.late_pieces_sent() == 1
    });
    // The piece is in the plugin's channel now; a frame collects it.
    h.app.update();
    h.app.update();
    assert_eq!(
        state(&h, npc),
        NpcState::Thinking { turn: queued_turn },
        "the late piece is not taken for the new turn's"
    );
    next.start.release();
    next.finish.release();
    h.wait_for_replies(2);
    h.settle();
    assert!(
        !h.streamed().contains("LATE"),
        "a cancelled request delivers no late pieces"
    );
    assert!(
        !seen(&h)
            .iter()
            .any(|(_, _, s)| matches!(s, Seen::Delta { text, .. } if text.contains("LATE"))),
    );

    let expected = [
        (Role::User, "My name is Alex.".to_owned()),
        (Role::Assistant, echo("echo7", "My name is Alex.")),
        (Role::User, "What happened here?".to_owned()),
        (Role::Assistant, "The reactor is — ünd".to_owned()),
        (Role::User, "Is anyone there?".to_owned()),
        (Role::Assistant, "Nobody but me.".to_owned()),
    ];
    assert_eq!(h.log("echo7"), expected, "memory holds what the player saw");
    // The model saw the cut-off reply when it answered the next line.
    let last = backend.reply_requests().pop().unwrap();
    assert!(
        last.messages
            .iter()
            .any(|m| m.content.as_ref() == "The reactor is — ünd")
    );
    // The queued line's turn: accepted after the held one, and used throughout.
    let events = seen_on(&h, npc);
    let start = events
        .iter()
        .rposition(|s| matches!(s, Seen::Started { .. }))
        .unwrap();
    assert_eq!(one_turn(&events[start..], "Is anyone there?"), queued_turn);
    assert!(
        !events
            .iter()
            .any(|s| matches!(s, Seen::Replied { turn, .. } if *turn == held_turn)),
        "no reply is reported for the interrupted turn"
    );
    assert_eq!(state(&h, npc), NpcState::Idle);
}

#[test]
fn an_interrupt_before_anything_streamed_records_nothing_and_can_clear_the_queue() {
    let backend = HeldBackend::new();
    let mut h = watched(&backend);
    let npc = h.spawn("echo7", persona("ECHO-7"));
    let _held = backend.push_held(&["Never ", "shown."], "");
    h.say("echo7", "First line.");
    h.say("echo7", "Second line.");
    h.run_until("the NPC thinks", |w| {
        matches!(w.get::<NpcState>(npc), Some(NpcState::Thinking { .. }))
    });
    // The request runs on a task the pool may not have started yet. Interrupted
    // before the backend saw it, the held step would stay queued and hold the next
    // line's reply instead: wait until the backend holds this one.
    let seen = backend.clone();
    h.run_until("the backend has the request", move |_| {
        seen.reply_requests().len() == 1
    });
    let thinking = state(&h, npc).turn().unwrap();

    h.app
        .world_mut()
        .write_message(InterruptNpc::clearing_queue("echo7"));
    h.app.update();
    let failed = h.inbox::<NpcReplyFailed>().to_vec();
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert_eq!(failed[0].turn, Some(thinking));
    assert_eq!(failed[0].error, ReplyError::Interrupted { kept: None });
    assert_eq!(failed[0].unrecorded_line, None);
    let dropped_turn = failed[1].turn.expect("a queued line has a turn");
    assert!(dropped_turn > thinking);
    assert_eq!(failed[1].error, ReplyError::Interrupted { kept: None });
    assert_eq!(failed[1].unrecorded_line.as_deref(), Some("Second line."));
    assert_eq!(state(&h, npc), NpcState::Idle);
    assert_eq!(
        h.log("echo7"),
        [(Role::User, "First line.".to_owned())],
        "nothing streamed, so only the player's line is kept"
    );
    let requests = h.app.world().resource::<NpcRequests>();
    assert!(requests.is_idle(), "the queue was cleared");

    // The NPC answers the next line normally.
    h.say("echo7", "Third line.");
    h.wait_for_replies(1);
    assert_eq!(h.replies("echo7"), [echo("echo7", "Third line.")]);
    assert_eq!(h.log("echo7").len(), 3);
    assert_eq!(state(&h, npc), NpcState::Idle);
}

#[test]
fn an_npc_id_change_rebinds_the_entity_and_removal_ends_its_events() {
    let backend = HeldBackend::new();
    let mut h = watched(&backend);
    let npc = h.spawn("echo7", persona("ECHO-7"));
    command(&mut h, |c| {
        c.entity(npc).talk("Hello.");
    });
    h.wait_for_replies(1);

    // Same entity, new id (and persona): it speaks for "nova" from now on.
    let nova_persona = h
        .app
        .world_mut()
        .resource_mut::<Assets<Persona>>()
        .add(persona("NOVA"));
    h.app
        .world_mut()
        .entity_mut(npc)
        .insert(Npc::new("nova", nova_persona));
    {
        let index = h.app.world().resource::<NpcEntities>();
        assert!(index.get(&NpcId::new("echo7")).is_empty());
        assert_eq!(index.get(&NpcId::new("nova")), [npc]);
    }
    command(&mut h, |c| {
        c.entity(npc).talk("Who are you now?");
    });
    h.wait_for_replies(2);
    assert_eq!(h.replies("nova"), [echo("nova", "Who are you now?")]);
    assert_eq!(h.log("echo7").len(), 2, "the old id keeps its memory");
    assert_eq!(replied_on(&h, npc), 2);
    // The old id still answers by message, but no longer on this entity.
    h.say("echo7", "Still there?");
    h.wait_for_replies(3);
    assert_eq!(h.replies("echo7").len(), 2);
    assert_eq!(replied_on(&h, npc), 2, "the entity speaks for nova only");

    // Removing Npc ends the entity's events; the memory stays.
    h.app.world_mut().entity_mut(npc).remove::<Npc>();
    assert!(
        h.app
            .world()
            .resource::<NpcEntities>()
            .get(&NpcId::new("nova"))
            .is_empty()
    );
    h.say("nova", "Anyone?");
    h.wait_for_replies(4);
    assert_eq!(h.replies("nova").len(), 2, "nova still answers by message");
    assert_eq!(replied_on(&h, npc), 2, "nothing fires on the entity");
    assert_eq!(h.log("nova").len(), 4);
    // Talking to an entity that is no NPC any more is dropped, not misrouted.
    command(&mut h, |c| {
        c.entity(npc).talk("Hello?");
    });
    for _ in 0..3 {
        h.app.update();
    }
    assert_eq!(h.log("nova").len(), 4);
}

#[test]
fn two_entities_with_one_id_both_get_its_events_until_one_is_despawned() {
    let backend = HeldBackend::new();
    let mut h = watched(&backend);
    let handle = h
        .app
        .world_mut()
        .resource_mut::<Assets<Persona>>()
        .add(persona("Twin"));
    let old = spawn_with(&mut h, "twin", handle.clone());
    let new = spawn_with(&mut h, "twin", handle);
    h.app.update();
    assert_eq!(
        h.app
            .world()
            .resource::<NpcEntities>()
            .get(&NpcId::new("twin")),
        [old, new]
    );
    // A line through either entity reaches the one memory, and both hear it.
    command(&mut h, |c| {
        c.entity(new).talk("Which one of you?");
    });
    h.wait_for_replies(1);
    assert_eq!(replied_on(&h, old), 1);
    assert_eq!(replied_on(&h, new), 1);
    assert_eq!(
        seen_on(&h, old),
        seen_on(&h, new),
        "both entities get the same events"
    );

    h.app.world_mut().entity_mut(old).despawn();
    assert_eq!(
        h.app
            .world()
            .resource::<NpcEntities>()
            .get(&NpcId::new("twin")),
        [new]
    );
    h.say("twin", "And now?");
    h.wait_for_replies(2);
    assert_eq!(replied_on(&h, new), 2);
    assert_eq!(replied_on(&h, old), 1, "a despawned entity hears nothing");
    assert_eq!(h.log("twin").len(), 4, "one memory for the id");
}
