//! Timings that hold on a busy machine (issue 24, item 9). Every chapter of the series that
//! times itself (a block calls `lab.bench`, `thread_cpu_time()` or reads the clock with
//! `Instant`) is rerun by `attnbook verify` while two busy processes keep both cores of a
//! two-core machine occupied, and every quote and claim of those chapters, the timings among
//! them, must still hold. A wall-clock median failed this (ch. 6's timing slope read 2.78
//! against its band 1.7..2.4 on a loaded machine; ch. 10's speed-ups left their bands).
//!
//! Only the timed chapters and the chapters they read rerun; the others' results come from the
//! checkout's cache when a build of the series left it (`.ci/run` builds the series first).

use std::process::{Child, Command, Stdio};

mod common;

/// What a block calls to measure time (the generator's `TIMING_CALLS`).
const TIMING_CALLS: [&str; 3] = [".bench(", "Instant::", "thread_cpu_time("];

/// Processes that spin until dropped, so no test failure leaves one running.
struct Busy(Vec<Child>);

impl Busy {
    fn start(n: usize) -> Busy {
        Busy(
            (0..n)
                .map(|_| {
                    Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .stdin(Stdio::null())
                        .spawn()
                        .expect("start a busy process")
                })
                .collect(),
        )
    }

    /// Whether every busy process is still spinning.
    fn all_running(&mut self) -> bool {
        self.0.iter_mut().all(|c| matches!(c.try_wait(), Ok(None)))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The slugs of the series' chapters whose experiment blocks time themselves.
fn timed_chapters(site: &std::path::Path) -> Vec<String> {
    let mut slugs: Vec<String> = std::fs::read_dir(site.join("content"))
        .expect("read content/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .filter(|p| {
            let text = std::fs::read_to_string(p).expect("read chapter");
            experiment_code(&text).any(|line| TIMING_CALLS.iter().any(|c| line.contains(c)))
        })
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            // `10-kv-cache` is the chapter `kv-cache`.
            stem.split_once('-')
                .map_or(stem.clone(), |(_, s)| s.to_owned())
        })
        .collect();
    slugs.sort();
    slugs
}

/// The lines inside the chapter's ```` ```rust,experiment ```` blocks.
fn experiment_code(text: &str) -> impl Iterator<Item = &str> {
    let mut inside = false;
    text.lines().filter(move |line| {
        let fence = line.trim_start().starts_with("```");
        if fence && !inside {
            inside = line.trim_start().starts_with("```rust,experiment");
            false
        } else if fence {
            inside = false;
            false
        } else {
            inside
        }
    })
}

#[test]
fn the_timed_chapters_verify_beside_two_busy_processes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let site = dir.path();
    common::copy_series(site);
    let timed = timed_chapters(site);
    // The series times itself in several chapters (ch. 2, 3, 6, 10, 11 at least); finding
    // none would mean the scan, not the series, is broken.
    assert!(
        timed.len() >= 5 && timed.iter().any(|s| s == "kv-cache"),
        "timed chapters found: {timed:?}"
    );

    let mut busy = Busy::start(2);
    let run = Command::new(env!("CARGO_BIN_EXE_attnbook"))
        .arg("--root")
        .arg(site)
        .arg("verify")
        .args(&timed)
        .output()
        .expect("run attnbook verify");
    assert!(
        busy.all_running(),
        "a busy process stopped before verify ended"
    );
    drop(busy);

    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(
        run.status.code(),
        Some(0),
        "verify {timed:?} beside two busy processes:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(" 0 drifted"), "{stdout}");
}
