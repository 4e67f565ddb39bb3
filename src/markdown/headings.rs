//! Heading anchors: stable ids for the table of contents and links.

use std::ops::Range;

use pulldown_cmark::HeadingLevel;

/// A heading of a chapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    /// 1..=6.
    pub level: u8,
    /// Anchor id (explicit `{#id}` or derived from the text).
    pub id: String,
    /// Classes from a `{.class}` attribute block.
    pub classes: Vec<String>,
    /// Other attributes from the attribute block (`{data-x=1 hidden}`), in order.
    pub attrs: Vec<(String, Option<String>)>,
    /// Plain text.
    pub text: String,
    /// Byte span in the chapter file.
    pub span: Range<usize>,
    /// The heading's content as HTML, math rendered (filled by the render stage, for the TOC).
    pub html: String,
}

/// `base`, or `base-1`, `base-2`, ... if taken.
pub(super) fn unique_id(base: &str, taken: &[&str]) -> String {
    if !taken.contains(&base) {
        return base.to_string();
    }
    (1..)
        .map(|n| format!("{base}-{n}"))
        .find(|id| !taken.contains(&id.as_str()))
        .unwrap_or_default()
}

pub(super) fn level_number(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::slugify;

    #[test]
    fn slugs_keep_chinese_and_collapse_punctuation() {
        assert_eq!(slugify("为什么需要注意力？"), "为什么需要注意力");
        assert_eq!(
            slugify("Scaled Dot-Product (QK^T)"),
            "scaled-dot-product-qk-t"
        );
        assert_eq!(slugify("  "), "section");
    }

    #[test]
    fn ids_are_made_unique() {
        assert_eq!(unique_id("a", &["a", "a-1"]), "a-2");
        assert_eq!(unique_id("b", &["a"]), "b");
    }
}
