//! Citations and reference lists, formatted by hayagriva (a CSL processor) from the site's
//! bibliography: `content/references.bib` (BibTeX/BibLaTeX) or `content/references.yaml`
//! (hayagriva YAML). Each chapter gets a reference list of the works it cites.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use hayagriva::archive::ArchivedStyle;
use hayagriva::citationberg::{IndependentStyle, Locale, Style};
use hayagriva::{
    BibliographyDriver, BibliographyRequest, BufWriteFormat, CitationItem, CitationRequest, Library,
};

use serde::{Deserialize, Serialize};

use super::cache::{self, Cache};
use crate::content::Series;
use crate::diagnostic::{Diagnostic, Location, closest, did_you_mean};
use crate::markdown::Parsed;
use crate::render::html::escape;

/// The site's bibliography.
pub struct Bibliography {
    path: PathBuf,
    library: Library,
    /// Content hash of the file, for the cache.
    digest: String,
}

/// Rendered citations kept across builds (`.attnbook/cache/render/citations.json`), per chapter, keyed
/// by the bibliography, the style and the chapter's citations: a build whose citations did not
/// change needs neither the style nor hayagriva's locales (~60 ms to decode).
pub type CitationCache = Cache<ChapterCitations>;

/// Changes whenever the markup below changes shape.
const CACHE_SALT: &str = concat!("attnbook ", env!("CARGO_PKG_VERSION"), "; citations 2");

/// A chapter's citations, rendered.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ChapterCitations {
    /// HTML of each citation, in `doc.citations` order.
    pub inline: Vec<String>,
    /// The reference list (empty when the chapter cites nothing).
    pub list_html: String,
}

/// Every CSL locale of the archive, decoded once per process (`serve` rebuilds).
static LOCALES: LazyLock<Vec<Locale>> = LazyLock::new(hayagriva::archive::locales);

const CANDIDATES: [&str; 3] = [
    "content/references.bib",
    "content/references.yaml",
    "content/references.yml",
];

/// Loads the bibliography, if the site has one.
pub fn load(root: &Path) -> Result<Option<Bibliography>, Vec<Diagnostic>> {
    let present: Vec<&Path> = CANDIDATES
        .iter()
        .map(Path::new)
        .filter(|p| root.join(p).is_file())
        .collect();
    let Some(&rel) = present.first() else {
        return Ok(None);
    };
    // Only one is read: the keys of the other would be unknown without a word.
    if let [first, second, ..] = present[..] {
        return Err(vec![
            Diagnostic::error(format!(
                "the site has two bibliographies, {} and {}; only one is read",
                first.display(),
                second.display()
            ))
            .with_help("merge them into one file"),
        ]);
    }
    let text = std::fs::read_to_string(root.join(rel)).map_err(|e| {
        vec![Diagnostic::error(format!(
            "cannot read {}: {e}",
            rel.display()
        ))]
    })?;
    let library = if rel.extension().is_some_and(|x| x == "bib") {
        hayagriva::io::from_biblatex_str(&text).map_err(|errors| {
            errors
                .iter()
                .map(|e| biblatex_diagnostic(rel, &text, e))
                .collect::<Vec<_>>()
        })?
    } else {
        hayagriva::io::from_yaml_str(&text).map_err(|e| {
            // serde_yaml's message ends with its own `at line L column C`: the place goes
            // where every diagnostic has it instead.
            let message = e.to_string();
            let message = message.rsplit_once(" at line ").map_or(message.as_str(), |(m, _)| m);
            let at = e.location().map_or(0, |l| l.index());
            vec![
                Diagnostic::error(format!("bibliography: {message}"))
                    .at(Location::in_source(rel, &text, at..at))
                    .with_help("fix the YAML; hayagriva's format is documented at github.com/typst/hayagriva/blob/main/docs/file-format.md"),
            ]
        })?
    };
    Ok(Some(Bibliography {
        path: rel.to_path_buf(),
        library,
        digest: cache::key(&[text.as_bytes()]),
    }))
}

fn biblatex_diagnostic(
    path: &Path,
    text: &str,
    error: &hayagriva::io::BibLaTeXError,
) -> Diagnostic {
    let span = match error {
        hayagriva::io::BibLaTeXError::Parse(e) => e.span.clone(),
        hayagriva::io::BibLaTeXError::Type(e) => e.span.clone(),
    };
    Diagnostic::error(format!("bibliography: {error}")).at(Location::in_source(path, text, span))
}

/// The decoded style, if it is an independent one (a dependent style cannot format alone).
fn independent(archived: ArchivedStyle) -> Option<IndependentStyle> {
    match archived.get() {
        Style::Independent(style) => Some(style),
        Style::Dependent(_) => None,
    }
}

fn unknown_style(name: &str) -> Diagnostic {
    Diagnostic::error(format!("unknown citation style `{name}`"))
        .at(Location::at_line(Path::new("site.toml"), 1, 1))
        .with_help("use a style name from hayagriva's archive, e.g. `chicago-author-date`, `ieee` or `apa`")
}

/// Renders every chapter's citations and reference list; unknown keys are diagnostics.
pub fn render(
    series: &Series<Parsed>,
    bibliography: Option<&Bibliography>,
    cache: &mut CitationCache,
) -> (Vec<ChapterCitations>, Vec<Diagnostic>) {
    let mut problems = Vec::new();
    let cited = series.chapters.iter().any(|c| !c.doc.citations.is_empty());
    let (Some(bib), true) = (bibliography, cited) else {
        for chapter in &series.chapters {
            for c in &chapter.doc.citations {
                problems.push(no_bibliography(chapter, c));
            }
        }
        return (
            vec![ChapterCitations::default(); series.chapters.len()],
            problems,
        );
    };
    let name = &series.config.citation_style;
    let Some(archived) = ArchivedStyle::by_name(name) else {
        return (
            vec![ChapterCitations::default(); series.chapters.len()],
            vec![unknown_style(name)],
        );
    };
    // Decoded only if some chapter's citations are not cached.
    let style = std::cell::OnceCell::new();
    let mut all = Vec::new();
    // The reference list's heading is in the site's language.
    let heading = crate::messages::get("bibliography");
    for chapter in &series.chapters {
        let mut parts: Vec<&[u8]> = vec![
            CACHE_SALT.as_bytes(),
            bib.digest.as_bytes(),
            name.as_bytes(),
            heading.as_bytes(),
        ];
        for citation in &chapter.doc.citations {
            parts.push(b"\0citation");
            parts.extend(citation.keys.iter().map(String::as_bytes));
        }
        let key = cache::key(&parts);
        if let Some(hit) = cache.get(&key) {
            all.push(hit.clone());
            continue;
        }
        let Some(style) = style.get_or_init(|| independent(archived)) else {
            problems.push(unknown_style(name));
            all.push(ChapterCitations::default());
            continue;
        };
        let (rendered, unknown) = render_chapter(bib, style, &LOCALES, chapter);
        if unknown.is_empty() {
            cache.insert(key, rendered.clone());
        }
        problems.extend(unknown);
        all.push(rendered);
    }
    (all, problems)
}

/// Renders the citations of a text that is not one of the series' chapters (the index page's
/// intro), with a reference list of its own; not cached (an intro rarely cites).
pub fn render_page(
    style_name: &str,
    bibliography: Option<&Bibliography>,
    page: &Parsed,
) -> (ChapterCitations, Vec<Diagnostic>) {
    if page.doc.citations.is_empty() {
        return (ChapterCitations::default(), Vec::new());
    }
    let Some(bib) = bibliography else {
        let problems = page
            .doc
            .citations
            .iter()
            .map(|c| no_bibliography(page, c))
            .collect();
        return (ChapterCitations::default(), problems);
    };
    let Some(style) = ArchivedStyle::by_name(style_name).and_then(independent) else {
        return (ChapterCitations::default(), vec![unknown_style(style_name)]);
    };
    render_chapter(bib, &style, &LOCALES, page)
}

fn no_bibliography(chapter: &Parsed, c: &crate::markdown::cite::Citation) -> Diagnostic {
    Diagnostic::error(format!(
        "citation of `{}` but the site has no bibliography",
        c.keys.join("; ")
    ))
    .at(chapter.location(c.span.clone()))
    .with_help("add content/references.bib (BibTeX) or content/references.yaml")
}

fn render_chapter(
    bib: &Bibliography,
    style: &IndependentStyle,
    locales: &[Locale],
    chapter: &Parsed,
) -> (ChapterCitations, Vec<Diagnostic>) {
    let mut problems = Vec::new();
    let mut driver = BibliographyDriver::new();
    for citation in &chapter.doc.citations {
        let mut items = Vec::new();
        for key in &citation.keys {
            match bib.library.get(key) {
                Some(entry) => items.push(CitationItem::with_entry(entry)),
                None => problems.push(unknown_key(
                    bib,
                    chapter.location(citation.span.clone()),
                    key,
                )),
            }
        }
        driver.citation(CitationRequest::from_items(items, style, locales));
    }
    if chapter.doc.citations.is_empty() {
        return (ChapterCitations::default(), problems);
    }
    let result = driver.finish(BibliographyRequest {
        style,
        locale: None,
        locale_files: locales,
    });
    let inline = chapter
        .doc
        .citations
        .iter()
        .zip(&result.citations)
        .map(|(citation, rendered)| {
            let mut text = String::new();
            let _ = rendered.citation.write_buf(&mut text, BufWriteFormat::Html);
            let first = citation
                .keys
                .first()
                .map(String::as_str)
                .unwrap_or_default();
            format!(
                "<a class=\"citation\" href=\"#ref-{}\">{text}</a>",
                escape(first)
            )
        })
        .collect();
    let mut list = String::new();
    for item in result.bibliography.iter().flat_map(|b| &b.items) {
        let mut text = String::new();
        let _ = item.content.write_buf(&mut text, BufWriteFormat::Html);
        list.push_str(&format!(
            "<li id=\"ref-{}\">{text}</li>\n",
            escape(&item.key)
        ));
    }
    let heading = escape(&crate::messages::get("bibliography"));
    let list_html = format!(
        "<section class=\"bibliography\">\n<h2 id=\"bibliography\"><a class=\"anchor\" href=\"#bibliography\" aria-hidden=\"true\" tabindex=\"-1\">#</a>{heading}</h2>\n<ol class=\"references\">\n{list}</ol>\n</section>\n"
    );
    (ChapterCitations { inline, list_html }, problems)
}

fn unknown_key(bib: &Bibliography, at: Location, key: &str) -> Diagnostic {
    let keys: Vec<String> = bib.library.iter().map(|e| e.key().to_string()).collect();
    let d = Diagnostic::error(format!("unknown citation key `{key}`")).at(at);
    match did_you_mean(&closest(key, keys.iter().map(String::as_str))) {
        Some(hint) => d.with_help(hint),
        None => d.with_help(format!("add an entry `{key}` to {}", bib.path.display())),
    }
}
