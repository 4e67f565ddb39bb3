//! TOML front matter between `+++` lines (DESIGN §3.1).
//!
//! Strict: unknown keys, wrong types and missing required keys are errors that point at the
//! line in the chapter file (lines counted from the top of the file, front matter included),
//! every one of them listed at once (`config::parse_toml`).

use std::ops::Range;
use std::path::Path;

use serde::Deserialize;

use crate::config::{parse_toml, value_span};
use crate::diagnostic::{Diagnostic, Location};

/// The chapter's metadata.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontMatter {
    /// Chapter title.
    pub title: String,
    /// Position in the series (required and unique for a chapter; an appendix page has none
    /// and keeps 0 here).
    #[serde(default)]
    pub number: u32,
    /// An unnumbered appendix page (a glossary, notation), listed after the chapters. Also set
    /// for every page under `content/appendix/`.
    #[serde(default)]
    pub appendix: bool,
    /// Publication date.
    #[serde(default)]
    pub date: Option<toml::value::Datetime>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Category.
    #[serde(default)]
    pub category: Option<String>,
    /// One-sentence summary.
    #[serde(default)]
    pub summary: Option<String>,
    /// Drafts are built only with `--drafts`.
    #[serde(default)]
    pub draft: bool,
    /// Seed of the chapter's RNG.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Byte span of the `number` value in the file (for duplicate-number errors).
    #[serde(skip)]
    pub number_span: Range<usize>,
    /// Problems that do not stop the build (characters XML forbids in a value), at their keys.
    #[serde(skip)]
    pub warnings: Vec<Diagnostic>,
}

impl FrontMatter {
    /// The date as `YYYY-MM-DD`, if given.
    pub fn date_string(&self) -> Option<String> {
        self.date
            .as_ref()
            .and_then(|d| d.date)
            .map(|d| d.to_string())
    }
}

const FENCE: &str = "+++";

/// Splits and parses the front matter; returns it with the byte offset where the body starts.
pub(super) fn parse(path: &Path, source: &str) -> Result<(FrontMatter, usize), Vec<Diagnostic>> {
    let (toml_range, body_offset) = split(path, source).map_err(|d| vec![d])?;
    let toml_text = &source[toml_range.clone()];
    let mut front: FrontMatter = parse_toml(path, toml_text).map_err(|mut problems| {
        for d in &mut problems {
            shift(d, path, source, toml_range.start);
        }
        problems
    })?;
    let number_span = value_span(toml_text, "number")
        .map(|r| r.start + toml_range.start..r.end + toml_range.start);
    front.appendix |= in_appendix_dir(path);
    validate(path, source, &front, toml_range.start, toml_text)?;
    check_number(path, source, &front, number_span.clone()).map_err(|d| vec![d])?;
    front.number_span = number_span.unwrap_or(0..0);
    front.warnings = forbidden_characters(path, source, &front, toml_range.start, toml_text);
    Ok((front, body_offset))
}

/// Finds the `+++` block; returns the TOML byte range and the body offset.
fn split(path: &Path, source: &str) -> Result<(Range<usize>, usize), Diagnostic> {
    let missing = || {
        Diagnostic::error("missing front matter")
            .at(Location::in_source(path, source, 0..0))
            .with_help("start the chapter with a `+++` line, `title = \"...\"`, `number = N`, and a closing `+++` line")
    };
    let first_line_end = source.find('\n').map_or(source.len(), |i| i + 1);
    // A byte order mark (which some Windows editors write) is kept in the source, so that
    // `verify --fix` writes it back, and skipped here.
    if source[..first_line_end]
        .trim_start_matches('\u{feff}')
        .trim_end()
        != FENCE
    {
        return Err(missing());
    }
    let mut offset = first_line_end;
    for line in source[first_line_end..].split_inclusive('\n') {
        if line.trim_end() == FENCE {
            return Ok((first_line_end..offset, offset + line.len()));
        }
        offset += line.len();
    }
    Err(Diagnostic::error("front matter is not closed")
        .at(Location::in_source(path, source, 0..FENCE.len()))
        .with_label("opened here")
        .with_help("add a line with `+++` after the last front matter key"))
}

/// Moves a diagnostic computed on the TOML text to its place in the whole file.
fn shift(d: &mut Diagnostic, path: &Path, source: &str, by: usize) {
    if let Some(loc) = &d.location {
        let span = loc.span.start + by..loc.span.end + by;
        d.location = Some(Location::in_source(path, source, span));
    }
}

fn validate(
    path: &Path,
    source: &str,
    front: &FrontMatter,
    toml_start: usize,
    toml_text: &str,
) -> Result<(), Vec<Diagnostic>> {
    let mut errors = Vec::new();
    if front.title.trim().is_empty() {
        let span = value_span(toml_text, "title").unwrap_or(0..0);
        errors.push(
            Diagnostic::error("`title` is empty")
                .at(Location::in_source(
                    path,
                    source,
                    span.start + toml_start..span.end + toml_start,
                ))
                .with_help("give the chapter a title"),
        );
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// `content/appendix/x.md` is an appendix page without saying so in its front matter (the
/// mdBook habit of suffix chapters: where a file lives says what it is).
fn in_appendix_dir(path: &Path) -> bool {
    path.parent()
        .and_then(|dir| dir.file_name())
        .is_some_and(|name| name == "appendix")
}

/// A chapter needs a `number`; an appendix page must not have one, so that the chapters stay
/// numbered 1..N whatever appendices the series gains.
fn check_number(
    path: &Path,
    source: &str,
    front: &FrontMatter,
    span: Option<Range<usize>>,
) -> Result<(), Diagnostic> {
    match (front.appendix, span) {
        (false, None) => Err(Diagnostic::error("missing field `number`")
            .at(Location::in_source(path, source, 0..0))
            .with_help(
                "give the chapter its position in the series, e.g. `number = 3`, or mark an \
                 unnumbered page `appendix = true`",
            )),
        (true, Some(span)) => Err(Diagnostic::error("an appendix page has no `number`")
            .at(Location::in_source(path, source, span))
            .with_help(
                "remove `number`: appendix pages are listed after the chapters, in file name order",
            )),
        _ => Ok(()),
    }
}

/// A TOML escape (`\u000c`) puts in a string what the file itself may not hold: every text value
/// is checked after unescaping, and reported at its key.
fn forbidden_characters(
    path: &Path,
    source: &str,
    front: &FrontMatter,
    toml_start: usize,
    toml_text: &str,
) -> Vec<Diagnostic> {
    let values = [
        ("title", Some(front.title.as_str())),
        ("category", front.category.as_deref()),
        ("summary", front.summary.as_deref()),
    ]
    .into_iter()
    .filter_map(|(key, value)| Some((key, value?)))
    .chain(front.tags.iter().map(|tag| ("tags", tag.as_str())));
    values
        .filter_map(|(key, value)| {
            let span = value_span(toml_text, key).unwrap_or(0..0);
            let span = span.start + toml_start..span.end + toml_start;
            crate::text::check_value(path, source, span, key, value)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(src: &str) -> Result<(FrontMatter, usize), Vec<Diagnostic>> {
        parse(Path::new("content/01-x.md"), src)
    }

    fn loc(d: &Diagnostic) -> (usize, usize) {
        let l = d.location.as_ref().unwrap();
        (l.line, l.col)
    }

    #[test]
    fn parses_every_documented_key() {
        let src = "+++\ntitle = \"Luong\"\nnumber = 13\ndate = 2026-04-25\ntags = [\"a\"]\ncategory = \"t\"\nsummary = \"s\"\ndraft = false\nseed = 7\n+++\nbody\n";
        let (fm, off) = p(src).unwrap();
        assert_eq!(fm.title, "Luong");
        assert_eq!(fm.number, 13);
        assert_eq!(fm.date_string().as_deref(), Some("2026-04-25"));
        assert_eq!(fm.seed, Some(7));
        assert_eq!(&src[off..], "body\n");
    }

    #[test]
    fn unknown_key_points_at_its_line_in_the_file() {
        let src = "+++\ntitle = \"x\"\nnumber = 1\ntagz = []\n+++\n";
        let errors = p(src).unwrap_err();
        assert_eq!(loc(&errors[0]), (4, 1));
        assert_eq!(errors[0].help.as_deref(), Some("did you mean `tags`?"));
    }

    #[test]
    fn wrong_type_points_at_the_value() {
        let src = "+++\ntitle = \"x\"\nnumber = \"one\"\n+++\n";
        let errors = p(src).unwrap_err();
        assert_eq!(loc(&errors[0]).0, 3);
    }

    /// A chapter saved with a byte order mark, and with CRLF line ends, still has front matter.
    #[test]
    fn a_byte_order_mark_and_crlf_are_accepted() {
        let src = "\u{feff}+++\r\ntitle = \"x\"\r\nnumber = 2\r\n+++\r\nbody\r\n";
        let (front, body) = p(src).unwrap();
        assert_eq!((front.title.as_str(), front.number), ("x", 2));
        assert_eq!(&src[body..], "body\r\n");
    }

    #[test]
    fn missing_and_unclosed_front_matter_are_errors() {
        assert!(
            p("# no front matter\n").unwrap_err()[0]
                .message
                .contains("missing front matter")
        );
        assert!(
            p("").unwrap_err()[0]
                .message
                .contains("missing front matter")
        );
        let errors = p("+++\ntitle = \"x\"\n").unwrap_err();
        assert!(errors[0].message.contains("not closed"));
    }

    #[test]
    fn a_control_character_from_an_escape_is_a_warning_at_its_key() {
        let src = "+++\ntitle = \"a\\u000cb\"\nnumber = 1\ntags = [\"ok\", \"x\\by\"]\n+++\n";
        let (fm, _) = p(src).unwrap();
        let at: Vec<(usize, usize)> = fm.warnings.iter().map(loc).collect();
        assert_eq!(at, [(2, 1), (4, 1)], "{:?}", fm.warnings);
        assert!(fm.warnings[0].message.contains("`title`"));
        assert!(fm.warnings[1].message.contains("U+0008"));
    }

    #[test]
    fn an_appendix_page_has_no_number() {
        let (fm, _) = p("+++\ntitle = \"术语表\"\nappendix = true\n+++\n").unwrap();
        assert!(fm.appendix);
        let src = "+++\ntitle = \"x\"\nnumber = 4\n+++\n";
        let errors = parse(Path::new("content/appendix/glossary.md"), src).unwrap_err();
        assert_eq!(loc(&errors[0]), (3, 1));
        assert!(
            errors[0].message.contains("appendix"),
            "{}",
            errors[0].message
        );
        let src = "+++\ntitle = \"x\"\n+++\n";
        assert!(
            parse(Path::new("content/appendix/glossary.md"), src)
                .unwrap()
                .0
                .appendix
        );
    }

    #[test]
    fn missing_number_is_named() {
        let errors = p("+++\ntitle = \"x\"\n+++\n").unwrap_err();
        assert!(
            errors[0].message.contains("number"),
            "{}",
            errors[0].message
        );
    }
}
