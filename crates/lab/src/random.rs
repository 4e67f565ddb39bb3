//! Standard-normal arrays of a requested shape, drawn from the chapter's RNG.
//!
//! `lab.randn(32)` and `lab.randn((7, 32))` return different array types, so the shape is a
//! trait with an associated output type rather than a runtime `&[usize]`.

use ndarray::{Array1, Array2, Array3};
use rand::{Rng, RngExt};
use rand_distr::StandardNormal;

/// A shape `lab.randn` understands: `n` gives an `Array1<f64>`, `(rows, cols)` an
/// `Array2<f64>`, `(a, b, c)` an `Array3<f64>`.
pub trait RandnShape {
    /// The array type of this shape.
    type Output;
    /// Fills an array of this shape with standard-normal samples, in row-major order.
    fn randn<R: Rng + ?Sized>(self, rng: &mut R) -> Self::Output;
}

/// One standard-normal sample (ziggurat sampler, as NOTES.md recommends).
fn normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    rng.sample(StandardNormal)
}

impl RandnShape for usize {
    type Output = Array1<f64>;
    fn randn<R: Rng + ?Sized>(self, rng: &mut R) -> Array1<f64> {
        Array1::from_shape_simple_fn(self, || normal(rng))
    }
}

impl RandnShape for (usize, usize) {
    type Output = Array2<f64>;
    fn randn<R: Rng + ?Sized>(self, rng: &mut R) -> Array2<f64> {
        Array2::from_shape_simple_fn(self, || normal(rng))
    }
}

impl RandnShape for (usize, usize, usize) {
    type Output = Array3<f64>;
    fn randn<R: Rng + ?Sized>(self, rng: &mut R) -> Array3<f64> {
        Array3::from_shape_simple_fn(self, || normal(rng))
    }
}
