//! Characters that XML and HTML forbid in text.
//!
//! XML 1.0 allows no C0 control character but TAB, LF and CR, and neither U+FFFE nor U+FFFF;
//! HTML makes the C0 and C1 controls and DEL parse errors in text. One of them in a title makes
//! `atom.xml` unreadable for every feed reader. They arrive as a form feed pasted from a PDF, an
//! escape sequence printed by an experiment, or a `\u000c` written in a TOML string. So:
//!
//! - [`check_source`] and [`check_value`] find them in the author's sources and warn at their
//!   `path:line:col` (`--strict` turns the warnings into failures);
//! - [`sanitize`] replaces them in everything the build writes, whatever path they took there:
//!   one pass over every page and feed, and over the text of the search index;
//! - [`strip_ansi`] removes terminal escape sequences from experiment output whole, so that
//!   `\x1b[31mred\x1b[0m` shows as `red`, not as `[31mred[0m`.

use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;

use crate::diagnostic::{Diagnostic, Location};

/// True for a character that may not appear in XML 1.0 or HTML text.
pub fn is_forbidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{B}' | '\u{C}' | '\u{E}'..='\u{1F}'
        | '\u{7F}'..='\u{9F}' | '\u{FFFE}' | '\u{FFFF}')
}

/// What a forbidden character becomes in the output. A vertical tab or form feed separates
/// words like a space does (a PDF page break), so it becomes one; anything else becomes U+FFFD,
/// which shows the reader that something was there without breaking the document.
fn replacement(c: char) -> char {
    match c {
        '\u{B}' | '\u{C}' => ' ',
        _ => char::REPLACEMENT_CHARACTER,
    }
}

/// True if UTF-8 `bytes` hold a forbidden character. Every page of every build goes through
/// this, so it looks at bytes, not `char`s, and without an early exit: a fold of `&` and `|`
/// that the compiler vectorises checks a 60 MB feed in about 10 ms, where `chars().any` takes
/// over 100 ms. It is exact: in UTF-8 a byte below 0x80 is always a character of its own, and
/// C2 and EF always lead one (U+0080..U+009F are C2 80..C2 9F; U+FFFE, U+FFFF are EF BF BE/BF).
fn has_forbidden(bytes: &[u8]) -> bool {
    let n = bytes.len();
    if n < 3 {
        return std::str::from_utf8(bytes).is_ok_and(|s| s.chars().any(is_forbidden));
    }
    let control = |x: u8| ((x < 0x20) & (x != b'\t') & (x != b'\n') & (x != b'\r')) | (x == 0x7F);
    let c1 = |x: u8, y: u8| (x == 0xC2) & (y < 0xA0);
    let body = bytes[..n - 2]
        .iter()
        .zip(&bytes[1..n - 1])
        .zip(&bytes[2..])
        .fold(false, |found, ((&x, &y), &z)| {
            found | control(x) | c1(x, y) | ((x == 0xEF) & (y == 0xBF) & (z >= 0xBE))
        });
    body | control(bytes[n - 2]) | control(bytes[n - 1]) | c1(bytes[n - 2], bytes[n - 1])
}

/// `text` with every forbidden character replaced; borrowed when there is none (the usual case).
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if !has_forbidden(text.as_bytes()) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| if is_forbidden(c) { replacement(c) } else { c })
            .collect(),
    )
}

/// [`sanitize`] on the bytes of an output file; bytes that are not UTF-8 text are left alone.
pub fn sanitize_bytes(bytes: &mut Vec<u8>) {
    if !has_forbidden(bytes) {
        return;
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    if let Cow::Owned(clean) = sanitize(text) {
        *bytes = clean.into_bytes();
    }
}

/// Program output without terminal escape sequences (colours, cursor moves, titles) and without
/// the control characters a terminal would act on instead of showing; TAB, LF and CR stay.
///
/// vte (alacritty's parser) knows every form a sequence can take (CSI, OSC, DCS, two-byte
/// escapes), which a hand-written `ESC [ ... m` matcher would not.
pub fn strip_ansi(text: &str) -> Cow<'_, str> {
    if !has_forbidden(text.as_bytes()) {
        return Cow::Borrowed(text);
    }
    let mut printer = Printer(String::with_capacity(text.len()));
    vte::Parser::new().advance(&mut printer, text.as_bytes());
    Cow::Owned(printer.0)
}

/// Keeps what a terminal would print.
struct Printer(String);

impl vte::Perform for Printer {
    fn print(&mut self, c: char) {
        self.0.push(c);
    }

    fn execute(&mut self, byte: u8) {
        if matches!(byte, b'\t' | b'\n' | b'\r') {
            self.0.push(char::from(byte));
        }
    }
}

/// One warning per run of forbidden characters in `source[range]`, at its `path:line:col`.
pub fn check_source(path: &Path, source: &str, range: Range<usize>) -> Vec<Diagnostic> {
    let Some(text) = source
        .get(range.clone())
        .filter(|t| has_forbidden(t.as_bytes()))
    else {
        return Vec::new();
    };
    let mut warnings = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if !is_forbidden(c) {
            continue;
        }
        let mut end = at + c.len_utf8();
        while let Some(&(next, d)) = chars.peek().filter(|(_, d)| is_forbidden(*d)) {
            end = next + d.len_utf8();
            chars.next();
        }
        let span = range.start + at..range.start + end;
        warnings.push(
            Diagnostic::warning(format!(
                "{} in the text: XML and HTML do not allow it",
                describe(c)
            ))
            .at(Location::in_source(path, source, span))
            .with_help(HELP),
        );
    }
    warnings
}

/// A warning if `value` (a string after TOML unescaping) holds a forbidden character; it points
/// at `key_span`, the line of its key in `source`.
pub fn check_value(
    path: &Path,
    source: &str,
    key_span: Range<usize>,
    key: &str,
    value: &str,
) -> Option<Diagnostic> {
    let c = value.chars().find(|&c| is_forbidden(c))?;
    Some(
        Diagnostic::warning(format!(
            "`{key}` holds {}: XML and HTML do not allow it",
            describe(c)
        ))
        .at(Location::in_source(path, source, key_span))
        .with_help("remove the escape (`\\u000c`, `\\b`, `\\f`, ...) from the string; the build writes a replacement character in its place"),
    )
}

const HELP: &str = "delete it (text pasted from a PDF or a terminal often carries one); the build writes a space or a replacement character in its place";

/// `control character U+000C (form feed)`.
fn describe(c: char) -> String {
    let name = match c {
        '\u{0}' => " (NUL)",
        '\u{7}' => " (bell)",
        '\u{8}' => " (backspace)",
        '\u{B}' => " (vertical tab)",
        '\u{C}' => " (form feed)",
        '\u{1B}' => " (escape)",
        '\u{7F}' => " (delete)",
        _ => "",
    };
    let kind = if matches!(c, '\u{FFFE}' | '\u{FFFF}') {
        "non-character"
    } else {
        "control character"
    };
    format!("{kind} U+{:04X}{name}", u32::from(c))
}

/// Turns heading text into an anchor id, keeping CJK and other letters (like mdBook's
/// `normalize_id`): lowercase, alphanumerics kept, runs of anything else become one `-`.
pub fn slugify(text: &str) -> String {
    let mut out = String::new();
    let mut dash = false;
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() || c == '_' {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c);
        } else {
            dash = true;
        }
    }
    if out.is_empty() {
        "section".to_string()
    } else {
        out
    }
}

/// Characters written without spaces between them: CJK ideographs and punctuation, kana,
/// full-width forms. Hangul is left out: Korean puts spaces between words. (`search.js` has
/// the same ranges.)
pub fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{2E80}'..='\u{9FFF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{FE30}'..='\u{FE4F}'
        | '\u{FF00}'..='\u{FFEF}'
        | '\u{20000}'..='\u{3FFFF}')
}

/// The first digit in `text` that is not an ASCII digit (full-width `０`, Arabic-Indic `٣`;
/// superscripts, which write exponents, excepted), with the message every rule that reads
/// numbers gives for it: the number parsers read ASCII digits only.
pub fn non_ascii_digit(text: &str) -> Option<(usize, String)> {
    let (at, c) = text
        .char_indices()
        .find(|&(_, c)| c.is_numeric() && !c.is_ascii_digit() && !"⁰¹²³⁴⁵⁶⁷⁸⁹".contains(c))?;
    Some((
        at,
        format!("`{c}` is not an ASCII digit: write ASCII digits"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_xml_forbids_is_replaced() {
        let all: String = (0u32..0x100)
            .chain([0xFFFD, 0xFFFE, 0xFFFF, 0x1F600])
            .filter_map(char::from_u32)
            .collect();
        assert!(has_forbidden(all.as_bytes()));
        for c in (0u32..0x11_0000).filter_map(char::from_u32) {
            let mut buf = [0; 4];
            let encoded = c.encode_utf8(&mut buf).as_bytes();
            assert_eq!(has_forbidden(encoded), is_forbidden(c), "{c:?}");
            let framed = format!("ab{c}cd");
            assert_eq!(has_forbidden(framed.as_bytes()), is_forbidden(c), "{c:?}");
        }
        let clean = sanitize(&all);
        assert!(!clean.chars().any(is_forbidden));
        for kept in ['\t', '\n', '\r', ' ', 'a', '\u{A0}', 'é', '\u{FFFD}', '😀'] {
            assert!(clean.contains(kept), "{kept:?} was lost");
        }
        assert_eq!(sanitize("a\u{c}b\u{1}c"), "a b\u{FFFD}c");
        assert!(matches!(sanitize("注意力\tok\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn escape_sequences_are_removed_whole() {
        assert_eq!(strip_ansi("\x1b[31mred\x1b[0m\n"), "red\n");
        assert_eq!(
            strip_ansi("\x1b[1;38;5;208mbold\x1b[m\tx\r\n"),
            "bold\tx\r\n"
        );
        assert_eq!(strip_ansi("\x1b]0;title\x07text\x07"), "text");
        assert_eq!(strip_ansi("权重 [0.1, 0.9]"), "权重 [0.1, 0.9]");
    }

    #[test]
    fn each_run_is_reported_at_its_line_and_column() {
        let source = "+++\n+++\nab\u{c}\u{c}c\n\nx\u{1b}y\n";
        let warnings = check_source(Path::new("c.md"), source, 8..source.len());
        let at: Vec<(usize, usize)> = warnings
            .iter()
            .map(|d| d.location.as_ref().map_or((0, 0), |l| (l.line, l.col)))
            .collect();
        assert_eq!(at, [(3, 3), (5, 2)]);
        assert!(warnings[0].message.contains("U+000C (form feed)"));
        assert!(warnings.iter().all(|d| !d.is_error()));
    }

    #[test]
    fn a_value_is_reported_at_its_key() {
        let source = "title = \"a\\u000cb\"\n";
        let d = check_value(Path::new("s.toml"), source, 0..5, "title", "a\u{c}b");
        let d = d.expect("a warning");
        assert_eq!(d.location.map(|l| l.line), Some(1));
        assert!(d.message.contains("`title`"), "{}", d.message);
        assert!(check_value(Path::new("s.toml"), source, 0..5, "title", "ab").is_none());
    }
}
