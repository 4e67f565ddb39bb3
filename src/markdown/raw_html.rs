//! attnbook's syntax inside raw HTML blocks is not recognised (the parser hands the block over
//! as opaque HTML), so it is reported instead of reaching the page unbound. Markdown separated
//! from the tags by blank lines (`<details>`, blank line, prose, blank line, `</details>`) is
//! ordinary Markdown and needs nothing from here. HTML comments are left alone: commenting
//! something out is deliberate.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use super::{cite, refs};
use crate::content::Chapter;
use crate::diagnostic::Diagnostic;
use crate::markdown::quote as syntax;

static COMMENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)<!--.*?(-->|$)").expect("static regex"));

/// Warnings for quotes, citations and cross-references inside the raw HTML `ranges` (body
/// offsets) of `chapter`.
pub(super) fn report(chapter: &Chapter, ranges: &[Range<usize>]) -> Vec<Diagnostic> {
    let mut spans: Vec<(Range<usize>, &str)> = Vec::new();
    for block in merged(ranges) {
        let at = chapter.body_offset + block.start;
        let html = &chapter.body()[block];
        let comments: Vec<Range<usize>> = COMMENT
            .find_iter(html)
            .map(|m| at + m.start()..at + m.end())
            .collect();
        let outside = |span: &Range<usize>| {
            !comments
                .iter()
                .any(|c| c.start < span.end && span.start < c.end)
        };
        let (quotes, _) = syntax::scan(html, at, &comments);
        spans.extend(quotes.into_iter().map(|q| (q.span, "quote")));
        let cites = cite::scan(html, at, &comments);
        spans.extend(cites.into_iter().map(|c| (c.span, "citation")));
        let xrefs = refs::split(html, at, false)
            .into_iter()
            .filter_map(Result::ok);
        spans.extend(
            xrefs
                .map(|r| (r.span, "cross-reference"))
                .filter(|(s, _)| outside(s)),
        );
    }
    spans.sort_by_key(|(span, _)| span.start);
    spans
        .into_iter()
        .map(|(span, what)| {
            Diagnostic::warning(format!(
                "{what} `{}` inside raw HTML is not recognised and shows as written",
                &chapter.source[span.clone()]
            ))
            .at(chapter.location(span))
            .with_help("leave a blank line after the opening HTML tag and before the closing one: the lines between are then Markdown, where quotes, citations and references work")
        })
        .collect()
}

/// Adjacent HTML events (one per line of a block) joined into blocks.
fn merged(ranges: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut blocks: Vec<Range<usize>> = Vec::new();
    for r in ranges {
        match blocks.last_mut() {
            Some(last) if last.end >= r.start => last.end = last.end.max(r.end),
            _ => blocks.push(r.clone()),
        }
    }
    blocks
}
