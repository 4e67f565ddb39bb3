//! The `lab` object every experiment block sees.
//!
//! It owns the chapter's seeded RNG and accumulates the [`ChapterResults`] that the runner
//! writes out at the end. Mistakes an author can make here (a bad or duplicate name, a ragged
//! table, a chart that fails to render) panic: the runner reports a panic at the Markdown line
//! of the block, and `#[track_caller]` makes that line the call in the block, not a line in
//! this crate.

use std::collections::HashSet;
use std::fmt::Display;
use std::panic::Location;

use lab_protocol::{ChapterResults, Figure, Number, Table, Value};
use rand::SeedableRng;
use rand::rngs::StdRng;

use crate::bench;
use crate::chart::Chart;
use crate::random::RandnShape;
use crate::value::{IntoValue, NameIndex, check_name};

mod seeds;

pub use seeds::Run;

/// The experiment context of one chapter: seeded RNG, named values, tables, figures, timing.
pub struct Lab {
    results: ChapterResults,
    rng: StdRng,
    block: usize,
    value_names: NameIndex,
    table_names: HashSet<String>,
    figure_names: HashSet<String>,
    /// The families `lab.seeds` ran, which must be unique as value names are.
    seed_families: HashSet<String>,
    /// The parameters declared so far and their value in this run.
    params: Vec<(String, f64)>,
}

impl Lab {
    /// A fresh context for `chapter`, its RNG seeded with `seed`.
    pub fn new(chapter: &str, seed: u64) -> Self {
        Lab {
            results: ChapterResults {
                chapter: chapter.to_owned(),
                seed,
                isa: attention::kernel_level().to_owned(),
                ..ChapterResults::default()
            },
            rng: StdRng::seed_from_u64(seed),
            block: 0,
            value_names: NameIndex::default(),
            table_names: HashSet::new(),
            figure_names: HashSet::new(),
            seed_families: HashSet::new(),
            params: Vec::new(),
        }
    }

    /// Declares the parameter `name` of a block's `param="name: ...; default v"` option (the
    /// generated code calls this as the block starts): its value in this run is the grid point
    /// attnbook set in [`lab_protocol::PARAM_ENV`] for it, or `default`.
    pub fn declare_param(&mut self, name: &str, default: f64) {
        let set = std::env::var(lab_protocol::PARAM_ENV).ok().and_then(|v| {
            let (n, x) = v.split_once('=')?;
            (n == name).then(|| x.parse::<f64>().ok()).flatten()
        });
        self.params.retain(|(n, _)| n != name);
        self.params.push((name.to_owned(), set.unwrap_or(default)));
    }

    /// The value of the parameter `name` in this run: the default of its `param="..."` fence
    /// option, or the grid point attnbook runs the chapter at.
    ///
    /// # Panics
    ///
    /// If no block run so far declares `name`.
    #[track_caller]
    pub fn param(&self, name: &str) -> f64 {
        match self.params.iter().find(|(n, _)| n == name) {
            Some((_, x)) => *x,
            None => {
                let known: Vec<&str> = self.params.iter().map(|(n, _)| n.as_str()).collect();
                let known = if known.is_empty() {
                    "no block run so far declares a parameter (`param=\"name: v1, v2; default v\"` in the fence)".to_owned()
                } else {
                    format!("declared: {}", known.join(", "))
                };
                panic!("unknown parameter `{name}`: {known}")
            }
        }
    }

    /// Announces that block `index` starts, so the generator attributes the output that
    /// follows to it and times it against the block's own timeout.
    pub fn begin_block(&mut self, index: usize) {
        crate::control::block_starts(index);
        self.block = index;
        self.results.blocks_started += 1;
    }

    /// The index of the block that runs now (0 before the first `begin_block`).
    pub fn current_block(&self) -> usize {
        self.block
    }

    /// The chapter's seeded random number generator.
    pub fn rng(&mut self) -> &mut StdRng {
        &mut self.rng
    }

    /// Standard-normal samples of a shape: `randn(32)` is an `Array1<f64>`, `randn((7, 32))` an
    /// `Array2<f64>` with 7 rows.
    pub fn randn<S: RandnShape>(&mut self, shape: S) -> S::Output {
        shape.randn(&mut self.rng)
    }

    /// Records a named value: a number, a vector (quoted as `name.0`, `name.1`, ...) or a
    /// matrix (`name.i.j`).
    ///
    /// # Panics
    ///
    /// If the name is malformed or already used in this chapter.
    #[track_caller]
    pub fn value(&mut self, name: &str, x: impl IntoValue) {
        let (shape, data) = x.into_value();
        self.record_value(name, shape, data, false);
    }

    /// Times `f` (warm-up, batches of a few milliseconds, up to 21 of them in about 0.3 s of
    /// CPU time), records the nanoseconds per call of the fastest batch as the volatile value
    /// `name` and returns it. What is counted is the calling thread's CPU time
    /// ([`thread_cpu_time`](crate::thread_cpu_time)), so time spent waiting for a core that
    /// another process holds is not.
    ///
    /// # Panics
    ///
    /// If the name is malformed or already used in this chapter.
    #[track_caller]
    pub fn bench<R>(&mut self, name: &str, f: impl FnMut() -> R) -> f64 {
        // Check the name first: a typo should not cost the measuring time.
        fail(check_name(name).map_err(|e| format!("value name: {e}")));
        let ns = bench::best_ns(f);
        self.record_value(name, Vec::new(), vec![ns], true);
        ns
    }

    /// Records a table of preformatted cells, placed in the prose by `{{table: name}}`; give it
    /// a caption with `.caption("...")` on what this returns. A header or caption may hold
    /// inline TeX between `$` signs (`"$U_a h_j$"`), which the page renders like the prose's.
    ///
    /// # Panics
    ///
    /// If the name is malformed or taken by another table, or a row's length differs from the
    /// number of headers.
    #[track_caller]
    pub fn table<H, R>(&mut self, name: &str, headers: H, rows: R) -> TableCaption<'_>
    where
        H: IntoIterator,
        H::Item: Display,
        R: IntoIterator,
        R::Item: IntoIterator,
        <R::Item as IntoIterator>::Item: Display,
    {
        claim(&mut self.table_names, "table", name);
        let headers: Vec<String> = headers.into_iter().map(|h| h.to_string()).collect();
        let rows: Vec<Vec<String>> = rows
            .into_iter()
            .map(|row| row.into_iter().map(|cell| cell.to_string()).collect())
            .collect();
        if let Some((i, row)) = rows
            .iter()
            .enumerate()
            .find(|(_, r)| r.len() != headers.len())
        {
            panic!(
                "table `{name}`: row {i} has {} cells but there are {} headers",
                row.len(),
                headers.len()
            );
        }
        let block = self.block;
        self.results.tables.push(Table {
            name: name.to_owned(),
            block,
            headers,
            rows,
            caption: None,
        });
        let table = self.results.tables.last_mut().expect("just pushed");
        TableCaption { table }
    }

    /// Renders `chart` to SVG and records it as figure `name` with `caption` (also its alt
    /// text).
    ///
    /// # Panics
    ///
    /// If the name is malformed or taken by another figure, or the chart fails to render.
    #[track_caller]
    pub fn figure(&mut self, name: &str, caption: &str, chart: impl Chart) {
        claim(&mut self.figure_names, "figure", name);
        // A `match`, not `unwrap_or_else`: a closure would not carry `#[track_caller]`.
        let svg = match chart.to_svg(caption) {
            Ok(svg) => svg,
            Err(e) => panic!("figure `{name}` failed to render: {e}"),
        };
        let block = self.block;
        self.results.figures.push(Figure {
            name: name.to_owned(),
            block,
            caption: caption.to_owned(),
            svg,
            not_finite: chart.not_finite(),
        });
    }

    /// Everything recorded so far.
    pub fn results(&self) -> &ChapterResults {
        &self.results
    }

    /// Ends the run and hands back what it recorded.
    pub fn into_results(self) -> ChapterResults {
        self.results
    }

    /// Records a value at the location of the public call that leads here: every function
    /// between that call and this one is `#[track_caller]`, so the location is the line in
    /// the block (or in an author's `#[track_caller]` helper's caller), which the page links to.
    #[track_caller]
    fn record_value(&mut self, name: &str, shape: Vec<usize>, data: Vec<f64>, volatile: bool) {
        let at = Location::caller();
        self.record_value_at(name, shape, data, volatile, at);
    }

    /// Records a value whose provenance is `at` (a call in a `lab.seeds` run); a clash panics
    /// at the caller.
    #[track_caller]
    fn record_value_at(
        &mut self,
        name: &str,
        shape: Vec<usize>,
        data: Vec<f64>,
        volatile: bool,
        at: &'static Location<'static>,
    ) {
        fail(check_name(name).map_err(|e| format!("value name: {e}")));
        fail(self.value_names.insert(name, shape.len()));
        self.results.values.push(Value {
            name: name.to_owned(),
            block: self.block,
            shape,
            data: data.into_iter().map(Number).collect(),
            volatile,
            file: at.file().to_owned(),
            line: at.line(),
        });
    }
}

/// Takes `name` for a table or figure, panicking if it is malformed or taken.
#[track_caller]
fn claim(names: &mut HashSet<String>, kind: &str, name: &str) {
    fail(check_name(name).map_err(|e| format!("{kind} name: {e}")));
    if !names.insert(name.to_owned()) {
        panic!("{kind} `{name}` recorded twice; names must be unique within a chapter");
    }
}

/// Panics with the message of an author error.
#[track_caller]
fn fail(result: Result<(), String>) {
    if let Err(message) = result {
        panic!("{message}");
    }
}

/// The table `Lab::table` just recorded, to give a caption:
/// `lab.table("t", ["a"], [[1]]).caption("...");`.
pub struct TableCaption<'a> {
    table: &'a mut Table,
}

impl TableCaption<'_> {
    /// Sets the caption shown after the table's number.
    pub fn caption(self, caption: &str) {
        self.table.caption = Some(caption.to_owned());
    }
}
