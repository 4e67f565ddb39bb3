//! The calls DESIGN.md §3.6 promises to experiment authors, spelled exactly as an experiment
//! block spells them, on owned arrays and on views alike.

use attention::*;
use ndarray::{Array1, Axis, s};
use rand::SeedableRng;
use rand::rngs::StdRng;

#[test]
fn every_promised_call_accepts_owned_arrays_and_views() {
    let mut rng = StdRng::seed_from_u64(42);
    let s = randn1(32, &mut rng);
    let h = randn2(7, 32, &mut rng);
    let w = softmax(&dot_scores(&s, &h));
    assert_eq!(w, softmax(&dot_scores(&s.view(), &h.view())));
    assert!((w.sum() - 1.0).abs() < 1e-12);

    let scaled = scaled_dot_scores(&s, &h.slice(s![..3, ..]));
    assert_eq!(scaled.len(), 3);
    let g = general_scores(&s, &xavier_normal(32, 32, &mut rng), &h);
    assert_eq!(g.len(), 7);

    let add = Additive::new(32, 32, 16, &mut rng);
    let e = add.scores(&h.row(0), &h);
    let context = attend(&softmax(&e), &h);
    assert_eq!(context.len(), 32);
    assert!(entropy(&w) > 0.0 && entropy(&w) <= 7.0_f64.ln() + 1e-12);

    let x = h.slice(s![.., ..8]);
    let (out, weights) = scaled_dot_product_attention(&x, &x, &x, Some(&causal_mask(7)));
    assert_eq!(out.dim(), (7, 8));
    let row_sums: Array1<f64> = weights.sum_axis(Axis(1));
    assert!(row_sums.iter().all(|v| (v - 1.0).abs() < 1e-12));
    let (_, unmasked) = scaled_dot_product_attention(&x, &x, &x, None);
    assert!(unmasked[[0, 6]] > 0.0 && weights[[0, 6]] == 0.0);
}
