//! Stage 5: render pages through Tera templates.
//!
//! Templates get typed view structs that borrow from the model (zola's `SerializingPage`), never
//! a hand-built map. The default templates are embedded in the binary; a site's `templates/`
//! directory overrides them file by file.

pub mod cache;
pub mod cite;
pub mod dates;
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

use std::collections::BTreeMap;
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
    /// Identifies `html` (a hash of what it was made from, see [`Page::inputs`]); it keys the
    /// pages that include the body ([`cache::Digested`]).
    pub digest: String,
    /// The file name of the chapter's take-home experiments, beside its page, when offered.
    pub take_home: Option<String>,
    /// A hash of everything the body was rendered from (its source, results, bindings, claims
    /// and what it reads of other chapters): it keys the site pages that read the chapter
    /// beyond its body (the verification page), so they are not rebuilt to be compared.
    pub inputs: String,
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
    /// Parsed on the first page that has to be rendered when this set of templates is known to
    /// parse ([`Templates::load`]); parsing them was 7 % of a build that renders nothing.
    tera: std::sync::OnceLock<Result<std::sync::Arc<Tera>, Diagnostic>>,
    /// Every template's name and text, for the parse.
    pairs: Vec<(String, String)>,
    fingerprint: String,
    /// Per template name: every text it is rendered from (itself and what it extends,
    /// includes and imports, transitively), for [`Templates::may_read`].
    reach: std::collections::HashMap<String, Vec<String>>,
    /// Where pages are kept ([`cache::Blobs::off`] when a template is impure).
    store: cache::Blobs,
    /// The store on disk, pruned after the build.
    kept: cache::Blobs,
}

impl Templates {
    /// Loads the templates (see [`load_templates`]); pages are kept in `store`.
    pub fn load(root: &Path, store: cache::Blobs) -> Result<Self, Vec<Diagnostic>> {
        let (pairs, fingerprint, impure, reach) = read_templates(root)?;
        // A set of templates (and a binary) an earlier build parsed without error parses the
        // same now, so the parse waits for a page that is not in the store: a build that
        // renders nothing does not parse them. Any other set is parsed here, and its errors
        // stop the build as they always did.
        let parsed = render_cache_dir(root).join("templates.parsed");
        let known = format!("{}\n{fingerprint}", cache::binary_identity());
        let tera = std::sync::OnceLock::new();
        if std::fs::read_to_string(&parsed).ok().as_deref() != Some(known.as_str()) {
            let _ = tera.set(Ok(
                parsed_templates(&pairs, &fingerprint).map_err(|e| vec![e])?
            ));
            let _ = std::fs::create_dir_all(render_cache_dir(root));
            let _ = std::fs::write(&parsed, known);
        }
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
            pairs,
            fingerprint,
            reach,
            store,
            kept,
        })
    }

    /// Whether rendering `template` may read the attribute `field` of a value (`x.field`,
    /// `x["field"]`). Conservative: an unknown template, a computed subscript (`x[name]`),
    /// `json_encode` or `__tera_context` may read anything. A page whose template cannot read
    /// a value leaves it out of its context and so out of its key: the index does not render
    /// again when only a chapter's body changed.
    pub fn may_read(&self, template: &str, field: &str) -> bool {
        let Some(texts) = self.reach.get(template) else {
            return true;
        };
        let named = [
            format!(".{field}"),
            format!("[\"{field}\"]"),
            format!("['{field}']"),
        ];
        texts.iter().any(|text| {
            text.contains("json_encode")
                || text.contains("__tera_context")
                || computed_subscript(text)
                || named.iter().any(|n| {
                    text.match_indices(n.as_str()).any(|(at, _)| {
                        !text[at + n.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
                    })
                })
        })
    }

    /// Whether `template` only ever prints the attribute `field` of a value whole and unescaped
    /// (`{{ chapter.content | safe }}`), never tests, filters or passes it on: then a page can be
    /// rendered with a stand-in for each value and the values put in their places after, the
    /// same bytes (the print page's 9 MB of chapter bodies never go through Tera). Conservative
    /// like [`Templates::may_read`]: an unknown template, a computed subscript, `json_encode` or
    /// `__tera_context` say no.
    pub fn passes_through(&self, template: &str, field: &str) -> bool {
        let Some(texts) = self.reach.get(template) else {
            return false;
        };
        let printed = regex_lite::Regex::new(&format!(
            r"\{{\{{-?\s*[A-Za-z_][A-Za-z0-9_]*\.{}\s*\|\s*safe\s*-?\}}\}}",
            regex_lite::escape(field)
        ))
        .expect("a valid pattern");
        let dotted = format!(".{field}");
        texts.iter().all(|text| {
            let uses = text
                .match_indices(dotted.as_str())
                .filter(|(at, _)| {
                    !text[at + dotted.len()..]
                        .starts_with(|c: char| c.is_alphanumeric() || c == '_')
                })
                .count();
            !text.contains("json_encode")
                && !text.contains("__tera_context")
                && !computed_subscript(text)
                && !text.contains(&format!("[\"{field}\"]"))
                && !text.contains(&format!("['{field}']"))
                && uses == printed.find_iter(text).count()
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
            let tera = self
                .tera
                .get_or_init(|| parsed_templates(&self.pairs, &self.fingerprint))
                .as_ref()
                .map_err(Clone::clone)?;
            let page = tera
                .render(name, &context)
                .map_err(|e| template_error(&e, name))?;
            // Whatever reached a page (a front matter value, experiment output, a site
            // template), it stays well-formed XML and HTML; the sources were warned about at
            // their lines.
            // The print page is 9 MB: it is not copied when it is clean (the usual case).
            Ok(match crate::text::sanitize(&page) {
                std::borrow::Cow::Borrowed(_) => page.into_bytes(),
                std::borrow::Cow::Owned(clean) => clean.into_bytes(),
            })
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

    /// Marks the page as one of a kind of its own (`what`), so two renderings of one template
    /// with the same values (a page and its shell with stand-ins) are not one stored page.
    pub fn kind(&mut self, what: &str) {
        self.key.bytes(b"kind").bytes(what.as_bytes());
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
    let (pairs, ..) = read_templates(root)?;
    parse_templates(&pairs).map_err(|e| vec![e])
}

/// `.attnbook/cache/render` of the site at `root`.
fn render_cache_dir(root: &Path) -> std::path::PathBuf {
    root.join(".attnbook/cache/render")
}

/// [`parse_templates`], kept in memory across `serve`'s rebuilds ([`crate::memo`]) under
/// `fingerprint`, the hash of every template's name and text.
fn parsed_templates(
    pairs: &[(String, String)],
    fingerprint: &str,
) -> Result<std::sync::Arc<Tera>, Diagnostic> {
    static PARSED: crate::memo::Memo<Result<std::sync::Arc<Tera>, Diagnostic>> =
        crate::memo::Memo::new();
    PARSED.get_or_make(
        || fingerprint.to_string(),
        || parse_templates(pairs).map(std::sync::Arc::new),
    )
}

/// The templates parsed by Tera, with the site's escaping and filters.
fn parse_templates(pairs: &[(String, String)]) -> Result<Tera, Diagnostic> {
    let mut tera = Tera::default();
    tera.autoescape_on(vec![".html", ".xml"]);
    // Tera's default escaper also escapes `/`, which makes every URL unreadable in the source.
    tera.set_escape_fn(html::escape);
    tera.register_filter("fill", fill_filter);
    tera.add_raw_templates(pairs.to_vec())
        .map_err(|e| template_error(&e, "templates"))?;
    Ok(tera)
}

/// Tera's functions whose result is not decided by the context (`now` and `get_random` exist
/// only with Tera's `builtins` feature, which this build leaves out; a template that calls them
/// fails to render, but the check keeps the store honest if the feature is ever turned on).
const IMPURE_FUNCTIONS: [&str; 3] = ["now(", "get_random(", "get_env("];

/// Every template's name and text (embedded defaults, overridden by `root/templates/`), a
/// hash of every name and text among them, and whether any calls one of
/// [`IMPURE_FUNCTIONS`].
#[allow(clippy::type_complexity)]
fn read_templates(
    root: &Path,
) -> Result<
    (
        Vec<(String, String)>,
        String,
        bool,
        std::collections::HashMap<String, Vec<String>>,
    ),
    Vec<Diagnostic>,
> {
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
    let reach = template_reach(&pairs);
    Ok((pairs, key.finish(), impure, reach))
}

/// Per template: its text and the texts of the templates it names in `extends`, `include`
/// and `import` tags, transitively.
fn template_reach(pairs: &[(String, String)]) -> std::collections::HashMap<String, Vec<String>> {
    static NAMED: std::sync::LazyLock<regex_lite::Regex> = std::sync::LazyLock::new(|| {
        regex_lite::Regex::new(r#"\{%-?\s*(?:extends|include|import)\s+["']([^"']+)["']"#)
            .expect("a valid pattern")
    });
    let texts: std::collections::HashMap<&str, &str> = pairs
        .iter()
        .map(|(n, t)| (n.as_str(), t.as_str()))
        .collect();
    pairs
        .iter()
        .map(|(name, _)| {
            let mut seen = vec![name.as_str()];
            let mut next = 0;
            while next < seen.len() {
                let text = texts.get(seen[next]).copied().unwrap_or_default();
                for found in NAMED.captures_iter(text) {
                    let named = found.get(1).map_or("", |m| m.as_str());
                    if let Some((&n, _)) = texts.get_key_value(named)
                        && !seen.contains(&n)
                    {
                        seen.push(n);
                    }
                }
                next += 1;
            }
            let reached = seen.iter().map(|n| texts[n].to_string()).collect();
            (name.clone(), reached)
        })
        .collect()
}

/// Whether a template subscripts a value with something other than a string or number
/// literal (`x[name]`), which may read any field.
fn computed_subscript(text: &str) -> bool {
    static COMPUTED: std::sync::LazyLock<regex_lite::Regex> = std::sync::LazyLock::new(|| {
        regex_lite::Regex::new(r#"[\w\)\]]\[\s*[^\s\d\]"']"#).expect("a valid pattern")
    });
    // Only inside tags and expressions: prose and HTML outside them may hold brackets.
    static EXPRESSION: std::sync::LazyLock<regex_lite::Regex> = std::sync::LazyLock::new(|| {
        regex_lite::Regex::new(r"(?s)\{\{.*?\}\}|\{%.*?%\}").expect("a valid pattern")
    });
    EXPRESSION
        .find_iter(text)
        .any(|expression| COMPUTED.is_match(expression.as_str()))
}

/// `{{ site.msg.key | fill(n=3, title=t) }}`: a message with its `{name}` placeholders replaced
/// by the named arguments.
fn fill_filter(
    value: &tera::Value,
    args: &std::collections::HashMap<String, tera::Value>,
) -> tera::Result<tera::Value> {
    let text = value
        .as_str()
        .ok_or_else(|| tera::Error::msg("`fill` applies to a message (a string)"))?;
    let values: Vec<(String, String)> = args
        .iter()
        .map(|(k, v)| {
            let shown = match v {
                tera::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), shown)
        })
        .collect();
    let pairs: Vec<(&str, &dyn std::fmt::Display)> = values
        .iter()
        .map(|(k, v)| (k.as_str(), v as &dyn std::fmt::Display))
        .collect();
    Ok(tera::Value::String(crate::messages::fill_text(
        text, &pairs,
    )))
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
    /// The interface's words in the site's language ([`crate::messages`]).
    msg: BTreeMap<String, String>,
    /// The scripts' words, as JSON for the page's `<script type="application/json">`.
    script_messages: String,
    /// `[print] pdf = true`: every page links `book.pdf`.
    pdf: bool,
}

impl<'a> SiteView<'a> {
    /// From the config.
    pub fn new(config: &'a Config) -> Self {
        let catalogue = crate::messages::current();
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
            msg: catalogue.messages.clone(),
            script_messages: catalogue.script_json(),
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
    /// ISO 8601 (`2026-12-02`), for `<time datetime>` and feeds.
    date: Option<String>,
    /// The date as the site's language writes it (`2026 年 12 月 2 日`, `2 December 2026`).
    date_text: Option<String>,
    tags: &'a [String],
    category: Option<&'a str>,
    summary: Option<&'a str>,
    /// The body; left out (see [`ChapterView::without_content`]) where the template cannot
    /// read it, so that the page's key does not change with every body.
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<cache::Digested<'a>>,
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
            date_text: chapter
                .front
                .date_string()
                .and_then(|d| self::dates::date_text(&d)),
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
            content: Some(cache::Digested::new(&chapter.html, &chapter.digest)),
            updated: chapter
                .front
                .date_string()
                .map(|d| format!("{d}T00:00:00Z"))
                .unwrap_or_default(),
        }
    }
}

impl ChapterView<'_> {
    /// Without the body, unless `read` (whether the page's template may read it:
    /// [`Templates::may_read`], asked once per page kind).
    pub fn with_content(mut self, read: bool) -> Self {
        if !read {
            self.content = None;
        }
        self
    }
}

/// How lists and breadcrumbs label a page: its number, or `附录` for an appendix page.
pub fn number_label(chapter: &Chapter) -> String {
    if chapter.is_appendix() {
        crate::messages::get("appendix")
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
    /// The list's name (`aria-label`) and the heading of its appendices, in the site's language.
    label: String,
    appendix_label: String,
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
        label: crate::messages::get("all_chapters"),
        appendix_label: crate::messages::get("appendix"),
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
    /// RFC 3339, for `<time datetime>`.
    ran_at: &'a str,
    /// The same as the site's language writes it.
    ran_at_text: String,
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
        ran_at_text: self::dates::date_time_text(&meta.ran_at),
        toolchain: &meta.toolchain,
        seed: meta.seed,
        duration: crate::messages::fill(
            "seconds",
            &[("n", &format!("{:.1}", meta.duration_ms as f64 / 1000.0))],
        ),
        cpu: &meta.cpu,
        isa: isa_name(&meta.isa),
    }
}

/// The instruction set of a run as readers know it: `AVX-512`, `AVX2`, or the portable kernels.
pub fn isa_name(level: &str) -> String {
    match level {
        "avx512" => "AVX-512".to_string(),
        "avx2" => "AVX2".to_string(),
        "portable" => crate::messages::get("isa_portable"),
        "" => crate::messages::get("isa_unknown"),
        other => other.to_string(),
    }
}

/// Renders one chapter page.
pub fn chapter_page<'a>(
    templates: &Templates,
    series: &'a Series<Page>,
    values: &'a std::sync::OnceLock<crate::quotes::ValueIndex>,
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
    // They are the chapter's results, so its run's identity keys them; the index of every
    // chapter's values is made only when a page is rendered.
    context.insert_with(
        "values",
        &chapter.run.as_ref().map(|r| r.identity()),
        move || {
            values
                .get_or_init(|| crate::quotes::ValueIndex::new(series))
                .chapter(&chapter.slug)
        },
    );
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
    let read = templates.may_read("index.html", "content");
    let chapters: Vec<ChapterView<'_>> = series
        .chapters
        .iter()
        .map(|c| ChapterView::new(c, &site.base_path, &series.taxonomy).with_content(read))
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
            format!(
                "{}{}{}",
                crate::messages::get("not_found_page"),
                crate::messages::get("title_separator"),
                site.title
            ),
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
    let summaries =
        template == "atom.xml" && series.config.feed.content == crate::config::FeedContent::Summary;
    let read = templates.may_read(template, "content") && !summaries;
    let mut chapters: Vec<ChapterView<'_>> = series
        .chapters
        .iter()
        .filter(|c| with_appendices || !c.is_appendix())
        .map(|c| {
            ChapterView::with_base_url(c, &site.base_path, &site.base_url, &series.taxonomy)
                .with_content(read)
        })
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

#[cfg(test)]
mod reads_tests {
    use super::*;

    fn templates(pairs: &[(&str, &str)]) -> Templates {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(n, t)| (n.to_string(), t.to_string()))
            .collect();
        let mut tera = Tera::default();
        tera.add_raw_templates(pairs.clone()).unwrap();
        Templates {
            tera: std::sync::OnceLock::from(Ok(std::sync::Arc::new(tera))),
            pairs: pairs.clone(),
            fingerprint: String::new(),
            reach: template_reach(&pairs),
            store: cache::Blobs::off(),
            kept: cache::Blobs::off(),
        }
    }

    /// A field is read where the template or anything it extends, includes or imports names
    /// it, and may be read wherever a computed subscript, `json_encode` or the whole context
    /// appear; a longer field of the same prefix is not it.
    #[test]
    fn a_template_reads_what_it_or_its_parents_name() {
        let t = templates(&[
            ("base.html", "{% block body %}{% endblock body %}"),
            (
                "index.html",
                r#"{% extends "base.html" %}{% block body %}{{ c.title }}{% endblock body %}"#,
            ),
            (
                "list.html",
                r#"{% extends "base.html" %}{% block body %}{{ c.contents }}{% endblock body %}"#,
            ),
            ("parent.html", r#"{% include "part.html" %}"#),
            ("part.html", r#"{{ c["content"] }}"#),
            ("child.html", r#"{% extends "parent.html" %}"#),
            ("computed.html", "{% for k in keys %}{{ c[k] }}{% endfor %}"),
            ("literal.html", "{{ c[0] }} <p>[x]</p>"),
            ("dump.html", "{{ c | json_encode }}"),
        ]);
        assert!(!t.may_read("index.html", "content"));
        assert!(t.may_read("index.html", "title"));
        assert!(!t.may_read("list.html", "content"));
        assert!(t.may_read("child.html", "content"));
        assert!(t.may_read("computed.html", "content"));
        assert!(!t.may_read("literal.html", "content"));
        assert!(t.may_read("dump.html", "content"));
        assert!(t.may_read("unknown.html", "content"));
    }

    /// The series' own templates: the chapter page, the print page and the feed read the
    /// bodies; the index, the sitemap and the tag pages do not.
    #[test]
    fn the_built_in_index_sitemap_and_tag_pages_do_not_read_bodies() {
        let dir = tempfile::tempdir().unwrap();
        let t = Templates::load(dir.path(), cache::Blobs::off()).unwrap();
        for page in ["chapter.html", "print.html", "atom.xml"] {
            assert!(t.may_read(page, "content"), "{page}");
        }
        for page in ["index.html", "sitemap.xml", "taxonomy.html"] {
            assert!(!t.may_read(page, "content"), "{page}");
        }
    }
}
