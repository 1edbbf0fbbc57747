//! Tool calls in OpenAI-compatible answers: whole in `message.tool_calls`, or
//! streamed as pieces in `delta.tool_calls` that carry an `index` and are joined
//! in order (a call's arguments usually arrive a few characters at a time).

use serde::Deserialize;

use crate::memory::ActionCall;

/// Most calls one answer may make. A stream names each call by an index the
/// server chooses, so without a cap one hostile event could ask for millions.
pub(crate) const MAX_CALLS: usize = 16;

/// One call, or a streamed piece of one.
#[derive(Deserialize)]
pub(crate) struct WireToolCall {
    /// Which call a streamed piece belongs to; absent in whole answers.
    pub(crate) index: Option<usize>,
    pub(crate) id: Option<String>,
    pub(crate) function: Option<WireFunction>,
}

#[derive(Deserialize)]
pub(crate) struct WireFunction {
    pub(crate) name: Option<String>,
    /// JSON text, as OpenAI sends it. A server that sends an object instead is
    /// malformed, and the answer fails to parse.
    pub(crate) arguments: Option<String>,
}

/// The calls of a whole (not streamed) answer.
pub(crate) fn whole_calls(calls: Vec<WireToolCall>) -> Result<Vec<ActionCall>, String> {
    let mut joined = StreamedCalls::default();
    for (position, mut call) in calls.into_iter().enumerate() {
        call.index = Some(position);
        joined.push(call)?;
    }
    joined.finish()
}

/// The calls of a streamed answer, as their pieces arrive.
#[derive(Default)]
pub(crate) struct StreamedCalls {
    /// By index, in the order the indices first appeared.
    calls: Vec<(usize, ActionCall)>,
}

impl StreamedCalls {
    /// Adds one piece. A piece without an index continues the latest call, as
    /// some servers send only the first piece of a call with one.
    pub(crate) fn push(&mut self, piece: WireToolCall) -> Result<(), String> {
        let index = piece
            .index
            .or_else(|| self.calls.last().map(|(index, _)| *index))
            .unwrap_or(0);
        let position = match self.calls.iter().position(|(i, _)| *i == index) {
            Some(position) => position,
            None if self.calls.len() == MAX_CALLS => {
                return Err(format!("the answer makes more than {MAX_CALLS} tool calls"));
            }
            None => {
                self.calls.push((index, ActionCall::new("", "", "")));
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[position].1;
        if let Some(id) = piece.id {
            call.id = id;
        }
        if let Some(function) = piece.function {
            call.name
                .push_str(function.name.as_deref().unwrap_or_default());
            (call.arguments).push_str(function.arguments.as_deref().unwrap_or_default());
        }
        Ok(())
    }

    /// The finished calls. One without a name cannot be told apart from noise, so
    /// the answer is malformed; one without an id gets one, so its result can be
    /// paired with it.
    pub(crate) fn finish(self) -> Result<Vec<ActionCall>, String> {
        self.calls
            .into_iter()
            .enumerate()
            .map(|(position, (_, mut call))| {
                if call.name.is_empty() {
                    return Err(format!("tool call {position} has no function name"));
                }
                if call.id.is_empty() {
                    call.id = format!("call_{position}");
                }
                Ok(call)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(
        index: Option<usize>,
        id: Option<&str>,
        name: Option<&str>,
        args: &str,
    ) -> WireToolCall {
        WireToolCall {
            index,
            id: id.map(str::to_owned),
            function: Some(WireFunction {
                name: name.map(str::to_owned),
                arguments: Some(args.to_owned()),
            }),
        }
    }

    #[test]
    fn two_interleaved_calls_are_joined_piece_by_piece() {
        let mut calls = StreamedCalls::default();
        calls
            .push(piece(Some(0), Some("a"), Some("open_door"), ""))
            .unwrap();
        calls
            .push(piece(Some(1), Some("b"), Some("set_lights"), "{\"ar"))
            .unwrap();
        calls
            .push(piece(Some(0), None, None, "{\"door\": \"nö"))
            .unwrap();
        calls
            .push(piece(Some(1), None, None, "ea\": \"lab\", \"on\": false}"))
            .unwrap();
        calls.push(piece(None, None, None, "rth\"}")).unwrap();
        let calls = calls.finish().unwrap();
        assert_eq!(
            calls,
            [
                ActionCall::new("a", "open_door", "{\"door\": \"nö"),
                ActionCall::new(
                    "b",
                    "set_lights",
                    "{\"area\": \"lab\", \"on\": false}rth\"}"
                ),
            ],
            "a piece without an index continues the latest call"
        );
    }

    #[test]
    fn a_call_without_a_name_is_malformed_and_ids_are_made_up() {
        let mut calls = StreamedCalls::default();
        calls.push(piece(Some(3), None, None, "{}")).unwrap();
        assert!(calls.finish().unwrap_err().contains("no function name"));
        let whole = whole_calls(vec![piece(None, None, Some("open_door"), "{}")]).unwrap();
        assert_eq!(whole, [ActionCall::new("call_0", "open_door", "{}")]);
    }

    #[test]
    fn indices_far_apart_cost_nothing_and_the_number_of_calls_is_capped() {
        let mut calls = StreamedCalls::default();
        calls
            .push(piece(Some(usize::MAX), Some("x"), Some("a"), ""))
            .unwrap();
        for index in 0..MAX_CALLS - 1 {
            calls.push(piece(Some(index), None, Some("a"), "")).unwrap();
        }
        let error = calls.push(piece(Some(1 << 40), None, Some("a"), ""));
        assert!(error.unwrap_err().contains("more than 16"));
    }
}
