//! The test binary's allocator: the system allocator, counting. On threads that
//! ask, it remembers the largest single allocation (a client that buffers a flood
//! grows one `Vec` to its size), or the peak of bytes live at once (what loading a
//! save costs). Only threads that ask count: the other tests in this binary
//! allocate as they please.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

pub struct CountingAllocator;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static WATCHED: Cell<bool> = const { Cell::new(false) };
    static MEASURING: Cell<bool> = const { Cell::new(false) };
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn note_size(size: usize) {
    if WATCHED.try_with(Cell::get).unwrap_or(false) {
        LARGEST.fetch_max(size, Ordering::Relaxed);
    }
}

fn note(change: isize) {
    // `try_with`: allocations also happen while a thread's locals are torn down.
    let _ = MEASURING.try_with(|measuring| {
        if measuring.get() {
            let live = LIVE.get() + change;
            LIVE.set(live);
            PEAK.set(PEAK.get().max(live));
        }
    });
}

// SAFETY: every call is passed to the system allocator unchanged; the counting only
// touches an atomic and `const`-initialised thread locals, which never allocate.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_size(layout.size());
        let pointer = unsafe { System.alloc(layout) };
        if !pointer.is_null() {
            note(layout.size() as isize);
        }
        pointer
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_size(layout.size());
        let pointer = unsafe { System.alloc_zeroed(layout) };
        if !pointer.is_null() {
            note(layout.size() as isize);
        }
        pointer
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        unsafe { System.dealloc(pointer, layout) };
        note(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_size(new_size);
        let moved = unsafe { System.realloc(pointer, layout, new_size) };
        if !moved.is_null() {
            note(new_size as isize - layout.size() as isize);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Counts this thread's allocations in [`largest_watched_allocation`]. Made for
/// `on_thread_start` of a runtime whose requests a test watches.
pub fn watch_this_thread() {
    WATCHED.set(true);
}

/// The largest single allocation any watched thread has made so far.
pub fn largest_watched_allocation() -> usize {
    LARGEST.load(Ordering::Relaxed)
}

/// The most bytes `run` had allocated at once on this thread, above what was live
/// before it, and its result.
pub fn peak_allocation<T>(run: impl FnOnce() -> T) -> (usize, T) {
    LIVE.set(0);
    PEAK.set(0);
    MEASURING.set(true);
    let result = run();
    MEASURING.set(false);
    (PEAK.get().max(0) as usize, result)
}
