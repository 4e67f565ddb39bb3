//! The glossary (issue 13): `content/glossary.toml` feeds the `{{glossary}}` page and a rule
//! that warns on listed variants in the prose, and fails `--strict` builds and `check`.

mod common;

use common::Site;

#[test]
fn variants_in_prose_are_warnings_at_their_place_with_the_preferred_term() {
    let site = Site::fixture("glossary");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let at = |place: &str, variant: &str, term: &str| {
        format!(
            "content/01-first.md:{place}: warning: `{variant}` is a variant of the glossary term `{term}`"
        )
    };
    for (place, variant, term) in [
        ("6:4", "热图", "热力图"),
        ("8:3", "热图", "热力图"),
        ("8:16", "注意机制", "注意力"),
    ] {
        assert!(
            run.stderr.contains(&at(place, variant, term)),
            "{}",
            run.stderr
        );
    }
    assert!(
        run.stderr.contains("help: write `热力图`"),
        "{}",
        run.stderr
    );
    // Inline code, a link destination, math and code blocks are not prose; `attnbook` is not
    // the ASCII variant `attn`; and 注意力 is not its own variant.
    assert_eq!(
        run.stderr.matches("is a variant of").count(),
        3,
        "{}",
        run.stderr
    );
}

#[test]
fn strict_builds_and_check_fail_on_a_variant() {
    let site = Site::fixture("glossary");
    let strict = site.run(&["build", "--strict"]);
    assert_ne!(strict.code, 0, "{}", strict.stderr);
    assert!(
        strict.stderr.contains("error: `热图` is a variant"),
        "{}",
        strict.stderr
    );
    let check = site.run(&["check"]);
    assert_eq!(check.code, 1, "{}", check.stderr);
    site.write(
        "content/01-first.md",
        "+++\ntitle = \"第一篇\"\nnumber = 1\n+++\n\n这张热力图画的是注意力权重。\n",
    );
    let clean = site.run(&["build", "--strict"]);
    assert_eq!(clean.code, 0, "{}", clean.stderr);
}

#[test]
fn the_glossary_page_renders_terms_and_notation_from_the_data_file() {
    let site = Site::fixture("glossary");
    assert_eq!(site.run(&["build"]).code, 0);
    let page = site.read("public/glossary/index.html");
    assert!(page.contains("<table class=\"glossary\">"), "{page}");
    assert!(
        page.contains("<tr id=\"term-heatmap\"><td>热力图</td><td lang=\"en\">heatmap</td><td>热图</td><td>权重矩阵的图</td></tr>"),
        "{page}"
    );
    let notation = &page[page
        .find("<table class=\"notation\">")
        .expect("notation table")..];
    assert!(notation.contains("class=\"katex\""), "{notation}");
    assert!(notation.contains("键向量的维数"), "{notation}");
    assert!(!page.contains("{{glossary}}"), "{page}");
}

#[test]
fn a_broken_glossary_or_a_missing_one_is_an_error_at_its_line() {
    let site = Site::fixture("glossary");
    site.write(
        "content/glossary.toml",
        "[[term]]\nterm = \"热力图\"\nenglsh = \"heatmap\"\n",
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("content/glossary.toml:3:1: error"),
        "{}",
        run.stderr
    );
    std::fs::remove_file(site.path("content/glossary.toml")).unwrap();
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "content/appendix/glossary.md:5:1: error: `{{glossary}}` but the site has no glossary"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn a_notation_symbol_katex_rejects_is_a_warning_at_its_line() {
    let site = Site::fixture("glossary");
    site.write(
        "content/glossary.toml",
        "[[notation]]\nsymbol = \"d_k\"\nmeaning = \"维数\"\n\n[[notation]]\nsymbol = \"\\\\frac{1\"\nmeaning = \"坏的\"\n",
    );
    site.write(
        "content/01-first.md",
        "+++\ntitle = \"第一篇\"\nnumber = 1\n+++\n\n正文。\n",
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "content/glossary.toml:6:10: warning: KaTeX cannot render this notation symbol"
        ),
        "{}",
        run.stderr
    );
    assert!(
        site.read("public/glossary/index.html")
            .contains("<code>\\frac{1</code>")
    );
    assert_ne!(site.run(&["build", "--strict"]).code, 0);
}

/// Every warning line of a run, `path:line:col: warning: message`.
fn variant_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains("is a variant of"))
        .collect()
}

/// Redteam-3 D5: the documented `#term-ENGLISH` anchors are links the checker knows, from a
/// chapter and from the glossary page itself; a term that is not there is still an error.
#[test]
fn links_to_glossary_rows_check_out() {
    let site = Site::fixture("glossary");
    site.write(
        "content/01-first.md",
        "+++\ntitle = \"第一篇\"\nnumber = 1\n+++\n\n见[热力图](glossary.md#term-heatmap)。\n",
    );
    site.write(
        "content/appendix/glossary.md",
        "+++\ntitle = \"术语与记号\"\n+++\n\n先看[注意力](#term-attention)。\n\n{{glossary}}\n",
    );
    let run = site.run(&["build", "--strict"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        site.read("public/glossary/index.html")
            .contains("<tr id=\"term-attention\">")
    );
    site.write(
        "content/01-first.md",
        "+++\ntitle = \"第一篇\"\nnumber = 1\n+++\n\n见[热力图](glossary.md#term-heat-map)。\n",
    );
    let run = site.run(&["check"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "content/01-first.md:6:2: error: broken link: no anchor `#term-heat-map` in chapter `glossary`"
        ),
        "{}",
        run.stderr
    );
}

/// Redteam-3 D6: a variant is found where the reader sees it: split by a line break (also in a
/// blockquote or a list item) or by emphasis, in another case, and in the title, summary and
/// tags.
#[test]
fn variants_are_found_as_the_reader_sees_them() {
    let site = Site::fixture("glossary");
    site.write(
        "content/glossary.toml",
        "[[term]]\nterm = \"热力图\"\nenglish = \"heatmap\"\nvariants = [\"热图\", \"heat map\"]\n",
    );
    site.write(
        "content/01-first.md",
        "+++\ntitle = \"热图的画法\"\nnumber = 1\nsummary = \"画一张热图\"\ntags = [\"热图\"]\n+++\n\n\
         画一张热\n图看看。\n\n**热**图和 Heat map 与 heat\nmap。\n\n\
         热  \n图是两行，热力图不是变体。\n\n> 引用热\n> 图。\n\n- 列表热\n  图。\n",
    );
    let run = site.run(&["check"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let found = variant_lines(&run.stderr);
    let places: Vec<&str> = found
        .iter()
        .map(|l| l.split(": warning").next().unwrap_or(l))
        .map(|l| l.split(": error").next().unwrap_or(l))
        .collect();
    assert_eq!(
        places,
        [
            "content/01-first.md:2:10",
            "content/01-first.md:4:15",
            "content/01-first.md:5:10",
            "content/01-first.md:8:4",
            "content/01-first.md:11:3",
            "content/01-first.md:11:9",
            "content/01-first.md:11:20",
            // A line break in a blockquote or a list item joins too (the prefix is no text).
            "content/01-first.md:17:5",
            "content/01-first.md:20:5",
        ],
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("`Heat map` is a variant")
            || run.stderr.contains("`heat map` is a variant"),
        "{}",
        run.stderr
    );
}

/// Redteam-3 D16 and D20: glossary problems are reported at the value they are in, whatever
/// the layout, and a control character put in by an escape is a warning like anywhere else.
#[test]
fn glossary_problems_point_at_their_value() {
    let site = Site::fixture("glossary");
    site.write(
        "content/01-first.md",
        "+++\ntitle = \"第一篇\"\nnumber = 1\n+++\n\n正文。\n",
    );
    // A note that mentions `symbol` before the notation, and an inline notation table.
    site.write(
        "content/glossary.toml",
        "[[term]]\nterm = \"甲\"\nenglish = \"a\"\nnote = \"\"\"\nsymbol table\n\"\"\"\n\n\
         [[notation]]\nsymbol = \"x\"\nmeaning = \"m\"\n\n[[notation]]\nsymbol = \"\\\\frac{\"\nmeaning = \"m\"\n",
    );
    let run = site.run(&["build"]);
    assert!(
        run.stderr.contains(
            "content/glossary.toml:13:10: warning: KaTeX cannot render this notation symbol"
        ),
        "{}",
        run.stderr
    );
    site.write(
        "content/glossary.toml",
        "notation = [{symbol = \"x\", meaning = \"m\"}, {symbol = \"\\\\frac{\", meaning = \"m\"}]\n",
    );
    let run = site.run(&["build"]);
    assert!(
        run.stderr.contains(
            "content/glossary.toml:1:54: warning: KaTeX cannot render this notation symbol"
        ),
        "{}",
        run.stderr
    );
    // A variant that is also a term, at the variant, not at the first `"乙"` in the file.
    site.write(
        "content/glossary.toml",
        "[[term]]\nterm = \"甲\"\nenglish = \"a\"\nnote = \"乙\"\n\n[[term]]\nterm = \"乙\"\nenglish = \"b\"\n\n\
         [[term]]\nterm = \"丙\"\nenglish = \"c\"\nvariants = [\"丁\", \"乙\"]\n",
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "content/glossary.toml:13:18: error: `乙` is both a variant of `丙` and a preferred term"
        ),
        "{}",
        run.stderr
    );
    // Control characters from escapes, at their values.
    site.write(
        "content/glossary.toml",
        "[[term]]\nterm = \"热力图\"\nenglish = \"heat\\u000cmap\"\nnote = \"x\\u0001y\"\n",
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for line in [
        "content/glossary.toml:3:11: warning",
        "content/glossary.toml:4:8: warning",
    ] {
        assert!(run.stderr.contains(line), "{line}\n{}", run.stderr);
    }
    assert_ne!(site.run(&["build", "--strict"]).code, 0);
}

/// Redteam-3 D10: two terms whose English gives one id, and the glossary placed twice, are
/// errors naming both places.
#[test]
fn two_glossary_rows_with_one_id_are_an_error() {
    let site = Site::fixture("glossary");
    site.write(
        "content/glossary.toml",
        "[[term]]\nterm = \"甲\"\nenglish = \"a b\"\n\n[[term]]\nterm = \"乙\"\nenglish = \"a-b\"\n",
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "content/glossary.toml:7:11: error: the glossary rows of `a b` and `a-b` would both have the id `term-a-b`"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("content/glossary.toml:3: `a b` has it first"),
        "{}",
        run.stderr
    );
    site.write(
        "content/glossary.toml",
        "[[term]]\nterm = \"甲\"\nenglish = \"a\"\n",
    );
    site.write(
        "content/appendix/glossary.md",
        "+++\ntitle = \"术语与记号\"\n+++\n\n{{glossary}}\n\n{{glossary}}\n",
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("content/appendix/glossary.md:7:1: error: `{{glossary}}` is placed twice"),
        "{}",
        run.stderr
    );
    // A heading that takes a row's id on the page that places the glossary (redteam-3 D10,
    // the class); the same heading on another page is fine.
    site.write(
        "content/appendix/glossary.md",
        "+++\ntitle = \"术语与记号\"\n+++\n\n## term-a\n\n{{glossary}}\n",
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "content/appendix/glossary.md:5:1: error: duplicate id `term-a` on the page"
        ) && run.stderr.contains(
            "the glossary placed at content/appendix/glossary.md:7:1 has it too, on the row of `甲`"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn a_term_s_first_use_in_a_chapter_links_to_its_entry_with_its_english_and_note_as_preview() {
    let site = Site::fixture("glossary");
    site.write(
        "content/02-second.md",
        "+++\ntitle = \"第二篇\"\nnumber = 2\n+++\n\n## 注意力\n\n画热力图：[注意力](https://example.com/)、热力图与注意力权重的热力图。\n",
    );
    assert_eq!(site.run(&["build"]).code, 0);
    let page = site.read("public/second/index.html");
    let body = &page[page.find("<h2").unwrap()..];
    // Not in the heading, not in a link's text: the first use in the prose, once.
    assert!(
        body.contains("画<a class=\"term\" href=\"/glossary/#term-heatmap\">热力图</a>：<a href=\"https://example.com/\">注意力</a>、热力图与<a class=\"term\" href=\"/glossary/#term-attention\">注意力</a>权重的热力图。"),
        "{body}"
    );
    assert!(
        page.contains("<template class=\"preview\" data-href=\"/glossary/#term-heatmap\"><p class=\"preview-title\">热力图 <span lang=\"en\">heatmap</span></p><p>权重矩阵的图</p></template>"),
        "{page}"
    );
    // The glossary page itself links no term to itself.
    let glossary = site.read("public/glossary/index.html");
    assert!(!glossary.contains("class=\"term\""), "{glossary}");
}
