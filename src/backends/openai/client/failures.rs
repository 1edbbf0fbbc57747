//! What a failed attempt becomes: the error the game sees, scrubbed of secrets
//! and short, and whether it is retried.

use std::time::Duration;

use reqwest::StatusCode;

use super::Inner;
use crate::backends::openai::wire::ErrorBody;
use crate::backends::{BackendError, ResponsePart};

/// The most characters of a server's explanation kept in an error: enough to read,
/// too few to bloat logs, telemetry or a save.
const REASON_CHARS: usize = 300;

/// Why one attempt failed, and whether another may follow.
pub(super) struct Failure {
    pub(super) error: BackendError,
    pub(super) retryable: bool,
    pub(super) retry_after: Option<Duration>,
}

impl Inner {
    pub(super) fn transport(&self, error: &reqwest::Error) -> Failure {
        let backend = self.config.provider.clone();
        let error = if error.is_timeout() {
            BackendError::Timeout {
                backend,
                after: self.config.read_timeout,
            }
        } else {
            BackendError::Connection {
                backend,
                reason: shorten(&self.scrub(error_chain(error)), REASON_CHARS),
            }
        };
        Failure {
            error,
            retryable: true,
            retry_after: None,
        }
    }

    /// The failure for an error status whose body starts with `body`; `over` says
    /// the body went on past the limit.
    pub(super) fn status_failure(
        &self,
        status: StatusCode,
        retry_after: Option<Duration>,
        body: &[u8],
        over: bool,
    ) -> Failure {
        let backend = self.config.provider.clone();
        let (error, retryable) = match status.as_u16() {
            401 | 403 => (BackendError::Auth { backend }, false),
            429 => (
                BackendError::RateLimited {
                    backend,
                    retry_after,
                    reason: self.error_reason(body, over),
                },
                true,
            ),
            code => {
                let retryable = matches!(code, 408 | 429 | 500..=599);
                (
                    BackendError::Http {
                        backend,
                        status: code,
                        reason: self.error_reason(body, over),
                    },
                    retryable,
                )
            }
        };
        Failure {
            error,
            retryable,
            retry_after,
        }
    }

    /// The provider's message from a JSON error body, else the start of the body,
    /// scrubbed and short.
    pub(super) fn error_reason(&self, body: &[u8], over: bool) -> String {
        let mut text = utf8_prefix(body);
        if over {
            // A secret cut by the limit would not be found by the scrub: drop the
            // tail it could start in.
            let mut keep = text.len().saturating_sub(self.redactor.longest());
            while !text.is_char_boundary(keep) {
                keep -= 1;
            }
            text.truncate(keep);
        }
        let message = match serde_json::from_str::<ErrorBody>(&text) {
            Ok(parsed) if !over => parsed.error.message,
            _ => text,
        };
        let mut reason = shorten(&self.scrub(message), REASON_CHARS);
        if over {
            let limit = self.config.limits.error_body;
            reason.push_str(&format!(
                " (the error body is over {limit} bytes; the rest was not read)"
            ));
        }
        reason
    }

    pub(super) fn too_large(&self, what: ResponsePart, limit: usize) -> Failure {
        Failure {
            error: BackendError::ResponseTooLarge {
                backend: self.config.provider.clone(),
                what,
                limit,
            },
            retryable: false,
            retry_after: None,
        }
    }

    pub(super) fn malformed(&self, reason: String) -> Failure {
        Failure {
            error: BackendError::Malformed {
                backend: self.config.provider.clone(),
                // serde quotes the offending value, which may be huge.
                reason: shorten(&self.scrub(reason), REASON_CHARS),
            },
            retryable: false,
            retry_after: None,
        }
    }

    pub(super) fn truncated(&self, received_chars: usize) -> Failure {
        Failure {
            error: BackendError::Truncated {
                backend: self.config.provider.clone(),
                received_chars,
            },
            retryable: received_chars == 0,
            retry_after: None,
        }
    }

    /// Servers sometimes echo credentials in error bodies, and HTTP errors name the
    /// URL; they never get further.
    pub(super) fn scrub(&self, text: String) -> String {
        self.redactor.scrub(text)
    }
}

/// `bytes` as text, without the start of a character a cut left at the end.
fn utf8_prefix(bytes: &[u8]) -> String {
    let end = match std::str::from_utf8(bytes) {
        Err(error) if error.error_len().is_none() => error.valid_up_to(),
        _ => bytes.len(),
    };
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// At most `max_chars` characters of `text`, trimmed, with `…` when cut.
fn shorten(text: &str, max_chars: usize) -> String {
    let text = text.trim();
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}…", text[..at].trim_end()),
        None => text.to_owned(),
    }
}

pub(super) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
