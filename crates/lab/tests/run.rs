//! A chapter run end to end through `run_chapter`, as the generated binary runs it: blocks,
//! values, tables, figures, timing, a panic, and the JSON the generator reads back.

use lab::lab_protocol::{ChapterResults, Number};
use lab::prelude::*;
use lab::run_chapter;

/// What a generated chapter module looks like: blocks in one scope, each announced.
fn chapter(lab: &mut Lab) {
    lab.begin_block(0);
    let s = lab.randn(4);
    let h = lab.randn((3, 4));
    let w = softmax(&dot_scores(&s, &h));
    println!("weights {w:.3}");
    lab.value("dot.w", &w);
    lab.value("dot.entropy", entropy(&w));
    lab.value("h", &h);
    lab.begin_block(1);
    lab.table(
        "sizes",
        ["d", "熵"],
        [8, 16].map(|d| vec![d.to_string(), format!("{:.2}", (d as f64).ln())]),
    )
    .caption("每个维度 $d$ 下的熵");
    lab.figure(
        "w",
        "注意力权重",
        Bar::new(["我", "爱", "你"], &w).y_label("权重"),
    );
    lab.bench("dot.ns", || softmax(&dot_scores(&s, &h)));
}

fn panicking_chapter(lab: &mut Lab) {
    lab.begin_block(0);
    lab.value("before", 1.0);
    lab.begin_block(1);
    lab.value("line", line!() + 1);
    lab.value("before", 2.0);
    lab.value("after", 3.0);
}

fn value<'a>(results: &'a ChapterResults, name: &str) -> &'a lab::lab_protocol::Value {
    results
        .values
        .iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no value {name}"))
}

#[test]
fn a_chapter_records_values_tables_figures_and_timings() {
    let results = run_chapter("01-why", 7, chapter);
    assert_eq!(results.chapter, "01-why");
    assert_eq!(results.seed, 7);
    assert_eq!(results.blocks_started, 2);
    assert_eq!(results.panic, None);

    let w = value(&results, "dot.w");
    assert_eq!(
        (w.shape.as_slice(), w.block, w.volatile),
        (&[3][..], 0, false)
    );
    let total: f64 = w.data.iter().map(|n| n.0).sum();
    assert!((total - 1.0).abs() < 1e-12, "softmax sums to {total}");
    assert_eq!(value(&results, "dot.entropy").shape, Vec::<usize>::new());
    assert_eq!(value(&results, "h").shape, [3, 4]);

    let table = &results.tables[0];
    assert_eq!((table.name.as_str(), table.block), ("sizes", 1));
    assert_eq!(table.headers, ["d", "熵"]);
    assert_eq!(table.rows, [["8", "2.08"], ["16", "2.77"]]);
    assert_eq!(table.caption.as_deref(), Some("每个维度 $d$ 下的熵"));

    let figure = &results.figures[0];
    assert_eq!(
        (figure.name.as_str(), figure.caption.as_str(), figure.block),
        ("w", "注意力权重", 1)
    );
    assert!(figure.svg.contains("<title>注意力权重</title>") && figure.svg.contains(">\n我\n<"));

    let ns = value(&results, "dot.ns");
    assert!(ns.volatile && ns.block == 1);
    assert!(
        ns.data[0].0 > 0.0 && ns.data[0].0 < 1e7,
        "{} ns",
        ns.data[0].0
    );
}

#[test]
fn the_same_seed_gives_the_same_numbers() {
    let a = run_chapter("x", 42, chapter);
    let b = run_chapter("x", 42, chapter);
    let c = run_chapter("x", 43, chapter);
    assert_eq!(value(&a, "h").data, value(&b, "h").data);
    assert_ne!(value(&a, "h").data, value(&c, "h").data);
    // Timing aside, two runs produce the same bytes (what makes builds deterministic).
    assert_eq!(a.figures, b.figures);
}

#[test]
fn results_survive_a_json_round_trip() {
    let mut results = run_chapter("01-why", 7, chapter);
    results.values[0].data[0] = Number(f64::INFINITY);
    let json = serde_json::to_string(&results).unwrap();
    let back: ChapterResults = serde_json::from_str(&json).unwrap();
    assert_eq!(back, results);
}

#[test]
fn a_panic_is_recorded_with_its_block_line_and_earlier_values() {
    let results = run_chapter("02-bad", 1, panicking_chapter);
    let panic = results.panic.as_ref().expect("the chapter panicked");
    assert_eq!(panic.block, 1);
    assert_eq!(
        panic.message,
        "value `before` recorded twice; names must be unique within a chapter"
    );
    // `#[track_caller]` puts the panic at the block's line, not inside the lab crate.
    assert!(panic.file.ends_with("run.rs"), "{}", panic.file);
    assert_eq!(f64::from(panic.line), value(&results, "line").data[0].0);
    // The column of a method call is that of the method name: `    lab.value(` has it at 9.
    assert_eq!(panic.column, 9);
    let names: Vec<&str> = results.values.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["before", "line"]);
    assert_eq!(results.blocks_started, 2);
}

#[test]
fn a_bad_name_or_ragged_table_panics_with_a_clear_message() {
    let bad = run_chapter("x", 1, |lab| lab.value("dot..w", 1.0));
    assert!(
        bad.panic
            .unwrap()
            .message
            .contains("`dot..w` has an empty segment")
    );
    let ragged = run_chapter("x", 1, |lab| {
        lab.table("t", ["a", "b"], [["1"]]);
    });
    assert_eq!(
        ragged.panic.unwrap().message,
        "table `t`: row 0 has 1 cells but there are 2 headers"
    );
    let failing = run_chapter("x", 1, |lab| {
        lab.figure(
            "f",
            "c",
            Line::new().series("s", [0.0, 1.0], [1.0, 2.0]).log_x(),
        );
    });
    let message = failing.panic.unwrap().message;
    assert!(
        message.starts_with("figure `f` failed to render: the x axis is logarithmic"),
        "{message}"
    );
}

#[test]
#[should_panic(expected = "value `x` recorded twice; names must be unique within a chapter")]
fn duplicate_value_names_panic() {
    let mut lab = Lab::new("x", 1);
    lab.value("x", 1.0);
    lab.value("x", [1.0, 2.0].as_slice());
}

#[test]
#[allow(
    clippy::needless_borrows_for_generic_args,
    reason = "blocks write `&v.view()` and `&vec`; this checks those forms are accepted"
)]
fn values_accept_the_usual_shapes() {
    let mut lab = Lab::new("x", 1);
    let v = array![1.0, 2.0];
    lab.value("owned", &v);
    lab.value("view", &v.view());
    lab.value("slice", v.as_slice().unwrap());
    lab.value("vec", &vec![1.0, 2.0]);
    lab.value("array", &[1.0, 2.0]);
    lab.value("int", 3usize);
    lab.value("single", 0.5f32);
    lab.value("matrix", &array![[1.0, 2.0], [3.0, 4.0]]);
    let results = lab.into_results();
    for name in ["owned", "view", "slice", "vec", "array"] {
        assert_eq!(
            value(&results, name).data,
            [Number(1.0), Number(2.0)],
            "{name}"
        );
    }
    assert_eq!(value(&results, "int").data, [Number(3.0)]);
    assert_eq!(value(&results, "matrix").shape, [2, 2]);
    assert_eq!(value(&results, "matrix").data[2], Number(3.0));
}

#[test]
fn the_rng_is_usable_from_blocks() {
    let mut lab = Lab::new("x", 5);
    let x: f64 = lab.rng().random();
    assert!((0.0..1.0).contains(&x));
    let additive = Additive::new(4, 4, 8, lab.rng());
    let scores = additive.scores(&lab.randn(4), &lab.randn((3, 4)));
    assert_eq!(scores.len(), 3);
}

/// An author's helper that records on its caller's behalf: with `#[track_caller]` the value is
/// attributed to the line that calls the helper.
#[track_caller]
fn record_twice(lab: &mut Lab, name: &str, x: f64) {
    lab.value(name, x * 2.0);
}

/// Every value carries the file and line of the call that recorded it (issue 16, item 2):
/// `lab.value`, `lab.bench`, and a `#[track_caller]` helper, whose caller's line counts.
#[test]
fn values_carry_the_line_that_recorded_them() {
    let mut lines = Vec::new();
    let results = run_chapter("lines", 1, |lab| {
        lab.begin_block(0);
        lines.push(line!() + 1);
        lab.value("plain", 1.0);
        lines.push(line!() + 1);
        lab.bench("timed", || 1 + 1);
        lines.push(line!() + 1);
        record_twice(lab, "helped", 2.0);
    });
    for (name, line) in ["plain", "timed", "helped"].iter().zip(&lines) {
        let v = value(&results, name);
        assert_eq!((v.file.as_str(), v.line), (file!(), *line), "{name}");
    }
    assert!(
        ["avx512", "avx2", "portable"].contains(&results.isa.as_str()),
        "the run names its instruction set: {:?}",
        results.isa
    );
}
