//! The render caches change nothing but speed (issue 28). The series is built from clean
//! render caches and again from the caches that build left, with nothing changed and after a
//! prose edit, and every output file is compared byte for byte with a build that had no render
//! caches.
//!
//! The experiments' results are taken from the checkout's `.attnbook/cache` when a build of the
//! series left them there (`.ci/run` builds the series before the tests), so only rendering is
//! repeated; without them the first build runs the experiments once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{copy_series, tree};

/// `attnbook build --out OUT` in `site`: the files it wrote.
fn build(site: &Path, out: &str) -> BTreeMap<PathBuf, Vec<u8>> {
    let run = Command::new(env!("CARGO_BIN_EXE_attnbook"))
        .arg("--root")
        .arg(site)
        .args(["build", "--out", out])
        .output()
        .expect("run attnbook");
    assert!(
        run.status.success(),
        "build failed:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    tree(&site.join(out))
}

fn clear_render_caches(site: &Path) {
    let _ = std::fs::remove_dir_all(site.join(".attnbook/cache/render"));
}

/// The stored pages, by name.
fn stored_pages(site: &Path) -> Vec<String> {
    stored(site, "pages")
}

/// The entries of one store (`pages`, `bodies`), by name.
fn stored(site: &Path, store: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(site.join(".attnbook/cache/render").join(store))
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The first files in which two outputs differ, for the failure message.
fn differences(a: &BTreeMap<PathBuf, Vec<u8>>, b: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<String> {
    let mut paths: Vec<&PathBuf> = a.keys().chain(b.keys()).collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter(|p| a.get(*p) != b.get(*p))
        .take(10)
        .map(|p| p.display().to_string())
        .collect()
}

fn assert_same(what: &str, a: &BTreeMap<PathBuf, Vec<u8>>, b: &BTreeMap<PathBuf, Vec<u8>>) {
    assert!(
        a == b,
        "{what}: the outputs differ in {:?}",
        differences(a, b)
    );
}

#[test]
fn the_series_builds_the_same_bytes_from_clean_and_from_kept_render_caches() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path();
    copy_series(site);

    let clean = build(site, "public-clean");
    assert!(clean.contains_key(Path::new("print.html")));
    assert!(clean.contains_key(Path::new("verification/index.html")));
    let stored = stored_pages(site);
    let bodies = self::stored(site, "bodies");
    assert!(stored.len() >= 20, "the build stored its pages: {stored:?}");

    // Nothing changed: every page comes from the store, and the bytes are the same.
    let kept = build(site, "public-kept");
    assert_same("no change, kept caches", &clean, &kept);
    assert_eq!(
        stored_pages(site),
        stored,
        "a no-change build rendered new pages"
    );

    // A prose edit of one chapter, built with the caches the last build left, against the same
    // sources built with no render cache at all.
    let path = site.join("content/03-luong.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let body = prose_start(&text);
    let marker = "INCREMENTALEDIT";
    let edited = format!("{}{marker}{}", &text[..body], &text[body..]);
    std::fs::write(&path, edited).unwrap();
    let warm = build(site, "public-warm");
    let after_edit = stored_pages(site);
    // Only the edited chapter's body was rendered again: nothing the others show of it changed.
    let bodies_after = self::stored(site, "bodies");
    let kept_bodies = bodies_after.iter().filter(|n| bodies.contains(n)).count();
    assert_eq!(
        (bodies.len(), kept_bodies),
        (bodies_after.len(), bodies.len() - 1),
        "one body of {} rendered again",
        bodies.len()
    );
    clear_render_caches(site);
    let cold = build(site, "public-cold");
    assert_same("after a prose edit, kept caches against none", &cold, &warm);

    let page = Path::new("luong/index.html");
    assert!(String::from_utf8_lossy(&warm[page]).contains(marker));
    assert!(String::from_utf8_lossy(&warm[Path::new("print.html")]).contains(marker));
    // The edit rendered the pages that show the chapter again and kept the rest.
    let kept_across_edit = after_edit.iter().filter(|n| stored.contains(n)).count();
    assert!(
        kept_across_edit > 0 && kept_across_edit < stored.len(),
        "{kept_across_edit} of {} stored pages kept across the edit",
        stored.len()
    );
    let other = Path::new("bahdanau/index.html");
    assert_eq!(
        clean[other], warm[other],
        "an unedited chapter's page changed"
    );
}

/// Where the first prose paragraph after a chapter's front matter starts.
fn prose_start(text: &str) -> usize {
    let mut at = text[3..].find("+++").expect("front matter") + 6;
    for line in text[at..].split_inclusive('\n') {
        let first = line.chars().next().unwrap_or('\n');
        if !line.trim().is_empty() && !"#|`$<{-!>[".contains(first) {
            return at;
        }
        at += line.len();
    }
    panic!("no prose paragraph");
}

/// A template that asks for the environment (or, with Tera's `builtins`, the time or a random
/// number) renders differently with the same context: its pages are never read back from the
/// store.
#[test]
fn pages_of_impure_templates_are_not_stored() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path();
    std::fs::create_dir_all(site.join("content")).unwrap();
    std::fs::create_dir_all(site.join("templates")).unwrap();
    std::fs::write(
        site.join("site.toml"),
        "title = \"T\"\nbase_url = \"https://example.com/\"\n",
    )
    .unwrap();
    std::fs::write(
        site.join("content/01-a.md"),
        "+++\ntitle = \"A\"\nnumber = 1\n+++\n\nText.\n",
    )
    .unwrap();
    let pure = build(site, "public");
    assert!(pure.contains_key(Path::new("a/index.html")));
    assert!(!stored_pages(site).is_empty(), "the pages were stored");
    std::fs::write(
        site.join("templates/404.html"),
        "{% extends \"base.html\" %}{% block content %}{{ get_env(name=\"HOME\", default=\"\") }}{% endblock %}",
    )
    .unwrap();
    build(site, "public");
    assert!(
        stored_pages(site).is_empty(),
        "pages were stored: {:?}",
        stored_pages(site)
    );
}
