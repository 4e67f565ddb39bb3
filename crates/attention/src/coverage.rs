//! Coverage (Tu et al. 2016; See, Liu & Manning 2017): the running sum of past attention
//! distributions, which tells a decoder which source positions it has already looked at and
//! lets a loss discourage attending to the same place twice.

use ndarray::{Array1, ArrayBase, Data, Ix1};

/// The coverage vector `c^t = sum_{t' < t} a^{t'}` over `n` source positions.
#[derive(Debug, Clone, PartialEq)]
pub struct Coverage {
    c: Array1<f64>,
    steps: usize,
}

impl Coverage {
    /// Zero coverage over `n` positions (nothing attended yet).
    pub fn new(n: usize) -> Self {
        Self {
            c: Array1::zeros(n),
            steps: 0,
        }
    }

    /// Adds one step's attention weights: `c <- c + a`.
    ///
    /// # Panics
    ///
    /// If `a.len()` differs from the number of positions.
    #[track_caller]
    pub fn add<S: Data<Elem = f64>>(&mut self, a: &ArrayBase<S, Ix1>) {
        assert_lengths("Coverage::add", self.c.len(), a.len());
        self.c += a;
        self.steps += 1;
    }

    /// The accumulated coverage `c`.
    pub fn vector(&self) -> &Array1<f64> {
        &self.c
    }

    /// How many weight vectors have been added.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// [`coverage_penalty`] of new weights `a` against the current coverage.
    #[track_caller]
    pub fn penalty<S: Data<Elem = f64>>(&self, a: &ArrayBase<S, Ix1>) -> f64 {
        coverage_penalty(a, &self.c)
    }
}

/// See et al.'s (2017) coverage loss `covloss = sum_j min(a_j, c_j)`: the attention mass `a`
/// puts on positions already covered by `c`. It is 0 when attention moves to fresh positions
/// and at most 1 for a distribution `a`.
///
/// # Panics
///
/// If the lengths differ.
#[track_caller]
pub fn coverage_penalty<S1, S2>(a: &ArrayBase<S1, Ix1>, c: &ArrayBase<S2, Ix1>) -> f64
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
{
    assert_lengths("coverage_penalty", c.len(), a.len());
    a.iter().zip(c).map(|(&x, &y)| x.min(y)).sum()
}

#[track_caller]
fn assert_lengths(op: &str, n: usize, found: usize) {
    assert!(
        n == found,
        "{op}: coverage has {n} positions, weights have {found}"
    );
}

#[cfg(test)]
mod tests {
    use ndarray::array;

    use super::*;

    #[test]
    fn coverage_accumulates_and_penalises_repeats() {
        let mut cov = Coverage::new(3);
        assert_eq!(cov.penalty(&array![1.0, 0.0, 0.0]), 0.0);
        cov.add(&array![0.7, 0.2, 0.1]);
        cov.add(&array![0.1, 0.8, 0.1].view());
        assert_eq!(cov.steps(), 2);
        let c = cov.vector();
        for (g, w) in c.iter().zip([0.8, 1.0, 0.2]) {
            assert!((g - w).abs() < 1e-15);
        }
        // min(0.5, 0.8) + min(0, 1) + min(0.5, 0.2) = 0.7
        assert!((cov.penalty(&array![0.5, 0.0, 0.5]) - 0.7).abs() < 1e-15);
        // Attending where nothing was covered costs nothing.
        assert_eq!(
            coverage_penalty(&array![0.0, 0.0, 1.0], &array![1.0, 1.0, 0.0]),
            0.0
        );
    }
}
