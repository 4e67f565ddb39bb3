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
