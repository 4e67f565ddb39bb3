//! The Rust side of `bench/train/run.sh`: chapter 8's update step (forward, backward, Adam)
//! through the crate, on one thread. Not part of `cargo test`.
//!
//! ```text
//! cargo run --release -p attention --example bench_train -- export FILE [UPDATES]
//! cargo run --release -p attention --example bench_train -- time [UPDATES]
//! cargo run --release -p attention --example bench_train -- fingerprint
//! ```
//!
//! Every mode rebuilds chapter 8's state exactly as the chapter does: the chapter's seed,
//! then `Reversal::new`, the model, the small gradient-check model (which also draws from
//! the RNG), then one `task.batch(32, ..)` per update, with the chapter's learning rate
//! decaying linearly to 0 over 1000 updates.
//!
//! - `export` trains `UPDATES` (default 1000) updates and writes to `FILE` (JSON) what the
//!   JAX side needs to run the same training: the initial parameters by name, the sinusoidal
//!   table, the batches (one more than `UPDATES`, the last for evaluation), the learning
//!   rates, and the Rust results to compare against: the loss of every update, the loss of
//!   the trained parameters on the evaluation batch, the trained parameters. With 1000
//!   updates it also prints the held-out exact-match accuracies the chapter prints, so a
//!   drift from the chapter shows.
//! - `time` warms up (20 updates on a copy), then times `UPDATES` updates from the initial
//!   parameters over the same batches and prints one line: `rust<TAB>updates<TAB>wall
//!   seconds<TAB>thread CPU seconds<TAB>fingerprint of the losses`. Drawing the batches is
//!   not timed (the JAX side gets them ready-made too). With `BENCH_TRAIN_MALLOPT` set, glibc's
//!   heap is first told never to shrink (`keep_the_heap`), to measure what its page faults
//!   cost.
//! - `fingerprint` trains 40 updates of chapter 8's model with every position scheme and
//!   1, 2 and 4 key/value heads, and 30 of a model of chapter 9's sizes per scheme, and prints
//!   a hash of the losses and of the trained parameters' bits (and of a greedy decoding): a
//!   change to `src/train` that should not change any result must leave every line the same.

use std::fmt::Write as _;
use std::time::Instant;

use attention::*;
use ndarray::ArrayViewD;
use rand::SeedableRng;
use rand::rngs::StdRng;

/// Chapter 8's front matter.
const SEED: u64 = 20260620;
/// Chapter 8's training: updates, batch size, initial learning rate.
const STEPS: usize = 1000;
const BATCH: usize = 32;
const LR: f64 = 3e-3;
const WARMUP: usize = 20;

fn config(positions: Positions, kv_heads: usize) -> ModelConfig {
    ModelConfig {
        vocab: 8,
        d_model: 32,
        heads: 4,
        kv_heads,
        d_ff: 64,
        max_len: 8,
        positions,
    }
}

/// The chapter's RNG calls up to the training loop, then the training batches.
struct Setup {
    task: Reversal,
    model: TinyTransformer,
    batches: Vec<Batch>,
}

fn setup(cfg: ModelConfig, batches: usize) -> Setup {
    let mut rng = StdRng::seed_from_u64(SEED);
    let task = Reversal::new(8, 6, 8, 500, &mut rng);
    let model = TinyTransformer::new(cfg, &mut rng);
    // The gradient check's small model draws from the chapter's RNG before training starts.
    let tiny_config = ModelConfig {
        vocab: 4,
        d_model: 8,
        heads: 2,
        kv_heads: 2,
        d_ff: 8,
        max_len: 4,
        positions: Positions::Learned,
    };
    let _ = TinyTransformer::new(tiny_config, &mut rng);
    let batches = (0..batches).map(|_| task.batch(BATCH, &mut rng)).collect();
    Setup {
        task,
        model,
        batches,
    }
}

/// The chapter's schedule: `lr * (1 - (step - 1) / steps)` for `step` in `1..=steps`.
fn lr_at(step: usize) -> f64 {
    LR * (1.0 - (step - 1) as f64 / STEPS as f64)
}

/// One update as the chapter's training loop does it; returns the loss before the update.
fn update(model: &mut TinyTransformer, adam: &mut Adam, step: usize, batch: &Batch) -> f64 {
    adam.lr = lr_at(step);
    let (loss, grads) = model.loss_and_grads(&batch.src, &batch.tgt);
    adam.step(model, &grads);
    loss
}

fn train(model: &mut TinyTransformer, batches: &[Batch]) -> Vec<f64> {
    let mut adam = Adam::new(model, LR);
    (batches.iter().enumerate())
        .map(|(i, b)| update(model, &mut adam, i + 1, b))
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let updates = |i: usize| -> usize {
        args.get(i)
            .map(|s| s.parse().expect("UPDATES must be a number"))
            .unwrap_or(STEPS)
    };
    match args.first().map(String::as_str) {
        Some("export") => {
            let path = args.get(1).expect("export FILE [UPDATES]");
            export(path, updates(2));
        }
        Some("time") => time(updates(1)),
        Some("time-chapter") => {
            let chapter = args.get(1).map(String::as_str);
            time_chapter(chapter.expect("time-chapter 9|10 [UPDATES]"), updates(2));
        }
        Some("fingerprint") => fingerprint(),
        _ => {
            eprintln!(
                "usage: bench_train export FILE [UPDATES] | time [UPDATES] | \
                 time-chapter 9|10 [UPDATES] | fingerprint"
            );
            std::process::exit(2);
        }
    }
}

fn time(updates: usize) {
    if std::env::var_os("BENCH_TRAIN_MALLOPT").is_some_and(|v| !v.is_empty()) {
        keep_the_heap();
    }
    let Setup { model, batches, .. } = setup(config(Positions::Sinusoidal, 4), updates);
    let mut warm = model.clone();
    train(&mut warm, &batches[..WARMUP.min(updates)]);
    let mut model = model;
    let (start, cpu_start) = (Instant::now(), thread_cpu_seconds());
    let mut adam = Adam::new(&model, LR);
    let mut losses = Vec::with_capacity(updates);
    for (i, batch) in batches.iter().enumerate() {
        losses.push(update(&mut model, &mut adam, i + 1, batch));
    }
    let (wall, cpu) = (
        start.elapsed().as_secs_f64(),
        thread_cpu_seconds() - cpu_start,
    );
    let mut h = Fnv::default();
    losses.iter().for_each(|l| h.f64(*l));
    println!("rust\t{updates}\t{wall:.6}\t{cpu:.6}\t{:016x}", h.0);
}

/// Like `time`, with the model, batch and lengths of chapter 9's scheme comparison (`d_model`
/// 16, 2 heads, `d_ff` 32, batches of 16 of length 4 to 6) or chapter 10's (chapter 8's model
/// with lengths 4 to 6); sinusoidal positions, 4 key/value heads.
fn time_chapter(chapter: &str, updates: usize) {
    if std::env::var_os("BENCH_TRAIN_MALLOPT").is_some_and(|v| !v.is_empty()) {
        keep_the_heap();
    }
    let (cfg, batch) = match chapter {
        "9" => (
            ModelConfig {
                d_model: 16,
                heads: 2,
                kv_heads: 2,
                d_ff: 32,
                max_len: 10,
                ..config(Positions::Sinusoidal, 4)
            },
            16,
        ),
        "10" => (config(Positions::Sinusoidal, 4), 32),
        other => panic!("time-chapter: chapter 9 or 10, not {other}"),
    };
    let mut rng = StdRng::seed_from_u64(SEED);
    let task = Reversal::new(8, 4, 6, 100, &mut rng);
    let model = TinyTransformer::new(cfg, &mut rng);
    let batches: Vec<Batch> = (0..updates).map(|_| task.batch(batch, &mut rng)).collect();
    let mut warm = model.clone();
    train(&mut warm, &batches[..WARMUP.min(updates)]);
    let mut model = model;
    let (start, cpu_start) = (Instant::now(), thread_cpu_seconds());
    let losses = train(&mut model, &batches);
    let (wall, cpu) = (
        start.elapsed().as_secs_f64(),
        thread_cpu_seconds() - cpu_start,
    );
    let mut h = Fnv::default();
    losses.iter().for_each(|l| h.f64(*l));
    println!(
        "rust-ch{chapter}\t{updates}\t{wall:.6}\t{cpu:.6}\t{:016x}",
        h.0
    );
}

/// Names of the parameter tensors, in the order of `Params::params` (for the sinusoidal
/// scheme, whose position table is not trained).
fn param_names() -> Vec<String> {
    let mut names = vec!["embed".to_owned()];
    let attn = |layer: &str, names: &mut Vec<String>| {
        for w in ["w_q", "w_k", "w_v", "w_o"] {
            names.push(format!("{layer}.{w}.w"));
            names.push(format!("{layer}.{w}.b"));
        }
    };
    let ln = |layer: &str, names: &mut Vec<String>| {
        names.push(format!("{layer}.gamma"));
        names.push(format!("{layer}.beta"));
    };
    let ff = |layer: &str, names: &mut Vec<String>| {
        for l in ["l1", "l2"] {
            names.push(format!("{layer}.{l}.w"));
            names.push(format!("{layer}.{l}.b"));
        }
    };
    attn("enc_attn", &mut names);
    ln("enc_ln1", &mut names);
    ff("enc_ff", &mut names);
    ln("enc_ln2", &mut names);
    attn("dec_attn", &mut names);
    ln("dec_ln1", &mut names);
    attn("cross_attn", &mut names);
    ln("dec_ln2", &mut names);
    ff("dec_ff", &mut names);
    ln("dec_ln3", &mut names);
    names.push("out.w".to_owned());
    names.push("out.b".to_owned());
    names
}

fn export(path: &str, updates: usize) {
    let cfg = config(Positions::Sinusoidal, 4);
    let Setup {
        task,
        model,
        batches,
    } = setup(cfg, updates + 1);
    let initial = model.clone();
    let mut trained = model;
    let mut checkpoints = vec![(0, task.exact_match(&initial, task.held_out()))];
    let mut adam = Adam::new(&trained, LR);
    let mut losses = Vec::with_capacity(updates);
    for (i, batch) in batches[..updates].iter().enumerate() {
        losses.push(update(&mut trained, &mut adam, i + 1, batch));
        if updates == STEPS && [100, 200, STEPS].contains(&(i + 1)) {
            checkpoints.push((i + 1, task.exact_match(&trained, task.held_out())));
        }
    }
    let eval = &batches[updates];
    let eval_loss = trained.loss(&eval.src, &eval.tgt);
    if updates == STEPS {
        // Chapter 8 prints 0.000, 0.030, 0.204, 0.998 for these.
        for (step, acc) in &checkpoints {
            println!("update {step:>4}: exact match {acc:.3}");
        }
    }

    let mut out = String::new();
    let names = param_names();
    let params_json = |m: &TinyTransformer| -> String {
        let params = m.params();
        assert_eq!(params.len(), names.len(), "parameter names");
        let items: Vec<String> = names
            .iter()
            .zip(&params)
            .map(|(n, p)| format!("{{\"name\": \"{n}\", {}}}", tensor_json(p)))
            .collect();
        format!("[\n  {}\n]", items.join(",\n  "))
    };
    let batch_json = |b: &Batch| format!("{{\"src\": {:?}, \"tgt\": {:?}}}", b.src, b.tgt);
    let pe = sinusoidal_positions(cfg.max_len, cfg.d_model);
    write!(
        out,
        "{{\"seed\": {SEED}, \"updates\": {updates}, \"steps\": {STEPS}, \"batch\": {BATCH}, \
         \"lr\": {LR:?}, \"beta1\": 0.9, \"beta2\": 0.999, \"eps\": 1e-8, \"ln_eps\": 1e-5,\n\
         \"config\": {{\"vocab\": {}, \"d_model\": {}, \"heads\": {}, \"kv_heads\": {}, \
         \"d_ff\": {}, \"max_len\": {}}},\n\"positions\": {{{}}},\n\"lrs\": {},\n\
         \"params\": {},\n\"batches\": [\n  {}\n],\n\"rust\": {{\"losses\": {}, \
         \"eval_loss\": {eval_loss:?}, \"params\": {}}}}}\n",
        cfg.vocab,
        cfg.d_model,
        cfg.heads,
        cfg.kv_heads,
        cfg.d_ff,
        cfg.max_len,
        tensor_json(&pe.view().into_dyn()),
        floats_json((1..=updates).map(lr_at)),
        params_json(&initial),
        batches
            .iter()
            .map(batch_json)
            .collect::<Vec<_>>()
            .join(",\n  "),
        floats_json(losses.iter().copied()),
        params_json(&trained),
    )
    .expect("formatting into a String");
    std::fs::write(path, out).unwrap_or_else(|e| panic!("writing {path}: {e}"));
}

/// `"shape": [..], "data": [..]` (row-major), every number in the shortest form that reads
/// back to the same `f64`.
fn tensor_json(p: &ArrayViewD<'_, f64>) -> String {
    format!(
        "\"shape\": {:?}, \"data\": {}",
        p.shape(),
        floats_json(p.iter().copied())
    )
}

fn floats_json(xs: impl Iterator<Item = f64>) -> String {
    let items: Vec<String> = xs.map(|x| format!("{x:?}")).collect();
    format!("[{}]", items.join(", "))
}

fn fingerprint() {
    let schemes = [
        Positions::Sinusoidal,
        Positions::Learned,
        Positions::NoPositions,
        Positions::Rotary,
        Positions::Alibi,
        Positions::Relative { clip: 2 },
    ];
    for positions in schemes {
        for kv_heads in [4, 2, 1] {
            let Setup {
                mut model, batches, ..
            } = setup(config(positions, kv_heads), 40);
            let losses = train(&mut model, &batches);
            let mut h = Fnv::default();
            losses.iter().for_each(|l| h.f64(*l));
            for p in model.params() {
                p.iter().for_each(|v| h.f64(*v));
            }
            let decoded = model.greedy_decode(&batches[0].src[0], 8);
            decoded.tokens.iter().for_each(|&t| h.f64(t as f64));
            decoded
                .cross_weights
                .iter()
                .flatten()
                .for_each(|v| h.f64(*v));
            println!(
                "{positions:?} kv_heads {kv_heads}: last loss {:.17e} hash {:016x}",
                losses[losses.len() - 1],
                h.0
            );
        }
        // Chapter 9's sizes: d_model 16, 2 heads, d_ff 32, longer sequences (up to 24 x 12
        // rows, beyond one 256-deep block of the weight gradients' sum).
        let mut rng = StdRng::seed_from_u64(SEED + 9);
        let task = Reversal::new(8, 4, 12, 100, &mut rng);
        let cfg = ModelConfig {
            d_model: 16,
            heads: 2,
            kv_heads: 2,
            d_ff: 32,
            max_len: 12,
            ..config(positions, 4)
        };
        let mut model = TinyTransformer::new(cfg, &mut rng);
        let batches: Vec<Batch> = (0..30).map(|_| task.batch(24, &mut rng)).collect();
        let losses = train(&mut model, &batches);
        let mut h = Fnv::default();
        losses.iter().for_each(|l| h.f64(*l));
        model.params().iter().flatten().for_each(|v| h.f64(*v));
        println!("{positions:?} d_model 16: hash {:016x}", h.0);
    }
}

/// FNV-1a over the bits of `f64`s.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn f64(&mut self, x: f64) {
        for b in x.to_bits().to_le_bytes() {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// glibc malloc tuned so that the heap is never given back to the system: no trimming of its
/// top (by default when more than 128 KiB are free there, a threshold glibc raises to twice the
/// largest block it has mmapped so far), nothing mmapped below 32 MiB, and 16 MiB of slack per
/// growth. The update step's temporaries then reuse the same pages instead of faulting in
/// fresh zeroed ones every update. The results do not change.
fn keep_the_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    for (param, value) in [
        (libc::M_TRIM_THRESHOLD, 256 << 20),
        (libc::M_MMAP_THRESHOLD, 32 << 20),
        (libc::M_TOP_PAD, 16 << 20),
    ] {
        // SAFETY: mallopt only sets allocator parameters; called before any thread starts.
        let ok = unsafe { libc::mallopt(param, value) };
        assert_eq!(ok, 1, "mallopt({param}, {value})");
    }
}

fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write to.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
