//! Stage 1: load the series.
//!
//! Finds `content/*.md` with walkdir, splits off and checks each chapter's TOML front matter
//! (DESIGN §3.1), and orders the series by `number`. Parsing is pure ([`Chapter::parse`] takes
//! a string); only [`load`] touches the file system.

mod front_matter;
pub mod glossary;
pub mod slug;
pub mod taxonomy;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use walkdir::WalkDir;

use crate::config::Config;
use crate::diagnostic::{Diagnostic, Diagnostics, Location};
pub use front_matter::FrontMatter;
pub use glossary::Glossary;
pub use taxonomy::Taxonomy;

/// One chapter as loading knows it: its file, source text and front matter. Each later stage
/// wraps it in a type of its own (`markdown::Parsed`, `lab::Ran`, `quotes::Bound`,
/// `render::Page`), so this stage knows nothing of what they add.
#[derive(Debug, Clone)]
pub struct Chapter {
    /// Path relative to the site root, as shown in diagnostics (`content/01-why.md`).
    pub path: PathBuf,
    /// The file stem without its `NN-` prefix; the chapter's URL and value namespace.
    pub slug: String,
    /// The whole file.
    pub source: String,
    /// Parsed front matter.
    pub front: FrontMatter,
    /// Byte offset where the Markdown body starts (after the closing `+++`).
    pub body_offset: usize,
    /// Where each line of `source` starts, so a location costs a binary search, not a pass over
    /// the file (a chapter reports hundreds: every quote, claim and code line links its line).
    line_starts: Vec<usize>,
}

impl Chapter {
    /// Parses a chapter from its text; `path` is relative to the site root.
    pub fn parse(path: &Path, source: String) -> Result<Chapter, Vec<Diagnostic>> {
        let slug = slug_of(path);
        // The file name and the front matter are both checked, so every problem is listed.
        let bad_slug = slug::problem(&slug).map(|why| bad_slug(path, &source, &slug, &why));
        let (front, body_offset) = match front_matter::parse(path, &source) {
            Ok(parsed) => parsed,
            Err(mut problems) => {
                problems.extend(bad_slug);
                return Err(problems);
            }
        };
        if let Some(d) = bad_slug {
            return Err(vec![d]);
        }
        Ok(Chapter {
            path: path.to_path_buf(),
            slug,
            line_starts: crate::diagnostic::line_starts(&source),
            source,
            front,
            body_offset,
        })
    }

    /// A chapter made of parts already checked (a page that is not a file of `content/`,
    /// such as the site's intro).
    pub fn new(
        path: PathBuf,
        slug: String,
        source: String,
        front: FrontMatter,
        body_offset: usize,
    ) -> Chapter {
        Chapter {
            path,
            slug,
            line_starts: crate::diagnostic::line_starts(&source),
            source,
            front,
            body_offset,
        }
    }

    /// An unnumbered appendix page, listed after the chapters (front matter `appendix = true`,
    /// or a file under `content/appendix/`).
    pub fn is_appendix(&self) -> bool {
        self.front.appendix
    }

    /// The Markdown body.
    pub fn body(&self) -> &str {
        &self.source[self.body_offset..]
    }

    /// The seed for the chapter's RNG: front matter `seed`, else derived from the slug.
    pub fn seed(&self) -> u64 {
        self.front.seed.unwrap_or_else(|| derive_seed(&self.slug))
    }

    /// A location in this chapter's file.
    pub fn location(&self, span: std::ops::Range<usize>) -> Location {
        Location::in_lines(&self.path, &self.source, &self.line_starts, span)
    }

    /// The chapter's path and text hashed into `key`, after whatever it already holds: all a
    /// chapter loaded from them is (its slug, front matter and lines derive from the two).
    pub fn key_with(&self, mut key: blake3::Hasher) -> String {
        key.update(self.path.as_os_str().as_encoded_bytes())
            .update(&[0])
            .update(self.source.as_bytes());
        key.finalize().to_hex().to_string()
    }
}

/// `content/07-multi-head.md` -> `multi-head`.
pub fn slug_of(path: &Path) -> String {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    match stem.split_once('-') {
        Some((digits, rest)) if !rest.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) => {
            rest.to_string()
        }
        _ => stem.to_string(),
    }
}

/// The error for a file whose name gives a slug the rule refuses, at the top of the file.
fn bad_slug(path: &Path, source: &str, slug: &str, why: &str) -> Diagnostic {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    Diagnostic::error(format!(
        "the file name `{name}` gives the chapter the slug {slug:?}, which cannot be used: {why}"
    ))
    .at(Location::in_source(path, source, 0..0))
    .with_note("the slug is what follows `NN-` in the file name: the chapter's URL and directory")
    .with_help(format!("rename the file; {}", slug::RULE))
}

fn derive_seed(slug: &str) -> u64 {
    let hash = blake3::hash(slug.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&hash.as_bytes()[..8]);
    u64::from_le_bytes(bytes) % 1_000_000_000
}

impl AsRef<Chapter> for Chapter {
    fn as_ref(&self) -> &Chapter {
        self
    }
}

/// The site: configuration plus the chapters in series order. `C` is the chapter as the
/// latest stage has it: a loaded [`Chapter`] here, wrapped by each later stage in its own type
/// (every one of them `AsRef<Chapter>`), so the site moves through the pipeline with
/// [`Series::map_chapters`] while its configuration, taxonomy and glossary stay put.
#[derive(Debug, Clone)]
pub struct Series<C = Chapter> {
    /// The site root directory.
    pub root: PathBuf,
    /// `site.toml`.
    pub config: Config,
    /// Chapters ordered by `number`, then the appendix pages by file name (drafts only when
    /// asked for).
    pub chapters: Vec<C>,
    /// Their tags and categories, each with a unique slug.
    pub taxonomy: Taxonomy,
    /// `content/glossary.toml`, if the site has one.
    pub glossary: Option<Glossary>,
}

impl<C> Series<C> {
    /// The same site with every chapter carried on by the next stage: `f` gets all the
    /// chapters in series order (to work on them in parallel if it likes) and must return one
    /// chapter for each, in the same order.
    pub fn map_chapters<D>(self, f: impl FnOnce(Vec<C>) -> Vec<D>) -> Series<D> {
        let count = self.chapters.len();
        let chapters = f(self.chapters);
        assert_eq!(chapters.len(), count, "a stage must keep every chapter");
        Series {
            root: self.root,
            config: self.config,
            chapters,
            taxonomy: self.taxonomy,
            glossary: self.glossary,
        }
    }
}

impl<C: AsRef<Chapter>> Series<C> {
    /// Finds a chapter by slug.
    pub fn chapter(&self, slug: &str) -> Option<&C> {
        self.chapters.iter().find(|c| c.as_ref().slug == slug)
    }

    /// Problems in the sources that do not stop the build: a tag spelt two ways, characters XML
    /// and HTML forbid in site.toml values, front matter values and chapter bodies (the output
    /// replaces them). These warnings point the author at each one and fail `--strict` builds.
    pub fn warnings(&self) -> Vec<Diagnostic> {
        let mut all = self.config.warnings.clone();
        all.extend(self.taxonomy.warnings.iter().cloned());
        all.extend(
            self.glossary
                .iter()
                .flat_map(|g| g.warnings.iter().cloned()),
        );
        for chapter in self.chapters.iter().map(AsRef::as_ref) {
            all.extend(chapter.front.warnings.iter().cloned());
            let body = chapter.body_offset..chapter.source.len();
            all.extend(crate::text::check_source(
                &chapter.path,
                &chapter.source,
                body,
            ));
        }
        all
    }

    /// The text of every chapter as loaded, for printing diagnostics after the series is gone.
    pub fn sources(&self) -> Sources {
        Sources {
            root: self.root.clone(),
            chapters: self
                .chapters
                .iter()
                .map(|c| (c.as_ref().path.clone(), c.as_ref().source.clone()))
                .collect(),
        }
    }
}

/// The source text of a site's files as the command read them, for diagnostics: a chapter as
/// it was loaded (even if it changed since), any other file from the disk.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    root: PathBuf,
    chapters: BTreeMap<PathBuf, String>,
}

impl Sources {
    /// Source text of a file of the site.
    pub fn source_of(&self, path: &Path) -> Option<String> {
        if let Some(source) = self.chapters.get(path) {
            return Some(source.clone());
        }
        std::fs::read_to_string(self.root.join(path)).ok()
    }
}

/// Reads `site.toml`; a missing file is a diagnostic, a broken one every problem in it.
pub fn load_config(root: &Path) -> Result<Config, Vec<Diagnostic>> {
    let path = Path::new("site.toml");
    let text = std::fs::read_to_string(root.join(path)).map_err(|e| {
        vec![
            Diagnostic::error(format!("cannot read {}: {e}", root.join(path).display())).with_help(
                "run attnbook in a site directory (one with site.toml and content/) or pass --root DIR",
            ),
        ]
    })?;
    let mut config = Config::parse(path, &text)?;
    let problems = config.lab.check_inputs(root, path, &text);
    if problems.is_empty() {
        crate::messages::install(config.catalogue());
        Ok(config)
    } else {
        Err(problems)
    }
}

/// Loads the whole series: config, every chapter, ordering and uniqueness checks.
pub fn load(root: &Path, include_drafts: bool) -> Result<Series, Diagnostics> {
    let mut diagnostics = Diagnostics::default();
    let config = load_config(root).map_err(|problems| {
        diagnostics.extend(problems);
        std::mem::take(&mut diagnostics)
    });
    let chapters = load_chapters(root, &mut diagnostics);
    let glossary = glossary::load(root).unwrap_or_else(|problems| {
        diagnostics.extend(problems);
        None
    });
    let config = match config {
        Ok(c) => c,
        Err(mut d) => {
            d.extend(diagnostics.into_vec());
            return Err(d);
        }
    };
    check_unique(&chapters, &mut diagnostics);
    check_static_names(root, &chapters, &mut diagnostics);
    if diagnostics.has_errors() {
        return Err(diagnostics);
    }
    let mut chapters: Vec<Chapter> = chapters
        .into_iter()
        .filter(|c| include_drafts || !c.front.draft)
        .collect();
    // Walk order is file name order, so a stable sort keeps the appendices in it.
    chapters.sort_by_key(|c| (c.is_appendix(), c.front.number));
    Ok(Series {
        root: root.to_path_buf(),
        config,
        taxonomy: Taxonomy::of(&chapters),
        chapters,
        glossary,
    })
}

fn load_chapters(root: &Path, diagnostics: &mut Diagnostics) -> Vec<Chapter> {
    let content = root.join("content");
    if !content.is_dir() {
        diagnostics.push(
            Diagnostic::error(format!("no content directory at {}", content.display())).with_help(
                "create content/ with one Markdown file per chapter, or run `attnbook new SLUG`",
            ),
        );
        return Vec::new();
    }
    let mut chapters = Vec::new();
    for path in markdown_files(&content, diagnostics) {
        let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        match read_utf8(&path, &rel) {
            Ok(text) => match Chapter::parse(&rel, text) {
                Ok(chapter) => chapters.push(chapter),
                Err(errors) => diagnostics.extend(errors),
            },
            Err(d) => diagnostics.push(d),
        }
    }
    chapters
}

fn markdown_files(content: &Path, diagnostics: &mut Diagnostics) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let root = std::fs::canonicalize(content.parent().unwrap_or(content)).unwrap_or_default();
    for entry in WalkDir::new(content).sort_by_file_name() {
        match entry {
            Ok(e) if e.path().extension().is_some_and(|x| x == "md") && e.path_is_symlink() => {
                // A link is followed only inside the site: a site builds from its own files.
                match std::fs::canonicalize(e.path()) {
                    Ok(target) if target.starts_with(&root) && target.is_file() => {
                        files.push(e.into_path())
                    }
                    Ok(target) => diagnostics.push(
                        Diagnostic::error(format!(
                            "{} is a symbolic link to {}, outside the site",
                            e.path().strip_prefix(&root).unwrap_or(e.path()).display(),
                            target.display()
                        ))
                        .with_help("copy the chapter into content/ instead of linking to it"),
                    ),
                    Err(err) => diagnostics.push(Diagnostic::error(format!(
                        "{} is a broken symbolic link: {err}",
                        e.path().display()
                    ))),
                }
            }
            // Editor leftovers (`.#x.md` locks, `x.md~` backups, dot files) are not chapters.
            Ok(e) if e.file_name().to_string_lossy().starts_with('.') => {}
            Ok(e) if e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "md") => {
                files.push(e.into_path());
            }
            Ok(_) => {}
            Err(e) => diagnostics.push(Diagnostic::error(format!("cannot walk content/: {e}"))),
        }
    }
    files
}

fn read_utf8(path: &Path, rel: &Path) -> Result<String, Diagnostic> {
    let bytes = std::fs::read(path)
        .map_err(|e| Diagnostic::error(format!("cannot read {}: {e}", rel.display())))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let valid = std::str::from_utf8(&e.as_bytes()[..at]).unwrap_or_default();
        Diagnostic::error("file is not valid UTF-8")
            .at(Location::in_source(rel, valid, at..at))
            .with_note(format!("the first invalid byte is at byte offset {at}"))
            .with_help("save the file as UTF-8")
    })
}

fn check_unique(chapters: &[Chapter], diagnostics: &mut Diagnostics) {
    let mut numbers: BTreeMap<u32, &Chapter> = BTreeMap::new();
    let mut slugs: BTreeMap<&str, &Chapter> = BTreeMap::new();
    for chapter in chapters {
        // Appendix pages have no number, but they share the URL space: slugs are checked.
        if !chapter.is_appendix()
            && let Some(first) = numbers.insert(chapter.front.number, chapter)
        {
            diagnostics.push(duplicate(
                chapter,
                "number",
                &chapter.front.number.to_string(),
                first,
            ));
        }
        if let Some(first) = slugs.insert(&chapter.slug, chapter) {
            diagnostics.push(duplicate(chapter, "slug", &chapter.slug, first));
        }
    }
}

/// A chapter whose slug is also a top-level name of the site's `static/` would have its page
/// replaced (or mixed with) the static files copied over it.
fn check_static_names(root: &Path, chapters: &[Chapter], diagnostics: &mut Diagnostics) {
    let Ok(entries) = std::fs::read_dir(root.join("static")) else {
        return;
    };
    let names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for chapter in chapters {
        if names.contains(&chapter.slug) {
            diagnostics.push(
                Diagnostic::error(format!(
                    "the chapter's slug `{}` is also `static/{}`, which is copied to the same place",
                    chapter.slug, chapter.slug
                ))
                .at(chapter.location(0..0))
                .with_help("rename the chapter file or the static directory"),
            );
        }
    }
}

fn duplicate(chapter: &Chapter, what: &str, value: &str, first: &Chapter) -> Diagnostic {
    let span = if what == "number" {
        chapter.front.number_span.clone()
    } else {
        0..0
    };
    Diagnostic::error(format!("duplicate chapter {what} `{value}`"))
        .at(chapter.location(span))
        .with_note(format!("{} already uses it", first.path.display()))
        .with_help(format!("give each chapter a unique {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_drops_the_number_prefix() {
        assert_eq!(slug_of(Path::new("content/07-multi-head.md")), "multi-head");
        assert_eq!(slug_of(Path::new("content/intro.md")), "intro");
        assert_eq!(slug_of(Path::new("content/2024-x.md")), "x");
    }

    #[test]
    fn derived_seed_is_stable_and_differs_by_slug() {
        assert_eq!(derive_seed("why"), derive_seed("why"));
        assert_ne!(derive_seed("why"), derive_seed("luong"));
    }
}
