//! `attnbook check`: the site's links, references, quotes and math, without running anything.

use std::path::Path;

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::lab;
use crate::render;

use super::{Outcome, attach_runs, bind_quotes, check_placements, cite_all, load, render_math};

/// `attnbook check`: links, anchors, quotes, placements and math, without running experiments.
///
/// Names of values, figures and tables come from the last cached run of each chapter; a chapter
/// that never ran is checked for everything but those names.
pub fn check(root: &Path) -> Outcome {
    let mut out = Outcome {
        root: root.to_path_buf(),
        ..Outcome::default()
    };
    let Some(series) = load(root, true, &mut out.diagnostics) else {
        return out;
    };
    let runs = lab::last_results(&series);
    let never_ran: Vec<String> = series
        .chapters
        .iter()
        .zip(&runs)
        .filter(|(c, r)| !c.doc.experiments.is_empty() && r.is_none())
        .map(|(c, _)| c.slug.clone())
        .collect();
    let mut names = Diagnostics::default();
    let runs = lab::Runs {
        runs,
        errors: Vec::new(),
    };
    let series = attach_runs(series, runs, &mut names);
    // A quote that no longer matches the last run is a finding like an unknown name: `check`
    // runs nothing, so the cached run is the best rerun it has.
    let (series, drift) = bind_quotes(series, &mut names);
    names.extend(drift);
    check_placements(&series, &mut names);
    out.diagnostics.extend(
        names
            .into_vec()
            .into_iter()
            .filter(|d| !mentions_any(d, &never_ran)),
    );
    out.diagnostics.extend(render::links::check(&series));
    let (_, unresolved) = render::xref::resolve_all(&series);
    out.diagnostics.extend(unresolved.into_iter().filter(|d| {
        !d.help
            .as_deref()
            .is_some_and(|h| h.contains("have not run yet"))
    }));
    let (_, intro) = super::intro::render(&series, &render::highlight::Highlighter::off());
    out.diagnostics.extend(intro);
    let parsed = series
        .map_chapters(|chapters| chapters.into_iter().map(|bound| bound.ran.parsed).collect());
    let (_, bibliography_read) = cite_all(&parsed, &mut out.diagnostics);
    let _ = render_math(&parsed, &mut out.diagnostics);
    out.diagnostics.promote_warnings();
    // A bibliography that cannot be read is broken input, like a broken glossary (exit 2).
    out.errors_are_findings = bibliography_read;
    let formulas: usize = parsed.chapters.iter().map(|c| c.doc.maths.len()).sum();
    let links: usize = parsed.chapters.iter().map(|c| c.doc.links.len()).sum();
    out.report.push(format!(
        "checked {} chapter(s): {formulas} formulas, {links} links{}",
        parsed.chapters.len(),
        if never_ran.is_empty() {
            String::new()
        } else {
            format!("; never built, names unchecked: {}", never_ran.join(", "))
        }
    ));
    out.sources = Some(parsed.sources());
    out
}

fn mentions_any(d: &Diagnostic, slugs: &[String]) -> bool {
    d.location
        .as_ref()
        .is_some_and(|l| slugs.iter().any(|s| crate::content::slug_of(&l.path) == *s))
}
