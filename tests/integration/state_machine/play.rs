//! The system under test: a real app with the plugin, driven one step at a time,
//! and the invariants checked after each.

use std::path::PathBuf;

use bevy::prelude::*;
use bevy_npc_memory::backends::ChatRequest;
use bevy_npc_memory::memory::{LogIndex, MemoryConfig, Origin, SpeakerId, estimate_prompt_tokens};
use bevy_npc_memory::prelude::*;
use bevy_npc_memory::saves::SaveGame;

use super::backend::{Answer, Stage, tags};
use super::conversing::Conversing;
use super::lifts::{self, LIFT_WAIT};
use super::replay::Played;
use super::steps::{Jump, Lift, NPCS, Reply, Scope, Step};
use super::turns::{Said, Seen};
use crate::support::actions::OpenDoor;
use crate::support::{Harness, Inbox, add_inbox, temp_dir};
use bevy_npc_memory::NpcMemoryClock;
use bevy_npc_memory::actions::NpcActed;
use bevy_npc_memory::conversations::{ConversationEnded, ConversationLine, ConversationStarted};
use bevy_npc_memory::dialogue::InterruptNpc;
use bevy_npc_memory::dialogue::NpcReplyDelta;
use bevy_npc_memory::dialogue::NpcReplyStarted;
use bevy_npc_memory::dialogue::ReconfigureNpcMemory;
use bevy_npc_memory::dialogue::RemovePinnedFact;
use bevy_npc_memory::dialogue::SummarizeNow;
use bevy_npc_memory::dialogue::SwitchBackend;
use bevy_npc_memory::knowledge::KnowledgeShared;
use bevy_npc_memory::knowledge::MarkPrivate;
use bevy_npc_memory::knowledge::ShareKnowledge;
use bevy_npc_memory::lore::AddLore;
use bevy_npc_memory::lore::RemoveLore;
use bevy_npc_memory::lore::UpdateLore;
use bevy_npc_memory::memory::ActionOutcome;
use bevy_npc_memory::memory::LoreEntry;
use bevy_npc_memory::memory::LoreScope;
use bevy_npc_memory::saves::MemoryRestoreFailed;
use bevy_npc_memory::saves::MemoryRestored;
use bevy_npc_memory::saves::NpcMemorySnapshot;
use bevy_npc_memory::schedule::SetMemoryTier;

/// A tag that must stay with its NPC, and the NPCs that held it before it became
/// private (a line marked private after it was passed on).
pub(super) struct Private {
    pub(super) tag: String,
    pub(super) owner: usize,
    pub(super) held_by: Vec<usize>,
    /// Said by the co-op player: prompts the owner answers the game's own
    /// player from leave it out, and the other way round.
    pub(super) co_op: bool,
}

/// The second player of the co-op lines.
fn co_op_player() -> SpeakerId {
    SpeakerId::new("bob", "Bob").unwrap()
}

pub(super) type Log = Vec<(Role, String)>;

pub struct Play {
    pub(super) h: Harness,
    pub(super) stage: Stage,
    pub(super) ids: Vec<NpcId>,
    pub(super) entities: Vec<Entity>,
    pub(super) personas: Vec<(Handle<Persona>, String)>,
    pub(super) dir: PathBuf,
    pub(super) next_tag: u64,
    pub(super) private: Vec<Private>,
    /// Tags of the lines the co-op player said.
    pub(super) co_op_tags: std::collections::HashSet<String>,
    /// Every NPC's log before the step, and whether the step may shrink it.
    pub(super) before: Vec<Log>,
    pub(super) may_shrink: Vec<bool>,
    /// Every NPC's logs after every step since the run began: what a killed
    /// autosave may hold a prefix of.
    pub(super) history: Vec<Vec<Log>>,
    pub(super) requests: Vec<ChatRequest>,
    pub(super) talks: usize,
    /// Set by a conversation step.
    pub(super) conversing: Option<Conversing>,
    pub(super) snapshot: Option<SaveGame>,
    /// Saves the game wrote and has not loaded yet: loading a file makes it the
    /// autosave slot, so what it holds then changes.
    pub(super) saves: Vec<(PathBuf, SaveGame)>,
    /// Where autosave writes.
    pub(super) slot: PathBuf,
    pub(super) files: u64,
    /// How many times NPCs had acted before the step.
    pub(super) acted_before: usize,
    /// Every line the player said to an NPC that was there, by its tag.
    pub(super) said: std::collections::HashMap<String, Said>,
    /// How many replies and failures had arrived before the step.
    pub(super) seen_before: Seen,
    /// What this run played, kept as JSON if it fails.
    played: Played,
}

/// A run that fails keeps its sequence, to be played again (see `replay.rs`).
impl Drop for Play {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.played.keep();
        }
    }
}

fn open_door(call: In<ActionInvocation<OpenDoor>>) -> ActionOutcome {
    ActionOutcome::Done(format!("The {} door opens.", call.args.door))
}

impl Play {
    pub fn new(ids: &[String]) -> Self {
        static RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let run = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let played = Played {
            ids: ids.to_vec(),
            steps: Vec::new(),
        };
        let dir = temp_dir(&format!("state-machine-{run}"));
        let stage = Stage::default();
        let play_slot = dir.join("auto.json");
        // A deferred action nobody answers fails as timed out, soon.
        // A background NPC's summaries wait, briefly, so runs stay quick.
        let mut settings = NpcMemorySettings {
            action_timeout: LIFT_WAIT,
            ..NpcMemorySettings::default()
        };
        settings.schedule.background_delay = std::time::Duration::from_millis(30);
        let mut h = Harness::new(
            NpcMemoryPlugin::default()
                .with_settings(settings)
                .with_backend(stage.clone())
                .with_window(6)
                .with_autosave(play_slot.clone()),
        );
        h.wait_secs = 30;
        h.app.register_npc_action(open_door);
        lifts::install(&mut h.app);
        add_inbox::<NpcActed>(&mut h.app);
        add_inbox::<MemoryRestored>(&mut h.app);
        add_inbox::<MemoryRestoreFailed>(&mut h.app);
        add_inbox::<KnowledgeShared>(&mut h.app);
        add_inbox::<ConversationStarted>(&mut h.app);
        add_inbox::<ConversationLine>(&mut h.app);
        add_inbox::<ConversationEnded>(&mut h.app);
        let personas = [
            Persona::new("ECHO-7", "You are ECHO-7, the bunker AI.")
                .with_window(4)
                .with_summary_threshold(2),
            Persona::new("RUSTY-3", "You are RUSTY-3, a maintenance robot.")
                .with_features(bevy_npc_memory::PersonaFeatures::layered(600)),
            Persona::new("QUILL", "You are Quill, the quartermaster.")
                .with_actions(["open_door", "call_lift"]),
        ];
        let ids: Vec<NpcId> = ids.iter().map(|id| NpcId::new(id.as_str())).collect();
        let mut entities = Vec::new();
        let mut handles = Vec::new();
        for (id, persona) in ids.iter().zip(personas) {
            let text = persona.system_prompt.clone();
            let handle = h
                .app
                .world_mut()
                .resource_mut::<Assets<Persona>>()
                .add(persona);
            entities.push(
                h.app
                    .world_mut()
                    .spawn(Npc::new(id.clone(), handle.clone()))
                    .id(),
            );
            handles.push((handle, text));
        }
        let mut play = Self {
            h,
            stage,
            ids,
            entities,
            personas: handles,
            dir,
            next_tag: 0,
            private: Vec::new(),
            co_op_tags: Default::default(),
            before: vec![Vec::new(); NPCS],
            may_shrink: vec![false; NPCS],
            history: vec![Vec::new(); NPCS],
            requests: Vec::new(),
            talks: 0,
            conversing: None,
            snapshot: None,
            saves: Vec::new(),
            slot: play_slot,
            files: 0,
            acted_before: 0,
            said: Default::default(),
            seen_before: Seen::default(),
            played,
        };
        let ids = play.ids.clone();
        play.h.run_until("every NPC has memory", |world| {
            let memory = world.resource::<ContextMemoryManager>();
            ids.iter().all(|id| memory.get(id).is_some())
        });
        play
    }

    pub(super) fn log(&self, npc: usize) -> Log {
        self.h
            .app
            .world()
            .resource::<ChatLogs>()
            .get(&self.ids[npc])
            .map(|log| {
                log.messages()
                    .iter()
                    .map(|m| (m.role, m.content.to_string()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether `npc`'s log holds `tag` anywhere, in an entry's text or in where it
    /// came from (hearsay of a reply names the question it answered).
    pub(super) fn holds(&self, npc: usize, tag: &str) -> bool {
        let needle = format!("⟦{tag}⟧");
        let logs = self.h.app.world().resource::<ChatLogs>();
        logs.get(&self.ids[npc]).is_some_and(|log| {
            log.messages()
                .iter()
                .any(|m| m.content.contains(&needle) || format!("{:?}", m.origin).contains(&needle))
        })
    }

    /// The lines other NPCs said to `npc` that its log holds as private.
    pub fn private_npc_lines(&self, npc: usize) -> usize {
        let logs = self.h.app.world().resource::<ChatLogs>();
        logs.get(&self.ids[npc]).map_or(0, |log| {
            let by_npc = |m: &&bevy_npc_memory::memory::ChatMessage| {
                m.speaker.as_ref().is_some_and(|s| s.as_npc().is_some())
            };
            let private =
                |m: &&bevy_npc_memory::memory::ChatMessage| m.origin == Origin::SaidPrivately;
            log.messages().iter().filter(by_npc).filter(private).count()
        })
    }

    /// The estimated tokens and the lines (besides system notes) of the last
    /// reply prompt `npc` built.
    pub fn last_reply_size(&self, npc: usize) -> (usize, usize) {
        let contexts = self.h.app.world().resource::<ContextMemoryManager>();
        let built = contexts.get(&self.ids[npc]).and_then(|c| c.last_prompt());
        built.map_or((0, 0), |prompt| {
            let lines = prompt.messages.iter().filter(|m| m.role != Role::System);
            (estimate_prompt_tokens(&prompt.messages), lines.count())
        })
    }

    /// The newest line said to `npc` (a player's or another NPC's), empty before
    /// the first.
    pub(super) fn newest_line(&self, npc: usize) -> String {
        let logs = self.h.app.world().resource::<ChatLogs>();
        logs.get(&self.ids[npc])
            .and_then(|log| {
                log.messages().iter().rev().find(|m| {
                    m.role == Role::User && matches!(m.origin, Origin::Said | Origin::SaidPrivately)
                })
            })
            .map(|m| m.content.to_string())
            .unwrap_or_default()
    }

    /// After a load, what is private is what the loaded memory marks so: a line
    /// marked private after the save (or after the record a kill cut off) is
    /// shareable again, as it was then. Lines private from the start stay
    /// private, whoever holds them.
    pub(super) fn private_as_loaded(&mut self) {
        let logs = self.h.app.world().resource::<ChatLogs>();
        let mut private = Vec::new();
        for (owner, id) in self.ids.iter().enumerate() {
            let Some(log) = logs.get(id) else { continue };
            for message in log.messages() {
                if message.origin != Origin::SaidPrivately {
                    continue;
                }
                for tag in tags(&message.content) {
                    let at_birth = tag.trim_start_matches("r:").starts_with('p');
                    private.push((tag.to_owned(), owner, at_birth));
                }
            }
        }
        self.private
            .retain(|p| p.tag.trim_start_matches("r:").starts_with('p'));
        for (tag, owner, at_birth) in private {
            if at_birth {
                continue;
            }
            let held_by = (0..NPCS)
                .filter(|&other| other != owner && self.holds(other, &tag))
                .collect();
            let co_op = self.co_op_tags.contains(tag.trim_start_matches("r:"));
            self.private.push(Private {
                tag,
                owner,
                held_by,
                co_op,
            });
        }
    }

    pub(super) fn current(&self) -> SaveGame {
        let snapshot = self.h.app.world().resource::<NpcMemorySnapshot>();
        assert!(!snapshot.is_pending(), "the snapshot is restored by now");
        snapshot.save().expect("the snapshot is readable")
    }

    pub(super) fn write<M: Message>(&mut self, message: M) {
        self.h.app.world_mut().write_message(message);
        self.h.app.update();
    }

    pub(super) fn count<M: Send + Sync + 'static>(&self) -> usize {
        self.h.inbox::<M>().len()
    }

    /// A line said privately to `owner` under `tag`: it, and every reply to it
    /// (`r:` and its tag), must stay with that NPC.
    pub(super) fn said_privately(&mut self, tag: &str, owner: usize, co_op: bool) {
        for tag in [tag.to_owned(), format!("r:{tag}")] {
            self.private.push(Private {
                tag,
                owner,
                held_by: Vec::new(),
                co_op,
            });
        }
    }

    pub(super) fn tag(&mut self, kind: char) -> String {
        self.next_tag += 1;
        format!("{kind}{}", self.next_tag)
    }

    /// Runs each step and checks the invariants after it.
    pub fn run_all(&mut self, steps: &[Step]) {
        for step in steps {
            self.run(step);
            self.check();
        }
    }

    pub fn run(&mut self, step: &Step) {
        self.played.steps.push(step.clone());
        self.before = (0..NPCS).map(|npc| self.log(npc)).collect();
        self.may_shrink = vec![false; NPCS];
        self.conversing = None;
        self.acted_before = self.count::<NpcActed>();
        self.seen_before = self.seen();
        match step {
            Step::Talk {
                npc,
                text,
                private,
                by_entity,
                reply,
                co_op,
            } => self.talk(*npc, text, (*private, *co_op), *by_entity, reply),
            Step::Witness { witnesses, text } => {
                let tag = self.tag('w');
                let ids: Vec<NpcId> = witnesses.iter().map(|&w| self.ids[w].clone()).collect();
                self.write(NpcWitnessed::new(ids, format!("⟦{tag}⟧ {text}")));
            }
            Step::ShareEntry { from, to, index } => {
                let len = self.before[*from].len() as u64;
                // Mostly an entry that exists; now and then one that does not.
                let index = if len > 0 && index % 8 != 0 {
                    index % len
                } else {
                    *index
                };
                let message = ShareKnowledge::about_entry(
                    self.ids[*from].clone(),
                    self.ids[*to].clone(),
                    index,
                );
                self.write(message);
            }
            Step::ShareQuery { from, to, query } => {
                let message = ShareKnowledge::about_query(
                    self.ids[*from].clone(),
                    self.ids[*to].clone(),
                    query.clone(),
                    8,
                );
                self.write(message);
            }
            Step::ShareFact { from, to } => {
                let message = ShareKnowledge::about_fact(
                    self.ids[*from].clone(),
                    self.ids[*to].clone(),
                    FactKey::CURRENT_GOAL,
                );
                self.write(message);
            }
            Step::MarkPrivate { npc, index } => self.mark_private(*npc, *index),
            Step::SetFact { npc, value } => {
                let message = SetPinnedFact::new(
                    self.ids[*npc].clone(),
                    FactKey::CURRENT_GOAL,
                    value.clone(),
                );
                self.write(message);
            }
            Step::RemoveFact { npc } => {
                self.write(RemovePinnedFact::new(
                    self.ids[*npc].clone(),
                    FactKey::CURRENT_GOAL,
                ));
            }
            Step::AddLore { id, scope, text } => {
                let scope = match scope {
                    Scope::World => LoreScope::World,
                    Scope::Npc(npc) => LoreScope::npc(self.ids[*npc].clone()),
                };
                let text = self.lore_text(text);
                let entry = LoreEntry::new(format!("lore-{id}"), text).with_scope(scope);
                self.write(AddLore::new(entry));
            }
            Step::UpdateLore { id, text } => {
                let text = self.lore_text(text);
                self.write(UpdateLore::new(format!("lore-{id}"), text))
            }
            Step::RemoveLore { id } => self.write(RemoveLore::new(format!("lore-{id}"))),
            Step::ChangePersona { npc, text } => {
                let (handle, prompt) = &mut self.personas[*npc];
                *prompt = text.clone();
                let handle = handle.clone();
                let mut personas = self.h.app.world_mut().resource_mut::<Assets<Persona>>();
                personas
                    .get_mut(&handle)
                    .expect("the persona")
                    .system_prompt = text.clone();
                self.h.app.update();
            }
            Step::Reconfigure {
                npc,
                window,
                budget,
            } => {
                let mut config = MemoryConfig::with_window(*window);
                if let Some(budget) = budget {
                    config.features = bevy_npc_memory::memory::MemoryFeatures::layered(*budget);
                }
                self.write(ReconfigureNpcMemory::new(self.ids[*npc].clone(), config));
            }
            Step::SummarizeNow { npc } => self.write(SummarizeNow::new(self.ids[*npc].clone())),
            Step::SwitchBackend { offline } => {
                // Offline summaries, or replies and summaries from another
                // backend object. Offline replies stay out: they quote the
                // summary, private lines and all, in replies to any line, and
                // what a model says in reply to a public line is its own words.
                let switch = if *offline {
                    SwitchBackend::summaries(OfflineBackend::default())
                } else {
                    SwitchBackend::both(self.stage.clone())
                };
                self.write(switch);
            }
            Step::Clear { npc } => {
                self.may_shrink[*npc] = true;
                self.write(ClearNpcMemory::new(self.ids[*npc].clone()));
            }
            Step::Save => self.save(),
            Step::Load => self.load(),
            Step::TakeSnapshot => self.snapshot = Some(self.current()),
            Step::RestoreSnapshot => self.restore(),
            Step::Kill { cut } => self.kill(*cut),
            Step::Converse(talks) => self.converse(talks),
            Step::Clock { jump } => {
                let mut clock = self.h.app.world_mut().resource_mut::<NpcMemoryClock>();
                match *jump {
                    Jump::On(seconds) => clock.advance(seconds),
                    Jump::Back(seconds) => {
                        let now = clock.seconds();
                        clock.set_seconds(now - seconds);
                    }
                }
                self.h.app.update();
            }
            Step::Respawn { npc, stays_away } => self.respawn(*npc, *stays_away),
            Step::AnswerLate { npc, pick } => self.answer_late(*npc, *pick),
            Step::LoadDamaged { target, damage } => self.load_damaged(*target, damage),
            Step::ImportUnity(import) => self.import_unity(import),
            Step::Tier { npc, tier } => self.write(SetMemoryTier {
                npc: self.ids[*npc].clone(),
                tier: *tier,
            }),
        }
        self.h.settle();
        self.wait_for_usage();
        self.requests = self.stage.take_requests();
        for npc in 0..NPCS {
            let log = self.log(npc);
            self.history[npc].push(log);
        }
    }

    fn talk(
        &mut self,
        npc: usize,
        text: &str,
        (private, co_op): (bool, bool),
        by_entity: bool,
        reply: &Reply,
    ) {
        let tag = self.tag(if private { 'p' } else { 's' });
        if co_op {
            self.co_op_tags.insert(tag.clone());
        }
        if private {
            self.said_privately(&tag, npc, co_op);
        }
        let answers = match reply {
            Reply::Say(words) => vec![Answer::Say(words.clone())],
            Reply::Fail => vec![Answer::Fail],
            Reply::Interrupted => vec![Answer::Hang],
            Reply::CutOff(words) => vec![Answer::Stall(words.clone())],
            Reply::Act {
                door,
                lift: lift @ (Lift::Answered | Lift::NeverAnswered),
                ..
            } => {
                let floor = lifts::floor(*lift == Lift::Answered, door);
                let arguments = serde_json::json!({ "floor": floor }).to_string();
                vec![
                    Answer::Call {
                        action: "call_lift",
                        arguments,
                    },
                    Answer::Say(door.clone()),
                ]
            }
            Reply::Act { door, valid, .. } => {
                let arguments = if *valid {
                    serde_json::json!({ "door": door }).to_string()
                } else {
                    door.clone()
                };
                vec![
                    Answer::Call {
                        action: "open_door",
                        arguments,
                    },
                    Answer::Say(door.clone()),
                ]
            }
        };
        self.stage.answer(&self.ids[npc], answers);
        let line = format!("⟦{tag}⟧ {text}");
        let outcomes = self.count::<NpcReplied>() + self.count::<NpcReplyFailed>();
        let started = self.count::<NpcReplyStarted>();
        let streamed = self.count::<NpcReplyDelta>();
        // A line to an entity that is gone is dropped, as `TalkTo` documents:
        // there is no NPC to answer it or to hand it back for.
        let gone = by_entity && self.h.app.world().get::<Npc>(self.entities[npc]).is_none();
        if by_entity {
            let mut event = TalkTo::new(self.entities[npc], line);
            if private {
                event = event.privately();
            }
            if co_op {
                event = event.from_speaker(co_op_player());
            }
            self.h.app.world_mut().trigger(event);
            self.h.app.update();
        } else {
            let mut message = TalkToNpc::new(self.ids[npc].clone(), line);
            if private {
                message = message.privately();
            }
            if co_op {
                message = message.from_speaker(co_op_player());
            }
            self.write(message);
        }
        if gone {
            self.h.settle();
            assert!(
                (0..NPCS).all(|other| !self.holds(other, &tag)),
                "a line to a despawned entity reached a log"
            );
            return;
        }
        self.talks += 1;
        let line = format!("⟦{tag}⟧ {text}");
        self.said.insert(tag, Said { npc, line });
        let (what, cut_off) = match reply {
            Reply::Interrupted => ("the reply starts or the line is refused", false),
            Reply::CutOff(_) => ("the reply streams or the line is refused", true),
            _ => return,
        };
        self.h.run_until(what, |world| {
            let begun = if cut_off {
                world.resource::<Inbox<NpcReplyDelta>>().0.len() > streamed
            } else {
                world.resource::<Inbox<NpcReplyStarted>>().0.len() > started
            };
            begun
                || world.resource::<Inbox<NpcReplied>>().0.len()
                    + world.resource::<Inbox<NpcReplyFailed>>().0.len()
                    > outcomes
        });
        self.write(InterruptNpc::new(self.ids[npc].clone()));
    }

    /// Despawns the NPC's entity and, unless it stays away, spawns a new one with
    /// the same id and persona. While away, a line by entity goes to the old,
    /// despawned entity, which must fail cleanly.
    fn respawn(&mut self, npc: usize, stays_away: bool) {
        let world = self.h.app.world_mut();
        if world.get_entity(self.entities[npc]).is_ok() {
            world.despawn(self.entities[npc]);
        }
        self.h.app.update();
        if !stays_away {
            let npc_component = Npc::new(self.ids[npc].clone(), self.personas[npc].0.clone());
            self.entities[npc] = self.h.app.world_mut().spawn(npc_component).id();
            self.h.app.update();
        }
    }

    fn mark_private(&mut self, npc: usize, index: u64) {
        let log = &self.before[npc];
        let index = if log.is_empty() {
            index
        } else {
            index % log.len() as u64
        };
        let by_npc = self
            .h
            .app
            .world()
            .resource::<ChatLogs>()
            .get(&self.ids[npc])
            .and_then(|log| log.messages().get(index as usize))
            .is_some_and(|m| m.speaker.as_ref().is_some_and(|s| s.as_npc().is_some()));
        // Only a player line can be marked, not another NPC's; replies to it
        // follow it.
        if let (Some((Role::User, text)), false) = (log.get(index as usize), by_npc) {
            // The line and every reply to it become private: tags of the line
            // itself, and replies to it, which carry `r:` and the line's tag.
            let own: Vec<String> = tags(text).iter().map(|t| t.to_string()).collect();
            let co_op = own.iter().any(|t| self.co_op_tags.contains(t));
            let mut marked = own.clone();
            marked.extend(
                own.iter()
                    .filter(|t| !t.starts_with("r:"))
                    .map(|t| format!("r:{t}")),
            );
            for tag in marked {
                let held_by = (0..NPCS)
                    .filter(|&other| other != npc && self.holds(other, &tag))
                    .collect();
                self.private.push(Private {
                    tag,
                    owner: npc,
                    held_by,
                    co_op,
                });
            }
        }
        self.write(MarkPrivate::new(self.ids[npc].clone(), index as LogIndex));
    }
}
