//! Explorable passages: `{{explore: name}}` ... `{{/explore}}`, each marker alone in a
//! paragraph at the top level of the chapter, around prose, figures and quotes that change
//! with the parameter `name` an experiment block declares (`param="name: v1, v2; default v"`).

use std::ops::Range;

use super::{Doc, Piece};
use crate::content::Chapter;
use crate::diagnostic::Diagnostic;

/// One passage whose content is rendered at every point of its parameter's grid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explore {
    /// The parameter's name.
    pub param: String,
    /// The experiment block that declares it (`doc.experiments` index).
    pub block: usize,
    /// Byte span of the opening marker.
    pub span: Range<usize>,
    /// Byte span of the closing marker.
    pub end: Range<usize>,
    /// The pieces between the markers (`doc.pieces` indices).
    pub pieces: Range<usize>,
    /// The quotes inside (`doc.quotes` indices).
    pub quotes: Vec<usize>,
    /// The claims inside (`doc.claims` indices).
    pub claims: Vec<usize>,
}

/// What a paragraph that is only `{{explore...}}` or `{{/explore}}` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Marker {
    /// `{{explore: name}}` (the name may be empty: reported when the passages are collected).
    Open(String),
    /// `{{/explore}}`.
    Close,
}

/// The marker a placement-like paragraph text holds, if it is one.
pub(super) fn marker(text: &str) -> Option<Marker> {
    let inner = text.trim().strip_prefix("{{")?.strip_suffix("}}")?.trim();
    if inner == "/explore" {
        return Some(Marker::Close);
    }
    if inner == "explore" {
        return Some(Marker::Open(String::new()));
    }
    let name = inner.strip_prefix("explore:")?;
    Some(Marker::Open(name.trim().to_string()))
}

/// Pairs the markers the builder placed into passages, checking each against the parameters
/// the chapter's blocks declare; every problem is reported at its marker.
pub(super) fn collect(chapter: &Chapter, doc: &mut Doc) -> Vec<Diagnostic> {
    let mut problems = Vec::new();
    let mut declared: Vec<(&str, usize)> = Vec::new();
    for exp in &doc.experiments {
        if let Some(p) = &exp.options.param {
            if let Some((_, first)) = declared.iter().find(|(n, _)| *n == p.name) {
                problems.push(
                    Diagnostic::error(format!(
                        "parameter `{}` is declared twice in this chapter (first by experiment block {})",
                        p.name,
                        first + 1
                    ))
                    .at(chapter.location(exp.span.start..exp.span.start)),
                );
            } else {
                declared.push((&p.name, exp.index));
            }
        }
    }
    let mut passages: Vec<Explore> = Vec::new();
    let mut open: Option<(usize, String, Range<usize>)> = None;
    let mut pieces = Vec::with_capacity(doc.pieces.len());
    for piece in std::mem::take(&mut doc.pieces) {
        let Piece::ExploreMarker {
            marker,
            span,
            nested,
        } = piece
        else {
            pieces.push(piece);
            continue;
        };
        let at = chapter.location(span.clone());
        if nested {
            problems.push(
                Diagnostic::error("an explorable passage's marker stands inside a list, block quote or footnote")
                    .at(at)
                    .with_help("put `{{explore: name}}` and `{{/explore}}` each alone in a paragraph at the top level of the chapter"),
            );
            continue;
        }
        match marker {
            Marker::Open(name) => {
                if let Some((_, outer, _)) = &open {
                    problems.push(
                        Diagnostic::error(format!(
                            "`{{{{explore: {name}}}}}` inside the passage of `{outer}`: passages do not nest"
                        ))
                        .at(at)
                        .with_help("close the first passage with `{{/explore}}` before opening the next"),
                    );
                    continue;
                }
                if name.is_empty() {
                    problems.push(
                        Diagnostic::error("an explorable passage names no parameter")
                            .at(at)
                            .with_help("write `{{explore: name}}`, `name` declared by a block's `param=\"name: v1, v2; default v\"`"),
                    );
                    continue;
                }
                let Some(&(_, block)) = declared.iter().find(|(n, _)| *n == name) else {
                    let known: Vec<&str> = declared.iter().map(|(n, _)| *n).collect();
                    let help = if known.is_empty() {
                        "no block of this chapter declares a parameter: add `param=\"name: v1, v2; default v\"` to the block's fence".to_string()
                    } else {
                        format!(
                            "this chapter declares {}",
                            known
                                .iter()
                                .map(|k| format!("`{k}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    };
                    problems.push(
                        Diagnostic::error(format!(
                            "unknown parameter `{name}` in `{{{{explore: {name}}}}}`"
                        ))
                        .at(at)
                        .with_help(help),
                    );
                    continue;
                };
                pieces.push(Piece::ExploreStart(passages.len()));
                open = Some((pieces.len(), name.clone(), span.clone()));
                passages.push(Explore {
                    param: name,
                    block,
                    span,
                    end: 0..0,
                    pieces: 0..0,
                    quotes: Vec::new(),
                    claims: Vec::new(),
                });
            }
            Marker::Close => match open.take() {
                Some((start, _, _)) => {
                    let index = passages.len() - 1;
                    passages[index].pieces = start..pieces.len();
                    passages[index].end = span;
                    pieces.push(Piece::ExploreEnd(index));
                }
                None => problems.push(
                    Diagnostic::error("`{{/explore}}` closes no passage")
                        .at(at)
                        .with_help("open the passage with `{{explore: name}}` before it"),
                ),
            },
        }
    }
    if let Some((_, name, span)) = open {
        problems.push(
            Diagnostic::error(format!("`{{{{explore: {name}}}}}` is never closed"))
                .at(chapter.location(span))
                .with_help("end the passage with a line `{{/explore}}`"),
        );
        // Unclosed: the passage is dropped, its content stays as ordinary prose.
        pieces.retain(|p| !matches!(p, Piece::ExploreStart(i) if *i == passages.len() - 1));
        passages.pop();
    }
    for passage in &mut passages {
        for piece in &pieces[passage.pieces.clone()] {
            match piece {
                Piece::Quote(i) => passage.quotes.push(*i),
                Piece::ClaimStart(i) => passage.claims.push(*i),
                _ => {}
            }
        }
    }
    doc.pieces = pieces;
    doc.explores = passages;
    problems
}

impl Explore {
    /// Whether the byte `at` of the chapter file lies inside the passage.
    pub fn contains(&self, at: usize) -> bool {
        (self.span.start..self.end.end).contains(&at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_recognised_and_anything_else_is_not() {
        assert_eq!(marker("{{explore: tau}}"), Some(Marker::Open("tau".into())));
        assert_eq!(
            marker(" {{ explore:d_k }} "),
            Some(Marker::Open("d_k".into()))
        );
        assert_eq!(marker("{{explore}}"), Some(Marker::Open(String::new())));
        assert_eq!(marker("{{/explore}}"), Some(Marker::Close));
        assert_eq!(marker("{{figure: x}}"), None);
        assert_eq!(marker("{{explorer: x}}"), None);
        assert_eq!(marker("see {{explore: x}}"), None);
    }
}
