//! Issue 28: a build that finds nothing changed since the last one checks that and stops
//! (src/site/unchanged.rs). What it checks is the whole class of what can change a build's
//! output: any file under the site root, the output tree itself, the build's options, the
//! environment, the toolchain; and a build that had something to say is never skipped.

mod common;

use std::ffi::OsStr;

use common::{Run, Site, tree};

const UNCHANGED: &str = "nothing changed since the last build";

fn build(site: &Site, args: &[&str]) -> Run {
    let mut all = vec!["build"];
    all.extend(args);
    let run = site.run(&all);
    assert_eq!(run.code, 0, "{}", run.stderr);
    run
}

/// Builds and asserts the build was a full one (`full`) or found nothing changed.
fn build_expecting(site: &Site, args: &[&str], full: bool, after: &str) -> Run {
    let run = build(site, args);
    assert_eq!(
        !run.stdout.contains(UNCHANGED),
        full,
        "after {after}, the build should {}be a full one:\n{}",
        if full { "" } else { "not " },
        run.stdout
    );
    run
}

/// What the summary says was built (chapters, files, where), without the time.
fn figures(run: &Run) -> String {
    let line = run.stdout.lines().next().unwrap_or_default();
    line.split_once(" in ")
        .map_or(line, |(built, _)| built)
        .to_string()
}

#[test]
fn a_build_with_nothing_changed_stops_after_checking_and_leaves_the_output_as_it_is() {
    let site = Site::fixture("basic");
    let first = build_expecting(&site, &[], true, "no build at all");
    let before = tree(&site.path("public"));
    let second = build_expecting(&site, &[], false, "nothing changed");
    assert!(
        second.stdout.contains("experiments: 0 run, 1 cached"),
        "{}",
        second.stdout
    );
    assert_eq!(figures(&first), figures(&second));
    assert_eq!(tree(&site.path("public")), before);
    // A file saved again with the same bytes is no change.
    let text = site.read("content/01-first.md");
    site.write("content/01-first.md", &text);
    build_expecting(&site, &[], false, "a save without an edit");
    // --rerun always runs; what it stored in the experiment cache is what its output shows.
    let rerun = build_expecting(&site, &["--rerun"], true, "--rerun");
    assert!(rerun.stdout.contains("1 run, 0 cached"), "{}", rerun.stdout);
    build_expecting(&site, &[], false, "nothing changed since --rerun");
    // The cache written by anything else (`verify` reruns and stores) makes the next build full.
    let cached = site.path(".attnbook/cache/first.json");
    let results = std::fs::read(&cached).unwrap();
    std::fs::remove_file(&cached).unwrap();
    std::fs::write(&cached, results).unwrap();
    build_expecting(&site, &[], true, "a cache entry replaced");
}

/// One way of changing a site between two builds.
type Edit = Box<dyn Fn(&Site)>;

#[test]
fn a_change_anywhere_under_the_root_or_in_the_output_makes_the_next_build_full() {
    let site = Site::fixture("serve-plain");
    build(&site, &[]);
    build_expecting(&site, &[], false, "nothing changed");
    let page = "public/one/index.html";
    let original = site.read(page);
    let edits: Vec<(&str, Edit)> = vec![
        (
            "a prose edit",
            Box::new(|s: &Site| {
                let text = s.read("content/01-one.md");
                s.write(
                    "content/01-one.md",
                    &text.replace("original prose", "edited prose"),
                );
            }),
        ),
        (
            "a new static file",
            Box::new(|s: &Site| {
                std::fs::create_dir_all(s.path("static")).unwrap();
                s.write("static/extra.txt", "extra");
            }),
        ),
        (
            "a file at the root the build does not read",
            Box::new(|s: &Site| s.write("NOTES.md", "notes")),
        ),
        (
            "an output page rewritten in place, with the same length",
            Box::new(|s: &Site| {
                let page = s.read("public/one/index.html");
                let same_length = page.replacen("<html", "<HTML", 1);
                assert_eq!(page.len(), same_length.len());
                s.write("public/one/index.html", &same_length);
            }),
        ),
        (
            "an output file removed",
            Box::new(|s: &Site| std::fs::remove_file(s.path("public/style.css")).unwrap()),
        ),
        (
            "a file added to the output",
            Box::new(|s: &Site| s.write("public/stray.html", "stray")),
        ),
    ];
    for (what, edit) in edits {
        edit(&site);
        build_expecting(&site, &[], true, what);
        build_expecting(&site, &[], false, &format!("{what}, built"));
    }
    // Each full build put the output right again.
    assert!(site.path("public/style.css").exists());
    assert!(!site.path("public/stray.html").exists());
    assert!(site.path("public/extra.txt").exists());
    let page_now = site.read(page);
    assert!(page_now.starts_with(&original[..original.find("<html").unwrap() + 5]));
    assert!(page_now.contains("edited prose"));
}

#[test]
fn options_and_environment_are_part_of_what_must_be_unchanged() {
    let site = Site::fixture("serve-plain");
    build(&site, &[]);
    build_expecting(&site, &["--strict"], true, "--strict added");
    build_expecting(&site, &["--strict"], false, "the same options");
    build_expecting(&site, &[], true, "--strict left out");
    build_expecting(
        &site,
        &["--base-url", "https://example.org/"],
        true,
        "another base URL",
    );
    build(&site, &[]);
    build_expecting(&site, &[], false, "the same options");
    for (name, value) in [
        ("ATTNBOOK_PORTABLE_SIMD", "1"),
        ("CARGO_TARGET_DIR", "/elsewhere"),
    ] {
        let run = site.run_with_env(&["build"], &[(name, OsStr::new(value))]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            !run.stdout.contains(UNCHANGED),
            "{name} changed: {}",
            run.stdout
        );
        build_expecting(&site, &[], true, &format!("{name} back"));
    }
}

/// `rustc -V` is asked every build, as the experiment cache asks it: a toolchain updated in
/// place (same `RUSTC`, same `PATH`) makes the next build full.
#[test]
fn a_new_toolchain_makes_the_next_build_full() {
    let site = Site::fixture("serve-plain");
    let bin = tempfile::tempdir().unwrap();
    let version = bin.path().join("version");
    let rustc = bin.path().join("rustc");
    std::fs::write(&version, "rustc 1.0.0 (test)\n").unwrap();
    std::fs::write(&rustc, format!("#!/bin/sh\ncat '{}'\n", version.display())).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&rustc, std::fs::Permissions::from_mode(0o755)).unwrap();
    let env = [("RUSTC", rustc.as_os_str())];
    let run = |what: &str| {
        let run = site.run_with_env(&["build"], &env);
        assert_eq!(run.code, 0, "{what}: {}", run.stderr);
        run.stdout.contains(UNCHANGED)
    };
    assert!(!run("the first build"));
    assert!(run("nothing changed"));
    std::fs::write(&version, "rustc 1.0.1 (test)\n").unwrap();
    assert!(!run("a new toolchain"));
    assert!(run("nothing changed since"));
}

/// A build that warned warns again: it is never skipped.
#[test]
fn a_build_that_warned_is_never_skipped() {
    let site = Site::fixture("serve-plain");
    let text = site.read("content/01-one.md");
    site.write(
        "content/01-one.md",
        &format!("{text}\n坏公式 $\\frac{{1}}$。\n"),
    );
    for _ in 0..2 {
        let run = build_expecting(&site, &[], true, "a build that warned");
        assert!(run.stderr.contains("KaTeX cannot render"), "{}", run.stderr);
    }
}

/// A symbolic link under the root could lead the build to files the check does not hash:
/// with one, every build is a full one.
#[test]
fn a_symbolic_link_under_the_root_means_every_build_is_full() {
    let site = Site::fixture("serve-plain");
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("logo.txt"), "one").unwrap();
    std::fs::create_dir_all(site.path("static")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), site.path("static/linked")).unwrap();
    build(&site, &[]);
    build_expecting(
        &site,
        &[],
        true,
        "a build with a symbolic link under the root",
    );
}
