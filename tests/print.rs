//! The print page (issue 16, item 8): the whole series on one page, chapters in order, ids
//! unique across chapters, every link into the series an anchor on the page, answers and folds
//! open; `[print] enabled = false` switches it off.

mod common;

use std::collections::HashSet;

use common::Site;
use regex::Regex;

fn built(site: &Site) -> String {
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    site.read("public/print.html")
}

fn ids(page: &str) -> Vec<String> {
    let re = Regex::new(r#"\sid="([^"]*)""#).unwrap();
    re.captures_iter(page).map(|c| c[1].to_string()).collect()
}

#[test]
fn the_chapters_stand_in_series_order_with_headers_and_math() {
    let site = Site::fixture("print");
    let page = built(&site);
    let first = page.find("<article class=\"chapter print-chapter\" id=\"a\">");
    let second = page.find("<article class=\"chapter print-chapter\" id=\"b\">");
    assert!(
        matches!((first, second), (Some(a), Some(b)) if a < b),
        "{page}"
    );
    assert!(page.contains("<h1>第一篇的标题</h1>") && page.contains("第一篇的摘要"));
    assert!(
        page.contains("<a href=\"#b\">第 2 篇 · 第二篇的标题</a>"),
        "{page}"
    );
    assert_eq!(page.matches("class=\"katex-display\"").count(), 2, "{page}");
    assert!(page.contains("<meta name=\"robots\" content=\"noindex\">"));
    assert!(
        page.contains(
            "<link rel=\"canonical\" href=\"https://example.github.io/series/print.html\">"
        )
    );
}

#[test]
fn ids_are_unique_across_chapters_and_every_in_page_link_has_its_target() {
    let site = Site::fixture("print");
    let page = built(&site);
    let ids = ids(&page);
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "duplicate ids: {ids:?}");
    // Both chapters have a `## 方法 {#method}`: each keeps its own.
    assert!(unique.contains(&"a--method".to_string()) && unique.contains(&"b--method".to_string()));
    let hrefs = Regex::new(r##"href="#([^"]*)""##).unwrap();
    let targets: Vec<String> = hrefs
        .captures_iter(&page)
        .map(|c| c[1].to_string())
        .collect();
    assert!(targets.len() >= 10, "{targets:?}");
    for target in &targets {
        assert!(
            unique.contains(target),
            "no id {target:?} on the page for href=\"#{target}\""
        );
    }
}

#[test]
fn cross_references_and_chapter_links_point_into_the_page() {
    let site = Site::fixture("print");
    let page = built(&site);
    for link in [
        // @eq:score, @ch:b, @eq:b/softmax, [..](02-b.md#method), [..](#method) in chapter a
        "<a class=\"xref\" href=\"#a--eq-score\">式 (1)</a>",
        "<a class=\"xref\" href=\"#b\">《第二篇的标题》</a>",
        "<a class=\"xref\" href=\"#b--eq-softmax\">第 2 篇式 (1)</a>",
        "<a href=\"#b--method\">它的方法</a>",
        "<a href=\"#a--method\">本节</a>",
        // @ch:a, @eq:a/score, [..](01-a.md) in chapter b
        "<a class=\"xref\" href=\"#a\">《第一篇的标题》</a>",
        "<a class=\"xref\" href=\"#a--eq-score\">第 1 篇式 (1)</a>",
        "<a href=\"#a\">第一篇</a>",
    ] {
        assert!(page.contains(link), "no {link} in {page}");
    }
    let main = &page[page.find("<main").unwrap()..];
    assert!(
        !main.contains("href=\"/series/a/") && !main.contains("href=\"/series/b/"),
        "{main}"
    );
    assert!(
        page.contains("<details open><summary>答案</summary>"),
        "{page}"
    );
    // The chapter pages themselves keep their own ids and links.
    let chapter = site.read("public/b/index.html");
    assert!(
        chapter.contains("<a class=\"xref\" href=\"/series/a/#eq-score\">"),
        "{chapter}"
    );
}

#[test]
fn the_navigation_links_the_print_page_and_the_switch_turns_it_off() {
    let site = Site::fixture("print");
    built(&site);
    let index = site.read("public/index.html");
    assert!(
        index.contains("<a href=\"/series/print.html\">打印版</a>"),
        "{index}"
    );

    let config = site.read("site.toml");
    site.write(
        "site.toml",
        &format!("{config}\n[print]\nenabled = false\n"),
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!site.path("public/print.html").exists());
    assert!(!site.read("public/index.html").contains("print.html"));
    assert!(!site.read("public/a/index.html").contains("print.html"));

    site.write("site.toml", &format!("{config}\n[print]\nenable = false\n"));
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("site.toml:5:1: error: unknown field `enable`, expected `enabled` or `pdf`"),
        "{}",
        run.stderr
    );
}

#[test]
fn pdf_true_links_book_pdf_from_every_page_and_needs_the_print_page() {
    let site = Site::fixture("print");
    built(&site);
    let link = "<a href=\"/series/book.pdf\" type=\"application/pdf\">PDF 版</a>";
    assert!(!site.read("public/index.html").contains("book.pdf"));

    let config = site.read("site.toml");
    site.write("site.toml", &format!("{config}\n[print]\npdf = true\n"));
    let run = site.run(&["build", "--strict"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for page in [
        "public/index.html",
        "public/a/index.html",
        "public/print.html",
    ] {
        let html = site.read(page);
        assert!(html.contains(link), "{page}: {html}");
    }
    // `build` links the PDF, the workflow prints it (scripts/pdf.mjs).
    assert!(!site.path("public/book.pdf").exists());

    site.write(
        "site.toml",
        &format!("{config}\n[print]\nenabled = false\npdf = true\n"),
    );
    let run = site.run(&["build"]);
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "site.toml:6:1: error: `[print] pdf = true` needs the print page, but `enabled = false`"
        ),
        "{}",
        run.stderr
    );
}

/// The print page is rendered with a stand-in for each chapter's body and the bodies put in
/// their places as it is written, when the template only prints `{{ chapter.content | safe }}`.
/// A template that does anything else with a body gets the bodies themselves: the same bytes
/// where it prints them the same way, and what it asked for where it does not.
#[test]
fn a_template_that_does_more_with_a_body_gets_the_bodies_themselves() {
    let default = built(&Site::fixture("print"));
    let template = attnbook_default_print_template();
    assert!(template.contains("{{ chapter.content | safe }}"));
    let with = |replacement: &str| {
        let site = Site::fixture("print");
        std::fs::create_dir_all(site.path("templates")).unwrap();
        site.write(
            "templates/print.html",
            &template.replace("{{ chapter.content | safe }}", replacement),
        );
        built(&site)
    };
    // Passed on through a variable: not a stand-in's place, the same page.
    let through_a_variable = with("{% set body = chapter.content %}{{ body | safe }}");
    assert!(through_a_variable == default, "{through_a_variable}");
    // Printed twice: each copy is the body.
    let twice =
        with("{{ chapter.content | safe }}<hr class=\"again\">{{ chapter.content | safe }}");
    assert_eq!(twice.matches("<h1>第一篇的标题</h1>").count(), 1);
    assert_eq!(
        twice.matches("class=\"katex-display\"").count(),
        4,
        "{twice}"
    );
    assert!(!twice.contains("attnbook-part-"), "{twice}");
    // Filtered: the filter sees the body.
    let filtered =
        with("{{ chapter.content | replace(from=\"katex-display\", to=\"shown-apart\") | safe }}");
    assert_eq!(
        filtered.matches("class=\"shown-apart\"").count(),
        2,
        "{filtered}"
    );
    assert!(!filtered.contains("katex-display"));
}

/// The built-in `templates/print.html` (attnbook's own, which a site's `templates/` overrides).
fn attnbook_default_print_template() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/templates/print.html")).unwrap()
}
