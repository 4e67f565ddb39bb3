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
    /// Problems that do not stop the build (characters XML forbids in a value), at their values.
    #[serde(skip)]
    pub warnings: Vec<Diagnostic>,
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
    /// Where the entry and each of its variants stand in the file, for diagnostics.
    #[serde(skip)]
    pub places: Places,
}

/// Byte spans of an entry's values in the glossary file (the entry's first value when a span
/// could not be found).
#[derive(Debug, Clone, Default)]
pub struct Places {
    /// The whole entry.
    pub entry: Range<usize>,
    /// The value of each key, by key.
    pub keys: Vec<(String, Range<usize>)>,
    /// Each variant's string, in order.
    pub variants: Vec<Range<usize>>,
}

impl Places {
    /// The span of `key`'s value, or the entry's.
    pub fn of(&self, key: &str) -> Range<usize> {
        self.keys
            .iter()
            .find(|(k, _)| k == key)
            .map_or(self.entry.clone(), |(_, span)| span.clone())
    }
}

impl Term {
    /// The id of the term's row on the glossary page, `term-ENGLISH` (`term-heatmap`), which
    /// links may name.
    pub fn id(&self) -> String {
        format!("term-{}", crate::text::slugify(&self.english))
    }
}

/// One symbol of the notation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Notation {
    /// The symbol as TeX (`d_k`), rendered by KaTeX on the page.
    pub symbol: String,
    /// What it stands for.
    pub meaning: String,
    /// The line of its `symbol` value in the file (1-based), for diagnostics.
    #[serde(skip)]
    pub line: usize,
    /// The column of its `symbol` value (1-based).
    #[serde(skip)]
    pub col: usize,
    /// Where the entry's values stand in the file.
    #[serde(skip)]
    pub places: Places,
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
        // The values' places come from the document itself, whatever its layout (`[[term]]`
        // tables or inline ones, keys in any order, text that mentions `symbol` in a note).
        let document = toml::de::DeTable::parse(text).ok();
        let document = document.as_ref().map(|d| d.get_ref());
        let terms = entry_places(document, "term");
        for (term, places) in glossary.terms.iter_mut().zip(terms) {
            term.places = places;
        }
        let symbols = entry_places(document, "notation");
        for (entry, places) in glossary.notation.iter_mut().zip(symbols) {
            let at = Location::in_source(path, text, places.of("symbol"));
            (entry.line, entry.col) = (at.line, at.col);
            entry.places = places;
        }
        glossary.warnings = glossary.forbidden_characters(path, text);
        let mut problems = glossary.problems(path, text);
        if problems.is_empty() {
            Ok(glossary)
        } else {
            // Every problem of the file at once: the warnings are not lost with the errors.
            problems.append(&mut glossary.warnings);
            Err(problems)
        }
    }

    /// Entries the rule could not apply: an empty form, or a variant that is itself a preferred
    /// term (the rule would then contradict itself).
    fn problems(&self, path: &Path, text: &str) -> Vec<Diagnostic> {
        let at = |span: Range<usize>| Location::in_source(path, text, span);
        let mut problems = Vec::new();
        let mut ids: Vec<(String, &Term)> = Vec::new();
        for term in &self.terms {
            if term.term.trim().is_empty() {
                problems.push(
                    Diagnostic::error("a glossary term is empty").at(at(term.places.of("term"))),
                );
            }
            let id = term.id();
            if let Some((_, first)) = ids.iter().find(|(other, _)| *other == id) {
                let line = at(first.places.of("english")).line;
                problems.push(
                    Diagnostic::error(format!(
                        "the glossary rows of `{}` and `{}` would both have the id `{id}`",
                        first.english, term.english
                    ))
                    .at(at(term.places.of("english")))
                    .with_note(format!("{}:{line}: `{}` has it first", path.display(), first.english))
                    .with_help("the id is the English in lowercase words joined by `-`: make the two differ in their letters or digits"),
                );
            } else {
                ids.push((id, term));
            }
            for (i, variant) in term.variants.iter().enumerate() {
                let span = term
                    .places
                    .variants
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| term.places.of("variants"));
                if variant.trim().is_empty() {
                    problems.push(
                        Diagnostic::error(format!("an empty variant of `{}`", term.term))
                            .at(at(span)),
                    );
                } else if let Some(other) = self.terms.iter().find(|t| t.term == *variant) {
                    problems.push(
                        Diagnostic::error(format!(
                            "`{variant}` is both a variant of `{}` and a preferred term",
                            term.term
                        ))
                        .at(at(span))
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

    /// A TOML escape (`\u000c`) puts in a value what the file itself may not hold: every value
    /// that reaches the page is checked after unescaping, as in site.toml and front matter.
    fn forbidden_characters(&self, path: &Path, text: &str) -> Vec<Diagnostic> {
        let mut values: Vec<(&str, &str, Range<usize>)> = Vec::new();
        for term in &self.terms {
            let p = &term.places;
            values.push(("term", &term.term, p.of("term")));
            values.push(("english", &term.english, p.of("english")));
            if let Some(note) = &term.note {
                values.push(("note", note, p.of("note")));
            }
            for (i, variant) in term.variants.iter().enumerate() {
                let span = p
                    .variants
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| p.of("variants"));
                values.push(("variants", variant, span));
            }
        }
        for entry in &self.notation {
            values.push(("symbol", &entry.symbol, entry.places.of("symbol")));
            values.push(("meaning", &entry.meaning, entry.places.of("meaning")));
        }
        values
            .into_iter()
            .filter_map(|(key, value, span)| crate::text::check_value(path, text, span, key, value))
            .collect()
    }

    /// A warning for every listed variant a reader of the chapter sees: in its prose (the byte
    /// spans of its text outside code, math and quotes, as the Markdown stage finds them, read
    /// across emphasis marks and hard-wrapped lines as the page joins them) and in its title,
    /// summary, tags and category. Each names the preferred term.
    pub fn check(&self, chapter: &Chapter, prose: &[Range<usize>]) -> Vec<Diagnostic> {
        self.checker().check(chapter, prose)
    }

    /// [`Glossary::check`] for many chapters: the automaton over every term and variant is
    /// built once (building it for each of the series' chapters was 3 % of a no-change build).
    pub fn checker(&self) -> Checker<'_> {
        Checker {
            glossary: self,
            finder: Finder::new(&self.terms),
        }
    }
}

/// Checks chapters against one glossary: see [`Glossary::checker`].
pub struct Checker<'g> {
    glossary: &'g Glossary,
    finder: Finder<'g>,
}

impl Checker<'_> {
    /// What [`Glossary::check`] reports for `chapter`.
    pub fn check(&self, chapter: &Chapter, prose: &[Range<usize>]) -> Vec<Diagnostic> {
        let (glossary, finder) = (self.glossary, &self.finder);
        let mut found = Vec::new();
        for run in reading_runs(&chapter.source, prose) {
            for (term, at, variant) in finder.variants_in(&run.text) {
                let term = &glossary.terms[term];
                let span = run.at[at]..run.at[at + variant.len() - 1] + 1;
                found.push((span.start, variant_warning(chapter, span, variant, term)));
            }
        }
        found.extend(glossary.front_matter_variants(chapter));
        found.sort_by_key(|(start, _)| *start);
        found.into_iter().map(|(_, d)| d).collect()
    }
}

impl Glossary {
    /// Variants in the front matter values the page, the index and the feed show.
    fn front_matter_variants(&self, chapter: &Chapter) -> Vec<(usize, Diagnostic)> {
        let front = &chapter.front;
        let head = &chapter.source[..chapter.body_offset.min(chapter.source.len())];
        let mut values: Vec<(&str, &str)> = vec![("title", front.title.as_str())];
        values.extend(front.summary.as_deref().map(|s| ("summary", s)));
        values.extend(front.category.as_deref().map(|c| ("category", c)));
        values.extend(front.tags.iter().map(|t| ("tags", t.as_str())));
        let mut found = Vec::new();
        for (key, value) in values {
            for term in &self.terms {
                for (_, variant) in variants_in(value, term) {
                    // The variant where the file has it, else the key's line.
                    let line = crate::config::value_span(head, key).unwrap_or(0..0);
                    let raw = head[line.clone()].to_ascii_lowercase();
                    let span = raw
                        .find(&variant.to_ascii_lowercase())
                        .map_or(line.clone(), |i| {
                            line.start + i..line.start + i + variant.len()
                        });
                    found.push((span.start, variant_warning(chapter, span, variant, term)));
                }
            }
        }
        found
    }
}

/// Text as a reader sees it, with the place in the source of each of its bytes.
struct Run {
    text: String,
    /// `at[i]`: the source offset of byte `i` of `text`.
    at: Vec<usize>,
}

/// The prose joined where the page joins it: across emphasis marks (`**热**图`) and line
/// breaks (a soft break between two CJK characters is nothing, between words a space).
fn reading_runs(source: &str, prose: &[Range<usize>]) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    let mut end = None;
    for span in prose.iter().filter(|s| s.end <= source.len()) {
        let gap = end
            .filter(|&e: &usize| e <= span.start)
            .and_then(|e| source.get(e..span.start).map(|g| (e, g)));
        let joined = gap.and_then(|(e, gap)| joining(source, e, gap, span.start));
        match (joined, runs.last_mut()) {
            (Some(space), Some(run)) => {
                if let Some(offset) = space {
                    run.text.push(' ');
                    run.at.push(offset);
                }
            }
            _ => runs.push(Run {
                text: String::new(),
                at: Vec::new(),
            }),
        }
        let run = runs.last_mut().expect("a run was just pushed");
        run.text.push_str(&source[span.clone()]);
        run.at.extend(span.clone());
        end = Some(span.end);
    }
    runs
}

/// Whether two pieces of prose separated by `gap` (at `start` of `source`, before `next`) read
/// as one text: `None` if not, `Some(None)` joined directly, `Some(Some(offset))` joined with
/// a space (standing at `offset`). Only emphasis marks and at most one soft line break may lie
/// between them, the break followed by the line's container prefix (`> ` in a blockquote, the
/// indentation of a list item); a hard break (two spaces or a backslash before the newline)
/// separates.
fn joining(source: &str, start: usize, gap: &str, next: usize) -> Option<Option<usize>> {
    let mark_or_space = |c: char| matches!(c, '*' | '_' | '~' | ' ' | '\t');
    let (line_end, next_line) = gap.split_once('\n').unwrap_or((gap, ""));
    let marks_and_space = line_end.chars().all(mark_or_space)
        && next_line.chars().all(|c| mark_or_space(c) || c == '>');
    if !marks_and_space || next_line.contains('\n') || gap.contains("  \n") {
        return None;
    }
    if !gap.contains([' ', '\t', '\n']) {
        return Some(None);
    }
    let before = source[..start].chars().next_back();
    let after = source[next..].chars().next();
    let cjk = before.is_some_and(crate::text::is_cjk) && after.is_some_and(crate::text::is_cjk);
    if gap.contains('\n') && cjk {
        Some(None)
    } else {
        let space = gap.find([' ', '\t', '\n']).map_or(start, |i| start + i);
        Some(Some(space))
    }
}

/// The places of the entries of the array `key` (`[[term]]`), each value by key and each
/// variant; an entry whose places are unknown gets empty spans.
fn entry_places(document: Option<&toml::de::DeTable<'_>>, key: &str) -> Vec<Places> {
    use toml::de::DeValue;
    let Some(entries) = document
        .and_then(|d| d.iter().find(|(k, _)| k.get_ref() == key))
        .and_then(|(_, v)| match v.get_ref() {
            DeValue::Array(entries) => Some(entries),
            _ => None,
        })
    else {
        return Vec::new();
    };
    entries
        .iter()
        .map(|entry| {
            let mut places = Places {
                entry: entry.span(),
                ..Places::default()
            };
            if let DeValue::Table(table) = entry.get_ref() {
                for (k, v) in table.iter() {
                    places.keys.push((k.get_ref().to_string(), v.span()));
                    if k.get_ref() == "variants"
                        && let DeValue::Array(items) = v.get_ref()
                    {
                        places.variants = items.iter().map(|i| i.span()).collect();
                    }
                }
            }
            places
        })
        .collect()
}

fn variant_warning(
    chapter: &Chapter,
    span: Range<usize>,
    variant: &str,
    term: &Term,
) -> Diagnostic {
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
/// Letters are matched in any case (`Heat map` at the start of a sentence is `heat map`).
fn variants_in<'t>(text: &str, term: &'t Term) -> Vec<(usize, &'t str)> {
    let text = text.to_ascii_lowercase();
    let preferred: Vec<Range<usize>> = text
        .match_indices(term.term.to_ascii_lowercase().as_str())
        .map(|(i, s)| i..i + s.len())
        .collect();
    let mut hits = Vec::new();
    for variant in term.variants.iter().filter(|v| !v.is_empty()) {
        for (i, _) in text.match_indices(variant.to_ascii_lowercase().as_str()) {
            let span = i..i + variant.len();
            let inside = preferred
                .iter()
                .any(|p| p.start <= span.start && span.end <= p.end);
            let gloss = text[..i].ends_with(['（', '(']);
            if !inside && !gloss && whole_word(&text, span) {
                hits.push((i, variant.as_str()));
            }
        }
    }
    hits
}

/// Every term's preferred form and variants in one automaton (one pass over a text instead of
/// one search per term and variant: the series has hundreds of prose runs and dozens of
/// terms). It finds what [`variants_in`] finds, term by term, in the same order.
struct Finder<'t> {
    automaton: Option<aho_corasick::AhoCorasick>,
    /// Per pattern: the term's index, and the variant (`None`: the preferred form).
    patterns: Vec<(usize, Option<&'t str>)>,
}

impl<'t> Finder<'t> {
    fn new(terms: &'t [Term]) -> Self {
        let mut texts = Vec::new();
        let mut patterns = Vec::new();
        for (i, term) in terms.iter().enumerate() {
            if !term.term.is_empty() {
                texts.push(term.term.as_str());
                patterns.push((i, None));
            }
            for variant in term.variants.iter().filter(|v| !v.is_empty()) {
                texts.push(variant.as_str());
                patterns.push((i, Some(variant.as_str())));
            }
        }
        // A contiguous NFA: building the DFA that the
        // default picks for so few patterns cost more than every search with it (callgrind:
        // 8 % of a no-change build of the series).
        let automaton = aho_corasick::AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .build(&texts)
            .ok();
        Finder {
            automaton,
            patterns,
        }
    }

    /// `(term, offset, variant)` of every variant [`variants_in`] reports, by term, then
    /// variant, then offset.
    fn variants_in(&self, text: &str) -> Vec<(usize, usize, &'t str)> {
        let Some(automaton) = &self.automaton else {
            return Vec::new();
        };
        let mut preferred: Vec<(usize, Range<usize>)> = Vec::new();
        let mut candidates: Vec<(usize, usize, usize, &'t str)> = Vec::new();
        // `match_indices` semantics per pattern: from the left, a match that overlaps the
        // previous one of the same pattern is not one.
        let mut last_end = vec![0; self.patterns.len()];
        for found in automaton.find_overlapping_iter(text) {
            let pattern = found.pattern().as_usize();
            if found.start() < last_end[pattern] {
                continue;
            }
            last_end[pattern] = found.end();
            match self.patterns[pattern] {
                (term, None) => preferred.push((term, found.range())),
                (term, Some(variant)) => candidates.push((term, pattern, found.start(), variant)),
            }
        }
        candidates.sort_unstable_by_key(|&(term, pattern, at, _)| (term, pattern, at));
        candidates
            .into_iter()
            .filter(|&(term, _, at, variant)| {
                let span = at..at + variant.len();
                let inside = preferred
                    .iter()
                    .any(|(t, p)| *t == term && p.start <= span.start && span.end <= p.end);
                let gloss = text[..at].ends_with(['（', '(']);
                !inside && !gloss && whole_word(text, span)
            })
            .map(|(term, _, at, variant)| (term, at, variant))
            .collect()
    }
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

    /// The automaton finds what the search term by term finds, in the same order.
    #[test]
    fn the_finder_agrees_with_the_search_term_by_term() {
        let g = Box::leak(Box::new(glossary()));
        let finder = Finder::new(&g.terms);
        for text in [
            "画一张热图",
            "画一张热力图",
            "注意力要注意",
            "attn 和 attention",
            "attnbook",
            "ATTN 与 Attn，热图（热图）注意注意力注意",
            "（注意）与 (attn) 和 热力图热图",
            "注意注意注意力注",
            "",
        ] {
            let by_term: Vec<(usize, usize, &str)> = g
                .terms
                .iter()
                .enumerate()
                .flat_map(|(i, t)| {
                    variants_in(text, t)
                        .into_iter()
                        .map(move |(at, v)| (i, at, v))
                })
                .collect();
            assert_eq!(finder.variants_in(text), by_term, "{text}");
        }
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

    /// All of a glossary's problems are listed at once: a control character's warning is
    /// not dropped because another entry has an error.
    #[test]
    fn errors_do_not_hide_the_warnings_of_the_same_file() {
        let text = "[[term]]\nterm = \"a\"\nenglish = \"a\"\nvariants = [\"b\"]\n\n\
                    [[term]]\nterm = \"b\"\nenglish = \"b\"\nnote = \"x\\u0001y\"\n";
        let problems = Glossary::parse(Path::new(PATH), text).unwrap_err();
        let messages: Vec<&str> = problems.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(problems.len(), 2, "{messages:?}");
        assert!(messages[0].contains("both a variant"), "{messages:?}");
        assert!(messages[1].contains("U+0001"), "{messages:?}");
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
