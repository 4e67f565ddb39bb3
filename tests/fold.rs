//! Folding experiment blocks and revealing hidden lines (issue 16, item 1): the fence options
//! `fold`, `fold="summary"` and `fold=false`, the site default `[lab] fold_lines`, and hidden
//! `# ` lines on the page in `span.boring`.

mod common;

use common::Site;

/// The HTML of the experiment section `n` (1-based) of a page.
fn section(page: &str, n: usize) -> &str {
    let start = page
        .find(&format!("id=\"experiment-{n}\""))
        .unwrap_or_else(|| panic!("no experiment-{n}"));
    let end = page[start..].find("</section>").unwrap() + start;
    &page[start..end]
}

#[test]
fn blocks_fold_by_option_and_by_length_and_hidden_lines_are_marked() {
    let site = Site::fixture("fold");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = site.read("public/fold/index.html");

    let short = section(&page, 1);
    assert!(
        !short.contains("<details"),
        "a short block stays open: {short}"
    );
    let boring = short
        .split("<span class=\"boring\">")
        .nth(1)
        .expect("the hidden line is on the page in span.boring");
    assert!(boring.contains("hidden_value"), "{short}");
    assert!(
        boring.contains("hl-storage"),
        "the hidden line is highlighted: {short}"
    );
    assert_eq!(short.matches("class=\"boring\"").count(), 1, "{short}");
    assert!(short.contains("short = 21"), "{short}");

    let long = section(&page, 2);
    assert!(
        long.contains("<details class=\"fold\"><summary>代码（5 行）</summary><pre>"),
        "a block longer than fold_lines folds: {long}"
    );
    assert!(
        long.contains("long = 4"),
        "the output stays outside the fold: {long}"
    );
    assert!(
        long.find("</details>").unwrap() < long.find("long = 4").unwrap(),
        "{long}"
    );

    let open = section(&page, 3);
    assert!(
        !open.contains("<details"),
        "fold=false keeps it open: {open}"
    );

    let named = section(&page, 4);
    assert!(
        named.contains("<summary>绘图 代码, 第二部分</summary>"),
        "the author's summary, spaces and commas kept: {named}"
    );

    // The print page (issue 16, item 8) shows every fold open, with its summary.
    let print = site.read("public/print.html");
    assert_eq!(
        print
            .matches("<details class=\"fold\" open><summary>")
            .count(),
        2,
        "{print}"
    );
    assert!(
        !print.contains("<details class=\"fold\"><summary>"),
        "{print}"
    );
}

#[test]
fn malformed_fold_options_are_each_reported_at_their_column() {
    let site = Site::fixture("fold");
    site.write(
        "content/01-fold.md",
        "+++\ntitle = \"Bad\"\nnumber = 1\n+++\n\n```rust,experiment,fold=绘图,timeout=0\nlet x = 1;\n```\n\n```rust,experiment,fold=\"绘图\n```\n\n```rust,experiment,hide,fold=\"\"\n```\n",
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let err = &run.stderr;
    assert!(err.contains("content/01-fold.md:6:20"), "{err}");
    assert!(
        err.contains("a summary is written in double quotes"),
        "{err}"
    );
    assert!(err.contains("content/01-fold.md:6:28"), "{err}");
    assert!(err.contains("timeout must be a positive number"), "{err}");
    assert!(err.contains("content/01-fold.md:10:1"), "{err}");
    assert!(err.contains("unterminated quote"), "{err}");
    assert!(err.contains("content/01-fold.md:13:25"), "{err}");
    assert!(err.contains("the summary is empty"), "{err}");
    assert!(!site.path("public").exists(), "nothing is published");
}
