//! Stage 5: render pages through Tera templates.
//!
//! Templates get typed view structs that borrow from the model (zola's `SerializingPage`), never
//! a hand-built map. The default templates are embedded in the binary; a site's `templates/`
//! directory overrides them file by file.

pub mod cache;
pub mod cite;
pub mod glossary;
pub mod highlight;
pub mod html;
pub mod links;
pub mod math;
pub mod preview;
pub mod print;
pub mod search;
pub mod svg;
pub mod taxonomy;
pub mod tex_text;
pub mod verification;
pub mod xref;

use std::path::Path;

use serde::Serialize;
use tera::Tera;

use crate::config::Config;
use crate::content::{Chapter, Series, Taxonomy};
use crate::diagnostic::{Diagnostic, Location};
use crate::lab::{Ran, RunMeta};
use crate::markdown::{Heading, Parsed};
use crate::quotes::Bound;
use taxonomy::{Kind, TermLink};

const DEFAULT_TEMPLATES: [(&str, &str); 11] = [
    (
        "taxonomy.html",
        include_str!("../../templates/taxonomy.html"),
    ),
    (
        "taxonomies.html",
        include_str!("../../templates/taxonomies.html"),
    ),
    ("404.html", include_str!("../../templates/404.html")),
    ("atom.xml", include_str!("../../templates/atom.xml")),
    ("sitemap.xml", include_str!("../../templates/sitemap.xml")),
    ("macros.html", include_str!("../../templates/macros.html")),
    ("base.html", include_str!("../../templates/base.html")),
    ("index.html", include_str!("../../templates/index.html")),
    ("chapter.html", include_str!("../../templates/chapter.html")),
    (
        "verification.html",
        include_str!("../../templates/verification.html"),
    ),
    ("print.html", include_str!("../../templates/print.html")),
];

/// A chapter rendered: its body as HTML, ready for the templates; this stage's output. It
/// dereferences to the [`Bound`] chapter.
#[derive(Debug, Clone)]
pub struct Page {
    /// The chapter with its quotes bound.
    pub bound: Bound,
    /// The rendered body.
    pub html: String,
    /// The hash of `html`, which keys the pages that include it ([`cache::Digested`]).
    pub digest: String,
    /// The file name of the chapter's take-home experiments, beside its page, when offered.
    pub take_home: Option<String>,
}

impl std::ops::Deref for Page {
    type Target = Bound;
    fn deref(&self) -> &Bound {
        &self.bound
    }
}

impl AsRef<Chapter> for Page {
    fn as_ref(&self) -> &Chapter {
        &self.bound.ran.parsed.chapter
    }
}

impl AsRef<Parsed> for Page {
    fn as_ref(&self) -> &Parsed {
        &self.bound.ran.parsed
    }
}

impl AsRef<Ran> for Page {
    fn as_ref(&self) -> &Ran {
        &self.bound.ran
    }
}

impl AsRef<Bound> for Page {
    fn as_ref(&self) -> &Bound {
        &self.bound
    }
}

/// The site's templates, and the pages they rendered before: a page whose template and
/// context are those of a page rendered by an earlier build is read back from the store, not
/// rendered again (a no-change build renders nothing). The key is the hash of every template's
/// name and text (templates include one another, so any edit renders every page again), the
/// page's template name and the JSON of its context, exactly what Tera sees.
pub struct Templates {
    tera: Tera,
    fingerprint: String,
    /// Where pages are kept ([`cache::Blobs::off`] when a template is impure).
    store: cache::Blobs,
    /// The store on disk, pruned after the build.
    kept: cache::Blobs,
}

impl Templates {
    /// Loads the templates (see [`load_templates`]); pages are kept in `store`.
    pub fn load(root: &Path, store: cache::Blobs) -> Result<Self, Vec<Diagnostic>> {
        let (tera, fingerprint, impure) = load_templates_keyed(root)?;
        // A template that asks for the time, a random number or the environment renders
        // differently with the same context: its pages are always rendered afresh, and what
        // earlier builds kept goes at the prune.
        let (store, kept) = if impure {
            (cache::Blobs::off(), store)
        } else {
            (store, cache::Blobs::off())
        };
        Ok(Templates {
            tera,
            fingerprint,
            store,
            kept,
        })
    }

    /// The page store (for the parts of pages kept on their own).
    pub fn store(&self) -> &cache::Blobs {
        &self.store
    }

    /// Removes the stored pages and parts this build did not use.
    pub fn prune(&self) {
        self.store.prune();
        self.kept.prune();
    }

    /// The page `name` renders with `context`, with the characters no page may hold removed
    /// ([`crate::text::sanitize`]), from the store when it holds it.
    pub fn render(
        &self,
        name: &str,
        context: PageContext<'_>,
    ) -> Result<cache::Output, Diagnostic> {
        let PageContext { mut key, fill } = context;
        key.bytes(cache::binary_identity().as_bytes())
            .bytes(self.fingerprint.as_bytes())
            .bytes(name.as_bytes());
        self.store.output_or_make(&key.finish(), || {
            let mut context = tera::Context::new();
            for insert in fill {
                insert(&mut context);
            }
            let page = self
                .tera
                .render(name, &context)
                .map_err(|e| template_error(&e, name))?;
            // Whatever reached a page (a front matter value, experiment output, a site
            // template), it stays well-formed XML and HTML; the sources were warned about at
            // their lines.
            Ok(crate::text::sanitize(&page).into_owned().into_bytes())
        })
    }
}

/// What a template sees, built like a [`tera::Context`], and hashed as it is built. Values
/// are turned into the template's JSON only when the page has to be rendered.
pub struct PageContext<'a> {
    key: cache::Key,
    #[allow(clippy::type_complexity)]
    fill: Vec<Box<dyn FnOnce(&mut tera::Context) + 'a>>,
}

impl Default for PageContext<'_> {
    fn default() -> Self {
        PageContext {
            key: cache::Key::new("page"),
            fill: Vec::new(),
        }
    }
}

impl<'a> PageContext<'a> {
    /// An empty context.
    pub fn new() -> Self {
        Self::default()
    }

    /// `value` as `name`, keyed by its JSON ([`cache::Digested`] text by its digest).
    pub fn insert<T: Serialize + 'a>(&mut self, name: &'static str, value: T) {
        self.key.bytes(name.as_bytes()).json(&value);
        self.fill
            .push(Box::new(move |context| context.insert(name, &value)));
    }

    /// A value made only when the page is rendered, keyed by `key`: everything `make` reads.
    pub fn insert_with<K: Serialize + ?Sized, T: Serialize>(
        &mut self,
        name: &'static str,
        key: &K,
        make: impl FnOnce() -> T + 'a,
    ) {
        self.key.bytes(name.as_bytes()).json(key);
        self.fill
            .push(Box::new(move |context| context.insert(name, &make())));
    }
}

/// Loads the templates: embedded defaults, overridden by `root/templates/*.html`.
pub fn load_templates(root: &Path) -> Result<Tera, Vec<Diagnostic>> {
    load_templates_keyed(root).map(|(tera, _, _)| tera)
}

/// Tera's functions whose result is not decided by the context (`now` and `get_random` exist
/// only with Tera's `builtins` feature, which this build leaves out; a template that calls them
/// fails to render, but the check keeps the store honest if the feature is ever turned on).
const IMPURE_FUNCTIONS: [&str; 3] = ["now(", "get_random(", "get_env("];

/// The templates, a hash of every name and text among them, and whether any calls one of
/// [`IMPURE_FUNCTIONS`].
fn load_templates_keyed(root: &Path) -> Result<(Tera, String, bool), Vec<Diagnostic>> {
    let mut templates: Vec<(String, String, String)> = DEFAULT_TEMPLATES
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string(), format!("(built-in) {n}")))
        .collect();
    let dir = root.join("templates");
    if dir.is_dir() {
        for entry in walkdir::WalkDir::new(&dir)
            .sort_by_file_name()
            .into_iter()
            .filter_map(Result::ok)
        {
            if !entry.file_type().is_file() {
                continue;
            }
            let name = entry
                .path()
                .strip_prefix(&dir)
                .unwrap_or(entry.path())
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(entry.path()).map_err(|e| {
                vec![Diagnostic::error(format!(
                    "cannot read template {}: {e}",
                    entry.path().display()
                ))]
            })?;
            templates.retain(|(n, _, _)| *n != name);
            templates.push((name.clone(), text, format!("templates/{name}")));
        }
    }
    let mut tera = Tera::default();
    tera.autoescape_on(vec![".html", ".xml"]);
    // Tera's default escaper also escapes `/`, which makes every URL unreadable in the source.
    tera.set_escape_fn(html::escape);
    let pairs: Vec<(String, String)> = templates
        .iter()
        .map(|(n, t, _)| (n.clone(), t.clone()))
        .collect();
    let mut key = cache::Key::new("templates");
    for (name, text) in &pairs {
        key.bytes(name.as_bytes()).bytes(text.as_bytes());
    }
    let impure = pairs
        .iter()
        .any(|(_, text)| IMPURE_FUNCTIONS.iter().any(|f| text.contains(f)));
    tera.add_raw_templates(pairs)
        .map_err(|e| vec![template_error(&e, "templates")])?;
    Ok((tera, key.finish(), impure))
}

/// A Tera error with its whole cause chain (Tera puts the useful part in the sources).
pub fn template_error(error: &tera::Error, what: &str) -> Diagnostic {
    let mut chain = Vec::new();
    let mut source: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = source {
        chain.push(e.to_string());
        source = e.source();
    }
    let mut d = Diagnostic::error(format!("template error in {what}: {}", chain[0]));
    for cause in &chain[1..] {
        d = d.with_note(cause.clone());
    }
    d.with_help("fix the template under templates/, or delete it to use the built-in one")
}

/// Site-wide values every template sees as `site`.
#[derive(Serialize)]
pub struct SiteView<'a> {
    title: &'a str,
    description: &'a str,
    language: &'a str,
    author: &'a str,
    base_url: String,
    base_path: String,
    /// `[search] enabled`: the search box and its index.
    search: bool,
    /// `[highlight] enabled`: the highlighting stylesheet.
    highlight: bool,
    /// `[verification] enabled`: the verification page, linked from every run footer.
    verification: bool,

    /// `[print] enabled`: the print page, linked from the navigation.
    print: bool,
    /// `[print] pdf = true`: every page links `book.pdf`.
    pdf: bool,
}

impl<'a> SiteView<'a> {
    /// From the config.
    pub fn new(config: &'a Config) -> Self {
        SiteView {
            title: &config.title,
            description: &config.description,
            language: &config.language,
            author: &config.author,
            base_url: config.base_url_slash(),
            base_path: config.base_path(),
            search: config.search.enabled,
            highlight: config.highlight.enabled,
            verification: config.verification.enabled,

            print: config.print.enabled,
            pdf: config.print.enabled && config.print.pdf,
        }
    }
}

/// A chapter as templates see it.
#[derive(Serialize)]
pub struct ChapterView<'a> {
    title: &'a str,
    number: u32,
    /// `07` for a chapter, `附录` for an appendix page.
    number_label: String,
    /// An unnumbered appendix page: templates print `附录` instead of `第 N 篇`.
    appendix: bool,
    slug: &'a str,
    url: String,
    date: Option<String>,
    tags: &'a [String],
    category: Option<&'a str>,
    summary: Option<&'a str>,
    content: cache::Digested<'a>,
    permalink: String,
    updated: String,
    tag_links: Vec<TermLink>,
    category_link: Option<TermLink>,
}

impl<'a> ChapterView<'a> {
    /// From a rendered chapter; `taxonomy` gives its tags' and category's URLs.
    pub fn new(chapter: &'a Page, base_path: &str, taxonomy: &Taxonomy) -> Self {
        Self::with_base_url(chapter, base_path, "", taxonomy)
    }

    /// With an absolute permalink (feeds and sitemaps need full URLs).
    pub fn with_base_url(
        chapter: &'a Page,
        base_path: &str,
        base_url: &str,
        taxonomy: &Taxonomy,
    ) -> Self {
        ChapterView {
            title: &chapter.front.title,
            number: chapter.front.number,
            number_label: number_label(chapter),
            appendix: chapter.is_appendix(),
            slug: &chapter.slug,
            url: chapter_url(base_path, &chapter.slug),
            permalink: format!("{base_url}{}/", chapter.slug),
            date: chapter.front.date_string(),
            tags: &chapter.front.tags,
            tag_links: chapter
                .front
                .tags
                .iter()
                .map(|t| TermLink::new(base_path, taxonomy, Kind::Tag, t))
                .collect(),
            category_link: chapter
                .front
                .category
                .as_deref()
                .map(|c| TermLink::new(base_path, taxonomy, Kind::Category, c)),
            category: chapter.front.category.as_deref(),
            summary: chapter.front.summary.as_deref(),
            content: cache::Digested::new(&chapter.html, &chapter.digest),
            updated: chapter
                .front
                .date_string()
                .map(|d| format!("{d}T00:00:00Z"))
                .unwrap_or_default(),
        }
    }
}

/// How lists and breadcrumbs label a page: its number, or `附录` for an appendix page.
pub fn number_label(chapter: &Chapter) -> String {
    if chapter.is_appendix() {
        "附录".to_string()
    } else {
        format!("{:02}", chapter.front.number)
    }
}

/// What `<head>` says about a page (title, description, canonical URL, Open Graph type).
#[derive(Serialize)]
struct MetaView {
    title: String,
    description: String,
    url: String,
    kind: &'static str,
}

impl MetaView {
    fn website(site: &SiteView<'_>, title: String, url: String) -> Self {
        MetaView {
            title,
            description: site.description.to_string(),
            url,
            kind: "website",
        }
    }
}

/// The URL of a chapter page.
pub fn chapter_url(base_path: &str, slug: &str) -> String {
    format!("{base_path}{slug}/")
}

#[derive(Serialize)]
struct LinkView<'a> {
    title: &'a str,
    url: String,
}

/// One page of the series in the chapter list beside every chapter.
#[derive(Serialize)]
struct ListEntry<'a> {
    title: &'a str,
    /// `01` for a chapter (the appendices are listed apart, by title only).
    number_label: String,
    url: String,
    /// The page being rendered: marked `aria-current="page"`.
    current: bool,
}

/// The chapter list: the chapters in series order, then the appendix pages.
#[derive(Serialize)]
struct ChapterList<'a> {
    chapters: Vec<ListEntry<'a>>,
    appendices: Vec<ListEntry<'a>>,
}

fn chapter_list<'a>(series: &'a Series<Page>, base_path: &str, current: usize) -> ChapterList<'a> {
    let entry = |(i, c): (usize, &'a Page)| ListEntry {
        title: &c.front.title,
        number_label: number_label(c),
        url: chapter_url(base_path, &c.slug),
        current: i == current,
    };
    let (appendices, chapters): (Vec<_>, Vec<_>) = series
        .chapters
        .iter()
        .enumerate()
        .partition(|(_, c)| c.is_appendix());
    ChapterList {
        chapters: chapters.into_iter().map(entry).collect(),
        appendices: appendices.into_iter().map(entry).collect(),
    }
}

#[derive(Serialize)]
struct TocEntry<'a> {
    id: &'a str,
    text: &'a str,
    html: &'a str,
    children: Vec<TocEntry<'a>>,
}

#[derive(Serialize)]
struct RunView<'a> {
    ran_at: &'a str,
    toolchain: &'a str,
    seed: u64,
    duration: String,
    cpu: &'a str,
    isa: String,
}

/// The TOC: h2 entries with their h3 children.
fn toc(headings: &[Heading]) -> Vec<TocEntry<'_>> {
    let mut entries: Vec<TocEntry<'_>> = Vec::new();
    for h in headings {
        let entry = TocEntry {
            id: &h.id,
            text: &h.text,
            html: &h.html,
            children: Vec::new(),
        };
        match (h.level, entries.last_mut()) {
            (2, _) => entries.push(entry),
            (3, Some(parent)) => parent.children.push(entry),
            (3, None) => entries.push(entry),
            _ => {}
        }
    }
    entries
}

fn run_view(meta: &RunMeta) -> RunView<'_> {
    RunView {
        ran_at: &meta.ran_at,
        toolchain: &meta.toolchain,
        seed: meta.seed,
        duration: format!("{:.1} 秒", meta.duration_ms as f64 / 1000.0),
        cpu: &meta.cpu,
        isa: isa_name(&meta.isa),
    }
}

/// The instruction set of a run as readers know it: `AVX-512`, `AVX2`, or the portable kernels.
pub fn isa_name(level: &str) -> String {
    match level {
        "avx512" => "AVX-512".to_string(),
        "avx2" => "AVX2".to_string(),
        "portable" => "可移植内核（未用 AVX）".to_string(),
        "" => "未知".to_string(),
        other => other.to_string(),
    }
}

/// Renders one chapter page.
pub fn chapter_page<'a>(
    templates: &Templates,
    series: &'a Series<Page>,
    values: &crate::quotes::ValueIndex,
    related: &taxonomy::Related,
    index: usize,
) -> Result<cache::Output, Diagnostic> {
    let chapter = &series.chapters[index];
    let site = SiteView::new(&series.config);
    let base = site.base_path.clone();
    let link = |c: &'a Page| LinkView {
        title: &c.front.title,
        url: chapter_url(&base, &c.slug),
    };
    let mut context = PageContext::new();
    context.insert(
        "chapter",
        ChapterView::new(chapter, &site.base_path, &series.taxonomy),
    );
    context.insert(
        "meta",
        MetaView {
            title: format!("{} · {}", chapter.front.title, site.title),
            description: chapter
                .front
                .summary
                .clone()
                .unwrap_or_else(|| site.description.to_string()),
            url: format!("{}{}/", site.base_url, chapter.slug),
            kind: "article",
        },
    );
    context.insert("toc", toc(&chapter.doc.headings));
    context.insert("chapter_list", chapter_list(series, &base, index));
    // Every value the chapter's experiments recorded, e.g. `{{ values["entropy.dot"] }}`.
    context.insert("values", values.chapter(&chapter.slug));
    context.insert(
        "prev",
        index.checked_sub(1).map(|i| link(&series.chapters[i])),
    );
    context.insert("next", series.chapters.get(index + 1).map(link));
    let related: Vec<LinkView<'_>> = related.of(series, index).into_iter().map(link).collect();
    context.insert("related", related);
    context.insert("run", chapter.run.as_ref().map(|r| run_view(&r.meta)));
    // The chapter's experiments as a standalone Cargo project (`repository` in site.toml).
    let take_home = chapter.take_home.as_ref();
    context.insert(
        "take_home",
        take_home.map(|file| format!("{}{file}", chapter_url(&base, &chapter.slug))),
    );
    context.insert("site", site);
    templates
        .render("chapter.html", context)
        .map_err(|e| e.at(Location::at_line(&chapter.path, 1, 1)))
}

/// Renders the index page; `intro_html` is the rendered `intro` of site.toml.
pub fn index_page(
    templates: &Templates,
    series: &Series<Page>,
    intro_html: &str,
) -> Result<cache::Output, Diagnostic> {
    let site = SiteView::new(&series.config);
    let chapters: Vec<ChapterView<'_>> = series
        .chapters
        .iter()
        .map(|c| ChapterView::new(c, &site.base_path, &series.taxonomy))
        .collect();
    let mut context = PageContext::new();
    context.insert("chapters", chapters);
    context.insert("intro_html", intro_html.to_string());
    context.insert(
        "meta",
        site_meta(&site, site.title.to_string(), site.base_url.clone()),
    );
    context.insert("site", site);
    templates.render("index.html", context)
}

fn site_meta(site: &SiteView<'_>, title: String, url: String) -> MetaView {
    MetaView {
        title,
        description: site.description.to_string(),
        url,
        kind: "website",
    }
}

/// Renders `404.html`.
pub fn not_found_page(
    templates: &Templates,
    series: &Series<Page>,
) -> Result<cache::Output, Diagnostic> {
    let site = SiteView::new(&series.config);
    let mut context = PageContext::new();
    context.insert(
        "meta",
        site_meta(
            &site,
            format!("找不到页面 · {}", site.title),
            format!("{}404.html", site.base_url),
        ),
    );
    context.insert("site", site);
    templates.render("404.html", context)
}

/// Renders an XML template (`atom.xml`, `sitemap.xml`) over the whole series, newest first.
/// The Atom feed announces articles, so it leaves the appendix pages out (a glossary is not
/// news); the sitemap lists every page.
pub fn feed(
    templates: &Templates,
    series: &Series<Page>,
    template: &str,
) -> Result<cache::Output, Diagnostic> {
    let site = SiteView::new(&series.config);
    let with_appendices = template != "atom.xml";
    let mut chapters: Vec<ChapterView<'_>> = series
        .chapters
        .iter()
        .filter(|c| with_appendices || !c.is_appendix())
        .map(|c| ChapterView::with_base_url(c, &site.base_path, &site.base_url, &series.taxonomy))
        .collect();
    chapters.sort_by(|a, b| b.updated.cmp(&a.updated).then(b.number.cmp(&a.number)));
    // The feed's own time is its newest entry's: the same sources give the same bytes.
    let updated = chapters
        .iter()
        .map(|c| c.updated.clone())
        .max()
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".into());
    let mut context = PageContext::new();
    context.insert("chapters", chapters);
    context.insert("updated", updated);
    context.insert("site", site);
    templates.render(template, context)
}
