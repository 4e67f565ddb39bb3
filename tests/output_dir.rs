//! `--out` may not swallow the sources: `build` and `serve` replace their output directory
//! whole, so an output that is the site root, contains it, lies in its sources or cache, is a
//! file, or holds someone else's files is refused with exit 2 before anything moves.
//!
//! Each test copies a fixture without experiment blocks into `TMP/site` (so the staging
//! directory a build makes next to its output stays inside `TMP`, where the test can look for
//! leftovers) and checks that every source file is byte for byte as it was.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::Site;

/// How long a refused `serve` may take to exit (debug build, shared cores).
const PATIENCE: Duration = Duration::from_secs(30);

/// A fixture copied to `TMP/site`, with a README and a `.git` beside the sources.
struct Sandbox {
    tmp: Site,
}

/// What a command printed and returned, with the site root shown as `[SITE]`.
struct Run {
    code: Option<i32>,
    stderr: String,
}

impl Sandbox {
    fn new(fixture: &str) -> Sandbox {
        let tmp = Site::fixture(fixture);
        let site = tmp.path("site");
        std::fs::create_dir(&site).expect("mkdir site");
        for entry in std::fs::read_dir(tmp.root()).expect("list the copy") {
            let entry = entry.expect("entry");
            if entry.path() != site {
                std::fs::rename(entry.path(), site.join(entry.file_name())).expect("move");
            }
        }
        let sandbox = Sandbox { tmp };
        std::fs::create_dir(sandbox.root().join(".git")).expect("mkdir .git");
        sandbox.write(".git/HEAD", "ref: refs/heads/main\n");
        sandbox.write("README.md", "# my site\n");
        sandbox
    }

    fn root(&self) -> PathBuf {
        self.tmp.path("site")
    }

    fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.root().join(rel), text).expect("write");
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_attnbook"));
        command.arg("--root").arg(self.root()).args(args);
        command
    }

    fn run(&self, args: &[&str]) -> Run {
        let output = self.command(args).output().expect("run attnbook");
        self.outcome(&output)
    }

    fn outcome(&self, output: &Output) -> Run {
        let root = self.root().display().to_string();
        Run {
            code: output.status.code(),
            stderr: String::from_utf8_lossy(&output.stderr).replace(&root, "[SITE]"),
        }
    }

    /// Every file under the site root except the cache (which a build may write), with its bytes.
    fn sources(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let root = self.root();
        walkdir::WalkDir::new(&root)
            .into_iter()
            .filter_entry(|e| e.file_name() != ".attnbook")
            .map(|e| e.expect("walk the site"))
            .filter(|e| e.file_type().is_file())
            .map(|e| {
                let rel = e.path().strip_prefix(&root).expect("inside").to_path_buf();
                (rel, std::fs::read(e.path()).expect("read"))
            })
            .collect()
    }

    /// Staging or renamed-away outputs anywhere in the sandbox.
    fn leftovers(&self) -> Vec<PathBuf> {
        walkdir::WalkDir::new(self.tmp.root())
            .into_iter()
            .map(|e| e.expect("walk the sandbox"))
            .filter(|e| {
                let name = e.file_name().to_string_lossy();
                name.starts_with(".attnbook-out-") || name.starts_with(".attnbook-old-")
            })
            .map(|e| e.path().to_path_buf())
            .collect()
    }

    /// Runs `args`, expects a refusal naming `reason`, and checks that nothing moved.
    fn assert_refused(&self, args: &[&str], reason: &str) -> Run {
        let before = self.sources();
        let spare = self.root().join(".attnbook/spare-output");
        let recycled = spare.exists();
        let run = self.run(args);
        self.assert_refusal(&run, args, reason);
        assert_eq!(self.sources(), before, "{args:?} changed the sources");
        assert_eq!(spare.exists(), recycled, "{args:?} recycled an output");
        run
    }

    fn assert_refusal(&self, run: &Run, args: &[&str], reason: &str) {
        assert_eq!(run.code, Some(2), "{args:?}:\n{}", run.stderr);
        assert!(
            run.stderr.contains("as the output directory: ") && run.stderr.contains(reason),
            "{args:?} should say `{reason}`:\n{}",
            run.stderr
        );
        assert!(
            run.stderr.contains("help: "),
            "{args:?}: no help\n{}",
            run.stderr
        );
        assert_eq!(self.leftovers(), Vec::<PathBuf>::new(), "{args:?}");
    }
}

#[test]
fn the_site_root_is_refused_however_it_is_written() {
    let sandbox = Sandbox::new("serve-plain");
    let root = sandbox.root().display().to_string();
    let up = format!(
        "../{}",
        sandbox.root().file_name().unwrap().to_string_lossy()
    );
    for out in [root.as_str(), ".", "./", "content/..", up.as_str()] {
        sandbox.assert_refused(&["build", "--out", out], "it is the site root");
        sandbox.assert_refused(&["build", "--force", "--out", out], "it is the site root");
    }
}

#[test]
fn a_link_to_the_site_root_is_refused() {
    let sandbox = Sandbox::new("serve-plain");
    std::os::unix::fs::symlink(sandbox.root(), sandbox.root().join("public")).expect("symlink");
    sandbox.assert_refused(&["build"], "it is the site root");
}

#[test]
fn a_directory_containing_the_site_root_is_refused() {
    let sandbox = Sandbox::new("serve-plain");
    let parent = sandbox.root().parent().unwrap().display().to_string();
    for out in ["..", parent.as_str(), "/"] {
        let run = sandbox.assert_refused(
            &["build", "--force", "--out", out],
            "contains the site root",
        );
        assert!(
            run.stderr.contains("contains the site root [SITE]\n"),
            "names the root:\n{}",
            run.stderr
        );
    }
}

#[test]
fn the_sources_and_the_cache_are_refused() {
    let sandbox = Sandbox::new("images");
    let cases = [
        ("content", "inside the site's `content/`"),
        ("content/new", "inside the site's `content/`"),
        ("static", "inside the site's `static/`"),
        ("static/img/out", "inside the site's `static/`"),
        ("templates/out", "inside the site's `templates/`"),
        (".attnbook", "inside the site's `.attnbook/`"),
        (".attnbook/spare-output", "inside the site's `.attnbook/`"),
    ];
    for (out, reason) in cases {
        sandbox.assert_refused(&["build", "--force", "--out", out], reason);
        assert!(!sandbox.root().join("content/new").exists());
    }
}

#[test]
fn an_existing_file_is_refused() {
    let sandbox = Sandbox::new("serve-plain");
    for out in ["README.md", "site.toml", "content/01-one.md"] {
        let reason = if out.starts_with("content") {
            "inside the site's `content/`"
        } else {
            "it is a file"
        };
        sandbox.assert_refused(&["build", "--force", "--out", out], reason);
    }
    // Under a file the output cannot be made at all: the write says so, and nothing moves.
    let before = sandbox.sources();
    let run = sandbox.run(&["build", "--out", "README.md/out"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr.contains("cannot create the parent of"),
        "{}",
        run.stderr
    );
    assert_eq!(sandbox.sources(), before);
    assert_eq!(sandbox.leftovers(), Vec::<PathBuf>::new());
}

#[test]
fn a_refusal_is_listed_with_the_other_problems() {
    let sandbox = Sandbox::new("serve-plain");
    sandbox.write(
        "content/03-bad.md",
        "+++\ntitle = \"x\"\nnumber = 3\ncolour = 1\n+++\n",
    );
    let run = sandbox.assert_refused(&["build", "--out", "."], "it is the site root");
    assert!(
        run.stderr.contains("content/03-bad.md:4:1"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_foreign_directory_is_replaced_only_with_force() {
    let sandbox = Sandbox::new("serve-plain");
    std::fs::create_dir(sandbox.root().join("docs")).expect("mkdir");
    sandbox.write("docs/notes.txt", "my notes\n");
    let run = sandbox.assert_refused(
        &["build", "--out", "docs"],
        "not empty, and no attnbook build made it",
    );
    assert!(run.stderr.contains("--force"), "{}", run.stderr);

    let run = sandbox.run(&["build", "--out", "docs", "--force"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(sandbox.root().join("docs/index.html").is_file());
    assert!(sandbox.root().join("docs/.attnbook-output").is_file());
    assert!(!sandbox.root().join("docs/notes.txt").exists());
    assert_eq!(sandbox.leftovers(), Vec::<PathBuf>::new());
}

#[test]
fn an_empty_directory_and_an_earlier_build_are_replaced() {
    let sandbox = Sandbox::new("serve-plain");
    std::fs::create_dir(sandbox.root().join("public")).expect("mkdir");
    for round in ["empty", "marked"] {
        let run = sandbox.run(&["build"]);
        assert_eq!(run.code, Some(0), "{round}: {}", run.stderr);
        let marker = std::fs::read_to_string(sandbox.root().join("public/.attnbook-output"));
        assert!(marker.expect("the marker").contains("attnbook"), "{round}");
    }
    assert_eq!(sandbox.leftovers(), Vec::<PathBuf>::new());
}

#[test]
fn an_output_from_before_the_marker_is_recognised() {
    let sandbox = Sandbox::new("serve-plain");
    let old = sandbox.root().join("old");
    std::fs::create_dir(&old).expect("mkdir");
    for file in ["index.html", ".nojekyll", "search-index.json", "stale.html"] {
        std::fs::write(old.join(file), "old").expect("write");
    }
    let run = sandbox.run(&["build", "--out", "old"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(old.join(".attnbook-output").is_file());
    assert!(!old.join("stale.html").exists());

    // Without the search index, it could be anyone's site.
    let other = sandbox.root().join("other");
    std::fs::create_dir(&other).expect("mkdir");
    for file in ["index.html", ".nojekyll"] {
        std::fs::write(other.join(file), "mine").expect("write");
    }
    sandbox.assert_refused(&["build", "--out", "other"], "no attnbook build made it");
}

/// Starts `serve` and waits for it to exit on its own; a server that keeps running fails.
fn serve_until_exit(sandbox: &Sandbox, args: &[&str]) -> Run {
    let mut child = sandbox
        .command(&[&["serve", "--port", "0"], args].concat())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start attnbook serve");
    let started = Instant::now();
    while child.try_wait().expect("poll serve").is_none() {
        if started.elapsed() > PATIENCE {
            let _ = child.kill();
            let output = child.wait_with_output().expect("reap serve");
            panic!(
                "serve {args:?} kept running:\n{}",
                sandbox.outcome(&output).stderr
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    sandbox.outcome(&child.wait_with_output().expect("serve output"))
}

#[test]
fn serve_refuses_the_site_root_before_serving() {
    let sandbox = Sandbox::new("serve-plain");
    let before = sandbox.sources();
    let root = sandbox.root().display().to_string();
    for out in [root.as_str(), "."] {
        let args = ["--out", out, "--force"];
        let run = serve_until_exit(&sandbox, &args);
        sandbox.assert_refusal(&run, &args, "it is the site root");
        assert!(!run.stderr.contains("serving"), "{}", run.stderr);
    }
    assert_eq!(sandbox.sources(), before);
    assert!(sandbox.root().join(".git/HEAD").is_file());
}

#[test]
fn serve_refuses_a_foreign_directory_without_force() {
    let sandbox = Sandbox::new("serve-plain");
    std::fs::create_dir(sandbox.root().join("docs")).expect("mkdir");
    sandbox.write("docs/notes.txt", "my notes\n");
    let before = sandbox.sources();
    let args = ["--out", "docs"];
    let run = serve_until_exit(&sandbox, &args);
    sandbox.assert_refusal(&run, &args, "no attnbook build made it");
    assert_eq!(sandbox.sources(), before);
}
