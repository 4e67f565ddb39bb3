//! Repeatable builds, concurrent builds and interrupted builds: nothing lost, nothing differs.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Site;

fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
            (rel, std::fs::read(e.path()).unwrap())
        })
        .collect()
}

#[test]
fn two_builds_of_the_same_sources_are_byte_identical() {
    let site = Site::fixture("basic");
    assert_eq!(site.run(&["build", "--out", "one"]).code, 0);
    assert_eq!(site.run(&["build", "--out", "two"]).code, 0);
    let (one, two) = (tree(&site.path("one")), tree(&site.path("two")));
    assert!(one.len() > 10);
    assert_eq!(
        one.keys().collect::<Vec<_>>(),
        two.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &one {
        assert!(two[name] == *bytes, "{name} differs between two builds");
    }
}

/// Two runs of the experiments give the same site: the experiments are seeded and the basic
/// fixture records no timing (`lab.bench` values are declared volatile). Only the run metadata
/// footer (when the run happened and how long it took) is masked.
#[test]
fn two_reruns_of_the_experiments_are_byte_identical() {
    let site = Site::fixture("basic");
    assert!(!site.read("content/01-first.md").contains("lab.bench"));
    assert_eq!(site.run(&["build", "--rerun", "--out", "one"]).code, 0);
    assert_eq!(site.run(&["build", "--rerun", "--out", "two"]).code, 0);
    let (one, two) = (tree(&site.path("one")), tree(&site.path("two")));
    assert!(one.len() > 10);
    assert_eq!(
        one.keys().collect::<Vec<_>>(),
        two.keys().collect::<Vec<_>>()
    );
    // The run metadata (a chapter's footer, a chapter's line on the verification page) says
    // when the experiments ran: the one part of a page that differs between two runs.
    let footers = regex::bytes::Regex::new(
        r#"<footer class="run-meta">[^<]*<time[^>]*>[^<]*</time>[^<]*(<a [^>]*>[^<]*</a>)?</footer>|<p class="run-meta">[^<]*<time[^>]*>[^<]*</time>[^<]*</p>"#,
    )
    .unwrap();
    let mut masked = 0;
    for (name, bytes) in &one {
        let a = footers.replace_all(bytes, &b"[run metadata]"[..]);
        let b = footers.replace_all(&two[name], &b"[run metadata]"[..]);
        masked += usize::from(a.len() != bytes.len());
        assert!(a == b, "{name} differs between two runs of the experiments");
    }
    assert!(masked > 0, "the run metadata footer was not found to mask");
}

/// A chapter whose block runs until the test lets it go: it creates `started` in its sandbox
/// (its working directory), then waits for `go` there, for two minutes at most. Tests wait on
/// these files instead of guessing how long a build takes on a loaded machine.
const GATED_CHAPTER: &str = r#"+++
title = "A"
number = 1
+++

```rust,experiment,timeout=300
let here = std::env::current_dir().unwrap();
std::fs::write(here.join("started"), "").unwrap();
let mut steps = 0;
while !here.join("go").exists() && steps < 6000 {
    std::thread::sleep(std::time::Duration::from_millis(20));
    steps += 1;
}
lab.value("x", 1.0);
```

[1]{=x}
"#;

/// The slow fixture with its chapter replaced by [`GATED_CHAPTER`].
fn gated_site() -> Site {
    let site = Site::fixture("slow");
    site.write("content/01-a.md", GATED_CHAPTER);
    site
}

/// Waits until `path` exists; the limit is only there so that a broken build fails the test
/// instead of hanging it.
fn wait_for(path: &Path, what: &str) {
    let started = Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "{what} never happened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn spawn_build(site: &Site) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_attnbook"))
        .arg("--root")
        .arg(site.root())
        .arg("build")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The second build starts while the first is inside its experiment, says it waits, and goes
/// on (from the cache) once the first is let go.
#[test]
fn two_builds_at_once_wait_for_each_other_and_both_succeed() {
    use std::io::BufRead;
    let site = gated_site();
    let sandbox = site.path(".attnbook/run/sandbox-a");
    let first = spawn_build(&site);
    wait_for(&sandbox.join("started"), "the first build's experiment");
    let mut second = spawn_build(&site);
    let mut stderr = std::io::BufReader::new(second.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("another attnbook command is running on this site; waiting") {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the second build ended without waiting: {said}"
        );
        said.push_str(&line);
    }
    std::fs::write(sandbox.join("go"), "").unwrap();
    let first = first.wait_with_output().unwrap();
    let second_status = second.wait().unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(second_status.success(), "{said}");
    assert!(site.read("public/a/index.html").contains(">1</a>"));
}

#[test]
fn an_interrupted_build_keeps_the_old_output_and_leaves_no_litter() {
    let site = gated_site();
    std::fs::create_dir_all(site.path("public")).unwrap();
    site.write("public/index.html", "earlier site");
    // What every build writes: the output guard lets a build replace only an earlier build.
    site.write("public/.attnbook-output", "written by attnbook\n");
    let child = spawn_build(&site);
    // Press Ctrl-C while the experiment is running: it waits for a `go` that never comes.
    wait_for(
        &site.path(".attnbook/run/sandbox-a/started"),
        "the experiment's start",
    );
    // SAFETY: sending a signal to our own child has no memory-safety preconditions.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    assert!(String::from_utf8_lossy(&output.stderr).contains("interrupted: nothing was written"));
    assert_eq!(site.read("public/index.html"), "earlier site");
    let litter: Vec<String> = std::fs::read_dir(site.root())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(".attnbook-"))
        .collect();
    assert!(litter.is_empty(), "{litter:?}");
}

#[test]
fn an_unwritable_output_directory_is_a_clear_error() {
    let site = Site::fixture("basic");
    site.write("blocker", "a file where the output's parent should be");
    let run = site.run(&["build", "--out", "blocker/public"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("cannot create the parent of"),
        "{}",
        run.stderr
    );
}
