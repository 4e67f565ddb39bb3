//! `attnbook verify [--fix]`: rerun every experiment and check the prose against it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::content::{self, Series};
use crate::diagnostic::Diagnostic;
use crate::quotes::{self, Status, fix, output};

use super::{Outcome, VerifyPlan, bind_quotes, load, run_lab, start};

/// `attnbook verify`: rerun everything, check quotes and pinned outputs, optionally fix.
pub fn verify(plan: &VerifyPlan) -> Outcome {
    let (mut out, _lock) = match start(&plan.root) {
        Ok(started) => started,
        Err(failed) => return failed,
    };
    let Some(mut series) = load(&plan.root, true, &mut out.diagnostics) else {
        return out;
    };
    if let Err(d) = select_chapters(&series, &plan.chapters) {
        out.diagnostics.push(d);
        return out;
    }
    if !plan.chapters.is_empty() {
        // Only the named chapters and the chapters their quotes read (`other/name`) rerun.
        let needed = needed_chapters(&series, &plan.chapters);
        series.chapters.retain(|c| needed.contains(&c.slug));
    }
    let mut lab_plan = plan.lab.clone();
    lab_plan.rerun = true;
    run_lab(&mut series, &lab_plan, &mut out.diagnostics);
    // Drift is reported below as verify's own lines, not as build-style warnings.
    let _drift_warnings = bind_quotes(&mut series, &mut out.diagnostics);
    if out.diagnostics.has_errors() {
        out.series = Some(series);
        return out;
    }
    let mut report = VerifyReport::default();
    for chapter in series
        .chapters
        .iter()
        .filter(|c| is_named(&plan.chapters, &c.slug, &c.path))
    {
        report.check_chapter(chapter);
    }
    if plan.fix {
        out.report
            .extend(report.apply_fixes(&series).unwrap_or_else(|e| {
                out.diagnostics.push(e);
                Vec::new()
            }));
        // A bound that fails cannot be fixed by rewriting the prose: it stays a failure.
        out.failed_checks = report.unfixable() > 0;
    } else {
        out.failed_checks = report.drifted() > 0;
    }
    out.report.splice(0..0, report.lines(plan.json));
    out.series = Some(series);
    out
}

/// True if `wanted` is empty (every chapter) or names this chapter by slug or file.
fn is_named(wanted: &[String], slug: &str, path: &Path) -> bool {
    wanted.is_empty()
        || wanted
            .iter()
            .any(|c| c == slug || Path::new(c) == path || path.ends_with(c))
}

/// The slugs of the named chapters and of every chapter a quote of theirs reads.
fn needed_chapters(series: &Series, wanted: &[String]) -> BTreeSet<String> {
    let mut needed = BTreeSet::new();
    for chapter in series
        .chapters
        .iter()
        .filter(|c| is_named(wanted, &c.slug, &c.path))
    {
        needed.insert(chapter.slug.clone());
        for quote in &chapter.doc.quotes {
            if let Some((other, _)) = quote.name.split_once('/') {
                needed.insert(other.to_string());
            }
        }
    }
    needed
}

fn select_chapters(series: &Series, wanted: &[String]) -> Result<(), Diagnostic> {
    for w in wanted {
        let known = series
            .chapters
            .iter()
            .any(|c| c.slug == *w || c.path.ends_with(w));
        if !known {
            let d = Diagnostic::error(format!("no chapter `{w}`"));
            return Err(
                match crate::diagnostic::did_you_mean(&crate::diagnostic::closest(
                    w,
                    series.chapters.iter().map(|c| c.slug.as_str()),
                )) {
                    Some(h) => d.with_help(h),
                    None => d.with_help(
                        "name a chapter by its slug (file name without `NN-` and `.md`)",
                    ),
                },
            );
        }
    }
    Ok(())
}

/// What `verify` found.
#[derive(Debug, Default)]
struct VerifyReport {
    quotes: usize,
    outputs: usize,
    failures: Vec<Failure>,
}

#[derive(Debug, serde::Serialize)]
struct Failure {
    path: PathBuf,
    line: usize,
    col: usize,
    kind: &'static str,
    quoted: String,
    rerun: String,
    rule: String,
    #[serde(skip)]
    edit: Option<fix::Edit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<String>,
}

impl VerifyReport {
    fn check_chapter(&mut self, chapter: &content::Chapter) {
        for (quote, binding) in chapter.doc.quotes.iter().zip(&chapter.bindings) {
            self.quotes += 1;
            if binding.status != Status::Drift {
                continue;
            }
            let loc = chapter.location(quote.number.span.clone());
            let edit = (!quote.tolerance.is_bound()).then(|| fix::Edit {
                span: quote.number.span.clone(),
                text: binding.formatted.clone(),
            });
            self.failures.push(Failure {
                path: loc.path,
                line: loc.line,
                col: loc.col,
                kind: "quote",
                quoted: chapter.source[quote.number.span.clone()].to_string(),
                rerun: binding.rerun.map(quotes::full).unwrap_or_default(),
                rule: binding.rule.clone(),
                edit,
                diff: None,
            });
        }
        let Some(run) = &chapter.run else { return };
        for exp in &chapter.doc.experiments {
            let Some(pinned) = &exp.pinned else { continue };
            self.outputs += 1;
            // Compared as the page shows it, without terminal escape sequences, so a pinned
            // output copied from the page matches and `--fix` writes no escape into the prose.
            let fresh = run
                .blocks
                .get(exp.index)
                .map(|b| crate::text::strip_ansi(&b.stdout))
                .unwrap_or_default();
            let fresh = fresh.as_ref();
            if output::matches(&pinned.text, fresh) {
                continue;
            }
            let loc = chapter.location(pinned.text_span.clone());
            self.failures.push(Failure {
                path: loc.path,
                line: pinned.line,
                col: 1,
                kind: "output",
                quoted: pinned.text.clone(),
                rerun: fresh.to_string(),
                rule: "pinned output".into(),
                edit: Some(fix::Edit {
                    span: pinned.text_span.clone(),
                    text: fresh.to_string(),
                }),
                diff: Some(output::diff(&pinned.text, fresh)),
            });
        }
    }

    fn unfixable(&self) -> usize {
        self.failures.iter().filter(|f| f.edit.is_none()).count()
    }

    fn drifted(&self) -> usize {
        self.failures.len()
    }

    fn lines(&self, json: bool) -> Vec<String> {
        if json {
            let value = serde_json::json!({
                "quotes": self.quotes,
                "outputs": self.outputs,
                "drifted": self.drifted(),
                "failures": self.failures,
            });
            return vec![serde_json::to_string_pretty(&value).unwrap_or_default()];
        }
        let mut lines = Vec::new();
        for f in &self.failures {
            let place = format!("{}:{}:{}", f.path.display(), f.line, f.col);
            match &f.diff {
                None => lines.push(format!(
                    "{place}  quoted {}  rerun {}  ({})",
                    f.quoted, f.rerun, f.rule
                )),
                Some(diff) => lines.push(format!(
                    "{place}  pinned output differs from the rerun\n{}",
                    diff.trim_end()
                )),
            }
        }
        lines.push(format!(
            "{} quotes, {} outputs checked, {} drifted",
            self.quotes,
            self.outputs,
            self.drifted()
        ));
        lines
    }

    fn apply_fixes(&self, series: &Series) -> Result<Vec<String>, Diagnostic> {
        let mut lines = Vec::new();
        for chapter in &series.chapters {
            let edits: Vec<fix::Edit> = self
                .failures
                .iter()
                .filter(|f| f.path == chapter.path)
                .filter_map(|f| f.edit.clone())
                .collect();
            if edits.is_empty() {
                continue;
            }
            let text = fix::apply(&chapter.source, &edits);
            fix::write_atomically(&series.root.join(&chapter.path), &text).map_err(|e| {
                Diagnostic::error(format!("cannot write {}: {e}", chapter.path.display()))
            })?;
            lines.push(format!(
                "fixed {} place(s) in {}",
                edits.len(),
                chapter.path.display()
            ));
        }
        let bounds = self.failures.iter().filter(|f| f.edit.is_none()).count();
        if bounds > 0 {
            lines.push(format!(
                "{bounds} bound quote(s) left as they are: bounds are never rewritten"
            ));
        }
        Ok(lines)
    }
}
