//! One entry point that drives every pure stage on one chapter's text, for the no-panic
//! property tests (`tests/no_panic.rs`) and the cargo-fuzz target (`fuzz/`): front matter,
//! Markdown, quotes, citations, cross-references, experiment extraction, link checks and HTML.
//! Nothing here touches the file system or runs experiments.

use std::path::Path;

use crate::config::Config;
use crate::content::{Chapter, Series};
use crate::diagnostic::Diagnostic;
use crate::markdown;
use crate::quotes::{self, syntax};
use crate::render::{html, links, xref};

/// Runs the pure stages on `text` as `content/01-x.md`; problems are diagnostics, never panics.
pub fn pure_stages(text: String) {
    let _ = syntax::scan(&text, 0, &[]);
    let _ = rendered(text);
}

/// The HTML the Markdown stage and the body renderer make of a chapter body (front matter is
/// added), with the diagnostics. Stages that are not pure have stand-ins: no experiments ran,
/// a formula renders as `<span class="math">TEX</span>`, a citation as
/// `<a class="citation" href="#ref-KEY">KEY</a>`. For the syntax tests (`tests/markdown.rs`).
pub fn body_html(body: &str) -> (String, Vec<Diagnostic>) {
    let text = format!("+++\ntitle = \"T\"\nnumber = 1\n+++\n{body}");
    rendered(text).unwrap_or_default()
}

fn rendered(text: String) -> Option<(String, Vec<Diagnostic>)> {
    let mut chapter = Chapter::parse(Path::new("content/01-x.md"), text).ok()?;
    let (doc, mut diagnostics) = markdown::parse(&chapter);
    chapter.doc = doc;
    let config = Config::parse(Path::new("site.toml"), "title = \"T\"\nbase_url = \"/\"\n").ok()?;
    let mut series = Series {
        root: ".".into(),
        config,
        taxonomy: crate::content::Taxonomy::of(std::slice::from_ref(&chapter)),
        chapters: vec![chapter],
    };
    let (bindings, problems) = quotes::bind(&series);
    diagnostics.extend(problems);
    series.chapters[0].bindings = bindings.into_iter().next().unwrap_or_default();
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
        base_path: "/",
        refs: refs.first().map_or(&[][..], Vec::as_slice),
        citations: &citations,
        highlighter: &highlighter,
    };
    let _ = html::headings_html(&inputs);
    Some((html::body_html(&inputs), diagnostics))
}
