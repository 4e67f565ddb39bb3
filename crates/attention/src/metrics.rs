//! Diagnostics of attention distributions: how spread out they are and where they point.

use ndarray::{ArrayBase, Data, Ix1};

/// Shannon entropy in nats, `H(p) = -sum_i p_i ln p_i`, with `0 ln 0 = 0`.
///
/// 0 for a one-hot distribution, `ln n` for the uniform distribution over `n` positions.
pub fn entropy<S: Data<Elem = f64>>(p: &ArrayBase<S, Ix1>) -> f64 {
    -p.iter()
        .filter(|&&x| x > 0.0)
        .map(|&x| x * x.ln())
        .sum::<f64>()
}

/// Kullback-Leibler divergence `KL(p || q) = sum_i p_i ln(p_i / q_i)` in nats, with
/// `0 ln(0 / q) = 0`; `+inf` if some `q_i = 0` where `p_i > 0`.
///
/// # Panics
///
/// If the lengths differ.
#[track_caller]
pub fn kl_divergence<S1, S2>(p: &ArrayBase<S1, Ix1>, q: &ArrayBase<S2, Ix1>) -> f64
where
    S1: Data<Elem = f64>,
    S2: Data<Elem = f64>,
{
    assert_eq!(p.len(), q.len(), "kl_divergence: lengths differ");
    p.iter()
        .zip(q)
        .filter(|&(&a, _)| a > 0.0)
        .map(|(&a, &b)| a * (a / b).ln())
        .sum()
}

/// Index of the largest entry (the first one on ties), or `None` for an empty vector.
/// NaN entries are skipped.
pub fn argmax<S: Data<Elem = f64>>(x: &ArrayBase<S, Ix1>) -> Option<usize> {
    x.iter()
        .enumerate()
        .filter(|(_, v)| !v.is_nan())
        .fold(None, |best: Option<(usize, f64)>, (i, &v)| match best {
            Some((_, b)) if b >= v => best,
            _ => Some((i, v)),
        })
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use ndarray::{Array1, array};

    use super::*;

    #[test]
    fn entropy_by_hand() {
        assert_eq!(entropy(&array![0.0, 1.0, 0.0]), 0.0);
        let uniform = Array1::from_elem(4, 0.25);
        assert!((entropy(&uniform) - 4.0_f64.ln()).abs() < 1e-15);
        // (0.5, 0.5, 0): ln 2, the zero contributes nothing (not NaN).
        assert!((entropy(&array![0.5, 0.5, 0.0]) - 2.0_f64.ln()).abs() < 1e-15);
    }

    #[test]
    fn kl_by_hand() {
        // KL((1, 0) || (0.5, 0.5)) = ln 2
        assert!((kl_divergence(&array![1.0, 0.0], &array![0.5, 0.5]) - 2.0_f64.ln()).abs() < 1e-15);
        assert_eq!(
            kl_divergence(&array![0.5, 0.5], &array![1.0, 0.0]),
            f64::INFINITY
        );
    }

    #[test]
    fn argmax_takes_the_first_maximum() {
        assert_eq!(argmax(&array![0.1, 0.7, f64::NAN, 0.7]), Some(1));
        assert_eq!(argmax(&Array1::<f64>::zeros(0)), None);
    }
}
