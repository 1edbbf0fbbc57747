//! The scheduler's line in the debug panel: what waits, the budget spent, and the
//! selected NPC's tier and deferred summary.

use bevy_egui::egui;

use crate::memory::NpcId;
use crate::plugin::NpcMemoryScheduler;

/// One line under the status: queue depth, deferred summaries, budget, pause.
pub(super) fn draw_schedule(ui: &mut egui::Ui, scheduler: &NpcMemoryScheduler, npc: &NpcId) {
    let budget = scheduler.budget_use();
    let limit = |n: Option<u32>| n.map_or("∞".to_owned(), |n| n.to_string());
    let mut parts = vec![
        format!("queue {}", scheduler.queue_depth()),
        format!("{} summaries deferred", scheduler.deferred_summaries()),
        format!(
            "{}/{} req/min · {}/{} tok/min",
            budget.requests,
            limit(budget.requests_per_minute),
            budget.tokens,
            limit(budget.tokens_per_minute)
        ),
    ];
    if let Some(pause) = budget.rate_limited_for {
        parts.push(format!("rate limited, {:.1} s left", pause.as_secs_f64()));
    } else if budget.over_budget {
        parts.push("over budget".to_owned());
    }
    ui.label(parts.join(" · "));
    let tier = scheduler.tier(npc);
    ui.label(match scheduler.deferred(npc) {
        Some(waited) => format!(
            "Tier {tier:?} · summary deferred {:.1} s",
            waited.as_secs_f64()
        ),
        None => format!("Tier {tier:?}"),
    });
}
