//! Summaries of repeated measurements: mean, extremes and spread.
//!
//! `lab.seeds` records them for every value its runs record, and the line chart draws a mean
//! with its min-max band from them, so both agree on what "the mean over seeds" is. Sums run
//! in the order given (seed order), so a summary is the same bytes on every machine.

/// Mean, minimum, maximum and sample standard deviation of some numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Summary {
    /// Arithmetic mean.
    pub(crate) mean: f64,
    /// Smallest number (NaN if any number is NaN).
    pub(crate) min: f64,
    /// Largest number (NaN if any number is NaN).
    pub(crate) max: f64,
    /// Sample standard deviation: divided by `n - 1` (Bessel's correction), NaN for one number.
    pub(crate) std: f64,
}

impl Summary {
    /// The statistics' names, in the order of [`Summary::values`].
    pub(crate) const NAMES: [&str; 4] = ["mean", "min", "max", "std"];

    /// The statistics, in the order of [`Summary::NAMES`].
    pub(crate) fn values(&self) -> [f64; 4] {
        [self.mean, self.min, self.max, self.std]
    }
}

/// Summarises `xs`, which must not be empty.
pub(crate) fn summarize(xs: &[f64]) -> Summary {
    assert!(!xs.is_empty(), "a summary needs at least one number");
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    // `f64::min` would skip a NaN and report the extreme of the others as if nothing failed.
    let extreme = |pick: fn(f64, f64) -> f64| {
        xs.iter()
            .copied()
            .reduce(|a, b| {
                if a.is_nan() || b.is_nan() {
                    f64::NAN
                } else {
                    pick(a, b)
                }
            })
            .unwrap_or(f64::NAN)
    };
    // Two passes: the deviations from the mean, not `E[x^2] - E[x]^2`, which cancels badly.
    let squares: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    Summary {
        mean,
        min: extreme(f64::min),
        max: extreme(f64::max),
        std: (squares / (n - 1.0)).sqrt(),
    }
}

/// Summarises each position across `rows` (all of one length): the summary of `rows[..][i]`
/// for every `i`.
pub(crate) fn summarize_columns(rows: &[Vec<f64>]) -> Vec<Summary> {
    let width = rows.first().map_or(0, Vec::len);
    (0..width)
        .map(|i| summarize(&rows.iter().map(|row| row[i]).collect::<Vec<_>>()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_a_few_numbers() {
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!((s.mean, s.min, s.max), (5.0, 2.0, 9.0));
        // Sum of squared deviations 32, over n - 1 = 7 (the population value would be 2).
        assert_eq!(s.std, (32.0f64 / 7.0).sqrt());
    }

    #[test]
    fn one_number_has_no_sample_deviation() {
        let s = summarize(&[3.5]);
        assert_eq!((s.mean, s.min, s.max), (3.5, 3.5, 3.5));
        assert!(s.std.is_nan());
    }

    #[test]
    fn a_nan_poisons_every_statistic() {
        let s = summarize(&[1.0, f64::NAN, 3.0]);
        assert!(s.mean.is_nan() && s.min.is_nan() && s.max.is_nan() && s.std.is_nan());
        let last = summarize(&[1.0, 3.0, f64::NAN]);
        assert!(last.min.is_nan() && last.max.is_nan());
    }

    #[test]
    fn columns_are_summarised_one_by_one() {
        let rows = vec![vec![1.0, 10.0], vec![3.0, 30.0]];
        let cols = summarize_columns(&rows);
        assert_eq!(cols.len(), 2);
        assert_eq!((cols[0].mean, cols[0].min, cols[0].max), (2.0, 1.0, 3.0));
        assert_eq!((cols[1].mean, cols[1].min, cols[1].max), (20.0, 10.0, 30.0));
        assert_eq!(cols[1].std, 200f64.sqrt());
    }
}
