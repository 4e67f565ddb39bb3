//! Stage 6: every output file of the site, then the atomic swap into the output directory.

use include_dir::{Dir, include_dir};

use std::path::{Path, PathBuf};

use crate::content::Series;
use crate::diagnostic::Diagnostic;
use crate::quotes;
use crate::render;

use crate::markdown;
use crate::render::{html, math::MathRenderer};

/// Default static assets (CSS, JS, KaTeX CSS and fonts), embedded so any site looks right.
static DEFAULT_STATIC: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/static");

/// Every output file as `(relative path, bytes)`.
type Files = Vec<(PathBuf, Vec<u8>)>;

pub(super) fn render_site(series: &Series) -> Result<Files, Vec<Diagnostic>> {
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
    match render::taxonomy::pages(&tera, series) {
        Ok(pages) => files.extend(pages),
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
pub(super) fn write_site(out: &Path, files: Files) -> Result<usize, Vec<Diagnostic>> {
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
