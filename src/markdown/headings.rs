//! Heading anchors: stable ids for the table of contents and links.

use std::ops::Range;

use pulldown_cmark::HeadingLevel;

use crate::diagnostic::Diagnostic;

/// A heading of a chapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// 1..=6.
    pub level: u8,
    /// Anchor id (explicit `{#id}` or derived from the text).
    pub id: String,
    /// Classes from a `{.class}` attribute block.
    pub classes: Vec<String>,
    /// Other attributes from the attribute block (`{data-x=1 hidden}`), in order.
    pub attrs: Vec<(String, Option<String>)>,
    /// Plain text.
    pub text: String,
    /// Byte span in the chapter file.
    pub span: Range<usize>,
    /// The heading's content as HTML, math rendered (filled by the render stage, for the TOC).
    pub html: String,
}

/// `base`, or `base-1`, `base-2`, ... if taken.
pub(super) fn unique_id(base: &str, taken: &[&str]) -> String {
    if !taken.contains(&base) {
        return base.to_string();
    }
    (1..)
        .map(|n| format!("{base}-{n}"))
        .find(|id| !taken.contains(&id.as_str()))
        .unwrap_or_default()
}

pub(super) fn level_number(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// Ids on a chapter's page that two things claim (redteam-3 D10): a heading id given twice
/// (`{#x}` on two headings, or on one whose derived id another heading already has), and a
/// heading id that is also the `L{line}` id of a code line the page shows, where quote
/// provenance links land. Each is an error at the later heading, naming the other place.
pub(super) fn duplicate_ids(
    chapter: &crate::content::Chapter,
    doc: &super::Doc,
) -> Vec<Diagnostic> {
    let mut problems = Vec::new();
    let mut first: std::collections::HashMap<&str, &Heading> = std::collections::HashMap::new();
    let code_lines: std::collections::HashSet<String> = doc
        .experiments
        .iter()
        .filter(|e| !e.options.hide)
        .flat_map(|e| e.displayed_lines().iter().map(|l| format!("L{}", l.line)))
        .collect();
    for heading in &doc.headings {
        let here = chapter.location(heading.span.clone());
        if let Some(earlier) = first.get(heading.id.as_str()) {
            problems.push(
                Diagnostic::error(format!("duplicate id `{}` on the page", heading.id))
                    .at(here)
                    .with_note(format!(
                        "the heading at {} already has it",
                        chapter.location(earlier.span.clone())
                    ))
                    .with_help("give one of the headings another id: `{#another-id}`"),
            );
            continue;
        }
        first.insert(&heading.id, heading);
        if code_lines.contains(&heading.id) {
            let line = &heading.id[1..];
            problems.push(
                Diagnostic::error(format!(
                    "the heading's id `{}` is also the id of line {line} of an experiment block",
                    heading.id
                ))
                .at(here)
                .with_note(format!(
                    "{}:{line}:1 is that line; links to the values it records point at #{}",
                    chapter.path.display(),
                    heading.id
                ))
                .with_help("give the heading an id that is not `L` and a number"),
            );
        }
    }
    problems
}

/// What a `{{glossary}}` line claims, in the notes of [`duplicate_elements`].
const GLOSSARY: &str = "the glossary placed";

/// Ids that figures, tables, labelled equations and the glossary's rows claim on a chapter's
/// page (redteam-3 D10): a table or figure placed twice (`{{figure: f}}` twice gives two
/// `fig-f`), an image figure label or equation label given twice, `{{glossary}}` placed twice
/// (every `term-…` row twice), and a heading whose id is one of these. Each is an error at the
/// later place, naming the earlier one. (A heading that takes the id of a chart the page shows
/// after its block is found once the experiments ran.)
pub(super) fn duplicate_elements(
    chapter: &crate::content::Chapter,
    doc: &super::Doc,
) -> Vec<Diagnostic> {
    use super::{Piece, PlacementKind};
    let mut claims: Vec<(String, &str, std::ops::Range<usize>)> = Vec::new();
    for piece in &doc.pieces {
        match piece {
            Piece::Placement { kind, name, span } => {
                let (id, what) = match kind {
                    PlacementKind::Figure => (format!("fig-{name}"), "the figure placed"),
                    PlacementKind::Table => (format!("tab-{name}"), "the table placed"),
                };
                claims.push((id, what, span.clone()));
            }
            Piece::ImageFigure(i) => {
                let figure = &doc.image_figures[*i];
                let id = format!("fig-{}", figure.name);
                claims.push((id, "the figure", figure.span.clone()));
            }
            Piece::Glossary { span } => claims.push(("term-…".into(), GLOSSARY, span.clone())),
            _ => {}
        }
    }
    for math in doc.maths.iter().filter(|m| m.display) {
        if let Some(label) = &math.label {
            claims.push((format!("eq-{label}"), "the equation", math.span.clone()));
        }
    }
    let mut problems = Vec::new();
    // The reference list a page with citations ends with (`#bibliography`), and its entries
    // (`#ref-KEY`), at the first citation of each: taken by headings only, since a key cited
    // twice is one entry.
    let mut references: Vec<(String, &str, std::ops::Range<usize>)> = Vec::new();
    for citation in &doc.citations {
        for id in std::iter::once("bibliography".to_string())
            .chain(citation.keys.iter().map(|k| format!("ref-{k}")))
        {
            if !references.iter().any(|(known, _, _)| *known == id) {
                references.push((id, "the reference list cited", citation.span.clone()));
            }
        }
    }
    let mut seen: std::collections::HashMap<&str, (&str, &std::ops::Range<usize>)> =
        std::collections::HashMap::new();
    for (id, what, span) in &claims {
        if let Some((earlier, at)) = seen.get(id.as_str()) {
            let message = if *what == GLOSSARY {
                "`{{glossary}}` is placed twice: every `term-…` id would be twice on the page"
                    .to_string()
            } else {
                format!("duplicate id `{id}` on the page")
            };
            problems.push(
                Diagnostic::error(message)
                    .at(chapter.location(span.clone()))
                    .with_note(format!(
                        "{earlier} at {} already has it",
                        chapter.location((*at).clone())
                    ))
                    .with_help("place each table, figure and the glossary once, and give each label once; link to the first place instead"),
            );
        } else {
            seen.insert(id, (what, span));
        }
    }
    for (id, what, span) in &references {
        seen.entry(id).or_insert((what, span));
    }
    for heading in &doc.headings {
        if let Some((what, at)) = seen.get(heading.id.as_str()) {
            problems.push(
                Diagnostic::error(format!("duplicate id `{}` on the page", heading.id))
                    .at(chapter.location(heading.span.clone()))
                    .with_note(format!(
                        "{what} at {} has it too",
                        chapter.location((*at).clone())
                    ))
                    .with_help("give the heading another id: `{#another-id}`"),
            );
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::slugify;

    #[test]
    fn slugs_keep_chinese_and_collapse_punctuation() {
        assert_eq!(slugify("为什么需要注意力？"), "为什么需要注意力");
        assert_eq!(
            slugify("Scaled Dot-Product (QK^T)"),
            "scaled-dot-product-qk-t"
        );
        assert_eq!(slugify("  "), "section");
    }

    #[test]
    fn ids_are_made_unique() {
        assert_eq!(unique_id("a", &["a", "a-1"]), "a-2");
        assert_eq!(unique_id("b", &["a"]), "b");
    }
}
