//! The one error type of the crate.
//!
//! Most functions panic with a clear message on misuse, because an experiment block that
//! passes mismatched shapes has a bug that should stop it. The `try_*` variants (and
//! [`masked_softmax`](crate::masked_softmax), whose failure is a normal outcome) return
//! [`AttentionError`] instead, so callers can recover.

use std::fmt;

/// Why an attention computation could not produce a result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AttentionError {
    /// A softmax was asked for over zero positions.
    Empty,
    /// Every position of a row was masked out, so no distribution exists.
    /// `row` is the row index for matrix operations, `None` for a single vector.
    AllMasked {
        /// The offending row of a matrix, or `None` for a vector.
        row: Option<usize>,
    },
    /// The scores contain NaN or `+inf`, or every score is `-inf`, so the softmax is
    /// undefined. `row` is as in [`AttentionError::AllMasked`].
    NoFiniteScore {
        /// The offending row of a matrix, or `None` for a vector.
        row: Option<usize>,
    },
    /// Two operands have incompatible shapes.
    ShapeMismatch {
        /// The operation that checked the shapes, e.g. `"masked_softmax"`.
        op: &'static str,
        /// What was expected and what was found.
        detail: String,
    },
    /// A configuration value is invalid (e.g. `d_model` not divisible by `n_heads`).
    InvalidConfig(String),
    /// A local-attention window contains no position of the sentence.
    EmptyWindow {
        /// The window centre `p`.
        center: f64,
        /// The half-width `D`.
        half_width: usize,
        /// The sentence length.
        len: usize,
    },
}

impl fmt::Display for AttentionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => write!(f, "softmax over an empty vector"),
            Self::AllMasked { row } => write!(f, "every position{} is masked", in_row(*row)),
            Self::NoFiniteScore { row } => write!(
                f,
                "scores{} contain NaN or +inf, or are all -inf",
                in_row(*row)
            ),
            Self::ShapeMismatch { op, detail } => write!(f, "{op}: shape mismatch: {detail}"),
            Self::InvalidConfig(msg) => write!(f, "invalid configuration: {msg}"),
            Self::EmptyWindow {
                center,
                half_width,
                len,
            } => write!(
                f,
                "local window [{center} - {half_width}, {center} + {half_width}] \
                 holds no position of a sentence of length {len}"
            ),
        }
    }
}

impl std::error::Error for AttentionError {}

fn in_row(row: Option<usize>) -> String {
    row.map_or_else(String::new, |r| format!(" of row {r}"))
}

/// Returns `Err(ShapeMismatch)` unless `found == expected`.
pub(crate) fn check_len(
    op: &'static str,
    what: &str,
    expected: usize,
    found: usize,
) -> Result<(), AttentionError> {
    if expected == found {
        Ok(())
    } else {
        Err(AttentionError::ShapeMismatch {
            op,
            detail: format!("{what}: expected {expected}, found {found}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_row_and_the_operation() {
        let e = AttentionError::AllMasked { row: Some(3) };
        assert_eq!(e.to_string(), "every position of row 3 is masked");
        let e = check_len("attend", "values rows", 4, 5).unwrap_err();
        assert_eq!(
            e.to_string(),
            "attend: shape mismatch: values rows: expected 4, found 5"
        );
    }
}
