//! Shared helpers for the integration tests: copy a fixture site into a temporary directory and
//! run the real `attnbook` binary on it, the way a user would.

#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fixture site copied into a temporary directory.
pub(crate) struct Site {
    dir: tempfile::TempDir,
}

/// What a command printed and returned.
pub(crate) struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The lines of stderr that report an error at a place (`path:line:col: error ...`).
    pub(crate) fn error_lines(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.contains(": error"))
            .collect()
    }
}

impl Site {
    /// Copies `tests/fixtures/<name>`.
    pub(crate) fn fixture(name: &str) -> Site {
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        let dir = tempfile::tempdir().expect("temp dir");
        copy_dir(&src, dir.path());
        Site { dir }
    }

    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("cannot read {rel}: {e}"))
    }

    pub(crate) fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.path(rel), text).expect("write");
    }

    /// Runs `attnbook --root SITE args...`.
    pub(crate) fn run(&self, args: &[&str]) -> Run {
        let output = self.command(args).output().expect("run attnbook");
        self.finish(&output)
    }

    /// [`Site::run`] with these environment variables set.
    pub(crate) fn run_with_env(&self, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Run {
        let mut command = self.command(args);
        command.envs(env.iter().copied());
        let output = command.output().expect("run attnbook");
        self.finish(&output)
    }

    /// [`Site::run`], failing the test when the command has not ended within `limit`: a
    /// command that waits for something it should have stopped would otherwise hang the suite.
    pub(crate) fn run_within(&self, args: &[&str], limit: std::time::Duration) -> Run {
        let child = self
            .command(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run attnbook");
        let pid = child.id();
        let (sender, ended) = std::sync::mpsc::channel();
        // Output is read while waiting, so a full pipe cannot stall the command.
        std::thread::spawn(move || sender.send(child.wait_with_output()));
        match ended.recv_timeout(limit) {
            Ok(output) => self.finish(&output.expect("wait for attnbook")),
            Err(_) => {
                // SAFETY: sending a signal to our own child has no memory-safety preconditions.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
                panic!("`attnbook {}` did not end within {limit:?}", args.join(" "));
            }
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_attnbook"));
        command.arg("--root").arg(self.root()).args(args);
        command
    }

    fn finish(&self, output: &std::process::Output) -> Run {
        let root = self.root().display().to_string();
        let clean = |bytes: &[u8]| String::from_utf8_lossy(bytes).replace(&root, "[ROOT]");
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: clean(&output.stdout),
            stderr: clean(&output.stderr),
        }
    }
}

/// Runs `node -e PROGRAM ARGS...` and parses what it prints as JSON; `None` when Node is not
/// installed and this is not CI (CI has Node for the browser tests: there a missing node fails).
pub(crate) fn node_json(program: &str, args: &[&std::ffi::OsStr]) -> Option<serde_json::Value> {
    let output = match Command::new("node")
        .arg("-e")
        .arg(program)
        .args(args)
        .output()
    {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && std::env::var_os("CI").is_none() => {
            eprintln!("skipped: node is not installed");
            return None;
        }
        Err(e) => panic!("cannot run node: {e}"),
    };
    assert!(
        output.status.success(),
        "node failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(serde_json::from_slice(&output.stdout).expect("JSON from node"))
}

fn copy_dir(src: &Path, dst: &Path) {
    for entry in walkdir::WalkDir::new(src) {
        let entry = entry.expect("walk fixture");
        let rel = entry.path().strip_prefix(src).expect("prefix");
        let target = dst.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// The series as a fresh clone has it (`content/`, `templates/`, `static/`, `site.toml`), with
/// the experiments' results of an earlier build of this checkout if there was one (`.ci/run`
/// builds the series before the tests) and no render cache.
pub(crate) fn copy_series(to: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["content", "templates", "static"] {
        if root.join(dir).is_dir() {
            copy_dir(&root.join(dir), &to.join(dir));
        }
    }
    std::fs::copy(root.join("site.toml"), to.join("site.toml")).expect("copy site.toml");
    let cache = root.join(".attnbook/cache");
    if cache.is_dir() {
        // Results are files at the top (`SLUG.json`, `SLUG~name=value.json`), archives a
        // directory: everything but the render caches.
        let into = to.join(".attnbook/cache");
        std::fs::create_dir_all(&into).expect("create the cache");
        for entry in std::fs::read_dir(&cache).expect("read the cache") {
            let entry = entry.expect("cache entry");
            let kind = entry.file_type().expect("file type");
            if entry.file_name() == "render" {
                continue;
            }
            if kind.is_dir() {
                copy_dir(&entry.path(), &into.join(entry.file_name()));
            } else if kind.is_file() {
                std::fs::copy(entry.path(), into.join(entry.file_name())).expect("copy a result");
            }
        }
    }
}

/// Every file under `dir` with its bytes, by relative path (for comparing two outputs).
pub(crate) fn tree(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.expect("walk the output"))
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap().to_path_buf();
            (rel, std::fs::read(e.path()).unwrap())
        })
        .collect()
}
