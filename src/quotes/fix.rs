//! `verify --fix`: rewrite drifted quoted numbers and pinned outputs, and nothing else.
//!
//! Edits are byte-range replacements computed from spans the parser recorded; they are applied
//! back to front so earlier spans stay valid, and each file is replaced atomically.

use std::ops::Range;
use std::path::Path;

use super::Binding;
use crate::markdown::quote::{self as syntax, QuoteSyntax};

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
