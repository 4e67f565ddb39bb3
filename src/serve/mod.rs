//! `attnbook serve`: the author's loop of edit, save, look.
//!
//! Writing a chapter means saving often and glancing at the page, so `serve` keeps that loop
//! short and honest. Four parts run at once:
//!
//! 1. the **builder** (the calling thread) builds once, then again with [`site::build`] after
//!    every change to the sources; the experiment cache keeps prose edits cheap;
//! 2. the **watcher** (notify, debounced) queues changes to `site.toml`, `content/`,
//!    `templates/`, `static/` and the workspace's `crates/`; a save during a build queues the
//!    next build, so no edit is lost;
//! 3. the **HTTP server** (hyper on a one-thread tokio runtime, files read on a few blocking
//!    threads) serves the output directory and never a byte outside it; every HTML page gets a
//!    small script that long-polls `/__attnbook/events`; connections and waiting polls are
//!    bounded, and no client can stop it listening (`http.rs` says how);
//! 4. the **live state** holds the build generation and the latest failure: a poll returns when
//!    the generation moves, and while the latest build is broken every HTML page is replaced by
//!    its diagnostics, so the author never reads a stale page without knowing.
//!
//! [`run`] returns only on a fatal error (the port is taken, files cannot be watched); Ctrl-C
//! goes through [`crate::interrupt`] like every other command.
//!
//! [`site::build`]: crate::site::build

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::diagnostic::Diagnostic;
use crate::site::Outcome;

mod answer;
mod build;
mod files;
mod http;
mod live;
mod pages;
mod stream;
mod watch;

use answer::Context;
use build::rebuild;
use files::Output;
use http::bind;
use live::Live;
use watch::Watch;

/// The live-reload endpoint; `?since=N` waits until the build generation is no longer `N`.
const EVENTS: &str = "/__attnbook/events";
/// How long a poll waits before answering "no change" (the page then polls again).
const POLL_TIMEOUT: Duration = Duration::from_secs(25);
/// Polls allowed to wait at once; more pages are told to come back later (HTTP 503), so that
/// waiting pages never take every connection.
const MAX_WAITERS: usize = 64;
/// Threads reading files for answers: enough that a burst starves nobody.
const WORKERS: usize = 4;
/// Editors write a file in several steps; one build per save is enough.
const DEBOUNCE: Duration = Duration::from_millis(25);
/// A build swaps the output in with two renames; a lookup between them misses, so a miss
/// during a build looks again after this long.
const SWAP_GRACE: Duration = Duration::from_millis(50);

/// What `serve` should do.
#[derive(Debug, Clone)]
pub struct ServePlan {
    /// How each rebuild builds.
    pub build: crate::site::BuildPlan,
    /// Where to listen.
    pub addr: std::net::SocketAddr,
}

/// Builds, serves `plan.build.out` on `plan.addr`, and rebuilds and reloads on every change.
///
/// Returns only when serving cannot go on; the outcome then says why.
pub fn run(plan: &ServePlan) -> Outcome {
    match serve(plan) {
        Ok(never) => match never {},
        Err(d) => {
            let mut out = Outcome {
                root: plan.build.root.clone(),
                ..Outcome::default()
            };
            out.diagnostics.push(d);
            out
        }
    }
}

fn serve(plan: &ServePlan) -> Result<Infallible, Diagnostic> {
    // Serve deletes the output each build replaces: a refused output stops it before anything.
    let build = &plan.build;
    crate::site::check_output_dir(&build.root, &build.out, build.force)?;
    // Every rebuild runs in this process: the experiments' results are parsed once per change.
    crate::lab::remember_loaded_runs();
    crate::render::html::remember_large_escapes();
    // ... and a chapter is parsed and bound, and the templates parsed, once per change.
    crate::memo::enable();
    // Bind and watch before the first build: a taken port should fail at once, not after it.
    let (listener, addr) = bind(plan.addr)?;
    let mut watch = Watch::start(&plan.build)?;
    let live = Arc::new(Live::default());
    let context = Arc::new(Context {
        live: Arc::clone(&live),
        output: Output {
            dir: plan.build.out.clone(),
        },
    });
    http::spawn(listener, context)?;
    rebuild(&plan.build, &live, "built");
    println!("serving {}", url_of(addr));
    loop {
        let changed = watch.next_batch()?;
        eprintln!("changed: {}", watch.describe(&changed));
        rebuild(&plan.build, &live, "rebuilt");
    }
}

/// The address to open in a browser (a wildcard bind is reachable on loopback too).
fn url_of(addr: SocketAddr) -> String {
    let host = match addr.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_string(),
        ip if ip.is_unspecified() => "[::1]".to_string(),
        ip if ip.is_ipv6() => format!("[{ip}]"),
        ip => ip.to_string(),
    };
    format!("http://{host}:{}/", addr.port())
}
