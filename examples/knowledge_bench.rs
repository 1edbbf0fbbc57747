//! What each NPC knows, and must not: replays `npc-knowledge/1` scenarios through
//! the plugin the way a game drives it, and checks every question's prompt for the
//! facts the NPC should (and should not) have.
//!
//! ```sh
//! cargo run --example knowledge_bench -- \
//!     --data ../shared/bench/knowledge/knowledge_dev.json --budget 500,1000,2000 \
//!     [--json] [--dump-prompts DIR]
//! ```
//!
//! The four dev scenarios replay in about 5 s per budget, even in a debug build.
//!
//! Per scenario and budget, one headless app (`MinimalPlugins` + `AssetPlugin`):
//! - one NPC per `npcs` entry, with its persona text and lore groups;
//! - every lore entry sent as `AddLore` with its scope and keys;
//! - the timeline in order, with a game-driven `NpcMemoryClock` set to each item's
//!   time: a player line is a `TalkToNpc` (private when the player asked), answered
//!   by a `ScriptedBackend` with the NPC's own next line; an event is an
//!   `NpcWitnessed`; gossip is `ShareKnowledge::about_entry`, pointing at the entry
//!   of the teller's own log that holds the item; a world change is `UpdateLore`.
//!   The offline backend writes the summaries.
//!
//! Then, for every question, the prompt the NPC would send if the player said it
//! now, built from a copy of the NPC's memory so that no question is remembered:
//! the same call (`say_with`) and the same lore lookup (`NpcLore::query`) as a
//! real reply. To prove it, the last question of each scenario is then said for
//! real, and the request the plugin sends must equal the probe. Markers, answers
//! and categories never reach the plugin; they are only read by the scoring, which
//! follows the data's `knowledge_check.py`. The replay waits for every summary
//! before the next item, so two runs build the same prompts.
//!
//! `--dump-prompts DIR` writes each prompt to `DIR/<scenario_id>/<question id>.json`
//! (with several budgets, `DIR/budget-<N>/<scenario_id>/…`), which
//! `python3 knowledge_check.py DATA DIR` scores independently.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
use bevy_npc_memory::memory::{LogIndex, MemoryParts, Origin, PromptMessage, SharedKnowledge};
use bevy_npc_memory::prelude::*;
use serde::Deserialize;
use serde_json::{Value, json};

/// The only data format this bench reads.
const FORMAT: &str = "npc-knowledge/1";
/// How far (in characters) the teller's name may be from a marker for provenance.
const PROVENANCE_WINDOW: usize = 300;
/// The question categories, in the order the format lists them.
const CATEGORIES: [&str; 14] = [
    "direct",
    "witnessed",
    "unwitnessed",
    "gossip",
    "gossip2",
    "private",
    "not_told",
    "lore_world",
    "lore_group",
    "lore_out_of_scope",
    "lore_private",
    "lore_updated",
    "stale",
    "adversarial",
];
/// How long one reply or telling may take before the replay gives up.
const WAIT: Duration = Duration::from_secs(30);
/// How many messages before the player's line the plugin's lore lookup reads too
/// (as `NpcLore` does for every reply), so the probe finds the same lore.
const LORE_RECENT_MESSAGES: usize = 2;

// ---------------------------------------------------------------- the data file

#[derive(Deserialize)]
struct Scenario {
    scenario_id: String,
    language: String,
    npcs: Vec<NpcSpec>,
    lore: Vec<LoreSpec>,
    timeline: Vec<Item>,
    questions: Vec<Question>,
}

#[derive(Deserialize)]
struct NpcSpec {
    id: String,
    name: String,
    persona: String,
    groups: Vec<String>,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum ScopeSpec {
    World,
    Group { group: String },
    Npc { npc: String },
}

/// A lore entry as the game has it (its markers are not read).
#[derive(Deserialize)]
struct LoreSpec {
    id: String,
    scope: ScopeSpec,
    keys: Vec<String>,
    text: String,
}

/// A timeline item as the game has it: markers are not even read.
#[derive(Deserialize)]
struct Item {
    id: String,
    t: f64,
    #[serde(flatten)]
    kind: ItemKind,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum ItemKind {
    Talk {
        npc: String,
        speaker: String,
        text: String,
        #[serde(default)]
        private: bool,
    },
    Event {
        witnesses: Vec<String>,
        text: String,
        importance: f32,
    },
    Tell {
        from: String,
        to: String,
        about: String,
    },
    LoreUpdate {
        lore: String,
        text: String,
    },
}

/// A question: what the player says to whom and when (all the replay sees), and
/// the ground truth, which only the scoring reads.
#[derive(Deserialize)]
struct Question {
    id: String,
    t: f64,
    npc: String,
    question: String,
    #[serde(flatten)]
    truth: Truth,
}

#[derive(Deserialize)]
struct Truth {
    category: String,
    should_know: bool,
    evidence: Vec<String>,
    markers: Vec<String>,
    via: Vec<String>,
}

/// Reads and checks the file: every scenario in the right format, every id it
/// refers to defined, the timeline in order, ids safe to use as file names.
fn load(path: &Path) -> Result<Vec<Scenario>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let values: Vec<Value> = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a JSON list of scenarios: {e}", path.display()))?;
    let mut scenarios = Vec::with_capacity(values.len());
    for (n, value) in values.into_iter().enumerate() {
        let format = value.get("format").and_then(Value::as_str);
        if format != Some(FORMAT) {
            return Err(format!(
                "{}: scenario {n} has format {format:?}, not {FORMAT:?}",
                path.display()
            ));
        }
        let scenario: Scenario = serde_json::from_value(value)
            .map_err(|e| format!("{}: scenario {n}: {e}", path.display()))?;
        check(&scenario)
            .map_err(|e| format!("{}: {}: {e}", path.display(), scenario.scenario_id))?;
        scenarios.push(scenario);
    }
    if scenarios.is_empty() {
        return Err(format!("{}: holds no scenario", path.display()));
    }
    let mut ids = HashSet::new();
    for s in &scenarios {
        if !ids.insert(s.scenario_id.as_str()) {
            return Err(format!("scenario id {:?} appears twice", s.scenario_id));
        }
    }
    Ok(scenarios)
}

/// A name safe as one path component: ASCII letters, digits, `-`, `_`, `.`, not
/// starting with a dot.
fn safe_name(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn check(s: &Scenario) -> Result<(), String> {
    if !safe_name(&s.scenario_id) {
        return Err("the scenario id must be an ASCII slug".into());
    }
    if !matches!(s.language.as_str(), "en" | "zh") {
        return Err(format!(
            "language {:?} is neither \"en\" nor \"zh\"",
            s.language
        ));
    }
    let npcs: HashSet<&str> = s.npcs.iter().map(|n| n.id.as_str()).collect();
    if npcs.len() != s.npcs.len() {
        return Err("an NPC id appears twice".into());
    }
    if npcs.contains("player") {
        return Err("an NPC is called \"player\"".into());
    }
    let npc = |id: &str, what: &str| {
        if npcs.contains(id) {
            Ok(())
        } else {
            Err(format!("{what} names the unknown NPC {id:?}"))
        }
    };
    let lore: HashSet<&str> = s.lore.iter().map(|l| l.id.as_str()).collect();
    if lore.len() != s.lore.len() {
        return Err("a lore id appears twice".into());
    }
    for entry in &s.lore {
        if let ScopeSpec::Npc { npc: id } = &entry.scope {
            npc(id, &format!("lore {}", entry.id))?;
        }
    }
    let mut last = f64::NEG_INFINITY;
    let mut items = HashSet::new();
    for item in &s.timeline {
        let what = format!("timeline item {}", item.id);
        if !item.t.is_finite() || item.t < 0.0 {
            return Err(format!("{what} has time {}", item.t));
        }
        if item.t < last {
            return Err(format!("{what} is out of time order"));
        }
        last = item.t;
        if !items.insert(item.id.as_str()) {
            return Err(format!("{what} appears twice"));
        }
        match &item.kind {
            ItemKind::Talk {
                npc: id,
                speaker,
                private,
                ..
            } => {
                npc(id, &what)?;
                if speaker != "player" && speaker != id {
                    return Err(format!(
                        "{what} is said by {speaker:?}, not the player or {id}"
                    ));
                }
                if *private && speaker != "player" {
                    return Err(format!(
                        "{what} is a private NPC line; only player lines are"
                    ));
                }
            }
            ItemKind::Event {
                witnesses,
                importance,
                ..
            } => {
                for w in witnesses {
                    npc(w, &what)?;
                }
                if !(0.0..=1.0).contains(importance) {
                    return Err(format!(
                        "{what} has importance {importance}, outside 0 to 1"
                    ));
                }
            }
            ItemKind::Tell { from, to, .. } => {
                npc(from, &what)?;
                npc(to, &what)?;
            }
            ItemKind::LoreUpdate { lore: id, .. } => {
                if !lore.contains(id.as_str()) {
                    return Err(format!("{what} updates the unknown lore entry {id:?}"));
                }
            }
        }
    }
    let mut questions = HashSet::new();
    for q in &s.questions {
        if !safe_name(&q.id) {
            return Err(format!("question id {:?} must be an ASCII slug", q.id));
        }
        if !questions.insert(q.id.as_str()) {
            return Err(format!("question {} appears twice", q.id));
        }
        if !q.t.is_finite() {
            return Err(format!("question {} has time {}", q.id, q.t));
        }
        npc(&q.npc, &format!("question {}", q.id))?;
        for v in &q.truth.via {
            npc(v, &format!("question {}'s via", q.id))?;
        }
        if matches!(q.truth.category.as_str(), "gossip" | "gossip2") && q.truth.via.is_empty() {
            return Err(format!("gossip question {} names no teller", q.id));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- the game

/// What the plugin reported, collected every frame.
#[derive(Resource, Default)]
struct Outcomes {
    replied: Vec<NpcReplied>,
    failed: Vec<NpcReplyFailed>,
    shared: Vec<KnowledgeShared>,
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
    mut out: ResMut<Outcomes>,
) {
    out.replied.extend(replied.read().cloned());
    out.failed.extend(failed.read().cloned());
    out.shared.extend(shared.read().cloned());
}

/// How the replay went, beyond the scores.
#[derive(Default, Clone)]
struct ReplayStats {
    lines: usize,
    events: usize,
    tells_sent: usize,
    /// Tells whose teller did not hold the item: nothing was sent.
    tells_unheld: usize,
    /// Tells about lore entries: lore is not in an NPC's log, so there is no
    /// entry to point at (no file has them yet).
    tells_about_lore: usize,
    /// Tells sent that taught the listener nothing.
    tells_empty: usize,
    lore_updates: usize,
    /// Scenarios whose last question was also said for real, and went out exactly
    /// as probed.
    probes_verified: usize,
    seconds: f64,
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
        let mut copy = MemoryParts::of(log, window, context)
            .into_memory()
            .map_err(|e| format!("{npc}'s memory does not copy: {e}"))?;
        let turn = copy
            .layers()
            .say_with(question, now, &SharedKnowledge::lore(lore));
        Ok(turn.messages)
    }
}

/// Replays one scenario at one budget and builds every question's prompt.
fn run_scenario(
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

// ---------------------------------------------------------------- scoring

/// Casefolded, with every run of whitespace one space, as characters (positions
/// are counted in characters, as the Python scorer counts them). Lower-casing
/// stands in for Python's `casefold`; they differ only on a few letters such as
/// `ß`, which the data's markers and names do not use.
fn norm(text: &str) -> Vec<char> {
    let mut out = Vec::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            if !space {
                out.push(' ');
            }
            space = true;
        } else {
            space = false;
            out.extend(c.to_lowercase());
        }
    }
    out
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3000..=0x303F | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF)
}

/// The scorer's token estimate: one per CJK character, one per four others.
fn est_tokens(text: &str) -> usize {
    let (cjk, other) = text.chars().fold((0usize, 0usize), |(c, o), ch| {
        if is_cjk(ch) { (c + 1, o) } else { (c, o + 1) }
    });
    cjk + other.div_ceil(4)
}

/// Start positions of `needle` in `hay`, overlapping ones included.
fn occurrences(hay: &[char], needle: &[char]) -> Vec<usize> {
    if needle.is_empty() || needle.len() > hay.len() {
        return Vec::new();
    }
    (0..=hay.len() - needle.len())
        .filter(|&at| hay[at..at + needle.len()] == *needle)
        .collect()
}

fn contains(hay: &[char], needle: &[char]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

fn word_char(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// Whether the teller's name stands within the window of a marker in `text`.
fn name_near_marker(text: &[char], name: &[char], markers: &[Vec<char>], english: bool) -> bool {
    let names: Vec<(usize, usize)> = occurrences(text, name)
        .into_iter()
        .filter(|&at| {
            !english
                || (!word_char(at.checked_sub(1).and_then(|i| text.get(i)))
                    && !word_char(text.get(at + name.len())))
        })
        .map(|at| (at, at + name.len()))
        .collect();
    markers.iter().any(|marker| {
        occurrences(text, marker).into_iter().any(|a| {
            let b = a + marker.len();
            names.iter().any(|&(na, ne)| {
                a.saturating_sub(ne).max(na.saturating_sub(b)) <= PROVENANCE_WINDOW
            })
        })
    })
}

/// One question's score.
struct Row {
    scenario: String,
    category: String,
    should_know: bool,
    scoped: bool,
    all: bool,
    any: bool,
    provenance: Option<bool>,
    tokens: usize,
}

fn score(s: &Scenario, q: &Question, messages: &[PromptMessage]) -> Row {
    let context: Vec<Vec<char>> = messages[..messages.len().saturating_sub(1)]
        .iter()
        .map(|m| norm(&m.content))
        .collect();
    let markers: Vec<Vec<char>> = q.truth.markers.iter().map(|m| norm(m)).collect();
    let present: Vec<bool> = markers
        .iter()
        .map(|m| context.iter().any(|c| contains(c, m)))
        .collect();
    let all = present.iter().all(|&p| p);
    let any = present.iter().any(|&p| p);
    let gossip = matches!(q.truth.category.as_str(), "gossip" | "gossip2");
    let provenance = (gossip && all).then(|| {
        let teller = &q.truth.via[0];
        let name = s
            .npcs
            .iter()
            .find(|n| &n.id == teller)
            .map_or(teller.as_str(), |n| n.name.as_str());
        let name = norm(name);
        context
            .iter()
            .any(|c| name_near_marker(c, &name, &markers, s.language == "en"))
    });
    Row {
        scenario: s.scenario_id.clone(),
        category: q.truth.category.clone(),
        should_know: q.truth.should_know,
        scoped: !q.truth.evidence.is_empty(),
        all,
        any,
        provenance,
        tokens: messages.iter().map(|m| est_tokens(&m.content)).sum(),
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

fn bit(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

/// The scorer's figures over some rows.
fn summarize(rows: &[&Row]) -> Value {
    let know: Vec<&&Row> = rows.iter().filter(|r| r.should_know).collect();
    let leak: Vec<&&Row> = rows.iter().filter(|r| !r.should_know && r.scoped).collect();
    let adversarial: Vec<&&Row> = rows.iter().filter(|r| !r.scoped).collect();
    let provenance: Vec<bool> = rows.iter().filter_map(|r| r.provenance).collect();
    json!({
        "questions": rows.len(),
        "should_know": know.len(),
        "should_not_know": leak.len(),
        "adversarial": adversarial.len(),
        "knows_recall": mean(know.iter().map(|r| bit(r.all))),
        "any_recall": mean(know.iter().map(|r| bit(r.any))),
        "leak_rate": mean(leak.iter().map(|r| bit(r.any))),
        "adversarial_hit_rate": mean(adversarial.iter().map(|r| bit(r.any))),
        "provenance": mean(provenance.iter().map(|&p| bit(p))),
        "provenance_n": provenance.len(),
        "mean_prompt_tokens": mean(rows.iter().map(|r| r.tokens as f64)),
    })
}

fn report(rows: &[Row]) -> Value {
    let all: Vec<&Row> = rows.iter().collect();
    let mut out = summarize(&all);
    let mut categories: Vec<&str> = Vec::new();
    let mut scenarios: Vec<&str> = Vec::new();
    for r in rows {
        if !categories.contains(&r.category.as_str()) {
            categories.push(&r.category);
        }
        if !scenarios.contains(&r.scenario.as_str()) {
            scenarios.push(&r.scenario);
        }
    }
    let by = |pick: &dyn Fn(&Row) -> &str, keys: &[&str]| -> serde_json::Map<String, Value> {
        keys.iter()
            .map(|&k| {
                let rows: Vec<&Row> = rows.iter().filter(|r| pick(r) == k).collect();
                (k.to_owned(), summarize(&rows))
            })
            .collect()
    };
    out["by_category"] = Value::Object(by(&|r| &r.category, &categories));
    out["by_scenario"] = Value::Object(by(&|r| &r.scenario, &scenarios));
    out
}

// ---------------------------------------------------------------- output

/// A prompt as the dump files hold it: `[{"role", "content"}, …]`.
fn dump(messages: &[PromptMessage]) -> Value {
    Value::Array(
        messages
            .iter()
            .map(|m| json!({"role": m.role.as_str(), "content": &*m.content}))
            .collect(),
    )
}

fn fmt(v: &Value) -> String {
    v.as_f64().map_or("-".into(), |x| format!("{x:.3}"))
}

fn print_table(data: &Path, runs: &[(usize, Value, ReplayStats)]) {
    let first = &runs[0].1;
    println!(
        "npc-knowledge: {} ({} scenarios, {} questions: {} should know, {} should not, {} adversarial)",
        data.display(),
        first["by_scenario"].as_object().map_or(0, |m| m.len()),
        first["questions"],
        first["should_know"],
        first["should_not_know"],
        first["adversarial"],
    );
    print!("{:22}{:>5}", "", "n");
    for (budget, _, _) in runs {
        print!(" | {:<35}", format!("budget {budget}"));
    }
    println!();
    print!("{:27}", "");
    for _ in runs {
        print!(
            " | {:>6}{:>7}{:>7}{:>7}{:>8}",
            "knows", "any", "leak", "prov", "tokens"
        );
    }
    println!();
    let line = |label: &str, pick: &dyn Fn(&Value) -> &Value| {
        print!(
            "{label:22}{:>5}",
            pick(first)["questions"].as_u64().unwrap_or(0)
        );
        for (_, result, _) in runs {
            let s = pick(result);
            // Adversarial rows show the made-up markers found in the leak column.
            let leak = if s["should_not_know"].as_u64() > Some(0) {
                &s["leak_rate"]
            } else {
                &s["adversarial_hit_rate"]
            };
            let tokens = s["mean_prompt_tokens"]
                .as_f64()
                .map_or("-".into(), |t| format!("{t:.0}"));
            print!(
                " | {:>6}{:>7}{:>7}{:>7}{:>8}",
                fmt(&s["knows_recall"]),
                fmt(&s["any_recall"]),
                fmt(leak),
                fmt(&s["provenance"]),
                tokens,
            );
        }
        println!();
    };
    line("all", &|v| v);
    println!("by category (adversarial: leak = made-up marker found)");
    // In the order FORMAT.md lists them; any other after them.
    let mut categories: Vec<String> = CATEGORIES.iter().map(|c| c.to_string()).collect();
    if let Some(found) = first["by_category"].as_object() {
        categories.retain(|c| found.contains_key(c));
        categories.extend(
            found
                .keys()
                .filter(|c| !CATEGORIES.contains(&c.as_str()))
                .cloned(),
        );
    }
    for c in &categories {
        line(&format!("  {c}"), &|v| &v["by_category"][c]);
    }
    println!("by scenario");
    let scenarios: Vec<String> = first["by_scenario"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    for s in &scenarios {
        line(&format!("  {s}"), &|v| &v["by_scenario"][s]);
    }
    for (budget, result, stats) in runs {
        println!(
            "budget {budget}: knows_recall {}  any_recall {}  leak_rate {}  adversarial {}  provenance {} (n={})  mean prompt tokens {}",
            fmt(&result["knows_recall"]),
            fmt(&result["any_recall"]),
            fmt(&result["leak_rate"]),
            fmt(&result["adversarial_hit_rate"]),
            fmt(&result["provenance"]),
            result["provenance_n"],
            result["mean_prompt_tokens"]
                .as_f64()
                .map_or("-".into(), |t| format!("{t:.0}")),
        );
        println!(
            "  replay: {} lines, {} events, {} tells sent ({} taught nothing), {} tells skipped (teller did not hold the item), {} about lore (not supported), {} lore updates; {} probes said for real went out as probed; {:.1} s",
            stats.lines,
            stats.events,
            stats.tells_sent,
            stats.tells_empty,
            stats.tells_unheld,
            stats.tells_about_lore,
            stats.lore_updates,
            stats.probes_verified,
            stats.seconds,
        );
    }
}

// ---------------------------------------------------------------- main

struct Args {
    data: PathBuf,
    budgets: Vec<usize>,
    json: bool,
    dump: Option<PathBuf>,
}

const USAGE: &str =
    "usage: knowledge_bench --data FILE --budget N[,N...] [--json] [--dump-prompts DIR]";

fn parse_args() -> Result<Args, String> {
    let mut data = None;
    let mut budgets = Vec::new();
    let mut json = false;
    let mut dump = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--data" => data = Some(PathBuf::from(value("--data")?)),
            "--budget" => {
                for part in value("--budget")?.split(',') {
                    let budget: usize = part
                        .trim()
                        .parse()
                        .map_err(|_| format!("--budget: {part:?} is not a number of tokens"))?;
                    if budget == 0 {
                        return Err("--budget: a budget must be above 0".into());
                    }
                    budgets.push(budget);
                }
            }
            "--json" => json = true,
            "--dump-prompts" => dump = Some(PathBuf::from(value("--dump-prompts")?)),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let data = data.ok_or("--data FILE is required")?;
    if budgets.is_empty() {
        return Err("--budget N is required".into());
    }
    Ok(Args {
        data,
        budgets,
        json,
        dump,
    })
}

fn run(args: &Args) -> Result<(), String> {
    let scenarios = load(&args.data)?;
    let mut runs = Vec::new();
    for &budget in &args.budgets {
        let mut rows = Vec::new();
        let mut stats = ReplayStats::default();
        for s in &scenarios {
            let (prompts, replay) =
                run_scenario(s, budget).map_err(|e| format!("{}: {e}", s.scenario_id))?;
            if let Some(root) = &args.dump {
                let mut dir = root.clone();
                if args.budgets.len() > 1 {
                    dir.push(format!("budget-{budget}"));
                }
                dir.push(&s.scenario_id);
                std::fs::create_dir_all(&dir)
                    .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                for (id, messages) in &prompts {
                    let path = dir.join(format!("{id}.json"));
                    let text =
                        serde_json::to_string_pretty(&dump(messages)).map_err(|e| e.to_string())?;
                    std::fs::write(&path, text)
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                }
            }
            for q in &s.questions {
                rows.push(score(s, q, &prompts[&q.id]));
            }
            stats.lines += replay.lines;
            stats.events += replay.events;
            stats.tells_sent += replay.tells_sent;
            stats.tells_unheld += replay.tells_unheld;
            stats.tells_about_lore += replay.tells_about_lore;
            stats.tells_empty += replay.tells_empty;
            stats.lore_updates += replay.lore_updates;
            stats.probes_verified += replay.probes_verified;
            stats.seconds += replay.seconds;
        }
        runs.push((budget, report(&rows), stats));
    }
    if args.json {
        let budgets: Vec<Value> = runs
            .iter()
            .map(|(budget, result, stats)| {
                let mut v = result.clone();
                v["budget"] = json!(budget);
                v["replay"] = json!({
                    "lines": stats.lines,
                    "events": stats.events,
                    "tells_sent": stats.tells_sent,
                    "tells_taught_nothing": stats.tells_empty,
                    "tells_skipped_unheld": stats.tells_unheld,
                    "tells_about_lore": stats.tells_about_lore,
                    "lore_updates": stats.lore_updates,
                    "probes_verified": stats.probes_verified,
                    "seconds": stats.seconds,
                });
                v
            })
            .collect();
        let out = json!({
            "data": args.data.display().to_string(),
            "format": FORMAT,
            "scenarios": scenarios.len(),
            "runs": budgets,
        });
        println!("{out}");
    } else {
        print_table(&args.data, &runs);
    }
    Ok(())
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(error) => {
            eprintln!("knowledge_bench: {error}\n{USAGE}");
            std::process::exit(2);
        }
    };
    if let Err(error) = run(&args) {
        eprintln!("knowledge_bench: {error}");
        std::process::exit(1);
    }
}
