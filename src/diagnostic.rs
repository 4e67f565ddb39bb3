//! One diagnostic type for every stage.
//!
//! Front matter, math, experiment compile errors, panics, quotes and templates all report
//! problems as a [`Diagnostic`]: a message, an optional `path:line:col` location with the byte
//! span it came from, notes and a suggested fix. Stages collect them into [`Diagnostics`] and
//! keep going, so an author sees every problem at once; the driver prints them and fails.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term;

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Reported, does not fail the build (unless `--strict`).
    Warning,
    /// Fails the stage.
    Error,
}

/// A place in a source file, with its byte span and 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file, as the author would type it (relative to the site root when possible).
    pub path: PathBuf,
    /// Byte span in the whole file (front matter included).
    pub span: Range<usize>,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, counted in characters.
    pub col: usize,
}

impl Location {
    /// Computes line and column of `span.start` in `source`.
    pub fn in_source(path: &Path, source: &str, span: Range<usize>) -> Self {
        Self::in_lines(path, source, &line_starts(source), span)
    }

    /// [`Location::in_source`] with the line starts of `source` at hand ([`line_starts`]):
    /// the same line and column, without a pass over the whole text per location.
    pub fn in_lines(path: &Path, source: &str, starts: &[usize], span: Range<usize>) -> Self {
        let start = span.start.min(source.len());
        let line = starts.partition_point(|&s| s <= start).max(1);
        let line_start = starts.get(line - 1).copied().unwrap_or(0);
        let line_end = starts.get(line).copied().unwrap_or(source.len());
        let col = codespan_reporting::files::column_index(source, line_start..line_end, start) + 1;
        let end = span.end.clamp(start, source.len());
        Location {
            path: path.to_path_buf(),
            span: start..end,
            line,
            col,
        }
    }

    /// A location known only by line and column (no source text at hand).
    pub fn at_line(path: &Path, line: usize, col: usize) -> Self {
        Location {
            path: path.to_path_buf(),
            span: 0..0,
            line,
            col,
        }
    }
}

/// Where each line of `source` starts, for [`Location::in_lines`].
pub fn line_starts(source: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(memchr::memchr_iter(b'\n', source.as_bytes()).map(|i| i + 1))
        .collect()
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.path.display(), self.line, self.col)
    }
}

/// A problem found in the author's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// One line saying what is wrong.
    pub message: String,
    /// Where, if it has a place.
    pub location: Option<Location>,
    /// A short label shown under the offending span.
    pub label: Option<String>,
    /// Extra lines of context (compiler output, panic message, ...).
    pub notes: Vec<String>,
    /// How to fix it.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A new error.
    pub fn error(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            location: None,
            label: None,
            notes: Vec::new(),
            help: None,
        }
    }

    /// A new warning.
    pub fn warning(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(message)
        }
    }

    /// Attaches a location.
    pub fn at(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }

    /// Attaches a label for the span.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Adds a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Sets the suggested fix.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// The problems a run has found so far.
#[derive(Debug, Default)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    /// Records one problem.
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.items.push(diagnostic);
    }

    /// Records many.
    pub fn extend(&mut self, diagnostics: impl IntoIterator<Item = Diagnostic>) {
        self.items.extend(diagnostics);
    }

    /// Turns every warning into an error (`--strict`).
    pub fn promote_warnings(&mut self) {
        for d in &mut self.items {
            d.severity = Severity::Error;
        }
    }

    /// True if any error was recorded.
    pub fn has_errors(&self) -> bool {
        self.items.iter().any(Diagnostic::is_error)
    }

    /// True if anything was recorded.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Number of warnings.
    pub fn warning_count(&self) -> usize {
        self.items.iter().filter(|d| !d.is_error()).count()
    }

    /// Number of errors.
    pub fn error_count(&self) -> usize {
        self.items.iter().filter(|d| d.is_error()).count()
    }

    /// All items, sorted by file, line and column for stable output.
    pub fn sorted(&self) -> Vec<&Diagnostic> {
        let mut items: Vec<&Diagnostic> = self.items.iter().collect();
        items.sort_by_key(|d| {
            let loc = d.location.as_ref();
            (
                loc.map(|l| l.path.clone()),
                loc.map(|l| (l.line, l.col)),
                d.severity,
            )
        });
        items
    }

    /// Takes the items out.
    pub fn into_vec(self) -> Vec<Diagnostic> {
        self.items
    }
}

/// Renders diagnostics with source snippets; `sources` gives the text of files it may show.
pub fn render(diagnostics: &[&Diagnostic], sources: &dyn Fn(&Path) -> Option<String>) -> String {
    let mut out = String::new();
    for diagnostic in diagnostics {
        out.push_str(&render_one(diagnostic, sources));
    }
    out
}

fn render_one(d: &Diagnostic, sources: &dyn Fn(&Path) -> Option<String>) -> String {
    let mut files = SimpleFiles::new();
    let mut cs_diag = match d.severity {
        Severity::Error => cs::Diagnostic::error(),
        Severity::Warning => cs::Diagnostic::warning(),
    }
    .with_message(&d.message);
    let mut header = String::new();
    if let Some(loc) = &d.location {
        // The first line always names `path:line:col`, whether or not a snippet follows.
        header = format!("{loc}: ");
        if let Some(text) = sources(&loc.path) {
            let span = snippet_span(&text, loc);
            let id = files.add(loc.path.display().to_string(), text);
            let label = cs::Label::primary(id, span);
            cs_diag = cs_diag.with_label(match &d.label {
                Some(l) => label.with_message(l),
                None => label,
            });
        }
    }
    let mut notes = d.notes.clone();
    if let Some(help) = &d.help {
        notes.push(format!("help: {help}"));
    }
    cs_diag = cs_diag.with_notes(notes);
    let config = term::Config::default();
    let body =
        term::emit_into_string(&config, &files, &cs_diag).unwrap_or_else(|_| d.message.clone());
    format!("{header}{body}")
}

/// The span to underline: the recorded one, or one character at `line:col` when only the line
/// and column are known (compiler messages, panics).
fn snippet_span(text: &str, loc: &Location) -> Range<usize> {
    if !loc.span.is_empty() && loc.span.end <= text.len() {
        return loc.span.clone();
    }
    let Some(line) = text.split_inclusive('\n').nth(loc.line.saturating_sub(1)) else {
        return 0..0;
    };
    let line_start = line.as_ptr() as usize - text.as_ptr() as usize;
    let body = line.trim_end_matches(['\n', '\r']);
    let offset = body
        .char_indices()
        .nth(loc.col.saturating_sub(1))
        .map_or(body.len(), |(i, _)| i);
    let width = body[offset..].chars().next().map_or(0, char::len_utf8);
    line_start + offset..line_start + offset + width
}

/// Suggests the known names closest to `name` (for "did you mean" hints).
pub fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut scored: Vec<(f64, &str)> = known
        .into_iter()
        .map(|k| (strsim::jaro_winkler(name, k), k))
        .filter(|(score, _)| *score > 0.75)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().take(3).map(|(_, k)| k).collect()
}

/// Formats a "did you mean" help line, if there are candidates.
pub fn did_you_mean(candidates: &[&str]) -> Option<String> {
    match candidates {
        [] => None,
        [one] => Some(format!("did you mean `{one}`?")),
        many => Some(format!(
            "did you mean one of {}?",
            many.iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_line_index_gives_the_locations_a_scan_gives() {
        let source = "ab\n注意力 x\n\n\tend\nlast";
        let starts = line_starts(source);
        let path = Path::new("c.md");
        for at in 0..=source.len() + 2 {
            let span = at..at + 1;
            // What codespan, which prints the diagnostics, says of the same byte.
            use codespan_reporting::files::{Files as _, SimpleFile};
            let file = SimpleFile::new("", source);
            let start = at.min(source.len());
            let (line, col) = file
                .location((), start)
                .map_or((1, 1), |l| (l.line_number, l.column_number));
            let found = Location::in_lines(path, source, &starts, span);
            assert_eq!((found.line, found.col), (line, col), "byte {at}");
        }
    }

    use super::*;

    #[test]
    fn location_counts_lines_in_the_whole_file() {
        let src = "+++\ntitle = 1\n+++\n\n你好 $x$\n";
        let at = src.find('$').unwrap();
        let loc = Location::in_source(Path::new("c.md"), src, at..at + 3);
        assert_eq!((loc.line, loc.col), (5, 4));
        assert_eq!(loc.to_string(), "c.md:5:4");
    }

    #[test]
    fn rendering_names_the_place_and_the_fix() {
        let src = "line one\ntitel = 3\n";
        let d = Diagnostic::error("unknown key `titel`")
            .at(Location::in_source(Path::new("a.md"), src, 9..14))
            .with_help("did you mean `title`?");
        let text = render(&[&d], &|_| Some(src.to_string()));
        assert!(
            text.starts_with("a.md:2:1: error: unknown key `titel`"),
            "{text}"
        );
        assert!(text.contains("titel = 3"), "{text}");
        assert!(text.contains("help: did you mean `title`?"), "{text}");
    }

    #[test]
    fn closest_names_rank_by_similarity() {
        let known = ["entropy.dot", "entropy.scaled", "weights"];
        assert_eq!(
            closest("entropy.dto", known),
            vec!["entropy.dot", "entropy.scaled"]
        );
        assert!(closest("zzz", known).is_empty());
    }
}
