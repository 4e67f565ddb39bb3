//! The build as a flat list of stages (DESIGN §2):
//!
//! 1. `content`  - load site.toml and the chapters, check front matter;
//! 2. `markdown` - parse each chapter once into pieces (math, experiments, quotes, headings);
//! 3. `lab`      - compile and run the experiment blocks (cached by content hash);
//! 4. `quotes`   - bind quoted numbers to the rerun values and check them;
//! 5. `render`   - math through KaTeX, pages through Tera;
//! 6. `emit`     - every output file into a temporary directory, then swapped into `--out`.
//!
//! Each stage hands the next its own chapter type (`Series<Parsed>`, `Series<Ran>`,
//! `Series<Bound>`, `Series<Page>`); this module is the only one that sees them all.
//!
//! The other commands reuse the stages: `verify` runs 1-4 with the cache bypassed and reports
//! drift instead of rendering (`verify.rs`), `check` runs 1, 2 and 4-5 on the last cached
//! results without compiling anything (`check.rs`); `new` scaffolds a chapter (`scaffold.rs`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use rayon::prelude::*;

use crate::content::{self, Series};
use crate::diagnostic::{Diagnostic, Diagnostics, Location};
use crate::lab::{self, LabPlan, Ran};
use crate::markdown::{self, Parsed, Piece, PlacementKind};
use crate::quotes::{self, Bound, Status};
use crate::render::{self, Page, html, math::MathRenderer};

mod check;
mod emit;
mod intro;
mod output;
mod scaffold;
mod timings;
mod unchanged;
mod verify;

use timings::Timings;

pub use check::check;
pub(crate) use output::check_output_dir;
pub use scaffold::{INIT_LANGUAGES, InitPlan, init, new_chapter};
pub use verify::verify;

/// What `build` should do.
#[derive(Debug, Clone)]
pub struct BuildPlan {
    /// Site root.
    pub root: PathBuf,
    /// Output directory.
    pub out: PathBuf,
    /// Overrides `base_url` of site.toml.
    pub base_url: Option<String>,
    /// Overrides `repository` of site.toml (the Pages workflow passes the repository it runs
    /// in, so a fork's downloads point at the fork).
    pub repository: Option<String>,
    /// Include drafts.
    pub drafts: bool,
    /// Warnings fail the build.
    pub strict: bool,
    /// Experiment settings.
    pub lab: LabPlan,
    /// Report the wall time of every stage.
    pub timings: bool,
    /// Keep the replaced output in `.attnbook/spare-output` and rewrite it next time instead of
    /// creating every file again. A file that changes is replaced, never written through, so
    /// `serve` can recycle too while it still sends a file of an older output.
    pub recycle_output: bool,
    /// Replace a non-empty output directory that no attnbook build made (`--force`).
    pub force: bool,
}

/// What `new` should do.
#[derive(Debug, Clone)]
pub struct NewPlan {
    /// Site root.
    pub root: PathBuf,
    /// Slug of the new chapter.
    pub slug: String,
    /// Its title.
    pub title: String,
}

/// What `verify` should do.
#[derive(Debug, Clone)]
pub struct VerifyPlan {
    /// Site root.
    pub root: PathBuf,
    /// Rewrite drifted numbers and outputs.
    pub fix: bool,
    /// Only these chapters (slugs or file names); all when empty.
    pub chapters: Vec<String>,
    /// Print JSON instead of text.
    pub json: bool,
    /// Experiment settings (the cache is always bypassed).
    pub lab: LabPlan,
}

/// The outcome of a command: diagnostics to print plus a summary.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Problems found.
    pub diagnostics: Diagnostics,
    /// True if verification or checks failed (exit 1), as opposed to errors (exit 2).
    pub failed_checks: bool,
    /// Lines for standard output.
    pub report: Vec<String>,
    /// The sources of the loaded series, for printing snippets.
    pub sources: Option<content::Sources>,
    /// The site root (for reading files to show in diagnostics).
    pub root: PathBuf,
    /// The errors are findings of `check` (exit 1), not broken input (exit 2).
    pub errors_are_findings: bool,
    /// Some source files were rewritten (`verify --fix` applies the fixes it can even when
    /// others fail), so an error summary must not claim that nothing was written.
    pub wrote_sources: bool,
}

/// Takes the site's lock for the whole command: two builds of one site at once would write the
/// same experiment crate, cache and output. The second waits, and says so.
fn lock_site(root: &Path) -> Result<std::fs::File, Diagnostic> {
    let work = root.join(".attnbook");
    let open = || {
        std::fs::create_dir_all(&work)?;
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(work.join("build.lock"))
    };
    let file = open().map_err(|e| {
        Diagnostic::error(format!("cannot create {}: {e}", work.display()))
            .with_help("attnbook keeps its cache in .attnbook/ in the site root; make it writable")
    })?;
    if file.try_lock().is_err() {
        eprintln!("another attnbook command is running on this site; waiting for it to finish...");
        file.lock()
            .map_err(|e| Diagnostic::error(format!("cannot lock {}: {e}", work.display())))?;
    }
    Ok(file)
}

/// Opens a command's outcome and takes the site lock (held until the guard drops); a lock
/// that cannot be had is the outcome.
fn start(root: &Path) -> Result<(Outcome, std::fs::File), Outcome> {
    let mut out = Outcome {
        root: root.to_path_buf(),
        ..Outcome::default()
    };
    match lock_site(root) {
        Ok(lock) => Ok((out, lock)),
        Err(d) => {
            out.diagnostics.push(d);
            Err(out)
        }
    }
}

/// Stages 1-2: load and parse. Errors stop here.
fn load(root: &Path, drafts: bool, diagnostics: &mut Diagnostics) -> Option<Series<Parsed>> {
    let series = match content::load(root, drafts) {
        Ok(series) => series,
        Err(d) => {
            diagnostics.extend(d.into_vec());
            return None;
        }
    };
    diagnostics.extend(series.warnings());
    let mut series = parse_all(series, diagnostics);
    load_diagrams(&mut series, diagnostics);
    render_glossary(&mut series, diagnostics);
    if let Some(glossary) = &series.glossary {
        let checker = glossary.checker();
        for chapter in &series.chapters {
            diagnostics.extend(checker.check(chapter, &chapter.doc.prose));
        }
    }
    Some(series)
}

/// Stage 2: every chapter parsed, in parallel; the problems in series order.
fn parse_all(series: Series, diagnostics: &mut Diagnostics) -> Series<Parsed> {
    let mut problems = Vec::new();
    let series = series.map_chapters(|chapters| {
        let (parsed, found): (Vec<Parsed>, Vec<Vec<Diagnostic>>) =
            chapters.into_par_iter().map(Parsed::remembered).unzip();
        problems = found;
        parsed
    });
    diagnostics.extend(problems.into_iter().flatten());
    series
}

/// Reads and sanitises the SVG files of image figures, to inline them. A missing file or one
/// outside `static/` is left to the link check, which reports it once.
fn load_diagrams(series: &mut Series<Parsed>, diagnostics: &mut Diagnostics) {
    let statics = series.root.join("static");
    for chapter in &mut series.chapters {
        let mut problems = Vec::new();
        for figure in chapter.doc.image_figures.iter_mut() {
            if !figure.is_local_svg() || figure.dest.starts_with('/') || figure.dest.contains("..")
            {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(statics.join(&figure.dest)) else {
                continue;
            };
            match render::svg::inline(&text, &figure.caption) {
                Ok(svg) => figure.svg = Some(svg),
                Err(reasons) => problems.push((figure.span.clone(), figure.dest.clone(), reasons)),
            }
        }
        for (span, dest, reasons) in problems {
            let mut d = Diagnostic::error(format!("static/{dest} cannot be inlined"))
                .at(chapter.location(span))
                .with_help(
                    "remove scripts, event handlers and references outside the file from the SVG",
                );
            for reason in reasons {
                d = d.with_note(reason);
            }
            diagnostics.push(d);
        }
    }
}

/// Stage 3: run the experiments and attach their results.
fn run_lab(series: Series<Parsed>, plan: &LabPlan, diagnostics: &mut Diagnostics) -> Series<Ran> {
    let runs = lab::run(&series, plan);
    attach_runs(series, runs, diagnostics)
}

/// Each chapter with its run: `runs` has one entry per chapter, in order, or none at all when
/// the experiments did not run (errors found while loading), and then no chapter has a run.
fn attach_runs(
    series: Series<Parsed>,
    runs: lab::Runs,
    diagnostics: &mut Diagnostics,
) -> Series<Ran> {
    diagnostics.extend(runs.errors);
    let runs = runs.runs.into_iter().chain(std::iter::repeat(None));
    series.map_chapters(|chapters| {
        chapters
            .into_iter()
            .zip(runs)
            .map(|(parsed, run)| Ran { parsed, run })
            .collect()
    })
}

/// Stage 4: bind quotes; drift becomes warnings (build) or failures (verify).
fn bind_quotes(
    series: Series<Ran>,
    diagnostics: &mut Diagnostics,
) -> (Series<Bound>, Vec<Diagnostic>) {
    let (series, errors) = quotes::bind(series);
    diagnostics.extend(errors);
    let mut drift = Vec::new();
    for chapter in &series.chapters {
        for (quote, binding) in chapter.doc.quotes.iter().zip(&chapter.bindings) {
            if binding.status == Status::Drift {
                drift.push(drift_diagnostic(
                    chapter.location(quote.number.span.clone()),
                    &chapter.source[quote.number.span.clone()],
                    binding,
                ));
            }
        }
        for (claim, verdict) in chapter.doc.claims.iter().zip(&chapter.claims) {
            if verdict.holds == Some(false) {
                drift.push(claim_diagnostic(
                    chapter.location(claim.span.clone()),
                    verdict,
                ));
            }
        }
        // The quotes and claims of explorable passages at the other points of their grids.
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
                    if binding.status == Status::Drift {
                        let mut d = drift_diagnostic(
                            chapter.location(quote.number.span.clone()),
                            &chapter.source[quote.number.span.clone()],
                            binding,
                        );
                        d.message = format!("{} (at {})", d.message, point.text);
                        drift.push(d.with_help(
                            "the rule must hold at every point of the grid: change the text, its rule, the grid or the experiment",
                        ));
                    }
                }
                for &c in &passage.claims {
                    let (Some(claim), Some(verdict)) =
                        (chapter.doc.claims.get(c), point.claims.get(c))
                    else {
                        continue;
                    };
                    if verdict.holds == Some(false) {
                        let mut d = claim_diagnostic(chapter.location(claim.span.clone()), verdict);
                        d.message = format!("{} (at {})", d.message, point.text);
                        drift.push(d);
                    }
                }
            }
        }
    }
    (series, drift)
}

/// A claim whose rule does not hold on the rerun.
fn claim_diagnostic(location: Location, verdict: &quotes::claims::ClaimBinding) -> Diagnostic {
    Diagnostic::warning(format!("claim does not hold: {}", verdict.rule))
        .at(location)
        .with_note(format!("values: {}", verdict.values_text()))
        .with_help("the experiment no longer supports the sentence: change the text, its rule or the experiment")
}

fn drift_diagnostic(location: Location, quoted: &str, binding: &quotes::Binding) -> Diagnostic {
    let rerun = quotes::rerun_text(binding.rerun.unwrap_or(f64::NAN));
    Diagnostic::warning(format!(
        "quoted {quoted}  rerun {rerun}  ({})",
        binding.rule
    ))
    .at(location)
    .with_help("run `attnbook verify --fix` to update the prose, or change the experiment")
}

/// Placements must name a table or figure the chapter recorded; `{{glossary}}` needs the file.
fn check_placements(series: &Series<Bound>, diagnostics: &mut Diagnostics) {
    check_glossary_placements(series, diagnostics);
    // A chapter without results has its failure reported already.
    for chapter in series.chapters.iter().filter(|c| !c.lacks_results()) {
        let results = chapter.run.as_ref().map(|r| &r.results);
        diagnostics.extend(headings_on_results(chapter));
        diagnostics.extend(not_finite_figures(chapter));
        for piece in &chapter.doc.pieces {
            let Piece::Placement { kind, name, span } = piece else {
                continue;
            };
            let known: Vec<&str> = match kind {
                PlacementKind::Table => results
                    .map(|r| r.tables.iter().map(|t| t.name.as_str()).collect())
                    .unwrap_or_default(),
                PlacementKind::Figure => results
                    .map(|r| r.figures.iter().map(|f| f.name.as_str()).collect())
                    .unwrap_or_default(),
            };
            if !known.contains(&name.as_str()) {
                let what = if *kind == PlacementKind::Table {
                    "table"
                } else {
                    "figure"
                };
                let mut d = Diagnostic::error(format!("unknown {what} `{name}`"))
                    .at(chapter.location(span.clone()));
                d = match crate::diagnostic::did_you_mean(&crate::diagnostic::closest(
                    name,
                    known.iter().copied(),
                )) {
                    Some(h) => d.with_help(h),
                    None => d.with_help(format!(
                        "record it in an experiment block with `lab.{what}(\"{name}\", ...)`"
                    )),
                };
                diagnostics.push(d);
            }
        }
    }
}

/// A heading whose id is that of a chart or table the experiments recorded (`## fig-w` beside
/// figure `w`), or of an experiment block (`experiment-2`): two elements with one id on the
/// page (redteam-3 D10), an error at the heading.
fn headings_on_results(chapter: &Bound) -> Vec<Diagnostic> {
    let results = chapter.run.as_ref().map(|r| &r.results);
    let mut ids: Vec<(String, String)> = (1..=chapter.doc.experiments.len())
        .map(|n| (format!("experiment-{n}"), format!("experiment block {n}")))
        .collect();
    for figure in results.iter().flat_map(|r| &r.figures) {
        ids.push((
            format!("fig-{}", figure.name),
            format!("the figure `{}`", figure.name),
        ));
    }
    for table in results.iter().flat_map(|r| &r.tables) {
        ids.push((
            format!("tab-{}", table.name),
            format!("the table `{}`", table.name),
        ));
    }
    chapter
        .doc
        .headings
        .iter()
        .filter_map(|h| {
            let (_, what) = ids.iter().find(|(id, _)| *id == h.id)?;
            Some(
                Diagnostic::error(format!("duplicate id `{}` on the page", h.id))
                    .at(chapter.location(h.span.clone()))
                    .with_note(format!("{what} has it too"))
                    .with_help("give the heading another id: `{#another-id}`"),
            )
        })
        .collect()
}

/// A chart some of whose values are NaN or infinite leaves them out (a chart of nothing but
/// NaN is empty axes): a warning at the block that drew it (redteam-3 D19).
fn not_finite_figures(chapter: &Bound) -> Vec<Diagnostic> {
    let figures = chapter.run.iter().flat_map(|r| &r.results.figures);
    figures
        .filter(|f| f.not_finite > 0)
        .map(|figure| {
            let span = chapter
                .doc
                .experiments
                .iter()
                .find(|e| e.index == figure.block)
                .map_or(0..0, |e| e.span.clone());
            Diagnostic::warning(format!(
                "figure `{}`: {} value(s) are NaN or infinite and are not drawn",
                figure.name, figure.not_finite
            ))
            .at(chapter.location(span))
            .with_help("check the computation, or leave those values out of the chart")
        })
        .collect()
}

fn check_glossary_placements(series: &Series<Bound>, diagnostics: &mut Diagnostics) {
    if let Some(glossary) = &series.glossary {
        diagnostics.extend(headings_on_glossary_rows(series, glossary));
        return;
    }
    for chapter in &series.chapters {
        for piece in &chapter.doc.pieces {
            if let Piece::Glossary { span } = piece {
                diagnostics.push(
                    Diagnostic::error("`{{glossary}}` but the site has no glossary")
                        .at(chapter.location(span.clone()))
                        .with_help(format!(
                            "create {} with `[[term]]` and `[[notation]]` entries",
                            crate::content::glossary::PATH
                        )),
                );
            }
        }
    }
}

/// A heading whose id is that of a glossary row (`## term-heatmap`) on a page that places the
/// glossary: two elements with one id (redteam-3 D10), an error at the heading naming the
/// term's line.
fn headings_on_glossary_rows(
    series: &Series<Bound>,
    glossary: &crate::content::glossary::Glossary,
) -> Vec<Diagnostic> {
    let mut problems = Vec::new();
    for chapter in &series.chapters {
        let Some(placed) = chapter.doc.pieces.iter().find_map(|p| match p {
            Piece::Glossary { span } => Some(span),
            _ => None,
        }) else {
            continue;
        };
        for heading in &chapter.doc.headings {
            if let Some(term) = glossary.terms.iter().find(|t| t.id() == heading.id) {
                problems.push(
                    Diagnostic::error(format!("duplicate id `{}` on the page", heading.id))
                        .at(chapter.location(heading.span.clone()))
                        .with_note(format!(
                            "the glossary placed at {} has it too, on the row of `{}`",
                            chapter.location(placed.clone()),
                            term.term
                        ))
                        .with_help("give the heading another id: `{#another-id}`"),
                );
            }
        }
    }
    problems
}

/// The glossary's tables, rendered once when some page places them; a notation symbol KaTeX
/// rejects is a warning at its line of the glossary file, like a formula in a chapter.
fn render_glossary(series: &mut Series<Parsed>, diagnostics: &mut Diagnostics) {
    let placed = series.chapters.iter().any(|c| {
        c.doc
            .pieces
            .iter()
            .any(|p| matches!(p, Piece::Glossary { .. }))
    });
    let macros = &series.config.katex.macros;
    let Some(glossary) = series.glossary.as_mut().filter(|_| placed) else {
        return;
    };
    // Through a math cache of its own (the chapters' cache keeps only what they use), so a
    // build with no new symbol starts no KaTeX engine.
    let symbols: Vec<(&str, bool)> = glossary
        .notation
        .iter()
        .map(|n| (n.symbol.as_str(), false))
        .collect();
    let mut cache =
        render::math::MathCache::load(render::cache::file(&series.root, "glossary-math"));
    let mut rendered = MathRenderer::new(macros).render_all(&symbols, &mut cache);
    cache.save();
    let (html, rejected) = render::glossary::html_with(glossary, |i| {
        std::mem::replace(&mut rendered[i], Ok(String::new()))
    });
    glossary.html = html;
    for (i, message) in rejected {
        let path = std::path::Path::new(crate::content::glossary::PATH);
        diagnostics.push(
            Diagnostic::warning(format!(
                "KaTeX cannot render this notation symbol: {message}"
            ))
            .at(Location::at_line(
                path,
                glossary.notation[i].line,
                glossary.notation[i].col,
            ))
            .with_help("fix the TeX of `symbol`; the page shows it as code until then"),
        );
    }
}

/// Stage 5a: citations and reference lists from the bibliography. A bibliography that cannot
/// be read is its own error, and its citations are not reported again as citing nothing
/// (`false` then, for `check` to exit 2 as for any broken input).
fn cite_all(
    series: &Series<Parsed>,
    diagnostics: &mut Diagnostics,
) -> (Vec<render::cite::ChapterCitations>, bool) {
    let bibliography = match render::cite::load(&series.root) {
        Ok(bib) => bib,
        Err(errors) => {
            diagnostics.extend(errors);
            let none = vec![render::cite::ChapterCitations::default(); series.chapters.len()];
            return (none, false);
        }
    };
    let mut cache =
        render::cite::CitationCache::load(render::cache::file(&series.root, "citations"));
    let (citations, problems) = render::cite::render(series, bibliography.as_ref(), &mut cache);
    cache.save();
    diagnostics.extend(problems);
    (citations, true)
}

/// Stage 5b: render every formula of the series; KaTeX errors become diagnostics.
fn render_math(
    series: &Series<Parsed>,
    diagnostics: &mut Diagnostics,
) -> Vec<Vec<Result<String, render::math::MathError>>> {
    let renderer = MathRenderer::new(&series.config.katex.macros);
    // Labelled equations carry their number as a KaTeX `\\tag`, counted per chapter.
    let texts: Vec<(String, bool)> = series
        .chapters
        .iter()
        .flat_map(|c| {
            let mut n = 0;
            c.doc.maths.iter().map(move |m| match &m.label {
                Some(_) if m.display => {
                    n += 1;
                    (format!("{}\\tag{{{n}}}", m.tex), true)
                }
                _ => (m.tex.clone(), m.display),
            })
        })
        .collect();
    let formulas: Vec<(&str, bool)> = texts.iter().map(|(t, d)| (t.as_str(), *d)).collect();
    let mut cache = render::math::MathCache::load(render::cache::file(&series.root, "math"));
    let all = renderer.render_all(&formulas, &mut cache);
    cache.save();
    let mut rendered = all.into_iter();
    let mut per_chapter = Vec::new();
    for chapter in &series.chapters {
        let results: Vec<_> = rendered.by_ref().take(chapter.doc.maths.len()).collect();
        for (m, r) in chapter.doc.maths.iter().zip(&results) {
            if let Err(e) = r {
                diagnostics.push(math_warning(chapter.location(m.span.clone()), e));
            }
        }
        per_chapter.push(results);
    }
    per_chapter
}

/// A formula KaTeX rejects: a warning, as DESIGN §3.2 asks. The page shows the formula in a
/// red box, and `--strict` (CI, publishing) turns it into a failure.
fn math_warning(location: Location, e: &render::math::MathError) -> Diagnostic {
    let mut d = Diagnostic::warning(format!("KaTeX cannot render this formula: {}", e.message))
        .at(location)
        .with_help("fix the TeX (KaTeX supports most of LaTeX math; see katex.org/docs/supported); the page shows it in a red box until then");
    if let Some(pointer) = &e.pointer {
        d = d.with_note(format!("in the formula:\n{pointer}"));
    }
    d
}

/// `attnbook build`: the stages in order, each timed (`--timings`). Independent stages
/// overlap in the helpers below: the experiments run beside the formulas and citations, and
/// the search index is cut beside the pages.
pub fn build(plan: &BuildPlan) -> Outcome {
    let (mut out, _lock) = match start(&plan.root) {
        Ok(started) => started,
        Err(failed) => return failed,
    };
    // A refused output is reported with the other problems; it also stops the experiments
    // and the write, like any error.
    out.diagnostics
        .extend(check_output_dir(&plan.root, &plan.out, plan.force).err());
    let started = Instant::now();
    let mut timings = Timings::new();
    crate::memo::next_build();
    lab::prefetch_toolchain();
    // Taken before anything is read: an edit saved during the build makes the next one full.
    let inputs = unchanged::Inputs::of(plan);
    if !plan.lab.rerun
        && out.diagnostics.is_empty()
        && let Some(record) = unchanged::check(plan, &inputs)
    {
        timings.lap("nothing changed (checked)");
        out.report = unchanged_summary(plan, &record, started, &timings);
        return out;
    }
    unchanged::forget(plan);
    let Some(mut series) = load(&plan.root, plan.drafts, &mut out.diagnostics) else {
        return out;
    };
    if let Some(url) = &plan.base_url {
        series.config.base_url = url.clone();
    }
    if let Some(url) = &plan.repository {
        series.config.repository = Some(url.clone());
    }
    lab::prefetch_pin(&series);
    timings.lap("content + markdown");
    let (series, rendered) =
        experiments_beside_math(series, plan, &mut out.diagnostics, &mut timings);
    timings.lap("experiments | math, citations");
    let (series, refs) = bind_and_check(series, &mut out.diagnostics);
    let (intro, problems) = intro::render(&series, &rendered.highlighter);
    out.diagnostics.extend(problems);
    timings.lap("quotes, links, cross-references");
    if plan.strict {
        out.diagnostics.promote_warnings();
    }
    // Any error keeps the old site until it is fixed.
    if out.diagnostics.has_errors() {
        out.sources = Some(series.sources());
        return out;
    }
    let rendered = Rendered { refs, ..rendered };
    let (downloads, take_homes, pin, left_out) = take_home(&series);
    timings.lap("experiment downloads");
    let (series, files) = pages_beside_search(series, take_homes, &rendered, &intro, &mut timings);
    let files = files.map(|mut files| {
        files.extend(downloads);
        files
    });
    let spare = plan.root.join(".attnbook/spare-output");
    let spare = plan.recycle_output.then_some(spare.as_path());
    match files.and_then(|files| emit::write_site(&plan.out, spare, files, &mut timings)) {
        Ok(count) => {
            out.report
                .extend(summary(&series, plan, count, started, &timings));
            // A build that had something to say says it again next time: only a silent one
            // is recorded.
            if out.diagnostics.is_empty() && !left_out {
                let built = unchanged::Built {
                    inputs,
                    config: &series.config,
                    pin,
                    chapters: series.chapters.len(),
                    files: count,
                    experiments: series.chapters.iter().filter(|c| c.run.is_some()).count(),
                };
                unchanged::save(plan, built);
            }
        }
        Err(e) => out.diagnostics.extend(e),
    }
    out.sources = Some(series.sources());
    // Freeing the series' pages and parses takes milliseconds that `serve`'s reload need not
    // wait for.
    std::thread::spawn(move || drop(series));
    out
}

/// The chapters' take-home experiment projects (`repository` in site.toml), each marked on
/// its chapter for the page to link. When they cannot be pinned to a commit the site goes
/// without them: the warning says why, and nothing about the content is wrong.
/// Also what the downloads were pinned to, and whether a warning said some were left out.
fn take_home(
    series: &Series<Bound>,
) -> (
    emit::Files,
    Vec<Option<String>>,
    Option<lab::PinQuery>,
    bool,
) {
    let lab::Downloads {
        archives: downloads,
        warnings,
        pin,
    } = lab::downloads(series);
    let left_out = !warnings.is_empty();
    for warning in warnings {
        eprintln!("{warning}");
    }
    let mut names = vec![None; series.chapters.len()];
    let files = downloads
        .into_iter()
        .map(|download| {
            let chapter = &series.chapters[download.chapter];
            names[download.chapter] = Some(download.file_name.clone());
            (
                PathBuf::from(&chapter.slug).join(download.file_name),
                download.bytes.into(),
            )
        })
        .collect();
    (files, names, pin, left_out)
}

/// Stages 3 and 5a-b side by side: the experiments compile and run on their own thread, and
/// the code of every chapter is highlighted on another, while citations and formulas render on
/// this one (and its rayon workers). Experiments are skipped when loading already
/// found errors.
fn experiments_beside_math(
    series: Series<Parsed>,
    plan: &BuildPlan,
    diagnostics: &mut Diagnostics,
    timings: &mut Timings,
) -> (Series<Ran>, Rendered) {
    let run_experiments = !diagnostics.has_errors();
    let highlighter = if series.config.highlight.enabled {
        render::highlight::Highlighter::load(render::cache::file(&series.root, "highlight"))
    } else {
        render::highlight::Highlighter::off()
    };
    let (runs, rendered) = std::thread::scope(|scope| {
        let series = &series;
        let lab = run_experiments.then(|| scope.spawn(|| timed(|| lab::run(series, &plan.lab))));
        // Code is highlighted ahead, off the critical path of the chapter bodies.
        let jobs: Vec<_> = series
            .chapters
            .iter()
            .flat_map(|c| html::highlight_jobs(&c.doc))
            .collect();
        let highlighter = &highlighter;
        let prefetch =
            (!jobs.is_empty()).then(|| scope.spawn(move || timed(|| highlighter.prefetch(jobs))));
        let ((citations, _), took) = timed(|| cite_all(series, diagnostics));
        timings.part("citations", took);
        let (maths, took) = timed(|| render_math(series, diagnostics));
        timings.part("math", took);
        if let Some(handle) = prefetch {
            timings.part("code highlighting", join(handle).1);
        }
        let runs = lab.map(|handle| {
            let (runs, took) = join(handle);
            timings.part("experiments", took);
            runs
        });
        (runs, (maths, citations))
    });
    let series = attach_runs(series, runs.unwrap_or_default(), diagnostics);
    let (maths, citations) = rendered;
    let rendered = Rendered {
        maths,
        refs: Vec::new(),
        citations,
        highlighter,
    };
    (series, rendered)
}

/// Stage 4 and the checks that need the experiments' results: quotes (drift is a warning
/// here), placements, links and cross-references.
fn bind_and_check(
    series: Series<Ran>,
    diagnostics: &mut Diagnostics,
) -> (Series<Bound>, Vec<Vec<Option<render::xref::Resolved>>>) {
    let (series, drift) = bind_quotes(series, diagnostics);
    diagnostics.extend(drift);
    check_placements(&series, diagnostics);
    diagnostics.extend(render::links::check(&series));
    let (refs, unresolved) = render::xref::resolve_all(&series);
    diagnostics.extend(unresolved);
    (series, refs)
}

/// Stages 5c-6a side by side: chapter bodies and pages render while the search index is cut
/// on its own thread; every output file, in memory.
fn pages_beside_search(
    series: Series<Bound>,
    take_homes: Vec<Option<String>>,
    rendered: &Rendered,
    intro: &str,
    timings: &mut Timings,
) -> (Series<Page>, Result<emit::Files, Vec<Diagnostic>>) {
    let sections = series
        .config
        .search
        .enabled
        .then(|| render::search::Sections::of(&series));
    let search_cache = render::cache::file(&series.root, "search");
    std::thread::scope(|scope| {
        let search =
            sections.map(|sections| scope.spawn(|| sections.index_json(Some(search_cache))));
        let series = render_chapters(series, take_homes, rendered);
        rendered.highlighter.save();
        timings.lap("chapter bodies");
        let files = emit::render_site(&series, intro, timings);
        let index = search.map(join);
        timings.lap("search index (wait)");
        let files = files.map(|mut files| {
            if let Some(index) = index {
                let path = PathBuf::from(render::search::INDEX_PATH);
                files.push((path, index.into_bytes().into()));
            }
            files
        });
        (series, files)
    })
}

/// The report of a successful build.
fn summary(
    series: &Series<Page>,
    plan: &BuildPlan,
    files: usize,
    started: Instant,
    timings: &Timings,
) -> Vec<String> {
    let runs: Vec<_> = series
        .chapters
        .iter()
        .filter_map(|c| c.run.as_ref())
        .collect();
    let cached = runs.iter().filter(|r| r.from_cache).count();
    let mut lines = vec![format!(
        "built {} chapter(s), {files} file(s) into {} in {:.2}s; experiments: {} run, {cached} cached",
        series.chapters.len(),
        plan.out.display(),
        started.elapsed().as_secs_f64(),
        runs.len() - cached,
    )];
    if plan.timings {
        lines.extend(timings.report());
    }
    lines
}

/// The report of a build that found nothing changed: the last build's figures, said so.
fn unchanged_summary(
    plan: &BuildPlan,
    record: &unchanged::Record,
    started: Instant,
    timings: &Timings,
) -> Vec<String> {
    let mut lines = vec![format!(
        "built {} chapter(s), {} file(s) into {} in {:.2}s; experiments: 0 run, {} cached; nothing changed since the last build",
        record.chapters,
        record.files,
        plan.out.display(),
        started.elapsed().as_secs_f64(),
        record.experiments,
    )];
    if plan.timings {
        lines.extend(timings.report());
    }
    lines
}

/// Runs `f` and measures it.
fn timed<T>(f: impl FnOnce() -> T) -> (T, std::time::Duration) {
    let started = Instant::now();
    let value = f();
    (value, started.elapsed())
}

/// Joins a scoped thread, passing its panic on.
fn join<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// What the page bodies need besides the chapters themselves.
struct Rendered {
    maths: Vec<Vec<Result<String, render::math::MathError>>>,
    /// Code highlighted ahead (and the rest on demand).
    highlighter: render::highlight::Highlighter,
    refs: Vec<Vec<Option<render::xref::Resolved>>>,
    citations: Vec<render::cite::ChapterCitations>,
}

/// Whether a chapter places the glossary's tables (`{{glossary}}`).
fn places_glossary(chapter: &Bound) -> bool {
    chapter
        .doc
        .pieces
        .iter()
        .any(|p| matches!(p, markdown::Piece::Glossary { .. }))
}

/// The glossary terms chapters link at their first use: to the page that places the tables.
fn glossary_terms(series: &Series<Bound>, base_path: &str) -> Vec<render::glossary::TermLink> {
    let page = series.chapters.iter().find(|c| places_glossary(c));
    match (&series.glossary, page) {
        (Some(glossary), Some(page)) => {
            render::glossary::term_links(glossary, &render::chapter_url(base_path, &page.slug))
        }
        _ => Vec::new(),
    }
}

/// The inline TeX of a run's table headers and captions, rendered (a formula KaTeX rejects is
/// left out, and the page shows its TeX).
fn table_math(
    renderer: &MathRenderer,
    cache: &std::sync::Mutex<render::math::MathCache>,
    run: Option<&lab::ChapterRun>,
) -> std::collections::BTreeMap<String, String> {
    let texts = html::table_formulas(run);
    let formulas: Vec<(&str, bool)> = texts.iter().map(|tex| (tex.as_str(), false)).collect();
    let rendered = renderer.render_all_shared(&formulas, cache);
    texts
        .iter()
        .zip(rendered)
        .filter_map(|(tex, rendered)| Some((tex.clone(), readable_in_a_cell(&rendered.ok()?))))
        .collect()
}

/// Keeps every chapter's table formulas in the table-math cache (only the bodies rendered
/// again looked theirs up) and saves it.
fn save_table_math<C: AsRef<lab::Ran>>(
    series: &Series<C>,
    renderer: &MathRenderer,
    cache: std::sync::Mutex<render::math::MathCache>,
) {
    let mut cache = cache
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for chapter in series.chapters.iter().map(AsRef::as_ref) {
        let texts = html::table_formulas(chapter.run.as_ref());
        let formulas: Vec<(&str, bool)> = texts.iter().map(|tex| (tex.as_str(), false)).collect();
        renderer.keep(&formulas, &mut cache);
    }
    cache.save();
}

/// KaTeX's output with its visible rendering, not its MathML, exposed to assistive
/// technology: a table header must have text that is both visible and read out (axe's
/// `empty-table-header`), and KaTeX hides the visible part from screen readers and the read
/// part from the eye.
fn readable_in_a_cell(katex: &str) -> String {
    katex
        .replace(
            "<span class=\"katex-mathml\">",
            "<span class=\"katex-mathml\" aria-hidden=\"true\">",
        )
        .replace(
            "<span class=\"katex-html\" aria-hidden=\"true\">",
            "<span class=\"katex-html\">",
        )
}

/// Stage 5c: every chapter's body and heading HTML, chapters in parallel.
fn render_chapters(
    series: Series<Bound>,
    take_homes: Vec<Option<String>>,
    rendered: &Rendered,
) -> Series<Page> {
    let base_path = series.config.base_path();
    let fold_lines = series.config.lab.fold_lines;
    let glossary = series
        .glossary
        .as_ref()
        .map(|g| g.html.clone())
        .unwrap_or_default();
    let highlighter = &rendered.highlighter;
    let terms = glossary_terms(&series, &base_path);
    // Tables' headers and captions are known only now, after the experiments ran.
    // Their formulas are kept by content hash like the prose's: starting KaTeX's engine for
    // them was most of the cost of rendering an edited chapter's body again.
    let math_renderer = MathRenderer::new(&series.config.katex.macros);
    let table_cache = std::sync::Mutex::new(render::math::MathCache::load(render::cache::file(
        &series.root,
        "table-math",
    )));
    let take_homes: Vec<(Option<String>, String)> = take_homes
        .into_iter()
        .enumerate()
        .map(|(i, take_home)| {
            let previews = render::preview::cross_page(&series, &rendered.maths, &rendered.refs, i);
            (take_home, previews)
        })
        .collect();
    let previews: Vec<&str> = take_homes.iter().map(|(_, p)| p.as_str()).collect();
    let bodies = BodyKeys::of(&series, rendered, &format!("{terms:?}"), &previews);
    let store = &render::cache::Blobs::open(series.root.join(".attnbook/cache/render/bodies"));
    let stored = series.map_chapters(|chapters| {
        let per_chapter = rendered
            .maths
            .par_iter()
            .zip(&rendered.refs)
            .zip(&rendered.citations)
            .zip(take_homes);
        chapters
            .into_par_iter()
            .zip(per_chapter)
            .enumerate()
            .map(
                |(index, (mut bound, (((maths, refs), citations), take_home)))| {
                    let (take_home, previews) = take_home;
                    let fresh = || {
                        let table_math =
                            table_math(&math_renderer, &table_cache, bound.run.as_ref());
                        let inputs = html::PageInputs {
                            doc: &bound.doc,
                            maths,
                            run: bound.run.as_ref(),
                            bindings: &bound.bindings,
                            claims: &bound.claims,
                            base_path: &base_path,
                            refs,
                            citations: &citations.inline,
                            highlighter,
                            fold_lines,
                            glossary: &glossary,
                            terms: if places_glossary(&bound) { &[] } else { &terms },
                            previews: &previews,
                            table_math: &table_math,
                            points: &bound.points,
                        };
                        let mut parts = vec![html::body_html(&inputs)];
                        parts.extend(html::headings_html(&inputs));
                        parts
                    };
                    let stored = store
                        .get_or_make(&bodies.key(index), || {
                            Ok::<_, ()>(render::cache::join_texts(&fresh()))
                        })
                        .ok()
                        .and_then(|bytes| render::cache::split_texts(&bytes));
                    let mut parts = stored.unwrap_or_else(fresh).into_iter();
                    let mut html = parts.next().unwrap_or_default();
                    let headings: Vec<String> = parts.collect();
                    let doc = &mut bound.ran.parsed.doc;
                    for (heading, html) in doc.headings.iter_mut().zip(headings) {
                        heading.html = html;
                    }
                    if !citations.list_html.is_empty() {
                        html.push_str(&citations.list_html);
                        doc.headings.push(markdown::Heading {
                            level: 2,
                            id: "bibliography".into(),
                            classes: Vec::new(),
                            attrs: Vec::new(),
                            text: crate::messages::get("bibliography"),
                            span: 0..0,
                            html: crate::render::html::escape(&crate::messages::get(
                                "bibliography",
                            )),
                        });
                    }
                    // The body is made from exactly what its key hashes, so the key and the
                    // reference list identify it (hashing the series' 12 MB of bodies again
                    // was 4 % of a no-change build).
                    let inputs = bodies.key(index);
                    let digest = render::cache::Key::new("body html")
                        .bytes(inputs.as_bytes())
                        .bytes(citations.list_html.as_bytes())
                        .finish();
                    Page {
                        bound,
                        digest,
                        html,
                        take_home,
                        inputs,
                    }
                },
            )
            .collect()
    });
    store.prune();
    save_table_math(&stored, &math_renderer, table_cache);
    stored
}

/// What each chapter body is rendered from, hashed once per build, so a build renders only
/// the bodies whose inputs changed. A body reads its own chapter (source, results, citations,
/// inlined diagrams), and the other chapters only through what is resolved before it is
/// rendered: its quotes' and claims' bindings (values of any chapter), its cross-references
/// (titles, numbers and anchors of any chapter) and its previews of other pages; plus the
/// config, the glossary and its term links. Code highlighting is decided by the source and the
/// binary, formulas by the source and the KaTeX macros of the config. A prose edit of one
/// chapter thus renders that body again, and another only if what it shows of the edited one
/// changed.
struct BodyKeys {
    series: String,
    chapters: Vec<String>,
}

impl BodyKeys {
    fn of(series: &Series<Bound>, rendered: &Rendered, terms: &str, previews: &[&str]) -> BodyKeys {
        let mut key = render::cache::Key::new("chapter bodies");
        key.bytes(render::cache::binary_identity().as_bytes())
            .bytes(terms.as_bytes())
            .bytes(format!("{:?}", series.config).as_bytes())
            .bytes(
                series
                    .glossary
                    .as_ref()
                    .map_or("", |g| g.html.as_str())
                    .as_bytes(),
            );
        let chapters: Vec<String> = series
            .chapters
            .par_iter()
            .zip(&rendered.citations)
            .zip(&rendered.refs)
            .zip(previews)
            .map(|(((c, citations), refs), previews)| {
                let mut own = render::cache::Key::new("chapter");
                own.bytes(c.path.to_string_lossy().as_bytes())
                    .bytes(c.source.as_bytes())
                    .bytes(
                        c.run
                            .as_ref()
                            .map(|r| r.identity())
                            .unwrap_or_default()
                            .as_bytes(),
                    )
                    .json(&citations.inline)
                    .json(
                        &c.doc
                            .image_figures
                            .iter()
                            .map(|f| f.svg.as_deref())
                            .collect::<Vec<_>>(),
                    )
                    // As JSON: Debug's escaping of every non-ASCII character made these three
                    // a tenth of a no-change build.
                    .json(&c.bindings)
                    .json(&c.claims)
                    .json(&c.points)
                    .json(refs)
                    .bytes(previews.as_bytes());
                own.finish()
            })
            .collect();
        BodyKeys {
            series: key.finish(),
            chapters,
        }
    }

    fn key(&self, index: usize) -> String {
        render::cache::Key::new("chapter body")
            .bytes(self.series.as_bytes())
            .bytes(self.chapters[index].as_bytes())
            .finish()
    }
}
