//! Answers: what every request gets, from the output directory or the live state.

use std::path::Path;
use std::sync::Arc;

use http_body_util::{Either, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode, header};

use super::files::{Output, Target, content_type};
use super::live::{Live, Poll, Snapshot};
use super::pages::{body_end, body_start, error_box, insert, plain_page, reload_script};
use super::stream::FileBody;
use super::{EVENTS, SWAP_GRACE};
use crate::render::html::escape;

/// A response as the server sends it: pages whole in memory (they are small and rewritten
/// anyway), assets streamed from their file in chunks.
pub(super) type Reply = Response<Either<Full<Bytes>, FileBody>>;

/// What every request shares.
pub(super) struct Context {
    pub(super) live: Arc<Live>,
    pub(super) output: Output,
}

impl Context {
    /// Routes a request: live-reload polls wait on the runtime, everything else reads files on
    /// a blocking thread.
    pub(super) async fn handle(self: Arc<Self>, request: Request<Incoming>) -> Reply {
        let path = request.uri().path().to_string();
        let query = request.uri().query().unwrap_or("").to_string();
        if path == EVENTS {
            let since = query
                .split('&')
                .find_map(|pair| pair.strip_prefix("since="))
                .and_then(|n| n.parse().ok());
            return poll_reply(self.live.poll(since).await);
        }
        if !matches!(*request.method(), Method::GET | Method::HEAD) {
            return text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed");
        }
        let answered = tokio::task::spawn_blocking(move || self.answer(&path, &query)).await;
        // A bug in one answer (a panic) must cost that answer only.
        answered.unwrap_or_else(|_| text(StatusCode::INTERNAL_SERVER_ERROR, "internal error"))
    }

    fn answer(&self, path: &str, query: &str) -> Reply {
        let snapshot = self.live.snapshot();
        let mut target = self.output.resolve(path, query);
        if target == Target::NotFound && self.live.building() {
            std::thread::sleep(SWAP_GRACE);
            target = self.output.resolve(path, query);
        }
        match target {
            Target::File(file) => self.file(&file, path, &snapshot),
            Target::Redirect(location) => {
                with_header(reply(StatusCode::FOUND, ""), header::LOCATION, &location)
            }
            Target::NotFound => self.not_found(path, &snapshot),
            Target::Forbidden => text(StatusCode::FORBIDDEN, "forbidden: outside the site"),
            Target::BadRequest => text(StatusCode::BAD_REQUEST, "bad request"),
        }
    }

    fn file(&self, file: &Path, path: &str, snapshot: &Snapshot) -> Reply {
        let kind = content_type(file);
        if kind.starts_with("text/html") {
            return match std::fs::read_to_string(file) {
                Ok(html) => page(&html, StatusCode::OK, snapshot),
                Err(_) => self.not_found(path, snapshot),
            };
        }
        let opened = std::fs::File::open(file).and_then(|f| Ok((f.metadata()?.len(), f)));
        match opened {
            Ok((len, file)) => {
                let mut asset = Response::new(Either::Right(FileBody::new(file, len)));
                *asset.status_mut() = StatusCode::OK;
                let asset = with_header(asset, header::CONTENT_TYPE, &kind);
                with_header(asset, header::CACHE_CONTROL, "no-cache")
            }
            // Gone between lookup and open: a rebuild swapped the output.
            Err(_) => self.not_found(path, snapshot),
        }
    }

    /// The site's own `404.html` if it has one, else a plain page; both reload on rebuilds.
    fn not_found(&self, path: &str, snapshot: &Snapshot) -> Reply {
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
        page(&html, StatusCode::NOT_FOUND, snapshot)
    }
}

/// An HTML page as served: with the reload script, and the build's errors on top while the
/// latest build is broken (styled by the site's `div.build-error` rule).
fn page(html: &str, status: StatusCode, snapshot: &Snapshot) -> Reply {
    let mut body = insert(html, body_end(html), &reload_script(snapshot.generation));
    if let Some(diagnostics) = &snapshot.failure {
        body = insert(&body, body_start(&body), &error_box(diagnostics));
    }
    let page = with_header(
        reply(status, body),
        header::CONTENT_TYPE,
        "text/html; charset=utf-8",
    );
    with_header(page, header::CACHE_CONTROL, "no-store")
}

/// The answer to a live-reload poll; a page turned away retries with its back-off.
fn poll_reply(poll: Poll) -> Reply {
    match poll {
        Poll::Answer(snapshot) => {
            let body = format!(
                "{{\"generation\":{},\"ok\":{}}}",
                snapshot.generation,
                snapshot.failure.is_none()
            );
            let json = with_header(
                reply(StatusCode::OK, body),
                header::CONTENT_TYPE,
                "application/json",
            );
            with_header(json, header::CACHE_CONTROL, "no-store")
        }
        Poll::TurnedAway => with_header(
            text(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many pages are waiting for a rebuild; try again later",
            ),
            header::RETRY_AFTER,
            "1",
        ),
    }
}

fn text(status: StatusCode, message: &str) -> Reply {
    with_header(
        reply(status, format!("{message}\n")),
        header::CONTENT_TYPE,
        "text/plain; charset=utf-8",
    )
}

fn reply(status: StatusCode, body: impl Into<Bytes>) -> Reply {
    let mut response = Response::new(Either::Left(Full::new(body.into())));
    *response.status_mut() = status;
    response
}

fn with_header(mut response: Reply, name: HeaderName, value: &str) -> Reply {
    // Every value is ours or comes from a request path hyper already checked, so it is valid;
    // should one not be, the response goes out without that header rather than not at all.
    if let Ok(value) = HeaderValue::from_str(value) {
        response.headers_mut().insert(name, value);
    }
    response
}
