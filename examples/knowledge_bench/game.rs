//! The game: one headless app per scenario and budget that replays the timeline
//! through the plugin, and probes the prompt each question would send.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use bevy::prelude::*;
use bevy_npc_memory::NpcMemoryClock;
use bevy_npc_memory::backends::Purpose;
use bevy_npc_memory::backends::ScriptedBackend;
use bevy_npc_memory::dialogue::NpcRequests;
use bevy_npc_memory::knowledge::KnowledgeShared;
use bevy_npc_memory::knowledge::ShareKnowledge;
use bevy_npc_memory::lore::AddLore;
use bevy_npc_memory::lore::NpcLore;
use bevy_npc_memory::lore::UpdateLore;
use bevy_npc_memory::memory::LoreEntry;
use bevy_npc_memory::memory::LoreScope;
use bevy_npc_memory::memory::PromptLanguage;
use bevy_npc_memory::memory::{Line, LogIndex, NpcMemory, Origin, PromptMessage, SharedKnowledge};
use bevy_npc_memory::prelude::*;

use crate::data::{Item, ItemKind, LoreSpec, NpcSpec, Question, Scenario, ScopeSpec, SpokenLine};
use crate::{LORE_RECENT_MESSAGES, WAIT};
use bevy_npc_memory::conversations::{ConversationEnd, ConversationEnded, StartConversation};
use bevy_npc_memory::memory::{ConversationRules, ConversationStop};

/// What the plugin reported, collected every frame.
#[derive(Resource, Default)]
struct Outcomes {
    replied: Vec<NpcReplied>,
    failed: Vec<NpcReplyFailed>,
    shared: Vec<KnowledgeShared>,
    ended: Vec<ConversationEnded>,
}

/// The game time the pending reply arrives at: set between taking the player's
/// line and collecting the reply, so the line and the reply are stamped with their
/// own times whether the reply takes one frame or several.
#[derive(Resource, Default)]
struct ReplyAt(Option<f64>);

fn reply_clock(reply: Res<ReplyAt>, mut clock: ResMut<NpcMemoryClock>) {
    if let Some(t) = reply.0 {
        clock.set_seconds(t);
    }
}

fn collect(
    mut replied: MessageReader<NpcReplied>,
    mut failed: MessageReader<NpcReplyFailed>,
    mut shared: MessageReader<KnowledgeShared>,
    mut ended: MessageReader<ConversationEnded>,
    mut out: ResMut<Outcomes>,
) {
    out.ended.extend(ended.read().cloned());
    out.replied.extend(replied.read().cloned());
    out.failed.extend(failed.read().cloned());
    out.shared.extend(shared.read().cloned());
}

/// How the replay went, beyond the scores.
#[derive(Default, Clone)]
pub(crate) struct ReplayStats {
    pub(crate) lines: usize,
    pub(crate) events: usize,
    pub(crate) tells_sent: usize,
    /// Tells whose teller did not hold the item: nothing was sent.
    pub(crate) tells_unheld: usize,
    /// Tells about lore entries: lore is not in an NPC's log, so there is no
    /// entry to point at (no file has them yet).
    pub(crate) tells_about_lore: usize,
    /// Tells sent that taught the listener nothing.
    pub(crate) tells_empty: usize,
    pub(crate) lore_updates: usize,
    /// Lines NPCs said to each other in conversations the plugin ran.
    pub(crate) conversation_lines: usize,
    /// Scenarios whose last question was also said for real, and went out exactly
    /// as probed.
    pub(crate) probes_verified: usize,
    pub(crate) seconds: f64,
}

/// One scenario's game at one budget.
struct Game {
    app: App,
    backend: ScriptedBackend,
    /// Where each item sits in each NPC's own log: (npc, item id) to log index.
    held: HashMap<(String, String), LogIndex>,
    /// Timeline positions of NPC lines already recorded as the reply to a line.
    answered: HashSet<usize>,
    stats: ReplayStats,
}

impl Game {
    fn new(budget: usize) -> Self {
        let backend = ScriptedBackend::new();
        let mut app = App::new();
        app.add_plugins((
            MinimalPlugins,
            AssetPlugin::default(),
            NpcMemoryPlugin::default()
                .with_backend(backend.clone())
                .with_summary_backend(OfflineBackend::default())
                .with_features(MemoryFeatures::layered(budget))
                // The timeline's seconds are the game's calendar.
                .with_clock(NpcMemoryClock::game(0.0)),
        ))
        .init_resource::<Outcomes>()
        .init_resource::<ReplyAt>()
        .add_systems(
            Update,
            reply_clock
                .after(NpcMemorySystems::Intake)
                .before(NpcMemorySystems::Collect),
        )
        .add_systems(Last, collect);
        Self {
            app,
            backend,
            held: HashMap::new(),
            answered: HashSet::new(),
            stats: ReplayStats::default(),
        }
    }

    fn set_time(&mut self, t: f64) {
        self.app
            .world_mut()
            .resource_mut::<NpcMemoryClock>()
            .set_seconds(t);
    }

    fn run_until(&mut self, what: &str, done: impl Fn(&World) -> bool) -> Result<(), String> {
        let deadline = Instant::now() + WAIT;
        loop {
            self.app.update();
            if done(self.app.world()) {
                return Ok(());
            }
            if let Some(failure) = self.app.world().resource::<Outcomes>().failed.first() {
                return Err(format!(
                    "{} could not answer: {}",
                    failure.npc, failure.error
                ));
            }
            if Instant::now() > deadline {
                return Err(format!("timed out waiting until {what}"));
            }
            std::thread::yield_now();
        }
    }

    fn spawn(&mut self, spec: &NpcSpec, language: PromptLanguage) -> Result<(), String> {
        let text = match language {
            PromptLanguage::Chinese => format!("你是{}。{}", spec.name, spec.persona),
            PromptLanguage::English => format!("You are {}. {}", spec.name, spec.persona),
        };
        let persona = Persona::new(&spec.name, text)
            .with_language(language)
            .with_groups(spec.groups.iter().cloned());
        let handle = self
            .app
            .world_mut()
            .resource_mut::<Assets<Persona>>()
            .add(persona);
        self.app
            .world_mut()
            .spawn(Npc::new(spec.id.as_str(), handle));
        let id = NpcId::new(spec.id.as_str());
        self.run_until(&format!("{} has a memory", spec.id), |world| {
            world.resource::<ContextMemoryManager>().get(&id).is_some()
        })
    }

    fn add_lore(&mut self, lore: &[LoreSpec]) -> Result<(), String> {
        for spec in lore {
            let scope = match &spec.scope {
                ScopeSpec::World => LoreScope::World,
                ScopeSpec::Group { group } => LoreScope::group(group.as_str()),
                ScopeSpec::Npc { npc } => LoreScope::npc(npc.as_str()),
            };
            let entry = LoreEntry::new(spec.id.as_str(), spec.text.as_str())
                .with_scope(scope)
                .with_keys(spec.keys.iter().cloned());
            entry
                .check()
                .map_err(|e| format!("lore {}: {e}", spec.id))?;
            self.app.world_mut().write_message(AddLore::new(entry));
        }
        self.app.update();
        let held = self.app.world().resource::<NpcLore>().store().len();
        if held != lore.len() {
            return Err(format!(
                "the lore store took {held} of {} entries",
                lore.len()
            ));
        }
        Ok(())
    }

    /// The player says `line` to `npc` and the NPC answers `reply`: two entries of
    /// its log, whose indices are returned.
    fn talk(
        &mut self,
        npc: &str,
        line: (&str, bool, f64),
        reply: (&str, f64),
    ) -> Result<(LogIndex, LogIndex), String> {
        let (text, private, t) = line;
        let before = self.app.world().resource::<Outcomes>().replied.len();
        self.set_time(t);
        self.backend.push_reply(reply.0);
        let mut talk = TalkToNpc::new(npc, text);
        if private {
            talk = talk.privately();
        }
        self.app.world_mut().write_message(talk);
        self.app.world_mut().resource_mut::<ReplyAt>().0 = Some(reply.1);
        let answered = self.run_until(&format!("{npc} answers"), |world| {
            world.resource::<Outcomes>().replied.len() > before
        });
        self.app.world_mut().resource_mut::<ReplyAt>().0 = None;
        answered?;
        let replied = &self.app.world().resource::<Outcomes>().replied[before];
        let reply_index = replied.index;
        let logs = self.app.world().resource::<ChatLogs>();
        let line_index = logs
            .get(&NpcId::new(npc))
            .and_then(|log| {
                log.messages()
                    .iter()
                    .rev()
                    .find(|m| m.role == Role::User && m.index < reply_index)
                    .map(|m| m.index)
            })
            .ok_or_else(|| format!("{npc}'s log lost the player's line"))?;
        self.stats.lines += 2;
        Ok((line_index, reply_index))
    }

    fn witness(&mut self, item: &Item, witnesses: &[String], text: &str, importance: f32) {
        self.set_time(item.t);
        self.app.world_mut().write_message(
            NpcWitnessed::new(witnesses.iter().map(String::as_str), text)
                .with_importance(importance)
                .at(item.t),
        );
        self.app.update();
        let logs = self.app.world().resource::<ChatLogs>();
        for w in witnesses {
            let found = logs.get(&NpcId::new(w.as_str())).and_then(|log| {
                log.messages()
                    .iter()
                    .rev()
                    .find(|m| matches!(m.origin, Origin::Witnessed { .. }) && &*m.content == text)
                    .map(|m| m.index)
            });
            if let Some(index) = found {
                self.held.insert((w.clone(), item.id.clone()), index);
            }
        }
        self.stats.events += 1;
    }

    fn tell(&mut self, item: &Item, from: &str, to: &str, about: &str) -> Result<(), String> {
        let Some(&index) = self.held.get(&(from.to_owned(), about.to_owned())) else {
            self.stats.tells_unheld += 1;
            return Ok(());
        };
        self.set_time(item.t);
        let before = self.app.world().resource::<Outcomes>().shared.len();
        self.app
            .world_mut()
            .write_message(ShareKnowledge::about_entry(from, to, index));
        self.run_until(&format!("{from} tells {to}"), |world| {
            world.resource::<Outcomes>().shared.len() > before
        })?;
        let learned = self.app.world().resource::<Outcomes>().shared[before]
            .learned
            .clone();
        match learned.first() {
            Some(&index) => {
                self.held.insert((to.to_owned(), about.to_owned()), index);
            }
            None => self.stats.tells_empty += 1,
        }
        self.stats.tells_sent += 1;
        Ok(())
    }

    /// The NPCs talk among themselves, through the plugin's own conversations:
    /// each speaker's next line is scripted, and every one must be said.
    fn converse(
        &mut self,
        item: &Item,
        participants: &[String],
        topic: Option<&str>,
        earshot: &[String],
        lines: &[SpokenLine],
    ) -> Result<(), String> {
        self.set_time(item.t);
        for line in lines {
            self.backend.push_reply(line.text.as_str());
        }
        let rules = ConversationRules {
            max_turns: lines.len() as u32,
            // The data's lines are said as they are, however alike.
            repeat_similarity: f32::INFINITY,
            ..ConversationRules::default()
        };
        let mut start = StartConversation::between(participants.iter().map(String::as_str))
            .with_rules(rules)
            .within_earshot(earshot.iter().map(String::as_str));
        if let Some(topic) = topic {
            start = start.about(topic);
        }
        let before = self.app.world().resource::<Outcomes>().ended.len();
        self.app.world_mut().write_message(start);
        self.run_until(&format!("conversation {} ends", item.id), |world| {
            world.resource::<Outcomes>().ended.len() > before
        })?;
        let ended = &self.app.world().resource::<Outcomes>().ended[before];
        let said_all = ended.lines as usize == lines.len()
            && ended.reason == ConversationEnd::Stopped(ConversationStop::TurnLimit);
        if !said_all {
            return Err(format!(
                "conversation {} ended after {} of {} lines: {:?}",
                item.id,
                ended.lines,
                lines.len(),
                ended.reason
            ));
        }
        self.stats.conversation_lines += lines.len();
        Ok(())
    }

    fn update_lore(&mut self, item: &Item, lore: &str, text: &str) {
        self.set_time(item.t);
        self.app
            .world_mut()
            .write_message(UpdateLore::new(lore, text));
        self.app.update();
        self.stats.lore_updates += 1;
    }

    /// Replays the timeline items from `next` on whose time is at most `until`;
    /// returns where it stopped.
    fn replay(&mut self, s: &Scenario, mut next: usize, until: f64) -> Result<usize, String> {
        while let Some(item) = s.timeline.get(next).filter(|item| item.t <= until) {
            next += 1;
            if self.answered.contains(&(next - 1)) {
                continue;
            }
            match &item.kind {
                ItemKind::Talk {
                    npc,
                    speaker,
                    text,
                    private,
                } => {
                    if speaker != "player" {
                        return Err(format!(
                            "talk {}: {npc}'s line answers no player line",
                            item.id
                        ));
                    }
                    // The NPC's reply is the next line of its conversation.
                    let reply = s.timeline[next..]
                        .iter()
                        .position(|i| matches!(&i.kind, ItemKind::Talk { npc: n, .. } if n == npc))
                        .map(|at| next + at);
                    let Some((at, reply_item, reply_text)) =
                        reply.and_then(|at| match &s.timeline[at].kind {
                            ItemKind::Talk { speaker, text, .. } if speaker == npc => {
                                Some((at, &s.timeline[at], text))
                            }
                            _ => None,
                        })
                    else {
                        return Err(format!("talk {}: {npc} never answers it", item.id));
                    };
                    let (line, answer) =
                        self.talk(npc, (text, *private, item.t), (reply_text, reply_item.t))?;
                    self.held.insert((npc.clone(), item.id.clone()), line);
                    self.held
                        .insert((npc.clone(), reply_item.id.clone()), answer);
                    // The reply is in memory now; skip it when the replay gets there.
                    self.answered.insert(at);
                }
                ItemKind::Event {
                    witnesses,
                    text,
                    importance,
                } => {
                    self.witness(item, witnesses, text, *importance);
                }
                ItemKind::Tell { about, .. } if s.lore.iter().any(|l| &l.id == about) => {
                    // Lore is never copied into an NPC's log, so there is no entry
                    // of the teller's to point at. No data file has these yet.
                    self.stats.tells_about_lore += 1;
                }
                ItemKind::Tell { from, to, about } => self.tell(item, from, to, about)?,
                ItemKind::LoreUpdate { lore, text } => self.update_lore(item, lore, text),
                ItemKind::Conversation {
                    participants,
                    topic,
                    earshot,
                    lines,
                } => self.converse(item, participants, topic.as_deref(), earshot, lines)?,
            }
            // Game time passes between items, and summaries finish in it. Waiting
            // for them also makes every run build the same memory: left to race
            // the replay, they would cover a few lines more or less each time.
            self.run_until("every summary is written", |world| {
                world.resource::<NpcRequests>().is_idle()
            })?;
        }
        Ok(next)
    }

    /// The messages `npc` would send if the player said `question` at `t`, built on
    /// a copy of its memory: nothing is recorded, so questions stay independent.
    fn probe(&mut self, npc: &str, question: &str, t: f64) -> Result<Vec<PromptMessage>, String> {
        self.set_time(t);
        let world = self.app.world();
        let id = NpcId::new(npc);
        let missing = || format!("{npc} has no memory");
        let log = world.resource::<ChatLogs>().get(&id).ok_or_else(missing)?;
        let window = world
            .resource::<RollingWindows>()
            .get(&id)
            .ok_or_else(missing)?;
        let context = world
            .resource::<ContextMemoryManager>()
            .get(&id)
            .ok_or_else(missing)?;
        // The lore a reply to this line gets: the line, and the messages before it.
        let recent: Vec<&str> = log.messages()
            [log.messages().len().saturating_sub(LORE_RECENT_MESSAGES)..]
            .iter()
            .map(|m| &*m.content)
            .collect();
        let limits = &world.resource::<NpcMemorySettings>().lore;
        let lore = world
            .resource::<NpcLore>()
            .query(&id, question, &recent, limits);
        let now = world.resource::<NpcMemoryClock>().now();
        // A clone, not a save's round trip: the copy keeps the prompt the NPC
        // sent last, so a question in a conversation extends it as the real line
        // would (follow-ups).
        let mut copy = NpcMemory {
            log: log.clone(),
            window: window.clone(),
            context: context.clone(),
        };
        let turn = copy.layers().say(
            Line::new(question).knowing(SharedKnowledge::lore(lore)),
            now,
        );
        Ok(turn.messages)
    }
}

/// Replays one scenario at one budget and builds every question's prompt.
pub(crate) fn run_scenario(
    s: &Scenario,
    budget: usize,
) -> Result<(BTreeMap<String, Vec<PromptMessage>>, ReplayStats), String> {
    let started = Instant::now();
    let language = if s.language == "zh" {
        PromptLanguage::Chinese
    } else {
        PromptLanguage::English
    };
    let mut game = Game::new(budget);
    for npc in &s.npcs {
        game.spawn(npc, language)?;
    }
    game.add_lore(&s.lore)?;
    let mut order: Vec<&Question> = s.questions.iter().collect();
    order.sort_by(|a, b| a.t.total_cmp(&b.t));
    let mut next = 0;
    let mut prompts = BTreeMap::new();
    let mut last = None;
    for q in order {
        next = game.replay(s, next, q.t)?;
        let messages = game.probe(&q.npc, &q.question, q.t)?;
        prompts.insert(q.id.clone(), messages);
        last = Some(q);
    }
    // Proof that a probe is what a game's line would send: the last question,
    // said for real, must go out exactly as probed. It enters memory, so only
    // once nothing is left to replay or ask.
    if let Some(q) = last.filter(|_| next == s.timeline.len()) {
        let before = game.app.world().resource::<Outcomes>().replied.len();
        game.backend.push_reply("…");
        game.app
            .world_mut()
            .write_message(TalkToNpc::new(q.npc.as_str(), q.question.as_str()));
        game.run_until("the real line is answered", |world| {
            world.resource::<Outcomes>().replied.len() > before
        })?;
        let sent = game
            .backend
            .requests_for(Purpose::Reply)
            .pop()
            .map(|request| request.messages);
        if sent.as_ref() != prompts.get(&q.id) {
            return Err(format!(
                "the prompt probed for {} differs from the request the plugin sent for it",
                q.id
            ));
        }
        game.stats.probes_verified += 1;
    }
    game.replay(s, next, f64::INFINITY)?;
    let mut stats = game.stats.clone();
    stats.seconds = started.elapsed().as_secs_f64();
    Ok((prompts, stats))
}
