//! Formatting helpers for the tables and prose of experiment blocks, and the number formatting
//! the charts share.
//!
//! Several chapters print parameter counts and operation counts in tables; these helpers keep
//! that formatting out of the experiment's code. The charts' tooltips and the SVG clean-up
//! both trim numbers with [`trim_number`]; it lives here, below both, rather than in either.

use std::fmt::Display;

/// An integer with its digits grouped in threes by commas, as the series prints counts:
/// `group_thousands(1234567)` is `"1,234,567"`, `group_thousands(-4200)` is `"-4,200"`.
///
/// Any integer type works (it is formatted with `Display` first). A value whose `Display` is
/// not an optional `-` followed by ASCII digits (a float, `NaN`) is returned as it prints,
/// ungrouped.
///
/// ```
/// use lab::prelude::*;
/// assert_eq!(group_thousands(2_001_000usize), "2,001,000");
/// assert_eq!(group_thousands(999u64), "999");
/// ```
pub fn group_thousands(n: impl Display) -> String {
    let s = n.to_string();
    let (sign, digits) = match s.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", s.as_str()),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return s;
    }
    let mut out = String::with_capacity(s.len() + digits.len() / 3);
    out.push_str(sign);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `x` with at most `decimals` decimals and no trailing zeros.
pub(crate) fn trim_number(x: f64, decimals: usize) -> String {
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::{group_thousands, trim_number};

    #[test]
    fn groups_digits_in_threes() {
        assert_eq!(group_thousands(0u8), "0");
        assert_eq!(group_thousands(12usize), "12");
        assert_eq!(group_thousands(999u32), "999");
        assert_eq!(group_thousands(1000u64), "1,000");
        assert_eq!(group_thousands(65_536usize), "65,536");
        assert_eq!(group_thousands(1_234_567u64), "1,234,567");
        assert_eq!(group_thousands(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn keeps_the_sign_and_leaves_non_integers_alone() {
        assert_eq!(group_thousands(-4200i64), "-4,200");
        assert_eq!(group_thousands(-7i32), "-7");
        assert_eq!(group_thousands(1234.5f64), "1234.5");
        assert_eq!(group_thousands(f64::NAN), "NaN");
    }

    #[test]
    fn trimmed_numbers_lose_trailing_zeros_only_after_the_point() {
        assert_eq!(trim_number(12.999_999_999_999_998, 1), "13");
        assert_eq!(trim_number(0.250, 3), "0.25");
        assert_eq!(trim_number(100.0, 0), "100");
        assert_eq!(trim_number(1500.0, 2), "1500");
    }
}
