//! `attnbook`: one exit point.
//!
//! Exit codes: 0 ok, 1 verification or check failures, 2 tool or input errors.

use std::io::Write as _;
use std::process::ExitCode;

use attnbook::cli::{Cli, Plan};
use attnbook::diagnostic;
use attnbook::site::{self, Outcome};
use clap::Parser;

fn main() -> ExitCode {
    let plan = Cli::parse().into_plan();
    attnbook::interrupt::install(attnbook::lab::kill_everything);
    let outcome = match &plan {
        Plan::Build(p) => site::build(p),
        Plan::Verify(p) => site::verify(p),
        Plan::Serve(p) => attnbook::serve::run(p),
        Plan::Check(root) => site::check(root),
        Plan::New(p) => site::new_chapter(p),
        Plan::Init(p) => site::init(p),
    };
    report(&outcome)
}

fn report(outcome: &Outcome) -> ExitCode {
    attnbook::interrupt::wait_if_interrupted();
    let sorted = outcome.diagnostics.sorted();
    let sources = |path: &std::path::Path| match &outcome.sources {
        Some(series) => series.source_of(path),
        None => std::fs::read_to_string(outcome.root.join(path)).ok(),
    };
    // A closed pipe (`attnbook build | head -3`) is no reason to panic: what cannot be
    // written is dropped, and the exit status still tells the outcome.
    let _ = write!(
        std::io::stderr(),
        "{}",
        diagnostic::render(&sorted, &sources)
    );
    let mut stdout = std::io::stdout().lock();
    for line in &outcome.report {
        if writeln!(stdout, "{line}").is_err() {
            break;
        }
    }
    let (errors, warnings) = (
        outcome.diagnostics.error_count(),
        outcome.diagnostics.warning_count(),
    );
    if errors > 0 && outcome.errors_are_findings {
        let _ = writeln!(std::io::stderr(), "error: {errors} problem(s) found");
        ExitCode::from(1)
    } else if errors > 0 {
        let written = if outcome.wrote_sources {
            "only the fixes listed were written"
        } else {
            "nothing was written"
        };
        let _ = writeln!(
            std::io::stderr(),
            "error: {errors} error(s), {warnings} warning(s); {written}"
        );
        ExitCode::from(2)
    } else if outcome.failed_checks {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
