//! Where a token's position enters the model: the one place that knows about positions.
//!
//! [`Positions::Sinusoidal`] and [`Positions::Learned`] add a vector per position to the
//! token embeddings. Schemes that act on queries and keys instead (rotary, ALiBi, relative)
//! belong here too, as further variants with a hook in the attention scores.

use ndarray::{Array2, ArrayViewD, ArrayViewMutD, s};
use rand::Rng;

use crate::init::randn2;

use super::nn::Params;

/// How the model learns where a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Positions {
    /// The fixed sines and cosines of Vaswani et al.: `PE[p, 2i] = sin(p / 10000^(2i/d))`,
    /// `PE[p, 2i+1] = cos(p / 10000^(2i/d))`, added to the embeddings.
    Sinusoidal,
    /// One trained vector per position (`max_len x d_model`, initialised `N(0, 0.1^2)`),
    /// added to the embeddings.
    Learned,
}

/// The position table of a model and the scheme it implements.
///
/// ```
/// use attention::{PositionEncoding, Positions};
/// use rand::{SeedableRng, rngs::StdRng};
///
/// let pe = PositionEncoding::new(Positions::Sinusoidal, 8, 4, &mut StdRng::seed_from_u64(0));
/// let mut x = ndarray::Array2::zeros((2 * 3, 4)); // two sequences of length 3
/// pe.add_to_embeddings(&mut x, 3);
/// assert_eq!(x[[3, 1]], 1.0); // position 0 of the second sequence: cos(0)
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PositionEncoding {
    kind: Positions,
    /// `max_len x d_model`; trained only for [`Positions::Learned`].
    table: Array2<f64>,
}

/// The sinusoidal table, `max_len x d`.
pub fn sinusoidal_positions(max_len: usize, d: usize) -> Array2<f64> {
    Array2::from_shape_fn((max_len, d), |(p, j)| {
        let angle = p as f64 / 10000f64.powf((j - j % 2) as f64 / d as f64);
        if j % 2 == 0 { angle.sin() } else { angle.cos() }
    })
}

impl PositionEncoding {
    /// The table for sequences up to `max_len` positions of width `d_model`.
    pub fn new<R: Rng + ?Sized>(
        kind: Positions,
        max_len: usize,
        d_model: usize,
        rng: &mut R,
    ) -> Self {
        let table = match kind {
            Positions::Sinusoidal => sinusoidal_positions(max_len, d_model),
            Positions::Learned => randn2(max_len, d_model, rng) * 0.1,
        };
        Self { kind, table }
    }

    /// The scheme.
    pub fn kind(&self) -> Positions {
        self.kind
    }

    /// Longest sequence the table covers.
    pub fn max_len(&self) -> usize {
        self.table.nrows()
    }

    /// Adds position `p`'s vector to every row that holds position `p` of its sequence
    /// (`x` is a batch of sequences of length `len`, one after the other).
    ///
    /// # Panics
    ///
    /// If `len` exceeds the table or does not divide the rows.
    #[track_caller]
    pub fn add_to_embeddings(&self, x: &mut Array2<f64>, len: usize) {
        assert!(
            len > 0 && len <= self.max_len(),
            "PositionEncoding: length {len} out of range"
        );
        assert_eq!(
            x.nrows() % len,
            0,
            "PositionEncoding: rows are not whole sequences"
        );
        let rows = self.table.slice(s![..len, ..]);
        for b in 0..x.nrows() / len {
            let mut xb = x.slice_mut(s![b * len..(b + 1) * len, ..]);
            xb += &rows;
        }
    }

    /// Backward of [`PositionEncoding::add_to_embeddings`]: the gradient passes through
    /// unchanged; a learned table also receives it, summed over the sequences.
    pub fn backward(&self, grad_x: &Array2<f64>, len: usize, grads: &mut Self) {
        if self.kind == Positions::Learned {
            for b in 0..grad_x.nrows() / len {
                let mut t = grads.table.slice_mut(s![..len, ..]);
                t += &grad_x.slice(s![b * len..(b + 1) * len, ..]);
            }
        }
    }
}

impl Params for PositionEncoding {
    fn params(&self) -> Vec<ArrayViewD<'_, f64>> {
        match self.kind {
            Positions::Learned => vec![self.table.view().into_dyn()],
            Positions::Sinusoidal => vec![],
        }
    }
    fn params_mut(&mut self) -> Vec<ArrayViewMutD<'_, f64>> {
        match self.kind {
            Positions::Learned => vec![self.table.view_mut().into_dyn()],
            Positions::Sinusoidal => vec![],
        }
    }
    fn zeros_like(&self) -> Self {
        Self {
            kind: self.kind,
            table: Array2::zeros(self.table.raw_dim()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sinusoidal_by_hand() {
        let t = sinusoidal_positions(3, 4);
        assert_eq!(t.row(0).to_vec(), vec![0.0, 1.0, 0.0, 1.0]);
        assert!((t[[2, 0]] - 2f64.sin()).abs() < 1e-15);
        assert!((t[[2, 3]] - (2.0 / 100.0f64).cos()).abs() < 1e-15);
    }
}
