//! Messages and small outputs of redteam-3 (D10 with experiment results, D15, D17, D19, D22):
//! each problem is reported where the author wrote it, with the exit code of its kind.

mod common;

use common::Site;

/// D17: a bibliography that cannot be read is one error at `path:line:col`, exit 2 from
/// `build` and `check`, and its citations are not also "citing nothing".
#[test]
fn a_malformed_bibliography_is_an_error_at_its_place() {
    let site = Site::fixture("cite");
    std::fs::remove_file(site.path("content/references.bib")).unwrap();
    site.write(
        "content/references.yaml",
        "key:\n  type: Article\n  title: [unclosed\n",
    );
    site.write(
        "content/01-a.md",
        "+++\ntitle = \"A\"\nnumber = 1\n+++\n\n见 [@key] 与 [@other]。\n",
    );
    for command in ["build", "check"] {
        let run = site.run(&[command]);
        assert_eq!(run.code, 2, "{command}: {}", run.stderr);
        assert!(
            run.stderr.contains(
                "content/references.yaml:3:10: error: bibliography: key.title: invalid type"
            ),
            "{command}: {}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("at line "),
            "{command}: {}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("has no bibliography"),
            "{command}: {}",
            run.stderr
        );
    }
}

/// D17, the class: with both `references.bib` and `references.yaml`, one was read and the
/// other's keys were "unknown citation keys"; two bibliographies are one error naming both.
#[test]
fn two_bibliographies_are_an_error_naming_both() {
    let site = Site::fixture("cite");
    site.write(
        "content/references.yaml",
        "other:\n  type: Article\n  title: T\n",
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "error: the site has two bibliographies, content/references.bib and \
             content/references.yaml; only one is read"
        ),
        "{}",
        run.stderr
    );
    std::fs::remove_file(site.path("content/references.yaml")).unwrap();
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// D10 (with results), D19: a heading that takes the id of a recorded figure is an error; a
/// chart with values that are not finite numbers is a warning at its block.
#[test]
fn chart_ids_are_unique_and_non_finite_chart_values_are_reported() {
    let site = Site::fixture("basic");
    let first = site.read("content/01-first.md");
    site.write(
        "content/01-first.md",
        &format!(
            "{first}\n## fig-bars\n\n```rust,experiment\n\
             lab.figure(\"nan\", \"坏\", Bar::new([\"a\", \"b\", \"c\"], vec![f64::NAN, f64::INFINITY, 1.0]));\n```\n"
        ),
    );
    let lines = first.lines().count();
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let heading = format!(
        "content/01-first.md:{}:1: error: duplicate id `fig-bars` on the page",
        lines + 2
    );
    assert!(run.stderr.contains(&heading), "{heading}\n{}", run.stderr);
    let nan = format!(
        "content/01-first.md:{}:1: warning: figure `nan`: 2 value(s) are NaN or infinite and are not drawn",
        lines + 4
    );
    assert!(run.stderr.contains(&nan), "{nan}\n{}", run.stderr);
    // Without the clash the chart builds, and `--strict` fails on its warning.
    let fixed = site
        .read("content/01-first.md")
        .replace("## fig-bars", "## 坏图");
    site.write("content/01-first.md", &fixed);
    assert_eq!(site.run(&["build"]).code, 0);
    let strict = site.run(&["build", "--strict"]);
    assert_ne!(strict.code, 0, "{}", strict.stderr);
}

/// D22: a site gets attnbook's stylesheets, scripts and fonts, not the series' diagrams.
#[test]
fn a_site_gets_only_its_own_static_files() {
    let site = Site::fixture("cite");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(site.path("public/style.css").is_file());
    assert!(site.path("public/katex").is_dir());
    assert!(
        !site.path("public/figures").exists(),
        "the series' diagrams were copied"
    );
}

/// Redteam-3 D1, the class: a name the site itself uses, taken by a static file instead of a
/// chapter, silently replaced the page (`static/tags/index.html` became the tag index). A static
/// file at a rendered page's path is an error naming it; built-in assets may still be replaced.
#[test]
fn a_static_file_cannot_replace_a_page_the_site_renders() {
    let site = Site::fixture("basic");
    std::fs::create_dir_all(site.path("static/tags")).unwrap();
    site.write("static/style.css", "body { color: red }");
    site.write("static/robots.txt", "User-agent: *\n");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(site.read("public/style.css"), "body { color: red }");
    assert_eq!(site.read("public/robots.txt"), "User-agent: *\n");
    let index = site.read("public/index.html");
    for page in ["tags/index.html", "atom.xml", "print.html"] {
        site.write(&format!("static/{page}"), "mine");
    }
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    for page in ["tags/index.html", "atom.xml", "print.html"] {
        assert!(
            run.stderr.contains(&format!(
                "error: `static/{page}` would replace the page the site writes at `{page}`"
            )),
            "{page}: {}",
            run.stderr
        );
    }
    assert_eq!(
        site.read("public/index.html"),
        index,
        "the old output is kept"
    );
}

/// D15: a full-width digit in a rule says to write ASCII digits, as in the quoted number.
#[test]
fn full_width_digits_in_a_rule_ask_for_ascii_digits() {
    let site = Site::fixture("cite");
    site.write(
        "content/01-a.md",
        "+++\ntitle = \"A\"\nnumber = 1\n+++\n\n[0.5]{=a ±０.１} [0.5]{=a} [约 ０.５]{=a}\n",
    );
    let run = site.run(&["check"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr
            .matches("is not an ASCII digit: write ASCII digits")
            .count(),
        2,
        "{}",
        run.stderr
    );
}
