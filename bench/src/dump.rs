//! `memory_bench --dump-prompts DIR`: every question's prompt, exactly as the NPC
//! would send it, so the recall figures can be checked without the bench's code
//! (`scripts/check_recall_dump.py`).

use std::path::Path;

use bevy_npc_memory::memory::PromptMessage;
use serde_json::{Value, json};

/// Writes `messages` to `DIR/<sample_id>/<question>.json` as a JSON list of
/// `{"role", "content"}`, where `question` is the question's index in the
/// conversation's `qa` list. Errors name the file.
pub fn write_prompt(
    dir: &Path,
    sample_id: &str,
    question: usize,
    messages: &[PromptMessage],
) -> Result<(), String> {
    let folder = dir.join(safe_name(sample_id));
    std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let list: Vec<Value> = messages
        .iter()
        .map(|m| json!({"role": m.role.as_str(), "content": m.content.as_ref()}))
        .collect();
    let file = folder.join(format!("{question}.json"));
    std::fs::write(&file, Value::Array(list).to_string())
        .map_err(|e| format!("{}: {e}", file.display()))
}

/// A sample id as a folder name: anything but ASCII letters, digits, `-` and `_`
/// becomes `_`, so an id can never leave `DIR` (`../x`) or name a device.
pub fn safe_name(sample_id: &str) -> String {
    let name: String = sample_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() { "_".into() } else { name }
}

/// A fresh, empty folder in the system's temporary folder, named for `name` and
/// this process, for a test's files.
pub fn fresh_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("npc-memory-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the temporary folder is writable");
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_cannot_leave_the_dump_folder() {
        assert_eq!(safe_name("conv-26"), "conv-26");
        assert_eq!(safe_name("../etc"), "___etc");
        assert_eq!(safe_name("对话"), "__");
        assert_eq!(safe_name(""), "_");
    }
}
