//! The index page's `intro` (site.toml) is Markdown held to a chapter's rules (redteam-3 D4):
//! links to chapter files and root links are rewritten, formulas, cross-references, quotes and
//! claims work, and every problem is reported at its line of site.toml by `build`, `--strict`
//! and `check`.

mod common;

use common::Site;

const CONFIG: &str = "title = \"Fixture\"\nbase_url = \"https://example.org/book/\"\n";

fn with_intro(site: &Site, intro: &str) {
    site.write(
        "site.toml",
        &format!("{CONFIG}intro = \"\"\"\n{intro}\"\"\"\n"),
    );
}

#[test]
fn the_intro_gets_the_chapter_rules_on_the_index_and_print_pages() {
    let site = Site::fixture("basic");
    with_intro(
        &site,
        "从[第一篇](01-first.md#scores)读起，或看 @ch:first。目录在[这里](/tags/)。\n\n\
         权重之和是 [1.00]{=first/sum ±1e-12}，公式 $\\\\alpha_j$。\n",
    );
    let run = site.run(&["build", "--strict"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let index = site.read("public/index.html");
    for wanted in [
        "href=\"/book/first/#scores\"",
        "href=\"/book/tags/\"",
        "href=\"/book/first/\"",
        "《第一篇：点积注意力》",
        "class=\"katex\"",
    ] {
        assert!(index.contains(wanted), "{wanted} in {index}");
    }
    for unwanted in ["01-first.md", "@ch:first", "{=first/sum", "href=\"/tags/\""] {
        assert!(!index.contains(unwanted), "{unwanted} in {index}");
    }
    // The quote shows the rerun and links to the line that recorded it.
    assert!(index.contains("href=\"/book/first/#L25\""), "{index}");
    // On the print page the links into chapters are anchors on that page.
    let print = site.read("public/print.html");
    assert!(print.contains("href=\"#first--scores\""), "{print}");
    assert!(!print.contains("01-first.md"), "{print}");
}

#[test]
fn problems_in_the_intro_are_reported_at_their_line_of_site_toml() {
    let site = Site::fixture("basic");
    // Line 4 of site.toml is the intro's first line (the `"""` line is 3).
    with_intro(
        &site,
        "坏公式 $\\\\frac{a}$ 与 [0.5]{=x}，\n[坏链接](09-nope.md) 和 @ch:nope，[锚](#nowhere) [@key]。\n",
    );
    let expected = [
        "site.toml:4:5: warning: KaTeX cannot render this formula",
        "site.toml:4:26: error: the intro records no values, so `x` names nothing",
        "site.toml:5:1: error: broken link: no chapter `nope`",
        "site.toml:5:21: error: unresolved reference: no chapter `nope`",
        "site.toml:5:30: error: broken link: no anchor `#nowhere` on the index page",
        "site.toml:5:44: error: citation of `key` but the site has no bibliography",
    ];
    let build = site.run(&["build"]);
    assert_eq!(build.code, 2, "{}", build.stderr);
    for line in expected {
        assert!(build.stderr.contains(line), "{line}\n{}", build.stderr);
    }
    let check = site.run(&["check"]);
    assert_eq!(check.code, 1, "{}", check.stderr);
    for line in expected {
        let line = line.replace("warning:", "error:");
        assert!(check.stderr.contains(&line), "{line}\n{}", check.stderr);
    }
    // The formula alone is a warning, which `--strict` turns into a failure.
    with_intro(&site, "坏公式 $\\\\frac{a}$。\n");
    assert_eq!(site.run(&["build"]).code, 0);
    let strict = site.run(&["build", "--strict"]);
    assert_ne!(strict.code, 0, "{}", strict.stderr);
    assert!(
        strict
            .stderr
            .contains("site.toml:4:5: error: KaTeX cannot render this formula"),
        "{}",
        strict.stderr
    );
}

#[test]
fn the_intro_cannot_hold_experiments_or_placements() {
    let site = Site::fixture("basic");
    with_intro(
        &site,
        "```rust,experiment\nlab.value(\"v\", 1.0);\n```\n\n{{table: weights}}\n",
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("site.toml:4:1: error: the intro cannot hold an experiment block"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("site.toml:8:1: error: `{{table: weights}}` cannot be placed in the intro"),
        "{}",
        run.stderr
    );
}
