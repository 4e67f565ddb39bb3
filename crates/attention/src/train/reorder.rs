//! A synthetic translation task whose word order changes with the words: the test bed of
//! [`Seq2Seq`] with and without attention, scored by sentence length as in Bahdanau et al.
//! (2015, Figure 2).
//!
//! The source symbols fall into three classes, nouns, adjectives and other words. The target
//! sentence translates every word through a fixed dictionary (a permutation of the symbols)
//! and moves adjectives behind their noun, as French does: every maximal run of adjectives
//! that is directly followed by a noun becomes the noun and then the adjectives, in their
//! order. Adjectives not followed by a noun stay where they are. So the alignment is not
//! monotone, and where a word goes depends on the words around it, not on its position:
//!
//! ```text
//! source  o1 a1 a2 n1 o2 a3 o3      (a = adjective, n = noun, o = other)
//! target  o1 n1 a1 a2 o2 a3 o3      (each word then through the dictionary)
//! ```
//!
//! The held-out sentences are drawn first, the same number of each length; training batches
//! never contain them.

use std::collections::HashSet;

use rand::{Rng, RngExt};

use crate::metrics::argmax;

use super::adam::Adam;
use super::params::Params;
use super::seq2seq::Seq2Seq;
use super::task::Batch;

/// The class of a source symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WordClass {
    /// Heads a noun phrase; its adjectives follow it in the target.
    Noun,
    /// Moves behind the noun that follows its run, if one does.
    Adjective,
    /// Stays in place.
    Other,
}

/// Sizes of a [`Reordering`] task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReorderingConfig {
    /// Noun symbols (`0..nouns`).
    pub nouns: usize,
    /// Adjective symbols (the next `adjectives`).
    pub adjectives: usize,
    /// Other symbols (the rest).
    pub others: usize,
    /// Shortest sentence.
    pub min_len: usize,
    /// Longest sentence.
    pub max_len: usize,
    /// Held-out sentences of each length.
    pub held_out_per_length: usize,
}

/// Training batches and a held-out set for the reordering translation (see the module docs).
///
/// ```
/// use attention::{Reordering, ReorderingConfig, WordClass};
/// use rand::{SeedableRng, rngs::StdRng};
///
/// let config = ReorderingConfig {
///     nouns: 2, adjectives: 2, others: 2, min_len: 3, max_len: 6, held_out_per_length: 5,
/// };
/// let task = Reordering::new(config, &mut StdRng::seed_from_u64(0));
/// assert_eq!(task.class(1), WordClass::Noun);
/// assert_eq!(task.class(2), WordClass::Adjective);
/// // other, adjective, adjective, noun, adjective, other:
/// let src = [4, 2, 3, 0, 2, 5];
/// assert_eq!(task.alignment(&src), vec![0, 3, 1, 2, 4, 5]);
/// let word = |i: usize| task.translate_word(src[i]);
/// assert_eq!(task.target(&src), [0, 3, 1, 2, 4, 5].map(word).to_vec());
/// assert_eq!(task.held_out().len(), 4 * 5);
/// ```
#[derive(Debug, Clone)]
pub struct Reordering {
    config: ReorderingConfig,
    dictionary: Vec<usize>,
    held_out: Vec<Vec<usize>>,
    held_set: HashSet<Vec<usize>>,
}

/// Held-out accuracy of the sentences of one source length, or of a range of lengths
/// ([`LengthScore::pool`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LengthScore {
    /// Shortest source (and target) length scored.
    pub min_len: usize,
    /// Longest source length scored.
    pub max_len: usize,
    /// Held-out sentences scored.
    pub sentences: usize,
    /// Target symbols scored.
    pub symbols: usize,
    /// Share of sentences whose greedy translation is right symbol for symbol.
    pub exact_match: f64,
    /// Share of target symbols that are right, position by position.
    pub token_accuracy: f64,
    /// For an attention model, the share of target positions whose largest attention weight
    /// falls on the source word they translate ([`Reordering::alignment`]); `None` for the
    /// fixed vector.
    pub alignment: Option<f64>,
}

impl LengthScore {
    /// The scores of `scores` together, as if they were one set of sentences (`None` if
    /// there are none).
    pub fn pool(scores: &[LengthScore]) -> Option<Self> {
        let sentences: usize = scores.iter().map(|s| s.sentences).sum();
        let symbols: usize = scores.iter().map(|s| s.symbols).sum();
        if sentences == 0 {
            return None;
        }
        let by_sentence = |f: fn(&LengthScore) -> f64| {
            scores
                .iter()
                .map(|s| f(s) * s.sentences as f64)
                .sum::<f64>()
                / sentences as f64
        };
        let by_symbol = |f: &dyn Fn(&LengthScore) -> f64| {
            scores.iter().map(|s| f(s) * s.symbols as f64).sum::<f64>() / symbols as f64
        };
        let alignment = scores
            .iter()
            .all(|s| s.alignment.is_some())
            .then(|| by_symbol(&|s| s.alignment.unwrap_or(0.0)));
        Some(Self {
            min_len: scores.iter().map(|s| s.min_len).min()?,
            max_len: scores.iter().map(|s| s.max_len).max()?,
            sentences,
            symbols,
            exact_match: by_sentence(|s| s.exact_match),
            token_accuracy: by_symbol(&|s| s.token_accuracy),
            alignment,
        })
    }
}

/// Per-length scores pooled into buckets of `width` consecutive lengths (the last may be
/// shorter), shortest first.
///
/// # Panics
///
/// If `width == 0`.
#[track_caller]
pub fn length_buckets(scores: &[LengthScore], width: usize) -> Vec<LengthScore> {
    assert!(width > 0, "length_buckets: width must be positive");
    scores.chunks(width).filter_map(LengthScore::pool).collect()
}

/// How [`train_seq2seq`] trains.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TrainPlan {
    /// Adam updates.
    pub updates: usize,
    /// Sentences per update (all of one length, drawn per update).
    pub batch: usize,
    /// Adam's learning rate at the first update.
    pub lr: f64,
    /// The learning rate at the last update; in between it decays geometrically (equal to
    /// `lr` for a constant rate).
    pub lr_final: f64,
    /// The gradient is rescaled to this Euclidean norm when it is longer (Bahdanau et al.
    /// clip at 1); `f64::INFINITY` turns clipping off.
    pub clip: f64,
}

impl Reordering {
    /// The dictionary and the held-out sentences, drawn from `rng`.
    ///
    /// # Panics
    ///
    /// If a class is empty, `min_len == 0`, `min_len > max_len`, or the held-out sentences of
    /// one length would be more than a quarter of the sentences of the shortest length (the
    /// training side would run dry).
    #[track_caller]
    pub fn new<R: Rng + ?Sized>(config: ReorderingConfig, rng: &mut R) -> Self {
        let ReorderingConfig {
            nouns,
            adjectives,
            others,
            min_len,
            max_len,
            held_out_per_length,
        } = config;
        assert!(
            nouns > 0 && adjectives > 0 && others > 0 && min_len > 0 && min_len <= max_len,
            "Reordering::new: bad sizes"
        );
        let vocab = nouns + adjectives + others;
        let smallest = (vocab as f64).powi(min_len as i32);
        assert!(
            (held_out_per_length as f64) <= smallest / 4.0,
            "Reordering::new: held-out set too large"
        );
        let mut dictionary: Vec<usize> = (0..vocab).collect();
        for i in (1..vocab).rev() {
            dictionary.swap(i, rng.random_range(0..=i));
        }
        let mut task = Self {
            config,
            dictionary,
            held_out: Vec::new(),
            held_set: HashSet::new(),
        };
        for len in min_len..=max_len {
            let mut drawn = 0;
            while drawn < held_out_per_length {
                let s = task.draw(len, rng);
                if task.held_set.insert(s.clone()) {
                    task.held_out.push(s);
                    drawn += 1;
                }
            }
        }
        task
    }

    /// The sizes.
    pub fn config(&self) -> ReorderingConfig {
        self.config
    }

    /// Number of symbols, the same on both sides.
    pub fn vocab(&self) -> usize {
        self.dictionary.len()
    }

    /// The class of source symbol `symbol`.
    pub fn class(&self, symbol: usize) -> WordClass {
        let c = &self.config;
        if symbol < c.nouns {
            WordClass::Noun
        } else if symbol < c.nouns + c.adjectives {
            WordClass::Adjective
        } else {
            WordClass::Other
        }
    }

    /// The target symbol of source symbol `symbol`.
    pub fn translate_word(&self, symbol: usize) -> usize {
        self.dictionary[symbol]
    }

    /// For every target position, the source position it translates: the true alignment.
    pub fn alignment(&self, src: &[usize]) -> Vec<usize> {
        let mut order = Vec::with_capacity(src.len());
        let mut i = 0;
        while i < src.len() {
            let end = (i..src.len())
                .find(|&k| self.class(src[k]) != WordClass::Adjective)
                .unwrap_or(src.len());
            if end < src.len() && end > i && self.class(src[end]) == WordClass::Noun {
                order.push(end);
                order.extend(i..end);
                i = end + 1;
            } else {
                order.extend(i..end.max(i + 1));
                i = end.max(i + 1);
            }
        }
        order
    }

    /// The right translation of `src`.
    pub fn target(&self, src: &[usize]) -> Vec<usize> {
        self.alignment(src)
            .into_iter()
            .map(|j| self.translate_word(src[j]))
            .collect()
    }

    fn draw<R: Rng + ?Sized>(&self, len: usize, rng: &mut R) -> Vec<usize> {
        (0..len)
            .map(|_| rng.random_range(0..self.vocab()))
            .collect()
    }

    /// `size` training pairs of one length (uniform in `min_len..=max_len`), never a held-out
    /// sentence.
    pub fn batch<R: Rng + ?Sized>(&self, size: usize, rng: &mut R) -> Batch {
        let len = rng.random_range(self.config.min_len..=self.config.max_len);
        let mut src = Vec::with_capacity(size);
        while src.len() < size {
            let s = self.draw(len, rng);
            if !self.held_set.contains(&s) {
                src.push(s);
            }
        }
        let tgt = src.iter().map(|s| self.target(s)).collect();
        Batch { src, tgt }
    }

    /// The held-out sentences, shortest first.
    pub fn held_out(&self) -> &[Vec<usize>] {
        &self.held_out
    }

    /// Whether `src` is a held-out sentence.
    pub fn is_held_out(&self, src: &[usize]) -> bool {
        self.held_set.contains(src)
    }

    /// Greedy translations of the held-out sentences, scored per source length (shortest
    /// first). Each length is decoded as one batch.
    pub fn evaluate(&self, model: &Seq2Seq) -> Vec<LengthScore> {
        let per = self.config.held_out_per_length;
        (self.config.min_len..=self.config.max_len)
            .zip(self.held_out.chunks(per.max(1)))
            .map(|(len, src)| self.score(model, len, src))
            .collect()
    }

    fn score(&self, model: &Seq2Seq, len: usize, src: &[Vec<usize>]) -> LengthScore {
        let (mut exact, mut right, mut aligned) = (0, 0, 0);
        let outs = model.translate_batch(src, len);
        for (s, out) in src.iter().zip(&outs) {
            let want = self.target(s);
            let hits = want.iter().zip(&out.tokens).filter(|(a, b)| a == b).count();
            right += hits;
            exact += usize::from(hits == len);
            if let Some(w) = &out.weights {
                let peaks = w.rows().into_iter().map(|r| argmax(&r));
                aligned += (peaks.zip(self.alignment(s)))
                    .filter(|(p, j)| *p == Some(*j))
                    .count();
            }
        }
        let (n, symbols) = (src.len(), src.len() * len);
        let share = |k: usize, of: usize| k as f64 / of.max(1) as f64;
        LengthScore {
            min_len: len,
            max_len: len,
            sentences: n,
            symbols,
            exact_match: share(exact, n),
            token_accuracy: share(right, symbols),
            alignment: outs
                .iter()
                .all(|o| o.weights.is_some())
                .then(|| share(aligned, symbols)),
        }
    }
}

/// Trains `model` on `task` with Adam: `plan.updates` updates on fresh batches, each
/// gradient clipped to `plan.clip`. Returns the training loss of every update.
pub fn train_seq2seq<R: Rng + ?Sized>(
    model: &mut Seq2Seq,
    task: &Reordering,
    plan: &TrainPlan,
    rng: &mut R,
) -> Vec<f64> {
    let mut adam = Adam::new(model, plan.lr);
    let decay = (plan.lr_final / plan.lr).powf(1.0 / (plan.updates.max(2) - 1) as f64);
    (0..plan.updates)
        .map(|t| {
            adam.lr = plan.lr * decay.powi(t as i32);
            let batch = task.batch(plan.batch, rng);
            let (loss, mut grads) = model.loss_and_grads(&batch.src, &batch.tgt);
            clip_norm(&mut grads, plan.clip);
            adam.step(model, &grads);
            loss
        })
        .collect()
}

/// Rescales `grads` to Euclidean norm `max` if it is longer.
fn clip_norm<P: Params>(grads: &mut P, max: f64) {
    let norm = grads
        .params()
        .iter()
        .flat_map(|p| p.iter())
        .map(|v| v * v)
        .sum::<f64>()
        .sqrt();
    if norm > max {
        let scale = max / norm;
        for mut p in grads.params_mut() {
            p.mapv_inplace(|v| v * scale);
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    fn task() -> Reordering {
        let config = ReorderingConfig {
            nouns: 3,
            adjectives: 3,
            others: 2,
            min_len: 3,
            max_len: 7,
            held_out_per_length: 20,
        };
        Reordering::new(config, &mut StdRng::seed_from_u64(1))
    }

    #[test]
    fn alignments_by_hand() {
        let t = task(); // nouns 0..3, adjectives 3..6, others 6..8
        // Two adjectives before a noun move behind it; one at the end stays.
        assert_eq!(t.alignment(&[3, 4, 0, 6, 5]), vec![2, 0, 1, 3, 4]);
        // An adjective run before another adjective-less word stays; a bare noun stays.
        assert_eq!(t.alignment(&[3, 6, 1, 5, 2]), vec![0, 1, 2, 4, 3]);
        assert_eq!(t.alignment(&[0, 1, 2]), vec![0, 1, 2]);
        assert_eq!(t.alignment(&[5, 5, 5]), vec![0, 1, 2]);
    }

    #[test]
    fn the_alignment_is_a_permutation_and_depends_on_content() {
        let t = task();
        let mut rng = StdRng::seed_from_u64(2);
        let mut moved = 0;
        for _ in 0..300 {
            let batch = t.batch(4, &mut rng);
            for s in &batch.src {
                let mut a = t.alignment(s);
                moved += usize::from(a.iter().enumerate().any(|(i, &j)| i != j));
                a.sort_unstable();
                assert_eq!(a, (0..s.len()).collect::<Vec<_>>());
            }
        }
        // Some sentences reorder and some do not, at every length.
        assert!(moved > 300 && moved < 1100, "{moved} of 1200 reordered");
    }

    #[test]
    fn held_out_is_disjoint_balanced_and_deterministic() {
        let (a, b) = (task(), task());
        assert_eq!(a.held_out(), b.held_out());
        assert_eq!(a.held_out().len(), 5 * 20);
        for (len, chunk) in (3..=7).zip(a.held_out().chunks(20)) {
            assert!(chunk.iter().all(|s| s.len() == len));
        }
        let set: HashSet<_> = a.held_out().iter().collect();
        assert_eq!(set.len(), 100);
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..200 {
            let batch = a.batch(8, &mut rng);
            let n = batch.src[0].len();
            assert!((3..=7).contains(&n));
            for (s, t) in batch.src.iter().zip(&batch.tgt) {
                assert_eq!(s.len(), n);
                assert!(!a.is_held_out(s));
                assert_eq!(t, &a.target(s));
            }
        }
    }

    #[test]
    #[should_panic(expected = "held-out set too large")]
    fn too_many_held_out_panics() {
        let config = ReorderingConfig {
            nouns: 1,
            adjectives: 1,
            others: 1,
            min_len: 2,
            max_len: 3,
            held_out_per_length: 3,
        };
        let _ = Reordering::new(config, &mut StdRng::seed_from_u64(0));
    }

    #[test]
    fn clipping_rescales_only_long_gradients() {
        let mut g = crate::Linear {
            w: ndarray::array![[3.0, 0.0]],
            b: ndarray::array![4.0, 0.0],
        };
        clip_norm(&mut g, 10.0);
        assert_eq!(g.w[[0, 0]], 3.0);
        clip_norm(&mut g, 1.0);
        assert!((g.w[[0, 0]] - 0.6).abs() < 1e-15 && (g.b[0] - 0.8).abs() < 1e-15);
    }

    #[test]
    fn pooling_weights_sentences_and_symbols() {
        let score = |len: usize, sentences: usize, exact: f64, token: f64| LengthScore {
            min_len: len,
            max_len: len,
            sentences,
            symbols: len * sentences,
            exact_match: exact,
            token_accuracy: token,
            alignment: Some(token),
        };
        let scores = [
            score(2, 10, 1.0, 1.0),
            score(4, 10, 0.0, 0.5),
            score(5, 30, 0.5, 0.8),
        ];
        let both = LengthScore::pool(&scores[..2]).expect("sentences");
        assert_eq!((both.min_len, both.max_len, both.sentences), (2, 4, 20));
        assert_eq!(both.exact_match, 0.5);
        // 20 right of 20 symbols and 20 of 40.
        assert!((both.token_accuracy - 40.0 / 60.0).abs() < 1e-15);
        let buckets = length_buckets(&scores, 2);
        assert_eq!(buckets.len(), 2);
        assert_eq!(buckets[1], scores[2]);
        assert!(LengthScore::pool(&[]).is_none());
    }

    #[test]
    fn training_lowers_the_loss_and_evaluation_scores_every_length() {
        let config = ReorderingConfig {
            nouns: 2,
            adjectives: 2,
            others: 2,
            min_len: 3,
            max_len: 5,
            held_out_per_length: 10,
        };
        let mut rng = StdRng::seed_from_u64(4);
        let task = Reordering::new(config, &mut rng);
        let model_config = crate::Seq2SeqConfig {
            src_vocab: task.vocab(),
            tgt_vocab: task.vocab(),
            embed: 8,
            hidden: 16,
            attn: 16,
            bidirectional: false,
            context: crate::Context::Attention,
        };
        let mut model = Seq2Seq::new(model_config, &mut rng);
        let plan = TrainPlan {
            updates: 150,
            batch: 8,
            lr: 0.01,
            lr_final: 0.003,
            clip: 1.0,
        };
        let losses = train_seq2seq(&mut model, &task, &plan, &mut rng);
        let mean = |l: &[f64]| l.iter().sum::<f64>() / l.len() as f64;
        let (first, last) = (mean(&losses[..20]), mean(&losses[130..]));
        assert!(last < 0.6 * first, "loss {first} -> {last}");
        let scores = task.evaluate(&model);
        assert_eq!(
            scores.iter().map(|s| s.min_len).collect::<Vec<_>>(),
            [3, 4, 5]
        );
        for s in &scores {
            assert_eq!((s.sentences, s.symbols), (10, 10 * s.min_len));
            let alignment = s.alignment.expect("an attention model");
            assert!((0.0..=1.0).contains(&alignment));
            assert!(s.exact_match <= s.token_accuracy);
        }
    }
}
