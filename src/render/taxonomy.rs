//! Tag and category pages: `/tags/` lists every term with its count, `/tags/NAME/` and
//! `/categories/NAME/` list the chapters filed under one term, in series order.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;
use tera::Tera;

use crate::content::{Chapter, Series};
use crate::diagnostic::Diagnostic;
use crate::markdown::slugify;
use crate::render::{ChapterView, MetaView, SiteView, template_error};

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

    fn label(self) -> &'static str {
        match self {
            Kind::Tag => "标签",
            Kind::Category => "分类",
        }
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
    /// The link to one term's page.
    pub fn new(base_path: &str, kind: Kind, name: &str) -> Self {
        TermLink {
            name: name.to_string(),
            url: term_url(base_path, kind, name),
            count: 0,
        }
    }
}

/// The URL of a term's page.
pub fn term_url(base_path: &str, kind: Kind, name: &str) -> String {
    format!("{base_path}{}/{}/", kind.dir(), slugify(name))
}

fn terms(chapter: &Chapter, kind: Kind) -> Vec<&str> {
    match kind {
        Kind::Tag => chapter.front.tags.iter().map(String::as_str).collect(),
        Kind::Category => chapter.front.category.as_deref().into_iter().collect(),
    }
}

/// Term name -> chapters, in series order.
fn index(series: &Series, kind: Kind) -> BTreeMap<&str, Vec<&Chapter>> {
    let mut all: BTreeMap<&str, Vec<&Chapter>> = BTreeMap::new();
    for chapter in &series.chapters {
        for term in terms(chapter, kind) {
            all.entry(term).or_default().push(chapter);
        }
    }
    all
}

/// Every term of one kind with its count.
pub fn links(series: &Series, kind: Kind) -> Vec<TermLink> {
    let base = series.config.base_path();
    index(series, kind)
        .into_iter()
        .map(|(name, chapters)| TermLink {
            name: name.to_string(),
            url: term_url(&base, kind, name),
            count: chapters.len(),
        })
        .collect()
}

/// Up to three other chapters sharing the chapter's category or a tag, most shared first.
pub fn related<'a>(series: &'a Series, chapter: &Chapter) -> Vec<&'a Chapter> {
    let mine: Vec<&str> = terms(chapter, Kind::Tag)
        .into_iter()
        .chain(terms(chapter, Kind::Category))
        .collect();
    let mut scored: Vec<(usize, &Chapter)> = series
        .chapters
        .iter()
        .filter(|c| c.slug != chapter.slug)
        .map(|c| {
            let theirs: Vec<&str> = terms(c, Kind::Tag)
                .into_iter()
                .chain(terms(c, Kind::Category))
                .collect();
            (mine.iter().filter(|t| theirs.contains(t)).count(), c)
        })
        .filter(|(shared, _)| *shared > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.front.number.cmp(&b.1.front.number)));
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}

/// Renders `tags/index.html` and one page per tag and per category.
pub fn pages(tera: &Tera, series: &Series) -> Result<Vec<(PathBuf, Vec<u8>)>, Diagnostic> {
    let site = SiteView::new(&series.config);
    let mut files = Vec::new();
    for kind in [Kind::Tag, Kind::Category] {
        for (name, chapters) in index(series, kind) {
            let views: Vec<ChapterView<'_>> = chapters
                .iter()
                .map(|c| ChapterView::new(c, &site.base_path))
                .collect();
            let mut context = tera::Context::new();
            context.insert("site", &site);
            context.insert("term", &name);
            context.insert("kind", kind.label());
            context.insert("chapters", &views);
            context.insert(
                "meta",
                &MetaView::website(
                    &site,
                    format!("{}：{name} · {}", kind.label(), site.title),
                    format!("{}{}/{}/", site.base_url, kind.dir(), slugify(name)),
                ),
            );
            let html = tera
                .render("taxonomy.html", &context)
                .map_err(|e| template_error(&e, "taxonomy.html"))?;
            files.push((
                PathBuf::from(kind.dir())
                    .join(slugify(name))
                    .join("index.html"),
                html.into_bytes(),
            ));
        }
    }
    let mut context = tera::Context::new();
    context.insert("site", &site);
    context.insert("tags", &links(series, Kind::Tag));
    context.insert("categories", &links(series, Kind::Category));
    context.insert(
        "meta",
        &MetaView::website(
            &site,
            format!("标签与分类 · {}", site.title),
            format!("{}tags/", site.base_url),
        ),
    );
    let html = tera
        .render("taxonomies.html", &context)
        .map_err(|e| template_error(&e, "taxonomies.html"))?;
    files.push((PathBuf::from("tags/index.html"), html.into_bytes()));
    Ok(files)
}
