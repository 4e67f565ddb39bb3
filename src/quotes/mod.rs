//! Stage 4: bind quoted numbers to experiment values and check them (DESIGN §3.4, §3.5).
//!
//! The syntax `[TEXT]{=name TOLERANCE}` is recognised where the chapter is parsed
//! ([`crate::markdown::quote`]); [`bind`] looks every quote up among the values
//! the experiments recorded, formats the rerun value like the quote and checks the tolerance;
//! [`output`] compares pinned outputs token by token; [`fix`] rewrites drifted numbers.

pub mod claims;
pub mod fix;
pub mod output;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use rayon::prelude::*;

use crate::content::{Chapter, Series};
use crate::diagnostic::{Diagnostic, closest, did_you_mean};
use crate::lab::{Ran, RecordedLines};
use crate::markdown::Parsed;
use crate::markdown::claim::Op;
use crate::markdown::quote::{QuoteSyntax, QuotedNumber, Relation, Tolerance};

/// A chapter with its quotes bound to the rerun: this stage's output. It dereferences to the
/// [`Ran`] chapter.
#[derive(Debug, Clone)]
pub struct Bound {
    /// The chapter with its experiment results.
    pub ran: Ran,
    /// One binding per quote, in `doc.quotes` order.
    pub bindings: Vec<Binding>,
    /// One verdict per claim, in `doc.claims` order.
    pub claims: Vec<claims::ClaimBinding>,
    /// The quotes and claims bound again at every other point of the chapter's parameter
    /// grids (see [`BoundPoint`]), in the order of `run.points`.
    pub points: Vec<BoundPoint>,
}

/// A chapter's quotes and claims bound to its run at one grid point. Only those inside an
/// `{{explore: param}}` passage are shown and checked at the point; the source's text is the
/// default's, so a quote whose rule compares the rerun with the quoted number (rounding, `±`,
/// `~%`) is shown in the quote's format and not compared at other points, while bounds
/// (`>=`, `<=`, `lo..hi`), relative bounds and claims must hold at every point.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BoundPoint {
    /// The parameter.
    pub param: String,
    /// The point's index in its grid.
    pub index: usize,
    /// `name = value`.
    pub text: String,
    /// One binding per quote, in `doc.quotes` order.
    pub bindings: Vec<Binding>,
    /// One verdict per claim, in `doc.claims` order.
    pub claims: Vec<claims::ClaimBinding>,
}

impl Bound {
    /// The bindings and verdicts at point `index` of `param`'s grid: the chapter's own at the
    /// default.
    pub fn at(
        &self,
        param: &crate::markdown::experiment::Param,
        index: usize,
    ) -> Option<(&[Binding], &[claims::ClaimBinding])> {
        if index == param.default {
            return Some((&self.bindings, &self.claims));
        }
        self.points
            .iter()
            .find(|p| p.param == param.name && p.index == index)
            .map(|p| (p.bindings.as_slice(), p.claims.as_slice()))
    }

    /// The parameter an explorable passage varies.
    pub fn param_of(
        &self,
        passage: &crate::markdown::explore::Explore,
    ) -> Option<&crate::markdown::experiment::Param> {
        self.doc
            .experiments
            .get(passage.block)
            .and_then(|e| e.options.param.as_ref())
    }
}

impl std::ops::Deref for Bound {
    type Target = Ran;
    fn deref(&self) -> &Ran {
        &self.ran
    }
}

impl AsRef<Chapter> for Bound {
    fn as_ref(&self) -> &Chapter {
        &self.ran.parsed.chapter
    }
}

impl AsRef<Parsed> for Bound {
    fn as_ref(&self) -> &Parsed {
        &self.ran.parsed
    }
}

impl AsRef<Ran> for Bound {
    fn as_ref(&self) -> &Ran {
        &self.ran
    }
}

impl AsRef<Bound> for Bound {
    fn as_ref(&self) -> &Bound {
        self
    }
}

/// Whether a quote agrees with the rerun.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Status {
    /// Within tolerance.
    Ok,
    /// Outside tolerance.
    Drift,
    /// The name is unknown.
    Unbound,
}

/// A quote bound to its rerun value.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Binding {
    /// The value name.
    pub name: String,
    /// The text shown on the page: the rerun value formatted like the quote, with its text.
    pub shown: String,
    /// Hover text: the full rerun value, the quoted text and the rule.
    pub title: String,
    /// The verdict.
    pub status: Status,
    /// The full rerun value.
    pub rerun: Option<f64>,
    /// The rerun value formatted like the quoted number (what `--fix` writes).
    pub formatted: String,
    /// The rule, e.g. `rounding to 2 decimals`.
    pub rule: String,
    /// The code line that recorded the value, when the run reported it.
    pub source: Option<Source>,
}

/// Where a value was recorded: the line of its `lab.value` call in a chapter's Markdown.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Source {
    /// The slug of the chapter whose block recorded it.
    pub chapter: String,
    /// Its 1-based Markdown line (the page's code line `L{line}`).
    pub line: usize,
    /// Recorded by the quoting chapter itself (the link stays on the page).
    pub local: bool,
}

/// Every value every chapter recorded, flattened: `slug -> name -> value`, and beside it
/// `slug -> name -> Markdown line` of the call that recorded it. A chapter's maps are shared,
/// so the index at one grid point ([`ValueIndex::with_chapter`]) copies no other chapter's.
#[derive(Debug, Default)]
pub struct ValueIndex {
    chapters: BTreeMap<String, Arc<BTreeMap<String, f64>>>,
    lines: BTreeMap<String, Arc<BTreeMap<String, usize>>>,
}

impl ValueIndex {
    /// This index with `chapter`'s values replaced by those of `run` (one of its grid points).
    pub fn with_chapter(&self, chapter: &Ran, run: &crate::lab::ChapterRun) -> ValueIndex {
        let (values, lines) = Self::chapter_values(chapter, run);
        let mut chapters = self.chapters.clone();
        let mut all_lines = self.lines.clone();
        chapters.insert(chapter.slug.clone(), Arc::new(values));
        all_lines.insert(chapter.slug.clone(), Arc::new(lines));
        ValueIndex {
            chapters,
            lines: all_lines,
        }
    }

    /// One chapter's values of `run`, flattened, and their recording lines.
    fn chapter_values(
        chapter: &Ran,
        run: &crate::lab::ChapterRun,
    ) -> (BTreeMap<String, f64>, BTreeMap<String, usize>) {
        let mut values = BTreeMap::new();
        let mut lines = BTreeMap::new();
        let recorded = RecordedLines::new(&chapter.doc.experiments);
        for value in &run.results.values {
            let line = recorded.markdown_line(&value.file, value.line);
            for (suffix, x) in flatten(&value.shape, &value.data) {
                let name = format!("{}{suffix}", value.name);
                if let Some(line) = line {
                    lines.insert(name.clone(), line);
                }
                values.insert(name, x);
            }
        }
        (values, lines)
    }

    /// Flattens the recorded values (`name`, `name.i`, `name.i.j`), chapter by chapter in
    /// parallel.
    pub fn new<C: AsRef<Ran> + Sync>(series: &Series<C>) -> Self {
        let flattened: Vec<_> = series
            .chapters
            .par_iter()
            .map(AsRef::as_ref)
            .map(|chapter: &Ran| {
                let (values, lines) = chapter
                    .run
                    .as_ref()
                    .map(|run| Self::chapter_values(chapter, run))
                    .unwrap_or_default();
                (chapter.slug.clone(), values, lines)
            })
            .collect();
        let mut chapters = BTreeMap::new();
        let mut all_lines = BTreeMap::new();
        for (slug, values, lines) in flattened {
            chapters.insert(slug.clone(), Arc::new(values));
            all_lines.insert(slug, Arc::new(lines));
        }
        ValueIndex {
            chapters,
            lines: all_lines,
        }
    }

    /// Where `name` (as quoted from `slug`) was recorded, if the run said.
    pub fn source(&self, slug: &str, name: &str) -> Option<Source> {
        let (chapter, local) = name.split_once('/').unwrap_or((slug, name));
        let line = *self.lines.get(chapter)?.get(local)?;
        Some(Source {
            chapter: chapter.to_string(),
            line,
            local: chapter == slug,
        })
    }

    /// The members of a family (`acc.seed.*`, `other/acc.*.2`) as quoted from `slug`: for each
    /// recorded name it matches, what its `*`s matched (each `*` is one segment, or a part of
    /// one), in name order with numbers in numeric order. An unknown chapter is an error.
    pub fn family(&self, slug: &str, pattern: &str) -> Result<Vec<Vec<String>>, Diagnostic> {
        let (chapter, local) = pattern.split_once('/').unwrap_or((slug, pattern));
        let Some(values) = self.chapters.get(chapter) else {
            return Err(
                Diagnostic::error(format!("unknown chapter `{chapter}` in `{pattern}`"))
                    .with_help("write `slug/name` with the slug of another chapter"),
            );
        };
        let regex = format!(
            "^{}$",
            local
                .split('*')
                .map(regex_lite::escape)
                .collect::<Vec<_>>()
                .join("([^.]+)")
        );
        let regex = regex_lite::Regex::new(&regex).map_err(|e| Diagnostic::error(e.to_string()))?;
        // Only the names that start with the pattern's literal prefix can match: a range of
        // the sorted map, not a scan of every value the chapter recorded.
        let prefix = local.split('*').next().unwrap_or_default();
        let mut found: Vec<Vec<String>> = values
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .map(|(name, _)| name)
            .take_while(|name| name.starts_with(prefix))
            .filter_map(|name| {
                let caps = regex.captures(name)?;
                Some(
                    caps.iter()
                        .skip(1)
                        .map(|m| m.map_or(String::new(), |m| m.as_str().to_string()))
                        .collect(),
                )
            })
            .collect();
        found.sort_by_cached_key(|parts: &Vec<String>| {
            parts
                .iter()
                .map(|p| (p.parse::<u64>().ok(), p.clone()))
                .collect::<Vec<_>>()
        });
        Ok(found)
    }

    /// All values of one chapter, by flattened name (for templates).
    pub fn chapter(&self, slug: &str) -> Option<&BTreeMap<String, f64>> {
        self.chapters.get(slug).map(|values| &**values)
    }

    /// Looks `name` up from `slug`'s point of view (`other/name` reaches another chapter).
    pub fn get(&self, slug: &str, name: &str) -> Result<f64, Diagnostic> {
        let (chapter, local) = name.split_once('/').unwrap_or((slug, name));
        let Some(values) = self.chapters.get(chapter) else {
            let help = did_you_mean(&closest(chapter, self.chapters.keys().map(String::as_str)));
            let d = Diagnostic::error(format!("unknown chapter `{chapter}` in `{name}`"));
            return Err(match help {
                Some(h) => d.with_help(h),
                None => d.with_help("write `slug/name` with the slug of another chapter"),
            });
        };
        values.get(local).copied().ok_or_else(|| {
            let d = Diagnostic::error(format!("unknown value `{name}`"));
            match did_you_mean(&closest(local, values.keys().map(String::as_str))) {
                Some(h) => d.with_help(h),
                None if values.is_empty() => d.with_help(format!("chapter `{chapter}` records no values; record one with `lab.value(\"{local}\", x)`")),
                None => d.with_help(format!("record it with `lab.value(\"{local}\", x)` in an experiment block")),
            }
        })
    }
}

fn flatten(shape: &[usize], data: &[lab_protocol::Number]) -> Vec<(String, f64)> {
    match shape {
        [] => data
            .first()
            .map(|x| vec![(String::new(), x.0)])
            .unwrap_or_default(),
        [_] => data
            .iter()
            .enumerate()
            .map(|(i, x)| (format!(".{i}"), x.0))
            .collect(),
        [_, cols] => data
            .iter()
            .enumerate()
            .map(|(k, x)| (format!(".{}.{}", k / cols.max(&1), k % cols.max(&1)), x.0))
            .collect(),
        _ => Vec::new(),
    }
}

/// Binds every quote and checks every claim of every chapter: this stage. Unknown names and
/// rules that cannot be evaluated are errors; drift and failing claims are in the bindings
/// (`Status::Drift`, `holds == Some(false)`), for the caller to report as it reports them.
pub fn bind(series: Series<Ran>) -> (Series<Bound>, Vec<Diagnostic>) {
    // In `serve`, a chapter's bindings are kept in memory ([`crate::memo`]) under a key of
    // everything they read: the chapter's path and text, and of every chapter its slug, its
    // results' identity, whether it lacks results and the lines of its blocks (a quote may
    // name any chapter's value, and links the line that recorded it), and the messages in
    // force. A prose edit binds the edited chapter alone, or every chapter if it moved a block.
    static BOUND: crate::memo::Memo<ChapterBindings> = crate::memo::Memo::new();
    let index = std::sync::OnceLock::new();
    let index = || index.get_or_init(|| ValueIndex::new(&series));
    let shared = std::sync::OnceLock::new();
    let shared = || {
        shared.get_or_init(|| {
            let mut key = blake3::Hasher::new();
            key.update(format!("{:?}", crate::messages::current()).as_bytes());
            for c in &series.chapters {
                key.update(c.slug.as_bytes())
                    .update(&[0, u8::from(c.lacks_results())]);
                let identity = c.run.as_ref().map(|r| r.identity()).unwrap_or_default();
                key.update(identity.as_bytes()).update(&[0]);
                // Where its values were recorded: the Markdown line of each line of its
                // blocks (a prose edit above a block moves them).
                for block in &c.doc.experiments {
                    key.update(&(block.lines.len() as u64).to_le_bytes());
                    for line in &block.lines {
                        key.update(&(line.line as u64).to_le_bytes())
                            .update(line.code.as_bytes())
                            .update(&[0]);
                    }
                }
            }
            key.finalize()
        })
    };
    // Chapter by chapter in parallel; the problems in the order of a sequential pass: every
    // chapter's quotes, then every chapter's claims, then the grid points.
    let bound: Vec<ChapterBindings> = series
        .chapters
        .par_iter()
        .map(|chapter| {
            BOUND.get_or_make(
                || {
                    let mut key = blake3::Hasher::new();
                    key.update(shared().as_bytes());
                    chapter.key_with(key)
                },
                || {
                    let index = index();
                    (
                        chapter_quotes(&series, index, chapter),
                        chapter_claims(&series, index, chapter),
                        bind_points(&series, index, chapter),
                    )
                },
            )
        })
        .collect();
    let mut errors = Vec::new();
    let mut claim_errors = Vec::new();
    let mut point_errors = Vec::new();
    let mut per_chapter = Vec::with_capacity(bound.len());
    for ((bindings, found), (claims, claims_found), (points, points_found)) in bound {
        errors.extend(found);
        claim_errors.extend(claims_found);
        point_errors.extend(points_found);
        per_chapter.push(((bindings, claims), points));
    }
    errors.extend(claim_errors);
    errors.extend(point_errors);
    let series = series.map_chapters(|chapters| {
        chapters
            .into_iter()
            .zip(per_chapter)
            .map(|(ran, ((bindings, claims), points))| Bound {
                ran,
                bindings,
                claims,
                points,
            })
            .collect()
    });
    (series, errors)
}

/// One chapter's bound quotes, claims and grid points, each with its problems.
type ChapterBindings = (
    (Vec<Binding>, Vec<Diagnostic>),
    (Vec<claims::ClaimBinding>, Vec<Diagnostic>),
    (Vec<BoundPoint>, Vec<Diagnostic>),
);

/// Binds a chapter's quotes and claims at each of its grid points (see [`BoundPoint`]); the
/// problems found inside a passage of the point's parameter are reported with the point.
fn bind_points(
    series: &Series<Ran>,
    index: &ValueIndex,
    chapter: &Ran,
) -> (Vec<BoundPoint>, Vec<Diagnostic>) {
    let Some(run) = &chapter.run else {
        return (Vec::new(), Vec::new());
    };
    let bound: Vec<(BoundPoint, Vec<Diagnostic>)> = run
        .points
        .par_iter()
        .filter_map(|point| bind_point(series, index, chapter, point))
        .collect();
    let mut out = Vec::with_capacity(bound.len());
    let mut errors = Vec::new();
    for (point, found) in bound {
        out.push(point);
        errors.extend(found);
    }
    (out, errors)
}

/// One grid point of [`bind_points`]: `None` for a point of no parameter of the chapter.
fn bind_point(
    series: &Series<Ran>,
    index: &ValueIndex,
    chapter: &Ran,
    point: &crate::lab::PointRun,
) -> Option<(BoundPoint, Vec<Diagnostic>)> {
    let param = chapter
        .doc
        .experiments
        .iter()
        .filter_map(|e| e.options.param.as_ref())
        .find(|p| p.name == point.param)?;
    let text = param.point_text(point.index);
    let passages: Vec<_> = chapter
        .doc
        .explores
        .iter()
        .filter(|e| e.param == point.param)
        .collect();
    let inside = |at: usize| passages.iter().any(|p| p.contains(at));
    let at_point = index.with_chapter(chapter, &point.run);
    let (mut bindings, found) = chapter_quotes(series, &at_point, chapter);
    let (claims, claim_found) = chapter_claims(series, &at_point, chapter);
    let mut errors = Vec::new();
    for mut d in found.into_iter().chain(claim_found) {
        if d.location.as_ref().is_some_and(|l| inside(l.span.start)) {
            d.message = format!("{} (at {text})", d.message);
            errors.push(d);
        }
    }
    for (quote, binding) in chapter.doc.quotes.iter().zip(&mut bindings) {
        let compares_text = quote.relation.is_none()
            && matches!(
                quote.tolerance,
                Tolerance::Round | Tolerance::Abs(_) | Tolerance::Rel(_)
            );
        if compares_text && binding.status == Status::Drift {
            // The source's number is the default's: at another point only a finite value
            // is asked for.
            if binding.rerun.is_some_and(f64::is_finite) {
                binding.status = Status::Ok;
            }
        }
    }
    let point = BoundPoint {
        param: point.param.clone(),
        index: point.index,
        text,
        bindings,
        claims,
    };
    Some((point, errors))
}

/// The verdict of every claim of one text (a chapter, or the index's intro).
fn chapter_claims<C: AsRef<Ran>>(
    series: &Series<C>,
    index: &ValueIndex,
    chapter: &Ran,
) -> (Vec<claims::ClaimBinding>, Vec<Diagnostic>) {
    let mut verdicts = Vec::new();
    let mut errors = Vec::new();
    for claim in &chapter.doc.claims {
        let reads_missing = claim.expr.names().iter().any(|name| {
            let owner = name
                .split_once('/')
                .map_or(chapter.slug.as_str(), |(o, _)| o);
            lacks_results(series, owner)
        });
        if reads_missing {
            verdicts.push(claims::ClaimBinding::unevaluated(&claim.rule));
            continue;
        }
        match claims::bind_claim(&claim.rule, &claim.expr, &chapter.slug, index) {
            Ok(verdict) => verdicts.push(verdict),
            Err(d) => {
                errors.push(d.at(chapter.location(claim.rule_span.clone())));
                verdicts.push(claims::ClaimBinding::unevaluated(&claim.rule));
            }
        }
    }
    (verdicts, errors)
}

/// Whether the chapter `slug` has experiments that gave no results (they failed, or never ran).
fn lacks_results<C: AsRef<Ran>>(series: &Series<C>, slug: &str) -> bool {
    series
        .chapters
        .iter()
        .map(AsRef::<Ran>::as_ref)
        .any(|c| c.slug == slug && c.lacks_results())
}

/// Binds every quote of one text (a chapter, or the index's intro).
fn chapter_quotes<C: AsRef<Ran>>(
    series: &Series<C>,
    index: &ValueIndex,
    chapter: &Ran,
) -> (Vec<Binding>, Vec<Diagnostic>) {
    let mut bindings = Vec::new();
    let mut errors = Vec::new();
    for quote in &chapter.doc.quotes {
        let owner = quote
            .name
            .split_once('/')
            .map_or(chapter.slug.as_str(), |(owner, _)| owner);
        // A chapter whose experiments failed or did not run has its own problem reported, and
        // an "unknown value" on top of it would be false.
        if lacks_results(series, owner) {
            bindings.push(unbound(chapter, quote));
            continue;
        }
        let relative = quote.relation.as_ref().map(|relation| {
            claims::number(&relation.rhs, &chapter.slug, index).map(|(rhs, _)| (relation, rhs))
        });
        match (index.get(&chapter.slug, &quote.name), relative.transpose()) {
            (Ok(value), Ok(relative)) => {
                let source = index.source(&chapter.slug, &quote.name);
                let binding = match relative {
                    Some((relation, rhs)) => bind_relative(quote, relation, value, rhs),
                    None => bind_one(quote, value),
                };
                bindings.push(with_source(binding, source));
            }
            (Ok(_), Err(d)) => {
                let at = quote.name_span.end..quote.span.end - 1;
                errors.push(d.at(chapter.location(at)));
                bindings.push(unbound(chapter, quote));
            }
            (Err(d), _) => {
                errors.push(d.at(chapter.location(quote.name_span.clone())));
                bindings.push(unbound(chapter, quote));
            }
        }
    }
    (bindings, errors)
}

/// Binds the quotes and claims of a text that is not one of the series' chapters (the index
/// page's intro) against the series' values, as a chapter's are bound.
pub fn bind_page<C: AsRef<Ran> + Sync>(series: &Series<C>, ran: Ran) -> (Bound, Vec<Diagnostic>) {
    let index = ValueIndex::new(series);
    let (bindings, mut errors) = chapter_quotes(series, &index, &ran);
    let (claims, claim_errors) = chapter_claims(series, &index, &ran);
    errors.extend(claim_errors);
    let bound = Bound {
        ran,
        bindings,
        claims,
        points: Vec::new(),
    };
    (bound, errors)
}

/// Adds the recording line to a binding and to its hover text (in the page's language, as the
/// rest of it).
fn with_source(mut binding: Binding, source: Option<Source>) -> Binding {
    if let Some(source) = &source {
        let _ = write!(
            binding.title,
            "{}{}",
            crate::messages::get("title_join"),
            source_text(source)
        );
    }
    binding.source = source;
    binding
}

/// Where a value was recorded, in the words of the page: `记录于第 12 行` (this chapter) or
/// `记录于 other 第 12 行`.
pub fn source_text(source: &Source) -> String {
    if source.local {
        crate::messages::fill("quote_source_here", &[("line", &source.line)])
    } else {
        crate::messages::fill(
            "quote_source_other",
            &[("chapter", &source.chapter), ("line", &source.line)],
        )
    }
}

fn unbound(chapter: &Chapter, quote: &QuoteSyntax) -> Binding {
    let text = &chapter.source[quote.number.span.clone()];
    Binding {
        name: quote.name.clone(),
        shown: format!("{}{text}{}", quote.prefix, quote.suffix),
        title: crate::messages::fill("quote_unknown", &[("name", &quote.name)]),
        status: Status::Unbound,
        rerun: None,
        formatted: text.to_string(),
        rule: rule_text(quote.tolerance, &quote.number),
        source: None,
    }
}

/// Whether `value` stands to `rhs` as the relation says.
pub fn relation_holds(relation: &Relation, value: f64, rhs: f64) -> bool {
    if !value.is_finite() || !rhs.is_finite() {
        return false;
    }
    match (relation.op, relation.slack) {
        (Op::Eq, Some(Tolerance::Abs(t))) => (value - rhs).abs() <= t + 1e-9 * t.max(1e-300),
        (Op::Eq, Some(Tolerance::Rel(p))) => (value - rhs).abs() <= p / 100.0 * rhs.abs(),
        (op, _) => op.compare(value, rhs),
    }
}

/// Binds a quote with a relative bound: the rerun value against the other values' rerun.
pub fn bind_relative(quote: &QuoteSyntax, relation: &Relation, rerun: f64, rhs: f64) -> Binding {
    let ok = relation_holds(relation, rerun, rhs);
    let formatted = shown_like(quote, rerun, ok);
    let rule = format!("{} (= {})", relation.text, claims::short(rhs));
    Binding {
        name: quote.name.clone(),
        shown: format!("{}{formatted}{}", quote.prefix, quote.suffix),
        title: crate::messages::fill(
            "quote_title_relative",
            &[
                ("value", &tooltip_value(&quote.number, rerun)),
                ("quoted", &format_like(&quote.number, quote.number.value)),
                ("name", &quote.name),
                ("relation", &relation.text),
                ("rhs", &claims::short(rhs)),
            ],
        ),
        status: if ok { Status::Ok } else { Status::Drift },
        rerun: Some(rerun),
        formatted,
        rule,
        source: None,
    }
}

/// Binds one quote to its rerun value.
pub fn bind_one(quote: &QuoteSyntax, rerun: f64) -> Binding {
    let ok = within(quote.tolerance, &quote.number, rerun);
    let formatted = shown_like(quote, rerun, ok);
    let rule = rule_text(quote.tolerance, &quote.number);
    Binding {
        name: quote.name.clone(),
        shown: format!("{}{formatted}{}", quote.prefix, quote.suffix),
        title: crate::messages::fill(
            "quote_title",
            &[
                ("value", &tooltip_value(&quote.number, rerun)),
                (
                    "not_finite",
                    &if rerun.is_finite() {
                        String::new()
                    } else {
                        crate::messages::get("quote_not_finite")
                    },
                ),
                ("quoted", &format_like(&quote.number, quote.number.value)),
                ("rule", &page_rule_text(quote.tolerance, &quote.number)),
            ],
        ),
        status: if ok { Status::Ok } else { Status::Drift },
        rerun: Some(rerun),
        formatted,
        rule,
        source: None,
    }
}

/// The rerun value in a quote's hover text: four significant digits, and at least two
/// decimals more than the quote prints, so the reader sees how the page's figure was rounded
/// (the verification page and `verify` give the full value).
pub fn tooltip_value(like: &QuotedNumber, value: f64) -> String {
    let magnitude = value.abs();
    if !value.is_finite()
        || like.exponent
        || (magnitude != 0.0 && !(1e-4..1e15).contains(&magnitude))
    {
        return claims::short(value);
    }
    let significant = if magnitude == 0.0 {
        0
    } else {
        (3.0 - magnitude.log10().floor()).max(0.0) as usize
    };
    let decimals = significant.max(like.decimals + 2).min(12);
    let text = format!("{value:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    if text == "-0" {
        "0".into()
    } else {
        text.into()
    }
}

/// The full value for reports: plain notation for ordinary magnitudes, scientific otherwise.
pub fn full(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude != 0.0 && !(1e-4..1e15).contains(&magnitude) {
        format!("{value:e}")
    } else {
        format!("{value}")
    }
}

/// The rerun value for reports: [`full`], plus the reason when it is not a finite number (such
/// a value fails every rule, and the author should see why at a glance).
pub fn rerun_text(value: f64) -> String {
    if value.is_finite() {
        full(value)
    } else {
        format!("{} (not a finite number)", full(value))
    }
}

/// The rerun as the page shows it and `--fix` writes it: formatted like the quote; at an exact
/// tie (0.125 to 2 decimals) the quoted side when the quote rounds (it is right either way),
/// else half away from zero, as readers round.
fn shown_like(quote: &QuoteSyntax, rerun: f64, ok: bool) -> String {
    let quoted = format_like(&quote.number, quote.number.value);
    let sides = roundings(&quote.number, rerun);
    if ok && quote.tolerance == Tolerance::Round && sides.contains(&quoted) {
        quoted
    } else {
        sides.into_iter().next().unwrap_or_default()
    }
}

/// The ways `value` may be written to the quote's decimals: one, or two at an exact tie (half
/// away from zero first). Rust's formatting rounds an exact tie half to even ("0.12" for 0.125),
/// which no reader expects, so the tie is found on the exact binary value and both sides given.
pub fn roundings(like: &QuotedNumber, value: f64) -> Vec<String> {
    if !is_exact_tie(like, value) {
        return vec![format_like(like, value)];
    }
    // The neighbours of an exact midpoint lie strictly on either side of it.
    let (away, toward) = if value > 0.0 {
        (value.next_up(), value.next_down())
    } else {
        (value.next_down(), value.next_up())
    };
    vec![format_like(like, away), format_like(like, toward)]
}

/// Whether `value` lies exactly halfway between two roundings to the quote's decimals. Decided
/// on its exact decimal expansion (an `f64` has at most 1074 fraction digits, 767 significant):
/// 0.125 is a tie, 0.135 (stored as 0.13500000000000000888...) is not.
fn is_exact_tie(like: &QuotedNumber, value: f64) -> bool {
    if !value.is_finite() || value == 0.0 {
        return false;
    }
    if like.exponent {
        return is_exact_tie_by_digits(like, value);
    }
    // |value| = m 2^e with m odd, so |value| 10^d = (m 5^d) 2^(e + d) with m 5^d odd: its
    // fraction is exactly one half when e + d = -1, and never otherwise.
    let bits = value.abs().to_bits();
    let (biased, fraction) = ((bits >> 52) as i64, bits & ((1 << 52) - 1));
    let (mantissa, exponent) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), biased - 1075)
    };
    let exponent = exponent + i64::from(mantissa.trailing_zeros());
    i64::try_from(like.decimals).is_ok_and(|d| exponent + d == -1)
}

/// [`is_exact_tie`] on the value's exact decimal expansion (the exponent form, whose decimals
/// count from the leading digit).
fn is_exact_tie_by_digits(like: &QuotedNumber, value: f64) -> bool {
    const EXACT: usize = 1100;
    let exact = if like.exponent {
        format!("{:.*e}", EXACT, value.abs())
    } else {
        format!("{:.*}", EXACT, value.abs())
    };
    let mantissa = exact.split('e').next().unwrap_or(&exact);
    let fraction = mantissa.split_once('.').map_or("", |(_, f)| f);
    let rest = fraction.get(like.decimals..).unwrap_or("");
    rest.starts_with('5') && rest[1..].bytes().all(|b| b == b'0')
}

/// Formats `value` the way `like` was written: decimals, grouping, sign, minus sign, exponent.
pub fn format_like(like: &QuotedNumber, value: f64) -> String {
    // Negative zero prints as `-0`, which would make a zero rerun differ from a quoted zero
    // (the sign strip below misses the exponent form `-0e0`).
    let value = if value == 0.0 { 0.0 } else { value };
    let mut text = if like.exponent {
        format!("{:.*e}", like.decimals, value)
    } else {
        format!("{:.*}", like.decimals, value)
    };
    if text.starts_with('-') && text[1..].chars().all(|c| c == '0' || c == '.') {
        text.remove(0);
    }
    if like.times_ten
        && let Some((mantissa, exponent)) = text.split_once('e')
    {
        text = format!("{mantissa}×10{}", superscript(exponent));
    }
    if like.grouping {
        text = group_thousands(&text);
    }
    if like.plus && !text.starts_with('-') {
        text.insert(0, '+');
    }
    if like.unicode_minus {
        text = text.replacen('-', "−", 1);
    }
    text
}

/// `-3` as `⁻³`.
fn superscript(exponent: &str) -> String {
    exponent
        .chars()
        .map(|c| match c {
            '-' => '⁻',
            '+' => '⁺',
            c => c
                .to_digit(10)
                .and_then(|d| "⁰¹²³⁴⁵⁶⁷⁸⁹".chars().nth(d as usize))
                .unwrap_or(c),
        })
        .collect()
}

fn group_thousands(text: &str) -> String {
    let (sign, rest) = text.strip_prefix('-').map_or(("", text), |r| ("-", r));
    let (int, frac) = rest
        .split_once('.')
        .map_or((rest, None), |(i, f)| (i, Some(f)));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

/// Does `rerun` satisfy the quote's tolerance?
///
/// A rerun that is not a finite number fails every rule: an infinite value would otherwise get an
/// infinite slack (and pass `±` and `~%`) or pass a one-sided bound, and NaN is never "close".
/// The quoted number and the tolerance are finite by construction (the syntax rejects others);
/// they are checked here too so that no caller can make a rule pass by accident.
pub fn within(tolerance: Tolerance, quoted: &QuotedNumber, rerun: f64) -> bool {
    let q = quoted.value;
    if !rerun.is_finite() || !q.is_finite() || !tolerance.is_finite() {
        return false;
    }
    let slack = 1e-9 * q.abs().max(rerun.abs()).max(1e-300);
    match tolerance {
        Tolerance::Round => roundings(quoted, rerun).contains(&format_like(quoted, q)),
        Tolerance::Abs(t) => (rerun - q).abs() <= t + slack,
        Tolerance::Rel(p) => (rerun - q).abs() <= p / 100.0 * q.abs() + slack,
        Tolerance::AtLeast(bound) => rerun >= bound,
        Tolerance::AtMost(bound) => rerun <= bound,
        Tolerance::Band(lo, hi) => lo <= rerun && rerun <= hi,
        // Decided against the other values, which this function does not see (bind_relative).
        Tolerance::Relative => false,
    }
}

/// A tolerance's number as an author writes it: `0.01`, `10`, and `1e-12` rather than
/// `0.000000000001`.
fn tol(x: f64) -> String {
    if x != 0.0 && (x.abs() < 1e-4 || x.abs() >= 1e15) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// The rule in words, for reports (`verify`, build warnings), which are in English.
pub fn rule_text(tolerance: Tolerance, quoted: &QuotedNumber) -> String {
    match tolerance {
        Tolerance::Round if quoted.decimals == 1 => "rounding to 1 decimal".to_string(),
        Tolerance::Round => format!("rounding to {} decimals", quoted.decimals),
        Tolerance::Abs(t) => format!("±{}", tol(t)),
        Tolerance::Rel(p) => format!("~{}%", tol(p)),
        Tolerance::AtLeast(b) => format!(">={}", tol(b)),
        Tolerance::AtMost(b) => format!("<={}", tol(b)),
        Tolerance::Band(lo, hi) => format!("in {}..{}", tol(lo), tol(hi)),
        Tolerance::Relative => "relative to other values".to_string(),
    }
}

/// The rule in the words of the page's hover text, in the site's language
/// ([`crate::messages`]): a rule in another language than the rest of the page reads as a slip.
pub fn page_rule_text(tolerance: Tolerance, quoted: &QuotedNumber) -> String {
    use crate::messages::{fill, get};
    match tolerance {
        Tolerance::Round if quoted.decimals == 0 => get("rule_round_integer"),
        Tolerance::Round => fill("rule_round", &[("n", &quoted.decimals)]),
        Tolerance::Abs(t) => fill("rule_abs", &[("t", &tol(t))]),
        Tolerance::Rel(p) => fill("rule_rel", &[("p", &tol(p))]),
        Tolerance::AtLeast(b) => fill("rule_at_least", &[("b", &tol(b))]),
        Tolerance::AtMost(b) => fill("rule_at_most", &[("b", &tol(b))]),
        Tolerance::Band(lo, hi) => fill("rule_band", &[("lo", &tol(lo)), ("hi", &tol(hi))]),
        Tolerance::Relative => get("rule_relative"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::quote as syntax;

    fn q(text: &str) -> QuoteSyntax {
        let (quotes, errors) = syntax::scan(text, 0, &[]);
        assert!(errors.is_empty());
        quotes.into_iter().next().unwrap()
    }

    #[test]
    fn formatting_follows_the_quote() {
        assert_eq!(format_like(&q("[0.08]{=a}").number, 0.1312), "0.13");
        assert_eq!(
            format_like(&q("[256,000]{=a}").number, 1234567.4),
            "1,234,567"
        );
        assert_eq!(format_like(&q("[+1.5]{=a}").number, 2.04), "+2.0");
        assert_eq!(format_like(&q("[−1.5]{=a}").number, -2.04), "−2.0");
        assert_eq!(format_like(&q("[1.5e-3]{=a}").number, 0.00213), "2.1e-3");
        assert_eq!(format_like(&q("[0.0]{=a}").number, -0.01), "0.0");
    }

    #[test]
    fn rounding_rule() {
        let quote = q("[0.08]{=a}");
        assert!(within(Tolerance::Round, &quote.number, 0.0849));
        assert!(!within(Tolerance::Round, &quote.number, 0.0851));
        assert!(!within(Tolerance::Round, &quote.number, 0.1312));
    }

    /// An exact tie accepts either rounding, and the page and `--fix` keep the quoted side; a
    /// value that only prints like a tie (0.135 is 0.13500000000000000888...) rounds as it is.
    #[test]
    fn an_exact_tie_accepts_either_rounding() {
        for (text, rerun, shown) in [
            ("[0.13]{=x}", 0.125, "0.13"),
            ("[0.12]{=x}", 0.125, "0.12"),
            ("[−0.13]{=x}", -0.125, "−0.13"),
            ("[2]{=x}", 2.5, "2"),
            ("[3]{=x}", 2.5, "3"),
            ("[1.2e-1]{=x}", 0.125, "1.2e-1"),
            ("[1.3e-1]{=x}", 0.125, "1.3e-1"),
            ("[1,000,000]{=x}", 999_999.5, "1,000,000"),
        ] {
            let binding = bind_one(&q(text), rerun);
            assert_eq!(binding.status, Status::Ok, "{text} with {rerun}");
            assert_eq!(
                (binding.formatted.as_str(), binding.shown.as_str()),
                (shown, shown),
                "{text}"
            );
        }
        // A drift at a tie shows (and `--fix` writes) half away from zero.
        assert_eq!(bind_one(&q("[0.20]{=x}"), 0.125).formatted, "0.13");
        assert_eq!(bind_one(&q("[0.20]{=x}"), -0.125).formatted, "-0.13");
        assert_eq!(bind_one(&q("[0]{=x}"), 2.5).formatted, "3");
        // Not ties: the binary value decides.
        assert_eq!(bind_one(&q("[0.13]{=x}"), 0.135).status, Status::Drift);
        assert_eq!(bind_one(&q("[0.14]{=x}"), 0.135).status, Status::Ok);
        assert_eq!(
            bind_one(&q("[0.13]{=x}"), 0.12500000000000003).status,
            Status::Ok
        );
        assert_eq!(
            bind_one(&q("[0.12]{=x}"), 0.12500000000000003).status,
            Status::Drift
        );
        assert_eq!(roundings(&q("[0.1]{=x}").number, 0.25), ["0.3", "0.2"]);
        assert_eq!(roundings(&q("[0.1]{=x}").number, 0.0), ["0.0"]);
    }

    #[test]
    fn tolerance_rules() {
        let n = q("[10]{=a}").number;
        assert!(within(Tolerance::Abs(0.5), &n, 10.5));
        assert!(!within(Tolerance::Abs(0.5), &n, 10.51));
        assert!(within(Tolerance::Rel(20.0), &n, 12.0));
        assert!(!within(Tolerance::Rel(20.0), &n, 12.1));
        // Bounds include the bound itself.
        assert!(within(Tolerance::AtLeast(8.0), &n, 8.0));
        assert!(!within(Tolerance::AtLeast(8.0), &n, 7.999));
        assert!(within(Tolerance::AtMost(8.0), &n, 8.0));
        assert!(!within(Tolerance::AtMost(8.0), &n, 8.1));
        // A band includes both ends and nothing outside them.
        let band = Tolerance::Band(1.7, 2.4);
        for (rerun, inside) in [
            (1.7, true),
            (2.4, true),
            (2.05, true),
            (1.7f64.next_down(), false),
            (2.4f64.next_up(), false),
            (10.0, false),
        ] {
            assert_eq!(within(band, &n, rerun), inside, "{rerun}");
        }
        let band = q("[2.1]{=a 1.7..2.4}");
        assert_eq!(rule_text(band.tolerance, &band.number), "in 1.7..2.4");
        assert_eq!(bind_one(&band, 2.4).status, Status::Ok);
        let drift = bind_one(&band, 2.6);
        assert_eq!(
            (drift.status, drift.formatted.as_str()),
            (Status::Drift, "2.6")
        );
    }

    /// Every rule form, each against NaN, +inf, -inf and a finite value that passes it.
    #[test]
    fn non_finite_reruns_fail_every_rule() {
        let cases = [
            ("[0.13]{=e}", 0.131),
            ("[0.13]{=e ±0.01}", 0.135),
            ("[0.13]{=e ~10%}", 0.125),
            ("[0.13]{=e >=0.1}", 0.2),
            ("[0.13]{=e <=0.2}", 0.1),
            ("[2.1]{=e 1.7..2.4}", 1.7),
            ("[0]{=e ~0%}", 0.0),
            ("[1e300]{=e ~50%}", 1.2e300),
        ];
        for (text, passing) in cases {
            let quote = q(text);
            assert!(
                within(quote.tolerance, &quote.number, passing),
                "{text} with {passing}"
            );
            for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                assert!(
                    !within(quote.tolerance, &quote.number, bad),
                    "{text} with {bad}"
                );
                let binding = bind_one(&quote, bad);
                assert_eq!(binding.status, Status::Drift, "{text} with {bad}");
            }
        }
    }

    #[test]
    fn non_finite_quotes_and_tolerances_pass_nothing() {
        let mut quote = q("[0.13]{=e}");
        quote.number.value = f64::INFINITY;
        assert!(!within(Tolerance::Round, &quote.number, f64::INFINITY));
        assert!(!within(Tolerance::Abs(0.1), &quote.number, 1.0));
        let finite = q("[0.13]{=e}").number;
        assert!(!within(Tolerance::Abs(f64::INFINITY), &finite, 1.0));
        assert!(!within(Tolerance::AtLeast(f64::NEG_INFINITY), &finite, 1.0));
        assert!(!within(Tolerance::Rel(f64::NAN), &finite, 0.13));
        assert!(!within(
            Tolerance::Band(f64::NEG_INFINITY, f64::INFINITY),
            &finite,
            1.0
        ));
        assert!(!within(Tolerance::Band(f64::NAN, 1.0), &finite, 0.13));
    }

    #[test]
    fn reports_say_why_a_non_finite_rerun_fails() {
        assert_eq!(rerun_text(f64::INFINITY), "inf (not a finite number)");
        assert_eq!(rerun_text(f64::NEG_INFINITY), "-inf (not a finite number)");
        assert_eq!(rerun_text(f64::NAN), "NaN (not a finite number)");
        assert_eq!(rerun_text(0.1312), "0.1312");
        assert!(
            bind_one(&q("[0.13]{=e}"), f64::NAN)
                .title
                .contains("不是有限数")
        );
    }

    #[test]
    fn negative_zero_formats_and_passes_like_zero() {
        for text in [
            "[0.00]{=z}",
            "[0.0e0]{=z}",
            "[+0.0]{=z}",
            "[−0.0]{=z}",
            "[0]{=z}",
        ] {
            let quote = q(text);
            assert_eq!(
                format_like(&quote.number, -0.0),
                format_like(&quote.number, 0.0),
                "{text}"
            );
            assert!(within(Tolerance::Round, &quote.number, -0.0), "{text}");
        }
    }

    /// The tie test on the binary exponent agrees with the one on the exact decimal expansion:
    /// exact ties at every number of decimals, their neighbours, subnormals, and values that
    /// only print like ties.
    #[test]
    fn the_binary_tie_test_agrees_with_the_decimal_one() {
        let mut values = vec![0.125, 2.5, 999_999.5, 0.135, 0.5, 1.5, 0.05, 5e-324, 1e-310];
        for k in 0..2000u32 {
            let tie = (f64::from(k) + 0.5) / 2f64.powi((k % 12) as i32);
            values.extend([
                tie,
                tie.next_up(),
                tie.next_down(),
                f64::from(k) * 0.001 + 0.0005,
            ]);
        }
        for decimals in 0..14 {
            let like = QuotedNumber {
                decimals,
                ..q("[0.5]{=a}").number
            };
            for &v in &values {
                for v in [v, -v] {
                    assert_eq!(
                        is_exact_tie(&like, v),
                        is_exact_tie_by_digits(&like, v),
                        "{v:e} to {decimals} decimals"
                    );
                }
            }
        }
        assert!(is_exact_tie(
            &QuotedNumber {
                decimals: 2,
                ..q("[0.5]{=a}").number
            },
            0.125
        ));
        assert!(!is_exact_tie(
            &QuotedNumber {
                decimals: 2,
                ..q("[0.5]{=a}").number
            },
            0.135
        ));
    }

    proptest::proptest! {
        /// No finite quote and tolerance lets a non-finite rerun through.
        #[test]
        fn no_rule_passes_a_non_finite_rerun(
            q in -1e300f64..1e300,
            t in 0f64..1e300,
            kind in 0usize..6,
            bad in proptest::sample::select(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY]),
        ) {
            let tolerance = [
                Tolerance::Round,
                Tolerance::Abs(t),
                Tolerance::Rel(t),
                Tolerance::AtLeast(q - t),
                Tolerance::AtMost(q + t),
                Tolerance::Band(q - t, q + t),
            ][kind];
            let quote = QuotedNumber { value: q, ..self::q("[0.5]{=a}").number };
            proptest::prop_assert!(!within(tolerance, &quote, bad));
        }

        /// What `--fix` writes for a finite rerun is a quote the parser reads back as that
        /// number, in every way a number can be written. The one rerun it refuses to write is
        /// one whose rounding is past the largest float (`f64::MAX` to one decimal of a
        /// mantissa is `1.8e308`), which the parser would reject.
        #[test]
        fn fixed_text_parses_back(
            rerun in proptest::num::f64::NORMAL | proptest::num::f64::ZERO | proptest::num::f64::SUBNORMAL,
            like in proptest::sample::select(vec!["0.08", "256,000", "+1.5", "−1.5", "1.5e-3", "7"]),
        ) {
            let quote = q(&format!("[{like}]{{=a}}"));
            let binding = bind_one(&quote, rerun);
            let Some(edit) = fix::quote_edit(&quote, &binding) else {
                let read = syntax::parse_number(&binding.formatted, 0).value;
                proptest::prop_assert!(!read.is_finite(), "refused {}", binding.formatted);
                return Ok(());
            };
            let formatted = edit.text;
            let (quotes, errors) = syntax::scan(&format!("[{formatted}]{{=a}}"), 0, &[]);
            proptest::prop_assert!(errors.is_empty(), "{formatted}: {errors:?}");
            proptest::prop_assert_eq!(&quotes[0].number.span, &(1..1 + formatted.len()));
            proptest::prop_assert!(within(Tolerance::Round, &quotes[0].number, rerun), "{}", formatted);
        }
    }

    /// Reports speak English with the right number; the page's hover text speaks Chinese.
    #[test]
    fn rules_read_well_in_reports_and_on_the_page() {
        let one = q("[0.1]{=a}");
        assert_eq!(
            rule_text(one.tolerance, &one.number),
            "rounding to 1 decimal"
        );
        let tiny = q("[0.5]{=a ~1e-300%}");
        assert_eq!(rule_text(tiny.tolerance, &tiny.number), "~1e-300%");
        let two = q("[0.12]{=a}");
        assert_eq!(
            rule_text(two.tolerance, &two.number),
            "rounding to 2 decimals"
        );
        assert_eq!(
            bind_one(&one, 0.1312).title,
            "实验值 0.1312；原文 0.1；规则：四舍五入到 1 位小数"
        );
        for (text, rule) in [
            ("[7]{=a}", "四舍五入到整数"),
            ("[0.13]{=a ±0.01}", "误差不超过 ±0.01"),
            ("[0.13]{=a ~10%}", "相对误差不超过 10%"),
            ("[40]{=a >=10}", "不小于 10"),
            ("[0.1]{=a <=0.2}", "不大于 0.2"),
            ("[2.1]{=a 1.7..2.4}", "在 1.7 到 2.4 之间（含两端）"),
            // Redteam-3 D22: extreme tolerances read as written, not as 300 digits, whether
            // absolute or relative.
            ("[0.5]{=a ±1e301}", "误差不超过 ±1e301"),
            ("[0.5]{=a ~1e-300%}", "相对误差不超过 1e-300%"),
            ("[0.5]{=a ~2e20%}", "相对误差不超过 2e20%"),
        ] {
            let quote = q(text);
            assert_eq!(
                page_rule_text(quote.tolerance, &quote.number),
                rule,
                "{text}"
            );
            assert!(bind_one(&quote, 1.0).title.ends_with(rule), "{text}");
        }
    }

    /// The hover text is entirely in the page's language, the line that recorded the value
    /// included: once the numbers are out, no Latin letter is left (issue 16, item 2).
    #[test]
    fn the_hover_text_and_its_source_line_speak_the_page_language() {
        let source = Source {
            chapter: "why".into(),
            line: 12,
            local: true,
        };
        for text in [
            "[0.12]{=a}",
            "[7]{=a}",
            "[0.13]{=a ±0.01}",
            "[0.13]{=a ~10%}",
            "[40]{=a >=10}",
            "[0.1]{=a <=0.2}",
            "[2.1]{=a 1.7..2.4}",
        ] {
            let binding = with_source(bind_one(&q(text), 1.0), Some(source.clone()));
            assert!(
                binding.title.ends_with("；记录于第 12 行（点击查看代码）"),
                "{}",
                binding.title
            );
            assert!(
                !binding.title.chars().any(|c| c.is_ascii_alphabetic()),
                "{text}: {}",
                binding.title
            );
            assert_eq!(binding.source.as_ref(), Some(&source));
        }
        let other = Source {
            local: false,
            ..source
        };
        assert_eq!(source_text(&other), "记录于 why 第 12 行（点击查看代码）");
    }

    #[test]
    fn binding_shows_the_rerun_value_with_the_quote_text() {
        let b = bind_one(&q("[约 0.08 nats]{=a}"), 0.1312);
        assert_eq!(b.shown, "约 0.13 nats");
        assert_eq!(b.status, Status::Drift);
        assert!(b.title.contains("0.1312") && b.title.contains("0.08"));
    }

    #[test]
    fn the_hover_text_gives_a_few_digits_of_the_rerun_not_the_whole_float() {
        let title = |text: &str, rerun: f64| bind_one(&q(text), rerun).title;
        assert!(title("[0.08]{=a}", 0.131_234_567_890_123).starts_with("实验值 0.1312；"));
        assert!(title("[0.665]{=a}", 0.665_123_456_7).starts_with("实验值 0.66512；"));
        assert!(title("[256,000]{=a}", 256_012.345_678_9).starts_with("实验值 256012.35；"));
        assert!(title("[3]{=a}", 3.0).starts_with("实验值 3；"));
        assert!(title("[1.5e-7]{=a}", 1.534_567_8e-7).starts_with("实验值 1.535e-7；"));
        assert!(title("[0]{=a ±0.1}", -0.0).starts_with("实验值 0；"));
    }

    /// Chapter `a` recorded `x` (at line 12) and a matrix element; chapter `b` recorded nothing.
    fn index() -> ValueIndex {
        let a = BTreeMap::from([("x".to_string(), 1.5), ("m.0.1".to_string(), 2.0)]);
        ValueIndex {
            chapters: BTreeMap::from([
                ("a".to_string(), a.into()),
                ("b".to_string(), BTreeMap::new().into()),
            ]),
            lines: BTreeMap::from([(
                "a".to_string(),
                BTreeMap::from([("x".to_string(), 12)]).into(),
            )]),
        }
    }

    /// `(message, help)` of a failed lookup.
    fn lookup_error(index: &ValueIndex, slug: &str, name: &str) -> (String, String) {
        let d = index.get(slug, name).unwrap_err();
        (d.message, d.help.unwrap_or_default())
    }

    #[test]
    fn names_are_looked_up_from_the_quoting_chapter_or_across_with_a_slug() {
        let index = index();
        assert_eq!(index.get("a", "x").unwrap(), 1.5);
        assert_eq!(index.get("a", "m.0.1").unwrap(), 2.0);
        assert_eq!(index.get("b", "a/x").unwrap(), 1.5);
        assert_eq!(
            lookup_error(&index, "a", "xx"),
            ("unknown value `xx`".into(), "did you mean `x`?".into())
        );
        assert_eq!(
            lookup_error(&index, "a", "entropy"),
            (
                "unknown value `entropy`".into(),
                "record it with `lab.value(\"entropy\", x)` in an experiment block".into()
            )
        );
        assert_eq!(
            lookup_error(&index, "b", "x"),
            (
                "unknown value `x`".into(),
                "chapter `b` records no values; record one with `lab.value(\"x\", x)`".into()
            )
        );
        assert_eq!(
            lookup_error(&index, "a", "qq/x"),
            (
                "unknown chapter `qq` in `qq/x`".into(),
                "write `slug/name` with the slug of another chapter".into()
            )
        );
    }

    #[test]
    fn the_index_knows_where_each_value_was_recorded_and_every_chapter_s_values() {
        let index = index();
        let at_12 = |local| Source {
            chapter: "a".into(),
            line: 12,
            local,
        };
        assert_eq!(index.source("a", "x"), Some(at_12(true)));
        assert_eq!(index.source("b", "a/x"), Some(at_12(false)));
        assert_eq!(index.source("a", "m.0.1"), None, "no line reported");
        assert_eq!(index.source("b", "x"), None);
        let a = index.chapter("a").unwrap();
        assert_eq!(
            a.iter().map(|(k, v)| (k.as_str(), *v)).collect::<Vec<_>>(),
            [("m.0.1", 2.0), ("x", 1.5)]
        );
        assert_eq!(index.chapter("b"), Some(&BTreeMap::new()));
        assert_eq!(index.chapter("c"), None);
    }

    #[test]
    fn flattening_names_elements() {
        use lab_protocol::Number;
        let data = [Number(1.0), Number(2.0), Number(3.0), Number(4.0)];
        let flat = flatten(&[2, 2], &data);
        assert_eq!(flat[2], (".1.0".to_string(), 3.0));
        assert_eq!(flatten(&[4], &data)[3], (".3".to_string(), 4.0));
        assert_eq!(flatten(&[], &data[..1]), vec![(String::new(), 1.0)]);
    }
}
