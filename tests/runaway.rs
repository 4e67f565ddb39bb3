//! Experiments that try to escape: children that outlive their block, signals to the build,
//! output that imitates block boundaries, and one chapter's failure among healthy ones.
//!
//! Each test gives its child processes a unique `sleep` duration, so it can look for exactly
//! them in `/proc` afterwards.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Run, Site};

/// Runs `attnbook build` on `site`, failing the test if it has not finished within five
/// minutes (the nested cargo build included): a build that waits for an experiment's
/// children would otherwise wait as long as they live.
fn build(site: &Site) -> Run {
    site.run_within(&["build"], Duration::from_secs(300))
}

/// A one-chapter site whose only block is `block` (with fence options `options`).
fn site_with_block(options: &str, block: &str) -> Site {
    let site = Site::fixture("slow");
    site.write(
        "content/01-a.md",
        &format!(
            "+++\ntitle = \"A\"\nnumber = 1\n+++\n\n```rust,experiment{options}\n{block}\n```\n"
        ),
    );
    site
}

/// Processes whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| {
                    String::from_utf8_lossy(&c)
                        .replace('\0', " ")
                        .contains(needle)
                })
                .unwrap_or(false)
        })
        .collect()
}

/// Waits up to 10 s for every process matching `needle` to be gone (a killed process
/// disappears once reaped).
fn assert_no_process_with(needle: &str) {
    let started = Instant::now();
    while !processes_with(needle).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "still running: {needle} {:?}",
            processes_with(needle)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_for(path: &Path) {
    let started = Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_child_that_never_ends_is_killed_at_the_blocks_timeout() {
    let site = site_with_block(
        ",timeout=2",
        r#"std::process::Command::new("sleep").arg("3600.125").status().unwrap();"#,
    );
    let run = build(&site);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("experiment block 1 did not finish within 2 s"),
        "{}",
        run.stderr
    );
    assert_no_process_with("3600.125");
}

#[test]
fn children_left_running_die_with_the_chapter_even_in_a_new_session() {
    let site = site_with_block(
        "",
        r#"use std::process::{Command, Stdio};
Command::new("sleep").arg("3599.375").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
// `setsid -f` forks into a new session and returns at once: a daemon.
Command::new("setsid").args(["-f", "sleep", "3598.625"]).status().unwrap();
lab.value("x", 1.0);"#,
    );
    let run = build(&site);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_no_process_with("3599.375");
    assert_no_process_with("3598.625");
}

/// A one-chapter site whose chapter body is `body`.
fn site_with_chapter(body: &str) -> Site {
    let site = Site::fixture("slow");
    site.write(
        "content/01-a.md",
        &format!("+++\ntitle = \"A\"\nnumber = 1\n+++\n\n{body}"),
    );
    site
}

#[test]
fn printed_markers_neither_split_output_nor_feed_the_watchdog() {
    // The stdout marker of earlier versions, printed by hand: with a huge index, and in a
    // block with a 2 s timeout that would run 8 s if the markers reset its clock.
    let site = site_with_chapter(
        r#"```rust,experiment
print!("first \u{1e}attnbook-block 1\u{1e}\n tail");
```

```rust,experiment,timeout=2
let started = std::time::Instant::now();
while started.elapsed() < std::time::Duration::from_secs(8) {
    println!("\u{1e}attnbook-block 99999999999\u{1e}");
    if started.elapsed() > std::time::Duration::from_secs(5) {
        std::fs::write("ran-past-its-timeout", "").unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
}
```
"#,
    );
    let run = build(&site);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("experiment block 2 did not finish within 2 s"),
        "{}",
        run.stderr
    );
    assert!(
        !site
            .path(".attnbook/run/sandbox-a/ran-past-its-timeout")
            .exists(),
        "the printed markers reset the watchdog"
    );
}

#[test]
fn output_without_a_final_newline_stays_in_its_block() {
    let site = site_with_chapter(
        r#"```rust,experiment
print!("first \u{1e}attnbook-block 1\u{1e}\n tail");
```

```rust,experiment
print!("second");
lab.value("x", 1.0);
```
"#,
    );
    let run = build(&site);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = site.read("public/a/index.html");
    let outputs: Vec<&str> = page
        .split("class=\"experiment-output\"")
        .skip(1)
        .map(|rest| &rest[..rest.find("</pre>").unwrap()])
        .collect();
    assert_eq!(outputs.len(), 2, "{page}");
    assert!(
        outputs[0].contains("first") && outputs[0].ends_with(" tail"),
        "{}",
        outputs[0]
    );
    assert!(outputs[1].ends_with(">second"), "{}", outputs[1]);
}

/// Starts `attnbook build` on `site` (stderr piped, closed first when `close_stderr`), waits
/// until its experiment has written `started`, and sends it `signal`.
fn build_then_signal(site: &Site, signal: libc::c_int, close_stderr: bool) -> std::process::Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_attnbook"))
        .arg("--root")
        .arg(site.root())
        .arg("build")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&site.path(".attnbook/run/sandbox-a/started"));
    if close_stderr {
        drop(child.stderr.take());
    }
    // SAFETY: sending a signal to our own child has no memory-safety preconditions.
    unsafe {
        libc::kill(child.id() as libc::pid_t, signal);
    }
    child
}

#[test]
fn sigterm_and_sighup_stop_the_build_and_everything_it_started() {
    for (signal, name) in [(libc::SIGTERM, "TERM"), (libc::SIGHUP, "HUP")] {
        let needle = if signal == libc::SIGTERM {
            "997.125"
        } else {
            "996.875"
        };
        let site = site_with_block(
            "",
            &format!(
                r#"std::process::Command::new("sleep").arg("{needle}").spawn().unwrap();
std::fs::write("started", "").unwrap();
loop {{ std::hint::black_box(0); }}"#
            ),
        );
        std::fs::create_dir_all(site.path("public")).unwrap();
        site.write("public/index.html", "earlier site");
        site.write("public/.attnbook-output", "written by attnbook\n");
        let child = build_then_signal(&site, signal, false);
        let output = child.wait_with_output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(130),
            "SIG{name}: {:?} {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(site.read("public/index.html"), "earlier site", "SIG{name}");
        assert_no_process_with(needle);
        // The experiment process itself: its arguments name the site's results file.
        assert_no_process_with(&site.root().join(".attnbook/run").display().to_string());
    }
}

/// The parent that read the build's standard error is gone (killed by `timeout`, a closed
/// terminal) when the signal comes: the build still cleans up and exits, instead of dying in
/// its handler and waiting for it for ever (seen: a build orphaned by a killed test hung for
/// an hour).
#[test]
fn sigterm_with_standard_error_closed_still_ends_the_build() {
    let site = site_with_block(
        "",
        r#"std::fs::write("started", "").unwrap();
loop { std::hint::black_box(0); }"#,
    );
    let mut child = build_then_signal(&site, libc::SIGTERM, true);
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the build did not end within 30 s of SIGTERM with its stderr closed");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert_no_process_with(&site.root().join(".attnbook/run").display().to_string());
}

#[test]
fn one_broken_chapter_gives_one_error_and_the_others_are_kept() {
    let site = site_with_chapter(
        r#"```rust,experiment
lab.value("x", 1.0);
lab.table("t", ["a"], [[1]]);
```

[1]{=x}
"#,
    );
    // A new author's first mistake: a type error in a new chapter that reads, places and
    // refers to things of its own and of the healthy chapter.
    let broken = r#"+++
title = "B"
number = 2
+++

```rust,experiment
let y: f64 = "not a number";
lab.value("y", y);
lab.table("u", ["b"], [[2]]);
```

[1]{=y} and [1]{=a/x}; see @tab:u and @tab:a/t.

{{table: u}}
"#;
    site.write("content/02-b.md", broken);
    let run = build(&site);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let errors = run.error_lines();
    assert_eq!(errors.len(), 1, "{}", run.stderr);
    assert!(
        errors[0].starts_with("content/02-b.md:7:14: error"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("error: 1 error(s)"), "{}", run.stderr);
    // The healthy chapter ran and was cached despite its neighbour.
    site.write(
        "content/02-b.md",
        &broken.replace("\"not a number\"", "2.0"),
    );
    let run = build(&site);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("experiments: 1 run, 1 cached"),
        "{}",
        run.stdout
    );
}

#[test]
fn two_sites_with_the_same_chapter_slug_build_at_once_each_with_its_own_experiments() {
    // Both sites' experiment binaries land in the one shared target directory.
    let sites: Vec<Site> = ["1.5", "2.5"]
        .into_iter()
        .map(|x| {
            site_with_chapter(&format!(
                "```rust,experiment\nstd::thread::sleep(std::time::Duration::from_millis(500));\nprintln!(\"site value {x}\");\nlab.value(\"x\", {x});\n```\n\n[0.0]{{=x ±9}}\n"
            ))
        })
        .collect();
    let runs: Vec<Run> = std::thread::scope(|scope| {
        let handles: Vec<_> = sites.iter().map(|s| scope.spawn(|| build(s))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for ((site, run), x) in sites.iter().zip(&runs).zip(["1.5", "2.5"]) {
        assert_eq!(run.code, 0, "{}", run.stderr);
        let page = site.read("public/a/index.html");
        assert!(page.contains(&format!("site value {x}")), "{page}");
    }
}

#[test]
fn the_runner_times_each_block_applies_the_site_limit_and_reports_how_a_chapter_died() {
    let site = Site::fixture("runner");
    let run = build(&site);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let errors = run.error_lines();
    assert_eq!(
        errors,
        [
            // The site's `[lab] timeout = 1` applies to a block without `timeout=` in its fence.
            "content/02-site-limit.md:8:1: error: experiment block 1 did not finish within 1 s",
            // A signal other than running out of memory is named, at the last block that started.
            "content/03-abort.md:10:1: error: experiment block 2 was killed (signal 6)",
            // Exiting without results is an error at the block that exited, with its code.
            "content/04-exit.md:10:1: error: experiment block 2 exited with code 1 without reporting results",
        ],
        "{}",
        run.stderr
    );
    // Two 1.2 s blocks under `timeout=2` both passed (each block's clock starts with the
    // block, and 2.4 s is past the limit): without the broken chapters, the site builds from
    // that cached run.
    for broken in ["02-site-limit", "03-abort", "04-exit"] {
        std::fs::remove_file(site.path(&format!("content/{broken}.md"))).unwrap();
    }
    let run = build(&site);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("0 run, 1 cached"), "{}", run.stdout);
    let page = site.read("public/restart/index.html");
    assert!(page.contains("title=\"实验值 2.4；"), "{page}");
}
