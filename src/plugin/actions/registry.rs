//! What the game registered (actions and their handlers, the veto) and what each
//! NPC may call, with the rounds of actions each turn has used.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bevy::ecs::system::SystemId;
use bevy::prelude::*;

use super::{ActionInvocation, ProposedAction};
use crate::memory::{
    ActionCall, ActionOutcome, ActionRecord, ActionReply, ActionSpec, ArgumentSchema, NpcAction,
    NpcId,
};
use crate::plugin::npc::TurnId;

/// A checked call, before it is typed for its handler.
pub(crate) struct Invocation {
    pub(crate) npc: NpcId,
    pub(crate) entity: Option<Entity>,
    pub(crate) turn: TurnId,
    pub(crate) call: ActionCall,
}

type RunFn = dyn Fn(&mut World, Invocation) -> ActionReply + Send + Sync;
type CheckFn = dyn Fn(&str) -> Result<(), String> + Send + Sync;

/// One registered action: what the model is offered, how its arguments are
/// checked, and how its handler runs. The check and the handler both parse with
/// the action's own type; the check also holds the arguments to the schema the
/// model was offered, compiled once here rather than for every call.
pub(crate) struct RegisteredAction {
    pub(crate) spec: ActionSpec,
    pub(crate) check: Box<CheckFn>,
    pub(crate) run: Arc<RunFn>,
}

/// Every action the game registered, by name, and its veto.
#[derive(Resource, Default)]
pub(crate) struct ActionRegistry {
    actions: BTreeMap<String, RegisteredAction>,
    pub(crate) veto: Option<SystemId<In<ProposedAction>, Option<String>>>,
}

impl ActionRegistry {
    pub(crate) fn get(&self, name: &str) -> Option<&RegisteredAction> {
        self.actions.get(name)
    }
}

/// The word in a persona's `actions` that allows every registered action.
pub(crate) const ALL_ACTIONS: &str = "*";

/// A round of calls the model made, waiting for the game.
pub(crate) struct ProposedRound {
    pub(crate) npc: NpcId,
    pub(crate) turn: TurnId,
    pub(crate) said: String,
    pub(crate) calls: Vec<ActionCall>,
}

/// A round some of whose calls the game answers later.
pub(crate) struct WaitingRound {
    pub(crate) npc: NpcId,
    pub(crate) turn: TurnId,
    pub(crate) said: String,
    pub(crate) calls: Vec<ActionCall>,
    /// One per call, in order; `None` until the game answers.
    pub(crate) outcomes: Vec<Option<ActionOutcome>>,
    /// When unanswered calls fail as timed out.
    pub(crate) deadline: bevy::platform::time::Instant,
}

/// A round the game has answered, waiting to enter memory.
pub(crate) struct AnsweredRound {
    pub(crate) npc: NpcId,
    pub(crate) turn: TurnId,
    pub(crate) said: String,
    pub(crate) records: Vec<ActionRecord>,
}

/// Which actions each NPC may call, and the turn's rounds in progress. Nothing
/// here is saved: a round still waiting for the game when it saves is lost with
/// the reply it would have led to, as a reply in flight is.
#[derive(Resource, Default)]
pub(crate) struct ActionTurns {
    allowed: HashMap<NpcId, Vec<String>>,
    rounds: HashMap<NpcId, (TurnId, u32)>,
    pub(crate) proposed: Vec<ProposedRound>,
    pub(crate) waiting: Vec<WaitingRound>,
    pub(crate) answered: Vec<AnsweredRound>,
}

impl ActionTurns {
    /// The NPC's persona lists these actions (see `Persona::actions`).
    pub(crate) fn allow(&mut self, npc: &NpcId, actions: &[String]) {
        if actions.is_empty() {
            self.allowed.remove(npc);
        } else {
            self.allowed.insert(npc.clone(), actions.to_vec());
        }
    }

    pub(crate) fn allows(&self, npc: &NpcId, name: &str) -> bool {
        self.allowed
            .get(npc)
            .is_some_and(|names| names.iter().any(|n| n == name || n == ALL_ACTIONS))
    }

    /// The actions the NPC may call in the next request of `turn`: none once the
    /// turn has used `max_rounds` rounds, so the model has to answer in words.
    pub(crate) fn offer(
        &self,
        registry: &ActionRegistry,
        npc: &NpcId,
        turn: TurnId,
        max_rounds: u32,
    ) -> Vec<ActionSpec> {
        if !self.may_act(registry, npc, turn, max_rounds) {
            return Vec::new();
        }
        registry
            .actions
            .iter()
            .filter(|(name, _)| self.allows(npc, name))
            .map(|(_, action)| action.spec.clone())
            .collect()
    }

    /// Whether calls in an answer for `turn` are taken: the request offered
    /// actions (the persona lists a registered one, and the turn has rounds
    /// left). Calls a model makes unasked are ignored.
    pub(crate) fn may_act(
        &self,
        registry: &ActionRegistry,
        npc: &NpcId,
        turn: TurnId,
        max_rounds: u32,
    ) -> bool {
        self.round(npc, turn) < max_rounds
            && self.allowed.contains_key(npc)
            && registry.actions.keys().any(|name| self.allows(npc, name))
    }

    fn round(&self, npc: &NpcId, turn: TurnId) -> u32 {
        match self.rounds.get(npc) {
            Some(&(at, rounds)) if at == turn => rounds,
            _ => 0,
        }
    }

    /// The names this NPC may call, for a refusal that tells the model its options.
    pub(crate) fn options<'a>(&self, registry: &'a ActionRegistry, npc: &NpcId) -> Vec<&'a str> {
        registry
            .actions
            .keys()
            .filter(|name| self.allows(npc, name))
            .map(String::as_str)
            .collect()
    }

    /// The turn used one more round.
    pub(crate) fn count_round(&mut self, npc: &NpcId, turn: TurnId) {
        let rounds = self.round(npc, turn) + 1;
        self.rounds.insert(npc.clone(), (turn, rounds));
    }

    /// The turn ended.
    pub(crate) fn end_turn(&mut self, npc: &NpcId) {
        self.rounds.remove(npc);
    }

    /// The NPC's memory was cleared or replaced: its rounds in progress are
    /// dropped, and answers still to come for them are ignored.
    pub(crate) fn forget(&mut self, npc: &NpcId) {
        self.rounds.remove(npc);
        self.proposed.retain(|r| r.npc != *npc);
        self.waiting.retain(|r| r.npc != *npc);
        self.answered.retain(|r| r.npc != *npc);
    }
}

/// Registers game actions NPCs can take, on the [`App`].
pub trait NpcActionsAppExt {
    /// Registers action `A`, handled by `handler`: an ordinary Bevy system that
    /// takes `In<ActionInvocation<A>>` and returns the [`ActionOutcome`] the model
    /// is told, or [`ActionReply::Later`] to answer with
    /// [`AnswerNpcAction`](super::AnswerNpcAction) within
    /// `NpcMemorySettings::action_timeout` (past it the action failed as timed
    /// out). It runs only for calls that name an action the NPC's persona
    /// allows (`actions: ["open_door"]`, or `["*"]` for every registered action)
    /// with arguments that fit `A` and its JSON Schema (the limits set with
    /// `schemars` attributes, such as `range`, `length` and `regex`), and that
    /// the game's veto (if any) lets through; every other call is refused with
    /// the reason, which the model reads on its next round. Registering a name
    /// again replaces its handler.
    ///
    /// It may be called before or after the plugin is added.
    ///
    /// # Panics
    ///
    /// If `A::NAME` is not a plain name (see
    /// [`is_action_name`](crate::memory::is_action_name)), or if the JSON Schema
    /// of `A` cannot be compiled (a `regex` pattern that is not one).
    ///
    /// ```
    /// use bevy::prelude::*;
    /// use bevy_npc_memory::prelude::*;
    /// use bevy_npc_memory::memory::ActionOutcome;
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// /// Which door to open.
    /// #[derive(Deserialize, JsonSchema)]
    /// struct OpenDoor {
    ///     /// "north" or "south".
    ///     door: String,
    /// }
    ///
    /// impl NpcAction for OpenDoor {
    ///     const NAME: &'static str = "open_door";
    ///     const DESCRIPTION: &'static str = "Open one of the bunker's doors.";
    /// }
    ///
    /// #[derive(Resource, Default)]
    /// struct Doors {
    ///     open: Vec<String>,
    /// }
    ///
    /// // A handler that takes time returns `ActionReply::Later` and answers with
    /// // `AnswerNpcAction`.
    /// fn open_door(call: In<ActionInvocation<OpenDoor>>, mut doors: ResMut<Doors>) -> ActionOutcome {
    ///     match call.args.door.as_str() {
    ///         "north" | "south" => {
    ///             doors.open.push(call.args.door.clone());
    ///             ActionOutcome::Done(format!("The {} door slides open.", call.args.door))
    ///         }
    ///         other => ActionOutcome::Failed(format!("There is no {other} door.")),
    ///     }
    /// }
    ///
    /// App::new()
    ///     .add_plugins((MinimalPlugins, AssetPlugin::default(), NpcMemoryPlugin::default()))
    ///     .init_resource::<Doors>()
    ///     .register_npc_action(open_door);
    /// ```
    fn register_npc_action<A: NpcAction, R: Into<ActionReply> + 'static, M>(
        &mut self,
        handler: impl IntoSystem<In<ActionInvocation<A>>, R, M> + 'static,
    ) -> &mut Self;

    /// Sets the game's veto: a system that sees every call about to reach its
    /// handler and returns `Some(reason)` to refuse it (the model is told the
    /// reason) or `None` to let it run. Setting it again replaces it.
    fn set_npc_action_veto<M>(
        &mut self,
        veto: impl IntoSystem<In<ProposedAction>, Option<String>, M> + 'static,
    ) -> &mut Self;
}

impl NpcActionsAppExt for App {
    fn register_npc_action<A: NpcAction, R: Into<ActionReply> + 'static, M>(
        &mut self,
        handler: impl IntoSystem<In<ActionInvocation<A>>, R, M> + 'static,
    ) -> &mut Self {
        assert!(
            crate::memory::is_action_name(A::NAME),
            "action name {:?} is not a plain name: ASCII letters, digits, '_' or '-', at most {} characters",
            A::NAME,
            crate::memory::limits::MAX_ACTION_NAME_CHARS
        );
        let spec = A::spec();
        let schema = ArgumentSchema::compile(&spec.parameters).unwrap_or_else(|error| {
            panic!(
                "the JSON Schema of action {} cannot be compiled: {error}",
                A::NAME
            )
        });
        let world = self.world_mut();
        let id = world.register_system(handler);
        // The typed value comes from serde; `check` already held the call to the
        // schema before any game code (the veto, then this) sees it.
        let run = move |world: &mut World, invocation: Invocation| {
            let args = match A::parse(&invocation.call.arguments) {
                Ok(args) => args,
                Err(reason) => return ActionOutcome::Refused(reason).into(),
            };
            let input = ActionInvocation {
                npc: invocation.npc,
                entity: invocation.entity,
                turn: invocation.turn,
                call_id: invocation.call.id,
                args,
            };
            match world.run_system_with(id, input) {
                Ok(reply) => reply.into(),
                Err(error) => {
                    tracing::error!("the handler of action {} could not run: {error}", A::NAME);
                    ActionOutcome::Failed("the game could not carry it out".into()).into()
                }
            }
        };
        let action = RegisteredAction {
            spec,
            // serde first, so an ill-typed call is refused with serde's words.
            check: Box::new(move |arguments| {
                A::parse(arguments)?;
                schema.check(arguments)
            }),
            run: Arc::new(run),
        };
        let mut registry = world.get_resource_or_init::<ActionRegistry>();
        if let Some(old) = registry.actions.insert(A::NAME.to_owned(), action) {
            tracing::warn!(
                "action {} was registered again; the new handler replaces the old",
                old.spec.name
            );
        }
        self
    }

    fn set_npc_action_veto<M>(
        &mut self,
        veto: impl IntoSystem<In<ProposedAction>, Option<String>, M> + 'static,
    ) -> &mut Self {
        let world = self.world_mut();
        let id = world.register_system(veto);
        world.get_resource_or_init::<ActionRegistry>().veto = Some(id);
        self
    }
}
