//! Reading LoCoMo conversations (`locomo_dev.json`, see the data's README): the
//! file, each conversation's speakers and sessions, and each turn's text.
//!
//! The data is CC BY-NC 4.0 and is read from where it lies; nothing here copies it.

use std::path::Path;

use bevy_npc_memory::memory::{Calendar, PersonaPrompt, SummaryStyle};
use serde_json::Value;

/// Reads the file as a JSON list of conversations. Errors name the file.
pub fn load(file: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(records)) => Ok(records),
        Ok(_) => Err(format!(
            "{}: expected a JSON list of conversations",
            file.display()
        )),
        Err(e) => Err(format!("{}: invalid JSON: {e}", file.display())),
    }
}

/// One conversation of the file: who speaks, and its sessions in order.
#[derive(Clone, Debug)]
pub struct Conversation<'a> {
    /// The conversation's id, such as `conv-26`, or `?`.
    pub sample_id: &'a str,
    /// The first speaker: the player in every bench.
    pub speaker_a: &'a str,
    /// The second speaker: the NPC (`NPC` when the record has none).
    pub speaker_b: &'a str,
    /// The `conversation` object, for fields such as `session_<n>_date_time`.
    pub fields: &'a serde_json::Map<String, Value>,
    /// `(n, turns)` for every `session_<n>` whose value is a list, by `n`.
    pub sessions: Vec<(u32, &'a Vec<Value>)>,
}

impl<'a> Conversation<'a> {
    /// Reads one record. Errors name the file and the conversation.
    pub fn parse(record: &'a Value, file: &Path) -> Result<Self, String> {
        let sample_id = record
            .get("sample_id")
            .and_then(Value::as_str)
            .unwrap_or("?");
        let where_ = |what: &str| format!("{}: conversation {sample_id}: {what}", file.display());
        let fields = record
            .get("conversation")
            .and_then(Value::as_object)
            .ok_or_else(|| where_("no `conversation` object"))?;
        let speaker_a = fields
            .get("speaker_a")
            .and_then(Value::as_str)
            .ok_or_else(|| where_("no `speaker_a`"))?;
        let speaker_b = fields
            .get("speaker_b")
            .and_then(Value::as_str)
            .unwrap_or("NPC");
        let mut sessions: Vec<(u32, &Vec<Value>)> = fields
            .iter()
            .filter_map(|(key, value)| {
                let n = key.strip_prefix("session_")?.parse::<u32>().ok()?;
                Some((n, value.as_array()?))
            })
            .collect();
        if sessions.is_empty() {
            return Err(where_("no sessions"));
        }
        sessions.sort_by_key(|(n, _)| *n);
        Ok(Self {
            sample_id,
            speaker_a,
            speaker_b,
            fields,
            sessions,
        })
    }

    /// The NPC's persona: `speaker_b`, talking with `speaker_a`.
    pub fn persona(&self) -> PersonaPrompt {
        PersonaPrompt {
            name: self.speaker_b.to_owned(),
            text: format!(
                "You are {}, talking with {}.",
                self.speaker_b, self.speaker_a
            )
            .into(),
            style: SummaryStyle::english(),
        }
    }

    /// Every turn of every session, in order.
    pub fn turns(&self) -> impl Iterator<Item = &'a Value> + '_ {
        self.sessions.iter().flat_map(|(_, turns)| turns.iter())
    }

    /// Whether the player (`speaker_a`) says this turn.
    pub fn is_player(&self, turn: &Value) -> bool {
        turn.get("speaker").and_then(Value::as_str) == Some(self.speaker_a)
    }
}

/// A turn's text as a chat line: its `text`, and a shared photo's caption as
/// ` [shares a photo: …]`.
pub fn turn_text(turn: &Value) -> String {
    let mut text = turn
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    if let Some(caption) = turn.get("blip_caption").and_then(Value::as_str) {
        text.push_str(&format!(" [shares a photo: {caption}]"));
    }
    text
}

/// A session date as LoCoMo writes it, "1:56 pm on 8 May, 2023", as seconds
/// since 1970 (UTC); `None` when it is not in that form.
pub fn parse_date(text: &str) -> Option<f64> {
    let (time, date) = text.split_once(" on ")?;
    let (clock, half) = time.trim().split_once(' ')?;
    let (h, m) = clock.split_once(':')?;
    let mut hour: i64 = h.parse().ok()?;
    let minute: i64 = m.parse().ok()?;
    if half.eq_ignore_ascii_case("pm") && hour != 12 {
        hour += 12;
    } else if half.eq_ignore_ascii_case("am") && hour == 12 {
        hour = 0;
    }
    let parts: Vec<&str> = date.split([' ', ',']).filter(|p| !p.is_empty()).collect();
    let [day, month, year] = parts[..] else {
        return None;
    };
    let day: i64 = day.parse().ok()?;
    let months = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let month = months.iter().position(|m| m.eq_ignore_ascii_case(month))? as u32 + 1;
    let year: i32 = year.parse().ok()?;
    // The library's calendar knows the days since 1970: a clock starting that day
    // puts 1970 that many seconds before its zero.
    let midnight = -Calendar::starting_on(year, month, u32::try_from(day).ok()?)?.unix_epoch;
    Some(midnight + (hour * 3600 + minute * 60) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_dates_are_read_as_utc_seconds() {
        assert_eq!(parse_date("1:56 pm on 8 May, 2023"), Some(1_683_554_160.0));
        assert_eq!(
            parse_date("12:05 am on 1 January, 2024"),
            Some(1_704_067_500.0)
        );
        assert_eq!(parse_date("yesterday"), None);
    }
}

/// One of LoCoMo's observations: a fact about a session that a large model wrote
/// when the dataset was made, and the turns it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation<'a> {
    /// The fact, as written.
    pub text: &'a str,
    /// The `dia_id`s it cites, as written (not normalized).
    pub dia_ids: Vec<&'a str>,
}

/// Session `n`'s observations: `observation.session_<n>_observation`, a list of
/// `[text, dia_id or list of dia_ids]` per speaker (speakers in the map's key
/// order). An id string may hold several ids, split on `;`, `,` and spaces as the
/// evidence ids are. An entry of another shape gives an observation with no text
/// and no ids, so that a count of what was dropped still sees it.
pub fn observations(record: &Value, session: u32) -> Vec<Observation<'_>> {
    let Some(speakers) = record
        .get("observation")
        .and_then(|o| o.get(format!("session_{session}_observation")))
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    speakers
        .values()
        .filter_map(Value::as_array)
        .flatten()
        .map(|entry| match entry.as_array().map(Vec::as_slice) {
            Some([text, cited, ..]) => Observation {
                text: text.as_str().unwrap_or(""),
                dia_ids: cited_ids(cited),
            },
            _ => Observation {
                text: "",
                dia_ids: Vec::new(),
            },
        })
        .collect()
}

/// An observation's cited ids: one string, or a list of them, each split on `;`,
/// `,` and spaces.
fn cited_ids(value: &Value) -> Vec<&str> {
    fn split(ids: &str) -> impl Iterator<Item = &str> {
        ids.split([';', ',', ' '])
            .map(str::trim)
            .filter(|id| !id.is_empty())
    }
    match value {
        Value::String(s) => split(s).collect(),
        Value::Array(list) => list
            .iter()
            .filter_map(Value::as_str)
            .flat_map(split)
            .collect(),
        _ => Vec::new(),
    }
}
