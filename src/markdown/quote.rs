//! The quoted-number syntax `[TEXT]{=name TOLERANCE}` (DESIGN §3.5), parsed from raw text.
//!
//! Quotes are recognised on the Markdown source before inline parsing (outside code and math),
//! because inline parsing would otherwise pair the `~` of two `~p%` tolerances in one paragraph
//! into strikethrough. The Markdown stage then masks each quote so the parser sees inert text.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

/// How close the rerun value must be to the quoted number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    /// The rerun value, rounded to the quoted decimals, must equal the quote.
    Round,
    /// `±x`: absolute difference at most `x`.
    Abs(f64),
    /// `~p%`: relative difference at most `p` percent of the quoted number.
    Rel(f64),
    /// `>=x`: the rerun value must be at least `x`.
    AtLeast(f64),
    /// `<=x`: the rerun value must be at most `x`.
    AtMost(f64),
    /// `lo..hi`: the rerun value must lie in the closed interval `[lo, hi]`. Like a bound,
    /// `verify --fix` refreshes the quoted number and never the band.
    Band(f64, f64),
}

impl Tolerance {
    /// True for the bound forms (`>=x`, `<=x`).
    pub fn is_bound(self) -> bool {
        matches!(self, Tolerance::AtLeast(_) | Tolerance::AtMost(_))
    }

    /// True for the rules that state the author's claim rather than the number's precision
    /// (bounds and bands): `verify --fix` keeps the quoted number current, inside the rule or
    /// outside it, and never rewrites the rule itself; outside it the quote keeps failing.
    pub fn is_claim(self) -> bool {
        self.is_bound() || matches!(self, Tolerance::Band(..))
    }

    /// True unless the rule's number is infinite or NaN (the parser never produces those).
    pub fn is_finite(self) -> bool {
        match self {
            Tolerance::Round => true,
            Tolerance::Abs(x)
            | Tolerance::Rel(x)
            | Tolerance::AtLeast(x)
            | Tolerance::AtMost(x) => x.is_finite(),
            Tolerance::Band(lo, hi) => lo.is_finite() && hi.is_finite(),
        }
    }
}

/// The number inside a quote's text, with how it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotedNumber {
    /// Its byte span in the source.
    pub span: Range<usize>,
    /// Its value.
    pub value: f64,
    /// Digits after the decimal point (in the mantissa for exponent form).
    pub decimals: usize,
    /// Written with `,` thousands grouping.
    pub grouping: bool,
    /// Written with an explicit `+`.
    pub plus: bool,
    /// Written with U+2212 (−) instead of `-`.
    pub unicode_minus: bool,
    /// Written in exponent form (`1.5e-3`).
    pub exponent: bool,
}

/// One `[TEXT]{=name TOLERANCE}` in the source.
#[derive(Debug, Clone, PartialEq)]
pub struct QuoteSyntax {
    /// Byte span of the whole quote.
    pub span: Range<usize>,
    /// TEXT before the number.
    pub prefix: String,
    /// The quoted number.
    pub number: QuotedNumber,
    /// TEXT after the number.
    pub suffix: String,
    /// The bound name (`name`, `name.3`, `other-slug/name`).
    pub name: String,
    /// Byte span of the name.
    pub name_span: Range<usize>,
    /// The tolerance rule.
    pub tolerance: Tolerance,
}

/// A malformed quote: span and message and a suggested fix.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntaxError {
    /// Byte span of the offending text.
    pub span: Range<usize>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub help: String,
}

static QUOTE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[([^\[\]\n]*)\]\{=([^{}\n]*)\}").expect("static regex"));
static UNCLOSED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\]\{=[^}\n]*(\n|$)").expect("static regex"));
static NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[+\-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][+\-]?\d+)?")
        .expect("static regex")
});
static NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[A-Za-z0-9_][A-Za-z0-9_\-]*/)?[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*$")
        .expect("static regex")
});

/// Finds every quote in `text` (offsets are relative to `text` plus `base`), skipping `excluded`
/// byte ranges (code, math). Returns the quotes and the syntax errors.
pub fn scan(
    text: &str,
    base: usize,
    excluded: &[Range<usize>],
) -> (Vec<QuoteSyntax>, Vec<SyntaxError>) {
    let mut quotes = Vec::new();
    let mut errors = Vec::new();
    let outside = |r: &Range<usize>| !excluded.iter().any(|e| e.start < r.end && r.start < e.end);
    for caps in QUOTE.captures_iter(text) {
        let whole = caps.get(0).expect("group 0");
        let span = base + whole.start()..base + whole.end();
        if !outside(&span) {
            continue;
        }
        let inner = caps.get(1).expect("group 1");
        let spec = caps.get(2).expect("group 2");
        match parse_one(
            inner.as_str(),
            base + inner.start(),
            spec.as_str(),
            base + spec.start(),
        ) {
            Ok(mut quote) => {
                quote.span = span;
                quotes.push(quote);
            }
            Err(error) => errors.push(error),
        }
    }
    for m in UNCLOSED.find_iter(text) {
        let span = base + m.start()..base + m.end();
        // Only where `]{=` stands matters: the unclosed rest may run past the end of the text.
        if outside(&(span.start..span.start + 3))
            && !quotes
                .iter()
                .any(|q| q.span.start < span.end && span.start < q.span.end)
        {
            errors.push(SyntaxError {
                span: span.start..span.start + 3,
                message: "quote is not closed".into(),
                help: "close the binding with `}` on the same line, e.g. `[0.08]{=entropy.dot}`"
                    .into(),
            });
        }
    }
    (quotes, errors)
}

fn parse_one(
    inner: &str,
    inner_at: usize,
    spec: &str,
    spec_at: usize,
) -> Result<QuoteSyntax, SyntaxError> {
    let number_match = NUMBER.find(inner).ok_or_else(|| SyntaxError {
        span: inner_at..inner_at + inner.len(),
        message: format!("quote `[{inner}]` has no number"),
        help: "put the number the prose states inside the brackets, e.g. `[0.08]{=entropy.dot}`"
            .into(),
    })?;
    let number = parse_number(number_match.as_str(), inner_at + number_match.start());
    if !number.value.is_finite() {
        // Digits only, so this is an overflow (`1e400`): no rerun could ever match it.
        return Err(SyntaxError {
            span: number.span.clone(),
            message: format!(
                "the number `{}` is too large for a 64-bit float",
                number_match.as_str()
            ),
            help: "quote the number in a larger unit or with a smaller exponent".into(),
        });
    }
    let trimmed_start = spec.len() - spec.trim_start().len();
    let mut parts = spec.trim().splitn(2, char::is_whitespace);
    let name = parts.next().unwrap_or_default();
    let name_span = spec_at + trimmed_start..spec_at + trimmed_start + name.len();
    if !NAME.is_match(name) {
        return Err(SyntaxError {
            span: name_span,
            message: format!("`{name}` is not a value name"),
            help: "names look like `entropy.dot`, `dot.w.0` or `other-chapter/entropy.dot`".into(),
        });
    }
    let tolerance_text = parts.next().unwrap_or("").trim();
    let tolerance = parse_tolerance(tolerance_text).map_err(|message| SyntaxError {
        span: name_span.end..spec_at + spec.len(),
        message,
        help: "write nothing (round to the quoted decimals), `±0.01`, `~20%`, `>=10`, `<=0.1` \
               or a band `1.7..2.4`"
            .into(),
    })?;
    Ok(QuoteSyntax {
        span: 0..0,
        prefix: inner[..number_match.start()].to_string(),
        number,
        suffix: inner[number_match.end()..].to_string(),
        name: name.to_string(),
        name_span,
        tolerance,
    })
}

/// Reads a number written as the quote syntax allows (`1,234.5`, `−1.5`, `+2`, `1.5e-3`) that
/// starts at byte `at`; a value that does not fit an `f64` reads as infinite, unreadable as NaN.
pub fn parse_number(text: &str, at: usize) -> QuotedNumber {
    let unicode_minus = text.starts_with('−');
    let plain: String = text.replace('−', "-").replace(',', "");
    let mantissa = plain.split(['e', 'E']).next().unwrap_or(&plain);
    QuotedNumber {
        span: at..at + text.len(),
        value: plain.parse().unwrap_or(f64::NAN),
        decimals: mantissa.split_once('.').map_or(0, |(_, frac)| frac.len()),
        grouping: text.contains(','),
        plus: text.starts_with('+'),
        unicode_minus,
        exponent: plain.contains(['e', 'E']),
    }
}

/// Parses the tolerance text after the name.
pub fn parse_tolerance(text: &str) -> Result<Tolerance, String> {
    let number = |s: &str| -> Result<f64, String> {
        let x = s
            .trim()
            .replace(',', "")
            .parse::<f64>()
            .map_err(|_| format!("malformed tolerance `{text}`"))?;
        // `parse` accepts `inf` and `NaN` and overflows `1e400` to infinity; an infinite
        // tolerance would pass any rerun and a NaN one none.
        if x.is_finite() {
            Ok(x)
        } else {
            Err(format!("tolerance `{text}` is not a finite number"))
        }
    };
    // A slack is a distance: `±-0.01` is a typo, not 0.01 (a bound may be negative).
    let non_negative = |x: f64| -> Result<f64, String> {
        if x.is_sign_negative() && x != 0.0 {
            Err(format!("tolerance `{text}` is negative"))
        } else {
            Ok(x.abs())
        }
    };
    if text.is_empty() {
        Ok(Tolerance::Round)
    } else if let Some(rest) = text.strip_prefix('±').or_else(|| text.strip_prefix("+/-")) {
        Ok(Tolerance::Abs(non_negative(number(rest)?)?))
    } else if let Some(rest) = text.strip_prefix('~') {
        let pct = rest
            .strip_suffix('%')
            .ok_or_else(|| format!("relative tolerance `{text}` needs a `%`"))?;
        Ok(Tolerance::Rel(non_negative(number(pct)?)?))
    } else if let Some(rest) = text.strip_prefix(">=") {
        Ok(Tolerance::AtLeast(number(rest)?))
    } else if let Some(rest) = text.strip_prefix("<=") {
        Ok(Tolerance::AtMost(number(rest)?))
    } else if let Some((lo, hi)) = text.split_once("..") {
        // A band `lo..hi`, both ends included. A bare `..` or a missing end is malformed.
        if lo.trim().is_empty() || hi.trim().is_empty() {
            return Err(format!("malformed tolerance `{text}`"));
        }
        let (lo, hi) = (number(lo)?, number(hi)?);
        if lo > hi {
            return Err(format!(
                "band `{text}` is reversed: its low end must not exceed its high end"
            ));
        }
        Ok(Tolerance::Band(lo, hi))
    } else {
        Err(format!("malformed tolerance `{text}`"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> QuoteSyntax {
        let (quotes, errors) = scan(text, 0, &[]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(quotes.len(), 1, "{quotes:?}");
        quotes.into_iter().next().unwrap()
    }

    #[test]
    fn plain_quote() {
        let q = one("熵约为 [0.08]{=entropy.dot.512} nats");
        assert_eq!(q.name, "entropy.dot.512");
        assert_eq!(q.number.value, 0.08);
        assert_eq!(q.number.decimals, 2);
        assert_eq!(q.tolerance, Tolerance::Round);
        assert_eq!(
            &"熵约为 [0.08]{=entropy.dot.512} nats"[q.span.clone()],
            "[0.08]{=entropy.dot.512}"
        );
    }

    #[test]
    fn text_around_the_number_is_kept() {
        let q = one("[约 40x 更快]{=speedup >=10}");
        assert_eq!((q.prefix.as_str(), q.suffix.as_str()), ("约 ", "x 更快"));
        assert_eq!(q.tolerance, Tolerance::AtLeast(10.0));
    }

    #[test]
    fn grouping_sign_and_exponent() {
        let q = one("[256,000]{=params}");
        assert_eq!(
            (q.number.value, q.number.grouping, q.number.decimals),
            (256000.0, true, 0)
        );
        let q = one("[−1.50e-3]{=g}");
        assert_eq!(q.number.value, -1.5e-3);
        assert!(q.number.exponent && q.number.unicode_minus);
        assert_eq!(q.number.decimals, 2);
    }

    #[test]
    fn tolerances() {
        assert_eq!(one("[1]{=a ±0.01}").tolerance, Tolerance::Abs(0.01));
        assert_eq!(one("[1]{=a ~20%}").tolerance, Tolerance::Rel(20.0));
        assert_eq!(one("[1]{=a <=0.1}").tolerance, Tolerance::AtMost(0.1));
        assert_eq!(one("[1]{=other-ch/a.b.3}").name, "other-ch/a.b.3");
        assert_eq!(
            one("[2.1]{=a 1.7..2.4}").tolerance,
            Tolerance::Band(1.7, 2.4)
        );
        assert_eq!(one("[0]{=a -1..1}").tolerance, Tolerance::Band(-1.0, 1.0));
        assert_eq!(one("[2]{=a 2..2}").tolerance, Tolerance::Band(2.0, 2.0));
        assert_eq!(
            one("[1e3]{=a 1,000..2,000}").tolerance,
            Tolerance::Band(1000.0, 2000.0)
        );
    }

    /// A band must run from low to high, with two finite ends.
    #[test]
    fn malformed_bands_are_refused() {
        for (text, message) in [
            (
                "x [2]{=a 2.4..1.7}",
                "band `2.4..1.7` is reversed: its low end must not exceed its high end",
            ),
            (
                "x [2]{=a 1..inf}",
                "tolerance `1..inf` is not a finite number",
            ),
            (
                "x [2]{=a -inf..1}",
                "tolerance `-inf..1` is not a finite number",
            ),
            (
                "x [2]{=a NaN..1}",
                "tolerance `NaN..1` is not a finite number",
            ),
            (
                "x [2]{=a 1..1e400}",
                "tolerance `1..1e400` is not a finite number",
            ),
            ("x [2]{=a 1..}", "malformed tolerance `1..`"),
            ("x [2]{=a ..2}", "malformed tolerance `..2`"),
            ("x [2]{=a 1..2..3}", "malformed tolerance `1..2..3`"),
        ] {
            let (quotes, errors) = scan(text, 0, &[]);
            assert!(quotes.is_empty(), "{text}: {quotes:?}");
            assert_eq!(errors.len(), 1, "{text}: {errors:?}");
            assert_eq!(errors[0].message, message, "{text}");
        }
    }

    #[test]
    fn errors_are_reported_with_spans() {
        let (_, errors) = scan("x [about]{=a}", 0, &[]);
        assert!(errors[0].message.contains("no number"));
        let (_, errors) = scan("x [1]{=a ~20}", 0, &[]);
        assert!(errors[0].message.contains("needs a `%`"), "{errors:?}");
        let (_, errors) = scan("x [1]{=a b c}", 0, &[]);
        assert!(errors[0].message.contains("malformed tolerance"));
        let (_, errors) = scan("x [1]{=a\n", 0, &[]);
        assert!(errors[0].message.contains("not closed"));
        let (_, errors) = scan("x [1]{=a..b}", 0, &[]);
        assert!(errors[0].message.contains("not a value name"));
    }

    /// Every number a rule compares with must be finite: `f64` parsing accepts `inf` and `NaN`
    /// and overflows long digit strings to infinity, so each form is checked.
    #[test]
    fn non_finite_numbers_are_syntax_errors() {
        let huge = format!("[{}]{{=a}}", "9".repeat(400));
        for text in [
            "x [1e400]{=a}",
            "x [−2e999]{=a}",
            huge.as_str(),
            "x [1]{=a ±inf}",
            "x [1]{=a ±1e400}",
            "x [1]{=a ~NaN%}",
            "x [1]{=a ~infinity%}",
            "x [1]{=a >=-inf}",
            "x [1]{=a <=nan}",
        ] {
            let (quotes, errors) = scan(text, 0, &[]);
            assert!(quotes.is_empty(), "{text}: {quotes:?}");
            assert_eq!(errors.len(), 1, "{text}: {errors:?}");
            let message = &errors[0].message;
            assert!(
                message.contains("too large") || message.contains("not a finite number"),
                "{text}: {message}"
            );
        }
        assert_eq!(one("[1e300]{=a ±1e300}").number.value, 1e300);
    }

    /// A negative slack is refused at the quote, not read as its absolute value; a negative
    /// bound is a bound; malformed numbers say so.
    #[test]
    fn negative_and_malformed_tolerances_are_refused() {
        for (text, message) in [
            ("x [1]{=a ±-0.01}", "tolerance `±-0.01` is negative"),
            ("x [1]{=a +/--1}", "tolerance `+/--1` is negative"),
            ("x [1]{=a ~-5%}", "tolerance `~-5%` is negative"),
            ("x [1]{=a ±abc}", "malformed tolerance `±abc`"),
            ("x [1]{=a ~%}", "malformed tolerance `~%`"),
            ("x [1]{=a >=}", "malformed tolerance `>=`"),
            ("x [1]{=a =<1}", "malformed tolerance `=<1`"),
            (
                "x [1]{=a ~inf%}",
                "tolerance `~inf%` is not a finite number",
            ),
            ("x [1]{=a ±nan}", "tolerance `±nan` is not a finite number"),
        ] {
            let (quotes, errors) = scan(text, 0, &[]);
            assert!(quotes.is_empty(), "{text}: {quotes:?}");
            assert_eq!(errors.len(), 1, "{text}: {errors:?}");
            assert_eq!(errors[0].message, message, "{text}");
        }
        assert_eq!(one("[1]{=a >=-3}").tolerance, Tolerance::AtLeast(-3.0));
        assert_eq!(one("[1]{=a ±0}").tolerance, Tolerance::Abs(0.0));
        assert_eq!(one("[1]{=a ±-0}").tolerance, Tolerance::Abs(0.0));
    }

    #[test]
    fn excluded_ranges_are_skipped() {
        let text = "`[1]{=a}` and [2]{=b}";
        let code_span = [Range {
            start: 100,
            end: 109,
        }];
        let (quotes, _) = scan(text, 100, &code_span);
        assert_eq!(quotes.len(), 1);
        assert_eq!(quotes[0].name, "b");
        assert_eq!(quotes[0].span.start, 100 + 14);
    }
}
