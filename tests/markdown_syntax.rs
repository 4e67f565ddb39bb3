//! attnbook's own syntax (quotes, citations, cross-references, math) never corrupts standard
//! Markdown (issue 12, items 10 and 14-18): each probe is a chapter body, the exact body HTML it
//! must give and the diagnostics it must raise. The Markdown stage runs with the stand-ins of
//! `attnbook::fuzzing::body_html`: a citation renders as `<a class="citation">KEYS</a>`, a
//! formula as `<span class="math">TEX</span>`, and no value is bound (quotes are `unbound`).

struct Probe {
    /// The issue item it covers.
    item: u32,
    markdown: &'static str,
    html: &'static str,
    /// One substring per expected diagnostic, in order.
    diagnostics: &'static [&'static str],
}

const fn probe(
    item: u32,
    markdown: &'static str,
    html: &'static str,
    diagnostics: &'static [&'static str],
) -> Probe {
    Probe {
        item,
        markdown,
        html,
        diagnostics,
    }
}

const PROBES: &[Probe] = &[
    // 10. Math the parser refused is reported where it stands; prices and `\$` are not.
    probe(
        10,
        "$$\\frac{a}{$$\n",
        "<p>$$\\frac{a}{$$</p>\n",
        &["`$$...$$` is not parsed"],
    ),
    probe(
        10,
        "x $\\frac{a}{$ y\n",
        "<p>x $\\frac{a}{$ y</p>\n",
        &["`$...$` is not parsed"],
    ),
    probe(10, "costs $5 and $6\n", "<p>costs $5 and $6</p>\n", &[]),
    probe(
        10,
        "\\$\\frac{a}{\\$ and `$$x{$$`\n",
        "<p>$\\frac{a}{$ and <code>$$x{$$</code></p>\n",
        &[],
    ),
    probe(
        10,
        "ok $x$ then $\\y{$\n",
        "<p>ok <span class=\"math\">x</span> then $\\y{$</p>\n",
        &["`$...$` is not parsed"],
    ),
    // 14. Destinations and autolinks are never syntax, and nothing stays masked.
    probe(
        14,
        "[t](<https://e.org/[@foo]>)\n",
        "<p><a href=\"https://e.org/%5B@foo%5D\">t</a></p>\n",
        &[],
    ),
    probe(
        14,
        "[t](<https://e.org/[1]{=x}>)\n",
        "<p><a href=\"https://e.org/%5B1%5D%7B=x%7D\">t</a></p>\n",
        &[],
    ),
    probe(
        14,
        "<https://e.org/[@foo]>\n",
        "<p><a href=\"https://e.org/%5B@foo%5D\">https://e.org/[@foo]</a></p>\n",
        &[],
    ),
    probe(
        14,
        "<https://e.org/[1]{=x}>\n",
        "<p><a href=\"https://e.org/%5B1%5D%7B=x%7D\">https://e.org/[1]{=x}</a></p>\n",
        &[],
    ),
    probe(
        14,
        "<https://e.org/@fig:x>\n",
        "<p><a href=\"https://e.org/@fig:x\">https://e.org/@fig:x</a></p>\n",
        &[],
    ),
    probe(
        14,
        "[@foo](https://e.org)\n",
        "<p><a href=\"https://e.org\">@foo</a></p>\n",
        &[],
    ),
    // 15. A backslash makes `[` and `@` literal; an escaped backslash does not.
    probe(15, "a \\[@foo] b\n", "<p>a [@foo] b</p>\n", &[]),
    probe(15, "a \\[1]{=x} b\n", "<p>a [1]{=x} b</p>\n", &[]),
    probe(15, "a \\@fig:x b\n", "<p>a @fig:x b</p>\n", &[]),
    probe(
        15,
        "a \\\\@fig:x b\n",
        "<p>a \\<span class=\"xref unresolved\">@fig:x</span> b</p>\n",
        &["unresolved reference"],
    ),
    probe(
        15,
        "a \\\\[@foo] b\n",
        "<p>a \\<a class=\"citation\" href=\"#ref-foo\">foo</a> b</p>\n",
        &[],
    ),
    // 16. Link reference definitions and labels that start with `@` are Markdown.
    probe(
        16,
        "[@foo]: /url\n\n[@foo]\n",
        "<p><a href=\"/url\">@foo</a></p>\n",
        &[],
    ),
    probe(
        16,
        "[x][@foo]\n\n[@foo]: /url\n",
        "<p><a href=\"/url\">x</a></p>\n",
        &[],
    ),
    // 17. Inside link text a citation or reference is plain text (no `<a>` in an `<a>`);
    // inside alt text everything is plain text. A quote in link text keeps its markup.
    probe(
        17,
        "[see [@foo]](/u)\n",
        "<p><a href=\"/u\">see foo</a></p>\n",
        &[],
    ),
    probe(
        17,
        "[see @fig:x](/u)\n",
        "<p><a href=\"/u\">see @fig:x</a></p>\n",
        &["unresolved reference"],
    ),
    probe(
        17,
        "![see [@foo] and [1]{=x} and $x$](a.png)\n",
        "<p><img src=\"/a.png\" alt=\"see foo and 1 and x\" /></p>\n",
        &["unknown value `x`", "image `a.png` not found"],
    ),
    // 18. Heading attributes keep their classes and attributes.
    probe(
        18,
        "# T {.cls data-x=1}\n",
        "<h1 id=\"t\" class=\"cls\" data-x=\"1\"><a class=\"anchor\" href=\"#t\" aria-hidden=\"true\" tabindex=\"-1\">#</a>T</h1>\n",
        &[],
    ),
    probe(
        18,
        "# T [@foo] {#t .c hidden}\n",
        "<h1 id=\"t\" class=\"c\" hidden=\"\"><a class=\"anchor\" href=\"#t\" aria-hidden=\"true\" tabindex=\"-1\">#</a>T <a class=\"citation\" href=\"#ref-foo\">foo</a></h1>\n",
        &[],
    ),
    // Issue 16, item 6: the empty corner of a two-way table is a data cell, not a header
    // that names nothing; the other headers stay headers, aligned.
    probe(
        16,
        "| | a |\n| --- | ---: |\n| x | 1 |\n",
        "<div class=\"table-wrap\">\n<table><thead><tr><td></td><th style=\"text-align: right\">a</th></tr></thead><tbody>\n<tr><td>x</td><td style=\"text-align: right\">1</td></tr>\n</tbody></table>\n</div>\n",
        &[],
    ),
    // What the pre-pass exists for keeps working: a quote closing a heading, two `~` tolerances.
    probe(
        18,
        "# 熵 [0.08]{=x}\n",
        "<h1 id=\"熵-0-08\"><a class=\"anchor\" href=\"#熵-0-08\" aria-hidden=\"true\" tabindex=\"-1\">#</a>熵 <span class=\"quote unbound\" data-name=\"x\" title=\"未知的值 x\">0.08</span></h1>\n",
        &["unknown value `x`"],
    ),
    probe(
        14,
        "a [1.0]{=x ~20%} b [2.0]{=x ~20%} c\n",
        "<p>a <span class=\"quote unbound\" data-name=\"x\" title=\"未知的值 x\">1.0</span> b <span class=\"quote unbound\" data-name=\"x\" title=\"未知的值 x\">2.0</span> c</p>\n",
        &["unknown value `x`", "unknown value `x`"],
    ),
    probe(
        14,
        "see [@a;\n@b] here\n",
        "<p>see <a class=\"citation\" href=\"#ref-a\">a; b</a> here</p>\n",
        &[],
    ),
    probe(
        14,
        "a &amp; [1]{=x} b\n",
        "<p>a &amp; <span class=\"quote unbound\" data-name=\"x\" title=\"未知的值 x\">1</span> b</p>\n",
        &["unknown value `x`"],
    ),
    // Raw HTML: Markdown between blank lines works; syntax inside the HTML block is reported.
    probe(
        14,
        "<details>\n\n答案是 [0.5]{=x}\n\n</details>\n",
        "<details>\n<p>答案是 <span class=\"quote unbound\" data-name=\"x\" title=\"未知的值 x\">0.5</span></p>\n</details>\n",
        &["unknown value `x`"],
    ),
    probe(
        14,
        "<details>\n答案是 [0.5]{=x}，见 [@foo] 与 @fig:y\n</details>\n",
        "<details>\n答案是 [0.5]{=x}，见 [@foo] 与 @fig:y\n</details>\n",
        &[
            "quote `[0.5]{=x}` inside raw HTML",
            "citation `[@foo]` inside raw HTML",
            "cross-reference `@fig:y` inside raw HTML",
        ],
    ),
    probe(
        14,
        "<!-- [0.5]{=x} [@foo] @fig:y -->\n",
        "<!-- [0.5]{=x} [@foo] @fig:y -->\n",
        &[],
    ),
];

#[test]
fn probes_give_their_html_and_diagnostics() {
    let mut failures = Vec::new();
    for p in PROBES {
        let (html, diagnostics) = attnbook::fuzzing::body_html(p.markdown);
        let messages: Vec<&str> = diagnostics.iter().map(|d| d.message.as_str()).collect();
        let diagnostics_match = messages.len() == p.diagnostics.len()
            && messages
                .iter()
                .zip(p.diagnostics)
                .all(|(m, want)| m.contains(want));
        if html != p.html || !diagnostics_match {
            failures.push(format!(
                "item {}: {:?}\n  got      {html:?} {messages:?}\n  expected {:?} {:?}",
                p.item, p.markdown, p.html, p.diagnostics
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A quote that is text before masking but not after (here: it becomes part of a heading's
/// attribute block) is shown as written and reported, never left masked.
#[test]
fn a_quote_that_does_not_come_back_as_text_is_shown_as_written() {
    let (html, diagnostics) = attnbook::fuzzing::body_html("# a {#h [1]{=x}}\n");
    assert!(!html.contains("QQQ"), "{html}");
    let messages: Vec<&str> = diagnostics.iter().map(|d| d.message.as_str()).collect();
    assert!(
        messages.iter().any(|m| m.contains("shown as written")),
        "{messages:?}"
    );
}
