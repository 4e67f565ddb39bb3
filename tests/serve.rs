//! `attnbook serve` as an author meets it: a real process on a real port, asked over real HTTP.
//!
//! Each test starts the server on a copy of a fixture with `--port 0` (the kernel picks a free
//! port; the server prints it), talks HTTP/1.0 to it through a few lines of `TcpStream`, and kills
//! it when the test ends, passed or failed.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Site;

/// How long anything the server should do by itself may take (builds run in debug mode, and
/// the tests share two cores).
const PATIENCE: Duration = Duration::from_secs(30);

/// A running `attnbook serve`, killed on drop.
struct Server {
    child: Child,
    port: u16,
    log: Arc<Mutex<String>>,
}

/// One HTTP response.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Server {
    /// Starts `attnbook --root SITE serve --port 0` and waits until it is serving.
    fn start(site: &Site) -> Server {
        Server::spawn(site, &mut Command::new(env!("CARGO_BIN_EXE_attnbook")))
    }

    /// Like [`Server::start`], with at most `files` open files for the server (soft and hard
    /// limit), as on a machine with a low `ulimit -n`.
    #[cfg(unix)]
    fn start_with_file_limit(site: &Site, files: libc::rlim_t) -> Server {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(env!("CARGO_BIN_EXE_attnbook"));
        let limit = libc::rlimit {
            rlim_cur: files,
            rlim_max: files,
        };
        // SAFETY: runs in the forked child before exec; setrlimit is async-signal-safe and
        // touches no memory of the parent.
        unsafe {
            command.pre_exec(move || {
                if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
        Server::spawn(site, &mut command)
    }

    fn spawn(site: &Site, command: &mut Command) -> Server {
        let child = command
            .arg("--root")
            .arg(site.root())
            .args(["serve", "--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start attnbook serve");
        let mut server = Server {
            child,
            port: 0,
            log: Arc::default(),
        };
        server.collect_output();
        server.port = server.wait_for_port();
        server
    }

    /// Copies everything the server prints into `log` (also keeps its pipes from filling up).
    fn collect_output(&mut self) {
        let stdout = self
            .child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>);
        let stderr = self
            .child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>);
        for stream in [stdout, stderr].into_iter().flatten() {
            let log = Arc::clone(&self.log);
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let mut log = log.lock().unwrap();
                    log.push_str(&line);
                    log.push('\n');
                }
            });
        }
    }

    fn wait_for_port(&self) -> u16 {
        let started = Instant::now();
        loop {
            let log = self.log();
            let port = log
                .split("serving http://127.0.0.1:")
                .nth(1)
                .and_then(|rest| rest.split('/').next())
                .and_then(|port| port.parse().ok());
            if let Some(port) = port {
                return port;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "the server never started:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// `GET path`, panicking with the server's log if the request fails.
    fn get(&self, path: &str) -> Reply {
        get(self.port, path).unwrap_or_else(|e| panic!("GET {path}: {e}\n{}", self.log()))
    }

    /// The current build generation.
    fn generation(&self) -> u64 {
        let reply = self.get("/__attnbook/events");
        let json: serde_json::Value = serde_json::from_str(&reply.body).expect("JSON");
        json["generation"].as_u64().expect("a generation number")
    }

    /// Waits until `path` answers with a body for which `ok` holds; returns that body.
    fn wait_for_page(&self, path: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let body = self.get(path).body;
            if ok(&body) {
                return body;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "{path} never showed {what}; last body:\n{body}\nserver log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A minimal HTTP/1.0 client: HTTP/1.0 means no chunked bodies and one request per connection.
fn get(port: u16, path: &str) -> std::io::Result<Reply> {
    get_within(port, path, PATIENCE)
}

/// [`get`], giving up when the server is silent for `wait`.
fn get_within(port: u16, path: &str, wait: Duration) -> std::io::Result<Reply> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(wait))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP response: {head}")))?;
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    Ok(Reply {
        status,
        headers,
        body: body.to_string(),
    })
}

#[test]
fn pages_are_served_with_their_types_and_the_reload_script() {
    let site = Site::fixture("serve-plain");
    let server = Server::start(&site);
    for path in ["/", "/one/", "/two/"] {
        let reply = server.get(path);
        assert_eq!(reply.status, 200, "{path}");
        assert_eq!(
            reply.header("Content-Type"),
            Some("text/html; charset=utf-8")
        );
        assert!(
            reply.body.contains("/__attnbook/events"),
            "{path}: no reload script"
        );
        let script = reply.body.find("/__attnbook/events").unwrap();
        assert!(
            script < reply.body.rfind("</body>").unwrap(),
            "{path}: script after </body>"
        );
    }
    assert!(
        server
            .get("/one/")
            .body
            .contains("original prose of chapter one")
    );
    let css = server.get("/style.css");
    assert_eq!(
        (css.status, css.header("Content-Type")),
        (200, Some("text/css; charset=utf-8"))
    );
    assert!(!css.body.contains("__attnbook"));
    let js = server.get("/attnbook.js");
    assert_eq!(
        js.header("Content-Type"),
        Some("text/javascript; charset=utf-8")
    );

    let redirect = server.get("/one?x=1");
    assert_eq!(
        (redirect.status, redirect.header("Location")),
        (302, Some("/one/?x=1"))
    );
    let missing = server.get("/no-such-page/");
    assert_eq!(missing.status, 404);
    assert!(
        missing.body.contains("/__attnbook/events"),
        "a 404 page reloads too"
    );
}

#[test]
fn nothing_outside_the_output_directory_is_served() {
    let site = Site::fixture("serve-plain");
    let server = Server::start(&site);
    let secret = "Serve fixture";
    assert!(site.read("site.toml").contains(secret));
    for path in [
        "/../site.toml",
        "/%2e%2e/site.toml",
        "/..%2fsite.toml",
        "/%2E%2E%2Fsite.toml",
        "/one/../../site.toml",
        "/..\\site.toml",
        "//site.toml",
    ] {
        let reply = server.get(path);
        assert!(
            [400, 403, 404].contains(&reply.status),
            "{path}: status {}",
            reply.status
        );
        assert!(!reply.body.contains("base_url"), "{path} leaked site.toml");
    }
    #[cfg(unix)]
    {
        // Retried: a rebuild (say, of an edit to the workspace's crates) replaces public/ and
        // the link with it.
        let refused = (0..20).any(|_| {
            let _ =
                std::os::unix::fs::symlink(site.path("site.toml"), site.path("public/leak.txt"));
            let reply = server.get("/leak.txt");
            assert!(
                !reply.body.contains("base_url"),
                "a symlink leaked site.toml"
            );
            std::thread::sleep(Duration::from_millis(100));
            reply.status == 403
        });
        assert!(refused, "a symlink out of the site was not refused");
    }
}

#[test]
fn editing_prose_updates_the_page_and_the_generation() {
    let site = Site::fixture("serve-plain");
    let server = Server::start(&site);
    let before = server.generation();
    assert!(before >= 1, "the first build is generation 1");

    // A page's poll parks until the next build; start one before the edit.
    let port = server.port;
    let poll = std::thread::spawn(move || get(port, &format!("/__attnbook/events?since={before}")));
    std::thread::sleep(Duration::from_millis(300));

    // A file of the first build's output, open as it would be while it is being sent.
    let mut sending = std::fs::File::open(site.path("public/one/index.html")).unwrap();
    let chapter = site.read("content/01-one.md");
    // Several saves in a row: the page must end up showing the last one.
    for round in 1..=3 {
        let text = chapter.replace("original prose", &format!("edited prose (round {round})"));
        site.write("content/01-one.md", &text);
        std::thread::sleep(Duration::from_millis(150));
    }
    server.wait_for_page("/one/", "the last edit", |body| {
        body.contains("edited prose (round 3)")
    });
    assert!(server.generation() > before);
    // serve recycles the output it replaced (after two rebuilds, the first build's tree is
    // rewritten and served again), and a file still being sent from it keeps its bytes: a
    // changed file is written as a new file, never through the old one.
    site.write(
        "content/01-one.md",
        &chapter.replace("original prose", "edited prose (round 4)"),
    );
    server.wait_for_page("/one/", "the fourth edit", |body| {
        body.contains("edited prose (round 4)")
    });
    assert!(site.path(".attnbook/spare-output").exists());
    let mut sent = String::new();
    std::io::Read::read_to_string(&mut sending, &mut sent).unwrap();
    assert!(sent.contains("original prose"), "{sent}");
    assert!(!sent.contains("edited prose"));

    let woke = poll.join().unwrap().expect("the poll answers");
    let json: serde_json::Value = serde_json::from_str(&woke.body).unwrap();
    assert!(
        json["generation"].as_u64().unwrap() > before,
        "{}",
        woke.body
    );
    assert_eq!(json["ok"], true);
}

#[test]
fn a_broken_chapter_shows_the_build_error_until_it_is_fixed() {
    let site = Site::fixture("serve-plain");
    let server = Server::start(&site);
    let chapter = site.read("content/01-one.md");
    site.write(
        "content/01-one.md",
        &chapter.replace("number = 1", "number = 1\ntitel = \"x\""),
    );

    let page = server.wait_for_page("/two/", "the build error", |body| {
        body.contains("class=\"build-error\"") && body.contains("unknown field `titel`")
    });
    assert!(page.contains("content/01-one.md:4:1"), "{page}");
    assert!(page.contains("unknown field `titel`"), "{page}");
    assert!(
        page.contains("/__attnbook/events"),
        "the error page reloads when fixed"
    );
    for path in ["/", "/no-such-page/"] {
        assert!(
            server.get(path).body.contains("class=\"build-error\""),
            "{path}"
        );
    }
    // The box sits on the page the author was looking at, styled by the site's stylesheet.
    assert!(page.contains("第二篇"), "{page}");
    let css = server.get("/style.css");
    assert_eq!(css.header("Content-Type"), Some("text/css; charset=utf-8"));
    assert!(!css.body.contains("<div"), "assets are served as they are");
    assert!(
        server.log().contains("build failed: 1 error(s)"),
        "{}",
        server.log()
    );

    site.write("content/01-one.md", &chapter);
    server.wait_for_page("/two/", "the page again", |body| {
        body.contains("第二篇") && !body.contains("build-error")
    });
}

#[test]
fn a_burst_of_requests_all_get_answers() {
    let site = Site::fixture("serve-plain");
    let server = Server::start(&site);
    let port = server.port;
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                (0..50)
                    .map(|i| ["/", "/one/", "/style.css", "/two/"][(t + i) % 4])
                    .map(|path| get(port, path).map(|r| r.status).unwrap_or(0))
                    .filter(|&status| status == 200)
                    .count()
            })
        })
        .collect();
    let answered: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(answered, 200, "{}", server.log());
    // A client that hangs up mid-request does not hurt the server.
    for _ in 0..10 {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let _ = stream.write_all(b"GET /one/ HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    assert_eq!(server.get("/").status, 200);
}

#[test]
fn a_port_in_use_is_a_clear_error() {
    let site = Site::fixture("serve-plain");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let run = site.run(&["serve", "--port", &port]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains(&format!("port {port} is already in use")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--port"), "{}", run.stderr);
}

#[test]
fn a_save_during_a_rebuild_triggers_another_rebuild() {
    let site = Site::fixture("serve-plain");
    let server = Server::start(&site);
    let before = server.generation();
    // Holding the site's build lock keeps the next rebuild waiting, mid-build, for as long as
    // the test likes.
    let lock = std::fs::File::options()
        .write(true)
        .open(site.path(".attnbook/build.lock"))
        .expect("the server's first build created the lock file");
    lock.lock().unwrap();
    let chapter = site.read("content/01-one.md");
    site.write("content/01-one.md", &chapter.replace("original", "first"));
    let started = Instant::now();
    while !server.log().contains("waiting for it to finish") {
        assert!(
            started.elapsed() < PATIENCE,
            "no rebuild started:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    site.write("content/01-one.md", &chapter.replace("original", "second"));
    std::thread::sleep(Duration::from_millis(500));
    lock.unlock().unwrap();

    server.wait_for_page("/one/", "the second save", |body| {
        body.contains("second prose")
    });
    let started = Instant::now();
    while server.generation() < before + 2 {
        assert!(
            started.elapsed() < PATIENCE,
            "one build for two saves:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_site_that_never_built_shows_its_errors_on_every_page() {
    let site = Site::fixture("serve-plain");
    let chapter = site.read("content/02-two.md");
    site.write(
        "content/02-two.md",
        &chapter.replace("number = 2", "number = \"two\""),
    );
    let server = Server::start(&site);
    for path in ["/", "/two/", "/anything.html"] {
        let reply = server.get(path);
        assert_eq!(
            reply.header("Content-Type"),
            Some("text/html; charset=utf-8")
        );
        assert!(
            reply.body.contains("class=\"build-error\""),
            "{path}: {}",
            reply.body
        );
        assert!(
            reply.body.contains("content/02-two.md:3:"),
            "{}",
            reply.body
        );
        assert!(reply.body.contains("/__attnbook/events"), "{path}");
    }
    site.write("content/02-two.md", &chapter);
    server.wait_for_page("/two/", "the chapter", |body| {
        body.contains("第二篇") && !body.contains("build-error")
    });
}

/// Opens up to `count` connections that send nothing, stopping at the first that fails.
fn idle_connections(port: u16, count: usize) -> Vec<TcpStream> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    (0..count)
        .map_while(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok())
        .collect()
}

/// `GET path` until it answers 200 or `PATIENCE` runs out; the last error or status says why not.
fn eventually_ok(server: &Server, path: &str) -> Result<Reply, String> {
    let started = Instant::now();
    loop {
        let outcome = get_within(server.port, path, Duration::from_secs(5));
        match outcome {
            Ok(reply) if reply.status == 200 => return Ok(reply),
            _ if started.elapsed() > PATIENCE => {
                let why =
                    outcome.map_or_else(|e| e.to_string(), |r| format!("status {}", r.status));
                return Err(format!("GET {path}: {why}\nserver log:\n{}", server.log()));
            }
            _ => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

#[cfg(unix)]
#[test]
fn idle_connections_beyond_the_file_limit_do_not_stop_the_server() {
    let site = Site::fixture("serve-plain");
    let server = Server::start_with_file_limit(&site, 64);
    let idle = idle_connections(server.port, 300);
    // While they are open, the server may be full, but it must not fall over.
    std::thread::sleep(Duration::from_secs(1));
    let opened = idle.len();
    drop(idle);
    let page = eventually_ok(&server, "/one/")
        .unwrap_or_else(|e| panic!("after {opened} idle connections: {e}"));
    assert!(page.body.contains("original prose of chapter one"));
    // Still listening for the next page and the next poll, not just one lucky request.
    for path in ["/", "/two/", "/style.css"] {
        assert_eq!(server.get(path).status, 200, "{path}");
    }
    assert!(server.generation() >= 1);
    // Told, but once: not once per retry.
    let log = server.log();
    assert_eq!(log.matches("cannot accept connections").count(), 1, "{log}");
    assert!(log.contains("Too many open files"), "{log}");
}

#[test]
fn idle_connections_cannot_hold_the_server_forever() {
    let site = Site::fixture("serve-plain");
    let server = Server::start(&site);
    // More silent clients than the server keeps connections for, and they stay open.
    let idle = idle_connections(server.port, 200);
    assert_eq!(
        idle.len(),
        200,
        "the backlog holds what the server has not accepted"
    );
    let started = Instant::now();
    let reply = get(server.port, "/one/")
        .unwrap_or_else(|e| panic!("no page while clients idle: {e}\n{}", server.log()));
    assert_eq!(reply.status, 200);
    assert!(started.elapsed() < PATIENCE);
    drop(idle);
}

#[test]
fn live_reload_waiters_are_bounded_and_pages_still_load() {
    let site = Site::fixture("serve-plain");
    let server = Server::start(&site);
    let (port, since) = (server.port, server.generation());
    // Far more open pages than anyone has: each poll waits for the next build, or is told
    // at once to come back later.
    const POLLS: usize = 200;
    let (answers, answered) = std::sync::mpsc::channel();
    for _ in 0..POLLS {
        let answers = answers.clone();
        std::thread::spawn(move || {
            let reply = get(port, &format!("/__attnbook/events?since={since}"));
            let _ = answers.send(reply.map(|r| (r.status, r.body)));
        });
    }
    // Polls turned away are answered without a build: wait for them (and only then edit), so
    // "at once" means "before the build", whatever the machine's load.
    let started = Instant::now();
    let mut turned_away = 0;
    while turned_away < 100 {
        let left = PATIENCE.saturating_sub(started.elapsed());
        let reply = answered
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("{turned_away} polls turned away\n{}", server.log()));
        let (status, body) = reply.unwrap_or_else(|e| panic!("a poll got no answer: {e}"));
        assert_eq!(status, 503, "answered before any build: {body}");
        turned_away += 1;
    }
    for path in ["/", "/one/", "/style.css"] {
        let reply = get_within(port, path, Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("{path} while pages wait: {e}\n{}", server.log()));
        assert_eq!(reply.status, 200, "{path}");
    }
    let chapter = site.read("content/01-one.md");
    site.write("content/01-one.md", &chapter.replace("original", "edited"));

    let mut woken = 0;
    for reply in answered.iter().take(POLLS - turned_away) {
        let (status, body) = reply.unwrap_or_else(|e| panic!("a poll got no answer: {e}"));
        match status {
            200 => {
                let json: serde_json::Value = serde_json::from_str(&body).expect("JSON");
                assert!(json["generation"].as_u64() > Some(since), "{body}");
                woken += 1;
            }
            // Polls that arrived after the first hundred were turned away may be too.
            503 => {}
            other => panic!("a poll answered {other}: {body}"),
        }
    }
    assert!(woken > 0, "no poll waited for the build");
    assert!(
        woken <= 64,
        "{woken} polls parked at once (at most 64 may wait)"
    );
}

impl Server {
    /// Waits until the generation passes `since` (the server finished a build after a change);
    /// returns the new generation.
    fn wait_for_build_after(&self, since: u64, what: &str) -> u64 {
        self.wait_for_build_within(since, what, PATIENCE)
    }

    /// [`Server::wait_for_build_after`], waiting at most `patience`.
    fn wait_for_build_within(&self, since: u64, what: &str, patience: Duration) -> u64 {
        let started = Instant::now();
        loop {
            let generation = self.generation();
            if generation > since {
                return generation;
            }
            assert!(
                started.elapsed() < patience,
                "no rebuild after {what}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The generation an open page learns after its poll for `since` ends: the next build's,
    /// or `since` again when the poll runs out (25 s) with no build.
    fn poll(&self, since: u64) -> u64 {
        let reply = get_within(
            self.port,
            &format!("/__attnbook/events?since={since}"),
            PATIENCE * 2,
        )
        .unwrap_or_else(|e| panic!("poll: {e}\n{}", self.log()));
        assert_eq!(reply.status, 200, "{}", reply.body);
        let json: serde_json::Value = serde_json::from_str(&reply.body).expect("JSON");
        json["generation"].as_u64().expect("a generation number")
    }
}

#[test]
fn new_source_directories_templates_static_and_site_toml_rebuild() {
    let site = Site::fixture("serve-plain");
    let server = Server::start(&site);
    let mut generation = server.generation();
    // A directory that did not exist when the server started, with a template in it.
    std::fs::create_dir(site.path("templates")).unwrap();
    let template = |text: &str| {
        format!(
            "{{% extends \"base.html\" %}}{{% block content %}}<main>{text}</main>{{% endblock content %}}"
        )
    };
    site.write("templates/404.html", &template("first missing page"));
    generation = server.wait_for_build_after(generation, "a new templates/");
    server.wait_for_page("/404.html", "the new template", |b| {
        b.contains("first missing page")
    });
    // And a change inside it, now that it is watched.
    site.write("templates/404.html", &template("second missing page"));
    generation = server.wait_for_build_after(generation, "a template edit");
    server.wait_for_page("/404.html", "the edited template", |b| {
        b.contains("second missing page")
    });

    std::fs::create_dir_all(site.path("static/img")).unwrap();
    site.write("static/img/note.txt", "first static file");
    generation = server.wait_for_build_after(generation, "a new static/");
    server.wait_for_page("/img/note.txt", "the new static file", |b| {
        b == "first static file"
    });
    site.write("static/img/note.txt", "second static file");
    generation = server.wait_for_build_after(generation, "a static edit");
    server.wait_for_page("/img/note.txt", "the edited static file", |b| {
        b == "second static file"
    });

    // Saved the way many editors save: a new file renamed over the old one.
    let config = site.read("site.toml");
    site.write(
        "site.toml.tmp",
        &config.replace("Serve fixture", "Renamed config title"),
    );
    std::fs::rename(site.path("site.toml.tmp"), site.path("site.toml")).unwrap();
    server.wait_for_build_after(generation, "site.toml saved by rename");
    server.wait_for_page("/", "the new title", |b| b.contains("Renamed config title"));
}

#[test]
fn an_idle_server_stays_at_its_generation() {
    let site = Site::fixture("serve-plain");
    let server = Server::start(&site);
    let generation = server.generation();
    // What its build wrote (output, cache, lock) is no change: a poll waits for the next build
    // and, with none, answers with the same generation after its 25 s.
    assert_eq!(server.poll(generation), generation, "{}", server.log());
}

/// The resident memory of process `pid`, in KiB (Linux's `/proc/PID/status`).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .expect("a VmRSS line")
}

/// Redteam-3 D13: an asset goes out in chunks as the client takes them, never read whole per
/// request, so many slow clients on a large file cost the server almost no memory. Before,
/// eight clients holding a 48 MiB file cost it eight copies (~400 MB resident).
#[cfg(target_os = "linux")]
#[test]
fn a_large_asset_is_streamed_and_slow_clients_cost_no_memory() {
    const SIZE: usize = 48 << 20;
    const CLIENTS: usize = 8;
    let site = Site::fixture("serve-plain");
    std::fs::create_dir_all(site.path("static")).unwrap();
    let data: Vec<u8> = (0..SIZE).map(|i| (i % 251) as u8).collect();
    std::fs::write(site.path("static/big.bin"), &data).unwrap();
    let server = Server::start(&site);
    let request = format!(
        "GET /big.bin HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
        server.port
    );
    // One whole download first: every byte arrives, with its length announced.
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    stream.set_read_timeout(Some(PATIENCE)).unwrap();
    write!(stream, "GET /big.bin HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head")
        + 4;
    let head = String::from_utf8_lossy(&raw[..head_end]).to_lowercase();
    assert!(head.starts_with("http/1.0 200"), "{head}");
    assert!(head.contains(&format!("content-length: {SIZE}")), "{head}");
    assert!(
        raw[head_end..] == data[..],
        "the download differs from the file"
    );
    let before = rss_kib(server.child.id());
    // Slow clients: each asks for the file, takes its first 64 KiB and reads no more.
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let mut client = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        client.set_read_timeout(Some(PATIENCE)).unwrap();
        client.write_all(request.as_bytes()).unwrap();
        let mut first = vec![0; 64 << 10];
        client.read_exact(&mut first).unwrap();
        clients.push(client);
    }
    // Let the server fill what it can of every connection.
    std::thread::sleep(Duration::from_secs(2));
    let during = rss_kib(server.child.id());
    let grown_mib = during.saturating_sub(before) / 1024;
    eprintln!(
        "resident: {before} KiB after one download, {during} KiB with {CLIENTS} slow clients"
    );
    assert!(
        grown_mib < 16,
        "{CLIENTS} slow clients of a {} MiB file grew the server by {grown_mib} MiB \
         ({before} KiB -> {during} KiB)",
        SIZE >> 20
    );
    // It still answers others meanwhile.
    assert_eq!(server.get("/").status, 200);
    drop(clients);
}

/// `serve` keeps chapters' parses and bindings and the parsed templates in memory between its
/// rebuilds (src/memo.rs). After a prose edit, an edit of the value another chapter quotes
/// (whose binding must follow though that chapter's text did not change), a line added above
/// that value's block (the quote links the line that recorded it) and an edit of a template,
/// what it wrote is byte for byte what a fresh `build` of the same sources writes.
#[test]
fn what_serve_keeps_between_rebuilds_changes_nothing_it_writes() {
    let site = Site::fixture("provenance");
    let server = Server::start(&site);
    let mut generation = server.generation();
    // Editing a block compiles the experiments again, in debug mode, on shared cores.
    let wait = |since: u64, what: &str| {
        server.wait_for_build_within(since, what, Duration::from_secs(300))
    };
    let quoting = site.read("content/02-use.md");
    site.write(
        "content/02-use.md",
        &quoting.replace("this one", "this one, edited,"),
    );
    generation = wait(generation, "a prose edit");
    let source = site.read("content/01-src.md");
    assert!(source.contains("lab.value(\"shown\", 2.0);"));
    site.write(
        "content/01-src.md",
        &source.replace("lab.value(\"shown\", 2.0);", "lab.value(\"shown\", 6.0);"),
    );
    generation = wait(generation, "an edit of a quoted value");
    // A line added above the quoted chapter's blocks: its values were recorded two lines
    // further down, which the other chapter's quote links.
    let source = site.read("content/01-src.md");
    site.write(
        "content/01-src.md",
        &source.replacen(
            "drifted quote [9]{=shown}.\n",
            "drifted quote [9]{=shown}.\n\nOne more line.\n",
            1,
        ),
    );
    assert_ne!(site.read("content/01-src.md"), source);
    generation = wait(generation, "a prose edit above the quoted blocks");
    std::fs::create_dir_all(site.path("templates")).unwrap();
    site.write(
        "templates/404.html",
        "{% extends \"base.html\" %}{% block content %}<main>kept?</main>{% endblock content %}",
    );
    wait(generation, "a new template");
    server.wait_for_page("/404.html", "the new template", |b| b.contains("kept?"));
    drop(server);

    let fresh = site.run(&["build", "--base-url", "/", "--out", "fresh"]);
    assert_eq!(fresh.code, 0, "{}", fresh.stderr);
    let served = common::tree(&site.path("public"));
    let built = common::tree(&site.path("fresh"));
    assert_eq!(
        served.keys().collect::<Vec<_>>(),
        built.keys().collect::<Vec<_>>()
    );
    for (path, bytes) in &served {
        assert!(
            built[path] == *bytes,
            "{} differs between serve and a fresh build",
            path.display()
        );
    }
}
