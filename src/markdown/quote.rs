//! The quoted-number syntax `[TEXT]{=name TOLERANCE}` (DESIGN §3.5), parsed from raw text.
//!
//! Quotes are recognised on the Markdown source before inline parsing (outside code and math),
//! because inline parsing would otherwise pair the `~` of two `~p%` tolerances in one paragraph
//! into strikethrough. The Markdown stage then masks each quote so the parser sees inert text.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use super::claim::{Expr, Op, parse_rule};

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
    /// `< rule`, `== rule ±x`, ...: the rerun value compared with other recorded values; the
    /// comparison is the quote's [`Relation`]. Like a bound, `--fix` refreshes only the number.
    Relative,
}

/// A quote's bound relative to other values: `[0.92]{=acc.rel < acc.sin}`,
/// `[2.07 MiB]{=ex.mib == mem.flash ±0.01}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Relation {
    /// The comparison: the quoted value on its left, `rhs` on its right.
    pub op: Op,
    /// What it is compared with: a number-valued rule over recorded values.
    pub rhs: Expr,
    /// `rhs` as written.
    pub rhs_text: String,
    /// For `==`: how far apart the two may be (`±x` absolute, `~p%` relative to `rhs`);
    /// without it `==` means exactly equal.
    pub slack: Option<Tolerance>,
    /// The whole rule as written (`== mem.flash ±0.01`).
    pub text: String,
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
        self.is_bound() || matches!(self, Tolerance::Band(..) | Tolerance::Relative)
    }

    /// True unless the rule's number is infinite or NaN (the parser never produces those).
    pub fn is_finite(self) -> bool {
        match self {
            Tolerance::Round | Tolerance::Relative => true,
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
    /// Written in exponent form (`1.5e-3`, or `1.5×10⁻³` when `times_ten`).
    pub exponent: bool,
    /// Written as `1.5×10⁻³` (a superscript exponent), the form Chinese technical text uses.
    pub times_ten: bool,
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
    /// The comparison of a relative bound (`tolerance` is then [`Tolerance::Relative`]).
    pub relation: Option<Relation>,
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
/// `×10⁻³` after a mantissa: the exponent in superscript digits.
static TIMES_TEN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^ ?× ?10([⁺⁻]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)").expect("static regex"));
/// A power of ten written another way than [`TIMES_TEN`] accepts: `·10⁻³`, `× 10^-3`,
/// `x10**3`, `*10³`, with any spacing.
static OTHER_POWER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*[×xX*·⋅∙]\s*10\s*(?:\^|\*\*|[⁺⁻⁰¹²³⁴⁵⁶⁷⁸⁹])").expect("static regex")
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
    let number_end = whole_number(inner, inner_at, number_match.start(), number_match.end())?;
    let number_text = &inner[number_match.start()..number_end];
    let number = parse_number(number_text, inner_at + number_match.start());
    if !number.value.is_finite() {
        // Digits only, so this is an overflow (`1e400`): no rerun could ever match it.
        return Err(SyntaxError {
            span: number.span.clone(),
            message: format!("the number `{number_text}` is too large for a 64-bit float"),
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
    let rule_error = |message| SyntaxError {
        span: name_span.end..spec_at + spec.len(),
        message,
        help: "write nothing (round to the quoted decimals), `±0.01`, `~20%`, `>=10`, `<=0.1`, \
               a band `1.7..2.4`, or a bound relative to other values: `< other.name`, \
               `== other.name ±0.01`"
            .into(),
    };
    let relation = parse_relation(tolerance_text).map_err(rule_error)?;
    let tolerance = match relation {
        Some(_) => Tolerance::Relative,
        None => parse_tolerance(tolerance_text).map_err(rule_error)?,
    };
    Ok(QuoteSyntax {
        span: 0..0,
        prefix: inner[..number_match.start()].to_string(),
        number,
        suffix: inner[number_end..].to_string(),
        name: name.to_string(),
        name_span,
        tolerance,
        relation,
    })
}

/// Reads a bound relative to other values (`< b`, `>= 0.9 * b`, `== b ±0.01`); `None` when the
/// text is another kind of rule (`>=10` with a plain number stays a bound).
pub fn parse_relation(text: &str) -> Result<Option<Relation>, String> {
    const OPS: [(&str, Op); 6] = [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("==", Op::Eq),
        ("!=", Op::Ne),
        ("<", Op::Lt),
        (">", Op::Gt),
    ];
    let Some((symbol, op)) = OPS.iter().find(|(s, _)| text.starts_with(s)) else {
        return Ok(None);
    };
    let rest = &text[symbol.len()..];
    let plain_number = rest.trim().replace(',', "").parse::<f64>().is_ok();
    if rest.trim().is_empty() || matches!(op, Op::Le | Op::Ge) && plain_number {
        return Ok(None);
    }
    let (rhs_text, slack_text) = match rest.find(['±', '~']).or_else(|| rest.find("+/-")) {
        Some(at) => (rest[..at].trim(), Some(rest[at..].trim())),
        None => (rest.trim(), None),
    };
    let slack = match slack_text {
        None => None,
        Some(_) if *op != Op::Eq => {
            return Err(format!(
                "`{text}`: a slack (`±x`, `~p%`) goes only with `==`"
            ));
        }
        Some(s) => match parse_tolerance(s)? {
            t @ (Tolerance::Abs(_) | Tolerance::Rel(_)) => Some(t),
            _ => return Err(format!("`{s}` is not a slack: write `±0.01` or `~5%`")),
        },
    };
    let rhs = parse_rule(rhs_text).map_err(|(_, m)| format!("`{text}`: {m}"))?;
    if matches!(
        rhs,
        Expr::Compare(..) | Expr::And(..) | Expr::Or(..) | Expr::Not(..)
    ) {
        return Err(format!(
            "`{text}`: compare the value with a number, not with a comparison"
        ));
    }
    Ok(Some(Relation {
        op: *op,
        rhs,
        rhs_text: rhs_text.to_string(),
        slack,
        text: text.to_string(),
    }))
}

/// Where the quoted number that the pattern found at `start..end` of `inner` ends: after its
/// `×10⁻³` if it has one. A number the pattern would only cut out of longer number text
/// (`.13`, `1 234`, `1_234`, `1，234`, `1,23`, full-width or other non-ASCII digits) is an
/// error at its column, before anything binds to a part of it.
fn whole_number(
    inner: &str,
    inner_at: usize,
    start: usize,
    end: usize,
) -> Result<usize, SyntaxError> {
    let superscript = |c: char| "⁰¹²³⁴⁵⁶⁷⁸⁹".contains(c);
    if let Some((at, c)) = inner
        .char_indices()
        .find(|&(_, c)| c.is_numeric() && !c.is_ascii_digit() && !superscript(c))
    {
        return Err(SyntaxError {
            span: inner_at + at..inner_at + at + c.len_utf8(),
            message: format!("`{c}` is not an ASCII digit: write ASCII digits"),
            help:
                "write the number with ASCII digits 0-9 (full-width and other digits are not read)"
                    .into(),
        });
    }
    let before = inner[..start].chars().next_back();
    let after = &inner[end..];
    let digit_after = |skip: usize| after[skip..].starts_with(|c: char| c.is_ascii_digit());
    let cut = |message: String, help: &str| SyntaxError {
        span: inner_at + start..inner_at + end,
        message,
        help: help.into(),
    };
    let number = &inner[start..end];
    if before == Some('.') {
        return Err(cut(
            format!("`.{number}` is not read as one number"),
            "write a digit before the decimal point: `0.13`",
        ));
    }
    if before.is_some_and(|c| c == '_' || c.is_ascii_digit()) || after.starts_with('_') {
        return Err(cut(
            format!("`{number}` is part of a longer number written with `_`"),
            "write the number without `_`, grouped with commas if you like: `1,234`",
        ));
    }
    for (gap, what) in [
        (" ", "a space"),
        ("\u{a0}", "a no-break space"),
        ("\u{2009}", "a thin space"),
        ("，", "a full-width comma"),
    ] {
        if after.starts_with(gap) && digit_after(gap.len()) {
            return Err(cut(
                format!("`{number}` is followed by {what} and more digits"),
                "write one number: `1234` or `1,234`",
            ));
        }
    }
    if (after.starts_with(',') || after.starts_with('.')) && digit_after(1) {
        return Err(cut(
            format!(
                "`{number}{}` is not one number",
                &after[..2.min(after.len())]
            ),
            "group thousands in threes (`1,234,567`) and write one decimal point",
        ));
    }
    if let Some(m) = TIMES_TEN.find(after) {
        if number.contains(['e', 'E']) {
            return Err(cut(
                format!("`{}` has two exponents", &inner[start..end + m.end()]),
                "write `1.5e-3` or `1.5×10⁻³`, not both",
            ));
        }
        return Ok(end + m.end());
    }
    // `1,2345`: the pattern took the grouped `1,234` and left a digit.
    if digit_after(0) {
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        return Err(cut(
            format!("`{number}{}` is not one number", &after[..digits]),
            "group thousands in threes (`1,234,567`) and write one decimal point",
        ));
    }
    // A power written another way than `×10⁻³` (`·10⁻³`, `×10^-3`, `x 10³`) would leave the
    // mantissa bound alone, and `--fix` would write the rerun's mantissa before the old power.
    if let Some(m) = OTHER_POWER.find(after) {
        let rest = &after[m.end()..];
        let power = m.end() + rest.len()
            - rest
                .trim_start_matches(|c: char| {
                    c.is_ascii_digit() || superscript(c) || "+-⁺⁻".contains(c)
                })
                .len();
        return Err(cut(
            format!(
                "`{}` is not read as one number",
                &inner[start..end + power].trim_end()
            ),
            "write the power as `×10` and superscript digits (`3.1×10⁻³`) or as `3.1e-3`",
        ));
    }
    if after.starts_with(superscript) {
        let sup = after.len() - after.trim_start_matches(superscript).len();
        return Err(cut(
            format!(
                "`{number}{}`: a superscript after the number is not read as a power",
                &after[..sup]
            ),
            "quote the value itself, or write a power of ten as `1.3×10⁻¹`",
        ));
    }
    Ok(end)
}

/// A quote without a rule that rounds to `0`, `1.000` or `100%` accepts reruns that are not
/// exactly that (`[0.00]` passes for 0.004), while the words around it usually mean exactly
/// that: what to say about it (message, help), if anything.
pub fn ambiguous_rounding(quote: &QuoteSyntax) -> Option<(String, String)> {
    if quote.tolerance != Tolerance::Round {
        return None;
    }
    let n = &quote.number;
    let percent = quote.suffix.trim_start().starts_with('%');
    let half = 0.5 * 10f64.powi(-(n.decimals as i32));
    let written = || format!("{}{:.*}{}", quote.prefix, n.decimals, n.value, quote.suffix);
    if n.value == 0.0 {
        let window = format!("{half}");
        return Some((
            format!(
                "`{}` without a rule passes for any rerun below {window} in size, not only for zero",
                written().trim()
            ),
            format!(
                "if the text means exactly zero write `{{={} ==0}}` (or `<=0`); if it means \
                 small, quote more digits or a bound such as `<={window}`",
                quote.name
            ),
        ));
    }
    let (one, what) = if percent { (100.0, "100%") } else { (1.0, "1") };
    if n.value == one && (percent || n.decimals > 0) {
        return Some((
            format!(
                "`{}` without a rule passes for reruns from {} up, not only for {what}",
                written().trim(),
                one - half
            ),
            format!(
                "if the text means all or exactly {what} write `{{={} >={one}}}` (or `=={one}`); \
                 otherwise quote more digits",
                quote.name
            ),
        ));
    }
    None
}

/// Reads a number written as the quote syntax allows (`1,234.5`, `−1.5`, `+2`, `1.5e-3`) that
/// starts at byte `at`; a value that does not fit an `f64` reads as infinite, unreadable as NaN.
pub fn parse_number(text: &str, at: usize) -> QuotedNumber {
    let unicode_minus = text.starts_with('−');
    let times_ten = text.contains('×');
    let mut plain: String = text.replace('−', "-").replace(',', "");
    if let Some((mantissa, power)) = plain.split_once('×') {
        let exponent: String = power
            .trim()
            .trim_start_matches("10")
            .chars()
            .map(|c| match c {
                '⁻' => '-',
                '⁺' => '+',
                c => "⁰¹²³⁴⁵⁶⁷⁸⁹"
                    .chars()
                    .position(|s| s == c)
                    .and_then(|d| char::from_digit(d as u32, 10))
                    .unwrap_or(c),
            })
            .collect();
        plain = format!("{}e{exponent}", mantissa.trim());
    }
    let mantissa = plain.split(['e', 'E']).next().unwrap_or(&plain);
    QuotedNumber {
        span: at..at + text.len(),
        value: plain.parse().unwrap_or(f64::NAN),
        decimals: mantissa.split_once('.').map_or(0, |(_, frac)| frac.len()),
        grouping: text.contains(','),
        plus: text.starts_with('+'),
        unicode_minus,
        exponent: plain.contains(['e', 'E']),
        times_ten,
    }
}

/// Parses the tolerance text after the name.
pub fn parse_tolerance(text: &str) -> Result<Tolerance, String> {
    if let Some((_, message)) = crate::text::non_ascii_digit(text) {
        return Err(message);
    }
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

#[cfg(test)]
mod whole_tokens {
    use super::*;

    fn error(text: &str) -> (String, Range<usize>) {
        let (quotes, errors) = scan(text, 0, &[]);
        assert!(quotes.is_empty(), "{text}: {quotes:?}");
        assert_eq!(errors.len(), 1, "{text}: {errors:?}");
        (errors[0].message.clone(), errors[0].span.clone())
    }

    /// Each of these bound only a part of the number before, and `--fix` then wrote wrong text.
    #[test]
    fn a_number_cut_out_of_longer_number_text_is_refused_at_its_column() {
        assert_eq!(
            error("[.13]{=a}"),
            ("`.13` is not read as one number".into(), 2..4)
        );
        assert!(
            error("[1 234]{=a}")
                .0
                .contains("followed by a space and more digits")
        );
        assert!(error("[1_234]{=a}").0.contains("written with `_`"));
        assert!(error("[1，234]{=a}").0.contains("full-width comma"));
        assert!(error("[1,23]{=a}").0.contains("is not one number"));
        assert!(error("[1.2.3]{=a}").0.contains("is not one number"));
        let (message, span) = error("[约 １２ 倍]{=a}");
        assert_eq!(message, "`１` is not an ASCII digit: write ASCII digits");
        assert_eq!(span, 5..8);
        assert!(error("[٣]{=a}").0.contains("not an ASCII digit"));
        assert!(error("[1e3×10⁻³]{=a}").0.contains("two exponents"));
        // Redteam-3 D3, the class: digits left after grouping, other ways to write a power of
        // ten, and a superscript after the number. Each bound the mantissa alone before, and
        // `--fix` then wrote `0.0·10⁻³` for 0.0031 and left `1,2345` for 1234.
        assert_eq!(
            error("[1,2345]{=a}"),
            ("`1,2345` is not one number".into(), 1..6)
        );
        for power in [
            "[3.1·10⁻³]{=a}",
            "[3.1 × 10^-3]{=a}",
            "[3.1×10^-3]{=a}",
            "[3.1x10⁻³]{=a}",
            "[3.1 * 10**3]{=a}",
        ] {
            let (message, span) = error(power);
            let whole = &power[1..power.find(']').unwrap()];
            assert_eq!(
                message,
                format!("`{whole}` is not read as one number"),
                "{power}"
            );
            assert_eq!(span, 1..4, "{power}");
        }
        assert!(
            error("[0.13²]{=a}")
                .0
                .contains("`0.13²`: a superscript after the number is not read as a power")
        );
        // Redteam-3 D15: every rule that reads a number says so too.
        for tolerance in ["±０.０１", "~２%", ">=１０", "0.1..２"] {
            let rule = format!("[0.5]{{=a {tolerance}}}");
            assert!(
                error(&rule)
                    .0
                    .contains("not an ASCII digit: write ASCII digits"),
                "{rule}: {:?}",
                error(&rule)
            );
        }
        assert!(
            crate::markdown::claim::parse_rule("a > ０.５")
                .unwrap_err()
                .1
                .contains("write ASCII digits")
        );
    }

    #[test]
    fn times_ten_notation_is_one_number() {
        let (quotes, errors) = scan("误差 [3.1×10⁻³]{=err} 左右", 0, &[]);
        assert!(errors.is_empty(), "{errors:?}");
        let n = &quotes[0].number;
        assert!((n.value - 3.1e-3).abs() < 1e-18, "{}", n.value);
        assert!(n.times_ten && n.exponent);
        assert_eq!(n.decimals, 1);
        assert_eq!(&"误差 [3.1×10⁻³]{=err} 左右"[n.span.clone()], "3.1×10⁻³");
        assert_eq!(quotes[0].suffix, "");
        let big = parse_number("2×10¹²", 0);
        assert_eq!((big.value, big.decimals, big.times_ten), (2e12, 0, true));
        // What `--fix` reads back from a formatted rerun.
        assert_eq!(parse_number("1.25×10⁻⁷", 0).value, 1.25e-7);
    }

    #[test]
    fn zero_one_and_hundred_percent_without_a_rule_are_flagged_and_others_not() {
        let flagged = |text: &str| {
            let (quotes, errors) = scan(text, 0, &[]);
            assert!(errors.is_empty(), "{errors:?}");
            ambiguous_rounding(&quotes[0]).map(|(m, _)| m)
        };
        assert!(flagged("[0]{=d}").unwrap().contains("below 0.5"));
        assert!(flagged("[0.00]{=d}").unwrap().contains("below 0.005"));
        assert!(flagged("[1.000]{=c}").unwrap().contains("from 0.9995 up"));
        assert!(flagged("[100%]{=p}").unwrap().contains("from 99.5 up"));
        for fine in [
            "[0]{=d ==0}",
            "[0.00]{=d <=0}",
            "[1.000]{=c >=1}",
            "[1]{=n}",
            "[1.0%]{=p}",
            "[0.5]{=x}",
            "[100]{=n}",
        ] {
            assert_eq!(flagged(fine), None, "{fine}");
        }
    }

    #[test]
    fn relative_bounds_parse_and_plain_bounds_stay_bounds() {
        let q = |text: &str| scan(text, 0, &[]).0.remove(0);
        let r = q("[0.92]{=acc.rel < acc.sin.2}");
        assert_eq!(r.tolerance, Tolerance::Relative);
        let relation = r.relation.unwrap();
        assert_eq!(
            (relation.op, relation.rhs_text.as_str()),
            (Op::Lt, "acc.sin.2")
        );
        let e = q("[2.07 MiB]{=ex.mib == mem.flash ±0.01}")
            .relation
            .unwrap();
        assert_eq!((e.op, e.slack), (Op::Eq, Some(Tolerance::Abs(0.01))));
        assert_eq!(q("[0]{=d ==0}").relation.unwrap().rhs, Expr::Num(0.0));
        assert_eq!(q("[5]{=a >=3}").tolerance, Tolerance::AtLeast(3.0));
        assert_eq!(q("[5]{=a >= 0.5 * b}").relation.unwrap().op, Op::Ge);
        let (_, errors) = scan("[1]{=a < b ±0.1}", 0, &[]);
        assert!(
            errors[0].message.contains("goes only with `==`"),
            "{errors:?}"
        );
        let (_, errors) = scan("[1]{=a < b > c}", 0, &[]);
        assert!(
            errors[0].message.contains("not with a comparison"),
            "{errors:?}"
        );
    }
}
