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
//! 3. the **HTTP workers** (tiny_http) serve the output directory and never a byte outside it;
//!    every HTML page gets a small script that long-polls `/__attnbook/events`;
//! 4. the **live state** holds the build generation and the latest failure: a poll returns when
//!    the generation moves, and while the latest build is broken every HTML page is replaced by
//!    its diagnostics, so the author never reads a stale page without knowing.
//!
//! [`run`] returns only on a fatal error (the port is taken, files cannot be watched); Ctrl-C
//! goes through [`crate::interrupt`] like every other command.

use std::convert::Infallible;
use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};
use tiny_http::{Header, Method, Request, Response, ResponseBox, Server};

use crate::cli::ServePlan;
use crate::diagnostic::{self, Diagnostic};
use crate::render::html::escape;
use crate::site::{self, BuildPlan, Outcome};

/// The live-reload endpoint; `?since=N` waits until the build generation is no longer `N`.
const EVENTS: &str = "/__attnbook/events";
/// How long a poll waits before answering "no change" (the page then polls again).
const POLL_TIMEOUT: Duration = Duration::from_secs(25);
/// Threads answering requests: enough that a burst (or a few parked polls) starves nobody.
const WORKERS: usize = 4;
/// Editors write a file in several steps; one build per save is enough.
const DEBOUNCE: Duration = Duration::from_millis(25);
/// A build swaps the output in with two renames; a lookup between them misses, so a miss
/// during a build looks again after this long.
const SWAP_GRACE: Duration = Duration::from_millis(50);

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
    // Bind and watch before the first build: a taken port should fail at once, not after it.
    let (server, addr) = bind(plan.addr)?;
    let mut watch = Watch::start(&plan.build)?;
    let live = Arc::new(Live::default());
    let context = Arc::new(Context {
        live: Arc::clone(&live),
        output: Output {
            dir: plan.build.out.clone(),
        },
    });
    spawn_workers(&Arc::new(server), &context)?;
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

// ---------------------------------------------------------------------------------------------
// Building

/// Builds the site, prints what happened, and tells open pages.
fn rebuild(plan: &BuildPlan, live: &Live, verb: &str) {
    let started = Instant::now();
    live.begin_build();
    let outcome = build(plan);
    // With --timings the report has the stage times after its summary line.
    for line in outcome.report.iter().skip(1) {
        eprintln!("{line}");
    }
    let rendered = render_diagnostics(&outcome);
    eprint!("{rendered}");
    let (errors, warnings) = (
        outcome.diagnostics.error_count(),
        outcome.diagnostics.warning_count(),
    );
    if errors > 0 {
        eprintln!("build failed: {errors} error(s)");
        live.publish(Some(rendered));
    } else {
        let seconds = started.elapsed().as_secs_f64();
        match warnings {
            0 => eprintln!("{verb} in {seconds:.2}s"),
            n => eprintln!("{verb} in {seconds:.2}s, {n} warning(s)"),
        }
        live.publish(None);
    }
}

/// One build; a panic in it becomes an error on the page instead of ending the server.
fn build(plan: &BuildPlan) -> Outcome {
    std::panic::catch_unwind(|| site::build(plan)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let mut out = Outcome {
            root: plan.root.clone(),
            ..Outcome::default()
        };
        out.diagnostics.push(
            Diagnostic::error(format!("the build panicked: {message}")).with_help(
                "this is a bug in attnbook; the server keeps running and retries on the next save",
            ),
        );
        out
    })
}

/// The diagnostics as `main` prints them, with source snippets.
fn render_diagnostics(outcome: &Outcome) -> String {
    let sources = |path: &Path| match &outcome.series {
        Some(series) => series.source_of(path),
        None => std::fs::read_to_string(outcome.root.join(path)).ok(),
    };
    diagnostic::render(&outcome.diagnostics.sorted(), &sources)
}

// ---------------------------------------------------------------------------------------------
// Watching

/// The sources of the site, watched for changes.
struct Watch {
    debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
    events: Receiver<DebounceEventResult>,
    sources: Sources,
    /// The source directories watched so far (a missing one is watched once it appears).
    watched: Vec<PathBuf>,
}

impl Watch {
    fn start(plan: &BuildPlan) -> Result<Watch, Diagnostic> {
        let sources = Sources::new(plan)?;
        let (sender, events) = mpsc::channel();
        let debouncer = new_debouncer(DEBOUNCE, None, sender).map_err(|e| watch_error(&e))?;
        let mut watch = Watch {
            debouncer,
            events,
            sources,
            watched: Vec::new(),
        };
        // The root, not recursively: it sees `site.toml` even when an editor replaces it by a
        // rename (which a watch on the file itself would lose), and source directories appearing.
        watch
            .debouncer
            .watch(&watch.sources.root, RecursiveMode::NonRecursive)
            .map_err(|e| watch_error(&e))?;
        watch.watch_new_dirs()?;
        Ok(watch)
    }

    /// Blocks until a source changes; returns every changed source queued up by then.
    fn next_batch(&mut self) -> Result<Vec<PathBuf>, Diagnostic> {
        loop {
            let first = self.events.recv().map_err(|_| {
                Diagnostic::error("the file watcher stopped").with_help("restart `attnbook serve`")
            })?;
            let mut changed = self.sources.changed(first);
            while let Ok(more) = self.events.try_recv() {
                changed.extend(self.sources.changed(more));
            }
            self.watched.retain(|dir| dir.is_dir());
            if let Err(d) = self.watch_new_dirs() {
                eprint!("{}", diagnostic::render(&[&d], &|_| None));
            }
            if !changed.is_empty() {
                changed.sort();
                changed.dedup();
                return Ok(changed);
            }
        }
    }

    fn watch_new_dirs(&mut self) -> Result<(), Diagnostic> {
        for dir in &self.sources.dirs {
            if dir.is_dir() && !self.watched.contains(dir) {
                self.debouncer
                    .watch(dir, RecursiveMode::Recursive)
                    .map_err(|e| watch_error(&e))?;
                self.watched.push(dir.clone());
            }
        }
        Ok(())
    }

    /// `content/01-a.md and 2 more`, for the log line before a rebuild.
    fn describe(&self, changed: &[PathBuf]) -> String {
        let first = changed.first().map_or_else(String::new, |path| {
            let shown = path
                .strip_prefix(&self.sources.root)
                .or_else(|_| path.strip_prefix(&self.sources.workspace))
                .unwrap_or(path);
            if shown.as_os_str().is_empty() {
                "(the watcher asked for a full rescan)".to_string()
            } else {
                shown.display().to_string()
            }
        });
        match changed.len() {
            0 | 1 => first,
            n => format!("{first} and {} more", n - 1),
        }
    }
}

fn watch_error(e: &notify::Error) -> Diagnostic {
    Diagnostic::error(format!("cannot watch the site's files: {e}")).with_help(
        "on Linux, raise the inotify limits (sysctl fs.inotify.max_user_watches and max_user_instances)",
    )
}

/// Which paths are sources of the site, and which are its products or editor litter.
struct Sources {
    /// The site root, canonical (the watcher reports paths below what it was given).
    root: PathBuf,
    /// The attnbook workspace, whose `crates/` the experiments compile against.
    workspace: PathBuf,
    /// `site.toml`.
    config: PathBuf,
    /// Watched recursively: content, templates, static, and the workspace's crates.
    dirs: Vec<PathBuf>,
    /// Never sources, even when inside a watched directory: the output and the cache.
    ignored: Vec<PathBuf>,
}

impl Sources {
    fn new(plan: &BuildPlan) -> Result<Sources, Diagnostic> {
        let root = plan.root.canonicalize().map_err(|e| {
            Diagnostic::error(format!("cannot serve {}: {e}", plan.root.display()))
                .with_help("run `attnbook serve` in a site directory, or pass --root DIR")
        })?;
        let workspace = absolute(Path::new(env!("CARGO_MANIFEST_DIR")));
        let mut dirs: Vec<PathBuf> = ["content", "templates", "static"]
            .iter()
            .map(|d| root.join(d))
            .collect();
        let crates = workspace.join("crates");
        if crates.is_dir() {
            dirs.push(crates);
        }
        Ok(Sources {
            config: root.join("site.toml"),
            ignored: vec![absolute(&plan.out), root.join(".attnbook")],
            dirs,
            workspace,
            root,
        })
    }

    /// The sources an event batch touched; a watcher error or overflow asks for a full rebuild.
    fn changed(&self, result: DebounceEventResult) -> Vec<PathBuf> {
        let events = match result {
            Ok(events) => events,
            Err(errors) => {
                for e in errors {
                    eprintln!("warning: file watcher: {e}");
                }
                return vec![self.root.clone()];
            }
        };
        let mut changed = Vec::new();
        for event in events {
            if event.need_rescan() {
                changed.push(self.root.clone());
            }
            // Reads (the build opening sources) are no change; inotify reports them all.
            if matches!(event.kind, EventKind::Access(_)) {
                continue;
            }
            changed.extend(event.paths.iter().filter(|p| self.is_source(p)).cloned());
        }
        changed
    }

    fn is_source(&self, path: &Path) -> bool {
        if self.ignored.iter().any(|p| path.starts_with(p)) || is_editor_litter(path) {
            return false;
        }
        *path == self.config
            || self.dirs.iter().any(|dir| {
                path.strip_prefix(dir)
                    .is_ok_and(|rel| !rel.iter().any(|c| c == "target" || c == ".git"))
            })
    }
}

/// Swap files, backups and lock files that editors write next to the file being saved.
fn is_editor_litter(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    name.ends_with('~')
        || name.starts_with(".#")
        || (name.starts_with('#') && name.ends_with('#'))
        || [".swp", ".swx", ".swo", ".tmp", ".bak"]
            .iter()
            .any(|ext| name.ends_with(ext))
        || name == "4913"
        || name == ".DS_Store"
}

/// `path` made absolute and free of symlinks, as far as it exists.
fn absolute(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => absolute(parent).join(name),
        _ => std::env::current_dir().map_or_else(|_| path.to_path_buf(), |cwd| cwd.join(path)),
    }
}

// ---------------------------------------------------------------------------------------------
// Live state

/// What open pages need to know: which build they show, whether it failed, who is waiting.
#[derive(Default)]
struct Live {
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
struct Snapshot {
    generation: u64,
    failure: Option<Arc<str>>,
}

impl Live {
    fn lock(&self) -> MutexGuard<'_, LiveState> {
        // A panic elsewhere cannot leave the state half-updated: every update is one assignment.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn snapshot(&self) -> Snapshot {
        self.lock().snapshot()
    }

    fn begin_build(&self) {
        self.lock().building = true;
    }

    fn building(&self) -> bool {
        self.lock().building
    }

    /// Records the end of a build and wakes every waiting page.
    fn publish(&self, failure: Option<String>) {
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
    fn poll(&self, request: Request, since: Option<u64>) {
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
    fn expire(&self) {
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

// ---------------------------------------------------------------------------------------------
// HTTP

/// Binds the address, or says why not and what to do instead.
fn bind(addr: SocketAddr) -> Result<(Server, SocketAddr), Diagnostic> {
    let listener = TcpListener::bind(addr).map_err(|e| bind_error(addr, &e))?;
    let local = listener.local_addr().map_err(|e| bind_error(addr, &e))?;
    let server = Server::from_listener(listener, None)
        .map_err(|e| Diagnostic::error(format!("cannot serve on {addr}: {e}")))?;
    Ok((server, local))
}

fn bind_error(addr: SocketAddr, e: &std::io::Error) -> Diagnostic {
    let (ip, port) = (addr.ip(), addr.port());
    let other = if port == u16::MAX { 1111 } else { port + 1 };
    match e.kind() {
        std::io::ErrorKind::AddrInUse => {
            Diagnostic::error(format!("port {port} is already in use on {ip}")).with_help(format!(
                "another program (perhaps another `attnbook serve`) is listening there; \
                 stop it or pick another port, e.g. `attnbook serve --port {other}`"
            ))
        }
        std::io::ErrorKind::PermissionDenied => {
            Diagnostic::error(format!("not allowed to listen on port {port} of {ip}"))
                .with_help("ports below 1024 need privileges; use e.g. `--port 1111`")
        }
        std::io::ErrorKind::AddrNotAvailable => Diagnostic::error(format!(
            "{ip} is not an address of this machine"
        ))
        .with_help("use `--bind 127.0.0.1` (the default) or one of this machine's addresses"),
        _ => Diagnostic::error(format!("cannot listen on {addr}: {e}"))
            .with_help("pick another address or port with `--bind` and `--port`"),
    }
}

/// What every worker shares.
struct Context {
    live: Arc<Live>,
    output: Output,
}

fn spawn_workers(server: &Arc<Server>, context: &Arc<Context>) -> Result<(), Diagnostic> {
    for i in 0..WORKERS {
        let (server, context) = (Arc::clone(server), Arc::clone(context));
        std::thread::Builder::new()
            .name(format!("serve-{i}"))
            .spawn(move || work(&server, &context))
            .map_err(|e| Diagnostic::error(format!("cannot start the HTTP workers: {e}")))?;
    }
    Ok(())
}

/// A worker's life: answer requests, and every second expire the polls that waited too long.
fn work(server: &Server, context: &Context) {
    loop {
        match server.recv_timeout(Duration::from_secs(1)) {
            Ok(Some(request)) => {
                // A bug in one answer must not take a worker down with it.
                let answer = std::panic::AssertUnwindSafe(|| context.handle(request));
                let _ = std::panic::catch_unwind(answer);
            }
            Ok(None) => {}
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
        context.live.expire();
    }
}

impl Context {
    fn handle(&self, request: Request) {
        let url = request.url().to_string();
        let (path, query) = url.split_once('?').unwrap_or((&url, ""));
        if path == EVENTS {
            let since = query
                .split('&')
                .find_map(|pair| pair.strip_prefix("since="))
                .and_then(|n| n.parse().ok());
            return self.live.poll(request, since);
        }
        let response = match request.method() {
            Method::Get | Method::Head => self.answer(path, query),
            _ => text(405, "method not allowed"),
        };
        // A client that went away is its own business.
        let _ = request.respond(response);
    }

    fn answer(&self, path: &str, query: &str) -> ResponseBox {
        let snapshot = self.live.snapshot();
        let mut target = self.output.resolve(path, query);
        if target == Target::NotFound && self.live.building() {
            std::thread::sleep(SWAP_GRACE);
            target = self.output.resolve(path, query);
        }
        match target {
            Target::File(file) => self.file(&file, path, &snapshot),
            Target::Redirect(location) => Response::empty(302)
                .with_header(header("Location", &location))
                .boxed(),
            Target::NotFound => self.not_found(path, &snapshot),
            Target::Forbidden => text(403, "forbidden: outside the site"),
            Target::BadRequest => text(400, "bad request"),
        }
    }

    fn file(&self, file: &Path, path: &str, snapshot: &Snapshot) -> ResponseBox {
        let kind = content_type(file);
        if kind.starts_with("text/html") {
            return match std::fs::read_to_string(file) {
                Ok(html) => page(&html, 200, snapshot),
                Err(_) => self.not_found(path, snapshot),
            };
        }
        match File::open(file) {
            Ok(f) => Response::from_file(f)
                .with_header(header("Content-Type", &kind))
                .with_header(header("Cache-Control", "no-cache"))
                .boxed(),
            // Gone between lookup and open: a rebuild swapped the output.
            Err(_) => self.not_found(path, snapshot),
        }
    }

    /// The site's own `404.html` if it has one, else a plain page; both reload on rebuilds.
    fn not_found(&self, path: &str, snapshot: &Snapshot) -> ResponseBox {
        let custom = match self.output.resolve("/404.html", "") {
            Target::File(file) => std::fs::read_to_string(file).ok(),
            _ => None,
        };
        let html = custom.unwrap_or_else(|| match snapshot.failure {
            // Before any page exists, the error box is the whole page: no 404 text to confuse.
            Some(_) => plain_page("Build failed", ""),
            None => plain_page(
                "404 Not Found",
                &format!(
                    "<h1>404 Not Found</h1><p>Nothing at <code>{}</code>.</p><p><a href=\"/\">Home</a></p>",
                    escape(path)
                ),
            ),
        });
        page(&html, 404, snapshot)
    }
}

/// An HTML page as served: with the reload script, and the build's errors on top while the
/// latest build is broken (styled by the site's `div.build-error` rule).
fn page(html: &str, status: u16, snapshot: &Snapshot) -> ResponseBox {
    let mut body = insert(html, body_end(html), &reload_script(snapshot.generation));
    if let Some(diagnostics) = &snapshot.failure {
        body = insert(&body, body_start(&body), &error_box(diagnostics));
    }
    Response::from_string(body)
        .with_status_code(status)
        .with_header(header("Content-Type", "text/html; charset=utf-8"))
        .with_header(header("Cache-Control", "no-store"))
        .boxed()
}

fn text(status: u16, message: &str) -> ResponseBox {
    Response::from_string(format!("{message}\n"))
        .with_status_code(status)
        .with_header(header("Content-Type", "text/plain; charset=utf-8"))
        .boxed()
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes())
        .unwrap_or_else(|()| unreachable!("header {name}: {value} is not valid ASCII"))
}

// ---------------------------------------------------------------------------------------------
// Files

/// The output directory as the server sees it.
struct Output {
    dir: PathBuf,
}

/// What a request path names.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// A file inside the output directory (symlinks resolved).
    File(PathBuf),
    /// A directory asked for without its trailing `/`.
    Redirect(String),
    NotFound,
    /// Outside the output directory.
    Forbidden,
    BadRequest,
}

impl Output {
    /// Maps a request path (still percent-encoded) to what to answer; `query` is kept by
    /// redirects.
    fn resolve(&self, raw: &str, query: &str) -> Target {
        self.lookup(raw, query).unwrap_or_else(|target| target)
    }

    fn lookup(&self, raw: &str, query: &str) -> Result<Target, Target> {
        let segments = segments(raw)?;
        // Canonical on both sides, so a symlink pointing out of the site is caught by the
        // prefix check; re-read per request because every build swaps the directory in anew.
        let base = self.dir.canonicalize().map_err(|_| Target::NotFound)?;
        let mut real = inside(&base, &segments.iter().fold(base.clone(), |p, s| p.join(s)))?;
        if real.is_dir() {
            if !raw.ends_with('/') {
                let query = if query.is_empty() {
                    String::new()
                } else {
                    format!("?{query}")
                };
                // Built from the path without its leading slashes: `//host` would leave the site.
                return Ok(Target::Redirect(format!(
                    "/{}/{query}",
                    raw.trim_start_matches('/')
                )));
            }
            real = inside(&base, &real.join("index.html"))?;
        }
        if real.is_file() {
            Ok(Target::File(real))
        } else {
            Err(Target::NotFound)
        }
    }
}

/// Resolves `path` and checks that it stays inside `base`.
fn inside(base: &Path, path: &Path) -> Result<PathBuf, Target> {
    let real = path.canonicalize().map_err(|_| Target::NotFound)?;
    if real.starts_with(base) {
        Ok(real)
    } else {
        Err(Target::Forbidden)
    }
}

/// Splits a request path into plain names: percent-decoded first (so `%2e%2e` and `%2f` are
/// seen for what they are), `.` and empty names dropped, and `..` or anything a file system
/// would read as more than one name refused.
fn segments(raw: &str) -> Result<Vec<String>, Target> {
    if !raw.starts_with('/') {
        return Err(Target::BadRequest);
    }
    let decoded = percent_decode(raw).ok_or(Target::BadRequest)?;
    let mut names = Vec::new();
    for name in decoded.split('/') {
        match name {
            "" | "." => {}
            ".." => return Err(Target::Forbidden),
            _ if is_plain_name(name) => names.push(name.to_string()),
            _ => return Err(Target::Forbidden),
        }
    }
    Ok(names)
}

fn is_plain_name(name: &str) -> bool {
    let mut parts = Path::new(name).components();
    !name.contains(['\\', '\0'])
        && matches!(
            (parts.next(), parts.next()),
            (Some(Component::Normal(_)), None)
        )
}

/// `%XX` escapes to bytes; `None` for a result that is not UTF-8.
fn percent_decode(raw: &str) -> Option<String> {
    percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

/// The Content-Type of a file, by extension (text types in UTF-8, as the site writes them).
fn content_type(path: &Path) -> String {
    let mime = mime_guess::from_path(path).first_or_octet_stream();
    let text = mime.type_() == mime_guess::mime::TEXT
        || mime.subtype() == mime_guess::mime::JAVASCRIPT
        || mime.subtype() == mime_guess::mime::XML;
    if text {
        format!("{mime}; charset=utf-8")
    } else {
        mime.to_string()
    }
}

// ---------------------------------------------------------------------------------------------
// Pages

/// Long-polls the server and reloads when the generation moves; backs off while the server is
/// down. Plain ES5, no globals, nothing logged.
fn reload_script(generation: u64) -> String {
    format!(
        "<script>/* attnbook serve: live reload */(function(){{var g={generation},w=1000;\
         function p(){{fetch(\"{EVENTS}?since=\"+g,{{cache:\"no-store\"}})\
         .then(function(r){{if(!r.ok)throw r.status;return r.json()}})\
         .then(function(s){{w=1000;if(s.generation!==g)location.reload();else p()}},\
         function(){{setTimeout(p,w);w=Math.min(2*w,10000)}})}}p()}})();</script>\n"
    )
}

fn insert(html: &str, at: usize, snippet: &str) -> String {
    let mut out = String::with_capacity(html.len() + snippet.len());
    out.push_str(&html[..at]);
    out.push_str(snippet);
    out.push_str(&html[at..]);
    out
}

/// Where the body's content ends: before the last `</body>`, or at the end.
fn body_end(html: &str) -> usize {
    // ASCII lowercasing keeps byte offsets, so the index is valid in `html`.
    html.to_ascii_lowercase()
        .rfind("</body")
        .unwrap_or(html.len())
}

/// Where the body's content starts: after the `<body ...>` tag, or at the start.
fn body_start(html: &str) -> usize {
    let lower = html.to_ascii_lowercase();
    let tag = lower
        .match_indices("<body")
        .map(|(i, _)| i)
        .find(|&i| lower[i + 5..].starts_with(|c: char| c == '>' || c.is_ascii_whitespace()));
    tag.and_then(|i| lower[i..].find('>').map(|end| i + end + 1))
        .unwrap_or(0)
}

/// The diagnostics of the failed build, as a box on top of every page.
fn error_box(diagnostics: &str) -> String {
    format!(
        "<div class=\"build-error\" role=\"alert\"><p><strong>Build failed.</strong> The site \
         shown is the last good build, if any. Fix the problems below and save: this page \
         reloads by itself.</p>\
         <pre>{}</pre></div>\n",
        escape(diagnostics)
    )
}

/// A page of the server's own (when the site has no page to show), readable without the site's
/// stylesheet, which may not exist yet.
fn plain_page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><style>body{{margin:2rem;font:16px/1.5 system-ui,sans-serif}}\
         .build-error{{border:2px solid #c62828;padding:.75rem 1rem}}\
         .build-error pre{{white-space:pre-wrap}}</style></head>\n<body>{body}</body></html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traversal_is_refused_however_it_is_spelt() {
        for raw in [
            "/../site.toml",
            "/%2e%2e/site.toml",
            "/..%2fsite.toml",
            "/a/%2E%2E/%2e%2e/x",
        ] {
            assert_eq!(segments(raw), Err(Target::Forbidden), "{raw}");
        }
        assert_eq!(segments("/a\\..\\b"), Err(Target::Forbidden));
        assert_eq!(segments("http://evil/x"), Err(Target::BadRequest));
        // A malformed escape stays literal (as browsers do): a file name, not a way out.
        assert_eq!(segments("/%zz"), Ok(vec!["%zz".to_string()]));
        assert_eq!(segments("/%ff"), Err(Target::BadRequest), "not UTF-8");
        assert_eq!(
            segments("//a/./b/"),
            Ok(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(segments("/%E4%BD%A0"), Ok(vec!["你".to_string()]));
    }

    #[test]
    fn directories_redirect_to_their_slash_and_serve_their_index() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ch")).unwrap();
        std::fs::write(dir.path().join("ch/index.html"), "<p>x</p>").unwrap();
        let output = Output {
            dir: dir.path().to_path_buf(),
        };
        assert_eq!(
            output.resolve("//ch", "a=1"),
            Target::Redirect("/ch/?a=1".into())
        );
        assert!(
            matches!(output.resolve("/ch/", ""), Target::File(f) if f.ends_with("ch/index.html"))
        );
        assert_eq!(output.resolve("/nope/", ""), Target::NotFound);
    }

    #[test]
    fn the_script_ends_the_body_and_the_error_box_starts_it() {
        let html = "<body class=\"x\"><pre>&lt;/body&gt;</pre></BODY></html>";
        let end = body_end(html);
        assert_eq!(&html[end..], "</BODY></html>");
        assert_eq!(&html[..body_start(html)], "<body class=\"x\">");
        assert_eq!(body_start("<bodyx><p>bare</p>"), 0);
        assert_eq!(body_end("<p>bare</p>"), "<p>bare</p>".len());
    }

    #[test]
    fn the_error_box_escapes_the_diagnostics() {
        let shown = error_box("a.md:1:1: error: <script>");
        assert!(shown.starts_with("<div class=\"build-error\""));
        assert!(shown.contains("<pre>a.md:1:1: error: &lt;script&gt;</pre>"));
    }

    #[test]
    fn editor_litter_is_not_a_change() {
        for name in ["a.md~", ".#a.md", "#a.md#", "a.md.swp", "4913"] {
            assert!(is_editor_litter(Path::new(name)), "{name}");
        }
        assert!(!is_editor_litter(Path::new("content/01-a.md")));
    }
}
