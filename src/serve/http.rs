//! HTTP: binding the address, the worker threads, and the answer to every request.

use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tiny_http::{Header, Method, Request, Response, ResponseBox, Server};

use super::files::{Output, Target, content_type};
use super::live::{Live, Snapshot};
use super::pages::{body_end, body_start, error_box, insert, plain_page, reload_script};
use super::{EVENTS, SWAP_GRACE, WORKERS};
use crate::diagnostic::Diagnostic;
use crate::render::html::escape;

/// Binds the address, or says why not and what to do instead.
pub(super) fn bind(addr: SocketAddr) -> Result<(Server, SocketAddr), Diagnostic> {
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
pub(super) struct Context {
    pub(super) live: Arc<Live>,
    pub(super) output: Output,
}

pub(super) fn spawn_workers(
    server: &Arc<Server>,
    context: &Arc<Context>,
) -> Result<(), Diagnostic> {
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

pub(super) fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes())
        .unwrap_or_else(|()| unreachable!("header {name}: {value} is not valid ASCII"))
}
