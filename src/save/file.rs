//! Crash-safe files: atomic writes with a backup, bounded reads, and moving a bad
//! file aside so nothing overwrites it.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};

use super::error::LoadError;

/// `savegame.json` → `savegame.json.bak`: the slot's second copy. A whole save
/// ([`SaveGame::write_to`](super::SaveGame::write_to)) keeps the previous snapshot
/// there; an autosave slot keeps a copy of its snapshot, or the snapshot before
/// its last compaction with a sealed journal leading to the newest.
pub fn backup_path(path: &Path) -> PathBuf {
    with_suffix(path, ".bak")
}

pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// Paths a thread of this process is writing or recovering right now.
static BUSY: (Mutex<Vec<PathBuf>>, Condvar) = (Mutex::new(Vec::new()), Condvar::new());

/// Runs `work` while no other thread of this process writes or recovers `path`, so
/// the backup rotation of two writes never interleaves and a load never sees a
/// rename half done. Paths are compared as given: a slot named two ways is two slots.
pub(crate) fn with_path_lock<T>(path: &Path, work: impl FnOnce() -> T) -> T {
    struct Release<'a>(&'a Path);
    impl Drop for Release<'_> {
        fn drop(&mut self) {
            let mut busy = BUSY.0.lock().unwrap_or_else(PoisonError::into_inner);
            busy.retain(|p| p != self.0);
            BUSY.1.notify_all();
        }
    }
    let mut busy = BUSY.0.lock().unwrap_or_else(PoisonError::into_inner);
    while busy.iter().any(|p| p == path) {
        busy = BUSY.1.wait(busy).unwrap_or_else(PoisonError::into_inner);
    }
    busy.push(path.to_path_buf());
    drop(busy);
    // Released even if `work` panics, so one bad write cannot wedge the slot.
    let _release = Release(path);
    work()
}

/// Writes `bytes` so that `path` always holds a complete save, whenever the process
/// dies: a temp file of its own in the same folder, fsync, then an atomic rename
/// over `path`. The previous save is kept as `.bak`. Callers hold
/// [`with_path_lock`] for `path`.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let folder = folder_of(path);
    let temp = write_temp(path, &folder, bytes)?;
    if path.exists() {
        // A hard link keeps `path` in place the whole time; copying is the fallback
        // on file systems without links.
        let backup = backup_path(path);
        let _ = fs::remove_file(&backup);
        if fs::hard_link(path, &backup).is_err()
            && let Err(error) = fs::copy(path, &backup)
        {
            let _ = fs::remove_file(&temp);
            return Err(error);
        }
    }
    rename_into_place(&temp, path, &folder)
}

/// Writes `bytes` to `path` whole or not at all, like [`write_atomic`] but keeping
/// no backup: for a new journal, which replaces one that belongs to nothing, and
/// for a snapshot written twice, whose backup is its twin.
pub(crate) fn write_new_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let folder = folder_of(path);
    let temp = write_temp(path, &folder, bytes)?;
    rename_into_place(&temp, path, &folder)
}

fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Makes the renames and removals in `path`'s folder durable, so that they reach
/// the disk in the order made. Not every platform can open a folder.
pub(crate) fn sync_folder(path: &Path) {
    if let Ok(dir) = File::open(folder_of(path)) {
        let _ = dir.sync_all();
    }
}

/// A fsynced temp file of its own beside `path` holding `bytes`.
fn write_temp(path: &Path, folder: &Path, bytes: &[u8]) -> std::io::Result<PathBuf> {
    fs::create_dir_all(folder)?;
    let (temp, mut file) = create_temp(path)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    drop(file);
    if let Err(error) = written {
        let _ = fs::remove_file(&temp);
        return Err(error);
    }
    Ok(temp)
}

fn rename_into_place(temp: &Path, path: &Path, folder: &Path) -> std::io::Result<()> {
    if let Err(error) = fs::rename(temp, path) {
        let _ = fs::remove_file(temp);
        return Err(error);
    }
    // Make the rename itself durable. Not every platform can open a folder.
    if let Ok(dir) = File::open(folder) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// A new temp file next to `path`, named `NAME.tmp-<pid>-<n>`. `create_new` makes
/// it ours alone: never a file another write (or a crashed run with the same pid)
/// is still using.
fn create_temp(path: &Path) -> std::io::Result<(PathBuf, File)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let temp = with_suffix(path, &format!(".tmp-{}-{n}", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Reads a save file, refusing files over `max_bytes` without reading them. A
/// missing file falls back to its `.bak`; the returned path says which was read.
pub(crate) fn read_bounded(path: &Path, max_bytes: u64) -> Result<(PathBuf, Vec<u8>), LoadError> {
    let chosen = if exists(path)? {
        path.to_path_buf()
    } else if exists(&backup_path(path))? {
        backup_path(path)
    } else {
        return Err(LoadError::NotFound);
    };
    Ok((chosen.clone(), read_exactly(&chosen, max_bytes)?))
}

/// Whether a file is there. A folder that cannot be searched is an `Io` error, not
/// "missing": a save may well be there.
fn exists(path: &Path) -> Result<bool, LoadError> {
    path.try_exists().map_err(|e| LoadError::Io(e.to_string()))
}

/// Reads one file, no fallback: [`LoadError::NotFound`] if it is missing.
pub(crate) fn read_exactly(path: &Path, max_bytes: u64) -> Result<Vec<u8>, LoadError> {
    let io = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => LoadError::NotFound,
        _ => LoadError::Io(e.to_string()),
    };
    let file = File::open(path).map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    // A folder or a device is no damaged save: it is left alone, never moved aside.
    if !metadata.is_file() {
        return Err(LoadError::Io("it is not a regular file".into()));
    }
    let bytes = metadata.len();
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
    Ok(contents)
}

/// Renames an unreadable save to `NAME.corrupt-<unix seconds>`, so that no autosave
/// can overwrite it and the player's data can still be rescued.
pub(crate) fn move_aside(path: &Path) -> Option<PathBuf> {
    let target = corrupt_name(path);
    fs::rename(path, &target).ok().map(|()| target)
}

/// Copies a file to `NAME.corrupt-<unix seconds>`, leaving it where it is: for a
/// journal whose good start still counts but whose damaged rest should be kept.
pub(crate) fn copy_aside(path: &Path) -> Option<PathBuf> {
    let target = corrupt_name(path);
    fs::copy(path, &target).ok().map(|_| target)
}

fn corrupt_name(path: &Path) -> PathBuf {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut target = with_suffix(path, &format!(".corrupt-{seconds}"));
    let mut n = 1;
    while target.exists() {
        target = with_suffix(path, &format!(".corrupt-{seconds}-{n}"));
        n += 1;
    }
    target
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
    fn concurrent_writes_to_one_path_never_collide() {
        let dir = temp_dir("concurrent");
        let path = dir.join("savegame.json");
        let payloads: Vec<Vec<u8>> = (0..4u8).map(|i| vec![b'a' + i; 64 * 1024]).collect();
        std::thread::scope(|scope| {
            for payload in &payloads {
                let path = &path;
                scope.spawn(move || {
                    for _ in 0..50 {
                        write_atomic(path, payload).unwrap();
                    }
                });
            }
        });
        let last = fs::read(&path).unwrap();
        assert!(payloads.contains(&last), "a whole payload, not a mix");
        assert!(payloads.contains(&fs::read(backup_path(&path)).unwrap()));
        let leftovers: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn the_path_lock_lets_one_thread_at_a_time_work_on_a_path() {
        use std::sync::atomic::AtomicUsize;
        let path = Path::new("/nonexistent/lock-test.json");
        let (inside, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..200 {
                        with_path_lock(path, || {
                            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(now, Ordering::SeqCst);
                            std::thread::yield_now();
                            inside.fetch_sub(1, Ordering::SeqCst);
                        });
                    }
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 1);
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
