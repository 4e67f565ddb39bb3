//! Seeded parameter initialisation.
//!
//! Every random number in an experiment comes from the chapter's seeded RNG, passed in
//! explicitly, so reruns reproduce the same parameters and the same quoted numbers.

use ndarray::{Array1, Array2};
use rand::{Rng, RngExt};
use rand_distr::{Distribution, StandardNormal};

/// Xavier/Glorot uniform matrix: entries drawn from `U(-b, b)`, `b = sqrt(6 / (rows + cols))`,
/// so that `Var = 2 / (rows + cols)` (Glorot & Bengio 2010).
pub fn xavier_uniform<R: Rng + ?Sized>(rows: usize, cols: usize, rng: &mut R) -> Array2<f64> {
    let b = (6.0 / (rows + cols) as f64).sqrt();
    Array2::from_shape_simple_fn((rows, cols), || rng.random_range(-b..=b))
}

/// Xavier/Glorot normal matrix: entries drawn from `N(0, 2 / (rows + cols))`.
pub fn xavier_normal<R: Rng + ?Sized>(rows: usize, cols: usize, rng: &mut R) -> Array2<f64> {
    let std = (2.0 / (rows + cols) as f64).sqrt();
    randn2(rows, cols, rng) * std
}

/// A vector of `n` independent standard-normal draws `N(0, 1)`.
pub fn randn1<R: Rng + ?Sized>(n: usize, rng: &mut R) -> Array1<f64> {
    Array1::from_shape_simple_fn(n, || StandardNormal.sample(rng))
}

/// A `rows x cols` matrix of independent standard-normal draws `N(0, 1)`.
pub fn randn2<R: Rng + ?Sized>(rows: usize, cols: usize, rng: &mut R) -> Array2<f64> {
    Array2::from_shape_simple_fn((rows, cols), || StandardNormal.sample(rng))
}

/// A Xavier-uniform vector, treated as a `1 x n` matrix: `b = sqrt(6 / (n + 1))`.
pub(crate) fn xavier_uniform1<R: Rng + ?Sized>(n: usize, rng: &mut R) -> Array1<f64> {
    let b = (6.0 / (n + 1) as f64).sqrt();
    Array1::from_shape_simple_fn(n, || rng.random_range(-b..=b))
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    #[test]
    fn same_seed_same_parameters() {
        let a = xavier_uniform(3, 4, &mut StdRng::seed_from_u64(7));
        let b = xavier_uniform(3, 4, &mut StdRng::seed_from_u64(7));
        let c = xavier_uniform(3, 4, &mut StdRng::seed_from_u64(8));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn xavier_uniform_stays_in_its_bound() {
        let w = xavier_uniform(20, 10, &mut StdRng::seed_from_u64(1));
        let b = (6.0_f64 / 30.0).sqrt();
        assert!(w.iter().all(|x| x.abs() <= b));
        // Not degenerate: some entries land in the outer half of the interval.
        assert!(w.iter().any(|x| x.abs() > b / 2.0));
    }

    #[test]
    fn normal_draws_have_the_right_moments() {
        let mut rng = StdRng::seed_from_u64(2);
        let x = randn2(200, 100, &mut rng);
        let (mean, var) = moments(x.iter());
        assert!(mean.abs() < 0.03, "mean {mean}");
        assert!((var - 1.0).abs() < 0.05, "var {var}");
        let w = xavier_normal(150, 50, &mut rng);
        let (_, var) = moments(w.iter());
        assert!((var - 0.01).abs() < 0.001, "var {var}");
        assert_eq!(randn1(5, &mut rng).len(), 5);
    }

    fn moments<'a>(xs: impl Iterator<Item = &'a f64> + Clone) -> (f64, f64) {
        let n = xs.clone().count() as f64;
        let mean = xs.clone().sum::<f64>() / n;
        let var = xs.map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        (mean, var)
    }
}
