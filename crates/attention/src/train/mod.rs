//! Training models from scratch. Shared by all: the trait of everything trainable
//! ([`params`]), the Adam optimiser ([`adam`]) and, in the tests, central-difference checks of
//! every backward pass (`gradcheck`).
//!
//! - A small Transformer: layers with hand-written backward passes ([`nn`]), where positions
//!   enter ([`positions`]), a one-layer encoder-decoder ([`model`]) and the reversal task with
//!   a held-out split ([`task`]); the whole model with `N` layers per side, scaled
//!   embeddings and a tied output projection, post-LN or pre-LN ([`transformer`]).
//! - The RNN encoder-decoder of Bahdanau et al.: the GRU with backpropagation through time
//!   ([`gru`]), additive attention over a batch of annotations ([`bahdanau`]), the model with
//!   attention or with the fixed-vector context ([`seq2seq`]), and a translation task with
//!   content-dependent reordering, scored by sentence length ([`reorder`]).

pub(crate) mod adam;
pub(crate) mod bahdanau;
#[cfg(test)]
pub(crate) mod gradcheck;
pub(crate) mod gru;
pub(crate) mod model;
pub(crate) mod nn;
pub(crate) mod params;
pub(crate) mod positions;
pub(crate) mod reorder;
pub(crate) mod seq2seq;
pub(crate) mod task;
pub(crate) mod transformer;
