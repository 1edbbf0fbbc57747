//! Where the turn pipeline's stages hand work to each other: lines ready to be
//! answered, requests ready for the scheduler, what backends should forget, and
//! results back from them. Each stage borrows only what it needs and leaves the
//! rest here for the stage that owns it.

use std::sync::Arc;
use std::time::Duration;

use super::{LineRules, NpcRequests, QueuedLine};
use crate::backends::{BackendError, ChatRequest, ChatResponse, RequestKind};
use crate::memory::{
    NpcId, PromptMessage, ReplyInput, SummaryJob, SummaryJobId, estimate_prompt_tokens,
};
use crate::plugin::bridge::{TaskId, Ticket};
use crate::plugin::npc::TurnId;

/// Work for the scheduler, in the order it became due.
#[derive(Debug)]
pub(crate) enum Outbound {
    /// A reply request; the actions it offers are added when it is queued.
    Reply {
        npc: NpcId,
        task: TaskId,
        turn: TurnId,
        request: ChatRequest,
    },
    /// A summary job, built when it is sent; `tokens` is its estimated size.
    Summary {
        npc: NpcId,
        task: TaskId,
        job: SummaryJobId,
        tokens: u64,
    },
    /// The NPC's window nears its hard cap: its waiting summary goes first.
    Press(NpcId),
    /// The game asked for the NPC's waiting summary now.
    Hurry(NpcId),
    /// The NPC's requests were cancelled: the scheduler and its action rounds
    /// drop what they hold for it (every NPC with `None`).
    Forget(Option<NpcId>),
}

/// A request that came back and is still to be applied.
#[derive(Debug)]
pub(crate) struct Arrived {
    pub(crate) npc: NpcId,
    /// The backend that answered it.
    pub(crate) backend: Arc<str>,
    pub(crate) work: ArrivedWork,
    pub(crate) latency: Duration,
}

/// What an arrived request answers, and its result.
#[derive(Debug)]
pub(crate) enum ArrivedWork {
    Reply {
        turn: TurnId,
        result: Result<ChatResponse, BackendError>,
    },
    Summary {
        job: SummaryJobId,
        result: Result<ChatResponse, BackendError>,
    },
}

/// The hand-offs, kept in [`NpcRequests`].
#[derive(Debug, Default)]
pub(super) struct Handoff {
    next_task: u64,
    /// NPCs that may be free to answer their next line.
    ready: Vec<NpcId>,
    outbound: Vec<Outbound>,
    /// NPCs whose backend state should be dropped (every NPC with `None`).
    forgotten: Vec<Option<NpcId>>,
    arrived: Vec<Arrived>,
}

impl NpcRequests {
    /// A ticket for a new request, waiting in the scheduler until it is sent.
    fn reserve(&mut self) -> Ticket {
        let id = TaskId::new(self.handoff.next_task);
        self.handoff.next_task += 1;
        Ticket::queued(id)
    }

    /// Starts the reply to `turn`; the scheduler gets it when the outbound
    /// requests are queued.
    pub(crate) fn send_reply(
        &mut self,
        npc: &NpcId,
        turn: TurnId,
        messages: Vec<PromptMessage>,
        input: ReplyInput,
    ) {
        if let Some(tokens) = self.background.get_mut(&turn) {
            *tokens += estimate_prompt_tokens(&messages) as u64;
        }
        let ticket = self.reserve();
        let task = ticket.id;
        self.start_reply(npc, ticket, turn);
        let request = ChatRequest {
            npc: npc.clone(),
            kind: RequestKind::Reply(input),
            messages,
            actions: Vec::new(),
        };
        self.handoff.outbound.push(Outbound::Reply {
            npc: npc.clone(),
            task,
            turn,
            request,
        });
    }

    /// Starts summary `job`, built from edition `edition` of the NPC's memory.
    pub(crate) fn send_summary(&mut self, npc: &NpcId, job: SummaryJob, edition: u64) {
        let ticket = self.reserve();
        let task = ticket.id;
        let tokens = estimate_prompt_tokens(&job.messages) as u64;
        let id = job.id;
        self.start_summary(npc, ticket, (job, edition));
        self.handoff.outbound.push(Outbound::Summary {
            npc: npc.clone(),
            task,
            job: id,
            tokens,
        });
    }

    /// The NPC's waiting summary should go before other summaries.
    pub(crate) fn press(&mut self, npc: &NpcId) {
        self.handoff.outbound.push(Outbound::Press(npc.clone()));
    }

    /// The NPC's waiting summary should go now.
    pub(crate) fn hurry(&mut self, npc: &NpcId) {
        self.handoff.outbound.push(Outbound::Hurry(npc.clone()));
    }

    /// Takes the work due for the scheduler, oldest first.
    pub(crate) fn take_outbound(&mut self) -> Vec<Outbound> {
        std::mem::take(&mut self.handoff.outbound)
    }

    /// Whether work waits for the scheduler.
    pub(crate) fn has_outbound(&self) -> bool {
        !self.handoff.outbound.is_empty()
    }

    /// The NPC's requests were cancelled: the scheduler and the action rounds
    /// drop what they keep for it (every NPC with `None`).
    pub(super) fn forget(&mut self, npc: Option<&NpcId>) {
        self.handoff.outbound.push(Outbound::Forget(npc.cloned()));
    }

    /// The backends should drop what they derived from the NPC's memory (every
    /// NPC's with `None`): it was cleared or replaced.
    pub(crate) fn forget_backend_state(&mut self, npc: Option<&NpcId>) {
        self.handoff.forgotten.push(npc.cloned());
    }

    /// NPCs whose backends should drop what they keep for them.
    pub(crate) fn take_forgotten(&mut self) -> Vec<Option<NpcId>> {
        std::mem::take(&mut self.handoff.forgotten)
    }

    /// The NPC may be free to answer its next line.
    pub(crate) fn ready(&mut self, npc: &NpcId) {
        if !self.handoff.ready.contains(npc) {
            self.handoff.ready.push(npc.clone());
        }
    }

    /// Takes the NPCs that may be free to answer, in the order they became so.
    pub(crate) fn take_ready(&mut self) -> Vec<NpcId> {
        std::mem::take(&mut self.handoff.ready)
    }

    /// Whether an NPC may be free to answer.
    pub(crate) fn has_ready(&self) -> bool {
        !self.handoff.ready.is_empty()
    }

    /// A request came back and finished; it is applied by the next stage.
    pub(crate) fn arrive(&mut self, arrived: Arrived) {
        self.handoff.arrived.push(arrived);
    }

    /// Whether a request came back and waits to be applied.
    pub(crate) fn has_arrived(&self) -> bool {
        !self.handoff.arrived.is_empty()
    }

    /// Takes the requests that came back, in the order they did.
    pub(crate) fn take_arrived(&mut self) -> Vec<Arrived> {
        std::mem::take(&mut self.handoff.arrived)
    }

    /// Puts back requests a stage left for the next.
    pub(crate) fn put_back_arrived(&mut self, arrived: Vec<Arrived>) {
        debug_assert!(self.handoff.arrived.is_empty());
        self.handoff.arrived = arrived;
    }

    /// The limits a line is held to.
    pub(crate) fn rules(&self) -> LineRules {
        self.rules
    }

    /// New limits for lines, from the plugin's settings.
    pub(crate) fn set_rules(&mut self, rules: LineRules) {
        self.rules = rules;
    }

    /// A line accepted to be answered at once: it is answered when the ready
    /// NPCs are, and until then the NPC takes no other line first.
    pub(crate) fn start_line(&mut self, npc: &NpcId, line: QueuedLine) {
        self.slot(npc).starting = Some(line);
        self.ready(npc);
    }
}
