//! Where a token's position enters the model: the one place that knows about positions.
//!
//! [`Positions::Sinusoidal`] and [`Positions::Learned`] add a vector per position to the
//! token embeddings. [`Positions::Rotary`], [`Positions::Alibi`] and [`Positions::Relative`]
//! act in the self-attention layers instead, on the queries and keys or on the scores, through
//! [`PositionEncoding::rotate_heads`] and [`PositionEncoding::score_bias`];
//! [`Positions::NoPositions`] gives the model no position at all. Cross-attention never sees
//! positions (as in T5): its queries and keys belong to different sequences.

use ndarray::{Array1, Array2, ArrayView2, ArrayViewD, ArrayViewMutD, s};
use rand::Rng;

use crate::init::randn2;
use crate::positions::{alibi_entry, alibi_slopes, relative_index, rotate};

use super::params::Params;

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
    /// No position information: self-attention is then permutation-equivariant.
    NoPositions,
    /// Rotary position embedding (Su et al.): every head's queries and keys in self-attention
    /// are rotated by [`rope`](crate::rope) with the row's position in its sequence.
    Rotary,
    /// ALiBi (Press et al.): head `i` of a self-attention layer adds
    /// [`alibi_bias`](crate::alibi_bias)`(slopes[i], ..)` to its scores, `-slope * |i - j|`.
    Alibi,
    /// A learned scalar bias per head and clipped offset `j - i` in `-clip..=clip`, added to
    /// the self-attention scores (T5's bias with one bucket per offset, clipped as in Shaw
    /// et al.); initialised to zero, shared by the encoder's and the decoder's self-attention.
    Relative {
        /// Offsets beyond `±clip` share the entry of `±clip`.
        clip: usize,
    },
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
    /// `max_len x d_model` for the additive schemes, `heads x (2 clip + 1)` for
    /// [`Positions::Relative`], empty otherwise; trained for `Learned` and `Relative`.
    pub(super) table: Array2<f64>,
    heads: usize,
    max_len: usize,
}

/// The sinusoidal table, `max_len x d`.
pub fn sinusoidal_positions(max_len: usize, d: usize) -> Array2<f64> {
    Array2::from_shape_fn((max_len, d), |(p, j)| {
        let angle = p as f64 / 10000f64.powf((j - j % 2) as f64 / d as f64);
        if j % 2 == 0 { angle.sin() } else { angle.cos() }
    })
}

impl PositionEncoding {
    /// The table for sequences up to `max_len` positions of width `d_model`, for attention
    /// layers of one head (see [`PositionEncoding::with_heads`]).
    pub fn new<R: Rng + ?Sized>(
        kind: Positions,
        max_len: usize,
        d_model: usize,
        rng: &mut R,
    ) -> Self {
        Self::with_heads(kind, max_len, d_model, 1, rng)
    }

    /// The positions of a model whose attention layers have `heads` query heads (ALiBi's
    /// slopes and the relative bias are per head). [`TinyTransformer`](crate::TinyTransformer)
    /// builds its positions this way from its [`ModelConfig`](crate::ModelConfig).
    pub fn with_heads<R: Rng + ?Sized>(
        kind: Positions,
        max_len: usize,
        d_model: usize,
        heads: usize,
        rng: &mut R,
    ) -> Self {
        let table = match kind {
            Positions::Sinusoidal => sinusoidal_positions(max_len, d_model),
            Positions::Learned => randn2(max_len, d_model, rng) * 0.1,
            Positions::Relative { clip } => Array2::zeros((heads, 2 * clip + 1)),
            Positions::NoPositions | Positions::Rotary | Positions::Alibi => Array2::zeros((0, 0)),
        };
        Self {
            kind,
            table,
            heads,
            max_len,
        }
    }

    fn is_additive(&self) -> bool {
        matches!(self.kind, Positions::Sinusoidal | Positions::Learned)
    }

    fn is_trained(&self) -> bool {
        matches!(self.kind, Positions::Learned | Positions::Relative { .. })
    }

    /// Whether self-attention rotates its queries and keys ([`Positions::Rotary`]).
    pub fn rotates(&self) -> bool {
        self.kind == Positions::Rotary
    }

    /// Rotates every head's block of columns (`d_head` wide) of every row by the row's
    /// position in its sequence (`row % len`); `inverse` rotates back, which is also the
    /// backward pass. Identity unless the scheme is [`Positions::Rotary`].
    ///
    /// ```
    /// use attention::{PositionEncoding, Positions, rope};
    /// use rand::{SeedableRng, rngs::StdRng};
    ///
    /// let pe = PositionEncoding::new(Positions::Rotary, 4, 4, &mut StdRng::seed_from_u64(0));
    /// let q = ndarray::Array2::ones((2, 4)); // one sequence of length 2, one head of width 4
    /// assert_eq!(pe.rotate_heads(&q, 2, 4, false), rope(&q, &[0, 1]));
    /// ```
    ///
    /// # Panics
    ///
    /// If `len` or `d_head` is 0, or `d_head` is odd while the scheme is rotary.
    #[track_caller]
    pub fn rotate_heads(
        &self,
        x: &Array2<f64>,
        len: usize,
        d_head: usize,
        inverse: bool,
    ) -> Array2<f64> {
        let sign = if inverse { -1.0 } else { 1.0 };
        self.rotate_blocks(x, d_head, |r| sign * (r % len) as f64)
    }

    /// Rotates every head's block of columns (`d_head` wide) of every row as position
    /// `position`: the rows of a cached decoder step, whose query and new key sit at the
    /// step's position rather than at their row index. Identity unless the scheme is
    /// [`Positions::Rotary`]; the same rotation as [`PositionEncoding::rotate_heads`] gives
    /// the row at that position.
    ///
    /// ```
    /// use attention::{PositionEncoding, Positions};
    /// use rand::{SeedableRng, rngs::StdRng};
    ///
    /// let pe = PositionEncoding::new(Positions::Rotary, 4, 4, &mut StdRng::seed_from_u64(0));
    /// let x = ndarray::Array2::from_shape_fn((3, 4), |(r, c)| (r * 4 + c) as f64);
    /// let all = pe.rotate_heads(&x, 3, 2, false); // one sequence of length 3, two heads of 2
    /// let last = pe.rotate_heads_at(&x.slice(ndarray::s![2..3, ..]).to_owned(), 2, 2);
    /// assert_eq!(last.row(0), all.row(2));
    /// ```
    ///
    /// # Panics
    ///
    /// If `d_head` is 0, or odd while the scheme is rotary.
    #[track_caller]
    pub fn rotate_heads_at(&self, x: &Array2<f64>, position: usize, d_head: usize) -> Array2<f64> {
        self.rotate_blocks(x, d_head, |_| position as f64)
    }

    /// The rotation of [`PositionEncoding::rotate_heads`] and
    /// [`PositionEncoding::rotate_heads_at`], with row `r` at the signed position `pos(r)`.
    #[track_caller]
    fn rotate_blocks(
        &self,
        x: &Array2<f64>,
        d_head: usize,
        pos: impl Fn(usize) -> f64,
    ) -> Array2<f64> {
        if !self.rotates() {
            return x.clone();
        }
        assert!(
            d_head > 0 && d_head.is_multiple_of(2),
            "PositionEncoding: rotary heads need an even, positive width (got {d_head})"
        );
        let mut y = x.clone();
        for h in 0..x.ncols() / d_head {
            let cols = s![.., h * d_head..(h + 1) * d_head];
            let block = x.slice(cols).to_owned();
            y.slice_mut(cols)
                .assign(&rotate(&block, (0..x.nrows()).map(&pos)));
        }
        y
    }

    /// The bias head `head` adds to its `m x n` self-attention scores (ALiBi or the learned
    /// relative bias), or `None`.
    ///
    /// ```
    /// use attention::{PositionEncoding, Positions};
    /// use rand::{SeedableRng, rngs::StdRng};
    ///
    /// let pe = PositionEncoding::with_heads(Positions::Alibi, 8, 8, 2, &mut StdRng::seed_from_u64(0));
    /// let bias = pe.score_bias(0, 2, 3).unwrap(); // head 0 of 2: slope 2^-4
    /// assert_eq!(bias.row(0).to_vec(), vec![0.0, -0.0625, -0.125]);
    /// ```
    ///
    /// # Panics
    ///
    /// If `head` is not below the head count the encoding was made for.
    #[track_caller]
    pub fn score_bias(&self, head: usize, m: usize, n: usize) -> Option<Array2<f64>> {
        let entry = self.bias_entry(head)?;
        Some(Array2::from_shape_fn((m, n), |(i, j)| entry(i, j)))
    }

    /// Row `query` of [`PositionEncoding::score_bias`] over keys `0..n`: the bias a cached
    /// decoder step at position `query` adds to its scores, without building the whole
    /// matrix. `None` where `score_bias` is `None`.
    ///
    /// ```
    /// use attention::{PositionEncoding, Positions};
    /// use rand::{SeedableRng, rngs::StdRng};
    ///
    /// let pe = PositionEncoding::with_heads(Positions::Alibi, 8, 8, 2, &mut StdRng::seed_from_u64(0));
    /// let row = pe.score_bias_row(0, 2, 3).unwrap();
    /// assert_eq!(row, pe.score_bias(0, 3, 3).unwrap().row(2));
    /// assert_eq!(row.to_vec(), vec![-0.125, -0.0625, 0.0]);
    /// ```
    ///
    /// # Panics
    ///
    /// As [`PositionEncoding::score_bias`].
    #[track_caller]
    pub fn score_bias_row(&self, head: usize, query: usize, n: usize) -> Option<Array1<f64>> {
        let entry = self.bias_entry(head)?;
        Some(Array1::from_shape_fn(n, |j| entry(query, j)))
    }

    /// The bias of key `j` in query `i`'s scores of head `head`, shared by
    /// [`PositionEncoding::score_bias`] and [`PositionEncoding::score_bias_row`] so that the
    /// cached and the uncached decoder add the same numbers.
    #[track_caller]
    fn bias_entry(&self, head: usize) -> Option<Box<dyn Fn(usize, usize) -> f64 + '_>> {
        match self.kind {
            Positions::Alibi => {
                let slope = alibi_slopes(self.heads)[head];
                Some(Box::new(move |i, j| alibi_entry(slope, i, j)))
            }
            Positions::Relative { clip } => {
                let row = self.table.row(head);
                Some(Box::new(move |i, j| row[relative_index(i, j, clip)]))
            }
            _ => None,
        }
    }

    /// Backward of [`PositionEncoding::score_bias`]: adds `dL/dscores` of head `head` into
    /// the relative-bias table of `grads` (nothing for the fixed schemes).
    ///
    /// # Panics
    ///
    /// As [`PositionEncoding::score_bias`].
    #[track_caller]
    pub fn score_bias_backward(
        &self,
        head: usize,
        grad_scores: ArrayView2<'_, f64>,
        grads: &mut Self,
    ) {
        if let Positions::Relative { clip } = self.kind {
            for ((i, j), g) in grad_scores.indexed_iter() {
                grads.table[[head, relative_index(i, j, clip)]] += g;
            }
        }
    }

    /// The scheme.
    pub fn kind(&self) -> Positions {
        self.kind
    }

    /// Longest sequence the table covers.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Adds position `p`'s vector to every row that holds position `p` of its sequence
    /// (`x` is a batch of sequences of length `len`, one after the other).
    ///
    /// # Panics
    ///
    /// If `len` exceeds the table or does not divide the rows.
    #[track_caller]
    pub fn add_to_embeddings(&self, x: &mut Array2<f64>, len: usize) {
        if !self.is_additive() {
            return;
        }
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
    /// unchanged; a learned table also receives it, summed over the sequences. (The relative
    /// bias gets its gradient in [`PositionEncoding::score_bias_backward`].)
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
        if self.is_trained() {
            vec![self.table.view().into_dyn()]
        } else {
            vec![]
        }
    }
    fn params_mut(&mut self) -> Vec<ArrayViewMutD<'_, f64>> {
        if self.is_trained() {
            vec![self.table.view_mut().into_dyn()]
        } else {
            vec![]
        }
    }
    fn zeros_like(&self) -> Self {
        Self {
            kind: self.kind,
            table: Array2::zeros(self.table.raw_dim()),
            heads: self.heads,
            max_len: self.max_len,
        }
    }
}

#[cfg(test)]
mod tests {
    use ndarray::Array2;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::init::randn2;

    #[test]
    fn sinusoidal_by_hand() {
        let t = sinusoidal_positions(3, 4);
        assert_eq!(t.row(0).to_vec(), vec![0.0, 1.0, 0.0, 1.0]);
        assert!((t[[2, 0]] - 2f64.sin()).abs() < 1e-15);
        assert!((t[[2, 3]] - (2.0 / 100.0f64).cos()).abs() < 1e-15);
    }

    #[test]
    fn rotate_heads_counts_positions_per_sequence_and_inverts() {
        let mut rng = StdRng::seed_from_u64(5);
        let pe = PositionEncoding::with_heads(Positions::Rotary, 8, 8, 2, &mut rng);
        let x = randn2(2 * 3, 8, &mut rng); // two sequences of length 3, two heads of 4
        let y = pe.rotate_heads(&x, 3, 4, false);
        let head1 = x.slice(s![3..6, 4..8]).to_owned();
        assert_eq!(y.slice(s![3..6, 4..8]), crate::rope(&head1, &[0, 1, 2]));
        let back = pe.rotate_heads(&y, 3, 4, true);
        assert!((back - &x).iter().all(|d| d.abs() < 1e-12));
    }

    #[test]
    fn score_biases_by_hand() {
        let mut rng = StdRng::seed_from_u64(6);
        let alibi = PositionEncoding::with_heads(Positions::Alibi, 8, 8, 2, &mut rng);
        assert_eq!(alibi.score_bias(1, 2, 2).unwrap()[[0, 1]], -1.0 / 256.0);
        let mut rel =
            PositionEncoding::with_heads(Positions::Relative { clip: 1 }, 8, 8, 2, &mut rng);
        rel.table = ndarray::array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
        assert_eq!(
            rel.score_bias(1, 2, 4).unwrap(),
            ndarray::array![[5.0, 6.0, 6.0, 6.0], [4.0, 5.0, 6.0, 6.0]]
        );
        assert!(
            PositionEncoding::new(Positions::Rotary, 8, 8, &mut rng)
                .score_bias(0, 2, 2)
                .is_none()
        );
    }

    #[test]
    fn one_position_is_the_matching_row_of_the_whole_sequence() {
        let mut rng = StdRng::seed_from_u64(9);
        let rotary = PositionEncoding::with_heads(Positions::Rotary, 8, 8, 2, &mut rng);
        let x = randn2(5, 8, &mut rng); // one sequence of 5, two heads of 4
        let all = rotary.rotate_heads(&x, 5, 4, false);
        for t in 0..5 {
            let row = x.slice(s![t..t + 1, ..]).to_owned();
            assert_eq!(rotary.rotate_heads_at(&row, t, 4).row(0), all.row(t));
        }
        let mut rel =
            PositionEncoding::with_heads(Positions::Relative { clip: 1 }, 8, 8, 2, &mut rng);
        rel.table = randn2(2, 3, &mut rng);
        let alibi = PositionEncoding::with_heads(Positions::Alibi, 8, 8, 2, &mut rng);
        for pe in [&rel, &alibi] {
            for (head, t) in [(0, 0), (1, 3), (0, 4)] {
                let full = pe.score_bias(head, 5, 5).unwrap();
                assert_eq!(pe.score_bias_row(head, t, 5).unwrap(), full.row(t));
            }
        }
        assert!(rotary.score_bias_row(0, 2, 3).is_none());
        let learned = PositionEncoding::with_heads(Positions::Learned, 8, 8, 2, &mut rng);
        assert_eq!(learned.rotate_heads_at(&x, 3, 4), x);
    }

    #[test]
    #[should_panic(expected = "even, positive width")]
    fn rotary_heads_of_odd_width_panic() {
        let pe = PositionEncoding::new(Positions::Rotary, 4, 6, &mut StdRng::seed_from_u64(0));
        pe.rotate_heads(&Array2::ones((2, 6)), 2, 3, false);
    }
}
