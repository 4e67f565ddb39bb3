//! Runs one chapter's experiments in its own process, with a per-block timeout and an output cap.
//!
//! A reader thread splits the child's stdout on the block markers (attributing output to
//! blocks and telling the watchdog which block is running) and stops keeping text past the cap
//! while still draining the pipe, so a flood can neither exhaust memory nor block the child.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lab_protocol::{BLOCK_MARKER_PREFIX, BLOCK_MARKER_SUFFIX};

use super::BlockOutput;

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

#[derive(Default)]
struct Progress {
    blocks: Vec<BlockOutput>,
    current: Option<(usize, Instant)>,
    kept: usize,
}

/// Runs `binary slug seed results` and waits for it under `limits`.
pub(super) fn run(
    binary: &Path,
    slug: &str,
    seed: u64,
    results: &Path,
    limits: &Limits,
) -> std::io::Result<Finished> {
    let mut command = Command::new(binary);
    command
        .arg(slug)
        .arg(seed.to_string())
        .arg(results)
        .current_dir(&limits.sandbox)
        // The runtime confines its writes to the sandbox and the results directory (Landlock).
        .env("ATTNBOOK_SANDBOX", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    limit_memory(&mut command, limits.memory);
    let mut child = command.spawn()?;
    let _registered = crate::interrupt::child(child.id());
    let progress = Arc::new(Mutex::new(Progress::default()));
    let stdout = child.stdout.take().map(|out| {
        let progress = Arc::clone(&progress);
        let cap = limits.output_cap;
        std::thread::spawn(move || read_stdout(out, &progress, cap))
    });
    let stderr = child
        .stderr
        .take()
        .map(|err| std::thread::spawn(move || read_capped(err, 64 * 1024)));
    let ending = watch(&mut child, &progress, limits)?;
    if let Some(handle) = stdout {
        let _ = handle.join();
    }
    let stderr = stderr.and_then(|h| h.join().ok()).unwrap_or_default();
    let blocks = std::mem::take(
        &mut progress
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .blocks,
    );
    Ok(Finished {
        ending,
        blocks,
        stderr,
    })
}

/// Caps the child's address space, so a block that allocates without bound fails alone
/// (its allocation fails and it aborts) instead of taking the machine down.
#[cfg(unix)]
fn limit_memory(command: &mut Command, bytes: u64) {
    use std::os::unix::process::CommandExt;
    let limit = libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    };
    // SAFETY: runs in the forked child before exec; setrlimit is async-signal-safe and the
    // closure touches no memory shared with the parent.
    unsafe {
        command.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[cfg(not(unix))]
fn limit_memory(_command: &mut Command, _bytes: u64) {}

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

fn read_stdout(mut out: impl Read, progress: &Mutex<Progress>, cap: usize) {
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = match out.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&chunk[..n]);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            take_line(&line, progress, cap);
        }
        if pending.len() > cap {
            // A flood without newlines: keep what fits, drop the rest.
            take_line(&std::mem::take(&mut pending), progress, cap);
        }
    }
    if !pending.is_empty() {
        take_line(&pending, progress, cap);
    }
}

fn take_line(line: &[u8], progress: &Mutex<Progress>, cap: usize) {
    let Ok(mut p) = progress.lock() else { return };
    let text = String::from_utf8_lossy(line);
    if let Some(index) = marker_index(&text) {
        while p.blocks.len() <= index {
            p.blocks.push(BlockOutput::default());
        }
        p.current = Some((index, Instant::now()));
        return;
    }
    let Some((index, _)) = p.current else { return };
    let room = cap.saturating_sub(p.kept);
    let block = &mut p.blocks[index];
    if text.len() <= room {
        block.stdout.push_str(&text);
        p.kept += text.len();
    } else {
        let cut = floor_char_boundary(&text, room);
        block.stdout.push_str(&text[..cut]);
        block.truncated = true;
        p.kept = cap;
    }
}

fn floor_char_boundary(text: &str, at: usize) -> usize {
    (0..=at.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

fn marker_index(line: &str) -> Option<usize> {
    line.strip_prefix(BLOCK_MARKER_PREFIX)?
        .strip_suffix(BLOCK_MARKER_SUFFIX)?
        .parse()
        .ok()
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
    use lab_protocol::block_marker;

    fn feed(input: &str, cap: usize) -> Vec<BlockOutput> {
        let progress = Mutex::new(Progress::default());
        read_stdout(input.as_bytes(), &progress, cap);
        progress.into_inner().unwrap().blocks
    }

    #[test]
    fn output_is_attributed_to_blocks() {
        let input = format!(
            "{}a\nb\n{}{}c",
            block_marker(0),
            block_marker(1),
            block_marker(2)
        );
        let blocks = feed(&input, 1000);
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[0].stdout, "a\nb\n");
        assert_eq!(blocks[1].stdout, "");
        assert_eq!(blocks[2].stdout, "c");
    }

    #[test]
    fn a_flood_is_truncated_at_the_cap() {
        let input = format!(
            "{}{}\n{}after\n",
            block_marker(0),
            "x".repeat(10_000),
            block_marker(1)
        );
        let blocks = feed(&input, 100);
        assert_eq!(blocks[0].stdout.len(), 100);
        assert!(blocks[0].truncated);
        assert_eq!(
            blocks[1].stdout, "",
            "nothing kept past the cap, but the marker still counts"
        );
        assert!(blocks[1].truncated);
    }

    #[test]
    fn truncation_respects_utf8() {
        let input = format!("{}注意力机制\n", block_marker(0));
        let blocks = feed(&input, 7);
        assert_eq!(blocks[0].stdout, "注意");
    }
}
