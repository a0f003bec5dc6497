//! A counting allocator that costs nothing while it is not counting.
//!
//! The timings run with counting off: a relaxed load of one flag per
//! allocation, so Cedar and regorus (which allocate on every decision) are
//! not slowed by the measurement. Counting is switched on only around the
//! loads and the allocation count of mcppol's decisions.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

pub struct Counting;

static ON: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicU64 = AtomicU64::new(0);
static ALLOCATED: AtomicU64 = AtomicU64::new(0);
static FREED: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counters are only statistics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ON.load(Relaxed) {
            ALLOCS.fetch_add(1, Relaxed);
            ALLOCATED.fetch_add(layout.size() as u64, Relaxed);
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if ON.load(Relaxed) {
            ALLOCS.fetch_add(1, Relaxed);
            ALLOCATED.fetch_add(layout.size() as u64, Relaxed);
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ON.load(Relaxed) {
            FREED.fetch_add(layout.size() as u64, Relaxed);
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if ON.load(Relaxed) {
            ALLOCS.fetch_add(1, Relaxed);
            ALLOCATED.fetch_add(new_size as u64, Relaxed);
            FREED.fetch_add(layout.size() as u64, Relaxed);
        }
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// What happened while counting.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counts {
    /// Allocations (and reallocations) made.
    pub allocations: u64,
    /// Bytes allocated minus bytes freed: what is still held.
    pub retained: i64,
}

/// Runs `f` with counting on (single-threaded use only).
pub fn count<T>(f: impl FnOnce() -> T) -> (T, Counts) {
    ALLOCS.store(0, Relaxed);
    ALLOCATED.store(0, Relaxed);
    FREED.store(0, Relaxed);
    ON.store(true, Relaxed);
    let out = f();
    ON.store(false, Relaxed);
    let counts = Counts {
        allocations: ALLOCS.load(Relaxed),
        retained: ALLOCATED.load(Relaxed) as i64 - FREED.load(Relaxed) as i64,
    };
    (out, counts)
}
