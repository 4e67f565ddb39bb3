//! The RNN encoder-decoder of neural machine translation, trainable end to end, in the two
//! forms Bahdanau et al. (2015) compare: with additive attention (their RNNsearch) and with
//! one fixed vector for the whole source sentence (RNNencdec, after Cho et al. 2014).
//!
//! - **Encoder**: source embeddings into a [`Gru`], optionally a second one over the reversed
//!   sentence (bidirectional, as in RNNsearch); the annotation `h_j` of position `j` is the
//!   forward state, or the forward and backward states concatenated.
//! - **Summary**: the final encoder state, `[→h_n; ←h_1]` when bidirectional. The decoder starts
//!   from `s_0 = tanh(summary W_init + b_init)` in both forms.
//! - **Context**: [`Context::Attention`] computes `c_i = sum_j a_ij h_j`,
//!   `a_ij = softmax_j(v^T tanh(W s_{i-1} + U h_j))` at every step (§3.1);
//!   [`Context::FinalState`] uses `c_i = summary` at every step (the fixed-length vector).
//! - **Decoder**: a [`Gru`] whose input at step `i` is `[E y_{i-1}; c_i]` (the previous target
//!   symbol's embedding, [`Seq2Seq::bos`] at the first step, and the context), and a linear
//!   read-out `softmax([s_i; c_i; E y_{i-1}] W_out + b_out)` over the target symbols (eq. 4's
//!   `g(y_{i-1}, s_i, c_i)`, without the maxout layer).
//!
//! Training uses teacher forcing and the mean cross-entropy per target symbol
//! ([`Seq2Seq::loss_and_grads`]); every backward pass is written by hand and checked against
//! central differences. Evaluation decodes greedily ([`Seq2Seq::translate`]) and returns the
//! attention weights of every step for a heatmap.
//!
//! A batch holds sentences of one source length and targets of one length; inside, every
//! layer works step after step on `batch` rows at a time (see [`gru`](super::gru)).

use ndarray::{Array2, ArrayView2, ArrayViewD, ArrayViewMut2, ArrayViewMutD, Axis, s};
use rand::Rng;

use crate::additive::Additive;
use crate::error::AttentionError;
use crate::matmul::general_mat_mul;
use crate::metrics::argmax;

use super::bahdanau::{AttentionBackward, AttentionRun};
use super::gru::{Gru, GruCache, GruGrads};
use super::nn::{Embedding, Linear, softmax_cross_entropy};
use super::params::Params;

/// What the decoder reads from the source at each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// Additive attention over the annotations, recomputed at every step (RNNsearch).
    Attention,
    /// The final encoder state, the same at every step (RNNencdec): the fixed-length vector
    /// the whole sentence must fit into.
    FinalState,
}

/// Sizes of a [`Seq2Seq`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seq2SeqConfig {
    /// Source symbols `0..src_vocab`.
    pub src_vocab: usize,
    /// Target symbols `0..tgt_vocab` (the start symbol comes on top).
    pub tgt_vocab: usize,
    /// Width of the source and the target embeddings.
    pub embed: usize,
    /// State width of every GRU (per direction in the encoder).
    pub hidden: usize,
    /// Hidden width `d_attn` of the additive scorer (unused by [`Context::FinalState`]).
    pub attn: usize,
    /// Whether the encoder also reads the sentence backwards.
    pub bidirectional: bool,
    /// Attention or the fixed vector.
    pub context: Context,
}

impl Seq2SeqConfig {
    /// Width of an annotation and of the context: `hidden`, twice that if bidirectional.
    pub fn annotation_width(&self) -> usize {
        self.hidden * if self.bidirectional { 2 } else { 1 }
    }
}

/// An RNN encoder-decoder with additive attention or with the fixed-vector context (see the
/// module docs).
///
/// ```
/// use attention::{Context, Seq2Seq, Seq2SeqConfig};
/// use rand::{SeedableRng, rngs::StdRng};
///
/// let config = Seq2SeqConfig {
///     src_vocab: 6, tgt_vocab: 5, embed: 4, hidden: 8, attn: 8,
///     bidirectional: true, context: Context::Attention,
/// };
/// let model = Seq2Seq::new(config, &mut StdRng::seed_from_u64(0));
/// let out = model.translate(&[1, 2, 3], 4);
/// assert_eq!(out.tokens.len(), 4);
/// let weights = out.weights.unwrap(); // target steps x source positions
/// assert_eq!(weights.dim(), (4, 3));
/// assert!(weights.rows().into_iter().all(|r| (r.sum() - 1.0).abs() < 1e-12));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Seq2Seq {
    config: Seq2SeqConfig,
    /// Source embeddings, `src_vocab x embed`.
    pub src_embed: Embedding,
    /// The encoder reading left to right, `embed -> hidden`.
    pub enc_fwd: Gru,
    /// The encoder reading right to left, if bidirectional.
    pub enc_bwd: Option<Gru>,
    /// `s_0 = tanh(summary W + b)`, `annotation width -> hidden`.
    pub init: Linear,
    /// Target embeddings, `(tgt_vocab + 1) x embed`; the last row is the start symbol.
    pub tgt_embed: Embedding,
    /// The decoder, `embed + annotation width -> hidden`.
    pub dec: Gru,
    /// The additive scorer (`W`: `attn x hidden`, `U`: `attn x annotation width`), for
    /// [`Context::Attention`].
    pub attention: Option<Additive>,
    /// Read-out, `hidden + annotation width + embed -> tgt_vocab`.
    pub out: Linear,
}

/// One decoded sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct Translation {
    /// The output symbols.
    pub tokens: Vec<usize>,
    /// For [`Context::Attention`], the weights of every step over the source positions
    /// (`tokens.len() x source length`): row `i` is what the step that produced `tokens[i]`
    /// read. `None` for the fixed vector.
    pub weights: Option<Array2<f64>>,
}

/// The encoder's side of one batch.
struct Encoded {
    batch: usize,
    /// Source symbols, step after step.
    ids: Vec<usize>,
    x: Array2<f64>,
    fwd: GruCache,
    /// The reversed input and the backward run, if bidirectional.
    bwd: Option<(Array2<f64>, GruCache)>,
    /// `(n * batch) x annotation width`.
    ann: Array2<f64>,
    /// `batch x annotation width`.
    summary: Array2<f64>,
}

/// The decoder's side of one batch.
struct Decoding {
    /// Decoder inputs (start symbol, then the previous outputs), step after step.
    ids: Vec<usize>,
    /// Their embeddings, `(m * batch) x embed`.
    emb: Array2<f64>,
    gru: GruCache,
    /// `c_i` of every step, `(m * batch) x annotation width`.
    ctx: Array2<f64>,
    attn: Option<AttentionRun>,
    /// For the fixed vector: `summary W_c` of the gates and the candidate, added at every step.
    fixed: Option<(Array2<f64>, Array2<f64>)>,
}

/// Gradients the decoder's backward pass accumulates over its steps.
struct DecoderGrads {
    /// The decoder GRU's pre-activation gradients.
    gru: GruGrads,
    /// `dL/dc_i`, step after step.
    ctx: Array2<f64>,
    /// `dL/dannotations`.
    ann: Array2<f64>,
    /// `dL/dsummary`.
    summary: Array2<f64>,
}

/// Rows of step `t` in a step-after-step matrix of `batch` rows per step.
fn rows(t: usize, batch: usize) -> std::ops::Range<usize> {
    t * batch..(t + 1) * batch
}

/// The rows of `x` with the order of the steps reversed.
fn reverse_steps(x: ArrayView2<'_, f64>, batch: usize) -> Array2<f64> {
    let n = x.nrows() / batch;
    let mut out = Array2::zeros(x.raw_dim());
    for t in 0..n {
        out.slice_mut(s![rows(n - 1 - t, batch), ..])
            .assign(&x.slice(s![rows(t, batch), ..]));
    }
    out
}

/// The symbols of `seqs` step after step; panics unless all have one positive length.
#[track_caller]
fn step_major(seqs: &[Vec<usize>], what: &str) -> (Vec<usize>, usize) {
    assert!(!seqs.is_empty(), "Seq2Seq: empty batch");
    let n = seqs[0].len();
    assert!(
        n > 0 && seqs.iter().all(|s| s.len() == n),
        "Seq2Seq: the {what} sentences of a batch must share one positive length"
    );
    let ids = (0..n)
        .flat_map(|t| seqs.iter().map(move |s| s[t]))
        .collect();
    (ids, n)
}

impl Seq2Seq {
    /// Random initialisation: standard-normal embeddings, Xavier-uniform weights, zero biases.
    ///
    /// # Panics
    ///
    /// If a size is zero; [`Seq2Seq::try_new`] returns an error instead.
    #[track_caller]
    pub fn new<R: Rng + ?Sized>(config: Seq2SeqConfig, rng: &mut R) -> Self {
        match Self::try_new(config, rng) {
            Ok(m) => m,
            Err(e) => panic!("Seq2Seq::new: {e}"),
        }
    }

    /// Like [`Seq2Seq::new`], with a zero size as an [`AttentionError::InvalidConfig`].
    pub fn try_new<R: Rng + ?Sized>(
        config: Seq2SeqConfig,
        rng: &mut R,
    ) -> Result<Self, AttentionError> {
        let Seq2SeqConfig {
            src_vocab,
            tgt_vocab,
            embed,
            hidden,
            attn,
            bidirectional,
            context,
        } = config;
        let attends = context == Context::Attention;
        if [src_vocab, tgt_vocab, embed, hidden].contains(&0) || (attends && attn == 0) {
            return Err(AttentionError::InvalidConfig(format!(
                "Seq2Seq: sizes must be positive, got {config:?}"
            )));
        }
        let c = config.annotation_width();
        Ok(Self {
            config,
            src_embed: Embedding::new(src_vocab, embed, rng),
            enc_fwd: Gru::new(embed, hidden, rng),
            enc_bwd: bidirectional.then(|| Gru::new(embed, hidden, rng)),
            init: Linear::new(c, hidden, rng),
            tgt_embed: Embedding::new(tgt_vocab + 1, embed, rng),
            dec: Gru::new(embed + c, hidden, rng),
            attention: attends.then(|| Additive::new(hidden, c, attn, rng)),
            out: Linear::new(hidden + c + embed, tgt_vocab, rng),
        })
    }

    /// The sizes.
    pub fn config(&self) -> Seq2SeqConfig {
        self.config
    }

    /// The start symbol, the decoder's first input.
    pub fn bos(&self) -> usize {
        self.config.tgt_vocab
    }

    fn widths(&self) -> (usize, usize, usize) {
        let c = &self.config;
        (c.embed, c.hidden, c.annotation_width())
    }

    fn encode(&self, src: &[Vec<usize>]) -> Encoded {
        let (ids, n) = step_major(src, "source");
        let batch = src.len();
        let (_, h, c) = self.widths();
        let x = self.src_embed.forward(&ids);
        let h0 = Array2::zeros((batch, h));
        let fwd = self.enc_fwd.forward(&x, &h0);
        let mut ann = Array2::zeros((n * batch, c));
        ann.slice_mut(s![.., ..h]).assign(fwd.outputs());
        let mut summary = Array2::zeros((batch, c));
        summary.slice_mut(s![.., ..h]).assign(&fwd.state(n - 1));
        let bwd = self.enc_bwd.as_ref().map(|gru| {
            let x_rev = reverse_steps(x.view(), batch);
            let run = gru.forward(&x_rev, &h0);
            ann.slice_mut(s![.., h..])
                .assign(&reverse_steps(run.outputs().view(), batch));
            summary.slice_mut(s![.., h..]).assign(&run.state(n - 1));
            (x_rev, run)
        });
        Encoded {
            batch,
            ids,
            x,
            fwd,
            bwd,
            ann,
            summary,
        }
    }

    /// The input weights of the decoder that read the embedding (rows `..embed`) and the
    /// context (rows `embed..`), for the gates and the candidate.
    fn dec_input_weights(&self) -> [ArrayView2<'_, f64>; 4] {
        let e = self.config.embed;
        [
            self.dec.w_gates.slice(s![..e, ..]),
            self.dec.w_cand.slice(s![..e, ..]),
            self.dec.w_gates.slice(s![e.., ..]),
            self.dec.w_cand.slice(s![e.., ..]),
        ]
    }

    /// The decoder of `m` steps for `enc`, before any step, with the decoder inputs `ids`
    /// (step after step) if they are known in advance (teacher forcing); otherwise each
    /// step's input is set by [`Seq2Seq::feed`].
    fn start_decoding(&self, enc: &Encoded, m: usize, ids: Option<Vec<usize>>) -> Decoding {
        let (e, h, c) = self.widths();
        let b = enc.batch;
        let s0 = self.init.forward(&enc.summary).mapv(f64::tanh);
        let [we_g, we_c, wc_g, wc_c] = self.dec_input_weights();
        let (ids, emb, gates, cand) = match ids {
            Some(ids) => {
                let emb = self.tgt_embed.forward(&ids);
                let gates = emb.dot(&we_g) + &self.dec.b_gates;
                let cand = emb.dot(&we_c) + &self.dec.b_cand;
                (ids, emb, gates, cand)
            }
            None => (
                Vec::with_capacity(m * b),
                Array2::zeros((m * b, e)),
                Array2::zeros((m * b, 2 * h)),
                Array2::zeros((m * b, h)),
            ),
        };
        let fixed = self
            .attention
            .is_none()
            .then(|| (enc.summary.dot(&wc_g), enc.summary.dot(&wc_c)));
        Decoding {
            ids,
            emb,
            gru: GruCache::new(s0, gates, cand),
            ctx: Array2::zeros((m * b, c)),
            attn: (self.attention.as_ref()).map(|att| AttentionRun::new(att, &enc.ann, b, m)),
            fixed,
        }
    }

    /// Sets step `i`'s decoder input to the symbols `prev` (one per sentence).
    fn feed(&self, dec: &mut Decoding, i: usize, prev: &[usize]) {
        let b = prev.len();
        dec.ids.extend_from_slice(prev);
        let mut emb = dec.emb.slice_mut(s![rows(i, b), ..]);
        for (mut row, &t) in emb.rows_mut().into_iter().zip(prev) {
            row.assign(&self.tgt_embed.table.row(t));
        }
        let [we_g, we_c, _, _] = self.dec_input_weights();
        let (mut gates, mut cand) = dec.gru.inputs_mut(i);
        gates.assign(&self.dec.b_gates);
        cand.assign(&self.dec.b_cand);
        general_mat_mul(1.0, &emb, &we_g, 1.0, &mut gates);
        general_mat_mul(1.0, &emb, &we_c, 1.0, &mut cand);
    }

    /// Decoder step `i`: the context from `s_{i-1}`, then the GRU on `[E y_{i-1}; c_i]`.
    fn step(&self, enc: &Encoded, dec: &mut Decoding, i: usize) {
        let b = enc.batch;
        let Decoding {
            gru,
            ctx,
            attn,
            fixed,
            ..
        } = dec;
        let mut ctx_i = ctx.slice_mut(s![rows(i, b), ..]);
        match (attn, self.attention.as_ref()) {
            (Some(run), Some(att)) => {
                let query = if i == 0 {
                    gru.initial().view()
                } else {
                    gru.state(i - 1)
                };
                run.step(att, &enc.ann, i, query, ctx_i.view_mut());
            }
            _ => ctx_i.assign(&enc.summary),
        }
        let [_, _, wc_g, wc_c] = self.dec_input_weights();
        let (mut gates, mut cand) = gru.inputs_mut(i);
        match fixed {
            Some((fg, fc)) => {
                gates += &*fg;
                cand += &*fc;
            }
            None => {
                general_mat_mul(1.0, &ctx_i, &wc_g, 1.0, &mut gates);
                general_mat_mul(1.0, &ctx_i, &wc_c, 1.0, &mut cand);
            }
        }
        self.dec.step(gru, i);
    }

    /// The read-out blocks of `W_out`: rows for `s_i`, `c_i` and `E y_{i-1}`.
    fn out_weights(&self) -> [ArrayView2<'_, f64>; 3] {
        let (_, h, c) = self.widths();
        [
            self.out.w.slice(s![..h, ..]),
            self.out.w.slice(s![h..h + c, ..]),
            self.out.w.slice(s![h + c.., ..]),
        ]
    }

    /// Logits of the rows `r` of the decoder's states, contexts and inputs.
    fn logits(&self, dec: &Decoding, r: std::ops::Range<usize>) -> Array2<f64> {
        let mut logits = Array2::zeros((r.len(), self.config.tgt_vocab));
        self.logits_into(dec, r, logits.view_mut());
        logits
    }

    /// [`Seq2Seq::logits`] written into `out`.
    fn logits_into(
        &self,
        dec: &Decoding,
        r: std::ops::Range<usize>,
        mut out: ArrayViewMut2<'_, f64>,
    ) {
        let [wo_s, wo_c, wo_e] = self.out_weights();
        out.assign(&self.out.b);
        let inputs = [dec.gru.outputs(), &dec.ctx, &dec.emb];
        for (input, w) in inputs.into_iter().zip([wo_s, wo_c, wo_e]) {
            general_mat_mul(1.0, &input.slice(s![r.clone(), ..]), &w, 1.0, &mut out);
        }
    }

    /// Teacher forcing: logits of every target position, step after step, the targets in the
    /// same order, and the caches.
    fn forward(
        &self,
        src: &[Vec<usize>],
        tgt: &[Vec<usize>],
    ) -> (Array2<f64>, Vec<usize>, Encoded, Decoding) {
        assert_eq!(src.len(), tgt.len(), "Seq2Seq: one target per source");
        let (targets, m) = step_major(tgt, "target");
        let enc = self.encode(src);
        let b = enc.batch;
        let inputs: Vec<usize> = std::iter::repeat_n(self.bos(), b)
            .chain(targets[..(m - 1) * b].iter().copied())
            .collect();
        let mut dec = self.start_decoding(&enc, m, Some(inputs));
        for i in 0..m {
            self.step(&enc, &mut dec, i);
        }
        (self.logits(&dec, 0..m * b), targets, enc, dec)
    }

    /// Mean cross-entropy of the target symbols under teacher forcing (nats per symbol).
    ///
    /// # Panics
    ///
    /// If the batch is empty, the sources (or the targets) differ in length, a length is zero
    /// or a symbol is out of range.
    #[track_caller]
    pub fn loss(&self, src: &[Vec<usize>], tgt: &[Vec<usize>]) -> f64 {
        let (logits, targets, _, _) = self.forward(src, tgt);
        softmax_cross_entropy(&logits, &targets).0
    }

    /// [`Seq2Seq::loss`] and its gradient with respect to every parameter (a model of zeros
    /// plus the gradients, see [`Params`]), by backpropagation through time.
    ///
    /// # Panics
    ///
    /// As [`Seq2Seq::loss`].
    #[track_caller]
    pub fn loss_and_grads(&self, src: &[Vec<usize>], tgt: &[Vec<usize>]) -> (f64, Self) {
        let (logits, targets, enc, dec) = self.forward(src, tgt);
        let (loss, g_logits) = softmax_cross_entropy(&logits, &targets);
        let mut g = self.zeros_like();
        let (d_summary, d_ann) = self.decoder_backward(&enc, &dec, &g_logits, &mut g);
        self.encoder_backward(&enc, d_summary, d_ann, &mut g);
        (loss, g)
    }

    /// Backward through the read-out, the decoder and the attention; returns `dL/dsummary`
    /// and `dL/dannotations`.
    fn decoder_backward(
        &self,
        enc: &Encoded,
        dec: &Decoding,
        g_logits: &Array2<f64>,
        g: &mut Self,
    ) -> (Array2<f64>, Array2<f64>) {
        let (g_states, g_ctx, mut g_emb) = self.readout_backward(dec, g_logits, g);
        let mut acc = DecoderGrads {
            gru: GruGrads::for_run(&dec.gru),
            ctx: g_ctx,
            ann: Array2::zeros(enc.ann.raw_dim()),
            summary: Array2::zeros(enc.summary.raw_dim()),
        };
        let d_s0 = self.through_time(enc, dec, &g_states, &mut acc, g);
        // The decoder GRU's weights; its input weights see the embeddings and the contexts.
        let d = &acc.gru;
        self.dec.weight_grads(&dec.gru, d, &mut g.dec);
        let e = self.config.embed;
        for (rows_w, input) in [(s![..e, ..], &dec.emb), (s![e.., ..], &dec.ctx)] {
            let mut gw = g.dec.w_gates.slice_mut(rows_w);
            general_mat_mul(1.0, &input.t(), &d.gates, 1.0, &mut gw);
            let mut gw = g.dec.w_cand.slice_mut(rows_w);
            general_mat_mul(1.0, &input.t(), &d.cand, 1.0, &mut gw);
        }
        let [we_g, we_c, _, _] = self.dec_input_weights();
        general_mat_mul(1.0, &d.gates, &we_g.t(), 1.0, &mut g_emb);
        general_mat_mul(1.0, &d.cand, &we_c.t(), 1.0, &mut g_emb);
        self.tgt_embed.backward(&dec.ids, &g_emb, &mut g.tgt_embed);
        // s_0 = tanh(summary W_init + b_init).
        let d_pre = d_s0 * &dec.gru.initial().mapv(|v| 1.0 - v * v);
        acc.summary += &self.init.backward(&enc.summary, &d_pre, &mut g.init);
        (acc.summary, acc.ann)
    }

    /// Backward through the read-out `[s_i; c_i; E y_{i-1}] W_out + b_out`: adds its
    /// parameters' gradients and returns the gradients of the states, the contexts and the
    /// embeddings, step after step.
    fn readout_backward(
        &self,
        dec: &Decoding,
        g_logits: &Array2<f64>,
        g: &mut Self,
    ) -> (Array2<f64>, Array2<f64>, Array2<f64>) {
        let (e, h, c) = self.widths();
        let inputs = [dec.gru.outputs(), &dec.ctx, &dec.emb];
        for (block, input) in [0..h, h..h + c, h + c..h + c + e].into_iter().zip(inputs) {
            let mut gw = g.out.w.slice_mut(s![block, ..]);
            general_mat_mul(1.0, &input.t(), g_logits, 1.0, &mut gw);
        }
        g.out.b += &g_logits.sum_axis(Axis(0));
        let [wo_s, wo_c, wo_e] = self.out_weights();
        (
            g_logits.dot(&wo_s.t()),
            g_logits.dot(&wo_c.t()),
            g_logits.dot(&wo_e.t()),
        )
    }

    /// Backpropagation through the decoder's steps, last step first: the GRU step, the
    /// context's share of its input, and the attention (or the summary, for the fixed
    /// vector). `g_states` holds the read-out's `dL/ds_i`; returns `dL/ds_0`.
    fn through_time(
        &self,
        enc: &Encoded,
        dec: &Decoding,
        g_states: &Array2<f64>,
        acc: &mut DecoderGrads,
        g: &mut Self,
    ) -> Array2<f64> {
        let b = enc.batch;
        let [_, _, wc_g, wc_c] = self.dec_input_weights();
        let mut carry = Array2::zeros((b, self.config.hidden));
        let mut attn_back = dec.attn.as_ref().map(AttentionBackward::new);
        for i in (0..dec.gru.steps()).rev() {
            carry += &g_states.slice(s![rows(i, b), ..]);
            self.dec
                .step_backward(&dec.gru, i, &mut carry, &mut acc.gru);
            let mut g_ci = acc.ctx.slice_mut(s![rows(i, b), ..]);
            let dg = acc.gru.gates.slice(s![rows(i, b), ..]);
            let dc = acc.gru.cand.slice(s![rows(i, b), ..]);
            general_mat_mul(1.0, &dg, &wc_g.t(), 1.0, &mut g_ci);
            general_mat_mul(1.0, &dc, &wc_c.t(), 1.0, &mut g_ci);
            match (&mut attn_back, &dec.attn, &self.attention, &mut g.attention) {
                (Some(back), Some(run), Some(att), Some(grads)) => {
                    let d_ctx = g_ci.view();
                    back.step(
                        run,
                        att,
                        &enc.ann,
                        i,
                        d_ctx,
                        &mut acc.ann,
                        &mut carry,
                        grads,
                    );
                }
                _ => acc.summary += &g_ci,
            }
        }
        if let (Some(back), Some(att), Some(grads)) =
            (&attn_back, &self.attention, &mut g.attention)
        {
            back.finish(
                att,
                &enc.ann,
                dec.gru.previous_states(),
                &mut acc.ann,
                grads,
            );
        }
        carry
    }

    /// Backward through the encoder from the gradients of the summary and the annotations.
    fn encoder_backward(
        &self,
        enc: &Encoded,
        d_summary: Array2<f64>,
        mut d_ann: Array2<f64>,
        g: &mut Self,
    ) {
        let h = self.config.hidden;
        let b = enc.batch;
        let n = enc.ann.nrows() / b;
        // The summary is the forward run's last state and the backward run's last state,
        // which is the backward half of the first annotation.
        let mut last = d_ann.slice_mut(s![rows(n - 1, b), ..h]);
        last += &d_summary.slice(s![.., ..h]);
        if enc.bwd.is_some() {
            let mut first = d_ann.slice_mut(s![rows(0, b), h..]);
            first += &d_summary.slice(s![.., h..]);
        }
        let (mut gx, _) = self.enc_fwd.backward(
            &enc.x,
            &enc.fwd,
            &d_ann.slice(s![.., ..h]).to_owned(),
            &mut g.enc_fwd,
        );
        if let (Some((x_rev, run)), Some(gru)) = (&enc.bwd, &self.enc_bwd) {
            let grads = g.enc_bwd.as_mut().expect("same shape as the model");
            let g_states = reverse_steps(d_ann.slice(s![.., h..]), b);
            let (gx_rev, _) = gru.backward(x_rev, run, &g_states, grads);
            gx += &reverse_steps(gx_rev.view(), b);
        }
        self.src_embed.backward(&enc.ids, &gx, &mut g.src_embed);
    }

    /// Greedy decoding of `len` symbols for each of the sentences `src` (all of one length),
    /// as one batch: each step feeds back the most probable symbol.
    ///
    /// # Panics
    ///
    /// If `src` is empty, its sentences differ in length, a length is zero or a symbol is out
    /// of range.
    #[track_caller]
    pub fn translate_batch(&self, src: &[Vec<usize>], len: usize) -> Vec<Translation> {
        assert!(len > 0, "Seq2Seq::translate_batch: len must be positive");
        let enc = self.encode(src);
        let b = enc.batch;
        let mut dec = self.start_decoding(&enc, len, None);
        let mut prev = vec![self.bos(); b];
        let mut tokens = vec![Vec::with_capacity(len); b];
        let mut logits = Array2::zeros((b, self.config.tgt_vocab));
        for i in 0..len {
            self.feed(&mut dec, i, &prev);
            self.step(&enc, &mut dec, i);
            self.logits_into(&dec, rows(i, b), logits.view_mut());
            for ((p, out), row) in prev.iter_mut().zip(&mut tokens).zip(logits.rows()) {
                *p = argmax(&row).expect("logits are finite");
                out.push(*p);
            }
        }
        tokens
            .into_iter()
            .enumerate()
            .map(|(k, tokens)| Translation {
                tokens,
                weights: dec.attn.as_ref().map(|run| run.weights_of(k)),
            })
            .collect()
    }

    /// Greedy decoding of `len` symbols for one sentence ([`Seq2Seq::translate_batch`] of
    /// one).
    ///
    /// # Panics
    ///
    /// As [`Seq2Seq::translate_batch`].
    #[track_caller]
    pub fn translate(&self, src: &[usize], len: usize) -> Translation {
        self.translate_batch(&[src.to_vec()], len)
            .pop()
            .expect("one sentence")
    }
}

impl Params for Seq2Seq {
    fn params(&self) -> Vec<ArrayViewD<'_, f64>> {
        let mut p = self.src_embed.params();
        p.extend(self.enc_fwd.params());
        p.extend(self.enc_bwd.iter().flat_map(|g| g.params()));
        p.extend(self.init.params());
        p.extend(self.tgt_embed.params());
        p.extend(self.dec.params());
        p.extend(self.attention.iter().flat_map(|a| a.params()));
        p.extend(self.out.params());
        p
    }
    fn params_mut(&mut self) -> Vec<ArrayViewMutD<'_, f64>> {
        let mut p = self.src_embed.params_mut();
        p.extend(self.enc_fwd.params_mut());
        p.extend(self.enc_bwd.iter_mut().flat_map(|g| g.params_mut()));
        p.extend(self.init.params_mut());
        p.extend(self.tgt_embed.params_mut());
        p.extend(self.dec.params_mut());
        p.extend(self.attention.iter_mut().flat_map(|a| a.params_mut()));
        p.extend(self.out.params_mut());
        p
    }
    fn zeros_like(&self) -> Self {
        Self {
            config: self.config,
            src_embed: self.src_embed.zeros_like(),
            enc_fwd: self.enc_fwd.zeros_like(),
            enc_bwd: self.enc_bwd.as_ref().map(Params::zeros_like),
            init: self.init.zeros_like(),
            tgt_embed: self.tgt_embed.zeros_like(),
            dec: self.dec.zeros_like(),
            attention: self.attention.as_ref().map(Params::zeros_like),
            out: self.out.zeros_like(),
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;
    use crate::softmax::softmax;
    use crate::train::gradcheck::check_params;

    fn tiny(context: Context, bidirectional: bool) -> Seq2Seq {
        let config = Seq2SeqConfig {
            src_vocab: 5,
            tgt_vocab: 4,
            embed: 3,
            hidden: 4,
            attn: 3,
            bidirectional,
            context,
        };
        let mut model = Seq2Seq::new(config, &mut StdRng::seed_from_u64(5));
        // Non-zero biases, so their gradients are checked away from 0.
        let mut rng = StdRng::seed_from_u64(6);
        for mut p in model.params_mut() {
            if p.iter().all(|&v| v == 0.0) {
                let noise = crate::init::randn1(p.len(), &mut rng) * 0.3;
                p.iter_mut().zip(noise).for_each(|(v, n)| *v += n);
            }
        }
        model
    }

    const FORMS: [(Context, bool); 4] = [
        (Context::Attention, true),
        (Context::Attention, false),
        (Context::FinalState, true),
        (Context::FinalState, false),
    ];

    #[test]
    fn whole_model_gradient_matches_finite_differences() {
        let src = vec![vec![0, 4, 1, 3], vec![2, 2, 0, 1]];
        let tgt = vec![vec![3, 1, 0], vec![1, 2, 2]];
        for (context, bidirectional) in FORMS {
            let model = tiny(context, bidirectional);
            let (loss, grads) = model.loss_and_grads(&src, &tgt);
            assert!((loss - model.loss(&src, &tgt)).abs() < 1e-15);
            check_params(&model, &grads, |m| m.loss(&src, &tgt));
        }
    }

    #[test]
    fn the_fixed_vector_model_has_no_attention_and_one_context() {
        let model = tiny(Context::FinalState, true);
        assert!(model.attention.is_none());
        let with = tiny(Context::Attention, true);
        assert_eq!(
            with.param_count() - model.param_count(),
            with.attention.as_ref().map_or(0, Additive::param_count)
        );
        let enc = model.encode(&[vec![1, 2, 3]]);
        let mut dec = model.start_decoding(&enc, 3, Some(vec![model.bos(), 0, 1]));
        for i in 0..3 {
            model.step(&enc, &mut dec, i);
        }
        for row in dec.ctx.rows() {
            assert_eq!(row, enc.summary.row(0));
        }
        assert!(model.translate(&[1, 2, 3], 3).weights.is_none());
    }

    #[test]
    fn the_summary_is_the_last_forward_and_the_first_backward_annotation() {
        let model = tiny(Context::Attention, true);
        let enc = model.encode(&[vec![1, 2, 3], vec![0, 4, 4]]);
        let (b, h) = (2, 4);
        let n = 3;
        let last_fwd = enc.ann.slice(s![rows(n - 1, b), ..h]);
        let first_bwd = enc.ann.slice(s![rows(0, b), h..]);
        assert_eq!(enc.summary.slice(s![.., ..h]), last_fwd);
        assert_eq!(enc.summary.slice(s![.., h..]), first_bwd);
        // A backward annotation depends on the words to its right only.
        let other = model.encode(&[vec![2, 2, 3], vec![4, 4, 4]]);
        assert_eq!(
            enc.ann.slice(s![rows(2, b), h..]).row(0),
            other.ann.slice(s![rows(2, b), h..]).row(0)
        );
        assert_ne!(
            enc.ann.slice(s![rows(2, b), ..h]).row(0),
            other.ann.slice(s![rows(2, b), ..h]).row(0)
        );
    }

    #[test]
    fn greedy_decoding_matches_teacher_forcing_on_its_own_output() {
        for (context, bidirectional) in FORMS {
            let model = tiny(context, bidirectional);
            let src = vec![vec![0, 3, 1, 4], vec![2, 2, 1, 0], vec![4, 1, 1, 3]];
            let outs = model.translate_batch(&src, 5);
            let tgt: Vec<Vec<usize>> = outs.iter().map(|o| o.tokens.clone()).collect();
            let (logits, _, _, dec) = model.forward(&src, &tgt);
            for (k, out) in outs.iter().enumerate() {
                let again: Vec<usize> = (0..5)
                    .map(|i| argmax(&logits.row(i * src.len() + k)).expect("finite"))
                    .collect();
                assert_eq!(again, out.tokens);
                // One sentence alone decodes as it does in the batch.
                let alone = model.translate(&src[k], 5);
                assert_eq!(alone.tokens, out.tokens);
                if let (Some(w), Some(run)) = (&alone.weights, &dec.attn) {
                    let teacher = run.weights_of(k);
                    assert!((w - &teacher).iter().all(|d| d.abs() < 1e-12));
                }
            }
        }
    }

    #[test]
    fn attention_weights_are_the_additive_scorer_on_the_decoder_states() {
        let model = tiny(Context::Attention, true);
        let src = vec![vec![0, 3, 1, 4]];
        let out = model.translate(&src[0], 3);
        let (_, _, enc, dec) = model.forward(&src, std::slice::from_ref(&out.tokens));
        let att = model.attention.as_ref().expect("attention");
        let weights = out.weights.expect("attention weights");
        for i in 0..3 {
            let query = if i == 0 {
                dec.gru.initial().row(0).to_owned()
            } else {
                dec.gru.state(i - 1).row(0).to_owned()
            };
            let want = softmax(&att.scores(&query, &enc.ann));
            assert!((&weights.row(i) - &want).iter().all(|d| d.abs() < 1e-12));
        }
    }

    #[test]
    #[should_panic(expected = "share one positive length")]
    fn ragged_batches_panic() {
        tiny(Context::Attention, false).loss(&[vec![0, 1], vec![0]], &[vec![1], vec![2]]);
    }

    #[test]
    fn zero_sizes_are_errors() {
        let mut config = tiny(Context::Attention, true).config();
        config.attn = 0;
        assert!(Seq2Seq::try_new(config, &mut StdRng::seed_from_u64(0)).is_err());
        config.context = Context::FinalState;
        assert!(Seq2Seq::try_new(config, &mut StdRng::seed_from_u64(0)).is_ok());
        config.hidden = 0;
        assert!(Seq2Seq::try_new(config, &mut StdRng::seed_from_u64(0)).is_err());
    }
}
