//! The Adam optimiser (Kingma & Ba): per-parameter step sizes from running averages of the
//! gradient and of its square, with bias correction.

use ndarray::{ArrayD, Zip};

use super::params::Params;

/// Adam state for one model: `m` and `v` per parameter tensor.
///
/// With `g` the gradient at step `t`: `m = b1 m + (1 - b1) g`, `v = b2 v + (1 - b2) g^2`,
/// `theta -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)`.
///
/// ```
/// use attention::{Adam, Linear, Params};
/// use ndarray::array;
///
/// // Minimise (w - 3)^2 for a 1 x 1 "layer".
/// let mut lin = Linear { w: array![[0.0]], b: array![0.0] };
/// let mut adam = Adam::new(&lin, 0.1);
/// for _ in 0..300 {
///     let mut g = lin.zeros_like();
///     g.w[[0, 0]] = 2.0 * (lin.w[[0, 0]] - 3.0);
///     adam.step(&mut lin, &g);
/// }
/// assert!((lin.w[[0, 0]] - 3.0).abs() < 1e-2);
/// ```
#[derive(Debug, Clone)]
pub struct Adam {
    /// Learning rate.
    pub lr: f64,
    /// Decay of the gradient average (default 0.9).
    pub beta1: f64,
    /// Decay of the squared-gradient average (default 0.999).
    pub beta2: f64,
    /// Added to the denominator (default 1e-8).
    pub eps: f64,
    t: i32,
    m: Vec<ArrayD<f64>>,
    v: Vec<ArrayD<f64>>,
}

impl Adam {
    /// Zero state for the parameters of `model`, with the default betas and `eps`.
    pub fn new<P: Params>(model: &P, lr: f64) -> Self {
        let zeros: Vec<ArrayD<f64>> = model
            .params()
            .iter()
            .map(|p| ArrayD::zeros(p.raw_dim()))
            .collect();
        Self {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            t: 0,
            m: zeros.clone(),
            v: zeros,
        }
    }

    /// Number of steps taken.
    pub fn steps(&self) -> i32 {
        self.t
    }

    /// One update of `model` with the gradients `grads`.
    ///
    /// # Panics
    ///
    /// If `model` or `grads` do not have the parameter shapes the optimiser was made for.
    #[track_caller]
    pub fn step<P: Params>(&mut self, model: &mut P, grads: &P) {
        self.t += 1;
        let (b1, b2) = (self.beta1, self.beta2);
        let c1 = 1.0 - b1.powi(self.t);
        let c2 = 1.0 - b2.powi(self.t);
        let (lr, eps) = (self.lr, self.eps);
        let grads = grads.params();
        let mut params = model.params_mut();
        assert!(
            params.len() == self.m.len() && grads.len() == self.m.len(),
            "Adam::step: not the model the optimiser was made for"
        );
        for (((p, g), m), v) in params
            .iter_mut()
            .zip(&grads)
            .zip(&mut self.m)
            .zip(&mut self.v)
        {
            assert!(
                p.shape() == m.shape() && g.shape() == m.shape(),
                "Adam::step: parameter shape"
            );
            let update = |p: &mut f64, g: f64, m: &mut f64, v: &mut f64| {
                *m = b1 * *m + (1.0 - b1) * g;
                *v = b2 * *v + (1.0 - b2) * g * g;
                *p -= lr * (*m / c1) / ((*v / c2).sqrt() + eps);
            };
            // The same update on plain slices when every tensor is in standard layout: there
            // the compiler knows they do not overlap and vectorises the divisions and square
            // roots, which are correctly rounded either way, so the result is the same.
            match (
                p.as_slice_mut(),
                g.as_slice(),
                m.as_slice_mut(),
                v.as_slice_mut(),
            ) {
                (Some(p), Some(g), Some(m), Some(v)) => {
                    for (((p, &g), m), v) in p.iter_mut().zip(g).zip(m).zip(v) {
                        update(p, g, m, v);
                    }
                }
                _ => Zip::from(p)
                    .and(g)
                    .and(m)
                    .and(v)
                    .for_each(|p, &g, m, v| update(p, g, m, v)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use ndarray::array;

    use super::*;
    use crate::train::nn::Linear;

    #[test]
    fn first_step_moves_each_weight_by_lr_against_its_gradient_sign() {
        let mut lin = Linear {
            w: array![[1.0, -1.0]],
            b: array![0.0, 0.0],
        };
        let g = Linear {
            w: array![[0.5, -20.0]],
            b: array![0.0, 1e-3],
        };
        let mut adam = Adam::new(&lin, 0.01);
        adam.step(&mut lin, &g);
        assert!((lin.w[[0, 0]] - 0.99).abs() < 1e-9);
        assert!((lin.w[[0, 1]] + 0.99).abs() < 1e-9);
        assert!((lin.b[1] + 0.01).abs() < 1e-7);
        assert_eq!(lin.b[0], 0.0);
        assert_eq!(adam.steps(), 1);
    }
}
