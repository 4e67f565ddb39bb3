//! `lab.seeds` through `run_chapter`, as a block uses it: the names it records, their values
//! and provenance, determinism, panics in a run, and the mistakes it refuses.

use std::collections::HashSet;

use lab::lab_protocol::{ChapterResults, Number, Value};
use lab::prelude::*;
use lab::run_chapter;

fn value<'a>(results: &'a ChapterResults, name: &str) -> &'a Value {
    results
        .values
        .iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no value {name}"))
}

fn data(results: &ChapterResults, name: &str) -> Vec<f64> {
    value(results, name).data.iter().map(|n| n.0).collect()
}

fn names(results: &ChapterResults) -> Vec<&str> {
    results.values.iter().map(|v| v.name.as_str()).collect()
}

/// A small "training run": an accuracy and a three-step curve from the run's RNG.
fn train(run: &mut Run) -> Vec<f64> {
    let noise: f64 = run.rng().random();
    let curve = vec![1.0 - noise, 0.5 - noise / 2.0, 0.25];
    run.value("acc", 0.8 + 0.1 * noise);
    run.value("curve", &curve);
    curve
}

#[test]
fn a_family_records_every_seed_then_its_summaries() {
    let mut curves = Vec::new();
    let results = run_chapter("c", 11, |lab| {
        lab.begin_block(0);
        lab.value("before", 1.0);
        lab.begin_block(1);
        curves = lab.seeds("mqa", 5, train);
    });
    assert_eq!(results.panic, None);
    let mut expected = vec!["before".to_owned()];
    for name in ["acc", "curve"] {
        expected.extend((0..5).map(|i| format!("mqa.{name}.seed.{i}")));
        expected.extend(["mean", "min", "max", "std", "count"].map(|s| format!("mqa.{name}.{s}")));
    }
    assert_eq!(names(&results), expected);

    // Per-seed values are what the runs computed, in seed order, as the outputs are.
    let accs: Vec<f64> = (0..5)
        .map(|i| data(&results, &format!("mqa.acc.seed.{i}"))[0])
        .collect();
    for (i, curve) in curves.iter().enumerate() {
        assert_eq!(accs[i], 0.8 + 0.1 * (1.0 - curve[0]));
        assert_eq!(data(&results, &format!("mqa.curve.seed.{i}")), *curve);
    }
    assert_eq!(
        HashSet::<u64>::from_iter(accs.iter().map(|a| a.to_bits())).len(),
        5
    );

    // Summaries, computed here the textbook way: sample standard deviation (n - 1).
    let mean = accs.iter().sum::<f64>() / 5.0;
    let std = (accs.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / 4.0).sqrt();
    assert_eq!(data(&results, "mqa.acc.mean"), [mean]);
    assert_eq!(
        data(&results, "mqa.acc.min"),
        [accs.iter().copied().fold(f64::MAX, f64::min)]
    );
    assert_eq!(
        data(&results, "mqa.acc.max"),
        [accs.iter().copied().fold(f64::MIN, f64::max)]
    );
    assert_eq!(data(&results, "mqa.acc.std"), [std]);
    assert_eq!(data(&results, "mqa.acc.count"), [5.0]);
    assert!(value(&results, "mqa.acc.mean").shape.is_empty());

    // A vector is summarised element by element and keeps its shape.
    let curve_mean = value(&results, "mqa.curve.mean");
    assert_eq!(curve_mean.shape, [3]);
    let step1: Vec<f64> = curves.iter().map(|c| c[1]).collect();
    assert_eq!(curve_mean.data[1], Number(step1.iter().sum::<f64>() / 5.0));
    assert_eq!(data(&results, "mqa.curve.max")[2], 0.25);
    assert_eq!(
        value(&results, "mqa.curve.count").shape,
        Vec::<usize>::new()
    );
    assert!(
        results.values[1..]
            .iter()
            .all(|v| v.block == 1 && !v.volatile)
    );
}

/// The runs depend on the chapter seed, the family and the index; not on the chapter RNG's
/// state, nor on anything else recorded around them.
#[test]
fn runs_depend_on_the_chapter_seed_the_family_and_the_index_only() {
    let draw = |run: &mut Run| (run.seed(), run.rng().random::<u64>());
    let plain = run_and_return(5, |lab| lab.seeds("a", 4, draw));
    let after_draws = run_and_return(5, |lab| {
        let _: f64 = lab.rng().random();
        let x = lab.randn(3);
        lab.value("x", &x);
        lab.seeds("a", 4, draw)
    });
    assert_eq!(plain, after_draws);
    assert_ne!(plain, run_and_return(6, |lab| lab.seeds("a", 4, draw)));
    assert_ne!(plain, run_and_return(5, |lab| lab.seeds("b", 4, draw)));
    // Each run's RNG is `StdRng::seed_from_u64(run.seed())`, and the seeds differ.
    for (seed, first) in &plain {
        assert_eq!(StdRng::seed_from_u64(*seed).random::<u64>(), *first);
    }
    assert_eq!(
        HashSet::<u64>::from_iter(plain.iter().map(|p| p.0)).len(),
        4
    );
    // A family of more runs starts with the same runs.
    assert_eq!(run_and_return(5, |lab| lab.seeds("a", 6, draw))[..4], plain);
}

fn run_and_return<R>(seed: u64, f: impl FnOnce(&mut Lab) -> R) -> R {
    let mut out = None;
    let results = run_chapter("c", seed, |lab| out = Some(f(lab)));
    assert_eq!(results.panic, None);
    out.unwrap()
}

/// The runs share a bounded pool of threads: never more than the cores, never the caller's.
#[test]
fn runs_use_at_most_one_thread_per_core() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let caller = std::thread::current().id();
    let threads = run_and_return(1, |lab| {
        lab.seeds("t", 3 * cores + 1, |_| {
            let me = std::thread::current();
            (me.id(), me.name().map(str::to_owned))
        })
    });
    let distinct: HashSet<_> = threads.iter().map(|(id, _)| *id).collect();
    assert!(
        distinct.len() <= cores,
        "{} threads on {cores} cores",
        distinct.len()
    );
    assert!(!distinct.contains(&caller));
    assert!(
        threads
            .iter()
            .all(|(_, name)| name.as_deref() == Some("lab.seeds t"))
    );
}

#[test]
fn every_value_keeps_the_line_of_its_run_value_call() {
    let results = run_chapter("c", 1, |lab| {
        lab.seeds("p", 3, |run| {
            let line = line!() + 1;
            run.value("x", run.index());
            line
        });
    });
    let line = results.values[0].line;
    assert!(line > 0);
    for v in &results.values {
        assert_eq!((v.file.as_str(), v.line), (file!(), line), "{}", v.name);
    }
}

/// A panic in a run is the block's panic: the lowest-numbered failing run's message, at the
/// line in the run that panicked; the family records nothing, earlier values stay.
#[test]
fn a_panicking_run_is_reported_at_its_line_in_the_block() {
    let results = run_chapter("c", 1, |lab| {
        lab.begin_block(0);
        lab.value("before", 1.0);
        lab.begin_block(1);
        lab.seeds("mqa", 6, |run| {
            run.value("acc", 0.5);
            if run.index() % 2 == 1 && run.index() > 1 {
                let line = line!() + 1;
                panic!("diverged at line {line}");
            }
        });
        lab.value("after", 2.0);
    });
    let panic = results.panic.clone().expect("the block panicked");
    let (message, line) = panic.message.split_once(" at line ").unwrap();
    assert_eq!(message, "run 3 of `mqa`: diverged");
    assert_eq!(
        (panic.file.as_str(), panic.line),
        (file!(), line.parse().unwrap())
    );
    assert_eq!(panic.column, 17);
    assert_eq!(panic.block, 1);
    assert_eq!(names(&results), ["before"]);
}

/// A panic that a run catches itself is not a failure of the run.
#[test]
fn a_panic_caught_inside_a_run_is_not_the_run_s() {
    let results = run_chapter("c", 1, |lab| {
        lab.seeds("ok", 2, |run| {
            let caught = std::panic::catch_unwind(|| panic!("handled inside the run"));
            run.value("caught", f64::from(u8::from(caught.is_err())));
        });
    });
    assert_eq!(results.panic, None);
    assert_eq!(data(&results, "ok.caught.mean"), [1.0]);
}

/// Mistakes are reported at the `lab.seeds` call.
#[test]
fn mistakes_are_reported_at_the_call() {
    let message = |f: fn(&mut Lab)| {
        let results = run_chapter("c", 1, f);
        let panic = results.panic.expect("a mistake panics");
        assert_eq!(panic.file, file!(), "{}", panic.message);
        panic.message
    };
    assert_eq!(
        message(|lab| {
            lab.seeds("a", 2, |_| ());
            lab.seeds("a", 2, |_| ());
        }),
        "seed family `a` run twice; family names must be unique within a chapter"
    );
    assert!(message(|lab| drop(lab.seeds("a..b", 2, |_| ()))).contains("empty segment"));
    assert!(message(|lab| drop(lab.seeds("a", 0, |_| ()))).contains("at least one run"));
    assert_eq!(
        message(|lab| drop(lab.seeds("a", 3, |run| {
            if run.index() != 1 {
                run.value("x", 1.0);
            }
        }))),
        "run 1 did not record `x`, which run 0 did; every run of a family must record the \
         same values"
    );
    assert!(
        message(|lab| drop(lab.seeds("a", 3, |run| {
            run.value("x", 1.0);
            if run.index() == 2 {
                run.value("y", 1.0);
            }
        })))
        .starts_with("run 2 recorded `y`, which run 0 did not")
    );
    assert_eq!(
        message(|lab| drop(lab.seeds("a", 2, |run| {
            run.value("v", vec![0.0; run.index() + 1]);
        }))),
        "run 1 recorded `v` with shape [2] but run 0 with shape [1]"
    );
    // A name the family would record, taken before.
    assert!(
        message(|lab| {
            lab.value("a.x.mean", 1.0);
            lab.seeds("a", 2, |run| run.value("x", 1.0));
        })
        .starts_with("value `a.x.mean` recorded twice")
    );
    // A vector `a.x.seed` would have elements `a.x.seed.0`, ...: ambiguous with run 0.
    assert!(
        message(|lab| {
            lab.value("a.x.seed", &[1.0, 2.0]);
            lab.seeds("a", 2, |run| run.value("x", 1.0));
        })
        .contains("clashes with the elements of array value `a.x.seed`")
    );
}

/// Within a run, a name twice or a malformed one is the run's panic, at its line.
#[test]
fn a_bad_name_in_a_run_panics_in_the_run() {
    let results = run_chapter("c", 1, |lab| {
        lab.seeds("a", 2, |run| {
            run.value("x", 1.0);
            run.value("x", 2.0);
        });
    });
    let panic = results.panic.as_ref().unwrap();
    assert_eq!(
        panic.message,
        "run 0 of `a`: value `x` recorded twice in one run; names must be unique within a run"
    );
    assert_eq!(panic.file, file!());
    let results = run_chapter("c", 1, |lab| {
        drop(lab.seeds("a", 1, |run| run.value("x/y", 1.0)))
    });
    assert!(
        results
            .panic
            .unwrap()
            .message
            .starts_with("run 0 of `a`: value name: `x/y`")
    );
}

/// Names that extend other names are fine as long as no quote is ambiguous: a scalar `mqa.acc`
/// and the family's `mqa.acc.mean` are different values.
#[test]
fn a_scalar_named_like_the_family_prefix_is_allowed() {
    let results = run_chapter("c", 1, |lab| {
        lab.value("mqa.acc", 0.5);
        lab.seeds("mqa", 2, |run| run.value("acc", 1.0));
    });
    assert_eq!(results.panic, None);
    assert_eq!(data(&results, "mqa.acc"), [0.5]);
    assert_eq!(data(&results, "mqa.acc.mean"), [1.0]);
    // One run: its sample standard deviation is undefined.
    let one = run_chapter("c", 1, |lab| {
        drop(lab.seeds("m", 1, |run| run.value("a", 2.0)))
    });
    assert!(data(&one, "m.a.std")[0].is_nan());
}
