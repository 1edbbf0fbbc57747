//! Every log line of the test binary, captured once for all tests: for checks that
//! no credential is ever logged, and that work ran on the thread it should (each
//! line names its thread).

use std::io::Write;
use std::sync::{Arc, Mutex, Once};

/// The captured log text so far, installing the capture on first use.
pub fn captured_logs() -> Arc<Mutex<Vec<u8>>> {
    static INIT: Once = Once::new();
    static mut LOGS: Option<Arc<Mutex<Vec<u8>>>> = None;
    #[derive(Clone)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    INIT.call_once(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = Sink(logs.clone());
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_thread_ids(true)
            .with_thread_names(true)
            .with_ansi(false)
            .with_writer(move || sink.clone())
            .init();
        // SAFETY: written once, before any reader, inside `call_once`.
        unsafe { LOGS = Some(logs) };
    });
    // SAFETY: initialised above and never written again.
    #[allow(static_mut_refs)]
    unsafe {
        LOGS.clone().unwrap()
    }
}

/// The captured lines that contain `needle`.
pub fn log_lines_with(needle: &str) -> Vec<String> {
    let logs = captured_logs();
    let text = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    text.lines()
        .filter(|line| line.contains(needle))
        .map(str::to_owned)
        .collect()
}
