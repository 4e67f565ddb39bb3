//! One entry point that drives every pure stage on one chapter's text, for the no-panic
//! property tests (`tests/no_panic.rs`) and the cargo-fuzz target (`fuzz/`): front matter,
//! Markdown, quotes, citations, cross-references, experiment extraction, link checks and HTML.
//! Nothing here touches the file system or runs experiments.

use std::path::Path;

use crate::config::Config;
use crate::content::{Chapter, Series};
use crate::markdown;
use crate::quotes::{self, syntax};
use crate::render::{html, links, xref};

/// Runs the pure stages on `text` as `content/01-x.md`; problems are diagnostics, never panics.
pub fn pure_stages(text: String) {
    let _ = syntax::scan(&text, 0, &[]);
    let Ok(mut chapter) = Chapter::parse(Path::new("content/01-x.md"), text) else {
        return;
    };
    let (doc, _diagnostics) = markdown::parse(&chapter);
    chapter.doc = doc;
    let Ok(config) = Config::parse(Path::new("site.toml"), "title = \"T\"\nbase_url = \"/\"\n")
    else {
        return;
    };
    let mut series = Series {
        root: ".".into(),
        config,
        taxonomy: crate::content::Taxonomy::of(std::slice::from_ref(&chapter)),
        chapters: vec![chapter],
    };
    let (bindings, _) = quotes::bind(&series);
    series.chapters[0].bindings = bindings.into_iter().next().unwrap_or_default();
    let _ = links::check(&series);
    let (refs, _) = xref::resolve_all(&series);
    let chapter = &series.chapters[0];
    let maths: Vec<_> = chapter
        .doc
        .maths
        .iter()
        .map(|_| Ok(String::new()))
        .collect();
    let citations: Vec<String> = chapter
        .doc
        .citations
        .iter()
        .map(|_| String::new())
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
    let _ = html::body_html(&inputs);
    let _ = html::headings_html(&inputs);
}
