//! Internal links: `[..](02-bahdanau.md#scores)` (a chapter file, as mdBook writes them) becomes
//! the chapter's URL; `#anchor` stays on the page. Both are checked: a link to a chapter or an
//! anchor that does not exist is an error, like Zola's broken-link check.

use std::collections::BTreeMap;
use std::path::Path;

use crate::content::{Series, slug_of};
use crate::diagnostic::{Diagnostic, closest, did_you_mean};
use crate::render::chapter_url;

/// What a link points at, if it is internal.
#[derive(Debug, PartialEq, Eq)]
pub enum Target<'a> {
    /// Another chapter (by slug), maybe an anchor in it.
    Chapter(String, Option<&'a str>),
    /// An anchor on this page.
    Anchor(&'a str),
    /// Anything else (external URL, static file): left as written.
    Other,
}

/// Classifies a destination.
pub fn target(dest: &str) -> Target<'_> {
    if let Some(anchor) = dest.strip_prefix('#') {
        return Target::Anchor(anchor);
    }
    if dest.contains("://") || dest.starts_with("mailto:") || dest.starts_with('/') {
        return Target::Other;
    }
    let (path, anchor) = dest
        .split_once('#')
        .map_or((dest, None), |(p, a)| (p, Some(a)));
    if path.ends_with(".md") {
        Target::Chapter(slug_of(Path::new(path)), anchor)
    } else {
        Target::Other
    }
}

/// Rewrites a destination for the page: chapter files become chapter URLs, and a root-relative
/// path (`/`, `/tags/`) gets the base path, since the site's root is the base path, not the
/// host's (a protocol-relative `//host/..` is another host and stays).
pub fn rewrite(dest: &str, base_path: &str) -> Option<String> {
    match target(dest) {
        Target::Chapter(slug, anchor) => {
            let url = chapter_url(base_path, &slug);
            Some(anchor.map_or(url.clone(), |a| format!("{url}#{a}")))
        }
        Target::Other if dest.starts_with('/') && !dest.starts_with("//") => {
            Some(format!("{base_path}{}", &dest[1..]))
        }
        _ => None,
    }
}

/// Images are files of the site's `static/` directory, written relative to it
/// (`![注意力](img/heatmap.png)`); the page gets the URL under the base path.
pub fn image_url(dest: &str, base_path: &str) -> Option<String> {
    let external = dest.contains("://") || dest.starts_with("data:") || dest.starts_with('/');
    (!external).then(|| format!("{base_path}{}", dest.trim_start_matches("./")))
}

/// Checks an image path: inside `static/` (no `..` out of it, no absolute path, no symlink
/// leading outside the site) and present.
fn check_image(root: &std::path::Path, dest: &str) -> Option<(String, String)> {
    if dest.contains("://") || dest.starts_with("data:") {
        return None;
    }
    if dest.starts_with('/') {
        return Some((
            format!("image `{dest}` is an absolute path"),
            "write the path relative to static/, e.g. `img/figure.png`; the page gets the base path".into(),
        ));
    }
    let statics = root.join("static");
    let path = statics.join(dest);
    let inside =
        |p: &std::path::Path| std::fs::canonicalize(&statics).is_ok_and(|s| p.starts_with(s));
    match std::fs::canonicalize(&path) {
        Ok(real) if inside(&real) => None,
        Ok(real) => Some((
            format!(
                "image `{dest}` resolves to {}, outside the site's static/ directory",
                real.display()
            ),
            "keep images inside static/ (no `..`, no links leading out of the site)".into(),
        )),
        Err(_) if dest.split('/').any(|part| part == "..") => Some((
            format!("image `{dest}` points outside the site's static/ directory"),
            "keep images inside static/ (no `..`, no links leading out of the site)".into(),
        )),
        Err(_) => Some((
            format!("image `{dest}` not found in static/"),
            format!("add static/{dest}"),
        )),
    }
}

/// Every anchor of every chapter: headings, figures, tables, experiment blocks.
fn anchors(series: &Series) -> BTreeMap<&str, Vec<String>> {
    let mut all = BTreeMap::new();
    for chapter in &series.chapters {
        let mut ids: Vec<String> = chapter.doc.headings.iter().map(|h| h.id.clone()).collect();
        ids.extend((1..=chapter.doc.experiments.len()).map(|n| format!("experiment-{n}")));
        ids.extend(
            chapter
                .doc
                .equation_labels()
                .iter()
                .map(|l| format!("eq-{l}")),
        );
        if !chapter.doc.citations.is_empty() {
            ids.push("bibliography".into());
            ids.extend(
                chapter
                    .doc
                    .citations
                    .iter()
                    .flat_map(|c| &c.keys)
                    .map(|k| format!("ref-{k}")),
            );
        }
        if let Some(run) = &chapter.run {
            ids.extend(
                run.results
                    .figures
                    .iter()
                    .map(|f| format!("fig-{}", f.name)),
            );
            ids.extend(run.results.tables.iter().map(|t| format!("tab-{}", t.name)));
        }
        all.insert(chapter.slug.as_str(), ids);
    }
    all
}

/// Checks every internal link of the series.
pub fn check(series: &Series) -> Vec<Diagnostic> {
    let anchors = anchors(series);
    let mut problems = Vec::new();
    for chapter in &series.chapters {
        for link in &chapter.doc.links {
            if link.image {
                if let Some((message, help)) = check_image(&series.root, &link.dest) {
                    problems.push(
                        Diagnostic::error(message)
                            .at(chapter.location(link.span.clone()))
                            .with_help(help),
                    );
                }
                continue;
            }
            let (slug, anchor) = match target(&link.dest) {
                Target::Chapter(slug, anchor) => (slug, anchor),
                Target::Anchor(anchor) => (chapter.slug.clone(), Some(anchor)),
                Target::Other => continue,
            };
            let at = chapter.location(link.span.clone());
            // Figures and tables of a chapter whose experiments never ran are unknown, not missing.
            let target_ran = series
                .chapters
                .iter()
                .find(|c| c.slug == slug)
                .is_none_or(|c| c.run.is_some() || c.doc.experiments.is_empty());
            if !target_ran && anchor.is_some_and(|a| a.starts_with("fig-") || a.starts_with("tab-"))
            {
                continue;
            }
            let Some(ids) = anchors.get(slug.as_str()) else {
                let hint = did_you_mean(&closest(&slug, anchors.keys().copied()));
                let d = Diagnostic::error(format!(
                    "broken link: no chapter `{slug}` (from `{}`)",
                    link.dest
                ))
                .at(at);
                problems.push(d.with_help(
                    hint.unwrap_or_else(|| "link to a chapter file like `02-bahdanau.md`".into()),
                ));
                continue;
            };
            if let Some(anchor) = anchor.filter(|a| !a.is_empty() && !ids.iter().any(|id| id == a))
            {
                let hint = did_you_mean(&closest(anchor, ids.iter().map(String::as_str)));
                let d = Diagnostic::error(format!(
                    "broken link: no anchor `#{anchor}` in chapter `{slug}`"
                ))
                .at(at);
                problems.push(d.with_help(hint.unwrap_or_else(|| {
                    "anchors are heading ids, `fig-NAME`, `tab-NAME` and `experiment-N`".into()
                })));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_destinations() {
        assert_eq!(
            target("02-bahdanau.md#scores"),
            Target::Chapter("bahdanau".into(), Some("scores"))
        );
        assert_eq!(target("#top"), Target::Anchor("top"));
        assert_eq!(target("https://arxiv.org/abs/1409.0473"), Target::Other);
        assert_eq!(target("/katex/katex.min.css"), Target::Other);
    }

    #[test]
    fn rewrites_chapter_files_to_urls() {
        assert_eq!(
            rewrite("02-bahdanau.md#s", "/series/").as_deref(),
            Some("/series/bahdanau/#s")
        );
        assert_eq!(rewrite("https://x.y", "/"), None);
    }

    #[test]
    fn root_relative_paths_get_the_base_path() {
        assert_eq!(rewrite("/", "/series/").as_deref(), Some("/series/"));
        assert_eq!(
            rewrite("/tags/a/#top", "/series/").as_deref(),
            Some("/series/tags/a/#top")
        );
        assert_eq!(rewrite("/", "/").as_deref(), Some("/"));
        assert_eq!(rewrite("//example.org/x", "/series/"), None);
    }
}
