//! Fenced code blocks: experiment blocks (DESIGN §3.3), their pinned outputs (§3.4), and
//! ordinary code passed through.

use std::ops::Range;

use crate::content::Chapter;
use crate::diagnostic::{Diagnostic, Location};

/// Options after `rust,experiment`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct BlockOptions {
    /// Run, but show no code.
    pub hide: bool,
    /// Run, but show no output.
    pub no_output: bool,
    /// Per-block timeout in seconds (the site default otherwise).
    pub timeout: Option<u64>,
}

/// One source line of an experiment block.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CodeLine {
    /// The text compiled (a hidden line without its `# `).
    pub code: String,
    /// False for `# ` lines: compiled, not shown.
    pub shown: bool,
    /// 1-based line in the chapter file.
    pub line: usize,
    /// Characters removed from the start of the Markdown line (2 for `# ` lines).
    pub col_shift: usize,
}

/// The ` ```output ` block that follows an experiment: what the author saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedOutput {
    /// Its text.
    pub text: String,
    /// Byte span of the text (inside the fences) in the chapter file.
    pub text_span: Range<usize>,
    /// Byte span of the whole fenced block.
    pub span: Range<usize>,
    /// 1-based line of the first text line.
    pub line: usize,
}

/// A ` ```rust,experiment ` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Experiment {
    /// Position among the chapter's blocks (0-based).
    pub index: usize,
    /// Its options.
    pub options: BlockOptions,
    /// Its lines.
    pub lines: Vec<CodeLine>,
    /// Byte span of the whole fenced block.
    pub span: Range<usize>,
    /// 1-based line of the opening fence.
    pub line: usize,
    /// The pinned output after it, if any.
    pub pinned: Option<PinnedOutput>,
}

impl Experiment {
    /// The code a reader sees (hidden lines removed).
    pub fn shown_code(&self) -> String {
        let mut out = String::new();
        for line in self.lines.iter().filter(|l| l.shown) {
            out.push_str(&line.code);
            out.push('\n');
        }
        out
    }
}

/// How many bytes of `source` the code block text `text` covers: pulldown-cmark gives a CRLF
/// line end as `\n`, so counting `text.len()` would leave the `\r`s out of the span (and
/// `verify --fix` would write half a line end).
fn source_len(source: &str, text: &str) -> usize {
    let bytes = source.as_bytes();
    let mut at = 0;
    for &b in text.as_bytes() {
        if b == b'\n' && bytes.get(at) == Some(&b'\r') {
            at += 1;
        }
        at += 1;
    }
    at.min(source.len())
}

/// A fenced block being collected.
pub(super) struct CodeState {
    info: String,
    span: Range<usize>,
    text: String,
    text_start: Option<usize>,
}

impl CodeState {
    pub(super) fn new(info: String, span: Range<usize>) -> Self {
        CodeState {
            info,
            span,
            text: String::new(),
            text_start: None,
        }
    }

    pub(super) fn push_text(&mut self, text: &str, span: Range<usize>) {
        self.text_start.get_or_insert(span.start);
        self.text.push_str(text);
    }

    fn words(&self) -> Vec<&str> {
        self.info
            .split([',', ' ', '\t'])
            .filter(|w| !w.is_empty())
            .collect()
    }

    pub(super) fn is_experiment(&self) -> bool {
        matches!(self.words().as_slice(), ["rust", "experiment", ..])
    }

    pub(super) fn is_output(&self) -> bool {
        self.words().first() == Some(&"output")
    }

    pub(super) fn into_piece(self) -> super::Piece {
        let lang = self.words().first().map(|w| w.to_string());
        super::Piece::Code {
            lang,
            text: self.text,
        }
    }

    pub(super) fn into_pinned(self, chapter: &Chapter) -> PinnedOutput {
        // An empty block has no text event: its (empty) text starts after the opening fence line.
        let start = self.text_start.unwrap_or_else(|| {
            let fence_end = chapter.source[self.span.start..]
                .find('\n')
                .map_or(self.span.end, |i| self.span.start + i + 1);
            fence_end.min(self.span.end)
        });
        let text_span = start..start + source_len(&chapter.source[start..], &self.text);
        let line = chapter.location(start..start).line;
        PinnedOutput {
            text: self.text,
            text_span,
            span: self.span,
            line,
        }
    }

    pub(super) fn into_experiment(
        self,
        chapter: &Chapter,
        index: usize,
    ) -> Result<Experiment, Vec<Diagnostic>> {
        let fence = chapter.location(self.span.clone());
        let options = parse_options(&self.words()[2..]).map_err(|message| {
            vec![
                Diagnostic::error(message)
                    .at(Location {
                        span: self.span.start..self.span.start + self.info.len() + 3,
                        ..fence.clone()
                    })
                    .with_help(
                        "options are `hide`, `no_output` and `timeout=SECS`, separated by commas",
                    ),
            ]
        })?;
        let first_line = match self.text_start {
            Some(start) => chapter.location(start..start).line,
            None => fence.line + 1,
        };
        let lines = split_lines(&self.text, first_line);
        Ok(Experiment {
            index,
            options,
            lines,
            span: self.span,
            line: fence.line,
            pinned: None,
        })
    }
}

fn parse_options(words: &[&str]) -> Result<BlockOptions, String> {
    let mut options = BlockOptions::default();
    for word in words {
        match *word {
            "hide" => options.hide = true,
            "no_output" => options.no_output = true,
            w if w.starts_with("timeout=") => {
                let secs = &w["timeout=".len()..];
                options.timeout = Some(secs.parse().ok().filter(|s| *s > 0).ok_or(format!(
                    "`{w}`: timeout must be a positive number of seconds"
                ))?);
            }
            other => return Err(format!("unknown experiment option `{other}`")),
        }
    }
    Ok(options)
}

fn split_lines(text: &str, first_line: usize) -> Vec<CodeLine> {
    text.lines()
        .enumerate()
        .map(|(i, raw)| {
            let (code, shown, col_shift) = if let Some(rest) = raw.strip_prefix("# ") {
                (rest, false, 2)
            } else if raw == "#" {
                ("", false, 1)
            } else {
                (raw, true, 0)
            };
            CodeLine {
                code: code.to_string(),
                shown,
                line: first_line + i,
                col_shift,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pinned output's span covers its CRLF line ends (tests/verify_fix.rs
    /// fix_rewrites_byte_for_byte checks the rewrite).
    #[test]
    fn a_text_span_counts_crlf_line_ends() {
        assert_eq!(source_len("a\r\nb\r\n```\r\n", "a\nb\n"), 6);
        assert_eq!(source_len("a\nb\n```\n", "a\nb\n"), 4);
        assert_eq!(source_len("a\r\n", "a\nb\n"), 3, "never past the source");
    }

    #[test]
    fn options_parse() {
        assert_eq!(
            parse_options(&["hide", "timeout=3"]).unwrap(),
            BlockOptions {
                hide: true,
                no_output: false,
                timeout: Some(3)
            }
        );
        assert!(parse_options(&["timeout=0"]).is_err());
        assert!(
            parse_options(&["hidden"])
                .unwrap_err()
                .contains("unknown experiment option `hidden`")
        );
    }

    #[test]
    fn hidden_lines_follow_rustdoc() {
        let lines = split_lines("# let x = 1;\nlet y = x;\n#\n#[derive(Debug)]\n", 10);
        assert_eq!(
            lines[0],
            CodeLine {
                code: "let x = 1;".into(),
                shown: false,
                line: 10,
                col_shift: 2
            }
        );
        assert!(lines[1].shown);
        assert!(!lines[2].shown);
        assert!(lines[3].shown, "an attribute is not a hidden line");
    }
}
