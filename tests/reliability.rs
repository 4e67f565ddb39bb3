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
    let footers = regex::bytes::Regex::new(
        r#"<footer class="run-meta">[^<]*<time[^>]*>[^<]*</time>[^<]*</footer>"#,
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

#[test]
fn two_builds_at_once_wait_for_each_other_and_both_succeed() {
    let site = Site::fixture("slow");
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_attnbook"))
            .arg("--root")
            .arg(site.root())
            .arg("build")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success() && b.status.success());
    let stderr = format!(
        "{}{}",
        String::from_utf8_lossy(&a.stderr),
        String::from_utf8_lossy(&b.stderr)
    );
    assert!(
        stderr.contains("another attnbook command is running on this site; waiting"),
        "{stderr}"
    );
    assert!(site.read("public/a/index.html").contains(">1</span>"));
}

#[test]
fn an_interrupted_build_keeps_the_old_output_and_leaves_no_litter() {
    let site = Site::fixture("slow");
    std::fs::create_dir_all(site.path("public")).unwrap();
    site.write("public/index.html", "earlier site");
    // What every build writes: the output guard lets a build replace only an earlier build.
    site.write("public/.attnbook-output", "written by attnbook\n");
    let child = Command::new(env!("CARGO_BIN_EXE_attnbook"))
        .arg("--root")
        .arg(site.root())
        .arg("build")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the experiment is running, then press Ctrl-C.
    let started = Instant::now();
    while !site.path(".attnbook/run/sandbox-a").exists() {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the experiment never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
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
