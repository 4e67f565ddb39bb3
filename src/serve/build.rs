//! Building: one build after every change, its diagnostics printed and published to open pages.

use std::path::Path;
use std::time::Instant;

use super::live::Live;
use crate::diagnostic::{self, Diagnostic};
use crate::site::{self, BuildPlan, Outcome};

/// Builds the site, prints what happened, and tells open pages.
pub(super) fn rebuild(plan: &BuildPlan, live: &Live, verb: &str) {
    let started = Instant::now();
    live.begin_build();
    let outcome = build(plan);
    // With --timings the report has the stage times after its summary line.
    for line in outcome.report.iter().skip(1) {
        eprintln!("{line}");
    }
    let rendered = render_diagnostics(&outcome);
    eprint!("{rendered}");
    let (errors, warnings) = (
        outcome.diagnostics.error_count(),
        outcome.diagnostics.warning_count(),
    );
    if errors > 0 {
        eprintln!("build failed: {errors} error(s)");
        live.publish(Some(rendered));
    } else {
        let seconds = started.elapsed().as_secs_f64();
        match warnings {
            0 => eprintln!("{verb} in {seconds:.2}s"),
            n => eprintln!("{verb} in {seconds:.2}s, {n} warning(s)"),
        }
        live.publish(None);
    }
}

/// One build; a panic in it becomes an error on the page instead of ending the server.
fn build(plan: &BuildPlan) -> Outcome {
    std::panic::catch_unwind(|| site::build(plan)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let mut out = Outcome {
            root: plan.root.clone(),
            ..Outcome::default()
        };
        out.diagnostics.push(
            Diagnostic::error(format!("the build panicked: {message}")).with_help(
                "this is a bug in attnbook; the server keeps running and retries on the next save",
            ),
        );
        out
    })
}

/// The diagnostics as `main` prints them, with source snippets.
fn render_diagnostics(outcome: &Outcome) -> String {
    let sources = |path: &Path| match &outcome.sources {
        Some(series) => series.source_of(path),
        None => std::fs::read_to_string(outcome.root.join(path)).ok(),
    };
    diagnostic::render(&outcome.diagnostics.sorted(), &sources)
}
