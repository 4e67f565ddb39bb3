//! The verification page (`verification/index.html`): every quoted number and every pinned
//! output of the site, each with what the prose says, what the rerun gave, the rule and the
//! verdict, chapter by chapter under the toolchain, processor and date of the chapter's run.
//!
//! It is the page a reader opens to check the claim of the footer ("every number comes from a
//! rerun experiment") without building the site: the same verdicts `verify` gives, in the
//! page's language.

use serde::Serialize;

use super::{
    MetaView, PageContext, RunView, SiteView, Templates, chapter_url, run_view, site_meta,
};
use crate::content::Series;
use crate::diagnostic::Diagnostic;
use crate::quotes::Bound;
use crate::quotes::{self, Status, output};
use crate::render::Page;

/// Where the page is written, relative to the output directory.
pub const PAGE_PATH: &str = "verification/index.html";

/// One quote or pinned output.
#[derive(Serialize)]
struct Row {
    /// `quote`, `output` or `claim`: what the template shows the row as.
    kind_id: &'static str,
    /// The kind in the site's language (`引用`, `输出`, `论断`).
    kind: String,
    /// Its Markdown line.
    line: usize,
    quoted: String,
    rerun: String,
    rule: String,
    /// `ok`, `drift` or `unbound`: a class for the stylesheet.
    status: &'static str,
    /// The verdict in words.
    verdict: String,
    /// The code that recorded it: a line of a block, or the block of a pinned output.
    source: Option<String>,
}

/// The rows of one chapter.
#[derive(Serialize)]
struct ChapterRows<'a> {
    /// The section's anchor, which the chapter's own footer links.
    slug: &'a str,
    title: &'a str,
    number_label: String,
    url: String,
    run: Option<RunView<'a>>,
    rows: Vec<Row>,
}

/// Counts over the whole site.
#[derive(Serialize, Default)]
struct Totals {
    quotes: usize,
    quotes_ok: usize,
    quotes_drift: usize,
    quotes_unbound: usize,
    outputs: usize,
    outputs_ok: usize,
    outputs_differ: usize,
    claims: usize,
    claims_hold: usize,
    claims_fail: usize,
    /// Rows whose verdict is not 一致 / 成立: what the page's filter keeps.
    flagged: usize,
}

/// Renders the verification page of a bound series.
pub fn page(
    templates: &Templates,
    series: &Series<Page>,
) -> Result<super::cache::Output, Diagnostic> {
    let site = SiteView::new(&series.config);
    let base_path = site.base_path.clone();
    let meta: MetaView = site_meta(
        &site,
        format!(
            "{}{}{}",
            crate::messages::get("verification"),
            crate::messages::get("title_separator"),
            site.title
        ),
        format!("{}verification/", site.base_url),
    );
    // The rows are made on every build (a few milliseconds) and key the page themselves: a
    // prose edit that moves no quote, output or claim finds the page in the store, where a
    // key of the chapters' inputs would render its 400 KB again.
    let mut totals = Totals::default();
    let chapters: Vec<ChapterRows<'_>> = series
        .chapters
        .iter()
        .map(|c| chapter_rows(c, &base_path, &mut totals))
        // A chapter that ran keeps its section even without a quote: its footer links it.
        .filter(|c| !c.rows.is_empty() || c.run.is_some())
        .collect();
    let mut context = PageContext::new();
    context.insert("meta", meta);
    context.insert("chapters", chapters);
    context.insert("totals", totals);
    context.insert("site", site);
    templates.render("verification.html", context)
}

fn chapter_rows<'a>(chapter: &'a Bound, base_path: &str, totals: &mut Totals) -> ChapterRows<'a> {
    let url = chapter_url(base_path, &chapter.slug);
    let mut rows: Vec<Row> = chapter
        .doc
        .quotes
        .iter()
        .zip(&chapter.bindings)
        .map(|(quote, binding)| {
            count_quote(totals, binding.status);
            quote_row(chapter, quote, binding, base_path)
        })
        .collect();
    rows.extend(output_rows(chapter, &url, totals));
    rows.extend(claim_rows(chapter, base_path, totals));
    rows.sort_by_key(|r| r.line);
    totals.flagged += rows.iter().filter(|r| r.status != "ok").count();
    ChapterRows {
        slug: &chapter.slug,
        title: &chapter.front.title,
        number_label: format!("{:02}", chapter.front.number),
        url,
        run: chapter.run.as_ref().map(|r| run_view(&r.meta)),
        rows,
    }
}

/// One row per claim: the statement, the values the rule read, the rule, the verdict.
fn claim_rows(chapter: &Bound, base_path: &str, totals: &mut Totals) -> Vec<Row> {
    chapter
        .doc
        .claims
        .iter()
        .zip(&chapter.claims)
        .map(|(claim, verdict)| {
            totals.claims += 1;
            let (status, verdict_text) = match verdict.holds {
                Some(true) => {
                    totals.claims_hold += 1;
                    ("ok", "status_holds")
                }
                Some(false) => {
                    totals.claims_fail += 1;
                    ("drift", "status_fails")
                }
                None => ("unbound", "status_untested"),
            };
            Row {
                kind_id: "claim",
                kind: crate::messages::get("kind_claim"),
                line: chapter.location(claim.span.clone()).line,
                quoted: chapter.source[claim.statement()].to_string(),
                rerun: verdict.values_text(),
                rule: verdict.rule.clone(),
                status,
                verdict: crate::messages::get(verdict_text),
                source: verdict.source.as_ref().map(|s| {
                    format!(
                        "{}#{}",
                        chapter_url(base_path, &s.chapter),
                        super::links::line_id(s.line)
                    )
                }),
            }
        })
        .collect()
}

fn count_quote(totals: &mut Totals, status: Status) {
    totals.quotes += 1;
    match status {
        Status::Ok => totals.quotes_ok += 1,
        Status::Drift => totals.quotes_drift += 1,
        Status::Unbound => totals.quotes_unbound += 1,
    }
}

fn quote_row(
    chapter: &Bound,
    quote: &crate::markdown::quote::QuoteSyntax,
    binding: &quotes::Binding,
    base_path: &str,
) -> Row {
    let (status, verdict) = match binding.status {
        Status::Ok => ("ok", "status_ok"),
        Status::Drift => ("drift", "status_drift"),
        Status::Unbound => ("unbound", "status_unbound"),
    };
    Row {
        kind_id: "quote",
        kind: crate::messages::get("kind_quote"),
        line: chapter.location(quote.number.span.clone()).line,
        quoted: chapter.source[quote.number.span.clone()].to_string(),
        rerun: binding.rerun.map(quotes::full).unwrap_or_default(),
        rule: match &quote.relation {
            Some(relation) => format!("{} {}", quote.name, relation.text),
            None => quotes::page_rule_text(quote.tolerance, &quote.number),
        },
        status,
        verdict: crate::messages::get(verdict),
        source: binding.source.as_ref().map(|s| {
            format!(
                "{}#{}",
                chapter_url(base_path, &s.chapter),
                super::links::line_id(s.line)
            )
        }),
    }
}

/// The pinned outputs of a chapter, compared with the rerun as `verify` compares them.
fn output_rows(chapter: &Bound, url: &str, totals: &mut Totals) -> Vec<Row> {
    let Some(run) = &chapter.run else {
        return Vec::new();
    };
    let mut rows = Vec::new();
    for exp in &chapter.doc.experiments {
        let Some(pinned) = &exp.pinned else { continue };
        let fresh = run
            .blocks
            .get(exp.index)
            .map(|b| crate::text::strip_ansi(&b.stdout).into_owned())
            .unwrap_or_default();
        let ok = output::matches(&pinned.text, &fresh);
        totals.outputs += 1;
        if ok {
            totals.outputs_ok += 1;
        } else {
            totals.outputs_differ += 1;
        }
        rows.push(Row {
            kind_id: "output",
            kind: crate::messages::get("kind_output"),
            line: pinned.line,
            quoted: pinned.text.trim_end().to_string(),
            rerun: fresh.trim_end().to_string(),
            rule: crate::messages::get("output_rule"),
            status: if ok { "ok" } else { "drift" },
            verdict: crate::messages::get(if ok { "status_ok" } else { "status_differs" }),
            source: Some(format!("{url}#experiment-{}", exp.index + 1)),
        });
    }
    rows
}
