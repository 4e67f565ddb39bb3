//! The shape of the binary the generator emits, for trying the runner by hand:
//! `cargo run -p lab --example chapter -- 01-why 42 /tmp/results.json` (exit 0), or with
//! `02-panic` (exit 101; the results file still holds the panic).

#[allow(
    unused,
    reason = "generated modules import the prelude whether or not they use it"
)]
use lab::prelude::*;

fn ch_01_why(lab: &mut lab::Lab) {
    lab.begin_block(0);
    let s = lab.randn(32);
    let h = lab.randn((7, 32));
    let w = softmax(&dot_scores(&s, &h));
    println!("Dot product weights: {w:.3}");
    lab.value("dot.w", &w);
    lab.begin_block(1);
    let ns = lab.bench("dot.ns", || softmax(&dot_scores(&s, &h)));
    println!("{ns:.0} ns per call");
}

fn ch_02_panic(lab: &mut lab::Lab) {
    lab.begin_block(0);
    lab.value("x", 1.0);
    lab.begin_block(1);
    let v = array![1.0, 2.0];
    println!("{}", v[5]);
}

fn main() {
    lab::run_main(&[
        ("01-why", ch_01_why as lab::ChapterFn),
        ("02-panic", ch_02_panic as lab::ChapterFn),
    ]);
}
