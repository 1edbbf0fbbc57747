//! What the state machine does: its steps and how they are drawn.

use bevy_npc_memory::prelude::NpcId;
use bevy_npc_memory::schedule::MemoryTier;
use proptest::prelude::*;
use proptest_state_machine::ReferenceStateMachine;
use serde::{Deserialize, Serialize};

/// How many NPCs a run has. The first is basic (ECHO-7's window 4, threshold 2),
/// the second layered, the third basic with an action.
pub const NPCS: usize = 3;

/// Text a player, a game or a model could send: any Unicode, the scripts and
/// marks that break naive code, and now and then something very long.
pub fn text() -> BoxedStrategy<String> {
    prop_oneof![
        4 => "\\PC{0,80}",
        2 => any::<String>(),
        2 => prop::sample::select(vec![
            "नमस्ते, मैं एलेक्स हूँ",
            "สวัสดีครับ ผมชื่ออเล็กซ์",
            "\u{1100}\u{1161}\u{11A8} 한국어",
            "👩‍🔧🔧 fix the 🔋",
            "e\u{301}\u{302}\u{303} a\u{20DD}",
            "\u{202E}lexA\u{202C} \u{2067}abc\u{2069}",
            "",
            "   ",
        ])
        .prop_map(str::to_owned),
        1 => "\\PC{500,5000}",
    ]
    .boxed()
}

/// A player's line or query: any text, and now and then one about the reactor,
/// which every lore entry is about (see `lore.rs`).
fn line() -> BoxedStrategy<String> {
    prop_oneof![
        5 => text(),
        1 => text().prop_map(|text| format!("{text} the reactor?")),
    ]
    .boxed()
}

/// The NPCs' ids: any Unicode, one of them past the length ids are shortened at.
fn ids() -> impl Strategy<Value = Vec<String>> {
    ("\\PC{1,24}", "[a-z]{1,8}", "\\PC{250,320}")
        .prop_map(|(a, b, c)| vec![a, b, c])
        .prop_filter("three distinct NPCs", |ids| {
            let ids: Vec<NpcId> = ids.iter().map(|id| NpcId::new(id.as_str())).collect();
            ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]
        })
}

/// How the backend answers a line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Reply {
    /// Words, streamed.
    Say(String),
    /// An error.
    Fail,
    /// Nothing, until the game interrupts the NPC.
    Interrupted,
    /// These words start to stream, then nothing more, until the game
    /// interrupts the NPC mid-sentence.
    CutOff(String),
    /// A call of the NPC's action (valid arguments or not), then words; or a call
    /// of the lift, which the game answers later, or never (it times out).
    Act {
        door: String,
        valid: bool,
        lift: Lift,
    },
}

/// Which file the game loads damaged.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Target {
    /// A file of its own.
    Fresh,
    /// The autosave slot; its backup is whole.
    Slot,
    /// The autosave slot, its backup gone.
    SlotAndBackup,
}

/// How a file the game loads is damaged.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Damage {
    /// Not a save at all.
    Garbage,
    /// Another program's JSON.
    Foreign,
    /// The whole file, cut at this share of its bytes.
    Cut(f64),
}

impl Damage {
    /// What is on disk when a file that would hold `whole` is damaged this way.
    pub fn applied_to(&self, whole: Vec<u8>) -> Vec<u8> {
        match self {
            Damage::Garbage => b"\x00\xffnot a save at all".to_vec(),
            Damage::Foreign => br#"{"player": "Alex", "level": 3, "npcs": "none"}"#.to_vec(),
            Damage::Cut(share) => whole[..(whole.len() as f64 * share) as usize].to_vec(),
        }
    }
}

/// Whether an action call is of the lift, and whether the game answers it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Lift {
    /// Not the lift: the door, answered at once.
    No,
    /// The game answers it a frame later.
    Answered,
    /// The game never answers it.
    NeverAnswered,
}

/// Where a piece of lore is known.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub enum Scope {
    World,
    Npc(usize),
}

/// How the game moves the memory clock.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub enum Jump {
    /// On by this many seconds: a few, or past the pause that ends a
    /// conversation, or days.
    On(f64),
    /// Back to this many seconds before now (a calendar wound back).
    Back(f64),
}

/// Where the third NPC is while the other two talk.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub enum Third {
    /// Away: it hears nothing.
    Away,
    /// Within earshot: it hears every line as a witnessed event.
    Overhears,
    /// Taking part, speaking third.
    Joins,
}

/// A conversation among NPCs, as the game starts it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Talks {
    pub first: usize,
    pub second: usize,
    pub third: Third,
    pub topic: String,
    /// The first speaker's first line, said as it is.
    pub opening: Option<String>,
    /// Lines in all, at most.
    pub turns: u32,
    /// The game ends it after its first line.
    pub end_early: bool,
    /// The player says this (privately or not) to the first or the second
    /// speaker once the first line is said.
    pub player: Option<PlayerJoins>,
}

impl Talks {
    /// Two NPCs alone, about `topic`, for `turns` lines.
    pub fn between(first: usize, second: usize, topic: &str, turns: u32) -> Self {
        Self {
            first,
            second,
            third: Third::Away,
            topic: topic.to_owned(),
            opening: None,
            turns,
            end_early: false,
            player: None,
        }
    }

    /// The NPC neither first nor second.
    pub fn other(&self) -> usize {
        (0..NPCS)
            .find(|&n| n != self.first && n != self.second)
            .expect("three NPCs")
    }
}

/// The player joins a conversation among NPCs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PlayerJoins {
    pub text: String,
    pub private: bool,
    /// Said to the second speaker, not the first.
    pub to_second: bool,
}

/// An import of the original game's Unity save, as the game asks for it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Import {
    pub npc: usize,
    /// Alternating player and NPC, the player first.
    pub lines: Vec<String>,
    /// The summary, and how many of the lines came after it.
    pub summary: String,
    pub counter: u8,
    /// The file damaged, or as that game wrote it.
    pub damage: Option<Damage>,
    /// Lines said to the NPC in the frame of the import (whole files only); the
    /// model never answers the first.
    pub during: u8,
    /// Whether the game asks the NPC for a summary in that frame.
    pub summarize: bool,
}

/// One public operation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Step {
    Talk {
        npc: usize,
        text: String,
        private: bool,
        by_entity: bool,
        reply: Reply,
        /// Said by a second (co-op) player, not the game's own.
        co_op: bool,
    },
    Witness {
        witnesses: Vec<usize>,
        text: String,
    },
    ShareEntry {
        from: usize,
        to: usize,
        index: u64,
    },
    ShareQuery {
        from: usize,
        to: usize,
        query: String,
    },
    ShareFact {
        from: usize,
        to: usize,
    },
    MarkPrivate {
        npc: usize,
        index: u64,
    },
    SetFact {
        npc: usize,
        value: String,
    },
    RemoveFact {
        npc: usize,
    },
    AddLore {
        id: u8,
        scope: Scope,
        text: String,
    },
    UpdateLore {
        id: u8,
        text: String,
    },
    RemoveLore {
        id: u8,
    },
    ChangePersona {
        npc: usize,
        text: String,
    },
    Reconfigure {
        npc: usize,
        window: usize,
        budget: Option<usize>,
    },
    SummarizeNow {
        npc: usize,
    },
    SwitchBackend {
        offline: bool,
    },
    Clear {
        npc: usize,
    },
    Save,
    Load,
    TakeSnapshot,
    RestoreSnapshot,
    /// The game is killed while autosave writes: the slot as it is on disk, its
    /// journal cut at any byte, is what the next start loads.
    Kill {
        cut: f64,
    },
    /// The game moves the memory clock.
    Clock {
        jump: Jump,
    },
    /// The game sets an NPC's memory tier, or hands the choice back.
    Tier {
        npc: usize,
        tier: Option<MemoryTier>,
    },
    /// NPCs talk among themselves.
    Converse(Talks),
    /// The NPC's entity is despawned (a scene unloads) and, unless `stays_away`,
    /// spawned again with the same id: its memory outlives the entity.
    Respawn {
        npc: usize,
        stays_away: bool,
    },
    /// The game loads a damaged file, a fresh one or its autosave slot, then
    /// resumes autosave on it.
    LoadDamaged {
        target: Target,
        damage: Damage,
    },
    /// The game imports the original game's Unity save into one NPC.
    ImportUnity(Import),
    /// The game answers a lift call that no longer waits (`pick` chooses which
    /// of those made so far), or one never made.
    AnswerLate {
        npc: usize,
        pick: u8,
    },
}

impl Step {
    /// A public line to `npc`, by its id, from the game's own player.
    pub fn talk(npc: usize, text: &str, reply: Reply) -> Self {
        Step::Talk {
            npc,
            text: text.into(),
            private: false,
            by_entity: false,
            reply,
            co_op: false,
        }
    }

    /// How many kinds of step there are.
    pub const KINDS: usize = 28;

    /// The step's kind, for counting what a run covered.
    pub fn kind(&self) -> &'static str {
        match self {
            Step::Talk { .. } => "talk",
            Step::Witness { .. } => "witness",
            Step::ShareEntry { .. } => "share entry",
            Step::ShareQuery { .. } => "share query",
            Step::ShareFact { .. } => "share fact",
            Step::MarkPrivate { .. } => "mark private",
            Step::SetFact { .. } => "set fact",
            Step::RemoveFact { .. } => "remove fact",
            Step::AddLore { .. } => "add lore",
            Step::UpdateLore { .. } => "update lore",
            Step::RemoveLore { .. } => "remove lore",
            Step::ChangePersona { .. } => "change persona",
            Step::Reconfigure { .. } => "reconfigure",
            Step::SummarizeNow { .. } => "summarize now",
            Step::SwitchBackend { .. } => "switch backend",
            Step::Clear { .. } => "clear",
            Step::Save => "save",
            Step::Load => "load",
            Step::TakeSnapshot => "take snapshot",
            Step::RestoreSnapshot => "restore snapshot",
            Step::Kill { .. } => "kill",
            Step::Converse(_) => "converse",
            Step::Clock { .. } => "clock",
            Step::Tier { .. } => "tier",
            Step::Respawn { .. } => "respawn",
            Step::AnswerLate { .. } => "answer late",
            Step::LoadDamaged { .. } => "load damaged",
            Step::ImportUnity(_) => "import unity",
        }
    }
}

/// The reference model: only what steps are drawn from.
#[derive(Clone, Debug)]
pub struct Model {
    pub ids: Vec<String>,
}

fn npc() -> impl Strategy<Value = usize> {
    0..NPCS
}

fn two_npcs() -> impl Strategy<Value = (usize, usize)> {
    (npc(), 1..NPCS).prop_map(|(from, offset)| (from, (from + offset) % NPCS))
}

fn reply() -> impl Strategy<Value = Reply> {
    prop_oneof![
        6 => text().prop_map(Reply::Say),
        1 => Just(Reply::Fail),
        1 => Just(Reply::Interrupted),
        1 => text().prop_map(Reply::CutOff),
        2 => (text(), any::<bool>(), lift())
            .prop_map(|(door, valid, lift)| Reply::Act { door, valid, lift }),
    ]
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        Just(Target::Fresh),
        Just(Target::Slot),
        Just(Target::SlotAndBackup),
    ]
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        Just(Damage::Garbage),
        Just(Damage::Foreign),
        (0.0..1.0f64).prop_map(Damage::Cut),
    ]
}

fn import() -> impl Strategy<Value = Import> {
    (
        npc(),
        prop::collection::vec(text(), 0..6),
        (text(), 0..8u8),
        prop::option::weighted(0.2, damage()),
        (0..3u8, any::<bool>()),
    )
        .prop_map(
            |(npc, lines, (summary, counter), damage, (during, summarize))| Import {
                npc,
                lines,
                summary,
                counter,
                damage,
                during,
                summarize,
            },
        )
}

fn lift() -> impl Strategy<Value = Lift> {
    prop_oneof![
        8 => Just(Lift::No),
        1 => Just(Lift::Answered),
        1 => Just(Lift::NeverAnswered),
    ]
}

fn jump() -> impl Strategy<Value = Jump> {
    prop_oneof![
        3 => (0.0..60.0f64).prop_map(Jump::On),
        3 => (300.0..4_000.0f64).prop_map(Jump::On),
        1 => (86_400.0..3_000_000.0f64).prop_map(Jump::On),
        1 => (0.0..5_000.0f64).prop_map(Jump::Back),
    ]
}

fn tier() -> impl Strategy<Value = Option<MemoryTier>> {
    prop::option::of(prop::sample::select(vec![
        MemoryTier::Foreground,
        MemoryTier::Nearby,
        MemoryTier::Background,
    ]))
}

fn talks() -> impl Strategy<Value = Talks> {
    let third = prop_oneof![
        2 => Just(Third::Away),
        1 => Just(Third::Overhears),
        1 => Just(Third::Joins),
    ];
    let player = prop::option::weighted(
        0.3,
        (text(), any::<bool>(), any::<bool>()).prop_map(|(text, private, to_second)| PlayerJoins {
            text,
            private,
            to_second,
        }),
    );
    (
        two_npcs(),
        third,
        text(),
        prop::option::weighted(0.2, text()),
        1..5u32,
        prop::bool::weighted(0.25),
        player,
    )
        .prop_map(
            |((first, second), third, topic, opening, turns, end_early, player)| Talks {
                first,
                second,
                third,
                topic,
                opening,
                turns,
                end_early,
                player,
            },
        )
}

fn scope() -> impl Strategy<Value = Scope> {
    prop_oneof![Just(Scope::World), npc().prop_map(Scope::Npc)]
}

impl ReferenceStateMachine for Model {
    type State = Model;
    type Transition = Step;

    fn init_state() -> BoxedStrategy<Model> {
        ids().prop_map(|ids| Model { ids }).boxed()
    }

    fn transitions(_: &Model) -> BoxedStrategy<Step> {
        prop_oneof![
            12 => (
                npc(),
                line(),
                any::<bool>(),
                any::<bool>(),
                reply(),
                prop::bool::weighted(0.3)
            )
                .prop_map(|(npc, text, private, by_entity, reply, co_op)| Step::Talk {
                    npc,
                    text,
                    private,
                    by_entity,
                    reply,
                    co_op,
                }),
            2 => (prop::collection::vec(npc(), 1..=NPCS), text())
                .prop_map(|(witnesses, text)| Step::Witness { witnesses, text }),
            3 => (two_npcs(), any::<u64>())
                .prop_map(|((from, to), index)| Step::ShareEntry { from, to, index }),
            1 => (two_npcs(), line())
                .prop_map(|((from, to), query)| Step::ShareQuery { from, to, query }),
            1 => two_npcs().prop_map(|(from, to)| Step::ShareFact { from, to }),
            2 => (npc(), any::<u64>()).prop_map(|(npc, index)| Step::MarkPrivate { npc, index }),
            1 => (npc(), text()).prop_map(|(npc, value)| Step::SetFact { npc, value }),
            1 => npc().prop_map(|npc| Step::RemoveFact { npc }),
            1 => (0..4u8, scope(), text())
                .prop_map(|(id, scope, text)| Step::AddLore { id, scope, text }),
            1 => (0..4u8, text()).prop_map(|(id, text)| Step::UpdateLore { id, text }),
            1 => (0..4u8).prop_map(|id| Step::RemoveLore { id }),
            1 => (npc(), text()).prop_map(|(npc, text)| Step::ChangePersona { npc, text }),
            1 => (npc(), 2..12usize, prop::option::of(200..1500usize)).prop_map(
                |(npc, window, budget)| Step::Reconfigure {
                    npc,
                    window,
                    budget,
                }
            ),
            1 => npc().prop_map(|npc| Step::SummarizeNow { npc }),
            1 => any::<bool>().prop_map(|offline| Step::SwitchBackend { offline }),
            1 => npc().prop_map(|npc| Step::Clear { npc }),
            1 => Just(Step::Save),
            1 => Just(Step::Load),
            1 => Just(Step::TakeSnapshot),
            1 => Just(Step::RestoreSnapshot),
            1 => (0.0..1.0f64).prop_map(|cut| Step::Kill { cut }),
            2 => jump().prop_map(|jump| Step::Clock { jump }),
            1 => (npc(), tier()).prop_map(|(npc, tier)| Step::Tier { npc, tier }),
            2 => talks().prop_map(Step::Converse),
            1 => (npc(), prop::bool::weighted(0.2))
                .prop_map(|(npc, stays_away)| Step::Respawn { npc, stays_away }),
            1 => (npc(), any::<u8>()).prop_map(|(npc, pick)| Step::AnswerLate { npc, pick }),
            1 => (target(), damage())
                .prop_map(|(target, damage)| Step::LoadDamaged { target, damage }),
            1 => import().prop_map(Step::ImportUnity),
        ]
        .boxed()
    }

    fn apply(model: Model, _: &Step) -> Model {
        model
    }
}
