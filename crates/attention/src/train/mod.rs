//! Training a small Transformer from scratch: layers with hand-written backward passes
//! ([`nn`]), where positions enter ([`positions`]), a one-layer encoder-decoder ([`model`]),
//! the Adam optimiser ([`adam`]) and the reversal task with a held-out split ([`task`]).
//! Every backward pass is checked against central finite differences in the unit tests.

pub(crate) mod adam;
pub(crate) mod model;
pub(crate) mod nn;
pub(crate) mod positions;
pub(crate) mod task;
