//! Appendix pages (issue 13): unnumbered pages listed after the chapters, by front matter
//! `appendix = true` or by living under `content/appendix/`.

mod common;

use common::Site;

fn built() -> Site {
    let site = Site::fixture("appendix");
    let run = site.run(&["build", "--strict"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    site
}

/// The position of `needle` in `haystack`, failing the test when it is absent.
fn at(haystack: &str, needle: &str) -> usize {
    haystack
        .find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not found in:\n{haystack}"))
}

#[test]
fn the_index_lists_the_appendices_after_the_chapters_labelled_appendix() {
    let site = built();
    let index = site.read("public/index.html");
    let second = at(&index, "/series/second/");
    let glossary = at(&index, "/series/glossary/");
    let colophon = at(&index, "/series/colophon/");
    assert!(second < glossary && glossary < colophon, "{index}");
    assert!(index[second..].contains(">附录</span>"), "{index}");
    assert!(!index.contains(">00</span>"), "{index}");
}

#[test]
fn an_appendix_page_says_appendix_not_a_number_and_keeps_the_navigation() {
    let site = built();
    let page = site.read("public/glossary/index.html");
    assert!(
        page.contains("<p class=\"chapter-number\">附录</p>"),
        "{page}"
    );
    assert!(!page.contains("第 0 篇"), "{page}");
    let prev = at(&page, "class=\"prev\"");
    assert!(page[prev..].starts_with("class=\"prev\" href=\"/series/second/\""));
    let next = at(&page, "class=\"next\"");
    assert!(page[next..].starts_with("class=\"next\" href=\"/series/colophon/\""));
    // The last chapter leads on into the appendices.
    let second = site.read("public/second/index.html");
    assert!(
        second.contains("class=\"next\" href=\"/series/glossary/\""),
        "{second}"
    );
}

#[test]
fn chapters_keep_their_numbers_and_reach_an_appendix_by_reference() {
    let site = built();
    let first = site.read("public/first/index.html");
    assert!(first.contains("第 1 篇"), "{first}");
    assert!(first.contains("《术语表》"), "{first}");
    assert!(first.contains("附录《术语表》式 (1)"), "{first}");
    assert!(first.contains("/series/glossary/#eq-softmax"), "{first}");
}

#[test]
fn related_pages_are_chapters_only() {
    let site = built();
    let first = site.read("public/first/index.html");
    let related = &first[at(&first, "class=\"related\"")..];
    let related = &related[..at(related, "</nav>")];
    assert!(related.contains("/series/second/"), "{related}");
    assert!(!related.contains("/series/glossary/"), "{related}");
}

#[test]
fn the_feed_leaves_appendices_out_the_sitemap_and_search_keep_them() {
    let site = built();
    let feed = site.read("public/atom.xml");
    let entry = |slug: &str| format!("<id>https://example.github.io/series/{slug}/</id>");
    assert!(feed.contains(&entry("first")), "{feed}");
    assert!(!feed.contains(&entry("glossary")), "{feed}");
    assert!(!feed.contains(&entry("colophon")), "{feed}");
    let sitemap = site.read("public/sitemap.xml");
    assert!(sitemap.contains("/series/glossary/"), "{sitemap}");
    let search = site.read("public/search-index.json");
    assert!(search.contains("术语表"), "{search}");
}

#[test]
fn a_numbered_appendix_and_an_unnumbered_chapter_are_errors_at_their_lines() {
    let site = Site::fixture("appendix");
    let glossary = site.read("content/appendix/01-glossary.md");
    site.write(
        "content/appendix/01-glossary.md",
        &glossary.replacen("date", "number = 3\ndate", 1),
    );
    site.write("content/03-third.md", "+++\ntitle = \"第三篇\"\n+++\n");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "content/appendix/01-glossary.md:3:1: error: an appendix page has no `number`"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("content/03-third.md:1:1: error: missing field `number`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("appendix = true"), "{}", run.stderr);
}

#[test]
fn an_appendix_shares_the_slug_space_with_the_chapters() {
    let site = Site::fixture("appendix");
    site.write("content/appendix/first.md", "+++\ntitle = \"重名\"\n+++\n");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("duplicate chapter slug `first`"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_print_page_labels_an_appendix_appendix_not_chapter_0() {
    let site = built();
    let print = site.read("public/print.html");
    assert!(!print.contains("第 0 篇"), "{print}");
    assert!(print.contains("第 1 篇 · "), "{print}");
    let article = &print[at(&print, "id=\"glossary\">")..];
    assert!(
        article.contains("<p class=\"chapter-number\">附录</p>"),
        "{article}"
    );
    assert!(print.contains("<a href=\"#glossary\">附录 · "), "{print}");
}
