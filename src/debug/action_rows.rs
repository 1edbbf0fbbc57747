//! The actions an NPC took, turn by turn, read back from its log: each call paired
//! with its result by the call's id.

use crate::memory::{ActionStep, ChatLog, LogIndex, Origin, Role};

/// One action an NPC took, with what came of it, for the panel's Actions section.
#[derive(Clone, Debug, PartialEq)]
pub struct ActionRow {
    /// The player line of the turn it was taken in: the last one before the call.
    pub turn_line: Option<LogIndex>,
    /// The call's entry in L2.
    pub index: LogIndex,
    /// The action's name, as the model called it.
    pub name: String,
    /// The call's id.
    pub call_id: String,
    /// The arguments, as the model wrote them.
    pub arguments: String,
    /// What came of it and the result's text; `None` while the game has not
    /// answered.
    pub outcome: Option<(ActionStep, String)>,
}

/// Every action in `log`, oldest first.
pub(super) fn action_rows(log: &ChatLog) -> Vec<ActionRow> {
    let mut rows: Vec<ActionRow> = Vec::new();
    let mut turn_line = None;
    for message in log.messages() {
        let note = match &message.origin {
            Origin::Acted(note) => note,
            _ if message.role == Role::User => {
                turn_line = Some(message.index);
                continue;
            }
            _ => continue,
        };
        if note.step == ActionStep::Called {
            rows.push(ActionRow {
                turn_line,
                index: message.index,
                name: note.name.clone(),
                call_id: note.call.clone(),
                arguments: message.content.to_string(),
                outcome: None,
            });
            continue;
        }
        let outcome = Some((note.step, message.content.to_string()));
        // A model may reuse an id across turns, so the latest call with it wins.
        match rows
            .iter_mut()
            .rev()
            .find(|row| row.call_id == note.call && row.outcome.is_none())
        {
            Some(row) => row.outcome = outcome,
            // A result whose call was cut from a hand-edited save still shows.
            None => rows.push(ActionRow {
                turn_line,
                index: message.index,
                name: note.name.clone(),
                call_id: note.call.clone(),
                arguments: String::new(),
                outcome,
            }),
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::memory::ActionNote;

    fn acted(log: &mut ChatLog, name: &str, call: &str, step: ActionStep, text: &str) {
        let note = ActionNote {
            name: name.into(),
            call: call.into(),
            step,
        };
        log.append_from(Role::System, text, 0.0, Origin::Acted(Arc::new(note)), None);
    }

    #[test]
    fn calls_pair_with_their_results_under_the_line_that_asked() {
        let mut log = ChatLog::default();
        log.append(Role::User, "Open both doors.", 0.0);
        acted(
            &mut log,
            "open_door",
            "c1",
            ActionStep::Called,
            r#"{"door":"north"}"#,
        );
        acted(
            &mut log,
            "open_door",
            "c2",
            ActionStep::Called,
            r#"{"door":"vault"}"#,
        );
        acted(&mut log, "open_door", "c2", ActionStep::Refused, "vetoed");
        acted(
            &mut log,
            "open_door",
            "c1",
            ActionStep::Done,
            "It slides open.",
        );
        log.append(Role::Assistant, "North is open; the vault stays shut.", 0.0);
        log.append(Role::User, "Lights off.", 0.0);
        acted(
            &mut log,
            "set_lights",
            "c1",
            ActionStep::Called,
            r#"{"on":false}"#,
        );

        let rows = action_rows(&log);
        let summary: Vec<_> = rows
            .iter()
            .map(|r| {
                (
                    r.turn_line,
                    r.name.as_str(),
                    r.outcome.as_ref().map(|o| o.0),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (Some(0), "open_door", Some(ActionStep::Done)),
                (Some(0), "open_door", Some(ActionStep::Refused)),
                (Some(6), "set_lights", None),
            ]
        );
        assert_eq!(rows[0].arguments, r#"{"door":"north"}"#);
        assert_eq!(rows[0].outcome.as_ref().unwrap().1, "It slides open.");
    }
}
