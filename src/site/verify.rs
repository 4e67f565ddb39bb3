//! `attnbook verify [--fix]`: rerun every experiment and check the prose against it.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::content::Series;
use crate::diagnostic::{Diagnostic, Location};
use crate::markdown::Parsed;
use crate::quotes::Bound;
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
    let series = run_lab(series, &lab_plan, &mut out.diagnostics);
    // Drift is reported below as verify's own lines, not as build-style warnings.
    let (series, _drift_warnings) = bind_quotes(series, &mut out.diagnostics);
    if out.diagnostics.has_errors() {
        out.sources = Some(series.sources());
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
        report.apply_fixes(&series, &mut out);
        // A bound that fails cannot be fixed by rewriting the prose: it stays a failure.
        out.failed_checks = report.unfixable() > 0;
    } else {
        out.failed_checks = report.drifted() > 0;
    }
    out.report.splice(0..0, report.lines(plan.json));
    out.sources = Some(series.sources());
    out
}

/// True if `wanted` is empty (every chapter) or names this chapter by slug or file.
fn is_named(wanted: &[String], slug: &str, path: &Path) -> bool {
    wanted.is_empty()
        || wanted
            .iter()
            .any(|c| c == slug || Path::new(c) == path || path.ends_with(c))
}

/// The slugs of the named chapters and of every chapter whose values they read, directly or
/// through another such chapter (a quote's name or bound, a claim's rule: `other/name`).
fn needed_chapters(series: &Series<Parsed>, wanted: &[String]) -> BTreeSet<String> {
    let mut needed = BTreeSet::new();
    let mut todo: Vec<&str> = series
        .chapters
        .iter()
        .filter(|c| is_named(wanted, &c.slug, &c.path))
        .map(|c| c.slug.as_str())
        .collect();
    while let Some(slug) = todo.pop() {
        if !needed.insert(slug.to_string()) {
            continue;
        }
        let Some(chapter) = series.chapters.iter().find(|c| c.slug == slug) else {
            continue;
        };
        for name in chapter.doc.value_names_read() {
            if let Some((other, _)) = name.split_once('/') {
                todo.push(other);
            }
        }
    }
    needed
}

fn select_chapters(series: &Series<Parsed>, wanted: &[String]) -> Result<(), Diagnostic> {
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
    claims: usize,
    outputs: usize,
    failures: Vec<Failure>,
    /// Band quotes that pass but quote a number the rerun no longer rounds to: `--fix`
    /// refreshes the number (never the band); they are not failures.
    stale: Vec<(PathBuf, fix::Edit)>,
}

#[derive(Debug, serde::Serialize)]
struct Failure {
    path: PathBuf,
    line: usize,
    col: usize,
    kind: &'static str,
    /// The bytes an error about this failure underlines.
    #[serde(skip)]
    span: Range<usize>,
    quoted: String,
    rerun: String,
    rule: String,
    #[serde(skip)]
    remedy: Remedy,
    /// For a pinned output: its block and what it reads as once `--fix` wrote the rerun.
    #[serde(skip)]
    output: Option<(usize, String)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    diff: Option<String>,
    /// The grid point it fails at (`d_k = 512`), for a quote or claim inside an explorable
    /// passage checked at a point other than the default.
    #[serde(skip_serializing_if = "Option::is_none")]
    point: Option<String>,
}

/// What `--fix` does with a failure.
#[derive(Debug)]
enum Remedy {
    /// Replace these bytes with the rerun.
    Rewrite(fix::Edit),
    /// A bound or band the rerun broke: its number is refreshed, its rule never (the rule is
    /// the author's claim, which only the author may move), so it stays a failure.
    Refresh(fix::Edit),
    /// A claim whose rule does not hold: `--fix` never touches a claim, so it stays a failure.
    Claim,
    /// A quote or claim that fails at a grid point other than the default: the source holds
    /// the default's text only, so `--fix` has nothing to write; it stays a failure.
    AtPoint,
    /// The rerun is NaN or infinite: written into a quote it would no longer parse, and
    /// accepted into a pinned output it would hide a numerical bug. Reported as an error.
    NotFinite,
    /// The rerun output has a line that would close the pinned block's fence: written, it
    /// would end the block early and turn the rest into prose. Reported as an error.
    ClosesFence,
}

impl Remedy {
    fn for_quote(quote: &crate::markdown::quote::QuoteSyntax, binding: &quotes::Binding) -> Remedy {
        if quote.tolerance.is_claim() {
            fix::quote_edit(quote, binding).map_or(Remedy::NotFinite, Remedy::Refresh)
        } else {
            fix::quote_edit(quote, binding).map_or(Remedy::NotFinite, Remedy::Rewrite)
        }
    }

    /// A NaN or inf the author has not pinned is a failure to fix, not an output to accept;
    /// one already pinned (a `-inf` in a printed mask) is part of the expected output.
    ///
    /// `fence` is the block's opening line as the file has it: the text is written with its
    /// line end (CRLF in a CRLF file) and must not close it. A text that does not end a line
    /// gets one, or the closing fence would join its last line.
    fn for_output(pinned: &crate::markdown::PinnedOutput, fresh: &str, fence: &str) -> Remedy {
        if output::non_finite_count(fresh) > output::non_finite_count(&pinned.text) {
            return Remedy::NotFinite;
        }
        if closes_fence(fence, fresh) {
            return Remedy::ClosesFence;
        }
        Remedy::Rewrite(fix::output_edit(pinned, fresh, fence.ends_with("\r\n")))
    }
}

/// Whether a line of `text` would close the fenced block that `fence` (its opening line)
/// opens: the same fence character, at least as many, and nothing but spaces after (CommonMark).
fn closes_fence(fence: &str, text: &str) -> bool {
    let fence = fence.trim_start();
    let Some(marker) = fence.chars().next().filter(|c| matches!(c, '`' | '~')) else {
        return false;
    };
    let length = fence.chars().take_while(|&c| c == marker).count();
    text.lines().any(|line| {
        let line = line.trim_start_matches(' ');
        let run = line.chars().take_while(|&c| c == marker).count();
        run >= length && line[run * marker.len_utf8()..].trim().is_empty()
    })
}

impl VerifyReport {
    fn check_chapter(&mut self, chapter: &Bound) {
        for (quote, binding) in chapter.doc.quotes.iter().zip(&chapter.bindings) {
            self.quotes += 1;
            if binding.status != Status::Drift {
                let stale = binding.formatted != chapter.source[quote.number.span.clone()];
                if binding.status == Status::Ok
                    && stale
                    && quote.tolerance.is_claim()
                    && let Some(edit) = fix::quote_edit(quote, binding)
                {
                    self.stale.push((chapter.path.clone(), edit));
                }
                continue;
            }
            let loc = chapter.location(quote.number.span.clone());
            self.failures.push(Failure {
                path: loc.path,
                line: loc.line,
                col: loc.col,
                kind: "quote",
                span: loc.span,
                quoted: chapter.source[quote.number.span.clone()].to_string(),
                rerun: binding.rerun.map(quotes::rerun_text).unwrap_or_default(),
                rule: binding.rule.clone(),
                remedy: Remedy::for_quote(quote, binding),
                output: None,
                diff: None,
                point: None,
            });
        }
        for (claim, verdict) in chapter.doc.claims.iter().zip(&chapter.claims) {
            self.claims += 1;
            if verdict.holds != Some(false) {
                continue;
            }
            let loc = chapter.location(claim.span.clone());
            self.failures.push(Failure {
                path: loc.path,
                line: loc.line,
                col: loc.col,
                kind: "claim",
                span: loc.span,
                quoted: chapter.source[claim.statement()].to_string(),
                rerun: verdict.values_text(),
                rule: verdict.rule.clone(),
                remedy: Remedy::Claim,
                output: None,
                diff: None,
                point: None,
            });
        }
        self.check_points(chapter);
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
                span: pinned.text_span.clone(),
                quoted: pinned.text.clone(),
                rerun: fresh.to_string(),
                rule: "pinned output".into(),
                remedy: Remedy::for_output(
                    pinned,
                    fresh,
                    &chapter.source[pinned.span.start..pinned.text_span.start],
                ),
                output: Some((exp.index, fix::output_as_written(fresh))),
                diff: Some(output::diff(&pinned.text, fresh)),
                point: None,
            });
        }
    }

    /// The quotes and claims of every explorable passage at every other point of its
    /// parameter's grid (the default point is checked above).
    fn check_points(&mut self, chapter: &Bound) {
        for point in &chapter.points {
            for passage in chapter
                .doc
                .explores
                .iter()
                .filter(|e| e.param == point.param)
            {
                for &q in &passage.quotes {
                    let (Some(quote), Some(binding)) =
                        (chapter.doc.quotes.get(q), point.bindings.get(q))
                    else {
                        continue;
                    };
                    self.quotes += 1;
                    if binding.status != Status::Drift {
                        continue;
                    }
                    let loc = chapter.location(quote.number.span.clone());
                    self.failures.push(Failure {
                        path: loc.path,
                        line: loc.line,
                        col: loc.col,
                        kind: "quote",
                        span: loc.span,
                        quoted: chapter.source[quote.number.span.clone()].to_string(),
                        rerun: binding.rerun.map(quotes::rerun_text).unwrap_or_default(),
                        rule: binding.rule.clone(),
                        remedy: Remedy::AtPoint,
                        output: None,
                        diff: None,
                        point: Some(point.text.clone()),
                    });
                }
                for &c in &passage.claims {
                    let (Some(claim), Some(verdict)) =
                        (chapter.doc.claims.get(c), point.claims.get(c))
                    else {
                        continue;
                    };
                    self.claims += 1;
                    if verdict.holds != Some(false) {
                        continue;
                    }
                    let loc = chapter.location(claim.span.clone());
                    self.failures.push(Failure {
                        path: loc.path,
                        line: loc.line,
                        col: loc.col,
                        kind: "claim",
                        span: loc.span,
                        quoted: chapter.source[claim.statement()].to_string(),
                        rerun: verdict.values_text(),
                        rule: verdict.rule.clone(),
                        remedy: Remedy::AtPoint,
                        output: None,
                        diff: None,
                        point: Some(point.text.clone()),
                    });
                }
            }
        }
    }

    /// Failures `--fix` leaves in place without an error: the bounds, the bands, the claims
    /// and whatever fails at a grid point other than the default.
    fn unfixable(&self) -> usize {
        self.count(|r| matches!(r, Remedy::Refresh(_) | Remedy::Claim | Remedy::AtPoint))
    }

    fn count(&self, which: impl Fn(&Remedy) -> bool) -> usize {
        self.failures.iter().filter(|f| which(&f.remedy)).count()
    }

    fn drifted(&self) -> usize {
        self.failures.len()
    }

    fn lines(&self, json: bool) -> Vec<String> {
        if json {
            let value = serde_json::json!({
                "quotes": self.quotes,
                "claims": self.claims,
                "outputs": self.outputs,
                "drifted": self.drifted(),
                "failures": self.failures,
            });
            return vec![serde_json::to_string_pretty(&value).unwrap_or_default()];
        }
        let mut lines = Vec::new();
        for f in &self.failures {
            let place = format!("{}:{}:{}", f.path.display(), f.line, f.col);
            let place = match &f.point {
                Some(point) => format!("{place}  at {point}:"),
                None => place,
            };
            match &f.diff {
                None if f.kind == "claim" => lines.push(format!(
                    "{place}  claim does not hold: {}  [{}]",
                    f.rule, f.rerun
                )),
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
        let claims = if self.claims > 0 {
            format!("{} claims, ", self.claims)
        } else {
            String::new()
        };
        lines.push(format!(
            "{} quotes, {claims}{} outputs checked, {} drifted",
            self.quotes,
            self.outputs,
            self.drifted()
        ));
        lines
    }

    /// Rewrites every chapter with fixable failures; reports what it did, and as errors what it
    /// would not do (non-finite reruns, chapters edited during the run), for every chapter.
    fn apply_fixes(&self, series: &Series<Bound>, out: &mut Outcome) {
        for failure in &self.failures {
            match failure.remedy {
                Remedy::NotFinite => out.diagnostics.push(failure.not_finite()),
                Remedy::ClosesFence => out.diagnostics.push(failure.closes_fence()),
                Remedy::Rewrite(_) | Remedy::Refresh(_) | Remedy::Claim | Remedy::AtPoint => {}
            }
        }
        for chapter in &series.chapters {
            let edits: Vec<fix::Edit> = self
                .failures
                .iter()
                .filter(|f| f.path == chapter.path)
                .filter_map(|f| match &f.remedy {
                    Remedy::Rewrite(edit) | Remedy::Refresh(edit) => Some(edit.clone()),
                    Remedy::NotFinite | Remedy::ClosesFence | Remedy::Claim | Remedy::AtPoint => {
                        None
                    }
                })
                .chain(
                    self.stale
                        .iter()
                        .filter(|(path, _)| *path == chapter.path)
                        .map(|(_, edit)| edit.clone()),
                )
                .collect();
            if edits.is_empty() {
                continue;
            }
            let outputs: Vec<(usize, String)> = self
                .failures
                .iter()
                .filter(|f| f.path == chapter.path && matches!(f.remedy, Remedy::Rewrite(_)))
                .filter_map(|f| f.output.clone())
                .collect();
            match rewrite(series, chapter, &edits, &outputs) {
                Ok(notes) => {
                    out.wrote_sources = true;
                    out.report.push(format!(
                        "fixed {} place(s) in {}",
                        edits.len(),
                        chapter.path.display()
                    ));
                    out.report.extend(notes);
                }
                Err(d) => out.diagnostics.extend(d),
            }
        }
        let bounds = self.count(|r| matches!(r, Remedy::Refresh(_)));
        if bounds > 0 {
            out.report.push(format!(
                "{bounds} bound or band quote(s) still break their rule: the number is \
                 refreshed, the bound or band is never rewritten"
            ));
        }
        let points = self.count(|r| matches!(r, Remedy::AtPoint));
        if points > 0 {
            out.report.push(format!(
                "{points} quote(s) or claim(s) fail at a grid point other than the default: the \
                 source holds the default's text only, so --fix writes nothing for them; change \
                 the text, its rule, the grid or the experiment"
            ));
        }
        let claims = self.count(|r| matches!(r, Remedy::Claim));
        if claims > 0 {
            out.report.push(format!(
                "{claims} claim(s) do not hold: --fix never rewrites a claim; change the text, \
                 its rule or the experiment"
            ));
        }
    }
}

impl Failure {
    /// The error `--fix` reports for a rerun output that would close its block's fence.
    fn closes_fence(&self) -> Diagnostic {
        let location = Location {
            span: self.span.clone(),
            ..Location::at_line(&self.path, self.line, self.col)
        };
        Diagnostic::error(
            "the rerun output has a line that would close this pinned block's fence: \
             --fix leaves this pinned output as it is",
        )
        .at(location)
        .with_help(
            "open and close the pinned block with a longer fence (e.g. ````output), then run \
             `attnbook verify --fix` again",
        )
    }

    /// The error `--fix` reports for a rerun it will not write.
    fn not_finite(&self) -> Diagnostic {
        let location = Location {
            span: self.span.clone(),
            ..Location::at_line(&self.path, self.line, self.col)
        };
        let message = match self.kind {
            "quote" => format!(
                "the rerun is {}: --fix leaves the quote {} as it is",
                self.rerun, self.quoted
            ),
            _ => "the rerun output prints NaN or inf where the pinned output does not: \
                  --fix leaves this pinned output as it is"
                .to_string(),
        };
        Diagnostic::error(message).at(location).with_help(
            "make the experiment produce a finite value, then run `attnbook verify --fix` again",
        )
    }
}

/// Applies `edits` to one chapter, unless its file changed since the run read it or the
/// rewritten text would not read back as intended (`outputs`: what each rewritten pinned output
/// must read). Returns what was done besides the edits.
fn rewrite(
    series: &Series<Bound>,
    chapter: &Bound,
    edits: &[fix::Edit],
    outputs: &[(usize, String)],
) -> Result<Vec<String>, Vec<Diagnostic>> {
    let text = fix::apply(&chapter.source, edits);
    let checked = fix::check_rewrite(chapter.as_ref(), &chapter.doc, text, outputs)?;
    let path = chapter.path.display();
    fix::replace_if_unchanged(
        &series.root.join(&chapter.path),
        &chapter.source,
        &checked.text,
    )
    .map(|()| checked.notes)
    .map_err(|e| {
        vec![match e {
            fix::WriteError::Changed => Diagnostic::error(format!(
                "{path} was edited while `verify --fix` ran: it was not rewritten, the edit is kept"
            ))
            .with_help("run `attnbook verify --fix` again to check the edited chapter"),
            fix::WriteError::Io(e) => Diagnostic::error(format!("cannot write {path}: {e}")),
        }]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pinned output at the top level holding `text`.
    fn pinned(text: &str) -> crate::markdown::PinnedOutput {
        crate::markdown::PinnedOutput {
            text: text.to_string(),
            text_span: 0..text.len(),
            prefix: String::new(),
            span: 0..text.len(),
            line: 1,
        }
    }

    #[test]
    fn an_output_is_fixed_unless_the_rerun_adds_a_non_finite_number() {
        let fixable = |text: &str, fresh: &str| {
            matches!(
                Remedy::for_output(&pinned(text), fresh, "```output\n"),
                Remedy::Rewrite(_)
            )
        };
        assert!(fixable("loss 0.25", "loss 0.5"));
        assert!(!fixable("loss 0.25", "loss NaN"));
        assert!(
            !fixable("", "scores [0.1, inf]"),
            "an empty pinned output too"
        );
        assert!(
            fixable("mask [0, -inf] sum 1.0", "mask [0, -inf] sum 2.0"),
            "a pinned -inf is expected output"
        );
        assert!(!fixable("mask [0, -inf]", "mask [-inf, -inf]"));
    }

    fn written(fresh: &str, fence: &str) -> Option<String> {
        match Remedy::for_output(&pinned("old\n"), fresh, fence) {
            Remedy::Rewrite(edit) => Some(edit.text),
            _ => None,
        }
    }

    /// The written output keeps the file's line ends and always ends its last line.
    #[test]
    fn an_output_is_written_with_the_line_ends_of_its_block() {
        assert_eq!(
            written("a\nb\n", "```output\r\n").as_deref(),
            Some("a\r\nb\r\n")
        );
        assert_eq!(
            written("a\r\nb", "```output\r\n").as_deref(),
            Some("a\r\nb\r\n")
        );
        assert_eq!(written("a\nb", "```output\n").as_deref(), Some("a\nb\n"));
        assert_eq!(written("", "```output\n").as_deref(), Some(""));
    }

    /// An output line that would close the block's fence is refused; a shorter run, another
    /// fence character or text after the run does not close it.
    #[test]
    fn an_output_that_would_close_its_fence_is_refused() {
        for (fresh, fence) in [
            ("a\n```\n", "```output\n"),
            ("  ````  \n", "```output\n"),
            ("~~~\n", "~~~ output\n"),
            ("`````", "````output\r\n"),
        ] {
            assert_eq!(written(fresh, fence), None, "{fresh:?} in {fence:?}");
        }
        for (fresh, fence) in [
            ("```\n", "````output\n"),
            ("~~~\n", "```output\n"),
            ("```rust\n", "```output\n"),
            ("x ```\n", "```output\n"),
        ] {
            assert!(written(fresh, fence).is_some(), "{fresh:?} in {fence:?}");
        }
    }
}
