//! `lab.seeds`: one experiment repeated over several seeds, in parallel, recorded as if the runs
//! had happened one after another.
//!
//! A claim like "MQA reaches 0.84 accuracy" is only as good as its spread over seeds, and
//! training the same model five times is the slow part of a chapter, so the runs share the
//! cores. Nothing a run sees depends on which thread runs it or when: its RNG is seeded from
//! the chapter seed, the family name and its index alone, it records into its own [`Run`], and
//! the family is recorded, and its outputs returned, in seed order once every run is done. A
//! panic is re-raised as the panic of the lowest-numbered run that panicked, which is the
//! panic a sequential loop would have hit first.

use std::any::Any;
use std::collections::HashSet;
use std::num::NonZeroUsize;
use std::panic::{self, AssertUnwindSafe, Location};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use rand::SeedableRng;
use rand::rngs::StdRng;

use super::{Lab, fail};
use crate::caught::{self, PanicSeen};
use crate::random::RandnShape;
use crate::stats::{Summary, summarize_columns};
use crate::value::{IntoValue, check_name};

/// Stack of each worker thread: what a main thread usually has (`ulimit -s`), so that code
/// that runs in a block also runs in a run.
const WORKER_STACK: usize = 8 << 20;

/// Most runs in flight per core: enough that `n` runs take `n / cores` run-lengths of wall
/// time rather than `ceil(n / cores)` (5 runs on 2 cores: 2.5, not 3, with one core idle for
/// the last), few enough that a family of 40 runs does not start 40 threads at once.
const RUNS_PER_CORE: usize = 4;

/// Worker threads for `n` runs on `cores` cores: every run at once, up to [`RUNS_PER_CORE`]
/// per core. The operating system shares the cores between them; the results do not depend
/// on the count (`the_worker_count_changes_nothing`).
fn worker_count(n: usize, cores: usize) -> usize {
    n.min(RUNS_PER_CORE * cores.max(1))
}

/// One run of a [`Lab::seeds`] family: its own seeded RNG and the values it records.
///
/// Values are named relative to the family: `run.value("acc", x)` in family `mqa` records
/// `mqa.acc.seed.N` for run `N`.
pub struct Run {
    index: usize,
    seed: u64,
    rng: StdRng,
    values: Vec<RunValue>,
}

/// A value one run recorded, before it is named for the chapter.
struct RunValue {
    name: String,
    shape: Vec<usize>,
    data: Vec<f64>,
    at: &'static Location<'static>,
}

impl Run {
    fn new(index: usize, seed: u64) -> Self {
        Run {
            index,
            seed,
            rng: StdRng::seed_from_u64(seed),
            values: Vec::new(),
        }
    }

    /// This run's number, `0..n`.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The seed of this run's RNG, derived from the chapter seed, the family name and
    /// [`Run::index`]: `StdRng::seed_from_u64(run.seed())` replays the run's draws elsewhere.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// This run's random number generator.
    pub fn rng(&mut self) -> &mut StdRng {
        &mut self.rng
    }

    /// Standard-normal samples of a shape from this run's RNG, as [`Lab::randn`].
    pub fn randn<S: RandnShape>(&mut self, shape: S) -> S::Output {
        shape.randn(&mut self.rng)
    }

    /// Records a value of this run under `name`, relative to the family: a number, a vector or
    /// a matrix, as [`Lab::value`]. Every run of a family must record the same names with the
    /// same shapes. The value keeps the line of this call as its provenance.
    ///
    /// # Panics
    ///
    /// If the name is malformed or already recorded by this run.
    #[track_caller]
    pub fn value(&mut self, name: &str, x: impl IntoValue) {
        fail(check_name(name).map_err(|e| format!("value name: {e}")));
        if self.values.iter().any(|v| v.name == name) {
            panic!("value `{name}` recorded twice in one run; names must be unique within a run");
        }
        let (shape, data) = x.into_value();
        self.values.push(RunValue {
            name: name.to_owned(),
            shape,
            data,
            at: Location::caller(),
        });
    }
}

/// What became of one run: its output and values, or the panic that ended it.
type Outcome<R> = Result<(R, Vec<RunValue>), (Box<dyn Any + Send>, Option<PanicSeen>)>;

impl Lab {
    /// Runs `run` once for each of `n` seeds, in parallel, and returns what each returned, in
    /// seed order. The results are the same, bit for bit, whatever the number of cores.
    ///
    /// Run `i` gets its own [`StdRng`] ([`Run::rng`]), seeded from the chapter seed, `family`
    /// and `i` alone: not from the chapter RNG (draws before the call do not change the runs),
    /// nor from which thread runs it. A value the run records with `run.value("acc", x)` is
    /// recorded as `family.acc.seed.i` (with the line of that `run.value` call); then, for
    /// each name, in the order run 0 recorded them:
    ///
    /// | name | value |
    /// | --- | --- |
    /// | `family.acc.seed.0` ... `family.acc.seed.{n-1}` | each run's value |
    /// | `family.acc.mean` | mean over the runs |
    /// | `family.acc.min`, `family.acc.max` | smallest, largest |
    /// | `family.acc.std` | sample standard deviation (divided by `n - 1`; NaN for one run) |
    /// | `family.acc.count` | `n` |
    ///
    /// A vector or matrix value is summarised element by element (`family.curve.mean.3` is the
    /// mean of element 3). The per-run values, and only they, start with `family.acc.seed.`,
    /// so the glob `family.acc.seed.*` names them for a claim about every run. A NaN in any run
    /// makes every statistic of that element NaN.
    ///
    /// The runs share the machine's cores: up to 4 per core run at once (`min(n, 4 *
    /// available_parallelism)` worker threads, each with an 8 MiB stack, take the runs in seed
    /// order), so that 5 runs on 2 cores take two and a half runs' time, not three with a core
    /// idle for the last. So `run` is `Fn + Sync`: it may
    /// read what the block computed before but not change it (or `lab`), and hands results
    /// back by returning them. What a run prints appears in whatever order the threads print
    /// it; print from the returned values after the call instead. Thread-local measurements
    /// (`count_ops`) must be taken inside the run.
    ///
    /// ```
    /// use lab::prelude::*;
    /// let mut lab = Lab::new("demo", 7);
    /// let noises = lab.seeds("mqa", 4, |run| {
    ///     let noise: f64 = run.rng().random();
    ///     run.value("acc", 0.8 + 0.1 * noise);
    ///     noise
    /// });
    /// assert_eq!(noises.len(), 4);
    /// let names: Vec<&str> = lab.results().values.iter().map(|v| v.name.as_str()).collect();
    /// assert_eq!(names[0], "mqa.acc.seed.0");
    /// assert_eq!(names[3..], ["mqa.acc.seed.3", "mqa.acc.mean", "mqa.acc.min", "mqa.acc.max",
    ///     "mqa.acc.std", "mqa.acc.count"]);
    /// // The same chapter seed gives the same runs.
    /// let mut again = Lab::new("demo", 7);
    /// assert_eq!(again.seeds("mqa", 4, |run| run.rng().random::<f64>()), noises);
    /// ```
    ///
    /// # Panics
    ///
    /// If `family` is malformed or already run in this chapter, `n` is 0, the runs do not all
    /// record the same names and shapes, or a recorded name clashes with another value. If a
    /// run panics, this panics in its place, with the message of the lowest-numbered run that
    /// panicked, prefixed with the run (``run 2 of `mqa`: ``), at the line in `run` that
    /// panicked, and records nothing of the family.
    #[track_caller]
    pub fn seeds<R, F>(&mut self, family: &str, n: usize, run: F) -> Vec<R>
    where
        R: Send,
        F: Fn(&mut Run) -> R + Sync,
    {
        fail(check_name(family).map_err(|e| format!("seed family name: {e}")));
        if n == 0 {
            panic!("lab.seeds(\"{family}\", 0, ..): a family needs at least one run");
        }
        if !self.seed_families.insert(family.to_owned()) {
            panic!(
                "seed family `{family}` run twice; family names must be unique within a chapter"
            );
        }
        let seeds: Vec<u64> = (0..n)
            .map(|i| run_seed(self.results.seed, family, i))
            .collect();
        let mut outputs = Vec::with_capacity(n);
        let mut runs = Vec::with_capacity(n);
        let workers = worker_count(
            n,
            std::thread::available_parallelism().map_or(1, NonZeroUsize::get),
        );
        for (i, outcome) in run_all(family, &seeds, &run, workers)
            .into_iter()
            .enumerate()
        {
            match outcome {
                Ok((output, values)) => {
                    outputs.push(output);
                    runs.push(values);
                }
                Err((payload, seen)) => {
                    if let Some(seen) = seen {
                        caught::put(seen.in_context(&format!("run {i} of `{family}`")));
                    }
                    panic::resume_unwind(payload);
                }
            }
        }
        self.record_family(family, &runs);
        outputs
    }

    /// Records every run's values and their summaries (see [`Lab::seeds`]).
    #[track_caller]
    fn record_family(&mut self, family: &str, runs: &[Vec<RunValue>]) {
        fail(check_same_values(runs));
        let count = runs.len() as f64;
        for first in &runs[0] {
            let name = &first.name;
            let mut rows = Vec::with_capacity(runs.len());
            for (i, run) in runs.iter().enumerate() {
                let value = run
                    .iter()
                    .find(|v| v.name == *name)
                    .expect("checked: every run recorded every name");
                let full = format!("{family}.{name}.seed.{i}");
                self.record_value_at(
                    &full,
                    value.shape.clone(),
                    value.data.clone(),
                    false,
                    value.at,
                );
                rows.push(value.data.clone());
            }
            let summaries = summarize_columns(&rows);
            for (k, stat) in Summary::NAMES.iter().enumerate() {
                let data = summaries.iter().map(|s| s.values()[k]).collect();
                let full = format!("{family}.{name}.{stat}");
                self.record_value_at(&full, first.shape.clone(), data, false, first.at);
            }
            let full = format!("{family}.{name}.count");
            self.record_value_at(&full, Vec::new(), vec![count], false, first.at);
        }
    }
}

/// Runs `run` for every seed on `workers` scoped threads and returns the outcomes in seed
/// order, up to and including the first run that panicked.
fn run_all<R, F>(family: &str, seeds: &[u64], run: &F, workers: usize) -> Vec<Outcome<R>>
where
    R: Send,
    F: Fn(&mut Run) -> R + Sync,
{
    let n = seeds.len();
    let next = AtomicUsize::new(0);
    // The lowest index that panicked so far: runs after it need not start, as a sequential
    // loop would never have reached them. Runs before it all run (they were taken earlier).
    let first_panic = AtomicUsize::new(usize::MAX);
    let slots: Vec<Mutex<Option<Outcome<R>>>> = (0..n).map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        let worker = || {
            loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n || i > first_panic.load(Ordering::SeqCst) {
                    break;
                }
                let outcome = run_one(run, i, seeds[i]);
                if outcome.is_err() {
                    first_panic.fetch_min(i, Ordering::SeqCst);
                }
                if let Ok(mut slot) = slots[i].lock() {
                    *slot = Some(outcome);
                }
            }
        };
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                std::thread::Builder::new()
                    .name(format!("lab.seeds {family}"))
                    .stack_size(WORKER_STACK)
                    .spawn_scoped(scope, worker)
                    .unwrap_or_else(|e| panic!("cannot start a thread for `{family}`: {e}"))
            })
            .collect();
        for handle in handles {
            // A worker catches every panic of its runs, so it only ends by returning.
            if let Err(payload) = handle.join() {
                panic::resume_unwind(payload);
            }
        }
    });
    let mut outcomes = Vec::with_capacity(n);
    for slot in slots {
        let outcome = slot
            .into_inner()
            .ok()
            .flatten()
            .expect("every run up to the first panic ran");
        let failed = outcome.is_err();
        outcomes.push(outcome);
        if failed {
            break;
        }
    }
    outcomes
}

/// Runs one seed, catching its panic together with what the hook saw of it on this thread.
fn run_one<R, F>(run: &F, index: usize, seed: u64) -> Outcome<R>
where
    F: Fn(&mut Run) -> R,
{
    caught::clear();
    let mut state = Run::new(index, seed);
    // Unwind safety: after a panic the run's state is dropped, never read.
    match panic::catch_unwind(AssertUnwindSafe(|| run(&mut state))) {
        Ok(output) => Ok((output, state.values)),
        Err(payload) => Err((payload, caught::take())),
    }
}

/// Checks that every run recorded the names of run 0, with the same shapes, and no others.
fn check_same_values(runs: &[Vec<RunValue>]) -> Result<(), String> {
    let first = &runs[0];
    for (i, run) in runs.iter().enumerate().skip(1) {
        for value in first {
            match run.iter().find(|v| v.name == value.name) {
                None => {
                    return Err(format!(
                        "run {i} did not record `{}`, which run 0 did; every run of a family \
                         must record the same values",
                        value.name
                    ));
                }
                Some(other) if other.shape != value.shape => {
                    return Err(format!(
                        "run {i} recorded `{}` with shape {:?} but run 0 with shape {:?}",
                        value.name, other.shape, value.shape
                    ));
                }
                Some(_) => {}
            }
        }
        let known: HashSet<&str> = first.iter().map(|v| v.name.as_str()).collect();
        if let Some(extra) = run.iter().find(|v| !known.contains(v.name.as_str())) {
            return Err(format!(
                "run {i} recorded `{}`, which run 0 did not; every run of a family must record \
                 the same values",
                extra.name
            ));
        }
    }
    Ok(())
}

/// The seed of run `index` of `family` in a chapter seeded `chapter_seed`: FNV-1a over the
/// three (the family's bytes end with `0xff`, which no name contains, so different triples
/// hash different bytes), then SplitMix64's finaliser so that neighbouring indices give
/// unrelated seeds.
fn run_seed(chapter_seed: u64, family: &str, index: usize) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = chapter_seed
        .to_le_bytes()
        .into_iter()
        .chain(family.bytes())
        .chain([0xff])
        .chain((index as u64).to_le_bytes());
    for byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut z = hash.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    /// Run seeds are part of every published number: changing the derivation changes every
    /// chapter that uses `lab.seeds`, so it is pinned (the values were checked against an
    /// independent FNV-1a + SplitMix64 implementation).
    #[test]
    fn run_seeds_are_pinned() {
        let pinned = [
            run_seed(1, "mqa", 0),
            run_seed(1, "mqa", 1),
            run_seed(2, "mqa", 0),
            run_seed(1, "gqa", 0),
        ];
        assert_eq!(
            pinned,
            [
                17_853_402_933_817_659_934,
                3_011_601_233_039_141_043,
                4_036_965_597_361_462_044,
                6_899_451_381_080_147_317
            ],
            "update only on purpose"
        );
    }

    /// What each run returned, or the index of the run that panicked.
    fn outputs<R>(outcomes: Vec<Outcome<R>>) -> Result<Vec<(R, Vec<f64>)>, usize> {
        let mut out = Vec::new();
        for (i, outcome) in outcomes.into_iter().enumerate() {
            match outcome {
                Ok((r, values)) => out.push((r, values.into_iter().flat_map(|v| v.data).collect())),
                Err(_) => return Err(i),
            }
        }
        Ok(out)
    }

    /// Up to 4 runs per core start at once, not one per core: 5 seeds on 2 cores run side by
    /// side instead of in three rounds with a core idle in the last.
    #[test]
    fn more_runs_than_cores_run_at_once() {
        assert_eq!(worker_count(5, 2), 5);
        assert_eq!(worker_count(40, 2), 8);
        assert_eq!(worker_count(1, 8), 1);
        assert_eq!(worker_count(3, 0), 3);
        // Through the public call: every run waits until all 3 have started (3 <= 4 cores'
        // worth on any machine), which only happens when they run at once.
        let started = std::sync::atomic::AtomicUsize::new(0);
        let mut lab = Lab::new("demo", 1);
        let all_met = lab.seeds("wait", 3, |_| {
            started.fetch_add(1, Ordering::SeqCst);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while started.load(Ordering::SeqCst) < 3 && std::time::Instant::now() < deadline {
                std::thread::yield_now();
            }
            started.load(Ordering::SeqCst) == 3
        });
        assert_eq!(all_met, [true, true, true]);
    }

    /// Run 0 does the most work, so with several workers the runs finish out of order; the
    /// outcomes are the same for every worker count, and each run's draws are those of its own
    /// seed.
    #[test]
    fn the_worker_count_changes_nothing() {
        let seeds: Vec<u64> = (0..9).map(|i| run_seed(3, "w", i)).collect();
        let run = |run: &mut Run| {
            let draws = 2000 * (9 - run.index());
            let x: Vec<f64> = (0..draws).map(|_| run.rng().random()).collect();
            run.value("last", x[draws - 1]);
            (run.index(), run.seed(), x.iter().sum::<f64>())
        };
        let one = outputs(run_all("w", &seeds, &run, 1)).unwrap();
        for workers in [2, 3, 4, 9] {
            assert_eq!(
                outputs(run_all("w", &seeds, &run, workers)).unwrap(),
                one,
                "{workers}"
            );
        }
        for (i, ((index, seed, sum), last)) in one.iter().enumerate() {
            assert_eq!((*index, *seed), (i, seeds[i]));
            let mut rng = StdRng::seed_from_u64(seeds[i]);
            let x: Vec<f64> = (0..2000 * (9 - i)).map(|_| rng.random()).collect();
            assert_eq!((*sum, last[0]), (x.iter().sum::<f64>(), x[x.len() - 1]));
        }
    }

    /// Whatever the worker count, the outcome ends at the lowest-numbered run that panicked,
    /// even when a later run panics first.
    #[test]
    fn the_first_panicking_run_is_the_lowest_numbered() {
        let seeds: Vec<u64> = (0..8).map(|i| run_seed(1, "p", i)).collect();
        let run = |run: &mut Run| {
            if run.index() == 2 {
                // Panics late: run 5 panics well before it with several workers.
                let x: f64 = (0..200_000).map(|_| run.rng().random::<f64>()).sum();
                panic!("run 2 after {x}");
            }
            assert!(run.index() != 5, "run 5");
            run.index()
        };
        for workers in [1, 2, 4, 8] {
            assert_eq!(
                outputs(run_all("p", &seeds, &run, workers)).map(|_| ()),
                Err(2)
            );
        }
    }

    #[test]
    fn run_seeds_differ_by_chapter_seed_family_and_index() {
        let mut seen = HashSet::new();
        for chapter in [0, 1, 2] {
            for family in ["a", "b", "ab", "a.b"] {
                for index in 0..50 {
                    assert!(seen.insert(run_seed(chapter, family, index)));
                }
            }
        }
    }
}
