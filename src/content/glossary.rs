//! The series glossary, `content/glossary.toml`: one data file that both the glossary page
//! (`{{glossary}}` on a line of its own) and the terminology rule read, so the list a reader
//! sees is the list the build enforces.
//!
//! The rule scans the prose only (text events that map byte for byte onto the source: not
//! code, math, quoted numbers or link destinations) and warns on each listed variant with the
//! preferred term; `--strict` and `check` turn the warnings into failures.

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::config::parse_toml;
use crate::diagnostic::{Diagnostic, Location};

use super::Chapter;

/// Where the glossary lives, relative to the site root.
pub const PATH: &str = "content/glossary.toml";

/// The glossary: terms with their English and the variants the series does not use, and the
/// notation.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Glossary {
    /// `[[term]]` entries, in the order the page lists them.
    #[serde(default, rename = "term")]
    pub terms: Vec<Term>,
    /// `[[notation]]` entries, in the order the page lists them.
    #[serde(default, rename = "notation")]
    pub notation: Vec<Notation>,
    /// The tables for `{{glossary}}`, rendered once per build when a page places them.
    #[serde(skip)]
    pub html: String,
}

/// One term.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Term {
    /// The preferred Chinese form.
    pub term: String,
    /// Its English.
    pub english: String,
    /// Forms the prose must not use (each one is reported with `term` as the fix).
    #[serde(default)]
    pub variants: Vec<String>,
    /// A remark for the page.
    #[serde(default)]
    pub note: Option<String>,
}

/// One symbol of the notation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Notation {
    /// The symbol as TeX (`d_k`), rendered by KaTeX on the page.
    pub symbol: String,
    /// What it stands for.
    pub meaning: String,
    /// The line of its `symbol` key in the file (1-based), for diagnostics.
    #[serde(skip)]
    pub line: usize,
}

/// Reads `content/glossary.toml` if the site has one; every problem in it is listed.
pub fn load(root: &Path) -> Result<Option<Glossary>, Vec<Diagnostic>> {
    let path = PathBuf::from(PATH);
    match std::fs::read_to_string(root.join(&path)) {
        Ok(text) => Glossary::parse(&path, &text).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(vec![Diagnostic::error(format!("cannot read {PATH}: {e}"))]),
    }
}

impl Glossary {
    /// Parses the glossary text; `path` is shown in diagnostics.
    pub fn parse(path: &Path, text: &str) -> Result<Glossary, Vec<Diagnostic>> {
        let mut glossary: Glossary = parse_toml(path, text)?;
        // `[[notation]]` tables keep their order, so the n-th `symbol` line is the n-th entry's.
        let lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.trim_start().starts_with("symbol"))
            .map(|(i, _)| i + 1);
        for (entry, line) in glossary.notation.iter_mut().zip(lines) {
            entry.line = line;
        }
        let problems = glossary.problems(path, text);
        if problems.is_empty() {
            Ok(glossary)
        } else {
            Err(problems)
        }
    }

    /// Entries the rule could not apply: an empty form, or a variant that is itself a preferred
    /// term (the rule would then contradict itself).
    fn problems(&self, path: &Path, text: &str) -> Vec<Diagnostic> {
        let at = |needle: &str| {
            let quoted = format!("\"{needle}\"");
            let start = text.find(&quoted).unwrap_or(0);
            Location::in_source(path, text, start..start + quoted.len())
        };
        let mut problems = Vec::new();
        for term in &self.terms {
            if term.term.trim().is_empty() {
                problems.push(Diagnostic::error("a glossary term is empty").at(at("")));
            }
            for variant in &term.variants {
                if variant.trim().is_empty() {
                    problems.push(
                        Diagnostic::error(format!("an empty variant of `{}`", term.term))
                            .at(at(variant)),
                    );
                } else if let Some(other) = self.terms.iter().find(|t| t.term == *variant) {
                    problems.push(
                        Diagnostic::error(format!(
                            "`{variant}` is both a variant of `{}` and a preferred term",
                            term.term
                        ))
                        .at(at(variant))
                        .with_help(format!(
                            "keep one of `{}` and `{}` as the preferred term",
                            term.term, other.term
                        )),
                    );
                }
            }
        }
        problems
    }

    /// A warning for every listed variant in the chapter's prose (the byte spans of its text
    /// outside code, math and quotes, as the Markdown stage finds them), naming the preferred
    /// term.
    pub fn check(&self, chapter: &Chapter, prose: &[Range<usize>]) -> Vec<Diagnostic> {
        let mut found = Vec::new();
        for span in prose {
            let text = &chapter.source[span.clone()];
            for term in &self.terms {
                for (at, variant) in variants_in(text, term) {
                    let start = span.start + at;
                    found.push((
                        start,
                        variant_warning(chapter, start..start + variant.len(), term),
                    ));
                }
            }
        }
        found.sort_by_key(|(start, _)| *start);
        found.into_iter().map(|(_, d)| d).collect()
    }
}

fn variant_warning(chapter: &Chapter, span: Range<usize>, term: &Term) -> Diagnostic {
    let variant = &chapter.source[span.clone()];
    Diagnostic::warning(format!(
        "`{variant}` is a variant of the glossary term `{}` ({})",
        term.term, term.english
    ))
    .at(chapter.location(span))
    .with_help(format!(
        "write `{}` ({PATH} lists the series' terms)",
        term.term
    ))
}

/// Byte offsets in `text` of the term's variants, except where a variant stands inside the
/// preferred form itself (a variant `注意` must not flag every `注意力`), where it is a gloss
/// opening a parenthesis (`独热（one-hot）`, the introduction EDITORIAL asks for), and, for a
/// variant that starts or ends with an ASCII letter or digit, inside a longer ASCII word.
fn variants_in<'t>(text: &str, term: &'t Term) -> Vec<(usize, &'t str)> {
    let preferred: Vec<Range<usize>> = text
        .match_indices(term.term.as_str())
        .map(|(i, s)| i..i + s.len())
        .collect();
    let mut hits = Vec::new();
    for variant in term.variants.iter().filter(|v| !v.is_empty()) {
        for (i, _) in text.match_indices(variant.as_str()) {
            let span = i..i + variant.len();
            let inside = preferred
                .iter()
                .any(|p| p.start <= span.start && span.end <= p.end);
            let gloss = text[..i].ends_with(['（', '(']);
            if !inside && !gloss && whole_word(text, span) {
                hits.push((i, variant.as_str()));
            }
        }
    }
    hits
}

fn whole_word(text: &str, span: Range<usize>) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let found = &text[span.clone()];
    let before = text[..span.start].chars().next_back();
    let after = text[span.end..].chars().next();
    let starts = found.chars().next().is_some_and(word);
    let ends = found.chars().next_back().is_some_and(word);
    !(starts && before.is_some_and(word) || ends && after.is_some_and(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glossary() -> Glossary {
        Glossary::parse(
            Path::new(PATH),
            "[[term]]\nterm = \"热力图\"\nenglish = \"heatmap\"\nvariants = [\"热图\"]\n\n\
             [[term]]\nterm = \"注意力\"\nenglish = \"attention\"\nvariants = [\"注意\", \"attn\"]\n",
        )
        .unwrap()
    }

    fn hits(text: &str) -> Vec<(usize, &'static str)> {
        let g = Box::leak(Box::new(glossary()));
        g.terms.iter().flat_map(|t| variants_in(text, t)).collect()
    }

    #[test]
    fn a_variant_is_found_but_not_inside_the_preferred_form() {
        assert_eq!(hits("画一张热图"), [(9, "热图")]);
        assert_eq!(hits("画一张热力图"), []);
        assert_eq!(hits("注意力要注意"), [(12, "注意")]);
    }

    #[test]
    fn an_ascii_variant_matches_whole_words_only() {
        assert_eq!(hits("attn 和 attention"), [(0, "attn")]);
        assert_eq!(hits("attnbook"), []);
        assert_eq!(hits("注意力（attn）"), []);
    }

    #[test]
    fn a_variant_that_is_a_preferred_term_is_an_error_at_its_line() {
        let text = "[[term]]\nterm = \"a\"\nenglish = \"a\"\nvariants = [\"b\"]\n\n\
                    [[term]]\nterm = \"b\"\nenglish = \"b\"\n";
        let errors = Glossary::parse(Path::new(PATH), text).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].location.as_ref().map(|l| l.line), Some(4));
    }

    #[test]
    fn an_unknown_key_is_an_error() {
        let errors = Glossary::parse(Path::new(PATH), "[[term]]\nterm = \"a\"\nenglsh = \"a\"\n")
            .unwrap_err();
        assert!(!errors.is_empty());
    }
}
