use std::path::Path;

use super::*;

fn chapter(body: &str) -> Chapter {
    let src = format!("+++\ntitle = \"T\"\nnumber = 1\n+++\n{body}");
    Chapter::parse(Path::new("content/01-t.md"), src).unwrap()
}

fn parsed(body: &str) -> (Chapter, Doc, Vec<Diagnostic>) {
    let c = chapter(body);
    let (doc, diags) = parse(&c);
    (c, doc, diags)
}

#[test]
fn math_keeps_its_file_position() {
    let (c, doc, _) = parsed("设 $d_k=64$，则\n\n$$\n\\sqrt{d_k}\n$$\n");
    assert_eq!(doc.maths.len(), 2);
    assert_eq!(doc.maths[0].tex, "d_k=64");
    assert!(!doc.maths[0].display);
    assert_eq!(c.location(doc.maths[0].span.clone()).line, 5);
    assert!(doc.maths[1].display);
    assert_eq!(c.location(doc.maths[1].span.clone()).line, 7);
}

#[test]
fn display_math_alone_is_not_wrapped_in_a_paragraph() {
    let (_, doc, _) = parsed("$$\nx^2\n$$\n");
    assert!(
        !doc.pieces
            .iter()
            .any(|p| matches!(p, Piece::Event(Event::Start(Tag::Paragraph))))
    );
}

#[test]
fn experiment_blocks_and_pinned_output() {
    let body = "text\n\n```rust,experiment,hide\n# let x = 1;\nprintln!(\"{}\", x);\n```\n\n```output\n1\n```\n";
    let (_, doc, diags) = parsed(body);
    assert!(diags.is_empty(), "{diags:?}");
    let exp = &doc.experiments[0];
    assert!(exp.options.hide);
    assert_eq!(exp.line, 7);
    assert_eq!(exp.lines[0].line, 8);
    assert_eq!(exp.lines[1].code, "println!(\"{}\", x);");
    let pinned = exp.pinned.as_ref().unwrap();
    assert_eq!(pinned.text, "1\n");
    assert_eq!(pinned.line, 13);
    // The output block is folded into the experiment, not rendered as code.
    assert!(!doc.pieces.iter().any(|p| matches!(p, Piece::Code { .. })));
}

#[test]
fn an_empty_pinned_output_points_inside_its_fences() {
    let body = "```rust,experiment\nprintln!(\"hello\");\n```\n\n```output\n```\n";
    let (c, doc, _) = parsed(body);
    let pinned = doc.experiments[0].pinned.as_ref().unwrap();
    assert_eq!(pinned.text, "");
    assert_eq!(
        &c.source[pinned.text_span.start - 10..pinned.text_span.start],
        "```output\n"
    );
    assert_eq!(&c.source[pinned.text_span.start..], "```\n");
}

#[test]
fn an_output_block_elsewhere_is_ordinary_code() {
    let (_, doc, _) = parsed("```output\n1\n```\n");
    assert!(doc.experiments.is_empty());
    assert!(doc.pieces.iter().any(|p| matches!(p, Piece::Code { .. })));
}

#[test]
fn quotes_become_pieces_between_text() {
    let (_, doc, _) = parsed("熵是 [0.08]{=h ~5%} 而非 [2.1]{=g ~10%}。\n");
    assert_eq!(doc.quotes.len(), 2);
    let kinds: Vec<&str> = doc
        .pieces
        .iter()
        .map(|p| match p {
            Piece::Quote(_) => "Q",
            Piece::Event(Event::Text(_)) => "T",
            _ => "-",
        })
        .collect();
    assert_eq!(kinds, ["-", "T", "Q", "T", "Q", "T", "-"]);
}

#[test]
fn two_relative_tolerances_do_not_make_strikethrough() {
    let (_, doc, _) = parsed("a [1.0]{=x ~20%} b [2.0]{=y ~20%} c\n");
    assert!(
        !doc.pieces
            .iter()
            .any(|p| matches!(p, Piece::Event(Event::Start(Tag::Strikethrough))))
    );
    assert_eq!(doc.quotes.len(), 2);
}

#[test]
fn quotes_in_code_are_not_quotes() {
    let (_, doc, _) = parsed("`[1]{=x}`\n\n```\n[2]{=y}\n```\n");
    assert!(doc.quotes.is_empty());
}

#[test]
fn placements_and_headings() {
    let (_, doc, _) =
        parsed("## 缩放 $\\sqrt{d}$ {#scale}\n\n## 结果\n\n{{table: var}}\n\n## 结果\n");
    assert_eq!(doc.headings[0].id, "scale");
    assert_eq!(doc.headings[1].id, "结果");
    assert_eq!(doc.headings[2].id, "结果-1");
    assert!(doc.pieces.iter().any(
        |p| matches!(p, Piece::Placement { kind: PlacementKind::Table, name, .. } if name == "var")
    ));
}

#[test]
fn bad_block_options_are_diagnostics() {
    let (_, _, diags) = parsed("```rust,experiment,hiden\n1;\n```\n");
    assert_eq!(diags.len(), 1);
    assert!(diags[0].message.contains("hiden"));
    assert_eq!(diags[0].location.as_ref().unwrap().line, 5);
}

/// The paragraph's pieces as the HTML renders them: text, with a soft break as `⏎`.
fn paragraph_text(body: &str) -> String {
    let (_, doc, _) = parsed(body);
    doc.pieces
        .iter()
        .map(|p| match p {
            Piece::Event(Event::Text(t)) => t.to_string(),
            Piece::Event(Event::SoftBreak) => "⏎".to_owned(),
            Piece::Event(Event::HardBreak) => "↵".to_owned(),
            Piece::Event(Event::Start(Tag::Strong)) | Piece::Event(Event::End(TagEnd::Strong)) => {
                "**".to_owned()
            }
            Piece::Math(_) => "$".to_owned(),
            _ => String::new(),
        })
        .collect()
}

#[test]
fn a_line_break_inside_chinese_text_is_no_space() {
    assert_eq!(paragraph_text("缩放点积\n注意力。\n"), "缩放点积注意力。");
    // Full-width punctuation and kana count; emphasis marks are looked through.
    assert_eq!(
        paragraph_text("权重，\n「注意」\n**力**\nです\n"),
        "权重，「注意」**力**です"
    );
}

#[test]
fn a_line_break_between_chinese_and_anything_else_stays() {
    assert_eq!(paragraph_text("用\nsoftmax\n归一化\n"), "用⏎softmax⏎归一化");
    assert_eq!(paragraph_text("设\n$d_k$\n为维度\n"), "设⏎$⏎为维度");
    // Korean writes spaces between words.
    assert_eq!(paragraph_text("주의\n집중\n"), "주의⏎집중");
    // A hard break is the author's choice.
    assert_eq!(paragraph_text("第一行\\\n第二行\n"), "第一行↵第二行");
}

/// Redteam-3 D10: an id two headings claim, or that a heading shares with a code line's `L8`,
/// is an error at the later place naming the earlier one.
#[test]
fn duplicate_ids_on_a_page_are_errors_naming_both_places() {
    let (_, _, diags) = parsed(
        "## Intro {#L8}\n\n```rust,experiment\nlab.value(\"a\", 0.5);\n```\n\n\
         ## Same {#x}\n\n## Same {#x}\n\n## y\n\n## Other {#y}\n",
    );
    let messages: Vec<String> = diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            format!(
                "{}: {} / {:?}",
                d.location.as_ref().unwrap(),
                d.message,
                d.notes
            )
        })
        .collect();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert!(
        messages[0].starts_with("content/01-t.md:5:1: the heading's id `L8`"),
        "{messages:#?}"
    );
    assert!(
        messages[1].starts_with("content/01-t.md:13:1: duplicate id `x`"),
        "{messages:#?}"
    );
    assert!(messages[1].contains("the heading at content/01-t.md:11:1 already has it"));
    assert!(
        messages[2].starts_with("content/01-t.md:17:1: duplicate id `y`"),
        "{messages:#?}"
    );
    // Derived ids that meet are numbered, as before: not an error.
    let (_, doc, diags) = parsed("## Same\n\n## Same\n");
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
    assert_eq!(doc.headings[1].id, "same-1");
}

/// Redteam-3 D10: a figure or table placed twice, an image figure or equation label given
/// twice, and a heading taking one of their ids are errors at the later place naming the first.
#[test]
fn elements_with_one_id_are_errors_naming_both_places() {
    let (_, _, diags) = parsed(
        "{{figure: f}}\n\n{{table: t}}\n\n{{figure: f}}\n\n{{table: t}}\n\n\
         ![a](x.svg){#fig:g}\n\n![b](y.svg){#fig:g}\n\n## fig-f\n\n\
         $$\nx\n$$ {#eq:e}\n\n$$\ny\n$$ {#eq:e}\n",
    );
    let messages: Vec<String> = diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            format!(
                "{}: {} / {}",
                d.location.as_ref().unwrap(),
                d.message,
                d.notes.join("; ")
            )
        })
        .collect();
    let expected = [
        "content/01-t.md:9:1: duplicate id `fig-f` on the page / the figure placed at content/01-t.md:5:1 already has it",
        "content/01-t.md:11:1: duplicate id `tab-t` on the page / the table placed at content/01-t.md:7:1 already has it",
        "content/01-t.md:15:1: duplicate id `fig-g` on the page / the figure at content/01-t.md:13:1 already has it",
        "content/01-t.md:23:1: duplicate id `eq-e` on the page / the equation at content/01-t.md:19:1 already has it",
        "content/01-t.md:17:1: duplicate id `fig-f` on the page / the figure placed at content/01-t.md:5:1 has it too",
    ];
    assert_eq!(messages, expected, "{messages:#?}");
    // One of each is fine.
    let (_, _, diags) = parsed("{{figure: f}}\n\n{{table: f}}\n\n## f\n");
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
}

/// Redteam-3 D10, the class: a page with citations ends with its reference list
/// (`#bibliography`, one `#ref-KEY` per cited key), so a heading taking one of those ids is an
/// error naming the first citation; a key cited twice is one entry, not a duplicate.
#[test]
fn a_heading_cannot_take_the_reference_lists_ids() {
    let (_, _, diags) = parsed(
        "见[@vaswani2017]与[@bahdanau2015; @vaswani2017]。\n\n## Bibliography\n\n\
         ## ref-bahdanau2015\n\n## ref-other\n",
    );
    let messages: Vec<String> = diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| {
            format!(
                "{}: {} / {}",
                d.location.as_ref().unwrap(),
                d.message,
                d.notes.join("; ")
            )
        })
        .collect();
    assert_eq!(
        messages,
        [
            "content/01-t.md:7:1: duplicate id `bibliography` on the page / the reference list cited at content/01-t.md:5:2 has it too",
            "content/01-t.md:9:1: duplicate id `ref-bahdanau2015` on the page / the reference list cited at content/01-t.md:5:17 has it too",
        ],
        "{messages:#?}"
    );
    // Without citations the page has no reference list, and the ids are free.
    let (_, _, diags) = parsed("## Bibliography\n\n## ref-x\n");
    assert!(diags.iter().all(|d| !d.is_error()), "{diags:?}");
}

#[test]
fn an_explorable_passage_holds_its_quotes_and_claims_and_names_its_block() {
    let body = "```rust,experiment,param=\"tau: 0.5, 1; default 1\"\nlet t = lab.param(\"tau\");\n```\n\n\
                前 [1]{=a}。\n\n{{explore: tau}}\n\n中 [2]{=b}，[真]{? b > 0}。\n\n{{/explore}}\n\n后 [3]{=c}。\n";
    let (c, doc, diags) = parsed(body);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(doc.explores.len(), 1);
    let e = &doc.explores[0];
    assert_eq!(e.param, "tau");
    assert_eq!(e.block, 0);
    assert_eq!(e.quotes, [1]);
    assert_eq!(e.claims, [0]);
    assert_eq!(c.location(e.span.clone()).line, 11);
    assert!(matches!(
        doc.pieces[e.pieces.start - 1],
        Piece::ExploreStart(0)
    ));
    assert!(matches!(doc.pieces[e.pieces.end], Piece::ExploreEnd(0)));
    assert!(e.contains(doc.quotes[1].span.start));
    assert!(!e.contains(doc.quotes[2].span.start));
    assert!(
        !doc.pieces
            .iter()
            .any(|p| matches!(p, Piece::ExploreMarker { .. }))
    );
}

#[test]
fn malformed_passages_are_each_reported_at_their_marker() {
    let body = "```rust,experiment,param=\"n: 1, 2; default 1\"\nlet n = 1;\n```\n\n\
                {{/explore}}\n\n{{explore: m}}\n\n{{explore}}\n\n{{explore: n}}\n\n{{explore: n}}\n\n> {{explore: n}}\n";
    let (c, doc, diags) = parsed(body);
    let said: Vec<String> = diags
        .iter()
        .map(|d| {
            format!(
                "{}: {}",
                d.location.as_ref().map_or(0, |l| l.line),
                d.message
            )
        })
        .collect();
    assert!(
        said.contains(&"9: `{{/explore}}` closes no passage".to_string()),
        "{said:?}"
    );
    assert!(
        said.contains(&"11: unknown parameter `m` in `{{explore: m}}`".to_string()),
        "{said:?}"
    );
    assert!(
        said.contains(&"13: an explorable passage names no parameter".to_string()),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|s| s.starts_with("17: `{{explore: n}}` inside the passage of `n`")),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|s| s.starts_with("19: an explorable passage's marker stands inside")),
        "{said:?}"
    );
    assert!(
        said.contains(&"15: `{{explore: n}}` is never closed".to_string()),
        "{said:?}"
    );
    assert!(doc.explores.is_empty(), "an unclosed passage is dropped");
    let _ = c;
}

#[test]
fn a_backslash_keeps_a_passage_marker_literal() {
    let (_, doc, diags) = parsed("\\{{explore: n}}\n");
    assert!(diags.is_empty(), "{diags:?}");
    assert!(doc.explores.is_empty());
    assert!(
        doc.pieces
            .iter()
            .any(|p| matches!(p, Piece::Event(Event::Text(t)) if t.contains("{{explore: n}}")))
    );
}
