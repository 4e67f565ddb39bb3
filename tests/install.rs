//! A binary installed with `cargo install --path` from a copy of the repository, the copy then
//! deleted, runs `init` and builds and verifies the new site: the experiment runtime travels in
//! the binary and is written to the cache directory (issue 26.1).
//!
//! Slow: a real `cargo install`. To keep it lean it installs the debug profile (`--debug`) into
//! a target directory of its own that starts from hard links to this build's compiled registry
//! crates, so only attnbook itself compiles; the experiments compile into a persistent
//! directory beside it, so their dependencies compile once. About a minute when warm.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// This test build's target directory (`.../target`, holding `debug/`).
fn target_dir() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_attnbook"));
    exe.parent().and_then(Path::parent).unwrap().to_path_buf()
}

/// Copies `from` into `to`, leaving out what a clone does not have (build output, caches, git).
fn copy_repo(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from).into_iter().filter_entry(|e| {
        let name = e.file_name().to_string_lossy();
        e.depth() == 0
            || !(name == "target"
                || name == ".git"
                || name == "public"
                || name == ".attnbook"
                || name == "node_modules"
                || (e.depth() == 1 && (name == "bench" || name == "fuzz")))
    }) {
        let entry = entry.unwrap();
        let dest = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// Links this build's compiled registry crates into `install/debug`, so `cargo install --debug`
/// finds them fresh (same profile, same flags) and compiles only the workspace's packages.
fn seed_install_target(install: &Path) {
    let from = target_dir().join("debug");
    let ours = [
        "attnbook",
        "lab",
        "attention",
        "lab_protocol",
        "lab-protocol",
    ];
    let is_ours = |name: &str| {
        ours.iter().any(|p| {
            name.strip_prefix(p)
                .or_else(|| name.strip_prefix("lib").and_then(|n| n.strip_prefix(p)))
                .is_some_and(|rest| rest.starts_with('-'))
        })
    };
    for sub in ["deps", "build", ".fingerprint"] {
        let Ok(entries) = std::fs::read_dir(from.join(sub)) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let file_type = entry.file_type().unwrap();
            let keep = if sub == "deps" {
                file_type.is_file()
                    && !is_ours(&name)
                    && [".rlib", ".rmeta", ".d", ".so"]
                        .iter()
                        .any(|x| name.ends_with(x))
            } else {
                !is_ours(&name)
            };
            if keep {
                let _ = Command::new("cp")
                    .args(["-al", "--no-clobber"])
                    .arg(entry.path())
                    .arg(install.join("debug").join(sub))
                    .status();
            }
        }
    }
}

#[test]
fn an_installed_binary_builds_and_verifies_a_site_without_its_sources() {
    let started = Instant::now();
    let work = tempfile::tempdir().unwrap();
    let copy = work.path().join("attnbook-copy");
    copy_repo(Path::new(env!("CARGO_MANIFEST_DIR")), &copy);
    let install_target = target_dir().join("install-test");
    if !install_target.join("debug").exists() {
        for sub in ["deps", "build", ".fingerprint"] {
            std::fs::create_dir_all(install_target.join("debug").join(sub)).unwrap();
        }
        seed_install_target(&install_target);
    }
    let root = work.path().join("root");
    let cargo = std::env::var_os("CARGO").unwrap_or("cargo".into());
    let install = Command::new(&cargo)
        .args(["install", "--debug", "--locked", "--offline", "--path"])
        .arg(&copy)
        .arg("--root")
        .arg(&root)
        .env("CARGO_TARGET_DIR", &install_target)
        .env_remove("CARGO_PRIMARY_PACKAGE")
        .output()
        .unwrap();
    assert!(
        install.status.success(),
        "cargo install failed:\n{}",
        String::from_utf8_lossy(&install.stderr)
    );
    let installed = started.elapsed();
    std::fs::remove_dir_all(&copy).unwrap();
    let binary = root.join("bin").join("attnbook");

    // A home of its own: its cache directory is where the runtime must go.
    let home = work.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let user_home = PathBuf::from(std::env::var_os("HOME").unwrap());
    let cargo_home =
        std::env::var_os("CARGO_HOME").map_or_else(|| user_home.join(".cargo"), PathBuf::from);
    let rustup_home =
        std::env::var_os("RUSTUP_HOME").map_or_else(|| user_home.join(".rustup"), PathBuf::from);
    let run = |args: &[&str]| {
        let output = Command::new(&binary)
            .args(args)
            .current_dir(work.path())
            .env("HOME", &home)
            .env_remove("XDG_CACHE_HOME")
            .env_remove("ATTNBOOK_CACHE_DIR")
            .env_remove("CARGO_TARGET_DIR")
            .env("CARGO_HOME", &cargo_home)
            .env("RUSTUP_HOME", &rustup_home)
            .env("CARGO_NET_OFFLINE", "true")
            // Persistent, so the experiments' dependencies compile once for every run of this
            // test (the runtime's own crates compile again: their path is new each time).
            .env("ATTNBOOK_TARGET_DIR", install_target.join("lab"))
            .env_remove("CARGO")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(output.status.success(), "attnbook {args:?} failed:\n{text}");
        text
    };
    for language in ["en", "zh-CN"] {
        let site = work.path().join(format!("book-{language}"));
        let site = site.to_str().unwrap();
        run(&["init", site, "--language", language]);
        run(&["--root", site, "build", "--strict"]);
        let verified = run(&["--root", site, "verify"]);
        assert!(verified.contains("0 drifted"), "{verified}");
        let manifest =
            std::fs::read_to_string(Path::new(site).join(".attnbook/lab/Cargo.toml")).unwrap();
        let cache = home.join(".cache/attnbook/runtime");
        assert!(
            manifest.contains(&cache.display().to_string()),
            "the experiments link the runtime in the cache directory:\n{manifest}"
        );
    }
    let runtimes: Vec<_> = std::fs::read_dir(home.join(".cache/attnbook/runtime"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(runtimes.len(), 1, "written once: {runtimes:?}");
    assert!(
        runtimes[0].starts_with(env!("CARGO_PKG_VERSION")),
        "{runtimes:?}"
    );
    eprintln!(
        "install: {:.1} s, install + two sites built and verified: {:.1} s",
        installed.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}
