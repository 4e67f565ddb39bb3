//! What `serve` keeps in memory between its rebuilds, all of which run in one process: the
//! results of pure steps (a chapter's parse, its bound quotes, the parsed templates), each
//! under a key that hashes everything the step reads, so a rebuild after a prose edit of one
//! chapter parses and binds that chapter alone. The disk caches keep what a new process can
//! reuse; these keep what would cost more to read back than to make, and only in `serve`
//! ([`enable`]): a `build` runs each step once.
//!
//! An entry lives while builds use it: each build is a generation ([`next_build`]), and an
//! entry neither this build nor the one before used is dropped, so memory holds about two
//! builds' worth whatever the number of edits.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static ON: AtomicBool = AtomicBool::new(false);
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// From now on every [`Memo`] keeps what it made (`serve` calls this once).
pub fn enable() {
    ON.store(true, Ordering::Relaxed);
}

/// A build starts: what the build before last used and this one does not is dropped.
pub fn next_build() {
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Values of one kind, by key.
pub struct Memo<V> {
    entries: Mutex<Option<HashMap<String, (V, u64)>>>,
}

impl<V: Clone> Memo<V> {
    /// An empty memo (for a `static`).
    pub const fn new() -> Self {
        Memo {
            entries: Mutex::new(None),
        }
    }

    /// The value kept under the key `key` makes, or the one `make` makes (kept, when memos are
    /// on). `make` runs outside the lock: two threads may make values at once.
    pub fn get_or_make(&self, key: impl FnOnce() -> String, make: impl FnOnce() -> V) -> V {
        if !ON.load(Ordering::Relaxed) {
            return make();
        }
        self.at(GENERATION.load(Ordering::Relaxed), key(), make)
    }

    /// [`Memo::get_or_make`] in build generation `now`.
    fn at(&self, now: u64, key: String, make: impl FnOnce() -> V) -> V {
        if let Ok(mut entries) = self.entries.lock()
            && let Some((value, used)) = entries.get_or_insert_with(HashMap::new).get_mut(&key)
        {
            *used = now;
            return value.clone();
        }
        let value = make();
        if let Ok(mut entries) = self.entries.lock() {
            let entries = entries.get_or_insert_with(HashMap::new);
            entries.retain(|_, (_, used)| *used + 1 >= now);
            entries.insert(key, (value.clone(), now));
        }
        value
    }
}

impl<V: Clone> Default for Memo<V> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_value_is_made_once_and_dropped_two_builds_after_its_last_use() {
        let memo: Memo<u32> = Memo::new();
        let made = std::cell::Cell::new(0);
        let get = |build: u64, key: &str| {
            memo.at(build, key.to_string(), || {
                made.set(made.get() + 1);
                made.get()
            })
        };
        assert_eq!(get(1, "a"), 1);
        assert_eq!(get(1, "a"), 1, "kept");
        assert_eq!(get(2, "b"), 2, "another key is made");
        // "a" was last used two builds ago: the next insertion drops it.
        assert_eq!(get(3, "c"), 3);
        assert_eq!(get(3, "a"), 4, "made again after it was dropped");
        assert_eq!(get(3, "b"), 2, "used by the build before: kept");
    }
}
