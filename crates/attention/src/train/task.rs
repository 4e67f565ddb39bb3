//! Sequence reversal, a task whose right alignment is known: output position `t` of a
//! length-`n` sequence is input position `n - 1 - t`.

use std::collections::HashSet;

use rand::{Rng, RngExt};

use super::model::TinyTransformer;

/// Training batches and a held-out set for reversing sequences of `min_len..=max_len`
/// symbols from `0..symbols`. Held-out inputs are drawn first; training batches never
/// contain them.
///
/// ```
/// use attention::Reversal;
/// use rand::{SeedableRng, rngs::StdRng};
///
/// let mut rng = StdRng::seed_from_u64(0);
/// let task = Reversal::new(8, 6, 8, 100, &mut rng);
/// assert_eq!(task.target(&[1, 2, 3]), vec![3, 2, 1]);
/// let batch = task.batch(16, &mut rng);
/// assert!(batch.src.iter().all(|s| !task.is_held_out(s)));
/// ```
#[derive(Debug, Clone)]
pub struct Reversal {
    symbols: usize,
    min_len: usize,
    max_len: usize,
    held_out: Vec<Vec<usize>>,
    held_set: HashSet<Vec<usize>>,
}

/// Source and target sequences; all sources of a batch have one length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// Inputs.
    pub src: Vec<Vec<usize>>,
    /// The right outputs.
    pub tgt: Vec<Vec<usize>>,
}

impl Reversal {
    /// Draws `held_out` distinct inputs (lengths uniform in `min_len..=max_len`).
    ///
    /// # Panics
    ///
    /// If `symbols < 2`, `min_len == 0`, `min_len > max_len`, or `held_out` is more than a
    /// quarter of the shortest length's inputs (the training side would run dry).
    #[track_caller]
    pub fn new<R: Rng + ?Sized>(
        symbols: usize,
        min_len: usize,
        max_len: usize,
        held_out: usize,
        rng: &mut R,
    ) -> Self {
        assert!(
            symbols >= 2 && min_len > 0 && min_len <= max_len,
            "Reversal::new: bad sizes"
        );
        let smallest = (symbols as f64).powi(min_len as i32);
        assert!(
            (held_out as f64) <= smallest / 4.0,
            "Reversal::new: held-out set too large"
        );
        let mut task = Self {
            symbols,
            min_len,
            max_len,
            held_out: Vec::new(),
            held_set: HashSet::new(),
        };
        while task.held_out.len() < held_out {
            let s = task.draw(rng);
            if task.held_set.insert(s.clone()) {
                task.held_out.push(s);
            }
        }
        task
    }

    fn draw_len<R: Rng + ?Sized>(&self, len: usize, rng: &mut R) -> Vec<usize> {
        (0..len)
            .map(|_| rng.random_range(0..self.symbols))
            .collect()
    }

    fn draw<R: Rng + ?Sized>(&self, rng: &mut R) -> Vec<usize> {
        let len = rng.random_range(self.min_len..=self.max_len);
        self.draw_len(len, rng)
    }

    /// The right output: `src` reversed.
    pub fn target(&self, src: &[usize]) -> Vec<usize> {
        src.iter().rev().copied().collect()
    }

    /// The known alignment: output position `t` reads input position `n - 1 - t`.
    pub fn aligned_source(&self, n: usize, t: usize) -> usize {
        n - 1 - t
    }

    /// Number of symbols.
    pub fn symbols(&self) -> usize {
        self.symbols
    }

    /// Shortest and longest length.
    pub fn lengths(&self) -> (usize, usize) {
        (self.min_len, self.max_len)
    }

    /// `size` training pairs of one length (uniform in `min_len..=max_len`), never a held-out
    /// input.
    pub fn batch<R: Rng + ?Sized>(&self, size: usize, rng: &mut R) -> Batch {
        let len = rng.random_range(self.min_len..=self.max_len);
        let mut src = Vec::with_capacity(size);
        while src.len() < size {
            let s = self.draw_len(len, rng);
            if !self.held_set.contains(&s) {
                src.push(s);
            }
        }
        let tgt = src.iter().map(|s| self.target(s)).collect();
        Batch { src, tgt }
    }

    /// The held-out inputs.
    pub fn held_out(&self) -> &[Vec<usize>] {
        &self.held_out
    }

    /// Whether `src` is a held-out input.
    pub fn is_held_out(&self, src: &[usize]) -> bool {
        self.held_set.contains(src)
    }

    /// Share of `inputs` whose greedy decoding equals the target symbol for symbol.
    pub fn exact_match(&self, model: &TinyTransformer, inputs: &[Vec<usize>]) -> f64 {
        let right = inputs
            .iter()
            .filter(|s| model.greedy_decode(s, s.len()).tokens == self.target(s))
            .count();
        right as f64 / inputs.len().max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    #[test]
    fn held_out_is_disjoint_and_deterministic() {
        let a = Reversal::new(3, 3, 4, 6, &mut StdRng::seed_from_u64(1));
        let b = Reversal::new(3, 3, 4, 6, &mut StdRng::seed_from_u64(1));
        assert_eq!(a.held_out(), b.held_out());
        let set: HashSet<_> = a.held_out().iter().collect();
        assert_eq!(set.len(), 6);
        let mut rng = StdRng::seed_from_u64(2);
        for _ in 0..200 {
            let batch = a.batch(8, &mut rng);
            let n = batch.src[0].len();
            assert!((3..=4).contains(&n));
            for (s, t) in batch.src.iter().zip(&batch.tgt) {
                assert_eq!(s.len(), n);
                assert!(!a.is_held_out(s));
                assert_eq!(t[0], s[a.aligned_source(n, 0)]);
            }
        }
    }

    #[test]
    #[should_panic(expected = "held-out set too large")]
    fn too_many_held_out_panics() {
        let _ = Reversal::new(2, 2, 3, 2, &mut StdRng::seed_from_u64(0));
    }
}
