//! Reading the game's own data files (personas, lore). A file is input too: one
//! of any size is read only up to a limit, so a huge or endless file is refused
//! with an error instead of filling memory.

use bevy::asset::io::Reader;
use bevy::tasks::futures_lite::AsyncReadExt;

/// Largest persona file read, in bytes.
pub(crate) const MAX_PERSONA_FILE_BYTES: usize = 4 * 1024 * 1024;

/// Largest lore file read, in bytes: room for many thousands of entries.
pub(crate) const MAX_LORE_FILE_BYTES: usize = 64 * 1024 * 1024;

/// Why a data file's text could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadTextError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("the file is larger than {max_bytes} bytes")]
    TooLarge { max_bytes: usize },
    #[error("not UTF-8: {0}")]
    NotUtf8(std::str::Utf8Error),
}

/// [`read_text`] for an asset loader whose error takes I/O errors as they come and
/// everything else wrong with the file as `invalid`.
pub(crate) async fn read_file_text<E: From<std::io::Error>>(
    reader: &mut dyn Reader,
    max_bytes: usize,
    invalid: impl FnOnce(String) -> E,
) -> Result<String, E> {
    read_text(reader, max_bytes)
        .await
        .map_err(|error| match error {
            ReadTextError::Io(io) => E::from(io),
            other => invalid(other.to_string()),
        })
}

/// The whole text of a file, reading no more than `max_bytes` (plus one chunk).
pub(crate) async fn read_text(
    reader: &mut dyn Reader,
    max_bytes: usize,
) -> Result<String, ReadTextError> {
    let mut bytes = Vec::new();
    let mut chunk = vec![0; 64 * 1024];
    loop {
        let read = reader.read(&mut chunk).await?;
        if read == 0 {
            break;
        }
        bytes.extend_from_slice(&chunk[..read]);
        if bytes.len() > max_bytes {
            return Err(ReadTextError::TooLarge { max_bytes });
        }
    }
    String::from_utf8(bytes).map_err(|error| ReadTextError::NotUtf8(error.utf8_error()))
}

#[cfg(test)]
mod tests {
    use bevy::asset::io::VecReader;
    use bevy::tasks::block_on;

    use super::*;

    #[test]
    fn a_file_over_the_limit_is_refused_and_one_within_it_reads_whole() {
        let text = "ECHO-7 ünïcode 🙂\n".repeat(10_000);
        let read = block_on(read_text(
            &mut VecReader::new(text.clone().into_bytes()),
            text.len(),
        ));
        assert_eq!(read.unwrap(), text);
        let read = block_on(read_text(
            &mut VecReader::new(text.clone().into_bytes()),
            text.len() - 1,
        ));
        assert!(
            matches!(read, Err(ReadTextError::TooLarge { .. })),
            "{read:?}"
        );
        let read = block_on(read_text(&mut VecReader::new(vec![b'a', 0xff]), 10));
        assert!(matches!(read, Err(ReadTextError::NotUtf8(_))), "{read:?}");
    }
}
