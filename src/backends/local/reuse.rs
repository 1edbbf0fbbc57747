//! Reuse of what the model has already read: a request evaluates only the tokens
//! after the longest prefix it shares with what the context holds for the same
//! NPC, instead of reading the whole prompt again.
//!
//! The context has one sequence. It holds the tokens of the last request (prompt
//! and generated answer). When another NPC's request comes, the sequence's state is
//! saved under its owner and the new owner's saved state, if any, is restored, so
//! each NPC keeps its own prefix while several take turns. Saved states live in
//! memory under a byte cap, least recently used first out. They are derived data:
//! never saved with the game, dropped when an NPC's memory is cleared or a save is
//! loaded, and checked token by token before any of them is reused, so a stale
//! state can cost time but never change an answer.

use std::collections::VecDeque;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::session::{LlamaStateSeqFlags, SeqState};
use llama_cpp_2::token::LlamaToken;

use crate::backends::Purpose;
use crate::memory::NpcId;

/// The one sequence every request runs in.
const SEQUENCE: i32 = 0;

/// Whose prompt a sequence holds: an NPC's replies and its summaries are different
/// prompts, so each keeps its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Owner {
    pub(super) npc: NpcId,
    pub(super) purpose: Purpose,
}

/// A sequence put aside for its owner's next request.
struct Saved {
    owner: Owner,
    tokens: Vec<LlamaToken>,
    state: SeqState,
}

/// What the context holds, and the states put aside.
pub(super) struct PromptReuse {
    live_owner: Option<Owner>,
    /// The tokens the sequence holds, in order. Only tokens whose decode finished
    /// are listed, so the list never claims more than the cache has.
    live: Vec<LlamaToken>,
    /// Most recently used last.
    saved: VecDeque<Saved>,
    saved_bytes: usize,
    cap_bytes: usize,
}

impl PromptReuse {
    pub(super) fn new(cap_bytes: usize) -> Self {
        Self {
            live_owner: None,
            live: Vec::new(),
            saved: VecDeque::new(),
            saved_bytes: 0,
            cap_bytes,
        }
    }

    /// Makes the sequence hold the longest prefix of `prompt` it can for `owner`,
    /// and returns its length: the caller evaluates `prompt[reused..]` from
    /// position `reused`. At least the last token is always left to evaluate, since
    /// sampling needs its logits.
    pub(super) fn prepare(
        &mut self,
        context: &mut LlamaContext<'_>,
        owner: Owner,
        prompt: &[LlamaToken],
    ) -> usize {
        if self.live_owner.as_ref() != Some(&owner) {
            self.switch_to(context, owner);
        }
        let reused = common_prefix(&self.live, prompt).min(prompt.len().saturating_sub(1));
        let cut = u32::try_from(reused).ok();
        // Recurrent models cannot drop part of a sequence; they start afresh.
        if cut.is_none() || context.kv_cache_seq_rm(SEQUENCE, cut, None).is_err() {
            context.clear_kv_cache();
            self.live.clear();
            return 0;
        }
        self.live.truncate(reused);
        reused
    }

    /// Records tokens the sequence now holds after a decode succeeded.
    pub(super) fn evaluated(&mut self, tokens: &[LlamaToken]) {
        self.live.extend_from_slice(tokens);
    }

    /// Forgets what is kept for `npc` (every NPC with `None`): its memory was
    /// cleared or replaced by a load.
    pub(super) fn forget(&mut self, context: &mut LlamaContext<'_>, npc: Option<&NpcId>) {
        let matches = |owner: &Owner| npc.is_none_or(|npc| &owner.npc == npc);
        if self.live_owner.as_ref().is_some_and(matches) {
            context.clear_kv_cache();
            self.live.clear();
            self.live_owner = None;
        }
        self.saved.retain(|saved| !matches(&saved.owner));
        self.saved_bytes = self.saved.iter().map(|s| s.state.byte_len()).sum();
    }

    /// Puts the live sequence aside under its owner and brings back `owner`'s.
    fn switch_to(&mut self, context: &mut LlamaContext<'_>, owner: Owner) {
        if let Some(previous) = self.live_owner.take()
            && !self.live.is_empty()
            && self.cap_bytes > 0
            && let Ok(state) = context.state_seq_get(SEQUENCE, LlamaStateSeqFlags::empty())
        {
            let tokens = std::mem::take(&mut self.live);
            self.keep(Saved {
                owner: previous,
                tokens,
                state,
            });
        }
        context.clear_kv_cache();
        self.live.clear();
        if let Some(at) = self.saved.iter().position(|saved| saved.owner == owner) {
            let saved = self.saved.remove(at).expect("found above");
            self.saved_bytes -= saved.state.byte_len();
            if context.state_seq_set(&saved.state, SEQUENCE).is_ok() {
                self.live = saved.tokens;
            } else {
                context.clear_kv_cache();
            }
        }
        self.live_owner = Some(owner);
    }

    /// Keeps a state, evicting the least recently used until it fits the cap. A
    /// state larger than the whole cap is not kept.
    fn keep(&mut self, saved: Saved) {
        let bytes = saved.state.byte_len();
        if bytes > self.cap_bytes {
            return;
        }
        while self.saved_bytes + bytes > self.cap_bytes {
            let Some(oldest) = self.saved.pop_front() else {
                break;
            };
            self.saved_bytes -= oldest.state.byte_len();
        }
        self.saved_bytes += bytes;
        self.saved.push_back(saved);
    }
}

/// How many tokens two sequences share from their start.
pub(super) fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(ids: &[i32]) -> Vec<LlamaToken> {
        ids.iter().copied().map(LlamaToken).collect()
    }

    #[test]
    fn the_common_prefix_stops_at_the_first_difference() {
        assert_eq!(common_prefix(&tokens(&[1, 2, 3]), &tokens(&[1, 2, 4])), 2);
        assert_eq!(common_prefix(&tokens(&[1, 2]), &tokens(&[1, 2, 3])), 2);
        assert_eq!(common_prefix(&tokens(&[]), &tokens(&[1])), 0);
        assert_eq!(common_prefix(&tokens(&[5]), &tokens(&[1])), 0);
    }
}
