//! The build as a flat list of stages (DESIGN §2):
//!
//! 1. `content`  - load site.toml and the chapters, check front matter;
//! 2. `markdown` - parse each chapter once into pieces (math, experiments, quotes, headings);
//! 3. `lab`      - compile and run the experiment blocks (cached by content hash);
//! 4. `quotes`   - bind quoted numbers to the rerun values and check them;
//! 5. `render`   - math through KaTeX, pages through Tera;
//! 6. `write`    - write everything to a temporary directory, then swap it into `--out`.
//!
//! `verify` runs stages 1-4 with the cache bypassed and reports drift instead of rendering.

use std::path::{Path, PathBuf};
use std::time::Instant;

use include_dir::{Dir, include_dir};

use crate::content::{self, Series};
use crate::diagnostic::{Diagnostic, Diagnostics, Location};
use crate::lab::{self, LabPlan};
use crate::markdown::{self, Piece, PlacementKind};
use crate::quotes::{self, Status, fix, output};
use crate::render::{self, html, math::MathRenderer};

/// Default static assets (CSS, JS, KaTeX CSS and fonts), embedded so any site looks right.
static DEFAULT_STATIC: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/static");

/// What `build` should do.
#[derive(Debug, Clone)]
pub struct BuildPlan {
    /// Site root.
    pub root: PathBuf,
    /// Output directory.
    pub out: PathBuf,
    /// Overrides `base_url` of site.toml.
    pub base_url: Option<String>,
    /// Include drafts.
    pub drafts: bool,
    /// Warnings fail the build.
    pub strict: bool,
    /// Experiment settings.
    pub lab: LabPlan,
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
    /// The loaded series, for printing snippets.
    pub series: Option<Series>,
    /// The site root (for reading files to show in diagnostics).
    pub root: PathBuf,
    /// The errors are findings of `check` (exit 1), not broken input (exit 2).
    pub errors_are_findings: bool,
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

/// Stages 1-2: load and parse. Errors stop here.
fn load(root: &Path, drafts: bool, diagnostics: &mut Diagnostics) -> Option<Series> {
    let mut series = match content::load(root, drafts) {
        Ok(series) => series,
        Err(d) => {
            diagnostics.extend(d.into_vec());
            return None;
        }
    };
    for chapter in &mut series.chapters {
        let (doc, problems) = markdown::parse(chapter);
        chapter.doc = doc;
        diagnostics.extend(problems);
    }
    Some(series)
}

/// Stage 3: run the experiments and attach their results.
fn run_lab(series: &mut Series, plan: &LabPlan, diagnostics: &mut Diagnostics) {
    match lab::run(series, plan) {
        Ok(runs) => {
            for (chapter, run) in series.chapters.iter_mut().zip(runs) {
                chapter.run = run;
            }
        }
        Err(errors) => diagnostics.extend(errors),
    }
}

/// Stage 4: bind quotes; drift becomes warnings (build) or failures (verify).
fn bind_quotes(series: &mut Series, diagnostics: &mut Diagnostics) -> Vec<Diagnostic> {
    let (bindings, errors) = quotes::bind(series);
    diagnostics.extend(errors);
    let mut drift = Vec::new();
    for (chapter, bindings) in series.chapters.iter_mut().zip(bindings) {
        for (quote, binding) in chapter.doc.quotes.iter().zip(&bindings) {
            if binding.status == Status::Drift {
                drift.push(drift_diagnostic(
                    chapter.location(quote.number.span.clone()),
                    &chapter.source[quote.number.span.clone()],
                    binding,
                ));
            }
        }
        chapter.bindings = bindings;
    }
    drift
}

fn drift_diagnostic(location: Location, quoted: &str, binding: &quotes::Binding) -> Diagnostic {
    let rerun = quotes::full(binding.rerun.unwrap_or(f64::NAN));
    Diagnostic::warning(format!(
        "quoted {quoted}  rerun {rerun}  ({})",
        binding.rule
    ))
    .at(location)
    .with_help("run `attnbook verify --fix` to update the prose, or change the experiment")
}

/// Placements must name a table or figure the chapter recorded.
fn check_placements(series: &Series, diagnostics: &mut Diagnostics) {
    for chapter in &series.chapters {
        let results = chapter.run.as_ref().map(|r| &r.results);
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

/// Stage 5a: citations and reference lists from the bibliography.
fn cite_all(series: &Series, diagnostics: &mut Diagnostics) -> Vec<render::cite::ChapterCitations> {
    let bibliography = match render::cite::load(&series.root) {
        Ok(bib) => bib,
        Err(errors) => {
            diagnostics.extend(errors);
            None
        }
    };
    let (citations, problems) = render::cite::render(series, bibliography.as_ref());
    diagnostics.extend(problems);
    citations
}

/// Stage 5b: render every formula of the series; KaTeX errors become diagnostics.
fn render_math(
    series: &Series,
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
    let mut cache = render::math::MathCache::load(series.root.join(".attnbook/cache/math.json"));
    let all = renderer.render_all(&formulas, &mut cache);
    cache.save();
    let mut rendered = all.into_iter();
    let mut per_chapter = Vec::new();
    for chapter in &series.chapters {
        let results: Vec<_> = rendered.by_ref().take(chapter.doc.maths.len()).collect();
        for (m, r) in chapter.doc.maths.iter().zip(&results) {
            if let Err(e) = r {
                diagnostics.push(
                    // A warning, as DESIGN §3.2 asks: the page shows the formula in a red box,
                    // and `--strict` (CI, publishing) turns it into a failure.
                    Diagnostic::warning(format!("KaTeX cannot render this formula: {}", e.message))
                        .at(chapter.location(m.span.clone()))
                        .with_help("fix the TeX (KaTeX supports most of LaTeX math; see katex.org/docs/supported); the page shows it in a red box until then"),
                );
            }
        }
        per_chapter.push(results);
    }
    per_chapter
}

/// `attnbook build`.
pub fn build(plan: &BuildPlan) -> Outcome {
    let mut out = Outcome {
        root: plan.root.clone(),
        ..Outcome::default()
    };
    let _lock = match lock_site(&plan.root) {
        Ok(lock) => lock,
        Err(d) => {
            out.diagnostics.push(d);
            return out;
        }
    };
    let started = Instant::now();
    let Some(mut series) = load(&plan.root, plan.drafts, &mut out.diagnostics) else {
        return out;
    };
    if let Some(url) = &plan.base_url {
        series.config.base_url = url.clone();
    }
    if !out.diagnostics.has_errors() {
        run_lab(&mut series, &plan.lab, &mut out.diagnostics);
    }
    let drift = bind_quotes(&mut series, &mut out.diagnostics);
    out.diagnostics.extend(drift);
    check_placements(&series, &mut out.diagnostics);
    out.diagnostics.extend(render::links::check(&series));
    let (refs, unresolved) = render::xref::resolve_all(&series);
    out.diagnostics.extend(unresolved);
    let citations = cite_all(&series, &mut out.diagnostics);
    let maths = render_math(&series, &mut out.diagnostics);
    // A rejected formula is an error like any other: the old site stays until it is fixed.
    if plan.strict {
        out.diagnostics.promote_warnings();
    }
    if out.diagnostics.has_errors() {
        out.series = Some(series);
        return out;
    }
    render_chapters(
        &mut series,
        &Rendered {
            maths,
            refs,
            citations,
        },
    );
    match render_site(&series).and_then(|files| write_site(&plan.out, files)) {
        Ok(count) => {
            let runs: Vec<_> = series
                .chapters
                .iter()
                .filter_map(|c| c.run.as_ref())
                .collect();
            let cached = runs.iter().filter(|r| r.from_cache).count();
            out.report.push(format!(
                "built {} chapter(s), {count} file(s) into {} in {:.2}s; experiments: {} run, {cached} cached",
                series.chapters.len(),
                plan.out.display(),
                started.elapsed().as_secs_f64(),
                runs.len() - cached,
            ));
        }
        Err(e) => out.diagnostics.extend(e),
    }
    out.series = Some(series);
    out
}

/// What the page bodies need besides the chapters themselves.
struct Rendered {
    maths: Vec<Vec<Result<String, render::math::MathError>>>,
    refs: Vec<Vec<Option<render::xref::Resolved>>>,
    citations: Vec<render::cite::ChapterCitations>,
}

fn render_chapters(series: &mut Series, rendered: &Rendered) {
    let base_path = series.config.base_path();
    let per_chapter = rendered
        .maths
        .iter()
        .zip(&rendered.refs)
        .zip(&rendered.citations);
    for (chapter, ((maths, refs), citations)) in series.chapters.iter_mut().zip(per_chapter) {
        let inputs = html::PageInputs {
            doc: &chapter.doc,
            maths,
            run: chapter.run.as_ref(),
            bindings: &chapter.bindings,
            base_path: &base_path,
            refs,
            citations: &citations.inline,
        };
        chapter.html = html::body_html(&inputs);
        let headings: Vec<String> = (0..chapter.doc.headings.len())
            .map(|i| html::heading_html(&inputs, i))
            .collect();
        for (heading, html) in chapter.doc.headings.iter_mut().zip(headings) {
            heading.html = html;
        }
        if !citations.list_html.is_empty() {
            chapter.html.push_str(&citations.list_html);
            chapter.doc.headings.push(markdown::Heading {
                level: 2,
                id: "bibliography".into(),
                text: "参考文献".into(),
                span: 0..0,
                html: "参考文献".into(),
            });
        }
    }
}

/// Every output file as `(relative path, bytes)`.
type Files = Vec<(PathBuf, Vec<u8>)>;

fn render_site(series: &Series) -> Result<Files, Vec<Diagnostic>> {
    let tera = render::load_templates(&series.root)?;
    let values = quotes::ValueIndex::new(series);
    let mut files: Files = Vec::new();
    let mut errors = Vec::new();
    for (i, chapter) in series.chapters.iter().enumerate() {
        match render::chapter_page(&tera, series, &values, i) {
            Ok(page) => files.push((
                PathBuf::from(&chapter.slug).join("index.html"),
                page.into_bytes(),
            )),
            Err(d) => errors.push(d),
        }
    }
    let intro = intro_html(series);
    match render::index_page(&tera, series, &intro) {
        Ok(page) => files.push((PathBuf::from("index.html"), page.into_bytes())),
        Err(d) => errors.push(d),
    }
    let pages = [("404.html", render::not_found_page(&tera, series))]
        .into_iter()
        .chain(["atom.xml", "sitemap.xml"].map(|t| (t, render::feed(&tera, series, t))));
    for (name, page) in pages {
        match page {
            Ok(text) => files.push((PathBuf::from(name), text.into_bytes())),
            Err(d) => errors.push(d),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    files.push((PathBuf::from(".nojekyll"), Vec::new()));
    let robots = format!(
        "User-agent: *\nAllow: /\nSitemap: {}sitemap.xml\n",
        series.config.base_url_slash()
    );
    files.push((PathBuf::from("robots.txt"), robots.into_bytes()));
    files.push((
        PathBuf::from("highlight.css"),
        render::highlight::stylesheet().into_bytes(),
    ));
    files.extend(render::search::index_files(series));
    static_files(&series.root, &mut files).map_err(|e| vec![e])?;
    Ok(files)
}

/// The index introduction: `intro` of site.toml as Markdown (math rendered too).
fn intro_html(series: &Series) -> String {
    let renderer = MathRenderer::new(&series.config.katex.macros);
    let events = markdown::new_parser(&series.config.intro).map(|(event, _)| match event {
        pulldown_cmark::Event::InlineMath(tex) => pulldown_cmark::Event::InlineHtml(
            renderer
                .render(&tex, false)
                .unwrap_or_else(|_| html::escape(&tex))
                .into(),
        ),
        pulldown_cmark::Event::DisplayMath(tex) => pulldown_cmark::Event::Html(
            renderer
                .render(&tex, true)
                .unwrap_or_else(|_| html::escape(&tex))
                .into(),
        ),
        other => other,
    });
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

/// Embedded defaults first, then the site's `static/` on top.
fn static_files(root: &Path, files: &mut Files) -> Result<(), Diagnostic> {
    let mut add = |rel: PathBuf, bytes: Vec<u8>| {
        files.retain(|(p, _)| *p != rel);
        files.push((rel, bytes));
    };
    let mut stack = vec![&DEFAULT_STATIC];
    while let Some(dir) = stack.pop() {
        stack.extend(dir.dirs());
        for file in dir.files() {
            add(file.path().to_path_buf(), file.contents().to_vec());
        }
    }
    let dir = root.join("static");
    if dir.is_dir() {
        for entry in walkdir::WalkDir::new(&dir)
            .sort_by_file_name()
            .into_iter()
            .filter_map(Result::ok)
        {
            if entry.file_type().is_file() {
                let rel = entry
                    .path()
                    .strip_prefix(&dir)
                    .unwrap_or(entry.path())
                    .to_path_buf();
                let bytes = std::fs::read(entry.path()).map_err(|e| {
                    Diagnostic::error(format!("cannot read {}: {e}", entry.path().display()))
                })?;
                add(rel, bytes);
            }
        }
    }
    Ok(())
}

/// Stage 6: writes into a fresh directory next to `out`, then swaps it in.
fn write_site(out: &Path, files: Files) -> Result<usize, Vec<Diagnostic>> {
    let io = |what: &str, e: std::io::Error| {
        vec![
            Diagnostic::error(format!("cannot {what} {}: {e}", out.display()))
                .with_help("check that the output directory's parent exists and is writable"),
        ]
    };
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| io("create the parent of", e))?;
    let staging = tempfile::Builder::new()
        .prefix(".attnbook-out-")
        .tempdir_in(parent)
        .map_err(|e| io("stage output next to", e))?;
    let _registered = crate::interrupt::staging_dir(staging.path().to_path_buf());
    let count = files.len();
    for (rel, bytes) in files {
        let path = staging.path().join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io("write", e))?;
        }
        std::fs::write(&path, bytes).map_err(|e| io("write", e))?;
    }
    let staged = staging.keep();
    let old = parent.join(format!(".attnbook-old-{}", std::process::id()));
    // An interrupt waits for the two renames: `out` is never left missing.
    crate::interrupt::critical(|| {
        if out.exists() {
            std::fs::rename(out, &old).map_err(|e| io("replace", e))?;
        }
        if let Err(e) = std::fs::rename(&staged, out) {
            let _ = std::fs::rename(&old, out);
            let _ = std::fs::remove_dir_all(&staged);
            return Err(io("replace", e));
        }
        Ok(())
    })?;
    let _ = std::fs::remove_dir_all(&old);
    Ok(count)
}

/// `attnbook check`: links, anchors, quotes, placements and math, without running experiments.
///
/// Names of values, figures and tables come from the last cached run of each chapter; a chapter
/// that never ran is checked for everything but those names.
pub fn check(root: &Path) -> Outcome {
    let mut out = Outcome {
        root: root.to_path_buf(),
        ..Outcome::default()
    };
    let Some(mut series) = load(root, true, &mut out.diagnostics) else {
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
    for (chapter, run) in series.chapters.iter_mut().zip(runs) {
        chapter.run = run;
    }
    let mut names = Diagnostics::default();
    let _drift = bind_quotes(&mut series, &mut names);
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
    let _ = cite_all(&series, &mut out.diagnostics);
    let _ = render_math(&series, &mut out.diagnostics);
    out.diagnostics.promote_warnings();
    out.errors_are_findings = true;
    let formulas: usize = series.chapters.iter().map(|c| c.doc.maths.len()).sum();
    let links: usize = series.chapters.iter().map(|c| c.doc.links.len()).sum();
    out.report.push(format!(
        "checked {} chapter(s): {formulas} formulas, {links} links{}",
        series.chapters.len(),
        if never_ran.is_empty() {
            String::new()
        } else {
            format!("; never built, names unchecked: {}", never_ran.join(", "))
        }
    ));
    out.series = Some(series);
    out
}

fn mentions_any(d: &Diagnostic, slugs: &[String]) -> bool {
    d.location
        .as_ref()
        .is_some_and(|l| slugs.iter().any(|s| crate::content::slug_of(&l.path) == *s))
}

/// `attnbook new SLUG`: a chapter with the next number and valid front matter.
pub fn new_chapter(plan: &crate::cli::NewPlan) -> Outcome {
    let mut out = Outcome {
        root: plan.root.clone(),
        ..Outcome::default()
    };
    let valid = !plan.slug.is_empty()
        && plan
            .slug
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !plan.slug.starts_with('-')
        && !plan.slug.ends_with('-');
    if !valid {
        out.diagnostics.push(
            Diagnostic::error(format!("`{}` is not a valid slug", plan.slug)).with_help(
                "use lowercase ASCII letters, digits and `-`, e.g. `attention-variants`",
            ),
        );
        return out;
    }
    let series = match content::load(&plan.root, true) {
        Ok(series) => series,
        Err(d) => {
            out.diagnostics.extend(d.into_vec());
            return out;
        }
    };
    if series.chapters.iter().any(|c| c.slug == plan.slug) {
        out.diagnostics.push(Diagnostic::error(format!(
            "a chapter with slug `{}` already exists",
            plan.slug
        )));
        return out;
    }
    let number = series
        .chapters
        .iter()
        .map(|c| c.front.number)
        .max()
        .unwrap_or(0)
        + 1;
    let path = plan
        .root
        .join("content")
        .join(format!("{number:02}-{}.md", plan.slug));
    let today = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let text = new_chapter_text(&plan.title, number, &today[..10]);
    if let Err(e) = std::fs::write(&path, text) {
        out.diagnostics.push(Diagnostic::error(format!(
            "cannot write {}: {e}",
            path.display()
        )));
        return out;
    }
    out.report.push(format!(
        "created {}",
        path.strip_prefix(&plan.root).unwrap_or(&path).display()
    ));
    out
}

fn new_chapter_text(title: &str, number: u32, date: &str) -> String {
    let title = title.replace('\\', "\\\\").replace('"', "\\\"");
    format!(
        "+++\ntitle = \"{title}\"\nnumber = {number}\ndate = {date}\ntags = []\ncategory = \"attention\"\nsummary = \"\"\n+++\n\n\
         ## 引言 {{#intro}}\n\n在这里写正文。公式写成 $e_j = s^\\top h_j$。\n\n\
         ```rust,experiment\nlet w = softmax(&array![1.0, 2.0, 3.0]);\nprintln!(\"{{:.3}}\", w);\nlab.value(\"w.max\", w[2]);\n```\n\n\
         最大的权重是 [0.67]{{=w.max}}。\n"
    )
}

/// `attnbook verify`: rerun everything, check quotes and pinned outputs, optionally fix.
pub fn verify(plan: &VerifyPlan) -> Outcome {
    let mut out = Outcome {
        root: plan.root.clone(),
        ..Outcome::default()
    };
    let _lock = match lock_site(&plan.root) {
        Ok(lock) => lock,
        Err(d) => {
            out.diagnostics.push(d);
            return out;
        }
    };
    let Some(mut series) = load(&plan.root, true, &mut out.diagnostics) else {
        return out;
    };
    if let Err(d) = select_chapters(&series, &plan.chapters) {
        out.diagnostics.push(d);
        return out;
    }
    let mut lab_plan = plan.lab.clone();
    lab_plan.rerun = true;
    run_lab(&mut series, &lab_plan, &mut out.diagnostics);
    let drift = bind_quotes(&mut series, &mut out.diagnostics);
    if out.diagnostics.has_errors() {
        out.series = Some(series);
        return out;
    }
    let selected = |slug: &str, path: &Path| {
        plan.chapters.is_empty()
            || plan
                .chapters
                .iter()
                .any(|c| c == slug || Path::new(c) == path || path.ends_with(c))
    };
    let mut report = VerifyReport::default();
    for chapter in series
        .chapters
        .iter()
        .filter(|c| selected(&c.slug, &c.path))
    {
        report.check_chapter(chapter);
    }
    let _ = drift;
    if plan.fix {
        out.report
            .extend(report.apply_fixes(&series).unwrap_or_else(|e| {
                out.diagnostics.push(e);
                Vec::new()
            }));
    } else {
        out.failed_checks = report.drifted() > 0;
    }
    out.report.splice(0..0, report.lines(plan.json));
    out.series = Some(series);
    out
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
            let fresh = run
                .blocks
                .get(exp.index)
                .map(|b| b.stdout.as_str())
                .unwrap_or("");
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
