//! Cross-references: `@fig:name`, `@tab:name`, `@eq:name` and `@ch:slug`, optionally reaching
//! into another chapter as `@fig:slug/name` (the Quarto / pandoc-crossref habit, with a colon).
//!
//! Display equations get a label by a `{#eq:name}` right after their closing `$$`; labelled
//! equations are numbered per chapter, figures and tables in the order they were recorded.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

/// What a reference points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefKind {
    /// `@fig:`
    Figure,
    /// `@tab:`
    Table,
    /// `@eq:`
    Equation,
    /// `@ch:`
    Chapter,
}

impl RefKind {
    /// The prefix an author types.
    pub fn prefix(self) -> &'static str {
        match self {
            RefKind::Figure => "fig",
            RefKind::Table => "tab",
            RefKind::Equation => "eq",
            RefKind::Chapter => "ch",
        }
    }
}

/// One `@kind:[chapter/]name` in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrossRef {
    /// Its kind.
    pub kind: RefKind,
    /// The chapter it reaches into (`None`: this chapter). For `@ch:`, the target chapter.
    pub chapter: Option<String>,
    /// The label (empty for `@ch:`).
    pub name: String,
    /// Byte span in the chapter file.
    pub span: Range<usize>,
}

static REF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"@(fig|tab|eq|ch):((?:[A-Za-z0-9_-]+/)?[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)")
        .expect("static regex")
});

static FIG_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*\{#fig:([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)\}\s*$").expect("static regex")
});

/// The label of a `{#fig:name}` written right after an image.
pub(super) fn figure_label(text: &str) -> Option<String> {
    FIG_LABEL.captures(text).map(|c| c[1].to_string())
}

static EQ_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*\{#eq:([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)\}\s*$").expect("static regex")
});

/// Splits `text` (starting at file offset `at`) into plain runs and references.
/// `escaped_start`: the text follows a backslash escape, so an `@` at its very start is literal.
pub(super) fn split(text: &str, at: usize, escaped_start: bool) -> Vec<Result<CrossRef, &str>> {
    let mut out = Vec::new();
    let mut rest = 0;
    for caps in REF.captures_iter(text) {
        let whole = caps.get(0).expect("group 0");
        if whole.start() == 0 && escaped_start {
            continue;
        }
        // `name@fig:x` is an e-mail-like word, not a reference; `如@fig:x所示` is one.
        if text[..whole.start()]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric())
        {
            continue;
        }
        let kind = match &caps[1] {
            "fig" => RefKind::Figure,
            "tab" => RefKind::Table,
            "eq" => RefKind::Equation,
            _ => RefKind::Chapter,
        };
        let target = caps[2].trim_end_matches('.');
        let end = whole.start() + 1 + caps[1].len() + 1 + target.len();
        let (chapter, name) = match (kind, target.split_once('/')) {
            (RefKind::Chapter, _) => (Some(target.to_string()), String::new()),
            (_, Some((chapter, name))) => (Some(chapter.to_string()), name.to_string()),
            (_, None) => (None, target.to_string()),
        };
        if whole.start() > rest {
            out.push(Err(&text[rest..whole.start()]));
        }
        out.push(Ok(CrossRef {
            kind,
            chapter,
            name,
            span: at + whole.start()..at + end,
        }));
        rest = end;
    }
    if rest < text.len() {
        out.push(Err(&text[rest..]));
    }
    out
}

/// The label of a `{#eq:name}` text, if that is all it is.
pub(super) fn equation_label(text: &str) -> Option<String> {
    EQ_LABEL.captures(text).map(|c| c[1].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_references_and_keeps_the_text_between() {
        let parts = split(
            "如图 @fig:align 所示，见 @eq:bahdanau/score 和 @ch:luong。",
            100,
            false,
        );
        let refs: Vec<&CrossRef> = parts.iter().filter_map(|p| p.as_ref().ok()).collect();
        assert_eq!(refs.len(), 3);
        assert_eq!(
            (
                refs[0].kind,
                refs[0].chapter.as_deref(),
                refs[0].name.as_str()
            ),
            (RefKind::Figure, None, "align")
        );
        assert_eq!(refs[1].chapter.as_deref(), Some("bahdanau"));
        assert_eq!(refs[1].name, "score");
        assert_eq!(
            (refs[2].kind, refs[2].chapter.as_deref()),
            (RefKind::Chapter, Some("luong"))
        );
        assert_eq!(
            refs[0].span,
            100 + "如图 ".len()..100 + "如图 @fig:align".len()
        );
        assert_eq!(parts[0], Err("如图 "));
    }

    #[test]
    fn a_trailing_full_stop_is_not_part_of_the_name() {
        let parts = split("See @fig:curve.", 0, false);
        assert_eq!(parts[1].as_ref().unwrap().name, "curve");
        assert_eq!(parts[2], Err("."));
    }

    #[test]
    fn chinese_text_may_touch_a_reference() {
        let parts = split("如@fig:x所示", 0, false);
        assert_eq!(parts[1].as_ref().unwrap().name, "x");
        assert_eq!(parts[2], Err("所示"));
    }

    #[test]
    fn e_mail_like_words_are_not_references() {
        assert!(split("mail me@fig:x", 0, false).iter().all(|p| p.is_err()));
    }

    #[test]
    fn an_escaped_at_sign_is_literal() {
        assert!(split("@fig:x", 0, true).iter().all(|p| p.is_err()));
        assert!(split("@fig:x", 0, false)[0].is_ok());
    }

    #[test]
    fn equation_labels() {
        assert_eq!(equation_label(" {#eq:score}").as_deref(), Some("score"));
        assert_eq!(equation_label("{#eq:score} more"), None);
    }
}
