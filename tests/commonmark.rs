//! The CommonMark 0.31.2 spec examples and pulldown-cmark's heading-attribute examples (see
//! tests/commonmark/README.md for their sources and licences) through attnbook's Markdown stage
//! and body renderer, compared with plain pulldown-cmark under the same options: attnbook's own
//! syntax must not change standard Markdown. The differences attnbook intends are normalised or
//! listed below, each with why.

use std::sync::LazyLock;

use pulldown_cmark::{Parser, html};
use regex::Regex;

const SPEC: &str = include_str!("commonmark/spec-0.31.2.txt");
const HEADING_ATTRIBUTES: &str = include_str!("commonmark/heading_attrs.txt");

/// One example of the spec.
struct Example {
    number: usize,
    line: usize,
    markdown: String,
}

/// Reads the examples the way the spec's own `spec_tests.py` does: a fence of 32 backticks
/// and `example`, the Markdown, a line with a single `.`, the HTML, a closing fence; `→` stands
/// for a tab.
fn examples(spec: &str) -> Vec<Example> {
    let fence = "`".repeat(32);
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    let mut in_markdown = false;
    for (i, line) in spec.lines().enumerate() {
        if line == format!("{fence} example") {
            current = Some((i + 1, String::new()));
            in_markdown = true;
        } else if line == fence {
            if let Some((start, markdown)) = current.take() {
                out.push(Example {
                    number: out.len() + 1,
                    line: start,
                    markdown: markdown.replace('→', "\t"),
                });
            }
        } else if line == "." {
            in_markdown = false;
        } else if let Some((_, markdown)) = current.as_mut().filter(|_| in_markdown) {
            markdown.push_str(line);
            markdown.push('\n');
        }
    }
    out
}

fn plain(markdown: &str) -> String {
    let mut out = String::new();
    html::push_html(
        &mut out,
        Parser::new_ext(markdown, attnbook::markdown::options()),
    );
    out
}

#[test]
fn the_spec_has_all_its_examples() {
    assert_eq!(examples(SPEC).len(), 652);
}

/// Examples whose difference is intended, by number, with the reason.
const INTENDED: &[(usize, &str)] = &[
    // Code in a language the highlighter knows is highlighted at build time.
    (142, "```ruby is highlighted"),
    (143, "~~~~ ruby is highlighted"),
    // Links to chapter files become chapter URLs (docs/authoring.md, links).
    (484, "./target.md becomes the chapter URL /target/"),
    // Relative images come from static/ under the site's base path.
    (517, "moon.jpg becomes /moon.jpg"),
    (520, "uri3 becomes /uri3"),
    (531, "moon.jpg becomes /moon.jpg"),
    (573, "train.jpg becomes /train.jpg"),
    (576, "train.jpg becomes /train.jpg"),
    (577, "train.jpg becomes /train.jpg"),
    (578, "train.jpg becomes /train.jpg"),
    (580, "url becomes /url"),
];

/// Differences that hold for every example, removed from both sides before comparing:
/// - every heading gets an `id` (explicit or from its text) and a `#` anchor link;
/// - code blocks and headings are written as HTML pieces, so inside a list item
///   pulldown-cmark's newline between `<li>` and the block is missing (whitespace between
///   tags, no change on the page).
fn normalised(html: &str) -> String {
    static HEADING_ID: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r#"<h([1-6]) id="[^"]*""#).expect("regex"));
    static ANCHOR: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r##"<a class="anchor" href="#[^"]*" aria-hidden="true" tabindex="-1">#</a>"##)
            .expect("regex")
    });
    let html = HEADING_ID.replace_all(html, "<h$1");
    let html = ANCHOR.replace_all(&html, "");
    html.replace("<li>\n<", "<li><")
}

#[test]
fn spec_examples_come_through_as_plain_pulldown_cmark_makes_them() {
    compare(SPEC, INTENDED);
}

#[test]
fn heading_attribute_examples_come_through_as_plain_pulldown_cmark_makes_them() {
    compare(HEADING_ATTRIBUTES, &[]);
}

/// Compares every example of `spec`; `intended` lists the examples allowed to differ.
fn compare(spec: &str, intended: &[(usize, &str)]) {
    let mut unexpected = Vec::new();
    let mut identical_but_listed = Vec::new();
    for example in examples(spec) {
        let (ours, _) = attnbook::fuzzing::body_html(&example.markdown);
        let theirs = plain(&example.markdown);
        let differs = normalised(&ours) != normalised(&theirs);
        let listed = intended.iter().any(|(n, _)| *n == example.number);
        if differs && !listed {
            unexpected.push(format!(
                "example {} (line {}):\n{}--- attnbook\n{}--- pulldown-cmark\n{}",
                example.number, example.line, example.markdown, ours, theirs
            ));
        } else if !differs && listed {
            identical_but_listed.push(example.number);
        }
    }
    assert!(
        unexpected.is_empty(),
        "{} examples differ:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
    assert!(
        identical_but_listed.is_empty(),
        "listed as intended differences but identical now: {identical_but_listed:?}"
    );
}
