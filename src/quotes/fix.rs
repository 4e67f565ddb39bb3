//! `verify --fix`: rewrite drifted quoted numbers and pinned outputs, and nothing else.
//!
//! Edits are byte-range replacements computed from spans the parser recorded; they are applied
//! back to front so earlier spans stay valid, and each file is replaced atomically.

use std::ops::Range;
use std::path::Path;

use super::Binding;
use crate::content::Chapter;
use crate::diagnostic::Diagnostic;
use crate::markdown::quote::{self as syntax, QuoteSyntax};
use crate::markdown::{Doc, PinnedOutput};

/// One replacement in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// Bytes to replace.
    pub span: Range<usize>,
    /// New text.
    pub text: String,
}

/// The edit `--fix` makes for a drifted quote (or the stale number of a bound or band): its
/// number becomes the rerun formatted like it; a bound's or band's rule is outside the span
/// and never touched. `None` for a rerun that is not a finite number, or whose rounding is not
/// (`f64::MAX` written `1.8e308`): either would make the quote unreadable, so `verify` reports
/// it instead.
pub fn quote_edit(quote: &QuoteSyntax, binding: &Binding) -> Option<Edit> {
    let readable = syntax::parse_number(&binding.formatted, 0)
        .value
        .is_finite();
    if !binding.rerun.is_some_and(f64::is_finite) || !readable {
        return None;
    }
    Some(Edit {
        span: quote.number.span.clone(),
        text: binding.formatted.clone(),
    })
}

/// The edit `--fix` makes for a pinned output that drifted: the lines inside the fences become
/// the rerun's, each written with the block's container prefix (`> ` in a blockquote, the
/// indentation in a list item; a blank line without trailing spaces) and the file's line end,
/// the last line ended too so the closing fence stays on a line of its own.
pub fn output_edit(pinned: &PinnedOutput, fresh: &str, crlf: bool) -> Edit {
    let eol = if crlf { "\r\n" } else { "\n" };
    let mut text = String::new();
    for line in fresh.lines() {
        if line.is_empty() {
            text.push_str(pinned.prefix.trim_end());
        } else {
            text.push_str(&pinned.prefix);
            text.push_str(line);
        }
        text.push_str(eol);
    }
    Edit {
        span: pinned.text_span.clone(),
        text,
    }
}

/// What a pinned output reads as once [`output_edit`] wrote `fresh` into it.
pub fn output_as_written(fresh: &str) -> String {
    fresh.lines().map(|l| format!("{l}\n")).collect()
}

/// A chapter rewritten by `--fix`, checked by parsing it again.
#[derive(Debug)]
pub struct Checked {
    /// The text to write.
    pub text: String,
    /// What was done besides the edits, for the report.
    pub notes: Vec<String>,
}

/// Checks that `text`, the chapter `old` (parsed as `doc`) with `--fix`'s edits applied, reads
/// as intended when parsed again: the same experiment blocks, quotes and headings; the pinned
/// output of block `i` reading `outputs[i]` where given and as before elsewhere. A heading whose
/// anchor the edits changed (a quoted number in its text) is given its old id explicitly
/// (`{#old-id}`), so links to it keep working. Anything else is refused with an error at its
/// place: the file is then not written, which is never worse than a corrupted one.
pub fn check_rewrite(
    old: &Chapter,
    doc: &Doc,
    mut text: String,
    outputs: &[(usize, String)],
) -> Result<Checked, Vec<Diagnostic>> {
    let mut notes = Vec::new();
    for round in 0..2 {
        let new_doc = reparse(old, &text)?;
        check_blocks(old, doc, &new_doc, outputs)?;
        let moved: Vec<usize> = (0..doc.headings.len())
            .filter(|&i| doc.headings[i].id != new_doc.headings[i].id)
            .collect();
        if moved.is_empty() {
            return Ok(Checked { text, notes });
        }
        if round == 1 {
            return Err(moved
                .iter()
                .map(|&i| moved_anchor(old, doc, &new_doc, i))
                .collect());
        }
        let edits: Vec<Edit> = moved
            .iter()
            .map(|&i| {
                let new_heading = &new_doc.headings[i];
                let heading = &doc.headings[i];
                notes.push(format!(
                    "{}: the heading's anchor stays #{}: --fix gave it that id explicitly, as \
                     its text changed",
                    old.location(heading.span.clone()),
                    heading.id
                ));
                id_edit(&text, new_heading, &heading.id)
            })
            .collect();
        text = apply(&text, &edits);
    }
    Ok(Checked { text, notes })
}

fn reparse(old: &Chapter, text: &str) -> Result<Doc, Vec<Diagnostic>> {
    let refused = |what: &str| {
        vec![
            Diagnostic::error(format!(
                "--fix would break {}: {what}; the file was not rewritten",
                old.path.display()
            ))
            .with_help("fix the drifted places by hand, then run `attnbook verify` again"),
        ]
    };
    let chapter = Chapter::parse(&old.path, text.to_string())
        .map_err(|_| refused("its front matter would no longer parse"))?;
    Ok(crate::markdown::parse(&chapter).0)
}

/// The blocks, quotes and headings are the ones there were, each pinned output as intended.
fn check_blocks(
    old: &Chapter,
    doc: &Doc,
    new_doc: &Doc,
    outputs: &[(usize, String)],
) -> Result<(), Vec<Diagnostic>> {
    // A heading keeps its level, classes and attributes: only its text (and, when the edits
    // moved its anchor, its id) may change.
    let same_headings = doc.headings.len() == new_doc.headings.len()
        && doc
            .headings
            .iter()
            .zip(&new_doc.headings)
            .all(|(a, b)| (a.level, &a.classes, &a.attrs) == (b.level, &b.classes, &b.attrs));
    let same_shape = doc.experiments.len() == new_doc.experiments.len()
        && doc.quotes.len() == new_doc.quotes.len()
        && same_headings;
    let mut problems = Vec::new();
    for (exp, new_exp) in doc.experiments.iter().zip(&new_doc.experiments) {
        let Some(pinned) = &exp.pinned else { continue };
        let expected = outputs
            .iter()
            .find(|(i, _)| *i == exp.index)
            .map_or(pinned.text.as_str(), |(_, text)| text.as_str());
        if new_exp.pinned.as_ref().map(|p| p.text.as_str()) != Some(expected) {
            problems.push(
                Diagnostic::error(
                    "--fix cannot rewrite this pinned output in place: written back, it would \
                     not read as the rerun (its container's line prefixes are not ones --fix \
                     can repeat); the file was not rewritten",
                )
                .at(old.location(pinned.text_span.clone()))
                .with_help(
                    "paste the rerun output into the block by hand, or move the block out of \
                     its blockquote or list item",
                ),
            );
        }
    }
    if !same_shape && problems.is_empty() {
        problems.push(
            Diagnostic::error(format!(
                "--fix would change the structure of {} (its experiment blocks, quotes or \
                 headings); the file was not rewritten",
                old.path.display()
            ))
            .with_help("fix the drifted places by hand, then run `attnbook verify` again"),
        );
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// The edit that gives `heading` the explicit id `id`. An attribute block stands at the end of
/// the heading's text: its only line for an ATX heading (`## Title`), the line before the
/// underline for a setext one (`Title` / `---`), which may be the second of two. A heading that
/// has an attribute block already (`{.note data-x=1}`) gets the id inside it, since a second
/// block would turn the first into text and drop its classes; otherwise a block `{#id}` is
/// appended, before trailing blanks.
fn id_edit(text: &str, heading: &crate::markdown::Heading, id: &str) -> Edit {
    let span = heading.span.start.min(text.len())..heading.span.end.min(text.len());
    let lines: Vec<(usize, &str)> = text[span.clone()]
        .trim_end_matches(['\n', '\r'])
        .split('\n')
        .scan(span.start, |at, line| {
            let start = *at;
            *at += line.len() + 1;
            Some((start, line.trim_end_matches('\r')))
        })
        .collect();
    let (start, line) = match lines.as_slice() {
        [only] => *only,
        [.., text_line, _underline] => *text_line,
        [] => (span.start, ""),
    };
    let trimmed = line.trim_end();
    let has_block = !(heading.classes.is_empty() && heading.attrs.is_empty());
    if has_block
        && trimmed.ends_with('}')
        && let Some(open) = trimmed.rfind('{')
    {
        let at = start + open + 1;
        return Edit {
            span: at..at,
            text: format!("#{id} "),
        };
    }
    let at = start + trimmed.len();
    Edit {
        span: at..at,
        text: format!(" {{#{id}}}"),
    }
}

fn moved_anchor(old: &Chapter, doc: &Doc, new_doc: &Doc, i: usize) -> Diagnostic {
    Diagnostic::error(format!(
        "--fix would move this heading's anchor from #{} to #{}, and links to it would break; \
         the file was not rewritten",
        doc.headings[i].id, new_doc.headings[i].id
    ))
    .at(old.location(doc.headings[i].span.clone()))
    .with_help(format!(
        "give the heading an explicit id (`{{#{}}}` at the end of its line), then run \
         `attnbook verify --fix` again",
        doc.headings[i].id
    ))
}

/// Applies non-overlapping edits to `source`.
pub fn apply(source: &str, edits: &[Edit]) -> String {
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| std::cmp::Reverse(e.span.start));
    let mut out = source.to_string();
    for edit in sorted {
        out.replace_range(edit.span.clone(), &edit.text);
    }
    out
}

/// Why a chapter was not rewritten.
#[derive(Debug)]
pub enum WriteError {
    /// The file no longer holds the bytes the run started from: someone edited it meanwhile.
    Changed,
    /// Resolving, reading, writing or renaming failed.
    Io(std::io::Error),
}

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> Self {
        WriteError::Io(e)
    }
}

/// Replaces the file at `path` with `text`, unless it no longer holds `expected`.
///
/// A symbolic link is followed: its target is replaced and the link stays a link. The new text
/// goes to a temporary file next to the target (with the target's permissions) and is renamed
/// over it, so a reader never sees half a file. The file is compared with `expected` after the
/// temporary file is written, just before the rename, to keep the window for a lost edit as
/// short as the file system allows.
pub fn replace_if_unchanged(path: &Path, expected: &str, text: &str) -> Result<(), WriteError> {
    let target = std::fs::canonicalize(path)?;
    let dir = target.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    std::fs::set_permissions(tmp.path(), std::fs::metadata(&target)?.permissions())?;
    if std::fs::read(&target)? != expected.as_bytes() {
        // Dropping `tmp` deletes it: nothing is written.
        return Err(WriteError::Changed);
    }
    tmp.persist(&target).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_touch_only_their_bytes() {
        let src = "a [0.08]{=x} b [1.5]{=y} c";
        let edits = [
            Edit {
                span: 3..7,
                text: "0.13".into(),
            },
            Edit {
                span: 16..19,
                text: "12.25".into(),
            },
        ];
        assert_eq!(apply(src, &edits), "a [0.13]{=x} b [12.25]{=y} c");
    }

    /// Edits replace their bytes only: a BOM, CRLF line ends and multi-byte text around them
    /// stay, and two edits on one line (given in any order) both land.
    #[test]
    fn edits_keep_every_other_byte() {
        let src = "\u{feff}+++\r\n[0.08]{=x}，[−1.5]{=y}\r\n";
        let x = src.find("0.08").unwrap();
        let y = src.find("−1.5").unwrap();
        let edits = [
            Edit {
                span: y..y + "−1.5".len(),
                text: "−2.0".into(),
            },
            Edit {
                span: x..x + 4,
                text: "1,234.5".into(),
            },
        ];
        assert_eq!(
            apply(src, &edits),
            "\u{feff}+++\r\n[1,234.5]{=x}，[−2.0]{=y}\r\n"
        );
    }

    fn quote(text: &str) -> QuoteSyntax {
        syntax::scan(text, 0, &[]).0.remove(0)
    }

    /// Found by tests/no_panic.rs: `f64::MAX` to one decimal of a mantissa is `1.8e308`, which
    /// no longer reads as a number; `--fix` must not write it.
    #[test]
    fn a_rerun_whose_rounding_overflows_is_not_written() {
        let q = quote("[1.5e-3]{=x}");
        assert_eq!(quote_edit(&q, &super::super::bind_one(&q, f64::MAX)), None);
        let edit = quote_edit(&q, &super::super::bind_one(&q, 2.04e-3)).unwrap();
        assert_eq!((edit.span, edit.text.as_str()), (1..7, "2.0e-3"));
        // A bound's number is refreshed like any other (its rule is outside the span), and
        // the same overflow guard holds for it.
        let bound = quote("[1]{=x >=0.5}");
        let edit = quote_edit(&bound, &super::super::bind_one(&bound, 0.1)).unwrap();
        assert_eq!((edit.span, edit.text.as_str()), (1..2, "0"));
        let bound = quote("[1.5e-3]{=x <=1}");
        assert_eq!(
            quote_edit(&bound, &super::super::bind_one(&bound, f64::MAX)),
            None
        );
    }

    fn chapter(source: &str) -> (Chapter, Doc) {
        let chapter = Chapter::parse(Path::new("content/01-t.md"), source.to_string()).unwrap();
        let doc = crate::markdown::parse(&chapter).0;
        (chapter, doc)
    }

    /// The safety net of `--fix`: a rewrite that would not read back as intended (here an
    /// output whose lines lost their `> `, as D2 of redteam-3 had it) is refused at the block.
    #[test]
    fn a_rewrite_that_does_not_read_back_is_refused() {
        let source = "+++\ntitle = \"T\"\nnumber = 1\n+++\n> ```rust,experiment\n> \
                      println!(\"a\\nb\");\n> ```\n>\n> ```output\n> x\n> ```\n";
        let (old, doc) = chapter(source);
        let pinned = doc.experiments[0].pinned.clone().unwrap();
        assert_eq!(pinned.prefix, "> ");
        let broken = Edit {
            span: pinned.text_span.clone(),
            text: "a\nb\n".into(),
        };
        let outputs = [(0, output_as_written("a\nb"))];
        let errors = check_rewrite(&old, &doc, apply(source, &[broken]), &outputs).unwrap_err();
        assert!(
            errors[0]
                .message
                .contains("cannot rewrite this pinned output in place")
                || errors[0].message.contains("structure"),
            "{errors:?}"
        );
        let good = output_edit(&pinned, "a\nb", false);
        assert_eq!(good.text, "> a\n> b\n");
        let checked = check_rewrite(&old, &doc, apply(source, &[good]), &outputs).unwrap();
        assert!(checked.text.ends_with("> ```output\n> a\n> b\n> ```\n"));
    }

    /// Redteam-3 D18, the class: the id `--fix` gives a heading whose anchor moved goes where
    /// the heading's attribute block stands: into the block it has (a second block would turn
    /// `{.note}` into text and drop the class), after the second line of a two-line setext
    /// heading, inside a blockquote. The result reads back with the old ids and classes.
    #[test]
    fn a_moved_anchor_is_kept_in_the_headings_own_attribute_block() {
        let source = "+++\ntitle = \"T\"\nnumber = 1\n+++\n\
                      ## Classed [0.99]{=a} {.note data-x=1}\n\n\
                      Alpha [0.99]{=a}\nbeta\n----\n\n\
                      > Quoted [0.99]{=a}\n> ===\n\n\
                      ## Closed [0.99]{=a} ##\n\n\
                      ```rust,experiment\nlab.value(\"a\", 0.13);\n```\n";
        let (old, doc) = chapter(source);
        let ids: Vec<&str> = doc.headings.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids.len(), 4, "{ids:?}");
        let edited = source.replace("[0.99]", "[0.13]");
        let checked = check_rewrite(&old, &doc, edited, &[]).unwrap();
        assert!(
            checked
                .text
                .contains("## Classed [0.13]{=a} {#classed-0-99 .note data-x=1}\n"),
            "{}",
            checked.text
        );
        assert!(
            checked
                .text
                .contains(&format!("Alpha [0.13]{{=a}}\nbeta {{#{}}}\n----\n", ids[1])),
            "{}",
            checked.text
        );
        assert!(
            checked
                .text
                .contains("> Quoted [0.13]{=a} {#quoted-0-99}\n> ===\n"),
            "{}",
            checked.text
        );
        assert!(
            checked
                .text
                .contains("## Closed [0.13]{=a} ## {#closed-0-99}\n"),
            "{}",
            checked.text
        );
        assert_eq!(checked.notes.len(), 4, "{:?}", checked.notes);
        let (_, again) = chapter(&checked.text);
        assert_eq!(again.headings[0].classes, ["note"]);
        assert_eq!(
            again.headings[0].attrs,
            [("data-x".to_string(), Some("1".to_string()))]
        );
    }

    #[cfg(unix)]
    #[test]
    fn an_unchanged_file_is_replaced_with_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.md");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        replace_if_unchanged(&path, "old", "new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
    }

    #[test]
    fn a_changed_file_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.md");
        std::fs::write(&path, "edited").unwrap();
        let result = replace_if_unchanged(&path, "old", "new");
        assert!(matches!(result, Err(WriteError::Changed)), "{result:?}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "edited");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_written_through_and_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        let target = dir.path().join("real/a.md");
        let link = dir.path().join("a.md");
        std::fs::write(&target, "old").unwrap();
        std::os::unix::fs::symlink("real/a.md", &link).unwrap();
        replace_if_unchanged(&link, "old", "new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    }
}
