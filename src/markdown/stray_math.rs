//! Formulas the Markdown parser refused: `$`/`$$` left in the text after parsing.
//!
//! pulldown-cmark turns `$...$` into math only when it accepts it (braces balanced, no space
//! just inside the dollars, no blank line in `$$...$$`); anything else reaches the reader as
//! literal dollars. What counts as a refused formula, among the dollars still in a block's text:
//! - every `$$` (no one writes two dollars in prose);
//! - a `$` followed by something other than a space or digit, paired with a later `$` that
//!   follows something other than a space: `$\frac{a}{$`. Prices (`costs $5 and $6`), a lone
//!   `$HOME`, and escaped `\$` are left alone.

use std::ops::Range;

use crate::content::Chapter;
use crate::diagnostic::Diagnostic;

/// A formula left as literal dollars.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stray {
    /// From its opening dollar to the end of its closing one (or of the opener, if none).
    pub(super) span: Range<usize>,
    /// `$$` rather than `$`.
    pub(super) display: bool,
}

impl Stray {
    /// The warning an author sees (an error under `--strict`, like a KaTeX error).
    pub(super) fn diagnostic(&self, chapter: &Chapter) -> Diagnostic {
        let (what, help) = if self.display {
            (
                "`$$...$$` is not parsed as display math and shows as literal dollars",
                "check that the braces are balanced and the formula has no blank line; write `\\$\\$` for literal dollar signs",
            )
        } else {
            (
                "`$...$` is not parsed as math and shows as literal dollars",
                "check that the braces are balanced and that no space follows the opening `$` or precedes the closing one; write `\\$` for a literal dollar sign",
            )
        };
        Diagnostic::warning(what)
            .at(chapter.location(self.span.clone()))
            .with_help(help)
    }
}

/// The refused formulas among unescaped dollars at file offsets `dollars` (one block's text, in
/// order) of `source`.
pub(super) fn find(source: &str, dollars: &[usize]) -> Vec<Stray> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < dollars.len() {
        let open = dollars[i];
        if is_double(dollars, i) {
            let close = (i + 2..dollars.len()).find(|&j| is_double(dollars, j));
            let end = close.map_or(open + 2, |j| dollars[j] + 2);
            found.push(Stray {
                span: open..end,
                display: true,
            });
            i = close.map_or(i + 2, |j| j + 2);
            continue;
        }
        let opens = source[open + 1..]
            .chars()
            .next()
            .is_some_and(|c| !c.is_whitespace() && !c.is_ascii_digit() && c != '$');
        let close = (i + 1..dollars.len())
            .find(|&j| !is_double(dollars, j) && after_non_space(source, dollars[j]))
            .filter(|_| opens);
        match close {
            Some(j) => {
                found.push(Stray {
                    span: open..dollars[j] + 1,
                    display: false,
                });
                i = j + 1;
            }
            None => i += 1,
        }
    }
    found
}

fn is_double(dollars: &[usize], i: usize) -> bool {
    dollars.get(i + 1) == Some(&(dollars[i] + 1))
}

fn after_non_space(source: &str, at: usize) -> bool {
    source[..at]
        .chars()
        .next_back()
        .is_some_and(|c| !c.is_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strays(text: &str) -> Vec<(&str, bool)> {
        let dollars: Vec<usize> = text.match_indices('$').map(|(i, _)| i).collect();
        find(text, &dollars)
            .into_iter()
            .map(|s| (&text[s.span], s.display))
            .collect()
    }

    #[test]
    fn refused_formulas_are_found() {
        assert_eq!(strays("$$\\frac{a}{$$"), [("$$\\frac{a}{$$", true)]);
        assert_eq!(strays("x $\\frac{a}{$ y"), [("$\\frac{a}{$", false)]);
        assert_eq!(strays("a $$ b"), [("$$", true)]);
    }

    #[test]
    fn prices_and_shell_variables_are_not_formulas() {
        assert!(strays("costs $5 and $6").is_empty());
        assert!(strays("set $HOME first").is_empty());
        assert!(strays("from $HOME to $ 5").is_empty());
    }
}
