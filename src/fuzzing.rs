//! One entry point that drives every pure stage on one chapter's text, for the no-panic
//! property tests (`tests/no_panic.rs`) and the cargo-fuzz target (`fuzz/`): front matter,
//! Markdown, quotes, citations, cross-references, experiment extraction, link checks and HTML.
//! Nothing here touches the file system or runs experiments.

use std::path::Path;

use crate::config::Config;
use crate::content::{Chapter, Series};
use crate::diagnostic::Diagnostic;
use crate::lab::Ran;
use crate::markdown;
use crate::markdown::Parsed;
use crate::markdown::quote::{self as syntax, Tolerance};
use crate::quotes;
use crate::quotes::Bound;
use crate::render::{html, links, xref};

/// Runs the pure stages on `text` as `content/01-x.md`; problems are diagnostics, never panics.
///
/// `values` stand in for what the experiments recorded: the quoted names, in order of first
/// appearance, get them in turn (cycling), so binding, the tolerance checks, formatting like
/// the quote and the `--fix` rewrite all run on them. With no values, no experiment ran.
pub fn pure_stages(text: String, values: &[f64]) {
    let _ = syntax::scan(&text, 0, &[]);
    let _ = rendered(text, values);
}

/// Splits fuzzer bytes into experiment values and chapter text: the first byte says how many
/// values (0 to 7), each read as 8 little-endian bytes; the rest is the text. Every bit pattern
/// is a value, so NaN, infinities, zeros and subnormals all come up.
pub fn split_fuzz_input(data: &[u8]) -> (Vec<f64>, &[u8]) {
    let Some((&count, rest)) = data.split_first() else {
        return (Vec::new(), data);
    };
    let chunks = rest.chunks_exact(8).take(usize::from(count % 8));
    let values: Vec<f64> = chunks
        .map(|c| f64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect();
    (values.clone(), &rest[values.len() * 8..])
}

/// Gives the quoted names of `chapter` the `values` in turn, as a finished run would.
fn record(chapter: &Parsed, values: &[f64]) -> Option<crate::lab::ChapterRun> {
    if values.is_empty() {
        return None;
    }
    let mut names: Vec<&str> = Vec::new();
    for quote in &chapter.doc.quotes {
        if !names.contains(&quote.name.as_str()) {
            names.push(&quote.name);
        }
    }
    let recorded = names
        .iter()
        .zip(values.iter().cycle())
        .map(|(name, x)| lab_protocol::Value {
            name: name.to_string(),
            block: 0,
            shape: Vec::new(),
            data: vec![lab_protocol::Number(*x)],
            volatile: false,
            file: String::new(),
            line: 0,
        })
        .collect();
    let mut run = crate::lab::ChapterRun::default();
    run.results.values = recorded;
    Some(run)
}

/// What `verify --fix` does with the drifted quotes of `chapter`: the edits are applied, and
/// the rewritten text must still hold every quote, each rewritten one passing the rounding rule.
fn fix_quotes(chapter: &Bound) {
    let edits: Vec<(usize, quotes::fix::Edit)> = chapter
        .doc
        .quotes
        .iter()
        .zip(&chapter.bindings)
        .enumerate()
        .filter(|(_, (_, b))| b.status == quotes::Status::Drift)
        .filter_map(|(i, (q, b))| Some((i, quotes::fix::quote_edit(q, b)?)))
        .collect();
    if edits.is_empty() {
        return;
    }
    let only: Vec<_> = edits.iter().map(|(_, e)| e.clone()).collect();
    let fixed = quotes::fix::apply(&chapter.source, &only);
    // Read back as the next `verify` would: quotes in code or math are not quotes.
    let again = Chapter::parse(&chapter.path, fixed.clone()).expect("--fix broke the front matter");
    let after = markdown::parse(&again).0.quotes;
    assert_eq!(
        after.len(),
        chapter.doc.quotes.len(),
        "--fix lost or made a quote:\n{fixed}"
    );
    for (i, _) in &edits {
        let rerun = chapter.bindings[*i].rerun.unwrap_or(f64::NAN);
        let number = &after[*i].number;
        assert!(
            quotes::within(Tolerance::Round, number, rerun),
            "--fix wrote {} for {rerun}",
            &fixed[number.span.clone()]
        );
    }
}

/// The HTML the Markdown stage and the body renderer make of a chapter body (front matter is
/// added), with the diagnostics. Stages that are not pure have stand-ins: no experiments ran,
/// a formula renders as `<span class="math">TEX</span>`, a citation as
/// `<a class="citation" href="#ref-KEY">KEY</a>`. For the syntax tests (`tests/markdown.rs`).
pub fn body_html(body: &str) -> (String, Vec<Diagnostic>) {
    let text = format!("+++\ntitle = \"T\"\nnumber = 1\n+++\n{body}");
    rendered(text, &[]).unwrap_or_default()
}

fn rendered(text: String, values: &[f64]) -> Option<(String, Vec<Diagnostic>)> {
    let chapter = Chapter::parse(Path::new("content/01-x.md"), text).ok()?;
    let (parsed, mut diagnostics) = Parsed::new(chapter);
    let run = record(&parsed, values);
    let config = Config::parse(Path::new("site.toml"), "title = \"T\"\nbase_url = \"/\"\n").ok()?;
    let series = Series {
        root: ".".into(),
        config,
        taxonomy: crate::content::Taxonomy::of(std::slice::from_ref(&parsed.chapter)),
        chapters: vec![Ran { parsed, run }],
        glossary: None,
    };
    let (series, problems) = quotes::bind(series);
    diagnostics.extend(problems);
    fix_quotes(&series.chapters[0]);
    diagnostics.extend(links::check(&series));
    let (refs, problems) = xref::resolve_all(&series);
    diagnostics.extend(problems);
    let chapter = &series.chapters[0];
    let maths: Vec<_> = chapter
        .doc
        .maths
        .iter()
        .map(|m| {
            Ok(format!(
                "<span class=\"math\">{}</span>",
                html::escape(&m.tex)
            ))
        })
        .collect();
    let citations: Vec<String> = chapter
        .doc
        .citations
        .iter()
        .map(|c| {
            let keys = html::escape(&c.keys.join("; "));
            let first = html::escape(c.keys.first().map_or("", String::as_str));
            format!("<a class=\"citation\" href=\"#ref-{first}\">{keys}</a>")
        })
        .collect();
    let highlighter = crate::render::highlight::Highlighter::in_memory();
    let inputs = html::PageInputs {
        doc: &chapter.doc,
        maths: &maths,
        run: None,
        bindings: &chapter.bindings,
        claims: &chapter.claims,
        base_path: "/",
        refs: refs.first().map_or(&[][..], Vec::as_slice),
        citations: &citations,
        highlighter: &highlighter,
        // Small, so fuzzed blocks take the folding path too.
        fold_lines: Some(3),
        glossary: "",
        terms: &[],
        previews: "",
        table_math: &std::collections::BTreeMap::new(),
        points: &[],
    };
    let _ = html::headings_html(&inputs);
    Some((html::body_html(&inputs), diagnostics))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzz_input_splits_into_values_and_text() {
        let mut data = vec![10u8]; // 10 % 8 = 2 values
        data.extend(1.5f64.to_le_bytes());
        data.extend(f64::NEG_INFINITY.to_le_bytes());
        data.extend(b"[1]{=x}");
        let (values, text) = split_fuzz_input(&data);
        assert_eq!(values, [1.5, f64::NEG_INFINITY]);
        assert_eq!(text, b"[1]{=x}");
        // Fewer bytes than the count asks for: the values there are, and no text.
        let (values, text) = split_fuzz_input(&[3, 0, 0, 0, 0, 0, 0, 0, 0, 7]);
        assert_eq!((values, text), (vec![0.0], &[7u8][..]));
        assert_eq!(split_fuzz_input(&[]), (Vec::new(), &[][..]));
    }
}
