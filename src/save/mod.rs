//! Savegames: the versioned snapshot format, crash-safe files, migration, and the
//! import of the original ECHO-7 game's Unity layout. Plain Rust; games reach it,
//! with the plugin's save and load messages, through the public `saves` module.

mod error;
mod file;
mod format;
mod journal;
mod migrate;
mod rebase;
mod slot;
#[cfg(test)]
mod test_support;
mod unity;
mod v1;

pub use error::{LoadError, SaveError};
pub use file::backup_path;
pub(crate) use file::{read_bounded, with_path_lock};
pub use format::{
    MAX_SAVED_QUEUED_LINES, NpcSave, SAVE_FORMAT_VERSION, SaveFormat, SaveGame, WaitingLine,
};
pub(crate) use journal::Journals;
pub use journal::{JournalProblem, JournalReport, journal_path};
pub use slot::{JournaledSlot, UnusableSave};
pub(crate) use slot::{NotRecovered, Recovered, WriteTicket, load_slot, write_slot};
pub use unity::import_unity_save;
