//! Crash-safe files: atomic writes with a backup, bounded reads, and moving a bad
//! file aside so nothing overwrites it.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::format::LoadError;

/// `savegame.json` → `savegame.json.bak`: the previous save, kept on every write.
pub fn backup_path(path: &Path) -> PathBuf {
    with_suffix(path, ".bak")
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// Writes `bytes` so that `path` always holds a complete save, whenever the process
/// dies: a temp file in the same folder, fsync, then an atomic rename over `path`.
/// The previous save is kept as `.bak`.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&folder)?;
    let temp = with_suffix(path, &format!(".tmp-{}", std::process::id()));
    let written = (|| {
        let mut file = File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    if let Err(error) = written {
        let _ = fs::remove_file(&temp);
        return Err(error);
    }
    if path.exists() {
        // A hard link keeps `path` in place the whole time; copying is the fallback
        // on file systems without links.
        let backup = backup_path(path);
        let _ = fs::remove_file(&backup);
        if fs::hard_link(path, &backup).is_err() {
            fs::copy(path, &backup)?;
        }
    }
    fs::rename(&temp, path)?;
    // Make the rename itself durable. Not every platform can open a folder.
    if let Ok(dir) = File::open(&folder) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Reads a save file, refusing files over `max_bytes` without reading them. A
/// missing file falls back to its `.bak`; the returned path says which was read.
pub(crate) fn read_bounded(path: &Path, max_bytes: u64) -> Result<(PathBuf, Vec<u8>), LoadError> {
    let chosen = if path.exists() {
        path.to_path_buf()
    } else if backup_path(path).exists() {
        backup_path(path)
    } else {
        return Err(LoadError::NotFound);
    };
    let io = |e: std::io::Error| LoadError::Io(e.to_string());
    let file = File::open(&chosen).map_err(io)?;
    let bytes = file.metadata().map_err(io)?.len();
    if bytes > max_bytes {
        return Err(LoadError::TooLarge {
            bytes,
            max: max_bytes,
        });
    }
    let mut contents = Vec::with_capacity(bytes as usize);
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut contents)
        .map_err(io)?;
    if contents.len() as u64 > max_bytes {
        return Err(LoadError::TooLarge {
            bytes: contents.len() as u64,
            max: max_bytes,
        });
    }
    Ok((chosen, contents))
}

/// Renames an unreadable save to `NAME.corrupt-<unix seconds>`, so that no autosave
/// can overwrite it and the player's data can still be rescued.
pub(crate) fn move_aside(path: &Path) -> Option<PathBuf> {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut target = with_suffix(path, &format!(".corrupt-{seconds}"));
    let mut n = 1;
    while target.exists() {
        target = with_suffix(path, &format!(".corrupt-{seconds}-{n}"));
        n += 1;
    }
    fs::rename(path, &target).ok().map(|()| target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("npc-save-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn writes_keep_the_previous_save_as_backup() {
        let dir = temp_dir("atomic");
        let path = dir.join("savegame.json");
        write_atomic(&path, b"first").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        assert_eq!(fs::read(backup_path(&path)).unwrap(), b"first");
        let leftovers: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
        fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn a_missing_save_falls_back_to_its_backup() {
        let dir = temp_dir("fallback");
        let path = dir.join("savegame.json");
        assert_eq!(read_bounded(&path, 100), Err(LoadError::NotFound));
        fs::write(backup_path(&path), b"old").unwrap();
        assert_eq!(
            read_bounded(&path, 100).unwrap(),
            (backup_path(&path), b"old".to_vec())
        );
        fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn an_unlimited_read_reads_everything() {
        let dir = temp_dir("unlimited");
        let path = dir.join("savegame.json");
        fs::write(&path, b"{}").unwrap();
        assert_eq!(read_bounded(&path, u64::MAX).unwrap().1, b"{}");
        fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn huge_files_are_refused_unread() {
        let dir = temp_dir("huge");
        let path = dir.join("savegame.json");
        File::create(&path)
            .unwrap()
            .set_len(300 * 1024 * 1024)
            .unwrap();
        assert_eq!(
            read_bounded(&path, 1024),
            Err(LoadError::TooLarge {
                bytes: 300 * 1024 * 1024,
                max: 1024
            })
        );
        let moved = move_aside(&path).unwrap();
        assert!(!path.exists() && moved.to_string_lossy().contains("savegame.json.corrupt-"));
        fs::remove_dir_all(dir).ok();
    }
}
