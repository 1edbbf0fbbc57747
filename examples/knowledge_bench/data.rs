//! The data file: `npc-knowledge/1` scenarios as the game has them, read and
//! checked.

use std::collections::HashSet;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::FORMAT;

#[derive(Deserialize)]
pub(crate) struct Scenario {
    pub(crate) scenario_id: String,
    pub(crate) language: String,
    pub(crate) npcs: Vec<NpcSpec>,
    pub(crate) lore: Vec<LoreSpec>,
    pub(crate) timeline: Vec<Item>,
    pub(crate) questions: Vec<Question>,
}

#[derive(Deserialize)]
pub(crate) struct NpcSpec {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) persona: String,
    pub(crate) groups: Vec<String>,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum ScopeSpec {
    World,
    Group { group: String },
    Npc { npc: String },
}

/// A lore entry as the game has it (its markers are not read).
#[derive(Deserialize)]
pub(crate) struct LoreSpec {
    pub(crate) id: String,
    pub(crate) scope: ScopeSpec,
    pub(crate) keys: Vec<String>,
    pub(crate) text: String,
}

/// A timeline item as the game has it: markers are not even read.
#[derive(Deserialize)]
pub(crate) struct Item {
    pub(crate) id: String,
    pub(crate) t: f64,
    #[serde(flatten)]
    pub(crate) kind: ItemKind,
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum ItemKind {
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
    /// NPCs talk among themselves, run by the plugin: the lines are said in
    /// order, round the participants, and NPCs within earshot overhear them.
    Conversation {
        participants: Vec<String>,
        #[serde(default)]
        topic: Option<String>,
        #[serde(default)]
        earshot: Vec<String>,
        lines: Vec<SpokenLine>,
    },
}

/// One line of a conversation among NPCs (its markers are not read).
#[derive(Deserialize)]
pub(crate) struct SpokenLine {
    pub(crate) id: String,
    pub(crate) speaker: String,
    pub(crate) text: String,
}

/// A question: what the player says to whom and when (all the replay sees), and
/// the ground truth, which only the scoring reads.
#[derive(Deserialize)]
pub(crate) struct Question {
    pub(crate) id: String,
    pub(crate) t: f64,
    pub(crate) npc: String,
    pub(crate) question: String,
    #[serde(flatten)]
    pub(crate) truth: Truth,
}

#[derive(Deserialize)]
pub(crate) struct Truth {
    pub(crate) category: String,
    pub(crate) should_know: bool,
    pub(crate) evidence: Vec<String>,
    pub(crate) markers: Vec<String>,
    pub(crate) via: Vec<String>,
}

/// Reads and checks the file: every scenario in the right format, every id it
/// refers to defined, the timeline in order, ids safe to use as file names.
pub(crate) fn load(path: &Path) -> Result<Vec<Scenario>, String> {
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
            ItemKind::Conversation {
                participants,
                earshot,
                lines,
                ..
            } => {
                if participants.len() < 2 || lines.is_empty() {
                    return Err(format!("{what} needs two participants and a line"));
                }
                for id in participants.iter().chain(earshot) {
                    npc(id, &what)?;
                }
                for (n, line) in lines.iter().enumerate() {
                    if line.speaker != participants[n % participants.len()] {
                        return Err(format!(
                            "{what}: line {} is not {}'s turn",
                            line.id,
                            participants[n % participants.len()]
                        ));
                    }
                    if !items.insert(line.id.as_str()) {
                        return Err(format!("{what}: line {} appears twice", line.id));
                    }
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
        if crate::scoring::needs_teller(&q.truth.category) && q.truth.via.is_empty() {
            return Err(format!("gossip question {} names no teller", q.id));
        }
    }
    Ok(())
}
