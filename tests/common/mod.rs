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
        let output = Command::new(env!("CARGO_BIN_EXE_attnbook"))
            .arg("--root")
            .arg(self.root())
            .args(args)
            .output()
            .expect("run attnbook");
        let root = self.root().display().to_string();
        let clean = |bytes: &[u8]| String::from_utf8_lossy(bytes).replace(&root, "[ROOT]");
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: clean(&output.stdout),
            stderr: clean(&output.stderr),
        }
    }
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
