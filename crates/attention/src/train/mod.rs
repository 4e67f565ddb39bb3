//! Training a small Transformer from scratch: the trait of everything trainable
//! ([`params`]), layers with hand-written backward passes ([`nn`]), where positions enter
//! ([`positions`]), a one-layer encoder-decoder ([`model`]), the Adam optimiser ([`adam`])
//! and the reversal task with a held-out split ([`task`]).
//! Every backward pass is checked against central finite differences in the unit tests.

pub(crate) mod adam;
#[cfg(test)]
pub(crate) mod gradcheck;
pub(crate) mod model;
pub(crate) mod nn;
pub(crate) mod params;
pub(crate) mod positions;
pub(crate) mod task;
