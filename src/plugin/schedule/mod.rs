//! The memory scheduler: one queue decides when every request goes. Replies the
//! player waits for go first; summaries follow by the NPC's [`MemoryTier`], under a
//! global per-minute budget and a pause after rate limits. The policy is plain Rust
//! in `budget`, `queue` and `policy`; this module is the Bevy side.

mod budget;
mod policy;
mod queue;

use std::collections::HashMap;
use std::time::Duration;

use bevy::prelude::*;

use super::bridge::TaskId;
use super::npc::MemoryTier;
use super::persona::Npc;
use super::requests::NpcRequests;
use super::sets::{IntakeStep, NpcMemorySystems};
use super::settings::{NpcMemorySettings, ScheduleSettings};
use crate::backends::{ChatRequest, TokenUsage};
use crate::memory::{NpcId, SummaryJobId};
use policy::{Held, Limits, Policy};
pub(crate) use queue::{Class, Entry};

/// Sets the [`MemoryTier`] of an NPC by id, whether or not it has an entity (its
/// memory outlives entities). `tier: None` hands the choice back to the
/// [`MemoryTier`] component, the persona, or the default, in that order.
#[derive(Message, Clone, Debug, PartialEq, Eq)]
pub struct SetMemoryTier {
    /// Whose work.
    pub npc: NpcId,
    /// Its tier, or `None` to clear the game's choice.
    pub tier: Option<MemoryTier>,
}

impl SetMemoryTier {
    /// Sets `npc`'s tier.
    pub fn new(npc: impl Into<NpcId>, tier: MemoryTier) -> Self {
        Self {
            npc: npc.into(),
            tier: Some(tier),
        }
    }
}

/// Requests and tokens spent over the last minute, against the budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BudgetUse {
    /// Requests sent in the last 60 seconds.
    pub requests: u64,
    /// Estimated prompt tokens sent in the last 60 seconds.
    pub tokens: u64,
    /// The limit on requests, if any.
    pub requests_per_minute: Option<u32>,
    /// The limit on tokens, if any.
    pub tokens_per_minute: Option<u32>,
    /// How long dispatch stays paused after a rate limit, if it is.
    pub rate_limited_for: Option<Duration>,
    /// Whether the budget (not a rate limit) held work back in the last frame.
    pub over_budget: bool,
}

/// A request waiting to be sent.
#[derive(Debug)]
pub(crate) struct Work {
    pub(crate) npc: NpcId,
    pub(crate) task: TaskId,
    pub(crate) kind: WorkKind,
}

/// What a queued request is.
#[derive(Debug)]
pub(crate) enum WorkKind {
    /// A reply, built when the line was taken.
    Reply(ChatRequest),
    /// A summary job, built when it is sent so that it covers what piled up.
    Summary(SummaryJobId),
}

/// A summary waiting in the queue, and the entry that stands for it.
#[derive(Clone, Copy, Debug)]
struct WaitingSummary {
    seq: u64,
    task: TaskId,
    job: SummaryJobId,
    since: Duration,
    not_before: Duration,
    tokens: u64,
    /// Its NPC's window is close to the hard cap.
    pressing: bool,
}

/// The scheduler's state, read-only for games: what waits, what the budget allows,
/// and each NPC's tier. Read it for a debug overlay, or to hold back the game's own
/// requests while the provider rate-limits.
#[derive(Resource, Default)]
pub struct NpcMemoryScheduler {
    policy: Policy<Work>,
    summaries: HashMap<NpcId, WaitingSummary>,
    /// Tiers the game set, by message or component.
    tiers: HashMap<NpcId, MemoryTier>,
    /// Tiers personas set as their default.
    persona_tiers: HashMap<NpcId, MemoryTier>,
    default_tier: MemoryTier,
    /// NPCs whose tier changed since the dialogue last took them, so memory set
    /// per tier follows without looking at every NPC each frame.
    retiered: Vec<NpcId>,
    default_retiered: bool,
    /// The scheduler's clock: real time, as of this frame.
    now: Duration,
    budget: BudgetUse,
    sent: u64,
    /// The last request whose backend waits out a rate limit itself.
    waited_out_by_backend: Option<TaskId>,
}

impl NpcMemoryScheduler {
    /// Requests waiting to be sent over all NPCs, replies and summaries. Entries
    /// cancelled meanwhile count until the queue reaches them.
    pub fn queue_depth(&self) -> usize {
        self.policy.queue.len()
    }

    /// How long the NPC's summary has been waiting to be sent, if it is.
    pub fn deferred(&self, npc: &NpcId) -> Option<Duration> {
        let waiting = self.summaries.get(npc)?;
        Some(self.now.saturating_sub(waiting.since))
    }

    /// NPCs whose summary waits to be sent.
    pub fn deferred_summaries(&self) -> usize {
        self.summaries.len()
    }

    /// The budget spent over the last minute, as of this frame.
    pub fn budget_use(&self) -> BudgetUse {
        self.budget
    }

    /// The NPC's tier: the game's choice, else its persona's, else the default.
    pub fn tier(&self, npc: &NpcId) -> MemoryTier {
        self.tiers
            .get(npc)
            .or_else(|| self.persona_tiers.get(npc))
            .copied()
            .unwrap_or(self.default_tier)
    }

    /// Requests sent to a backend since startup, rate-limited ones sent again
    /// included.
    pub fn requests_sent(&self) -> u64 {
        self.sent
    }

    pub(crate) fn count_sent(&mut self) {
        self.sent += 1;
    }

    /// The scheduler's clock (real time since startup) as of this frame.
    pub fn now(&self) -> Duration {
        self.now
    }

    /// Starts a frame at real time `now`.
    pub(crate) fn begin(&mut self, now: Duration, settings: &ScheduleSettings) {
        self.now = now;
        if self.default_tier != settings.default_tier {
            self.default_tier = settings.default_tier;
            self.default_retiered = true;
        }
    }

    /// NPCs whose tier changed since the last call (some perhaps twice), and
    /// whether the default tier changed, which may have changed any NPC's.
    pub(crate) fn take_retiered(&mut self) -> (Vec<NpcId>, bool) {
        let npcs = std::mem::take(&mut self.retiered);
        (npcs, std::mem::take(&mut self.default_retiered))
    }

    /// Queues a reply: one the player waits for ([`Class::Reply`]), or a turn of
    /// a conversation among NPCs ([`Class::Chatter`]).
    pub(crate) fn queue_reply(
        &mut self,
        npc: &NpcId,
        task: TaskId,
        request: ChatRequest,
        class: Class,
    ) {
        let tokens = crate::memory::estimate_prompt_tokens(&request.messages) as u64;
        let tier = self.tier(npc);
        let work = Work {
            npc: npc.clone(),
            task,
            kind: WorkKind::Reply(request),
        };
        self.policy
            .queue
            .push(self.now, class, tier, self.now, tokens, work);
    }

    /// Queues a summary; a background NPC's waits `settings.background_delay`
    /// first, unless `hurry`.
    pub(crate) fn queue_summary(
        &mut self,
        npc: &NpcId,
        task: TaskId,
        job: SummaryJobId,
        tokens: u64,
        settings: &ScheduleSettings,
    ) {
        let tier = self.tier(npc);
        let not_before = match tier {
            MemoryTier::Background => self.now + settings.background_delay,
            MemoryTier::Foreground | MemoryTier::Nearby => self.now,
        };
        let waiting = WaitingSummary {
            seq: 0,
            task,
            job,
            since: self.now,
            not_before,
            tokens,
            pressing: false,
        };
        self.push_summary(npc, waiting, tier);
    }

    fn push_summary(&mut self, npc: &NpcId, mut waiting: WaitingSummary, tier: MemoryTier) {
        let work = Work {
            npc: npc.clone(),
            task: waiting.task,
            kind: WorkKind::Summary(waiting.job),
        };
        waiting.seq = self.policy.queue.push_ranked(
            self.now,
            (Class::Summary, waiting.pressing),
            tier,
            waiting.not_before,
            waiting.tokens,
            work,
        );
        self.summaries.insert(npc.clone(), waiting);
    }

    /// The NPC's waiting summary competes from now on, at its current tier: its
    /// window is full, the game asked for it, or its tier changed. The older
    /// entry goes stale and is skipped when reached.
    pub(crate) fn hurry(&mut self, npc: &NpcId) {
        let Some(mut waiting) = self.summaries.get(npc).copied() else {
            return;
        };
        waiting.not_before = waiting.not_before.min(self.now);
        self.push_summary(npc, waiting, self.tier(npc));
    }

    /// The NPC's window is close to its hard cap: its waiting summary goes now,
    /// before every other summary, so that no message leaves the prompt
    /// unsummarized while summaries of roomier windows wait for the budget.
    pub(crate) fn press(&mut self, npc: &NpcId) {
        let Some(mut waiting) = self.summaries.get(npc).copied() else {
            return;
        };
        if waiting.pressing {
            return;
        }
        waiting.pressing = true;
        waiting.not_before = waiting.not_before.min(self.now);
        self.push_summary(npc, waiting, self.tier(npc));
    }

    /// The next request to send now, if the budget and rate limits allow.
    pub(crate) fn next(
        &mut self,
        settings: &ScheduleSettings,
        requests: &NpcRequests,
    ) -> Option<Entry<Work>> {
        let limits = Limits {
            requests: settings.requests_per_minute.map(u64::from),
            tokens: settings.tokens_per_minute.map(u64::from),
            reply_reserve: f64::from(settings.reply_reserve),
        };
        let summaries = &mut self.summaries;
        let entry = self.policy.next(self.now, limits, |entry| {
            let work = &entry.work;
            let current = match work.kind {
                WorkKind::Reply(_) => true,
                WorkKind::Summary(_) => {
                    summaries.get(&work.npc).is_some_and(|w| w.seq == entry.seq)
                }
            };
            current && requests.is_waiting(&work.npc, work.task)
        })?;
        if let WorkKind::Summary(_) = entry.work.kind {
            summaries.remove(&entry.work.npc);
        }
        Some(entry)
    }

    /// Counts tokens a request cost when it was built.
    pub(crate) fn spend_tokens(&mut self, task: TaskId, tokens: u64) {
        self.policy.spend_tokens(self.now, tokens, Some(task.key()));
    }

    /// The provider reported what request `task` cost: its prompt and its answer,
    /// which is what a tokens-per-minute limit counts. The estimate spent when it
    /// was sent is replaced.
    pub(crate) fn billed(&mut self, task: TaskId, usage: TokenUsage) {
        let tokens = usage.prompt_tokens.saturating_add(usage.completion_tokens);
        self.policy.correct_tokens(task.key(), tokens);
    }

    /// A request was rate limited: dispatch pauses. Returns the pause.
    pub(crate) fn rate_limited(
        &mut self,
        retry_after: Option<Duration>,
        settings: &ScheduleSettings,
    ) -> Duration {
        self.policy
            .rate_limited(self.now, retry_after, settings.backoff())
    }

    /// A request succeeded. If it is the one whose backend waited out the last
    /// rate limit, its retry was sent after the limit and accepted, so the pause
    /// ends now even if it was longer than the backend's own wait.
    pub(crate) fn succeeded(&mut self, task: TaskId) {
        self.policy.succeeded();
        if self.waited_out_by_backend.take_if(|t| *t == task).is_some() {
            self.policy.lift_pause(self.now);
        }
    }

    /// Request `task` was rate limited and its backend waits and retries it
    /// itself: dispatch pauses meanwhile. Returns the pause.
    pub(crate) fn backend_waits_out(
        &mut self,
        task: TaskId,
        retry_after: Option<Duration>,
        settings: &ScheduleSettings,
    ) -> Duration {
        self.waited_out_by_backend = Some(task);
        self.rate_limited(retry_after, settings)
    }

    /// Queues a rate-limited reply again; it goes first when the pause ends.
    pub(crate) fn requeue_reply(
        &mut self,
        npc: &NpcId,
        task: TaskId,
        request: ChatRequest,
        class: Class,
    ) {
        self.queue_reply(npc, task, request, class);
    }

    /// Queues a rate-limited summary again, to go when the pause ends.
    pub(crate) fn requeue_summary(&mut self, npc: &NpcId, task: TaskId, job: SummaryJobId) {
        let waiting = WaitingSummary {
            seq: 0,
            task,
            job,
            since: self.now,
            not_before: self.now,
            tokens: 0,
            pressing: false,
        };
        self.push_summary(npc, waiting, self.tier(npc));
    }

    /// Forgets the NPC's waiting summary (its requests were cancelled).
    pub(crate) fn forget(&mut self, npc: &NpcId) {
        self.summaries.remove(npc);
    }

    /// Forgets every waiting request, as loading another save slot must.
    pub(crate) fn forget_all(&mut self) {
        self.summaries.clear();
        self.policy.queue.clear();
    }

    /// Brings [`budget_use`](Self::budget_use) up to date at the end of a frame.
    pub(crate) fn end(&mut self, settings: &ScheduleSettings) {
        let (requests, tokens) = self.policy.used(self.now);
        self.budget = BudgetUse {
            requests,
            tokens,
            requests_per_minute: settings.requests_per_minute,
            tokens_per_minute: settings.tokens_per_minute,
            rate_limited_for: self
                .policy
                .paused_until(self.now)
                .map(|until| until - self.now),
            over_budget: matches!(
                self.policy.held(),
                Some(Held::Requests(_) | Held::Tokens(_))
            ),
        };
    }

    /// The game set (or cleared) the NPC's tier.
    pub(crate) fn set_tier(&mut self, npc: &NpcId, tier: Option<MemoryTier>) {
        let before = self.tier(npc);
        match tier {
            Some(tier) => self.tiers.insert(npc.clone(), tier),
            None => self.tiers.remove(npc),
        };
        self.retiered(npc, before);
    }

    /// The NPC's persona sets this default tier (or none).
    pub(crate) fn set_persona_tier(&mut self, npc: &NpcId, tier: Option<MemoryTier>) {
        let before = self.tier(npc);
        match tier {
            Some(tier) => self.persona_tiers.insert(npc.clone(), tier),
            None => self.persona_tiers.remove(npc),
        };
        self.retiered(npc, before);
    }

    /// A waiting summary moves with its NPC's tier: up at once, or down.
    fn retiered(&mut self, npc: &NpcId, before: MemoryTier) {
        if self.tier(npc) != before {
            self.hurry(npc);
            self.retiered.push(npc.clone());
        }
    }
}

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<NpcMemoryScheduler>()
        .add_message::<SetMemoryTier>()
        .register_type::<MemoryTier>()
        .register_type::<ScheduleSettings>()
        .add_observer(on_tier_inserted)
        .add_observer(on_npc_inserted)
        .add_observer(on_tier_removed)
        .add_systems(
            Update,
            (
                tick.before(NpcMemorySystems::Personas),
                take_tier_messages.in_set(IntakeStep::Changes),
            ),
        );
}

/// The scheduler's clock reads real time once, before anything is queued this
/// frame, so work queued and sent in the same frame has waited zero.
fn tick(
    mut scheduler: ResMut<NpcMemoryScheduler>,
    time: Res<Time<Real>>,
    settings: Res<NpcMemorySettings>,
) {
    scheduler.begin(time.elapsed(), &settings.schedule);
}

fn take_tier_messages(
    mut messages: MessageReader<SetMemoryTier>,
    mut scheduler: ResMut<NpcMemoryScheduler>,
) {
    for message in messages.read() {
        scheduler.set_tier(&message.npc, message.tier);
    }
}

/// The component is immutable, so every change is an insert and reaches here.
fn on_tier_inserted(
    insert: On<Insert, MemoryTier>,
    npcs: Query<(&Npc, &MemoryTier)>,
    mut scheduler: ResMut<NpcMemoryScheduler>,
) {
    if let Ok((npc, tier)) = npcs.get(insert.entity) {
        scheduler.set_tier(&npc.id, Some(*tier));
    }
}

/// An NPC component added to an entity that already has a tier.
fn on_npc_inserted(
    insert: On<Insert, Npc>,
    npcs: Query<(&Npc, &MemoryTier)>,
    mut scheduler: ResMut<NpcMemoryScheduler>,
) {
    if let Ok((npc, tier)) = npcs.get(insert.entity) {
        scheduler.set_tier(&npc.id, Some(*tier));
    }
}

fn on_tier_removed(
    remove: On<Remove, MemoryTier>,
    npcs: Query<&Npc>,
    mut scheduler: ResMut<NpcMemoryScheduler>,
) {
    if let Ok(npc) = npcs.get(remove.entity) {
        scheduler.set_tier(&npc.id, None);
    }
}
