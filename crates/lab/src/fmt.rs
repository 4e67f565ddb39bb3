//! Formatting helpers for the tables and prose of experiment blocks, and the number formatting
//! the charts share.
//!
//! Several chapters print parameter counts and operation counts in tables; these helpers keep
//! that formatting out of the experiment's code. The charts' tooltips and the SVG clean-up
//! both trim numbers with `trim_number`; it lives here, below both, rather than in either.

use std::fmt::Display;

use crate::value::Scalar;

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
    push_grouped(&mut out, digits);
    out
}

/// Appends the ASCII digits `digits` to `out`, a comma before each group of three from the
/// right.
fn push_grouped(out: &mut String, digits: &str) {
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
}

/// A number for a table cell, rounded as the prose's quotes round and grouped as the series
/// prints counts: `decimals` decimals, half away from zero, commas in the integer part.
///
/// `fmt_cell(2.5, 0)` is `"3"` and `fmt_cell(0.125, 2)` is `"0.13"`, where `format!("{:.0}",
/// 2.5)` gives `"2"` and `format!("{:.2}", 0.125)` gives `"0.12"` (Rust rounds a tie to even);
/// `fmt_cell(1234.5, 1)` is `"1,234.5"`. Any number type works (`fmt_cell(params, 0)` for a
/// count). A result that rounds to zero has no minus sign (`fmt_cell(-0.001, 2)` is `"0.00"`);
/// NaN and the infinities print as `format!` prints them (`NaN`, `inf`, `-inf`).
///
/// Rounding is decided on the exact binary value the `f64` holds, as for a quoted number
/// (authoring guide §5), so a cell and a quote of the same value show the same digits and the
/// quote passes `verify`. Only a value that is exactly halfway (0.125, 2.5, -0.5) is a tie. A
/// value that merely prints like one is rounded as it is stored: 0.135 is
/// 0.13500000000000000888... and gives `"0.14"`, but 1.005 is 1.00499999999999989... and
/// gives `"1.00"`, and 2.675 gives `"2.67"`, not the `"1.01"` and `"2.68"` its shortest
/// decimal form suggests.
///
/// ```
/// use lab::prelude::*;
/// assert_eq!(fmt_cell(0.5, 0), "1");
/// assert_eq!(fmt_cell(-0.5, 0), "-1");
/// assert_eq!(fmt_cell(0.125, 2), "0.13");
/// assert_eq!(fmt_cell(1234.5, 1), "1,234.5");
/// assert_eq!(fmt_cell(2_001_000usize, 0), "2,001,000");
/// assert_eq!(fmt_cell(f64::NAN, 2), "NaN");
/// ```
pub fn fmt_cell(x: impl Scalar, decimals: usize) -> String {
    let x = x.to_f64();
    if !x.is_finite() {
        return format!("{x:.decimals$}");
    }
    // The neighbour of an exact tie lies strictly on its far side, where `format!` (correctly
    // rounded everywhere but at ties) rounds away from zero.
    let x = if is_exact_tie(x, decimals) {
        if x > 0.0 { x.next_up() } else { x.next_down() }
    } else {
        x
    };
    let text = format!("{x:.decimals$}");
    let (sign, rest) = match text.strip_prefix('-') {
        // `-0.00` for a tiny negative value (or `-0.0`): zero has no sign.
        Some(rest) if rest.bytes().all(|b| b == b'0' || b == b'.') => ("", rest),
        Some(rest) => ("-", rest),
        None => ("", text.as_str()),
    };
    let (int, frac) = rest
        .split_once('.')
        .map_or((rest, None), |(i, f)| (i, Some(f)));
    let mut out = String::with_capacity(text.len() + int.len() / 3);
    out.push_str(sign);
    push_grouped(&mut out, int);
    if let Some(frac) = frac {
        out.push('.');
        out.push_str(frac);
    }
    out
}

/// Whether finite `x` lies exactly halfway between two roundings to `decimals` decimals,
/// decided on its exact decimal expansion (an `f64` has at most 1074 fraction digits): the
/// digits after the kept ones are a 5 and then only zeros.
fn is_exact_tie(x: f64, decimals: usize) -> bool {
    const EXACT: usize = 1100;
    if x == 0.0 {
        return false;
    }
    let exact = format!("{:.*}", EXACT, x.abs());
    let fraction = exact.split_once('.').map_or("", |(_, f)| f);
    let rest = fraction.get(decimals..).unwrap_or("");
    rest.starts_with('5') && rest[1..].bytes().all(|b| b == b'0')
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
    use super::{fmt_cell, group_thousands, trim_number};

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

    /// The reference for `fmt_cell`: round the exact decimal expansion by hand, digit by
    /// digit, half away from zero (no grouping, no float formatting at the kept precision).
    fn by_hand(x: f64, decimals: usize) -> String {
        let exact = format!("{:.1100}", x.abs());
        let (int, frac) = exact.split_once('.').unwrap();
        let mut digits: Vec<u8> = format!("{int}{}", &frac[..decimals]).into_bytes();
        if frac.as_bytes()[decimals] >= b'5' {
            let mut i = digits.len();
            loop {
                if i == 0 {
                    digits.insert(0, b'1');
                    break;
                }
                i -= 1;
                if digits[i] == b'9' {
                    digits[i] = b'0';
                } else {
                    digits[i] += 1;
                    break;
                }
            }
        }
        let digits = String::from_utf8(digits).unwrap();
        let (int, frac) = digits.split_at(digits.len() - decimals);
        let zero = digits.bytes().all(|b| b == b'0');
        let sign = if x < 0.0 && !zero { "-" } else { "" };
        match decimals {
            0 => format!("{sign}{int}"),
            _ => format!("{sign}{int}.{frac}"),
        }
    }

    #[test]
    fn exact_ties_round_half_away_from_zero() {
        for (x, decimals, cell) in [
            (0.5, 0, "1"),
            (1.5, 0, "2"),
            (2.5, 0, "3"),
            (-0.5, 0, "-1"),
            (-2.5, 0, "-3"),
            (0.125, 2, "0.13"),
            (-0.125, 2, "-0.13"),
            (0.375, 2, "0.38"),
            (0.25, 1, "0.3"),
            (1.0625, 3, "1.063"),
            (999_999.5, 0, "1,000,000"),
        ] {
            assert_eq!(fmt_cell(x, decimals), cell, "{x} to {decimals}");
        }
    }

    /// A value that only prints like a tie is rounded as it is stored, as quotes are.
    #[test]
    fn near_ties_round_the_stored_value() {
        assert_eq!(fmt_cell(0.135, 2), "0.14"); // 0.13500000000000000888...
        assert_eq!(fmt_cell(1.005, 2), "1.00"); // 1.00499999999999989...
        assert_eq!(fmt_cell(2.675, 2), "2.67"); // 2.67499999999999982...
        assert_eq!(fmt_cell(0.125f64.next_up(), 2), "0.13");
        assert_eq!(fmt_cell(0.125f64.next_down(), 2), "0.12");
        assert_eq!(fmt_cell(2.5f64.next_down(), 0), "2");
        // More decimals than the tie needs: 0.125 is exact at 3, nothing to round.
        assert_eq!(fmt_cell(0.125, 3), "0.125");
        assert_eq!(fmt_cell(0.125, 5), "0.12500");
    }

    #[test]
    fn the_integer_part_is_grouped_and_zero_has_no_sign() {
        assert_eq!(fmt_cell(1234.5, 1), "1,234.5");
        assert_eq!(fmt_cell(-1_234_567.891, 2), "-1,234,567.89");
        assert_eq!(fmt_cell(999.96, 1), "1,000.0");
        assert_eq!(fmt_cell(12.0, 0), "12");
        assert_eq!(fmt_cell(65_536u32, 0), "65,536");
        assert_eq!(fmt_cell(-4200i64, 1), "-4,200.0");
        // References too, as iterating a vector of values yields them.
        let cells: Vec<String> = [0.25, 1e3].iter().map(|x| fmt_cell(x, 2)).collect();
        assert_eq!(cells, ["0.25", "1,000.00"]);
        assert_eq!(fmt_cell(-0.001, 2), "0.00");
        assert_eq!(fmt_cell(-0.0, 1), "0.0");
        assert_eq!(fmt_cell(-0.4, 0), "0");
        assert_eq!(fmt_cell(0.0, 0), "0");
        assert_eq!(fmt_cell(1e20, 0), "100,000,000,000,000,000,000");
    }

    #[test]
    fn non_finite_values_print_as_format_prints_them() {
        assert_eq!(fmt_cell(f64::NAN, 2), "NaN");
        assert_eq!(fmt_cell(f64::INFINITY, 0), "inf");
        assert_eq!(fmt_cell(f64::NEG_INFINITY, 3), "-inf");
    }

    /// Against the by-hand rounding of the exact expansion, over values of every magnitude and
    /// over dyadic ties (k / 2^j, exact at j decimals, ties at j - 1), grouping aside.
    #[test]
    fn agrees_with_rounding_the_exact_expansion_by_hand() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut cases = Vec::new();
        for _ in 0..3000 {
            let magnitude = 10f64.powi(rng.random_range(-6..9));
            let x: f64 = rng.random_range(-1.0..1.0) * magnitude;
            cases.push((x, rng.random_range(0..8)));
            let j = rng.random_range(1..10);
            let k = f64::from(rng.random_range(-5000..5000));
            cases.push((k / f64::from(1u32 << j), (j - 1) as usize));
        }
        for (x, decimals) in cases {
            assert_eq!(
                fmt_cell(x, decimals).replace(',', ""),
                by_hand(x, decimals),
                "{x:e} to {decimals}"
            );
        }
    }
}
