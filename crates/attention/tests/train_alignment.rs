//! End-to-end check that the backward passes are good enough to learn with: train an
//! additive scorer by plain SGD so that query `i` attends to key `perm(i)`.

use attention::*;
use ndarray::{Array2, ArrayView1};
use rand::SeedableRng;
use rand::rngs::StdRng;

const PERM: [usize; 6] = [3, 0, 5, 1, 4, 2];

/// Mean cross-entropy of the target alignment over all queries.
fn loss(a: &Additive, queries: &Array2<f64>, keys: &Array2<f64>) -> f64 {
    let total: f64 = queries
        .rows()
        .into_iter()
        .zip(PERM)
        .map(|(s, target)| cross_entropy(&softmax(&a.scores(&s, keys)), target))
        .sum();
    total / PERM.len() as f64
}

fn sgd_step(a: &mut Additive, s: ArrayView1<'_, f64>, keys: &Array2<f64>, target: usize, lr: f64) {
    let p = softmax(&a.scores(&s, keys));
    let grads = a.backward(&s, keys, &softmax_cross_entropy_grad(&p, target));
    a.apply_grads(&grads, lr);
}

#[test]
fn sgd_learns_a_permutation_alignment() {
    let mut rng = StdRng::seed_from_u64(2024);
    let queries = randn2(6, 8, &mut rng);
    let keys = randn2(6, 8, &mut rng);
    let mut a = Additive::new(8, 8, 16, &mut rng);
    let before = loss(&a, &queries, &keys);
    for _ in 0..150 {
        for (s, target) in queries.rows().into_iter().zip(PERM) {
            sgd_step(&mut a, s, &keys, target, 0.2);
        }
    }
    let after = loss(&a, &queries, &keys);
    println!("loss {before:.4} -> {after:.6}");
    assert!(after < before / 50.0, "loss {before} -> {after}");
    for (i, s) in queries.rows().into_iter().enumerate() {
        let w = softmax(&a.scores(&s, &keys));
        assert_eq!(argmax(&w), Some(PERM[i]), "query {i}: weights {w}");
    }
}
