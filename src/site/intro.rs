//! The index page's introduction, `intro` in site.toml: Markdown held to every rule of a
//! chapter (redteam-3 D4). Links to chapter files become chapter URLs and root links get the
//! base path; formulas, quotes of the chapters' values (`[0.5]{=slug/name}`), claims,
//! cross-references, citations and the glossary's terminology work as in a chapter, and every
//! problem is reported at its place in site.toml.
//!
//! The intro goes through the stages as a chapter of its own that is not in the series: it is
//! parsed like one, bound against the series' values, and its links and references are checked
//! against the series' pages. It cannot run experiments or place tables and figures: it has
//! none.

use std::ops::Range;
use std::path::Path;

use crate::content::{Chapter, FrontMatter, Series};
use crate::diagnostic::{Diagnostic, Location};
use crate::lab::Ran;
use crate::markdown::{Parsed, Piece};
use crate::quotes::{self, Status};
use crate::render::{self, highlight::Highlighter, html, math::MathRenderer};

/// The file the intro is written in, as diagnostics name it.
const PATH: &str = "site.toml";

/// The intro's HTML for the index and print pages, and every problem found in it (empty HTML
/// when the site has no intro).
pub(super) fn render<C: AsRef<Ran> + Sync>(
    series: &Series<C>,
    highlighter: &Highlighter,
) -> (String, Vec<Diagnostic>) {
    let intro = &series.config.intro;
    if intro.trim().is_empty() {
        return (String::new(), Vec::new());
    }
    let toml_text = std::fs::read_to_string(series.root.join(PATH)).unwrap_or_default();
    let offsets = Offsets::new(&toml_text, intro);
    let (parsed, mut problems) = Parsed::new(chapter(series, intro));
    problems.extend(not_in_the_intro(&parsed));
    let (bound, found) = quotes::bind_page(series, Ran { parsed, run: None });
    problems.extend(found.into_iter().map(own_values));
    problems.extend(drift(&bound));
    problems.extend(render::links::check_extra(series, &bound));
    let (refs, unresolved) = render::xref::resolve_extra(series, &bound);
    problems.extend(unresolved);
    let (maths, rejected) = formulas(series, &bound);
    problems.extend(rejected);
    let citations = if bound.doc.citations.is_empty() {
        render::cite::ChapterCitations::default()
    } else {
        // A bibliography that cannot be read is reported by the chapters' citations already.
        match render::cite::load(&series.root) {
            Ok(bib) => {
                let (citations, found) =
                    render::cite::render_page(&series.config.citation_style, bib.as_ref(), &bound);
                problems.extend(found);
                citations
            }
            Err(_) => render::cite::ChapterCitations::default(),
        }
    };
    if let Some(glossary) = &series.glossary {
        problems.extend(glossary.check(&bound.ran.parsed.chapter, &bound.doc.prose));
    }
    let base_path = series.config.base_path();
    let inputs = html::PageInputs {
        doc: &bound.doc,
        maths: &maths,
        run: None,
        bindings: &bound.bindings,
        claims: &bound.claims,
        base_path: &base_path,
        refs: &refs,
        citations: &citations.inline,
        highlighter,
        fold_lines: None,
        glossary: "",
        terms: &[],
        previews: "",
        table_math: &std::collections::BTreeMap::new(),
        points: &[],
    };
    let mut out = html::body_html(&inputs);
    out.push_str(&citations.list_html);
    for d in &mut problems {
        offsets.relocate(d, &toml_text);
    }
    (out, problems)
}

/// The intro as a chapter: the stages read its text as a chapter body and report places in
/// it; [`Offsets`] carries them back to site.toml. Its slug is empty, which no chapter's can
/// be, so its own anchors and labels never mix with a chapter's.
fn chapter<C>(series: &Series<C>, intro: &str) -> Chapter {
    Chapter::new(
        Path::new(PATH).to_path_buf(),
        String::new(),
        intro.to_string(),
        FrontMatter {
            title: series.config.title.clone(),
            number: 0,
            appendix: false,
            date: None,
            tags: Vec::new(),
            category: None,
            summary: None,
            draft: false,
            seed: None,
            number_span: 0..0,
            warnings: Vec::new(),
        },
        0,
    )
}

/// What only a chapter can hold: experiments and the placements of their tables and figures,
/// and the glossary's tables.
fn not_in_the_intro(parsed: &Parsed) -> Vec<Diagnostic> {
    let mut problems: Vec<Diagnostic> = parsed
        .doc
        .experiments
        .iter()
        .map(|e| {
            Diagnostic::error("the intro cannot hold an experiment block")
                .at(parsed.location(e.span.clone()))
                .with_help("move the experiment into a chapter and quote its values here as `[0.5]{=slug/name}`")
        })
        .collect();
    for piece in &parsed.doc.pieces {
        let (Piece::Placement { span, .. } | Piece::Glossary { span }) = piece else {
            continue;
        };
        let what = parsed.source[span.clone()].trim();
        problems.push(
            Diagnostic::error(format!("`{what}` cannot be placed in the intro"))
                .at(parsed.location(span.clone()))
                .with_help("place tables, figures and the glossary in a chapter, and link to it"),
        );
    }
    problems
}

/// The intro has no values of its own: a name without `slug/` is explained as such.
fn own_values(d: Diagnostic) -> Diagnostic {
    match d.message.strip_prefix("unknown chapter `` in `") {
        Some(rest) => {
            let name = rest.trim_end_matches('`');
            Diagnostic {
                message: format!("the intro records no values, so `{name}` names nothing"),
                help: Some(format!(
                    "quote a chapter's value with its slug, `slug/{name}`"
                )),
                ..d
            }
        }
        None => d,
    }
}

/// Quotes outside their tolerance and claims that fail, as warnings (as in a chapter).
fn drift(bound: &quotes::Bound) -> Vec<Diagnostic> {
    let quotes = bound
        .doc
        .quotes
        .iter()
        .zip(&bound.bindings)
        .filter(|(_, b)| b.status == Status::Drift)
        .map(|(quote, binding)| {
            super::drift_diagnostic(
                bound.location(quote.number.span.clone()),
                &bound.source[quote.number.span.clone()],
                binding,
            )
        });
    let claims = bound
        .doc
        .claims
        .iter()
        .zip(&bound.claims)
        .filter(|(_, v)| v.holds == Some(false))
        .map(|(claim, verdict)| {
            super::claim_diagnostic(bound.location(claim.span.clone()), verdict)
        });
    quotes.chain(claims).collect()
}

/// The intro's formulas rendered (labelled equations numbered), and a warning for each one
/// KaTeX rejects, which the page shows in a red box.
type Formulas = Vec<Result<String, render::math::MathError>>;
fn formulas<C>(series: &Series<C>, intro: &Parsed) -> (Formulas, Vec<Diagnostic>) {
    let doc = &intro.doc;
    let renderer = MathRenderer::new(&series.config.katex.macros);
    let mut n = 0;
    let rendered: Formulas = doc
        .maths
        .iter()
        .map(|m| match &m.label {
            Some(_) if m.display => {
                n += 1;
                renderer.render(&format!("{}\\tag{{{n}}}", m.tex), true)
            }
            _ => renderer.render(&m.tex, m.display),
        })
        .collect();
    let problems = doc
        .maths
        .iter()
        .zip(&rendered)
        .filter_map(|(m, r)| {
            let e = r.as_ref().err()?;
            Some(super::math_warning(intro.location(m.span.clone()), e))
        })
        .collect();
    (rendered, problems)
}

/// Where each byte of the intro's value stands in site.toml: TOML escapes (`\\`, `\n`,
/// `\u00e9`), the first newline of a `"""` string and line-ending backslashes make the two
/// differ.
struct Offsets {
    /// `at[i]`: the byte of site.toml that byte `i` of the value came from (one past the end
    /// for `i == len`).
    at: Vec<usize>,
}

impl Offsets {
    fn new(toml_text: &str, value: &str) -> Self {
        let decoded =
            value_span(toml_text).and_then(|span| decode(&toml_text[span.clone()], span.start));
        match decoded {
            Some((text, at)) if text == value => Offsets { at },
            // The value could not be found again: every place is the start of the key.
            _ => {
                let start = crate::config::value_span(toml_text, "intro").map_or(0, |s| s.start);
                Offsets {
                    at: vec![start; value.len() + 1],
                }
            }
        }
    }

    fn map(&self, i: usize) -> usize {
        self.at.get(i).or(self.at.last()).copied().unwrap_or(0)
    }

    /// Moves a diagnostic's place from the intro's text to site.toml.
    fn relocate(&self, d: &mut Diagnostic, toml_text: &str) {
        if let Some(location) = d.location.as_mut().filter(|l| l.path == Path::new(PATH)) {
            let span = self.map(location.span.start)..self.map(location.span.end);
            *location = Location::in_source(Path::new(PATH), toml_text, span);
        }
    }
}

/// The span of the `intro` value, delimiters included, in site.toml.
fn value_span(toml_text: &str) -> Option<Range<usize>> {
    let table = toml::de::DeTable::parse(toml_text).ok()?;
    table
        .get_ref()
        .iter()
        .find(|(key, _)| key.get_ref() == "intro")
        .map(|(_, value)| value.span())
}

/// Decodes a TOML string token (`raw`, starting at byte `start` of the file) and records where
/// each decoded byte came from.
fn decode(raw: &str, start: usize) -> Option<(String, Vec<usize>)> {
    let (delimiter, literal) = ["\"\"\"", "'''", "\"", "'"]
        .into_iter()
        .find(|d| raw.starts_with(d) && raw.len() >= 2 * d.len())
        .map(|d| (d, d.starts_with('\'')))?;
    let multiline = delimiter.len() == 3;
    let mut body = &raw[delimiter.len()..raw.len() - delimiter.len()];
    let mut offset = start + delimiter.len();
    if multiline {
        for newline in ["\r\n", "\n"] {
            if let Some(rest) = body.strip_prefix(newline) {
                body = rest;
                offset += newline.len();
                break;
            }
        }
    }
    let mut text = String::new();
    let mut at = Vec::new();
    let mut push = |c: char, from: usize, text: &mut String| {
        at.extend(std::iter::repeat_n(from, c.len_utf8()));
        text.push(c);
    };
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if literal || c != '\\' {
            push(c, offset + i, &mut text);
            continue;
        }
        let (_, escape) = chars.next()?;
        let simple = match escape {
            'b' => Some('\u{8}'),
            't' => Some('\t'),
            'n' => Some('\n'),
            'f' => Some('\u{c}'),
            'r' => Some('\r'),
            'e' => Some('\u{1b}'),
            '"' => Some('"'),
            '\\' => Some('\\'),
            _ => None,
        };
        if let Some(decoded) = simple {
            push(decoded, offset + i, &mut text);
            continue;
        }
        let digits = match escape {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => 0,
        };
        if digits > 0 {
            let hex: String = (0..digits)
                .filter_map(|_| chars.next().map(|(_, c)| c))
                .collect();
            let decoded = u32::from_str_radix(&hex, 16)
                .ok()
                .and_then(char::from_u32)?;
            push(decoded, offset + i, &mut text);
            continue;
        }
        // A line-ending backslash: the newline and the whitespace after it go.
        if multiline && escape.is_whitespace() {
            while chars.peek().is_some_and(|(_, c)| c.is_whitespace()) {
                chars.next();
            }
            continue;
        }
        return None;
    }
    at.push(offset + body.len());
    Some((text, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each decoded byte maps back to the byte of the file it came from.
    #[test]
    fn toml_escapes_map_back_to_their_place_in_the_file() {
        let file = "title = \"T\"\nintro = \"\"\"\na\\\\b \\u00e9 $x$\\\n   c\"\"\"\n";
        let span = value_span(file).unwrap();
        let (text, at) = decode(&file[span.clone()], span.start).unwrap();
        assert_eq!(text, "a\\b é $x$c");
        let value: toml::Table = toml::from_str(file).unwrap();
        assert_eq!(value["intro"].as_str(), Some(text.as_str()));
        // `$x$` starts after `a\\b \u00e9 ` in the file.
        let dollar = text.find('$').unwrap();
        assert_eq!(&file[at[dollar]..at[dollar] + 4], "$x$\\");
        let c = text.find('c').unwrap();
        assert_eq!(&file[at[c]..at[c] + 1], "c");
        for literal in ["intro = 'a $x$'\n", "intro = '''\na $x$'''\n"] {
            let span = value_span(literal).unwrap();
            let (text, at) = decode(&literal[span.clone()], span.start).unwrap();
            assert_eq!(text, "a $x$");
            assert_eq!(&literal[at[2]..at[2] + 3], "$x$");
        }
    }
}
