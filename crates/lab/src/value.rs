//! Turning what a block hands to `lab.value` into a named, shaped list of numbers.
//!
//! The results file stores every value as a shape plus row-major data, so this module only has
//! to flatten: scalars get the empty shape, vectors `[n]`, matrices `[rows, cols]`. The prose
//! quotes elements as `name.0` or `name.1.2`; [`NameIndex`] refuses names that would make such a
//! quote ambiguous.

use std::collections::HashMap;

use ndarray::{ArrayBase, ArrayRef, Data, Dimension};

/// A number type that a value can be made of (all primitive integers and floats).
pub trait Scalar: Copy {
    /// The number as an `f64` (integers beyond 2^53 round, as they would in JSON anyway).
    fn to_f64(self) -> f64;
}

macro_rules! scalar_as_f64 {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}

scalar_as_f64!(
    f64, f32, i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize
);

/// References count too, so iterating `&Array1<f64>` or `&[f64]` yields scalars.
impl<T: Scalar> Scalar for &T {
    fn to_f64(self) -> f64 {
        (*self).to_f64()
    }
}

/// Something `lab.value` can record: a scalar, a slice or vector, or an ndarray array of any
/// dimension (owned, a view, or a reference).
pub trait IntoValue {
    /// The shape (empty for a scalar) and the numbers in row-major order.
    fn into_value(self) -> (Vec<usize>, Vec<f64>);
}

impl<T: Scalar> IntoValue for T {
    fn into_value(self) -> (Vec<usize>, Vec<f64>) {
        (Vec::new(), vec![self.to_f64()])
    }
}

impl<T: Scalar> IntoValue for &[T] {
    fn into_value(self) -> (Vec<usize>, Vec<f64>) {
        (vec![self.len()], self.iter().map(|x| x.to_f64()).collect())
    }
}

impl<T: Scalar, const N: usize> IntoValue for &[T; N] {
    fn into_value(self) -> (Vec<usize>, Vec<f64>) {
        self.as_slice().into_value()
    }
}

impl<T: Scalar> IntoValue for &Vec<T> {
    fn into_value(self) -> (Vec<usize>, Vec<f64>) {
        self.as_slice().into_value()
    }
}

impl<T: Scalar> IntoValue for Vec<T> {
    fn into_value(self) -> (Vec<usize>, Vec<f64>) {
        self.as_slice().into_value()
    }
}

impl<T: Scalar, D: Dimension> IntoValue for &ArrayRef<T, D> {
    fn into_value(self) -> (Vec<usize>, Vec<f64>) {
        // `iter` walks in logical row-major order whatever the memory layout (views,
        // transposes), which is the order the protocol promises.
        (
            self.shape().to_vec(),
            self.iter().map(|x| x.to_f64()).collect(),
        )
    }
}

impl<T: Scalar, S: Data<Elem = T>, D: Dimension> IntoValue for &ArrayBase<S, D> {
    fn into_value(self) -> (Vec<usize>, Vec<f64>) {
        (**self).into_value()
    }
}

impl<T: Scalar, S: Data<Elem = T>, D: Dimension> IntoValue for ArrayBase<S, D> {
    fn into_value(self) -> (Vec<usize>, Vec<f64>) {
        (&self).into_value()
    }
}

/// Checks a value, table or figure name: dot-separated segments of `[A-Za-z0-9_-]`.
///
/// Returns the reason when the name is not acceptable.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("a name must not be empty".into());
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(format!(
            "`{name}` contains {bad:?}; names use letters, digits, `_`, `-` and `.` \
             (a `/` is only for quoting another chapter's value in the prose)"
        ));
    }
    if name.split('.').any(str::is_empty) {
        return Err(format!(
            "`{name}` has an empty segment; dots separate non-empty parts, as in `dot.w`"
        ));
    }
    Ok(())
}

/// The value names recorded so far, to catch duplicates and element-name clashes.
///
/// A vector `w` is quoted element-wise as `w.0`, `w.1`, ..., so a later scalar named `w.0`
/// (or a vector `w` after a scalar `w.0`) would make `{=w.0}` ambiguous.
#[derive(Debug, Default)]
pub(crate) struct NameIndex {
    /// Each recorded name with its rank (number of dimensions).
    ranks: HashMap<String, usize>,
    /// For each name ending in numeric segments: each prefix it extends, with the fewest
    /// numeric segments it adds to that prefix.
    numeric_prefixes: HashMap<String, usize>,
}

impl NameIndex {
    /// Records `name` with `rank` dimensions, or says why it clashes with an earlier name.
    pub(crate) fn insert(&mut self, name: &str, rank: usize) -> Result<(), String> {
        if self.ranks.contains_key(name) {
            return Err(format!(
                "value `{name}` recorded twice; names must be unique within a chapter"
            ));
        }
        for (prefix, added) in numeric_prefixes(name) {
            if self.ranks.get(prefix).is_some_and(|&r| r >= added) {
                return Err(format!(
                    "value `{name}` clashes with the elements of array value `{prefix}` \
                     (quoted as `{prefix}.0`, ...); choose another name"
                ));
            }
        }
        if self.numeric_prefixes.get(name).is_some_and(|&k| k <= rank) {
            return Err(format!(
                "array value `{name}` would have elements named like an earlier value \
                 (`{name}.0`, ...); choose another name"
            ));
        }
        self.ranks.insert(name.to_owned(), rank);
        for (prefix, added) in numeric_prefixes(name) {
            let fewest = self
                .numeric_prefixes
                .entry(prefix.to_owned())
                .or_insert(added);
            *fewest = (*fewest).min(added);
        }
        Ok(())
    }
}

/// The prefixes of `name` obtained by removing 1, 2, ... trailing all-digit segments, each with
/// the number of segments removed: `a.1.2` gives `("a.1", 1)` and `("a", 2)`.
fn numeric_prefixes(name: &str) -> Vec<(&str, usize)> {
    let mut out = Vec::new();
    let mut rest = name;
    while let Some((head, last)) = rest.rsplit_once('.') {
        if !last.bytes().all(|b| b.is_ascii_digit()) {
            break;
        }
        out.push((head, out.len() + 1));
        rest = head;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{Array1, array};

    #[test]
    fn scalars_have_empty_shape() {
        assert_eq!(2.5f64.into_value(), (vec![], vec![2.5]));
        assert_eq!(3u8.into_value(), (vec![], vec![3.0]));
        assert_eq!((-4i64).into_value(), (vec![], vec![-4.0]));
        assert_eq!(0.5f32.into_value(), (vec![], vec![0.5]));
        assert_eq!((&7usize).into_value(), (vec![], vec![7.0]));
    }

    #[test]
    fn vectors_and_slices_have_one_dimension() {
        let v = vec![1.0, 2.0];
        assert_eq!((&v).into_value(), (vec![2], vec![1.0, 2.0]));
        assert_eq!(
            (&[1.0, 2.0, 3.0]).into_value(),
            (vec![3], vec![1.0, 2.0, 3.0])
        );
        assert_eq!(v[..1].into_value(), (vec![1], vec![1.0]));
        let a: Array1<f64> = array![4.0, 5.0];
        assert_eq!((&a).into_value(), (vec![2], vec![4.0, 5.0]));
        assert_eq!((&a.view()).into_value(), (vec![2], vec![4.0, 5.0]));
        assert_eq!(a.into_value(), (vec![2], vec![4.0, 5.0]));
    }

    #[test]
    fn matrices_flatten_row_major_even_when_transposed() {
        let m = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
        assert_eq!(
            (&m).into_value(),
            (vec![2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        );
        let t = m.t();
        assert_eq!(
            (&t).into_value(),
            (vec![3, 2], vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0])
        );
    }

    #[test]
    fn names_are_dotted_segments() {
        assert!(check_name("dot.w").is_ok());
        assert!(check_name("entropy.d_k-64.512").is_ok());
        for bad in ["", ".a", "a.", "a..b", "a b", "ch/x", "注意"] {
            assert!(check_name(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn duplicate_and_element_clashes_are_refused() {
        let mut index = NameIndex::default();
        index.insert("w", 1).unwrap();
        assert!(index.insert("w", 0).unwrap_err().contains("recorded twice"));
        assert!(index.insert("w.3", 0).unwrap_err().contains("clashes"));
        // `w` is a vector, so `w.1.2` is not one of its elements.
        index.insert("w.1.2", 0).unwrap();
        index.insert("m.0", 0).unwrap();
        assert!(index.insert("m", 2).unwrap_err().contains("elements"));
        // A scalar `m` has no elements and does not clash with `m.0`.
        index.insert("m", 0).unwrap();
        index.insert("x.1.2", 0).unwrap();
        assert!(index.insert("x", 2).is_err());
        index.insert("x", 1).unwrap();
    }
}
