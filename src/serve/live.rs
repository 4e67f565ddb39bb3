//! Live state: the build generation, the latest failure, and the polls waiting for a change.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use tiny_http::{Request, Response};

use super::POLL_TIMEOUT;
use super::http::header;

/// What open pages need to know: which build they show, whether it failed, who is waiting.
#[derive(Default)]
pub(super) struct Live {
    state: Mutex<LiveState>,
}

#[derive(Default)]
struct LiveState {
    /// Bumped after every build, failed or not; 0 until the first build ends.
    generation: u64,
    /// A build is running (and may be swapping the output directory).
    building: bool,
    /// The rendered diagnostics of the latest build, if it failed.
    failure: Option<Arc<str>>,
    /// Polls parked until the next generation, with their deadlines. Parking the request
    /// rather than a thread keeps every worker free for pages.
    waiters: Vec<(Request, Instant)>,
}

/// The live state as one response sees it.
pub(super) struct Snapshot {
    pub(super) generation: u64,
    pub(super) failure: Option<Arc<str>>,
}

impl Live {
    fn lock(&self) -> MutexGuard<'_, LiveState> {
        // A panic elsewhere cannot leave the state half-updated: every update is one assignment.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn snapshot(&self) -> Snapshot {
        self.lock().snapshot()
    }

    pub(super) fn begin_build(&self) {
        self.lock().building = true;
    }

    pub(super) fn building(&self) -> bool {
        self.lock().building
    }

    /// Records the end of a build and wakes every waiting page.
    pub(super) fn publish(&self, failure: Option<String>) {
        let (waiters, now) = {
            let mut state = self.lock();
            state.building = false;
            state.generation += 1;
            state.failure = failure.map(Arc::from);
            (std::mem::take(&mut state.waiters), state.snapshot())
        };
        for (request, _) in waiters {
            answer_poll(request, &now);
        }
    }

    /// Answers a poll now if the page is out of date, or parks it until it is.
    pub(super) fn poll(&self, request: Request, since: Option<u64>) {
        let mut state = self.lock();
        if since == Some(state.generation) {
            state.waiters.push((request, Instant::now() + POLL_TIMEOUT));
            return;
        }
        let now = state.snapshot();
        drop(state);
        answer_poll(request, &now);
    }

    /// Answers the polls that waited long enough (proxies and browsers drop silent requests).
    pub(super) fn expire(&self) {
        let now = Instant::now();
        let (expired, snapshot) = {
            let mut state = self.lock();
            let (expired, waiting) = std::mem::take(&mut state.waiters)
                .into_iter()
                .partition(|(_, deadline)| *deadline <= now);
            state.waiters = waiting;
            (expired, state.snapshot())
        };
        for (request, _) in expired {
            answer_poll(request, &snapshot);
        }
    }
}

impl LiveState {
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            generation: self.generation,
            failure: self.failure.clone(),
        }
    }
}

fn answer_poll(request: Request, snapshot: &Snapshot) {
    let body = format!(
        "{{\"generation\":{},\"ok\":{}}}",
        snapshot.generation,
        snapshot.failure.is_none()
    );
    let response = Response::from_string(body)
        .with_header(header("Content-Type", "application/json"))
        .with_header(header("Cache-Control", "no-store"));
    // A page that was closed while it waited is not an error.
    let _ = request.respond(response);
}
