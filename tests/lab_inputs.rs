//! What an experiment is built from besides its blocks (issue 23 item 4, issue 26 item 4):
//! the data files `[lab] data` declares and the crates of `[lab.dependencies]`. Each is part
//! of the experiment cache key; a file a block reads without declaring it withdraws the
//! chapter's download; a dependency that does not resolve is one error at its site.toml line.

mod common;

use common::Site;

/// The value `name` recorded by the last run of chapter `slug`.
fn recorded(site: &Site, slug: &str, name: &str) -> f64 {
    let text = site.read(&format!(".attnbook/run/results-{slug}/results.json"));
    let results: lab_protocol::ChapterResults = serde_json::from_str(&text).unwrap();
    let value = results.values.iter().find(|v| v.name == name).unwrap();
    value.data[0].0
}

/// A declared file is read at its site-relative path from the chapter's working directory;
/// editing it reruns the chapter, leaving it alone keeps the cache.
#[test]
fn editing_a_declared_data_file_reruns_the_chapter() {
    let site = Site::fixture("lab-data");
    let first = site.run(&["build"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(first.stdout.contains("2 run, 0 cached"), "{}", first.stdout);
    assert_eq!(recorded(&site, "data", "scale"), 2.5);

    let again = site.run(&["build"]);
    assert!(again.stdout.contains("0 run, 2 cached"), "{}", again.stdout);

    site.write("data/scale.txt", "3.5\n");
    let edited = site.run(&["build"]);
    assert_eq!(edited.code, 0, "{}", edited.stderr);
    assert!(
        edited.stdout.contains("2 run, 0 cached"),
        "{}",
        edited.stdout
    );
    assert_eq!(recorded(&site, "data", "scale"), 3.5);

    // An undeclared file is no input: editing it reruns nothing (hence the warning below).
    site.write("notes.txt", "8\n");
    let undeclared = site.run(&["build"]);
    assert!(
        undeclared.stdout.contains("0 run, 2 cached"),
        "{}",
        undeclared.stdout
    );
}

/// Redteam-3 D8: a chapter whose block names a site file that is not declared gets no download
/// and a warning at the literal naming the file.
#[test]
fn reading_an_undeclared_site_file_withdraws_the_download_with_a_warning() {
    let site = Site::fixture("lab-data");
    let run = site.run(&["build", "--strict"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "content/02-notes.md:7:33: warning: no experiment download for this chapter: it \
             reads `notes.txt`, a site file that `[lab] data` in site.toml does not declare"
        ),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("reads `data/scale.txt`"),
        "{}",
        run.stderr
    );
    assert!(!site.path("public/notes/notes-experiments.tar.gz").exists());
    assert!(
        !site
            .read("public/notes/index.html")
            .contains("experiments.tar.gz")
    );
}

/// Patterns that match nothing or leave the site are errors at their site.toml line:col.
#[test]
fn bad_data_patterns_are_errors_at_their_place_in_site_toml() {
    let site = Site::fixture("lab-data");
    let config = site.read("site.toml");
    site.write(
        "site.toml",
        &config.replace(
            "data = [\"data/*.txt\"]",
            "data = [\"data/*.txt\", \"data/*.csv\", \"../elsewhere.txt\"]",
        ),
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    for (place, message) in [
        (
            "site.toml:6:23",
            "the `data` pattern `data/*.csv` matches no file of the site",
        ),
        (
            "site.toml:6:37",
            "the `data` pattern `../elsewhere.txt` names a path outside the site",
        ),
    ] {
        assert!(
            run.stderr.contains(place) && run.stderr.contains(message),
            "{place} {message}:\n{}",
            run.stderr
        );
    }
}

/// Issue 26 "Done when": a path crate of the site, used in a block, builds; a second build is
/// cached (nothing compiled, nothing run); the versions are kept in `lab.lock` at the site
/// root; editing the crate reruns; the download is withheld with a warning, since a path
/// dependency cannot travel.
#[test]
fn a_path_dependency_of_the_site_is_used_cached_and_locked() {
    let site = Site::fixture("lab-deps");
    let first = site.run(&["build", "--strict"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(first.stdout.contains("1 run, 0 cached"), "{}", first.stdout);
    assert_eq!(recorded(&site, "deps", "doubled"), 4.0);
    let lock = site.read("lab.lock");
    assert!(
        lock.contains("name = \"mathx\"") && lock.contains("name = \"attnbook-experiments\""),
        "{lock}"
    );
    assert!(
        !lock.contains("attnbook-lab-"),
        "no machine-specific name:\n{lock}"
    );
    assert!(
        first.stderr.contains(
            "warning: no experiment downloads: the experiments depend on the path crate `mathx` \
             (site.toml:6:9)"
        ),
        "{}",
        first.stderr
    );
    assert!(!site.path("public/deps/deps-experiments.tar.gz").exists());

    let second = site.run(&["build"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(
        second.stdout.contains("0 run, 1 cached"),
        "{}",
        second.stdout
    );
    assert!(
        !second.stderr.contains("compiling experiments"),
        "{}",
        second.stderr
    );
    assert_eq!(site.read("lab.lock"), lock, "the lock is kept as it is");
    let crate_lock = site.path(".attnbook/lab/Cargo.lock");
    let before = std::fs::metadata(&crate_lock).unwrap().modified().unwrap();
    let third = site.run(&["build"]);
    assert!(third.stdout.contains("0 run, 1 cached"), "{}", third.stdout);
    assert_eq!(
        std::fs::metadata(&crate_lock).unwrap().modified().unwrap(),
        before,
        "nothing resolved again"
    );

    site.write(
        "crates/mathx/src/lib.rs",
        "/// Thrice `x`.\npub fn double(x: f64) -> f64 {\n    3.0 * x\n}\n",
    );
    let edited = site.run(&["build"]);
    assert_eq!(edited.code, 0, "{}", edited.stderr);
    assert!(
        edited.stdout.contains("1 run, 0 cached"),
        "{}",
        edited.stdout
    );
    assert_eq!(recorded(&site, "deps", "doubled"), 6.0);
}

/// A dependency cargo cannot resolve is one error, at its line in site.toml, not cargo's output;
/// one that would shadow a runtime crate is an error before anything is built.
#[test]
fn an_unresolvable_dependency_is_one_error_at_its_line() {
    let site = Site::fixture("lab-deps");
    let config = site.read("site.toml");
    site.write(
        "site.toml",
        &config.replace(
            "mathx = { path = \"crates/mathx\" }",
            "mathx = { path = \"crates/mathx\", version = \"2\" }",
        ),
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stderr.matches(": error: ").count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("1 error(s), 0 warning(s)"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("location searched"),
        "not cargo's output:\n{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "error: the experiment dependency `mathx` does not resolve: failed to select a version"
        ),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("site.toml:6:9"), "{}", run.stderr);

    site.write(
        "site.toml",
        &config.replace("mathx = { path", "lab_protocol = { path"),
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "the experiment dependency `lab_protocol` would shadow attnbook's runtime crate \
             `lab-protocol`"
        ) && run.stderr.contains("site.toml:6:16"),
        "{}",
        run.stderr
    );
}
