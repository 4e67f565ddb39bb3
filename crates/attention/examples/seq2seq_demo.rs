//! Trains the RNN encoder-decoder with additive attention and the fixed-vector baseline on
//! the reordering translation task, five seeds each, and prints held-out accuracy by source
//! length and the CPU time of every training: Bahdanau et al.'s Figure 2 at toy scale. Not
//! part of `cargo test`.
//!
//! ```text
//! cargo run --release -p attention --example seq2seq_demo
//! ```
//!
//! Per model and seed: token accuracy, exact match and (attention only) the share of target
//! positions whose largest attention weight is on the source word they translate, for every
//! source length 3..=12 and for buckets of two lengths. Times are the thread's CPU seconds
//! (training, then greedy evaluation of the 500 held-out sentences).

use attention::*;
use rand::SeedableRng;
use rand::rngs::StdRng;

const SEEDS: u64 = 5;

const TASK: ReorderingConfig = ReorderingConfig {
    nouns: 4,
    adjectives: 4,
    others: 4,
    min_len: 3,
    max_len: 12,
    held_out_per_length: 50,
};

const PLAN: TrainPlan = TrainPlan {
    updates: 1200,
    batch: 8,
    lr: 0.01,
    lr_final: 0.001,
    clip: 1.0,
};

fn model_config(task: &Reordering, context: Context) -> Seq2SeqConfig {
    Seq2SeqConfig {
        src_vocab: task.vocab(),
        tgt_vocab: task.vocab(),
        embed: 16,
        hidden: 32,
        attn: 32,
        bidirectional: false,
        context,
    }
}

fn main() {
    println!("kernels: {}; {PLAN:?}", kernel_level());
    let (mut train_total, mut eval_total) = (0.0, 0.0);
    let mut longest = Vec::new();
    for seed in 0..SEEDS {
        // Both models of a seed see the same task, the same initial RNG state and the same
        // training batches.
        let task = Reordering::new(TASK, &mut StdRng::seed_from_u64(seed));
        for context in [Context::Attention, Context::FinalState] {
            let mut rng = StdRng::seed_from_u64(1000 + seed);
            let mut model = Seq2Seq::new(model_config(&task, context), &mut rng);
            let start = thread_cpu_seconds();
            let losses = train_seq2seq(&mut model, &task, &PLAN, &mut rng);
            let trained = thread_cpu_seconds();
            let scores = task.evaluate(&model);
            let evaluated = thread_cpu_seconds();
            train_total += trained - start;
            eval_total += evaluated - trained;
            let tail = &losses[losses.len() - 50..];
            println!(
                "\nseed {seed} {context:?}: {} parameters, train {:.2} s, eval {:.2} s, \
                 mean loss of the last 50 updates {:.3}",
                model.param_count(),
                trained - start,
                evaluated - trained,
                tail.iter().sum::<f64>() / tail.len() as f64
            );
            print_table(&scores);
            let buckets = length_buckets(&scores, 2);
            print_table(&buckets);
            longest.push((seed, context, *buckets.last().expect("a bucket")));
        }
    }
    println!("\nlongest bucket (source length 11-12), token accuracy / exact match:");
    for (seed, context, s) in &longest {
        println!(
            "  seed {seed} {context:?}: {:.3} / {:.3}",
            s.token_accuracy, s.exact_match
        );
    }
    println!(
        "\nCPU: training {train_total:.2} s, evaluation {eval_total:.2} s, total {:.2} s \
         for {} trainings",
        train_total + eval_total,
        2 * SEEDS
    );
}

fn print_table(scores: &[LengthScore]) {
    let cells =
        |f: &dyn Fn(&LengthScore) -> String| scores.iter().map(f).collect::<Vec<_>>().join(" ");
    let lens = cells(&|s| match s.min_len == s.max_len {
        true => format!("{:>5}", s.min_len),
        false => format!("{:>5}", format!("{}-{}", s.min_len, s.max_len)),
    });
    println!("  length {lens}");
    println!(
        "  token  {}",
        cells(&|s| format!("{:5.2}", s.token_accuracy))
    );
    println!("  exact  {}", cells(&|s| format!("{:5.2}", s.exact_match)));
    if scores.iter().all(|s| s.alignment.is_some()) {
        let align = |s: &LengthScore| format!("{:5.2}", s.alignment.unwrap_or(f64::NAN));
        println!("  align  {}", cells(&align));
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
