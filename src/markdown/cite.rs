//! Citations: `[@bahdanau2015]` or `[@sutskever2014; @cho2014]` (the pandoc habit), keys into
//! the site's bibliography. Like quotes, they are found on the source before inline parsing (a
//! `[...]` without a link definition would otherwise be split up) and masked for the parser.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

/// One `[@key; @key]` in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Citation {
    /// The cited keys, in order.
    pub keys: Vec<String>,
    /// Byte span of the whole citation in the chapter file.
    pub span: Range<usize>,
}

static CITATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[@[A-Za-z0-9_:\-]+(?:\s*;\s*@[A-Za-z0-9_:\-]+)*\]").expect("static regex")
});

/// Finds citations in `text` (file offset `base`), outside the `excluded` ranges.
pub(super) fn scan(text: &str, base: usize, excluded: &[Range<usize>]) -> Vec<Citation> {
    CITATION
        .find_iter(text)
        .map(|m| (m, base + m.start()..base + m.end()))
        .filter(|(_, span)| {
            !excluded
                .iter()
                .any(|e| e.start < span.end && span.start < e.end)
        })
        // `[@fig:x]` is a cross-reference in brackets, not a citation.
        .filter(|(m, _)| {
            !["[@fig:", "[@tab:", "[@eq:", "[@ch:"]
                .iter()
                .any(|p| m.as_str().starts_with(p))
        })
        .map(|(m, span)| Citation {
            keys: m.as_str()[1..m.as_str().len() - 1]
                .split(';')
                .map(|k| k.trim().trim_start_matches('@').to_string())
                .collect(),
            span,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_single_and_multiple_keys() {
        let found = scan(
            "见 [@bahdanau2015] 与 [@sutskever2014; @cho2014]。",
            10,
            &[],
        );
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].keys, ["bahdanau2015"]);
        assert_eq!(found[1].keys, ["sutskever2014", "cho2014"]);
        assert_eq!(found[0].span.start, 10 + "见 ".len());
    }

    #[test]
    fn skips_code_and_cross_references() {
        let code = [Range { start: 0, end: 6 }];
        assert!(scan("`[@x]`", 0, &code).is_empty());
        assert!(scan("[@fig:x]", 0, &[]).is_empty());
        assert!(scan("[text](@x)", 0, &[]).is_empty());
    }
}
