//! Where attnbook's inline syntax (quotes, citations) may stand: only in Markdown text.
//!
//! Quotes must be found before inline parsing (two `~p%` tolerances in one paragraph would
//! otherwise pair into strikethrough), so the source is masked for the real parse. To mask only
//! what the reader sees as text, a first parse without the two extensions that could swallow
//! the syntax (strikethrough pairs `~`, heading attributes read a trailing `{=name}`) tells
//! which source bytes are text: quotes and citations are recognised there and nowhere else, so
//! link destinations, autolinks, link reference definitions, code and raw HTML stay untouched.
//! A backslash before `[` makes it literal, as CommonMark says for any escaped punctuation.

use std::ops::Range;

use pulldown_cmark::{Event, LinkType, Options, Parser, Tag, TagEnd};

use super::{cite, claim, raw_html};
use crate::content::Chapter;
use crate::diagnostic::Diagnostic;
use crate::markdown::quote::{self as syntax, QuoteSyntax};

/// A construct recognised on the source before inline parsing, then masked.
#[derive(Debug, Clone)]
pub(super) enum Inline {
    Quote(Box<QuoteSyntax>),
    Cite(cite::Citation),
    /// The `[` of claim `.1` (an index into the chapter's claims, in source order).
    ClaimOpen(Box<claim::ClaimSyntax>, usize),
    /// The `]{? rule}` of claim `.1`.
    ClaimClose(Box<claim::ClaimSyntax>, usize),
}

impl Inline {
    pub(super) fn span(&self) -> Range<usize> {
        match self {
            Inline::Quote(q) => q.span.clone(),
            Inline::Cite(c) => c.span.clone(),
            Inline::ClaimOpen(c, _) => c.open.clone(),
            Inline::ClaimClose(c, _) => c.close.clone(),
        }
    }

    /// The claim this is a part of, if it is one.
    pub(super) fn claim(&self) -> Option<usize> {
        match self {
            Inline::ClaimOpen(_, i) | Inline::ClaimClose(_, i) => Some(*i),
            _ => None,
        }
    }
}

/// The quotes and citations of a chapter, in source order, with the problems found on the way
/// (malformed quotes, syntax inside raw HTML).
pub(super) fn recognise(chapter: &Chapter) -> (Vec<Inline>, Vec<Diagnostic>) {
    let (body, base) = (chapter.body(), chapter.body_offset);
    let contexts = contexts(body);
    let excluded = shifted(&contexts.excluded, base);
    let (quotes, errors) = syntax::scan(body, base, &excluded);
    let mut diagnostics: Vec<Diagnostic> = errors
        .into_iter()
        .map(|e| {
            Diagnostic::error(e.message)
                .at(chapter.location(e.span))
                .with_help(e.help)
        })
        .collect();
    diagnostics.extend(raw_html::report(chapter, &contexts.html));
    let (claims, claim_errors) = claim::scan(body, base, &excluded);
    diagnostics.extend(claim_errors.into_iter().map(|e| {
        Diagnostic::error(e.message)
            .at(chapter.location(e.span))
            .with_help(e.help)
    }));
    // A quote inside a claim's statement is fine; one that overlaps its `[` or `]{?..}` is not
    // a quote.
    let quotes: Vec<QuoteSyntax> = quotes
        .into_iter()
        .filter(|q| {
            !claims
                .iter()
                .any(|c| overlaps(&q.span, &c.open) || overlaps(&q.span, &c.close))
        })
        .collect();
    for quote in &quotes {
        if let Some((message, help)) = syntax::ambiguous_rounding(quote) {
            diagnostics.push(
                Diagnostic::warning(message)
                    .at(chapter.location(quote.number.span.clone()))
                    .with_help(help),
            );
        }
    }
    let mut inlines: Vec<Inline> = quotes
        .into_iter()
        .map(|q| Inline::Quote(Box::new(q)))
        .collect();
    for (i, c) in claims.into_iter().enumerate() {
        let c = Box::new(c);
        inlines.push(Inline::ClaimOpen(c.clone(), i));
        inlines.push(Inline::ClaimClose(c, i));
    }
    let cites: Vec<Inline> = cite::scan(body, base, &excluded)
        .into_iter()
        .filter(|c| !inlines.iter().any(|i| overlaps(&i.span(), &c.span)))
        .map(Inline::Cite)
        .collect();
    inlines.extend(cites);
    inlines.sort_by_key(|i| i.span().start);
    (inlines, diagnostics)
}

/// Replaces each quote and citation by inert letters of the same byte length, so offsets stay
/// valid and inline parsing cannot pair anything inside it.
pub(super) fn mask(chapter: &Chapter, inlines: &[Inline]) -> String {
    let (body, base) = (chapter.body(), chapter.body_offset);
    let mut bytes = body.as_bytes().to_vec();
    for inline in inlines {
        let span = inline.span();
        bytes[span.start - base..span.end - base].fill(b'Q');
    }
    String::from_utf8(bytes).unwrap_or_else(|_| body.to_string())
}

fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

/// What the recognition parse found.
struct Contexts {
    /// Source ranges (body offsets, sorted) where the syntax is *not* recognised: everything
    /// outside text, and every backslash-escaped `[`.
    excluded: Vec<Range<usize>>,
    /// Raw HTML ranges (body offsets), where the syntax is reported instead.
    html: Vec<Range<usize>>,
}

/// Parses `body` once to find its text ranges and raw HTML.
fn contexts(body: &str) -> Contexts {
    let options =
        super::options() - Options::ENABLE_STRIKETHROUGH - Options::ENABLE_HEADING_ATTRIBUTES;
    let mut text: Vec<Range<usize>> = Vec::new();
    let mut html = Vec::new();
    // Code block contents and autolink URLs arrive as text events but are not prose.
    let mut opaque = 0usize;
    for (event, range) in Parser::new_ext(body, options).into_offset_iter() {
        match event {
            Event::Start(Tag::CodeBlock(_))
            | Event::Start(Tag::Link {
                link_type: LinkType::Autolink | LinkType::Email,
                ..
            }) => opaque += 1,
            Event::End(TagEnd::CodeBlock) => opaque = opaque.saturating_sub(1),
            Event::End(TagEnd::Link) if opaque > 0 => opaque -= 1,
            // A line break inside a paragraph is part of its text: `[@a;\n@b]` is one citation.
            // Touching ranges need no merging: `complement` leaves no gap between them.
            Event::Text(_) | Event::SoftBreak | Event::HardBreak if opaque == 0 => text.push(range),
            Event::Html(_) | Event::InlineHtml(_) => html.push(range),
            _ => {}
        }
    }
    let mut excluded = complement(&text, body.len());
    excluded.extend(
        body.match_indices('[')
            .map(|(i, _)| i)
            .filter(|&i| escaped(body, i))
            .map(|i| i..i + 1),
    );
    excluded.sort_by_key(|r| r.start);
    Contexts { excluded, html }
}

/// The gaps between sorted, disjoint `ranges` within `0..len`.
fn complement(ranges: &[Range<usize>], len: usize) -> Vec<Range<usize>> {
    let mut gaps = Vec::new();
    let mut at = 0;
    for r in ranges {
        if r.start > at {
            gaps.push(at..r.start);
        }
        at = at.max(r.end);
    }
    if at < len {
        gaps.push(at..len);
    }
    gaps
}

/// True when the byte at `at` follows an odd run of backslashes: CommonMark's escape.
pub(super) fn escaped(source: &str, at: usize) -> bool {
    let before = source.as_bytes().get(..at).unwrap_or_default();
    before.iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

/// Shifts body ranges to file offsets.
fn shifted(ranges: &[Range<usize>], base: usize) -> Vec<Range<usize>> {
    ranges
        .iter()
        .map(|r| base + r.start..base + r.end)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recognisable(body: &str, needle: &str) -> bool {
        let at = body.find(needle).unwrap();
        let span = at..at + needle.len();
        !contexts(body)
            .excluded
            .iter()
            .any(|e| e.start < span.end && span.start < e.end)
    }

    #[test]
    fn text_is_recognisable_and_destinations_are_not() {
        assert!(recognisable("see [@foo] here", "[@foo]"));
        assert!(recognisable("# 熵 [0.08]{=h}", "[0.08]{=h}"));
        assert!(recognisable("a [1]{=x ~5%} b [2]{=y ~5%}", "[2]{=y ~5%}"));
        assert!(recognisable("see [@a;\n@b] here", "[@a;\n@b]"));
        assert!(!recognisable("[t](<https://e.org/[@foo]>)", "[@foo]"));
        // Text on both sides of a destination does not make the destination text.
        assert!(!recognisable("见 [t](</x/[@foo]>) 后文", "[@foo]"));
        assert!(!recognisable("<https://e.org/[@foo]>", "[@foo]"));
        assert!(!recognisable("[@foo]: /url\n", "[@foo]"));
        assert!(!recognisable("[x][@foo]\n\n[@foo]: /url\n", "[@foo]"));
        assert!(!recognisable("`[@foo]`", "[@foo]"));
        assert!(!recognisable("`[@foo]` 后文", "[@foo]"));
        assert!(!recognisable("前文 `[@foo]` 后文", "[@foo]"));
        assert!(!recognisable("```\n[@foo]\n```\n", "[@foo]"));
    }

    #[test]
    fn an_escaped_bracket_is_literal() {
        assert!(!recognisable("a \\[@foo] b", "[@foo]"));
        assert!(recognisable("a \\\\[@foo] b", "[@foo]"));
    }

    /// `(kind, text)` of each inline `recognise` finds in `body`, in order.
    fn inlines(body: &str) -> Vec<(&'static str, String)> {
        let src = format!("+++\ntitle = \"T\"\nnumber = 1\n+++\n{body}");
        let chapter = Chapter::parse(std::path::Path::new("content/01-t.md"), src).unwrap();
        let (found, problems) = recognise(&chapter);
        assert!(problems.is_empty(), "{problems:?}");
        found
            .iter()
            .map(|i| {
                let kind = match i {
                    Inline::Quote(_) => "quote",
                    Inline::Cite(_) => "cite",
                    Inline::ClaimOpen(..) => "claim[",
                    Inline::ClaimClose(..) => "]claim",
                };
                (kind, chapter.source[i.span()].to_string())
            })
            .collect()
    }

    /// Quotes and citations side by side are both found, in source order; where a citation
    /// lies inside a quote (`[@2]{=x}` is a quote of the number 2), only the quote is.
    #[test]
    fn quotes_and_citations_are_found_in_order_and_a_quote_wins_an_overlap() {
        let owned = |v: &[(&'static str, &str)]| {
            v.iter()
                .map(|(k, t)| (*k, t.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            inlines("见 [@a]，熵是 [0.08]{=h}，又见 [@b; @c]。"),
            owned(&[
                ("cite", "[@a]"),
                ("quote", "[0.08]{=h}"),
                ("cite", "[@b; @c]")
            ])
        );
        assert_eq!(
            inlines("[@2]{=x} 和 [@a]"),
            owned(&[("quote", "[@2]{=x}"), ("cite", "[@a]")])
        );
        // Code is not text, at the chapter file's offsets too.
        assert_eq!(
            inlines("`[0.5]{=x}` 与 `[@b]` 之后 [@a]"),
            owned(&[("cite", "[@a]")])
        );
        // Touching is not overlapping, on either side.
        assert_eq!(
            inlines("[@a][0.5]{=x}[@b]"),
            owned(&[("cite", "[@a]"), ("quote", "[0.5]{=x}"), ("cite", "[@b]")])
        );
    }

    /// A code block or an autolink is opaque only up to its end: prose after it is text again.
    #[test]
    fn text_after_code_blocks_and_autolinks_is_recognisable() {
        assert!(recognisable("```\n[@x]\n```\n\n见 [@foo]", "[@foo]"));
        assert!(recognisable("    [@x]\n\n见 [@foo]", "[@foo]"));
        assert!(recognisable("<https://e.org/> 见 [@foo]", "[@foo]"));
        assert!(recognisable("<a@b.org> 见 [@foo]", "[@foo]"));
    }

    /// Raw HTML, block or inline, is collected so that syntax inside it is reported.
    #[test]
    fn raw_html_is_collected_for_the_report() {
        let body = "<div>\n[0.5]{=x}\n</div>\n\n段落 <span>[@a]</span> 结束\n";
        let html: Vec<&str> = contexts(body)
            .html
            .iter()
            .map(|r| &body[r.clone()])
            .collect();
        // pulldown-cmark hands an HTML block over line by line.
        assert_eq!(
            html,
            ["<div>\n", "[0.5]{=x}\n", "</div>\n", "<span>", "</span>"]
        );
    }

    #[test]
    fn escapes_count_backslashes() {
        assert!(escaped("\\@", 1));
        assert!(!escaped("\\\\@", 2));
        assert!(!escaped("@", 0));
    }
}
