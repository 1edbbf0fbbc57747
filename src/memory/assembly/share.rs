//! How the room a budget leaves is shared between the flexible sections, and
//! what each section reports it sent.

use super::items::Item;
use super::{SectionKind, SectionReport};
use crate::memory::config::SectionShares;
use crate::memory::tokens::estimate_tokens;

/// How many items of each flexible section fit: first each within its share, then
/// the leftovers, recalled messages first (they hold the exact words summaries
/// lose), then the window, then summaries.
pub(super) fn share_out(
    room: usize,
    shares: &SectionShares,
    sections: [&Vec<Item>; 3],
) -> [usize; 3] {
    let allowance = [shares.window, shares.summaries, shares.recall]
        .map(|share| (room as f64 * f64::from(share.max(0.0))) as usize);
    let mut fills: [Fill; 3] = Default::default();
    for (fill, (items, allowance)) in fills.iter_mut().zip(sections.iter().zip(allowance)) {
        fill.take(items, allowance);
    }
    for section in [2, 0, 1] {
        let left = room.saturating_sub(fills.iter().map(|f| f.used).sum());
        let limit = fills[section].used + left;
        fills[section].take(sections[section], limit);
    }
    fills.map(|f| f.taken)
}

/// How much of one section is taken so far.
#[derive(Default)]
pub(super) struct Fill {
    pub(super) taken: usize,
    pub(super) used: usize,
    groups: Vec<String>,
}

impl Fill {
    /// Takes items in order while they fit under `limit`; stops at the first that
    /// does not, so a section never skips ahead (the window must stay a contiguous
    /// tail). An item's first of its group also pays for the group's heading.
    pub(super) fn take(&mut self, items: &[Item], limit: usize) {
        while let Some(item) = items.get(self.taken) {
            let new_group = item.group.as_ref().filter(|g| !self.groups.contains(g));
            let cost = item.tokens + new_group.map_or(0, |g| group_tokens(g));
            if self.used + cost > limit {
                break;
            }
            if let Some(group) = new_group {
                self.groups.push(group.clone());
            }
            self.used += cost;
            self.taken += 1;
        }
    }
}

pub(super) fn sorted_by_index(items: &[Item]) -> Vec<&Item> {
    let mut sorted: Vec<&Item> = items.iter().collect();
    sorted.sort_by_key(|item| item.index);
    sorted
}

pub(super) fn report(
    kind: SectionKind,
    sent: &[&Item],
    available: usize,
    header: Option<usize>,
) -> SectionReport {
    let tokens = if sent.is_empty() {
        0
    } else {
        let groups: usize = group_headings(sent).map(group_tokens).sum();
        header.unwrap_or(0) + groups + sent.iter().map(|i| i.tokens).sum::<usize>()
    };
    SectionReport {
        kind,
        tokens,
        included: sent.iter().map(|i| i.index).collect(),
        left_out: available - sent.len(),
    }
}

/// The group headings a run of items (in log order) writes, once per run.
fn group_headings<'a>(items: &'a [&'a Item]) -> impl Iterator<Item = &'a str> + 'a {
    let mut previous: Option<&str> = None;
    items.iter().filter_map(move |item| {
        let group = item.group.as_deref()?;
        (previous != Some(group)).then(|| {
            previous = Some(group);
            group
        })
    })
}

/// Tokens of a group heading line.
fn group_tokens(group: &str) -> usize {
    estimate_tokens(group) + 1
}
