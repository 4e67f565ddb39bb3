//! Issue 16 item 4, "take the experiments home": with `repository` in site.toml each chapter
//! page offers its experiments as a standalone Cargo project pinned to a commit. The test
//! takes one home the way a reader would: it snapshots this repository into a temporary git
//! repository, builds a fixture site against it, unpacks the download, builds it offline and
//! locked through `git = "file://..."`, runs it, and compares every recorded value with the
//! build's, bit for bit. One nested release build of the lab crates: the slow part.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Site;
use lab_protocol::ChapterResults;

const SLUG: &str = "home";
const ARCHIVE: &str = "public/home/home-experiments.tar.gz";

#[test]
fn a_downloaded_project_builds_offline_and_reproduces_every_value_bit_for_bit() {
    let repo = tempfile::tempdir().unwrap();
    snapshot_repository(repo.path());
    let site = Site::fixture("take-home");
    let lab_crate = repo.path().join("crates/lab");
    let config = site.read("site.toml");
    let with_lab = format!(
        "{config}\n[lab]\ndata = [\"data/*.txt\"]\ncrate_path = {:?}\n",
        lab_crate.display().to_string()
    );
    site.write("site.toml", &with_lab);

    // Without `repository`: no download, no link.
    let run = site.run(&["build", "--out", "public"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!site.path(ARCHIVE).exists());
    assert!(
        !site
            .read("public/home/index.html")
            .contains("experiments.tar.gz")
    );

    let url = format!("file://{}", repo.path().display());
    site.write("site.toml", &format!("repository = {url:?}\n{with_lab}"));
    let run = site.run(&["build", "--out", "public"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = site.read("public/home/index.html");
    assert!(
        page.contains("href=\"/series/home/home-experiments.tar.gz\""),
        "the chapter page links its download:\n{page}"
    );

    let home = tempfile::tempdir().unwrap();
    let project = unpack(&site.path(ARCHIVE), home.path());
    let commit = git(repo.path(), &["rev-parse", "HEAD"]);
    let manifest = std::fs::read_to_string(project.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!("lab = {{ git = {url:?}, rev = \"{commit}\" }}")),
        "{manifest}"
    );
    let program = std::fs::read_to_string(project.join("src/main.rs")).unwrap();
    assert!(
        program.contains("let n = 6;"),
        "hidden lines are kept:\n{program}"
    );

    // The declared data file travels at its site-relative path, which the program reads from
    // the project's directory (redteam-3 D8).
    assert_eq!(
        std::fs::read_to_string(project.join("data/scale.txt")).unwrap(),
        "1.25\n"
    );

    let stdout = run_offline(&project);
    assert!(
        stdout.contains("weights = [") && stdout.contains("entropy = "),
        "{stdout}"
    );
    let built = results(&site.path(&format!(".attnbook/run/results-{SLUG}/results.json")));
    let taken_home = results(&project.join("results.json"));
    assert_same_bits(&built, &taken_home);
    assert!(
        taken_home
            .values
            .iter()
            .any(|v| v.name == "scale" && v.data[0].0 == 1.25)
    );

    // A change beside the lab crate that is not committed: the download would not hold the code
    // that ran, so none is offered, and the build says why.
    std::fs::write(repo.path().join("crates/lab/src/extra.rs"), "").unwrap();
    let run = site.run(&["build", "--out", "public"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("warning: no experiment downloads")
            && run.stderr.contains("uncommitted changes"),
        "{}",
        run.stderr
    );
    assert!(!site.path(ARCHIVE).exists());
    assert!(
        !site
            .read("public/home/index.html")
            .contains("experiments.tar.gz")
    );
}

/// This repository's files as they are now (uncommitted edits included), committed in a fresh
/// git repository: the "remote" the download's `git = "file://..."` fetches.
fn snapshot_repository(dest: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = git(source, &["ls-files", "-co", "--exclude-standard"]);
    for rel in files.lines() {
        let from = source.join(rel);
        if !from.is_file() {
            continue; // deleted in the work tree
        }
        let to = dest.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&from, &to).unwrap();
    }
    git(dest, &["init", "-q"]);
    git(dest, &["add", "-A"]);
    git(
        dest,
        &[
            "-c",
            "user.name=test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
            "commit",
            "-q",
            "-m",
            "snapshot",
        ],
    );
}

fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// Unpacks the archive as a reader would and returns the project directory it holds.
fn unpack(archive: &Path, into: &Path) -> PathBuf {
    let file = std::fs::File::open(archive).unwrap();
    tar::Archive::new(flate2::read::GzDecoder::new(file))
        .unpack(into)
        .unwrap();
    let dirs: Vec<PathBuf> = std::fs::read_dir(into)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1, "one project directory: {dirs:?}");
    dirs[0].clone()
}

/// `cargo fetch --locked` (the git dependency, from the local file:// repository; registry
/// crates are already in the cache), then `cargo run --release --offline --locked`: the lock
/// file shipped with the project resolves as it is. Returns what the run printed.
fn run_offline(project: &Path) -> String {
    // A CARGO_HOME of its own, so the temporary repository's checkouts are not left in the
    // user's; the registry (crates already downloaded) is the user's.
    let cargo_home = tempfile::tempdir().unwrap();
    let user_home = std::env::var_os("CARGO_HOME").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"),
        PathBuf::from,
    );
    std::os::unix::fs::symlink(
        user_home.join("registry"),
        cargo_home.path().join("registry"),
    )
    .unwrap();
    for config in ["config.toml", "config"] {
        if user_home.join(config).is_file() {
            std::fs::copy(user_home.join(config), cargo_home.path().join(config)).unwrap();
        }
    }
    let target = std::env::var_os("ATTNBOOK_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
        PathBuf::from,
    );
    let cargo = |args: &[&str], offline: bool| {
        let mut command = Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()));
        command
            .args(args)
            .current_dir(project)
            .env("CARGO_HOME", cargo_home.path())
            .env("CARGO_TARGET_DIR", &target)
            .env_remove("CARGO_PRIMARY_PACKAGE");
        if offline {
            command.env("CARGO_NET_OFFLINE", "true");
        }
        let output = command.output().unwrap();
        assert!(
            output.status.success(),
            "cargo {args:?} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    cargo(&["fetch", "--locked"], false);
    cargo(&["run", "--release", "--offline", "--locked"], true)
}

fn results(path: &Path) -> ChapterResults {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Every value with the same name, shape and bits; tables and figures equal.
fn assert_same_bits(built: &ChapterResults, taken_home: &ChapterResults) {
    assert_eq!(
        (built.seed, &built.chapter),
        (taken_home.seed, &taken_home.chapter)
    );
    assert_eq!(built.values.len(), taken_home.values.len());
    assert!(
        built.values.len() >= 5,
        "the fixture records scalars and vectors"
    );
    for (a, b) in built.values.iter().zip(&taken_home.values) {
        assert_eq!((&a.name, &a.shape), (&b.name, &b.shape));
        let bits =
            |v: &lab_protocol::Value| v.data.iter().map(|n| n.0.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(a), bits(b), "value `{}` differs", a.name);
    }
    assert_eq!(built.tables, taken_home.tables);
    assert_eq!(built.figures, taken_home.figures);
    assert_eq!(taken_home.panic, None);
}
