//! Live state: the build generation, the latest failure, and the polls waiting for a change.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{Semaphore, watch};

use super::{MAX_WAITERS, POLL_TIMEOUT};

/// What open pages need to know: which build they show, whether it failed, who is waiting.
pub(super) struct Live {
    /// The latest build as pages see it; every poll holds a receiver and wakes when it moves.
    published: watch::Sender<Snapshot>,
    /// A build is running (and may be swapping the output directory).
    building: AtomicBool,
    /// One permit per poll allowed to wait: every waiting page holds a connection, and those
    /// must stay free for pages.
    waiting: Semaphore,
}

/// The live state as one response sees it.
#[derive(Clone, Default)]
pub(super) struct Snapshot {
    /// Bumped after every build, failed or not; 0 until the first build ends.
    pub(super) generation: u64,
    /// The rendered diagnostics of the latest build, if it failed.
    pub(super) failure: Option<Arc<str>>,
}

/// How a poll ends.
pub(super) enum Poll {
    /// The page should compare this with the build it shows.
    Answer(Snapshot),
    /// Too many pages wait already; this one should ask again later.
    TurnedAway,
}

impl Default for Live {
    fn default() -> Self {
        Live {
            published: watch::Sender::new(Snapshot::default()),
            building: AtomicBool::new(false),
            waiting: Semaphore::new(MAX_WAITERS),
        }
    }
}

impl Live {
    pub(super) fn snapshot(&self) -> Snapshot {
        self.published.borrow().clone()
    }

    pub(super) fn begin_build(&self) {
        self.building.store(true, Ordering::SeqCst);
    }

    pub(super) fn building(&self) -> bool {
        self.building.load(Ordering::SeqCst)
    }

    /// Records the end of a build and wakes every waiting page.
    pub(super) fn publish(&self, failure: Option<String>) {
        self.published.send_modify(|latest| {
            latest.generation += 1;
            latest.failure = failure.map(Arc::from);
        });
        self.building.store(false, Ordering::SeqCst);
    }

    /// Answers at once if the page is out of date (`since` is not the current generation),
    /// else when the next build ends or [`POLL_TIMEOUT`] passes, whichever is first (proxies and
    /// browsers drop silent requests). Past [`MAX_WAITERS`] waiting polls, the page is turned
    /// away instead of holding one more connection.
    pub(super) async fn poll(&self, since: Option<u64>) -> Poll {
        // Subscribing before looking means a build that ends in between still wakes this poll.
        let mut changes = self.published.subscribe();
        if since == Some(changes.borrow_and_update().generation) {
            let Ok(_permit) = self.waiting.try_acquire() else {
                return Poll::TurnedAway;
            };
            let moved = changes.wait_for(|latest| Some(latest.generation) != since);
            // Timing out is the normal "no change"; the sender lives as long as `self`.
            let _ = tokio::time::timeout(POLL_TIMEOUT, moved).await;
        }
        Poll::Answer(self.snapshot())
    }
}
