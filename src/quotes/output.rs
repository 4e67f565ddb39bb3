//! Pinned outputs (DESIGN §3.4): the ` ```output ` block the author saw, compared token by token
//! with the fresh output; numbers within the precision they were printed with.

use std::sync::LazyLock;

use regex::Regex;

static TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[^\s\d+\-.]+|[+\-.]")
        .expect("static regex")
});

#[derive(Debug, PartialEq)]
enum Token<'a> {
    Number { value: f64, decimals: usize },
    Text(&'a str),
}

fn tokens(text: &str) -> Vec<Token<'_>> {
    TOKEN
        .find_iter(text)
        .map(|m| {
            let s = m.as_str();
            match s.parse::<f64>() {
                Ok(value) if s.chars().any(|c| c.is_ascii_digit()) => {
                    let mantissa = s.split(['e', 'E']).next().unwrap_or(s);
                    let decimals = mantissa.split_once('.').map_or(0, |(_, f)| f.len());
                    Token::Number { value, decimals }
                }
                _ => Token::Text(s),
            }
        })
        .collect()
}

/// True if `fresh` matches `pinned`: same text tokens, numbers equal within one unit of the
/// last printed digit (of the less precise of the two); whitespace is not significant.
pub fn matches(pinned: &str, fresh: &str) -> bool {
    let (a, b) = (tokens(pinned), tokens(fresh));
    a.len() == b.len() && a.iter().zip(&b).all(|pair| token_eq(pair.0, pair.1))
}

fn token_eq(a: &Token<'_>, b: &Token<'_>) -> bool {
    match (a, b) {
        (
            Token::Number {
                value: x,
                decimals: dx,
            },
            Token::Number {
                value: y,
                decimals: dy,
            },
        ) => {
            let unit = 10f64.powi(-((*dx).min(*dy) as i32));
            (x - y).abs() <= unit * (1.0 + 1e-9) || x == y
        }
        (Token::Text(x), Token::Text(y)) => x == y,
        _ => false,
    }
}

static NON_FINITE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b(?:nan|inf|infinity)\b").expect("static regex"));

/// How many times `text` prints a non-finite number (`NaN`, `inf`, `-inf`, `infinity`, any case).
///
/// `verify --fix` compares this count between the pinned and the fresh output: a NaN or inf that
/// the author has not pinned is a numerical failure to fix, not an output to accept, while one
/// already pinned (a `-inf` in a printed attention mask) is part of the expected output.
pub fn non_finite_count(text: &str) -> usize {
    NON_FINITE.find_iter(text).count()
}

/// A unified diff of pinned against fresh output, for reports.
pub fn diff(pinned: &str, fresh: &str) -> String {
    similar::TextDiff::from_lines(pinned, fresh)
        .unified_diff()
        .context_radius(2)
        .header("pinned", "rerun")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_match_within_printed_precision() {
        assert!(matches(
            "weights: [0.123, 0.877]\n",
            "weights: [0.123, 0.877]"
        ));
        assert!(matches("0.123", "0.124"), "one unit of the last digit");
        assert!(!matches("0.123", "0.126"));
        assert!(
            matches("loss 2.0", "loss 2.04"),
            "the pinned text printed one decimal"
        );
        assert!(matches("a   b\n", "a b"), "whitespace is not significant");
    }

    #[test]
    fn text_and_structure_must_match() {
        assert!(!matches("dot: 1.0", "general: 1.0"));
        assert!(!matches("1.0 2.0", "1.0"));
        assert!(!matches("1.0", "x"));
        assert!(!matches("[1, 2]", "[1, -2]"));
    }

    #[test]
    fn non_finite_words_are_counted() {
        assert_eq!(non_finite_count("w = [NaN, 0.5, -inf]\nINF Infinity"), 4);
        assert_eq!(non_finite_count("information, infer, nano 1.5"), 0);
    }

    #[test]
    fn diff_is_unified() {
        let d = diff("a\nb\n", "a\nc\n");
        assert!(d.contains("-b") && d.contains("+c"), "{d}");
    }
}
