//! Bad input: every problem listed at `path:line:col` with a hint, a non-zero exit, and the
//! earlier `public/` left exactly as it was. Error output is compared with snapshots.

mod common;

use common::{Run, Site};

/// Builds once successfully (if it can), then breaks nothing but runs the failing build, and
/// checks that `public/` survived.
fn failing_build(fixture: &str) -> Run {
    failing(fixture, &["build"])
}

fn failing(fixture: &str, args: &[&str]) -> Run {
    let site = Site::fixture(fixture);
    std::fs::create_dir_all(site.path("public")).unwrap();
    site.write("public/index.html", "earlier site");
    // What every build writes: the output guard lets a build replace only an earlier build.
    site.write("public/.attnbook-output", "written by attnbook\n");
    let run = site.run(args);
    assert_eq!(
        run.code, 2,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert_eq!(
        site.read("public/index.html"),
        "earlier site",
        "public/ must be untouched"
    );
    assert!(run.stderr.contains("nothing was written"));
    run
}

#[test]
fn bad_front_matter_lists_every_file() {
    let run = failing_build("bad-front-matter");
    insta::assert_snapshot!("bad_front_matter", run.stderr);
}

#[test]
fn bad_math_points_at_each_formula_and_fails_strict_builds() {
    let run = failing("bad-math", &["build", "--strict"]);
    insta::assert_snapshot!("bad_math", run.stderr);
}

#[test]
fn bad_math_is_a_visible_red_box_in_a_normal_build() {
    let site = Site::fixture("bad-math");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("content/01-a.md:6:17: warning: KaTeX cannot render this formula")
    );
    let page = site.read("public/a/index.html");
    assert!(
        page.contains("<span class=\"math-error\" title=\"Unexpected end of input"),
        "{page}"
    );
    assert!(page.contains("<div class=\"math-error\""));
    assert!(page.contains("<code>\\frac{a}</code>"));
    // Issue 12 item 11: KaTeX's message reads plainly on the page, without its underline marks.
    assert!(
        page.contains("title=\"Undefined control sequence: \\foo at position 5\""),
        "{page}"
    );
    // Item 10: math the parser refused is a warning at its place, not silent literal dollars.
    assert!(
        run.stderr
            .contains("content/01-a.md:12:27: warning: `$$...$$` is not parsed as display math")
    );
    // Line 12 holds `$a + \foo$` (KaTeX), `$$\frac{a}{$$` (refused) and `$5 与 $6` (prices).
    assert_eq!(
        run.stderr
            .lines()
            .filter(|l| l.starts_with("content/01-a.md:12:"))
            .count(),
        2,
        "prices are not math: {}",
        run.stderr
    );
}

#[test]
fn compile_errors_point_at_the_markdown_line() {
    let run = failing_build("compile-error");
    assert!(
        run.stderr.contains("content/01-a.md:13:15: error[E0425]")
            || run
                .stderr
                .contains("content/01-a.md:13:15: error: cannot find value"),
        "{}",
        run.stderr
    );
    insta::assert_snapshot!("compile_error", run.stderr);
}

#[test]
fn a_panic_names_the_block_and_its_line() {
    let run = failing_build("panic");
    assert!(
        run.stderr.contains(
            "content/01-a.md:12:14: error: experiment block 2 panicked: index out of bounds"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn a_hanging_block_is_killed_at_its_timeout() {
    let run = failing_build("timeout");
    assert!(
        run.stderr
            .contains("content/01-a.md:6:1: error: experiment block 1 did not finish within 1 s"),
        "{}",
        run.stderr
    );
}

#[test]
fn unknown_names_suggest_the_closest() {
    let run = failing_build("unknown-quote");
    insta::assert_snapshot!("unknown_quote", run.stderr);
}

#[test]
fn a_template_error_names_the_template() {
    let run = failing_build("bad-template");
    assert!(
        run.stderr
            .contains("template error in templates: Failed to parse 'chapter.html'")
            || run.stderr.contains("no_such_filter"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("help: fix the template under templates/"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_block_that_allocates_without_bound_fails_alone() {
    let run = failing_build("oom");
    assert!(
        run.stderr
            .contains("content/01-a.md:10:1: error: experiment block 2 ran out of memory"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("memory_mb"));
}

#[test]
fn site_toml_errors_name_their_line() {
    let run = failing_build("bad-config");
    insta::assert_snapshot!("bad_config", run.stderr);
}

#[test]
fn every_broken_chapter_is_listed_at_once() {
    let run = failing_build("bad-chapters");
    insta::assert_snapshot!("bad_chapters", run.stderr);
}

#[test]
fn a_chapter_linked_from_outside_the_site_is_refused_not_ignored() {
    let site = Site::fixture("basic");
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("03-outside.md");
    std::fs::write(&target, "+++\ntitle = \"O\"\nnumber = 3\n+++\n").unwrap();
    std::os::unix::fs::symlink(&target, site.path("content/03-outside.md")).unwrap();
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("content/03-outside.md is a symbolic link to"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("outside the site"));
    // A link that stays inside the site is followed.
    std::fs::remove_file(site.path("content/03-outside.md")).unwrap();
    std::fs::create_dir(site.path("drafts")).unwrap();
    std::fs::write(
        site.path("drafts/03-inside.md"),
        "+++\ntitle = \"I\"\nnumber = 3\n+++\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(
        site.path("drafts/03-inside.md"),
        site.path("content/03-inside.md"),
    )
    .unwrap();
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(site.path("public/inside/index.html").exists());
}

#[test]
fn unresolved_cross_references_are_errors_with_suggestions() {
    let run = failing_build("xref");
    insta::assert_snapshot!("unresolved_xref", run.stderr);
}

#[test]
fn images_outside_the_site_or_missing_are_errors() {
    let site = Site::fixture("images");
    // A file outside the site that exists on every machine: one this test makes.
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.png");
    std::fs::write(&secret, "not the site's").unwrap();
    std::os::unix::fs::symlink(&secret, site.path("static/img/link.png")).unwrap();
    let text = site.read("content/01-a.md") + "\n![链接](img/link.png)\n";
    site.write("content/01-a.md", &text);
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2);
    let outside = outside.path().canonicalize().unwrap();
    let stderr = run
        .stderr
        .replace(&outside.display().to_string(), "[OUTSIDE]");
    insta::assert_snapshot!("bad_images", stderr);
}

/// Redteam-3 D1: a chapter file name is a path, a URL and a print-page id prefix. Every name
/// the slug rule refuses is an error at its file, all listed at once, and nothing is written
/// anywhere (the site root's own `index.html` survives a chapter slugged `..`).
#[test]
fn chapter_file_names_that_are_not_slugs_are_errors_at_the_file() {
    let site = Site::fixture("basic");
    site.write("index.html", "the author's own file");
    std::fs::create_dir_all(site.path("static/extra")).unwrap();
    site.write("static/extra/x.txt", "a static file");
    let names = [
        "01-...md",
        "02-..md",
        "03-tags.md",
        "04-verification.md",
        "05-print.html.md",
        "06-a#b.md",
        "07-q?x.md",
        "08-sp ace.md",
        "09-a--b.md",
        "10-figures.md",
        "11-extra.md",
        "12-Upper.md",
    ];
    for (i, name) in names.iter().enumerate() {
        let text = format!("+++\ntitle = \"T\"\nnumber = {}\n+++\n\n正文。\n", i + 10);
        site.write(&format!("content/{name}"), &text);
    }
    let run = site.run(&["build", "--strict"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    for name in names {
        let place = format!("content/{name}:1:1: error: ");
        assert!(run.stderr.contains(&place), "{place}\n{}", run.stderr);
    }
    assert!(run.stderr.contains("nothing was written"), "{}", run.stderr);
    assert_eq!(site.read("index.html"), "the author's own file");
    assert!(!site.path("public").exists());
    insta::assert_snapshot!("bad_slugs", run.stderr);
}
