//! A tokio task that must not outlive whoever waits for it.

/// Aborts its tokio task when dropped: the plugin's ticket for a request on the
/// game's runtime, or an HTTP request waiting on the shared runtime.
#[derive(Debug)]
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
