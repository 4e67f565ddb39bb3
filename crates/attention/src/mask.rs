//! Boolean attention masks: `mask[[i, j]] == true` means query `i` may attend to key `j`.
//!
//! Masks are built separately and combined with [`combine_masks`], so a decoder can be both
//! causal and padding-aware without a dedicated function for each mix.

use ndarray::{Array2, ArrayBase, Data, Ix2, Zip};

/// Causal (look-ahead) mask: `n x n`, `true` where `j <= i` (lower triangle, diagonal included),
/// so position `i` sees itself and the past, never the future.
pub fn causal_mask(n: usize) -> Array2<bool> {
    Array2::from_shape_fn((n, n), |(i, j)| j <= i)
}

/// Key-padding mask: `n_queries x n_keys`, `true` where `j < valid_len`, so padding keys
/// `j >= valid_len` are never attended.
///
/// # Panics
///
/// If `valid_len > n_keys` (a length longer than the padded sequence is a bug upstream)
/// or `valid_len == 0` (every row would be fully masked).
#[track_caller]
pub fn padding_mask(n_queries: usize, n_keys: usize, valid_len: usize) -> Array2<bool> {
    assert!(
        valid_len <= n_keys,
        "padding_mask: valid_len {valid_len} exceeds the {n_keys} keys"
    );
    assert!(
        valid_len > 0,
        "padding_mask: valid_len 0 would mask every key"
    );
    Array2::from_shape_fn((n_queries, n_keys), |(_, j)| j < valid_len)
}

/// Element-wise logical AND: a position may be attended only if both masks allow it.
///
/// # Panics
///
/// If the shapes differ.
#[track_caller]
pub fn combine_masks<S1, S2>(a: &ArrayBase<S1, Ix2>, b: &ArrayBase<S2, Ix2>) -> Array2<bool>
where
    S1: Data<Elem = bool>,
    S2: Data<Elem = bool>,
{
    assert_eq!(a.dim(), b.dim(), "combine_masks: masks of different shapes");
    Zip::from(a).and(b).map_collect(|&x, &y| x && y)
}

#[cfg(test)]
mod tests {
    use ndarray::array;

    use super::*;

    #[test]
    fn causal_mask_is_lower_triangular() {
        let m = causal_mask(3);
        let want = array![
            [true, false, false],
            [true, true, false],
            [true, true, true]
        ];
        assert_eq!(m, want);
    }

    #[test]
    fn padding_mask_hides_trailing_keys() {
        let m = padding_mask(2, 4, 3);
        assert_eq!(
            m,
            array![[true, true, true, false], [true, true, true, false]]
        );
    }

    #[test]
    #[should_panic(expected = "valid_len 5 exceeds the 4 keys")]
    fn padding_mask_rejects_overlong_lengths() {
        let _ = padding_mask(2, 4, 5);
    }

    #[test]
    fn combined_mask_is_causal_and_unpadded() {
        let m = combine_masks(&causal_mask(3), &padding_mask(3, 3, 2));
        let want = array![
            [true, false, false],
            [true, true, false],
            [true, true, false]
        ];
        assert_eq!(m, want);
    }
}
