//! Runs one chapter's experiments in its own process, with a per-block timeout and an output cap.
//!
//! The process gets three channels besides stdin:
//!
//! - stdout, a pipe drained by a pump thread that keeps at most `output_cap` bytes, so a flood
//!   can neither exhaust memory nor block the child;
//! - the control channel (a pipe each way, see [`lab_protocol::CONTROL_FDS_ENV`]): when a block
//!   starts, the runtime sends its index and waits; the pump first reads everything already
//!   printed, attributes it to the previous block, then answers. Boundaries never travel on
//!   stdout, so printed text cannot forge or break them, and the watchdog's clock for a block
//!   starts only on a real boundary;
//! - stderr, kept up to 64 KiB for diagnostics.
//!
//! The chapter runs in a process group of its own; when it ends, fails or times out, the whole
//! tree is killed ([`super::reap`]), so nothing it started outlives the run, and the pipes
//! close however many descendants held them.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lab_protocol::{ACK, BlockStart, CONTROL_FDS_ENV};

use super::BlockOutput;
use super::reap;

/// Limits for one chapter run.
#[derive(Debug, Clone)]
pub(super) struct Limits {
    /// Per-block timeouts (index = block); blocks past the end use the last one.
    pub timeouts: Vec<Duration>,
    /// Bytes of stdout kept per chapter; the rest is dropped with a note.
    pub output_cap: usize,
    /// Address-space limit of the process, in bytes.
    pub memory: u64,
    /// Working directory of the process (its sandbox for files it writes).
    pub sandbox: std::path::PathBuf,
    /// The grid point to run at, `name=value` (`lab_protocol::PARAM_ENV`), if any.
    pub point: Option<String>,
}

/// How the process ended.
#[derive(Debug)]
pub(super) enum Ending {
    /// Exited with this code (101 = a block panicked).
    Exited(i32),
    /// Killed by a signal (e.g. out of memory).
    Signalled(String),
    /// Killed by us: block `block` ran past `after`.
    TimedOut {
        /// The block that was running.
        block: usize,
        /// Its timeout.
        after: Duration,
    },
}

/// What came back from the process.
#[derive(Debug)]
pub(super) struct Finished {
    /// How it ended.
    pub ending: Ending,
    /// Per-block stdout.
    pub blocks: Vec<BlockOutput>,
    /// Captured stderr (capped).
    pub stderr: String,
}

/// What the pump has seen so far.
#[derive(Debug, Default)]
struct Progress {
    /// Bytes printed by each block that has started.
    blocks: Vec<Vec<u8>>,
    /// Whether output of that block was dropped at the cap.
    truncated: Vec<bool>,
    /// The block that runs now and when it started.
    current: Option<(usize, Instant)>,
    /// Bytes kept so far, all blocks together.
    kept: usize,
}

/// How long to wait for pipes to close once the process tree is gone.
const DRAIN_PATIENCE: Duration = Duration::from_secs(5);

/// Runs `binary slug seed results` and waits for it under `limits`; `blocks` is the number of
/// blocks the chapter has, `token` marks its processes.
pub(super) fn run(
    binary: &Path,
    args: (&str, u64, &Path),
    blocks: usize,
    token: &str,
    limits: &Limits,
) -> std::io::Result<Finished> {
    let (slug, seed, results) = args;
    let (control_read, control_write) = std::io::pipe()?;
    let (ack_read, ack_write) = std::io::pipe()?;
    // Above the standard streams and the descriptors dup2 will write, so they cannot collide.
    let child_write = duplicate_above(control_write.as_fd(), 10)?;
    let child_read = duplicate_above(ack_read.as_fd(), 10)?;
    drop((control_write, ack_read));
    let mut command = Command::new(binary);
    command
        .arg(slug)
        .arg(seed.to_string())
        .arg(results)
        .current_dir(&limits.sandbox)
        // The runtime confines its writes to the sandbox and the results directory (Landlock).
        .env("ATTNBOOK_SANDBOX", "1")
        .env(CONTROL_FDS_ENV, "3,4")
        .env(reap::RUN_TOKEN_ENV, token)
        .env_remove(lab_protocol::PARAM_ENV)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(point) = &limits.point {
        command.env(lab_protocol::PARAM_ENV, point);
    }
    prepare_child(
        &mut command,
        limits.memory,
        [(child_write.as_raw_fd(), 3), (child_read.as_raw_fd(), 4)],
    );
    // Registered as it starts, so the reaper never sees the process unregistered.
    let mut child = reap::spawn_registered(&mut command)?;
    drop((child_write, child_read));
    let pid = child.id();
    let _interrupt = crate::interrupt::process_group(pid);
    let progress = Arc::new(Mutex::new(Progress::default()));
    let (pumped, pump_done) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        let progress = Arc::clone(&progress);
        let cap = limits.output_cap;
        std::thread::spawn(move || {
            pump(stdout, control_read, ack_write, &progress, cap, blocks);
            let _ = pumped.send(());
        });
    }
    let (errs, stderr_done) = mpsc::channel();
    if let Some(stderr) = child.stderr.take() {
        std::thread::spawn(move || {
            let _ = errs.send(read_capped(stderr, 64 * 1024));
        });
    }
    let ending = watch(&mut child, &progress, limits);
    reap::unregister(pid);
    reap::kill_tree(pid, token, DRAIN_PATIENCE);
    let ending = ending?;
    let deadline = Instant::now() + DRAIN_PATIENCE;
    let _ = pump_done.recv_timeout(DRAIN_PATIENCE);
    let stderr = stderr_done
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .unwrap_or_default();
    let progress = std::mem::take(
        &mut *progress
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?,
    );
    Ok(Finished {
        ending,
        blocks: block_outputs(progress),
        stderr,
    })
}

/// `fcntl(F_DUPFD_CLOEXEC)`: a close-on-exec duplicate numbered at least `min`.
fn duplicate_above(fd: BorrowedFd<'_>, min: RawFd) -> std::io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: fcntl on a descriptor we borrow; the result is a fresh descriptor we own.
    let dup = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, min) };
    if dup < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `dup` was just returned by fcntl and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(dup) })
}

/// In the forked child, before exec: a process group of its own (so the tree can be killed at
/// once), death with the generator, the memory cap, and the control channel on fixed numbers.
#[cfg(unix)]
fn prepare_child(command: &mut Command, memory: u64, fds: [(RawFd, RawFd); 2]) {
    use std::os::unix::process::CommandExt;
    let limit = libc::rlimit {
        rlim_cur: memory as libc::rlim_t,
        rlim_max: memory as libc::rlim_t,
    };
    // SAFETY: runs in the forked child before exec; setpgid, prctl, setrlimit and dup2 are
    // async-signal-safe and the closure touches no memory shared with the parent.
    unsafe {
        command.pre_exec(move || {
            let check = |ret: libc::c_int| {
                if ret < 0 {
                    Err(std::io::Error::last_os_error())
                } else {
                    Ok(())
                }
            };
            check(libc::setpgid(0, 0))?;
            #[cfg(target_os = "linux")]
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
            check(libc::setrlimit(libc::RLIMIT_AS, &limit))?;
            for (from, to) in fds {
                // dup2 clears close-on-exec on the copy: the runtime inherits exactly these.
                check(libc::dup2(from, to))?;
            }
            Ok(())
        });
    }
}

/// Runs until the process exits or a block overstays its timeout (then the group is killed).
fn watch(
    child: &mut Child,
    progress: &Mutex<Progress>,
    limits: &Limits,
) -> std::io::Result<Ending> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(ending_of(status));
        }
        let current = progress.lock().ok().and_then(|p| p.current);
        let (block, since) = current.unwrap_or((0, started));
        let after = timeout_of(limits, block);
        if since.elapsed() > after {
            reap::signal_group(child.id(), libc::SIGKILL);
            let _ = child.kill();
            let _ = child.wait();
            return Ok(Ending::TimedOut { block, after });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn timeout_of(limits: &Limits, block: usize) -> Duration {
    limits
        .timeouts
        .get(block)
        .or(limits.timeouts.last())
        .copied()
        .unwrap_or(Duration::from_secs(120))
}

#[cfg(unix)]
fn ending_of(status: std::process::ExitStatus) -> Ending {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Ending::Exited(code),
        (None, Some(signal)) => Ending::Signalled(format!("signal {signal}")),
        (None, None) => Ending::Signalled("unknown".into()),
    }
}

#[cfg(not(unix))]
fn ending_of(status: std::process::ExitStatus) -> Ending {
    Ending::Exited(status.code().unwrap_or(-1))
}

/// Reads stdout and the control channel until both close: output goes to the running block,
/// block starts are acknowledged once everything printed before them has been read.
fn pump(
    mut stdout: impl Read + AsRawFd,
    mut control: impl Read + AsRawFd,
    mut ack: impl Write,
    progress: &Mutex<Progress>,
    cap: usize,
    blocks: usize,
) {
    set_nonblocking(stdout.as_raw_fd());
    let (mut stdout_open, mut control_open) = (true, true);
    let mut frame = Vec::with_capacity(BlockStart::LEN);
    while stdout_open || control_open {
        let mut fds = [
            poll_entry(stdout.as_raw_fd(), stdout_open),
            poll_entry(control.as_raw_fd(), control_open),
        ];
        // SAFETY: `fds` is a valid array of two pollfd for the duration of the call.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, 1000) };
        if ready < 0 && std::io::Error::last_os_error().kind() != ErrorKind::Interrupted {
            return;
        }
        if fds[0].revents != 0 {
            stdout_open = drain(&mut stdout, progress, cap);
        }
        if fds[1].revents != 0 {
            let mut byte = [0u8; 1];
            match control.read(&mut byte) {
                Ok(1) => frame.push(byte[0]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                _ => control_open = false,
            }
            if let Ok(bytes) = <[u8; BlockStart::LEN]>::try_from(frame.as_slice()) {
                frame.clear();
                if stdout_open {
                    stdout_open = drain(&mut stdout, progress, cap);
                }
                start_block(progress, BlockStart::decode(bytes), blocks);
                let _ = ack.write_all(&[ACK]);
            }
        }
    }
}

fn poll_entry(fd: RawFd, open: bool) -> libc::pollfd {
    libc::pollfd {
        // A negative descriptor is ignored by poll.
        fd: if open { fd } else { -1 },
        events: libc::POLLIN,
        revents: 0,
    }
}

fn set_nonblocking(fd: RawFd) {
    // SAFETY: fcntl on a descriptor the caller owns for the duration of the call.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
    }
}

/// Reads what stdout holds now; false at end of file.
fn drain(stdout: &mut impl Read, progress: &Mutex<Progress>, cap: usize) -> bool {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match stdout.read(&mut chunk) {
            Ok(0) => return false,
            Ok(n) => keep(&chunk[..n], progress, cap),
            Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// A block starts: only a later block of this chapter counts, so a stray or forged frame can
/// neither grow memory nor move the watchdog backwards.
fn start_block(progress: &Mutex<Progress>, frame: BlockStart, blocks: usize) {
    let Ok(mut p) = progress.lock() else { return };
    let Ok(index) = usize::try_from(frame.0) else {
        return;
    };
    let next = p.current.map_or(0, |(i, _)| i + 1);
    if index < next || index >= blocks {
        return;
    }
    p.blocks.resize(index + 1, Vec::new());
    p.truncated.resize(index + 1, false);
    p.current = Some((index, Instant::now()));
}

/// Output of the running block, up to the cap (output before the first block is dropped).
fn keep(bytes: &[u8], progress: &Mutex<Progress>, cap: usize) {
    let Ok(mut p) = progress.lock() else { return };
    let Some((index, _)) = p.current else { return };
    let room = cap.saturating_sub(p.kept);
    let take = bytes.len().min(room);
    p.blocks[index].extend_from_slice(&bytes[..take]);
    p.kept += take;
    if take < bytes.len() {
        p.truncated[index] = true;
    }
}

/// Each started block's output as text; a character cut at the cap is dropped whole.
fn block_outputs(progress: Progress) -> Vec<BlockOutput> {
    progress
        .blocks
        .into_iter()
        .zip(progress.truncated)
        .map(|(bytes, truncated)| {
            let bytes = match (truncated, std::str::from_utf8(&bytes)) {
                (true, Err(e)) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
                _ => &bytes[..],
            };
            BlockOutput {
                stdout: String::from_utf8_lossy(bytes).into_owned(),
                truncated,
            }
        })
        .collect()
}

fn read_capped(mut input: impl Read, cap: usize) -> String {
    let mut kept = Vec::new();
    let mut chunk = [0u8; 8192];
    while let Ok(n) = input.read(&mut chunk) {
        if n == 0 {
            break;
        }
        let room = cap.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..n.min(room)]);
    }
    String::from_utf8_lossy(&kept).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the runtime does, step by step.
    enum Step {
        Print(&'static [u8]),
        Start(u32),
    }

    /// Plays `steps` as the runtime would (a boundary waits for its acknowledgement) against
    /// the real pump over real pipes.
    fn play(steps: Vec<Step>, cap: usize, blocks: usize) -> Vec<BlockOutput> {
        let (out_read, mut out_write) = std::io::pipe().unwrap();
        let (control_read, mut control_write) = std::io::pipe().unwrap();
        let (mut ack_read, ack_write) = std::io::pipe().unwrap();
        let runtime = std::thread::spawn(move || {
            for step in steps {
                match step {
                    Step::Print(bytes) => out_write.write_all(bytes).unwrap(),
                    Step::Start(i) => {
                        control_write.write_all(&BlockStart(i).encode()).unwrap();
                        let mut ack = [0u8];
                        ack_read.read_exact(&mut ack).unwrap();
                        assert_eq!(ack[0], ACK);
                    }
                }
            }
        });
        let progress = Mutex::new(Progress::default());
        pump(out_read, control_read, ack_write, &progress, cap, blocks);
        runtime.join().unwrap();
        block_outputs(progress.into_inner().unwrap())
    }

    fn texts(blocks: &[BlockOutput]) -> Vec<&str> {
        blocks.iter().map(|b| b.stdout.as_str()).collect()
    }

    #[test]
    fn output_without_a_final_newline_stays_with_its_block() {
        let blocks = play(
            vec![
                Step::Start(0),
                Step::Print(b"a\nb"),
                Step::Start(1),
                Step::Start(2),
                Step::Print(b"c"),
            ],
            1000,
            3,
        );
        assert_eq!(texts(&blocks), ["a\nb", "", "c"]);
    }

    #[test]
    fn printed_text_is_never_a_boundary() {
        let old_marker = b"\x1eattnbook-block 7\x1e\n";
        let blocks = play(
            vec![Step::Start(0), Step::Print(old_marker), Step::Print(b"x")],
            1000,
            3,
        );
        assert_eq!(blocks.len(), 1);
        assert_eq!(
            blocks[0].stdout.as_bytes(),
            [&old_marker[..], b"x"].concat()
        );
    }

    #[test]
    fn frames_out_of_range_or_backwards_are_ignored() {
        let blocks = play(
            vec![
                Step::Start(0),
                Step::Print(b"a"),
                Step::Start(u32::MAX),
                Step::Start(5),
                Step::Print(b"b"),
                Step::Start(1),
                Step::Start(0),
                Step::Print(b"c"),
            ],
            1000,
            2,
        );
        assert_eq!(
            texts(&blocks),
            ["ab", "c"],
            "memory follows the chapter's blocks"
        );
    }

    #[test]
    fn a_flood_is_truncated_at_the_cap() {
        let flood: &'static [u8] = Box::leak(vec![b'x'; 100_000].into_boxed_slice());
        let blocks = play(
            vec![
                Step::Start(0),
                Step::Print(flood),
                Step::Start(1),
                Step::Print(b"after\n"),
            ],
            100,
            2,
        );
        assert_eq!(blocks[0].stdout.len(), 100);
        assert!(blocks[0].truncated);
        assert_eq!(blocks[1].stdout, "", "nothing kept past the cap");
        assert!(blocks[1].truncated);
    }

    #[test]
    fn truncation_respects_utf8() {
        let blocks = play(
            vec![Step::Start(0), Step::Print("注意力机制\n".as_bytes())],
            7,
            1,
        );
        assert_eq!(blocks[0].stdout, "注意");
    }
}
