//! `attnbook serve`: being written (see the helper brief); returns an error until then.

use crate::cli::ServePlan;
use crate::diagnostic::Diagnostic;
use crate::site::Outcome;

/// Builds, serves and rebuilds on change.
pub fn run(plan: &ServePlan) -> Outcome {
    let mut out = Outcome {
        root: plan.build.root.clone(),
        ..Outcome::default()
    };
    out.diagnostics.push(Diagnostic::error(
        "serve is not available in this build yet",
    ));
    out
}
