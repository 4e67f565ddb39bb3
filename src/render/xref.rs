//! Resolves cross-references to numbers and URLs across the whole series.
//!
//! Figures and tables are numbered per chapter in the order the experiments recorded them,
//! labelled display equations in the order they appear, chapters by their `number`.

use std::collections::BTreeMap;

use crate::content::Series;
use crate::diagnostic::{Diagnostic, closest, did_you_mean};
use crate::lab::ChapterRun;
use crate::lab::Ran;
use crate::markdown::refs::{CrossRef, RefKind};
use crate::markdown::{Doc, Piece, PlacementKind};
use crate::render::chapter_url;

/// A reference ready to print: its text (`图 3`, `第 2 篇图 3`, `式 (1)`) and link.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Resolved {
    /// What the page shows.
    pub text: String,
    /// Where it links.
    pub url: String,
}

/// Everything numbered in one chapter.
struct Numbered<'a> {
    chapter: &'a Ran,
    figures: Vec<&'a str>,
    tables: Vec<&'a str>,
    equations: Vec<&'a str>,
}

impl<'a> Numbered<'a> {
    fn new(chapter: &'a Ran) -> Self {
        let results = chapter.run.as_ref().map(|r| &r.results);
        Numbered {
            chapter,
            figures: figure_order(&chapter.doc, chapter.run.as_ref()),
            tables: results
                .map(|r| r.tables.iter().map(|t| t.name.as_str()).collect())
                .unwrap_or_default(),
            equations: chapter.doc.equation_labels(),
        }
    }

    fn labels(&self, kind: RefKind) -> &[&'a str] {
        match kind {
            RefKind::Figure => &self.figures,
            RefKind::Table => &self.tables,
            RefKind::Equation | RefKind::Chapter => &self.equations,
        }
    }
}

/// The chapter's figures in the order the page shows them (their numbers are positions + 1):
/// experiment charts after their block or at their `{{figure: name}}` line, image figures
/// (`![..](x.svg){#fig:name}`) where they stand. One numbering for both, as Quarto has.
pub fn figure_order<'a>(doc: &'a Doc, run: Option<&'a ChapterRun>) -> Vec<&'a str> {
    let recorded = run.map_or(&[][..], |r| r.results.figures.as_slice());
    let placed: Vec<&str> = doc
        .pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Placement {
                kind: PlacementKind::Figure,
                name,
                ..
            } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    let mut order: Vec<&str> = Vec::new();
    for piece in &doc.pieces {
        let names: Vec<&str> = match piece {
            Piece::Experiment(i) => recorded
                .iter()
                .filter(|f| {
                    f.block == doc.experiments[*i].index && !placed.contains(&f.name.as_str())
                })
                .map(|f| f.name.as_str())
                .collect(),
            Piece::Placement {
                kind: PlacementKind::Figure,
                name,
                ..
            } if recorded.iter().any(|f| f.name == *name) => vec![name.as_str()],
            Piece::ImageFigure(k) => vec![doc.image_figures[*k].name.as_str()],
            _ => continue,
        };
        // A chart placed twice keeps its first number.
        order.extend(
            names
                .into_iter()
                .filter(|n| !order.contains(n))
                .collect::<Vec<_>>(),
        );
    }
    order
}

/// Resolves every reference of every chapter; unresolved ones are diagnostics (and `None`).
pub fn resolve_all<C: AsRef<Ran>>(
    series: &Series<C>,
) -> (Vec<Vec<Option<Resolved>>>, Vec<Diagnostic>) {
    let base = series.config.base_path();
    let index: BTreeMap<&str, Numbered<'_>> = series
        .chapters
        .iter()
        .map(AsRef::<Ran>::as_ref)
        .map(|c| (c.slug.as_str(), Numbered::new(c)))
        .collect();
    let mut problems = Vec::new();
    let mut all = Vec::new();
    for chapter in series.chapters.iter().map(AsRef::<Ran>::as_ref) {
        let mut resolved = Vec::new();
        for r in &chapter.doc.refs {
            if points_into_a_chapter_without_results(&index, chapter, r) {
                // Its figures and tables are unknown, and its failure is reported already.
                resolved.push(None);
                continue;
            }
            match resolve(&index, chapter, r, &base) {
                Ok(done) => resolved.push(Some(done)),
                Err(d) => {
                    problems.push(d.at(chapter.location(r.span.clone())));
                    resolved.push(None);
                }
            }
        }
        all.push(resolved);
    }
    (all, problems)
}

/// Resolves the references of a text that is not one of the series' chapters (the index
/// page's intro): `@ch:` and references into chapters as from any chapter, its own labelled
/// equations as a chapter's.
pub fn resolve_extra<C: AsRef<Ran>>(
    series: &Series<C>,
    page: &Ran,
) -> (Vec<Option<Resolved>>, Vec<Diagnostic>) {
    let base = series.config.base_path();
    let mut index: BTreeMap<&str, Numbered<'_>> = series
        .chapters
        .iter()
        .map(AsRef::<Ran>::as_ref)
        .map(|c| (c.slug.as_str(), Numbered::new(c)))
        .collect();
    index.insert(page.slug.as_str(), Numbered::new(page));
    let mut problems = Vec::new();
    let resolved = page
        .doc
        .refs
        .iter()
        .map(|r| {
            if points_into_a_chapter_without_results(&index, page, r) {
                return None;
            }
            resolve(&index, page, r, &base)
                .map_err(|d| problems.push(d.at(page.location(r.span.clone()))))
                .ok()
        })
        .collect();
    (resolved, problems)
}

fn points_into_a_chapter_without_results(
    index: &BTreeMap<&str, Numbered<'_>>,
    from: &Ran,
    r: &CrossRef,
) -> bool {
    let slug = r.chapter.as_deref().unwrap_or(&from.slug);
    matches!(r.kind, RefKind::Figure | RefKind::Table)
        && index
            .get(slug)
            .is_some_and(|target| target.chapter.lacks_results())
}

fn resolve(
    index: &BTreeMap<&str, Numbered<'_>>,
    from: &Ran,
    r: &CrossRef,
    base: &str,
) -> Result<Resolved, Diagnostic> {
    let slug = r.chapter.as_deref().unwrap_or(&from.slug);
    let Some(target) = index.get(slug) else {
        let d = Diagnostic::error(format!("unresolved reference: no chapter `{slug}`"));
        let hint = did_you_mean(&closest(slug, index.keys().copied()));
        return Err(d.with_help(
            hint.unwrap_or_else(|| "chapters are named by slug, e.g. `@ch:bahdanau`".into()),
        ));
    };
    let page = chapter_url(base, &target.chapter.slug);
    let same = target.chapter.slug == from.slug;
    let chapter_prefix = if same {
        String::new()
    } else if target.chapter.is_appendix() {
        // An appendix has no number to name it by: its title does.
        crate::messages::fill("ref_appendix", &[("title", &target.chapter.front.title)])
    } else {
        crate::messages::fill("ref_chapter", &[("n", &target.chapter.front.number)])
    };
    if r.kind == RefKind::Chapter {
        return Ok(Resolved {
            text: crate::messages::fill("ref_title", &[("title", &target.chapter.front.title)]),
            url: page,
        });
    }
    let labels = target.labels(r.kind);
    let Some(position) = labels.iter().position(|l| *l == r.name) else {
        let never_ran = r.kind != RefKind::Equation
            && target.chapter.run.is_none()
            && !target.chapter.doc.experiments.is_empty();
        let what = match r.kind {
            RefKind::Figure => "figure",
            RefKind::Table => "table",
            _ => "labelled equation",
        };
        let d = Diagnostic::error(format!(
            "unresolved reference: no {what} `{}` in chapter `{slug}`",
            r.name
        ));
        let help = if never_ran {
            "that chapter's experiments have not run yet".to_string()
        } else {
            did_you_mean(&closest(&r.name, labels.iter().copied())).unwrap_or_else(|| {
                match r.kind {
                    RefKind::Equation => {
                        "label a display formula with `$$ ... $$ {#eq:name}`".into()
                    }
                    _ => format!("record it with `lab.{what}(\"{}\", ...)`", r.name),
                }
            })
        };
        return Err(d.with_help(help));
    };
    let n = position + 1;
    let (text, anchor) = match r.kind {
        RefKind::Figure => (
            crate::messages::fill("ref_figure", &[("chapter", &chapter_prefix), ("n", &n)]),
            format!("fig-{}", r.name),
        ),
        RefKind::Table => (
            crate::messages::fill("ref_table", &[("chapter", &chapter_prefix), ("n", &n)]),
            format!("tab-{}", r.name),
        ),
        _ => (
            crate::messages::fill("ref_equation", &[("chapter", &chapter_prefix), ("n", &n)]),
            format!("eq-{}", r.name),
        ),
    };
    let url = if same {
        format!("#{anchor}")
    } else {
        format!("{page}#{anchor}")
    };
    Ok(Resolved { text, url })
}
