//! `verify --fix`: rewrite drifted quoted numbers and pinned outputs, and nothing else.
//!
//! Edits are byte-range replacements computed from spans the parser recorded; they are applied
//! back to front so earlier spans stay valid, and each file is replaced atomically.

use std::ops::Range;
use std::path::Path;

/// One replacement in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// Bytes to replace.
    pub span: Range<usize>,
    /// New text.
    pub text: String,
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

/// Writes `text` to `path` atomically (temp file in the same directory, then rename).
pub fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(tmp.path(), meta.permissions());
    }
    tmp.persist(path).map_err(|e| e.error)?;
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
}
