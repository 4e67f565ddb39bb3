//! Text width estimates for laying out labels and legends.
//!
//! plotters' svg-only build estimates 0.7 em per UTF-8 byte, which makes a Chinese character
//! (3 bytes, about 1 em wide) 2.1 em. The charts size their label areas and legends with this
//! per-character estimate instead and never ask plotters for a text size.

/// Estimated width in pixels of `text` set at `px` pixels in a sans-serif font.
pub(crate) fn width(text: &str, px: f64) -> f64 {
    text.chars().map(char_em).sum::<f64>() * px
}

/// Approximate advance of one character in em: average sans-serif metrics, rounded up so
/// labels rather get a little too much room than overlap.
fn char_em(c: char) -> f64 {
    match c {
        _ if is_wide(c) => 1.0,
        ' ' | 'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' | '(' | ')' => 0.32,
        'm' | 'w' | 'M' | 'W' => 0.85,
        _ if c.is_ascii_uppercase() || c.is_ascii_digit() => 0.62,
        _ => 0.56,
    }
}

/// CJK ideographs, kana, hangul and full-width forms: one em each.
pub(crate) fn is_wide(c: char) -> bool {
    matches!(u32::from(c),
        0x1100..=0x115F
        | 0x2E80..=0x303E
        | 0x3041..=0x33FF
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xA000..=0xA4CF
        | 0xAC00..=0xD7A3
        | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F
        | 0xFF00..=0xFF60
        | 0xFFE0..=0xFFE6
        | 0x20000..=0x3FFFD)
}

/// Widest of several labels.
pub(crate) fn max_width<'a>(labels: impl IntoIterator<Item = &'a str>, px: f64) -> f64 {
    labels.into_iter().map(|l| width(l, px)).fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chinese_is_one_em_per_character_not_per_byte() {
        assert_eq!(width("注意力", 10.0), 30.0);
        assert!((width("（key）", 10.0) - (20.0 + width("key", 10.0))).abs() < 1e-9);
        assert!(width("softmax", 10.0) < 7.0 * 10.0 * 0.7);
    }

    #[test]
    fn max_width_of_no_labels_is_zero() {
        assert_eq!(max_width([], 13.0), 0.0);
        assert_eq!(max_width(["a", "注意"], 10.0), 20.0);
    }
}
