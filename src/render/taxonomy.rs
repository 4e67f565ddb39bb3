//! Tag and category pages: `/tags/` lists every term with its count, `/tags/NAME/` and
//! `/categories/NAME/` list the chapters filed under one term, in series order. Each term's
//! slug is unique (`content::taxonomy`), so no page overwrites another.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::content::taxonomy::{Term, Terms, term_slug};
use crate::content::{Chapter, Series, Taxonomy};
use crate::diagnostic::Diagnostic;
use crate::render::Page;
use crate::render::{ChapterView, MetaView, PageContext, SiteView, Templates};

/// Tags or categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `tags = [...]`
    Tag,
    /// `category = "..."`
    Category,
}

impl Kind {
    fn dir(self) -> &'static str {
        match self {
            Kind::Tag => "tags",
            Kind::Category => "categories",
        }
    }

    /// `标签` / `Tag`: the kind in the site's language.
    fn label(self) -> String {
        crate::messages::get(match self {
            Kind::Tag => "tag",
            Kind::Category => "category",
        })
    }
}

/// A term with its URL, as templates see it.
#[derive(Debug, Clone, Serialize)]
pub struct TermLink {
    name: String,
    url: String,
    count: usize,
}

impl TermLink {
    /// The link to the page of the term `name` (as a chapter spells it) belongs to.
    pub fn new(base_path: &str, taxonomy: &Taxonomy, kind: Kind, name: &str) -> Self {
        let slug = terms_of(taxonomy, kind)
            .get(name)
            .map_or_else(|| term_slug(name), |t| t.slug.clone());
        TermLink {
            name: name.to_string(),
            url: term_url(base_path, kind, &slug),
            count: 0,
        }
    }
}

/// The URL of a term's page.
pub fn term_url(base_path: &str, kind: Kind, slug: &str) -> String {
    format!("{base_path}{}/{slug}/", kind.dir())
}

fn terms_of(taxonomy: &Taxonomy, kind: Kind) -> &Terms {
    match kind {
        Kind::Tag => &taxonomy.tags,
        Kind::Category => &taxonomy.categories,
    }
}

fn terms(chapter: &Chapter, kind: Kind) -> Vec<&str> {
    match kind {
        Kind::Tag => chapter.front.tags.iter().map(String::as_str).collect(),
        Kind::Category => chapter.front.category.as_deref().into_iter().collect(),
    }
}

/// Every term with its chapters in series order, terms in name order.
fn index(series: &Series<Page>, kind: Kind) -> Vec<(&Term, Vec<&Page>)> {
    let all = terms_of(&series.taxonomy, kind);
    let mut by_slug: HashMap<&str, Vec<&Page>> = HashMap::new();
    for chapter in &series.chapters {
        for term in terms(chapter, kind).into_iter().filter_map(|t| all.get(t)) {
            let chapters = by_slug.entry(term.slug.as_str()).or_default();
            // A chapter tagged `Rust` and `rust` is listed once.
            if !chapters.last().is_some_and(|c| std::ptr::eq(*c, chapter)) {
                chapters.push(chapter);
            }
        }
    }
    all.iter()
        .filter_map(|term| Some((term, by_slug.remove(term.slug.as_str())?)))
        .collect()
}

/// Every term of one kind with its count.
pub fn links(series: &Series<Page>, kind: Kind) -> Vec<TermLink> {
    let base = series.config.base_path();
    index(series, kind)
        .into_iter()
        .map(|(term, chapters)| TermLink {
            name: term.name.clone(),
            url: term_url(&base, kind, &term.slug),
            count: chapters.len(),
        })
        .collect()
}

/// Every chapter's related chapters, worked out once per build: up to three other chapters
/// sharing its category or a tag, most shared first, then in series order.
///
/// Each chapter's terms become a sorted list of small integers, so comparing two chapters is a
/// merge of two short lists with no allocation; all pairs of a 3000-chapter series cost tens of
/// milliseconds (it was a third of a second when each comparison collected the terms again).
pub struct Related {
    of: Vec<Vec<usize>>,
}

/// How many related chapters a page lists.
const RELATED: usize = 3;

impl Related {
    /// Scores every pair of chapters.
    pub fn new(series: &Series<Page>) -> Related {
        let mut ids: HashMap<&str, u32> = HashMap::new();
        let sets: Vec<Vec<u32>> = series
            .chapters
            .iter()
            .map(|c| {
                let mut set: Vec<u32> = terms(c, Kind::Tag)
                    .into_iter()
                    .chain(terms(c, Kind::Category))
                    .map(|t| {
                        let next = u32::try_from(ids.len()).unwrap_or(u32::MAX);
                        *ids.entry(t).or_insert(next)
                    })
                    .collect();
                set.sort_unstable();
                set.dedup();
                set
            })
            .collect();
        let numbers: Vec<u32> = series.chapters.iter().map(|c| c.front.number).collect();
        let of = (0..sets.len())
            .map(|i| {
                // (shared terms, number, index) of the best so far, best first.
                let mut best: Vec<(usize, u32, usize)> = Vec::with_capacity(RELATED + 1);
                // Related pages are chapters: an appendix is reached from every page's list.
                let candidates =
                    (0..sets.len()).filter(|&j| j != i && !series.chapters[j].is_appendix());
                for j in candidates {
                    let shared = shared(&sets[i], &sets[j]);
                    if shared == 0 {
                        continue;
                    }
                    let entry = (shared, numbers[j], j);
                    let at = best
                        .iter()
                        .position(|b| {
                            (b.0, std::cmp::Reverse(b.1)) < (shared, std::cmp::Reverse(numbers[j]))
                        })
                        .unwrap_or(best.len());
                    if at < RELATED {
                        best.insert(at, entry);
                        best.truncate(RELATED);
                    }
                }
                best.into_iter().map(|(_, _, j)| j).collect()
            })
            .collect();
        Related { of }
    }

    /// The related chapters of the chapter at `index`.
    pub fn of<'a>(&self, series: &'a Series<Page>, index: usize) -> Vec<&'a Page> {
        self.of
            .get(index)
            .map(|js| js.iter().filter_map(|&j| series.chapters.get(j)).collect())
            .unwrap_or_default()
    }
}

/// How many ids two sorted lists have in common.
fn shared(a: &[u32], b: &[u32]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// Renders `tags/index.html` and one page per tag and per category.
pub fn pages(
    templates: &Templates,
    series: &Series<Page>,
) -> Result<Vec<(PathBuf, super::cache::Output)>, Diagnostic> {
    let site = SiteView::new(&series.config);
    let read = templates.may_read("taxonomy.html", "content");
    let mut files = Vec::new();
    for kind in [Kind::Tag, Kind::Category] {
        for (term, chapters) in index(series, kind) {
            let name = &term.name;
            let views: Vec<ChapterView<'_>> = chapters
                .iter()
                .map(|c| ChapterView::new(c, &site.base_path, &series.taxonomy).with_content(read))
                .collect();
            let mut context = PageContext::new();
            context.insert("site", &site);
            context.insert("term", name);
            context.insert("kind", kind.label());
            context.insert("chapters", views);
            context.insert(
                "meta",
                MetaView::website(
                    &site,
                    format!(
                        "{}{}{}",
                        crate::messages::fill(
                            "term_heading",
                            &[("kind", &kind.label()), ("term", &name)]
                        ),
                        crate::messages::get("title_separator"),
                        site.title
                    ),
                    format!("{}{}/{}/", site.base_url, kind.dir(), term.slug),
                ),
            );
            let html = templates.render("taxonomy.html", context)?;
            files.push((
                PathBuf::from(kind.dir())
                    .join(&term.slug)
                    .join("index.html"),
                html,
            ));
        }
    }
    let mut context = PageContext::new();
    context.insert("site", &site);
    context.insert("tags", links(series, Kind::Tag));
    context.insert("categories", links(series, Kind::Category));
    context.insert(
        "meta",
        MetaView::website(
            &site,
            format!(
                "{}{}{}",
                crate::messages::get("taxonomies"),
                crate::messages::get("title_separator"),
                site.title
            ),
            format!("{}tags/", site.base_url),
        ),
    );
    let html = templates.render("taxonomies.html", context)?;
    files.push((PathBuf::from("tags/index.html"), html));
    Ok(files)
}
