mod copies;
mod crashes;

use std::fs;

use super::*;
use crate::save::SAVE_FORMAT_VERSION;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("npc-slot-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn good() -> Vec<u8> {
    serde_json::to_vec(&SaveGame::new(Vec::new())).unwrap()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_damaged_main_file_is_moved_aside_and_its_backup_read() {
    let dir = temp_dir("damaged");
    let path = dir.join("s.json");
    fs::write(&path, b"{ half").unwrap();
    fs::write(backup_path(&path), good()).unwrap();
    let Ok(loaded) = load_slot(&path, 1024, &Journals::default(), false) else {
        panic!("the backup loads")
    };
    assert_eq!(loaded.read, backup_path(&path));
    let from = loaded.recovered_from.unwrap();
    assert!(matches!(from.error, LoadError::Malformed(_)));
    assert_eq!(fs::read(from.moved_to.unwrap()).unwrap(), b"{ half");
    assert!(!path.exists() && backup_path(&path).exists());
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_newer_build_s_file_and_its_backup_stay_untouched() {
    let dir = temp_dir("newer");
    let path = dir.join("s.json");
    let future = br#"{"format_version": 99}"#;
    fs::write(&path, future).unwrap();
    fs::write(backup_path(&path), good()).unwrap();
    let Err(failed) = load_slot(&path, 1024, &Journals::default(), false) else {
        panic!("a newer file is not replaced by its backup")
    };
    assert_eq!(
        failed.error,
        LoadError::UnsupportedVersion {
            found: 99,
            newest: SAVE_FORMAT_VERSION
        }
    );
    assert_eq!((failed.moved_to, failed.backup), (None, None));
    assert_eq!(fs::read(&path).unwrap(), future);
    assert_eq!(entries(&dir), ["s.json", "s.json.bak"]);
    fs::remove_dir_all(dir).ok();
}

#[test]
fn an_unreadable_main_file_stays_and_its_backup_is_not_tried() {
    let dir = temp_dir("io");
    let path = dir.join("s.json");
    fs::create_dir(&path).unwrap();
    fs::write(backup_path(&path), good()).unwrap();
    let Err(failed) = load_slot(&path, 1024, &Journals::default(), false) else {
        panic!("a folder is not a save")
    };
    assert!(
        matches!(failed.error, LoadError::Io(_)),
        "{:?}",
        failed.error
    );
    assert_eq!(entries(&dir), ["s.json", "s.json.bak"]);
    fs::remove_dir_all(dir).ok();
}

#[test]
fn when_both_are_damaged_both_move_aside_and_both_errors_are_told() {
    let dir = temp_dir("both");
    let path = dir.join("s.json");
    fs::write(&path, b"").unwrap();
    fs::write(backup_path(&path), b"\xff").unwrap();
    let Err(failed) = load_slot(&path, 1024, &Journals::default(), false) else {
        panic!("nothing loads")
    };
    assert_eq!(failed.error, LoadError::Empty);
    let backup = failed.backup.unwrap();
    assert_eq!(backup.error, LoadError::NotText { offset: 0 });
    assert_eq!(fs::read(backup.moved_to.unwrap()).unwrap(), b"\xff");
    assert!(failed.moved_to.is_some());
    assert!(!path.exists() && !backup_path(&path).exists());
    fs::remove_dir_all(dir).ok();
}

#[test]
fn a_missing_main_file_falls_back_and_says_so() {
    let dir = temp_dir("missing");
    let path = dir.join("s.json");
    let Err(failed) = load_slot(&path, 1024, &Journals::default(), false) else {
        panic!("there is nothing to load")
    };
    assert_eq!(
        (failed.error, failed.moved_to, failed.backup),
        (LoadError::NotFound, None, None)
    );
    fs::write(backup_path(&path), good()).unwrap();
    let Ok(loaded) = load_slot(&path, 1024, &Journals::default(), false) else {
        panic!("the backup loads")
    };
    assert_eq!(loaded.recovered_from.unwrap().error, LoadError::NotFound);
    fs::remove_dir_all(dir).ok();
}
