//! Previews of what a cross-reference to another page points at, for the hover cards of
//! `static/attnbook.js`: the equation, the figure's caption, the chapter's summary.
//!
//! A target on the same page needs nothing: the script shows a copy of the figure, table,
//! equation or reference-list entry the link's `#id` names. A target on another page is
//! written into the referring page at build time, as an inert `<template class="preview"
//! data-href="URL">` after the body (URL is the link's `href`), so no hover fetches a page.
//! Without JavaScript the links are ordinary links and the templates show nothing.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::content::Series;
use crate::lab::Ran;
use crate::markdown::refs::RefKind;
use crate::render::html::escape;
use crate::render::math::MathError;
use crate::render::xref::Resolved;

/// The templates for chapter `index`'s references to other pages, one per distinct target, in
/// the order the references first appear. `maths` and `refs` are per chapter, in series order.
pub fn cross_page<C: AsRef<Ran>>(
    series: &Series<C>,
    maths: &[Vec<Result<String, MathError>>],
    refs: &[Vec<Option<Resolved>>],
    index: usize,
) -> String {
    let from: &Ran = series.chapters[index].as_ref();
    let mut seen = BTreeSet::new();
    let mut out = String::new();
    let resolved = refs.get(index).map_or(&[][..], Vec::as_slice);
    for (r, done) in from.doc.refs.iter().zip(resolved) {
        let Some(done) = done else { continue };
        if done.url.starts_with('#') || !seen.insert(done.url.as_str()) {
            continue;
        }
        let slug = r.chapter.as_deref().unwrap_or(&from.slug);
        let Some(at) = series
            .chapters
            .iter()
            .position(|c| AsRef::<Ran>::as_ref(c).slug == slug)
        else {
            continue;
        };
        let target: &Ran = series.chapters[at].as_ref();
        let body = match r.kind {
            RefKind::Chapter => target
                .front
                .summary
                .as_deref()
                .map(|s| format!("<p>{}</p>", escape(s)))
                .unwrap_or_default(),
            RefKind::Equation => target
                .doc
                .maths
                .iter()
                .zip(maths.get(at).map_or(&[][..], Vec::as_slice))
                .find(|(m, _)| m.display && m.label.as_deref() == Some(r.name.as_str()))
                .and_then(|(_, html)| html.as_ref().ok())
                .map(|html| format!("<div class=\"math-display\">{html}</div>"))
                .unwrap_or_default(),
            RefKind::Figure => figure_caption(target, &r.name)
                .map(|c| format!("<p>{}</p>", escape(c)))
                .unwrap_or_default(),
            RefKind::Table => String::new(),
        };
        let title = match r.kind {
            RefKind::Chapter => done.text.clone(),
            _ => crate::messages::fill(
                "preview_titled",
                &[("text", &done.text), ("title", &target.front.title)],
            ),
        };
        let _ = writeln!(
            out,
            "<template class=\"preview\" data-href=\"{}\"><p class=\"preview-title\">{}</p>{body}</template>",
            escape(&done.url),
            escape(&title)
        );
    }
    out
}

/// The caption of a chart or image figure of a chapter.
fn figure_caption<'a>(chapter: &'a Ran, name: &str) -> Option<&'a str> {
    let chart = chapter
        .run
        .as_ref()
        .and_then(|run| run.results.figures.iter().find(|f| f.name == name))
        .map(|f| f.caption.as_str());
    chart.or_else(|| {
        chapter
            .doc
            .image_figures
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.caption.as_str())
    })
}
