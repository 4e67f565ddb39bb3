//! The trait every trainable layer implements, kept apart from the layers so that
//! everything with parameters ([`nn`](super::nn)'s layers, the positions, the models) and
//! everything that walks them ([`Adam`](crate::Adam)) depends on this module and on nothing
//! of each other's.

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD};

/// Anything with trainable parameters. The gradient of a `P` is stored in another `P`
/// ([`Params::zeros_like`]), so an optimiser walks [`Params::params_mut`] of the model and
/// [`Params::params`] of the gradient side by side.
pub trait Params {
    /// The parameters, in a fixed order.
    fn params(&self) -> Vec<ArrayViewD<'_, f64>>;
    /// The parameters, mutable, in the order of [`Params::params`].
    fn params_mut(&mut self) -> Vec<ArrayViewMutD<'_, f64>>;
    /// A copy with every parameter set to zero: the place to accumulate gradients.
    fn zeros_like(&self) -> Self
    where
        Self: Sized;
    /// Number of trainable scalars.
    fn param_count(&self) -> usize {
        self.params().iter().map(|p| p.len()).sum()
    }
    /// Owned copies of the parameters (for an optimiser's state or a checkpoint).
    fn to_vec(&self) -> Vec<ArrayD<f64>> {
        self.params().iter().map(|p| p.to_owned()).collect()
    }
}
