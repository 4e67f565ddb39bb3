//! HTTP: binding the address, accepting connections, and keeping the listener alive.
//!
//! hyper speaks HTTP/1.1 on each connection; this module owns the accept loop, because that loop
//! is what decides whether the server survives a flood. tiny_http, used before, accepted on a
//! thread of its own and stopped listening for good at the first accept error (as under a low
//! `ulimit -n`). Here:
//!
//! - at most [`MAX_CONNECTIONS`] connections are open; further ones wait in the kernel's backlog
//!   ([`BACKLOG`]) until one closes;
//! - a connection that sends no request head within [`IDLE_TIMEOUT`] (also between requests of a
//!   kept-alive connection) is closed, so idle clients cannot hold the slots forever;
//! - an accept error is retried after [`ACCEPT_RETRY`] (running out of file descriptors passes
//!   when connections close) and logged at most once per [`RETELL_AFTER`];
//! - a panic while answering ends that task only (tokio catches it).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::runtime::Runtime;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::WORKERS;
use super::answer::Context;
use crate::diagnostic::Diagnostic;

/// Open connections at most. Browsers open six per host; the rest is room for several tabs
/// and [`super::MAX_WAITERS`] parked polls, and stays far below a default `ulimit -n` of 1024.
const MAX_CONNECTIONS: usize = 128;
/// Connections the kernel queues for us while every slot is taken.
const BACKLOG: u32 = 1024;
/// How long a connection may stay silent before its request head is complete.
const IDLE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long to wait after an accept error before accepting again.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);
/// Accept errors are logged at most once in this long.
const RETELL_AFTER: Duration = Duration::from_secs(60);

/// The listening socket and the runtime that will serve it.
pub(super) struct Listener {
    runtime: Runtime,
    listener: TcpListener,
}

/// Binds the address, or says why not and what to do instead.
pub(super) fn bind(addr: SocketAddr) -> Result<(Listener, SocketAddr), Diagnostic> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        // Files are read on blocking threads; a few suffice for one author's browser.
        .max_blocking_threads(WORKERS)
        .thread_name("serve-worker")
        .build()
        .map_err(|e| Diagnostic::error(format!("cannot start the HTTP server: {e}")))?;
    let listener = runtime
        .block_on(async { listen(addr) })
        .map_err(|e| bind_error(addr, &e))?;
    let local = listener.local_addr().map_err(|e| bind_error(addr, &e))?;
    Ok((Listener { runtime, listener }, local))
}

/// A listening socket whose backlog holds the connections beyond [`MAX_CONNECTIONS`] (the
/// standard library's 128 would refuse a burst of a few hundred).
fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    // As std and tokio do on Unix: a restarted server can bind again at once. On Windows the
    // option would let another program take the port over.
    #[cfg(unix)]
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

fn bind_error(addr: SocketAddr, e: &io::Error) -> Diagnostic {
    let (ip, port) = (addr.ip(), addr.port());
    let other = if port == u16::MAX { 1111 } else { port + 1 };
    match e.kind() {
        io::ErrorKind::AddrInUse => {
            Diagnostic::error(format!("port {port} is already in use on {ip}")).with_help(format!(
                "another program (perhaps another `attnbook serve`) is listening there; \
                 stop it or pick another port, e.g. `attnbook serve --port {other}`"
            ))
        }
        io::ErrorKind::PermissionDenied => {
            Diagnostic::error(format!("not allowed to listen on port {port} of {ip}"))
                .with_help("ports below 1024 need privileges; use e.g. `--port 1111`")
        }
        io::ErrorKind::AddrNotAvailable => Diagnostic::error(format!(
            "{ip} is not an address of this machine"
        ))
        .with_help("use `--bind 127.0.0.1` (the default) or one of this machine's addresses"),
        _ => Diagnostic::error(format!("cannot listen on {addr}: {e}"))
            .with_help("pick another address or port with `--bind` and `--port`"),
    }
}

/// Serves on a thread of its own for as long as the process lives.
pub(super) fn spawn(listener: Listener, context: Arc<Context>) -> Result<(), Diagnostic> {
    let Listener { runtime, listener } = listener;
    std::thread::Builder::new()
        .name("serve-http".into())
        .spawn(move || runtime.block_on(accept(&listener, &context)))
        .map(drop)
        .map_err(|e| Diagnostic::error(format!("cannot start the HTTP server: {e}")))
}

/// The accept loop: it never returns and never panics.
async fn accept(listener: &TcpListener, context: &Arc<Context>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut last_told = None;
    loop {
        // Taking the slot before accepting leaves excess connections in the backlog.
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            unreachable!("the connection semaphore is never closed")
        };
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(connection(stream, slot, Arc::clone(context)));
            }
            // The client gave up before we got to it: nothing is wrong with the listener.
            Err(e) if is_per_connection(&e) => {}
            Err(e) => {
                if should_tell(&mut last_told, Instant::now()) {
                    eprintln!(
                        "serve: cannot accept connections ({e}); retrying every {}ms, \
                         quietly for the next {}s",
                        ACCEPT_RETRY.as_millis(),
                        RETELL_AFTER.as_secs()
                    );
                }
                tokio::time::sleep(ACCEPT_RETRY).await;
            }
        }
    }
}

/// Whether an accept error seen at `now` is worth a line in the log. Out of file descriptors,
/// accepting fails, succeeds as one connection closes, and fails again: one line per such
/// episode, not one per retry.
fn should_tell(last_told: &mut Option<Instant>, now: Instant) -> bool {
    let tell = last_told.is_none_or(|then| now.duration_since(then) >= RETELL_AFTER);
    if tell {
        *last_told = Some(now);
    }
    tell
}

/// Accept errors that concern one connection only, not the listener or the process.
fn is_per_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// One connection, holding its slot until it closes.
async fn connection(stream: TcpStream, _slot: OwnedSemaphorePermit, context: Arc<Context>) {
    let service = service_fn(move |request| {
        let context = Arc::clone(&context);
        async move { Ok::<_, std::convert::Infallible>(context.handle(request).await) }
    });
    let served = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(IDLE_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .await;
    // A client that went away, timed out or spoke nonsense is its own business.
    drop(served);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_errors_of_one_client_are_retried_at_once() {
        for kind in [
            io::ErrorKind::ConnectionAborted,
            io::ErrorKind::ConnectionReset,
        ] {
            assert!(is_per_connection(&io::Error::from(kind)), "{kind:?}");
        }
        // EMFILE and ENFILE: the process or the system is out of file descriptors.
        for errno in [libc::EMFILE, libc::ENFILE, libc::ENOBUFS] {
            assert!(!is_per_connection(&io::Error::from_raw_os_error(errno)));
        }
    }

    #[test]
    fn accept_errors_are_told_once_a_minute() {
        let (start, mut last_told) = (Instant::now(), None);
        assert!(should_tell(&mut last_told, start));
        for ms in [1, 100, 59_999] {
            let later = start + Duration::from_millis(ms);
            assert!(!should_tell(&mut last_told, later), "{ms} ms later");
        }
        assert!(should_tell(&mut last_told, start + RETELL_AFTER));
        assert!(!should_tell(&mut last_told, start + RETELL_AFTER * 3 / 2));
    }
}
