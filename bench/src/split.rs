//! The one place the tuning split of `locomo_dev.json` is defined.
//!
//! Recall defaults were once chosen on all five dev conversations, so the dev
//! figures flatter them. From now on a change is tuned on [`TUNE`] and kept only if
//! it also helps on [`VALIDATE`]. The split is the file's order (its first three
//! conversations, then its last two), fixed before anything was measured on it;
//! it halves the questions (497 against 502).

/// The conversations recall is tuned on.
pub const TUNE: [&str; 3] = ["conv-26", "conv-30", "conv-41"];

/// The conversations a change must also help on before it is kept.
pub const VALIDATE: [&str; 2] = ["conv-42", "conv-43"];

/// The sample ids of a split named `tune` or `validate`.
pub fn split(name: &str) -> Result<&'static [&'static str], String> {
    match name {
        "tune" => Ok(&TUNE),
        "validate" => Ok(&VALIDATE),
        other => Err(format!("--split takes tune or validate, got {other:?}")),
    }
}

/// The records whose `sample_id` is in `samples`, in file order. Every id must
/// name a record, so a typo cannot silently shrink the run.
pub fn select<'a>(
    records: &'a [serde_json::Value],
    samples: &[String],
) -> Result<Vec<&'a serde_json::Value>, String> {
    let id = |r: &serde_json::Value| {
        r.get("sample_id")
            .and_then(|s| s.as_str())
            .map(str::to_owned)
    };
    if let Some(missing) = samples
        .iter()
        .find(|s| !records.iter().any(|r| id(r).as_deref() == Some(s.as_str())))
    {
        return Err(format!("no conversation {missing:?} in the data"));
    }
    Ok(records
        .iter()
        .filter(|r| id(r).is_some_and(|id| samples.contains(&id)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_halves_are_disjoint_and_cover_the_dev_file() {
        assert!(TUNE.iter().all(|t| !VALIDATE.contains(t)));
        assert_eq!(TUNE.len() + VALIDATE.len(), 5);
        assert!(split("test").is_err());
    }

    #[test]
    fn selecting_keeps_file_order_and_rejects_unknown_ids() {
        let records: Vec<serde_json::Value> = ["a", "b", "c"]
            .iter()
            .map(|id| serde_json::json!({"sample_id": id}))
            .collect();
        let picked = select(&records, &["c".into(), "a".into()]).unwrap();
        assert_eq!(picked, [&records[0], &records[2]]);
        assert!(
            select(&records, &["d".into()])
                .unwrap_err()
                .contains("\"d\"")
        );
    }
}
