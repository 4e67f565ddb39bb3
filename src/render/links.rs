//! Internal links: `[..](02-bahdanau.md#scores)` (a chapter file, as mdBook writes them) becomes
//! the chapter's URL; `#anchor` stays on the page. Both are checked: a link to a chapter or an
//! anchor that does not exist is an error, like Zola's broken-link check.

use std::collections::BTreeMap;
use std::path::Path;

use crate::content::{Glossary, Series, slug_of};
use crate::diagnostic::{Diagnostic, closest, did_you_mean};
use crate::lab::Ran;
use crate::markdown::Piece;
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

/// The id of the element holding Markdown line `line` of an experiment block's code.
pub fn line_id(line: usize) -> String {
    format!("L{line}")
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
fn anchors<C: AsRef<Ran>>(series: &Series<C>) -> BTreeMap<&str, Vec<String>> {
    series
        .chapters
        .iter()
        .map(AsRef::<Ran>::as_ref)
        .map(|chapter| {
            (
                chapter.slug.as_str(),
                ids(chapter, series.glossary.as_ref()),
            )
        })
        .collect()
}

/// The anchors of one page: headings, figures, tables, experiment blocks, and the glossary's
/// rows (`term-ENGLISH`) where the page places them.
fn ids(chapter: &Ran, glossary: Option<&Glossary>) -> Vec<String> {
    let mut ids: Vec<String> = chapter.doc.headings.iter().map(|h| h.id.clone()).collect();
    let places_glossary = chapter
        .doc
        .pieces
        .iter()
        .any(|p| matches!(p, Piece::Glossary { .. }));
    if let Some(glossary) = glossary.filter(|_| places_glossary) {
        ids.extend(glossary.terms.iter().map(|t| t.id()));
    }
    ids.extend((1..=chapter.doc.experiments.len()).map(|n| format!("experiment-{n}")));
    // Every code line of a block has the id of its Markdown line, as quotes link to it.
    ids.extend(
        chapter
            .doc
            .experiments
            .iter()
            .flat_map(|e| e.displayed_lines())
            .map(|l| line_id(l.line)),
    );
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
    ids
}

/// Checks every internal link of the series.
pub fn check<C: AsRef<Ran>>(series: &Series<C>) -> Vec<Diagnostic> {
    let anchors = anchors(series);
    series
        .chapters
        .iter()
        .flat_map(|chapter| check_page(series, &anchors, chapter.as_ref()))
        .collect()
}

/// Checks the links of a text that is not one of the series' chapters but lives on a page of
/// its own (the index page's intro, whose anchors are its own headings).
pub fn check_extra<C: AsRef<Ran>>(series: &Series<C>, page: &Ran) -> Vec<Diagnostic> {
    let mut anchors = anchors(series);
    anchors.insert(page.slug.as_str(), ids(page, series.glossary.as_ref()));
    check_page(series, &anchors, page)
}

/// Checks the links of one page.
fn check_page<C: AsRef<Ran>>(
    series: &Series<C>,
    anchors: &BTreeMap<&str, Vec<String>>,
    chapter: &Ran,
) -> Vec<Diagnostic> {
    let mut problems = Vec::new();
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
            .map(AsRef::<Ran>::as_ref)
            .find(|c| c.slug == slug)
            .is_none_or(|c| c.run.is_some() || c.doc.experiments.is_empty());
        if !target_ran && anchor.is_some_and(|a| a.starts_with("fig-") || a.starts_with("tab-")) {
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
        if let Some(anchor) = anchor.filter(|a| !a.is_empty() && !ids.iter().any(|id| id == a)) {
            let hint = did_you_mean(&closest(anchor, ids.iter().map(String::as_str)));
            // The intro's page has no slug: it is the index page.
            let page = if slug.is_empty() {
                "on the index page".to_string()
            } else {
                format!("in chapter `{slug}`")
            };
            let d = Diagnostic::error(format!("broken link: no anchor `#{anchor}` {page}")).at(at);
            problems.push(d.with_help(hint.unwrap_or_else(|| {
                "anchors are heading ids, `fig-NAME`, `tab-NAME`, `experiment-N` and code lines `LN`"
                    .into()
            })));
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

    /// A series of `(file name, body)` chapters, parsed as a build parses them; `ran` lists
    /// the slugs whose experiments ran, each with a figure `curve` and a table `t`.
    fn series(chapters: &[(&str, &str)], ran: &[&str], root: &Path) -> Series<Ran> {
        let chapters = chapters
            .iter()
            .enumerate()
            .map(|(i, (file, body))| {
                let text = format!("+++\ntitle = \"T\"\nnumber = {}\n+++\n{body}", i + 1);
                let path = Path::new("content").join(file);
                let chapter = crate::content::Chapter::parse(&path, text).unwrap();
                let parsed = crate::markdown::Parsed::new(chapter).0;
                let run = ran
                    .contains(&parsed.slug.as_str())
                    .then(ran_with_figure_and_table);
                Ran { parsed, run }
            })
            .collect::<Vec<_>>();
        let loaded: Vec<_> = chapters.iter().map(|c| c.parsed.chapter.clone()).collect();
        Series {
            root: root.to_path_buf(),
            config: crate::config::Config::parse(
                Path::new("site.toml"),
                "title = \"T\"\nbase_url = \"/\"\n",
            )
            .unwrap(),
            taxonomy: crate::content::Taxonomy::of(&loaded),
            chapters,
            glossary: None,
        }
    }

    fn ran_with_figure_and_table() -> crate::lab::ChapterRun {
        let mut run = crate::lab::ChapterRun::default();
        run.results.figures.push(lab_protocol::Figure {
            name: "curve".into(),
            block: 0,
            caption: "c".into(),
            svg: "<svg/>".into(),
            not_finite: 0,
        });
        run.results.tables.push(lab_protocol::Table {
            name: "t".into(),
            block: 0,
            headers: vec!["h".into()],
            rows: vec![],
            caption: None,
        });
        run
    }

    /// `line:col message (help)` for each problem, in order.
    fn problems(series: &Series<Ran>) -> Vec<String> {
        check(series)
            .iter()
            .map(|d| {
                let at = d.location.as_ref().unwrap();
                let help = d.help.as_deref().unwrap_or("");
                format!("{}:{} {} ({help})", at.line, at.col, d.message)
            })
            .collect()
    }

    const WITH_BLOCK: &str = "## 方法 {#method}\n\n```rust,experiment\nlet x = 1;\n```\n";

    #[test]
    fn links_to_chapters_headings_blocks_figures_and_tables_check_out() {
        let dir = tempfile::tempdir().unwrap();
        let body = "[a](02-b.md) [b](02-b.md#method) [c](02-b.md#experiment-1) \
                    [d](02-b.md#fig-curve) [e](02-b.md#tab-t) [f](#top) [g](https://x.y/#nope) \
                    [h](/tags/) [i](02-b.md#)\n\n## 顶 {#top}\n";
        let good = series(
            &[("01-a.md", body), ("02-b.md", WITH_BLOCK)],
            &["b"],
            dir.path(),
        );
        assert_eq!(problems(&good), Vec::<String>::new());
    }

    #[test]
    fn broken_chapters_and_anchors_are_errors_at_the_link_with_a_hint() {
        let dir = tempfile::tempdir().unwrap();
        let body =
            "[x](02-c.md) [y](02-b.md#methdo) [z](#nowhere-at-all) [w](02-b.md#experiment-2)\n";
        let bad = series(
            &[("01-a.md", body), ("02-b.md", WITH_BLOCK)],
            &["b"],
            dir.path(),
        );
        assert_eq!(
            problems(&bad),
            [
                "5:1 broken link: no chapter `c` (from `02-c.md`) \
                 (link to a chapter file like `02-bahdanau.md`)",
                "5:14 broken link: no anchor `#methdo` in chapter `b` (did you mean `method`?)",
                "5:34 broken link: no anchor `#nowhere-at-all` in chapter `a` \
                 (anchors are heading ids, `fig-NAME`, `tab-NAME`, `experiment-N` and code lines `LN`)",
                "5:55 broken link: no anchor `#experiment-2` in chapter `b` (did you mean `experiment-1`?)",
            ]
        );
    }

    /// Every line of a block's code carries the id of its Markdown line (`L6`), hidden `# `
    /// lines included; lines outside blocks and the block's trailing blank lines do not.
    #[test]
    fn links_to_code_lines_check_out_and_others_do_not() {
        let dir = tempfile::tempdir().unwrap();
        // The block is lines 5-10 of the file: fence, three lines of code, a blank line, fence.
        let block = "```rust,experiment\nlet x = 1;\n# let y = 2;\nlet z = 3;\n\n```\n";
        let body = "[a](02-b.md#L6) [b](02-b.md#L7) [c](02-b.md#L8) [d](#L9) [e](02-b.md#L4)\n\n\
                    ```rust,experiment\nlet w = 0;\n```\n";
        let site = series(&[("01-a.md", body), ("02-b.md", block)], &[], dir.path());
        assert_eq!(
            problems(&site),
            [
                "5:49 broken link: no anchor `#L9` in chapter `a` (anchors are heading ids, \
                 `fig-NAME`, `tab-NAME`, `experiment-N` and code lines `LN`)",
                "5:58 broken link: no anchor `#L4` in chapter `b` (anchors are heading ids, \
                 `fig-NAME`, `tab-NAME`, `experiment-N` and code lines `LN`)",
            ]
        );
    }

    /// `#bibliography` exists on a page only when the page cites something.
    #[test]
    fn the_bibliography_anchor_needs_a_citation() {
        let dir = tempfile::tempdir().unwrap();
        let site = series(&[("01-a.md", "[r](#bibliography)\n")], &[], dir.path());
        assert_eq!(
            problems(&site),
            ["5:1 broken link: no anchor `#bibliography` in chapter `a` \
              (anchors are heading ids, `fig-NAME`, `tab-NAME`, `experiment-N` and code lines `LN`)"]
        );
    }

    #[test]
    fn a_misspelt_chapter_gets_the_closest_slug() {
        let dir = tempfile::tempdir().unwrap();
        let site = series(
            &[("01-a.md", "[x](02-btea.md)\n"), ("02-beta.md", "")],
            &[],
            dir.path(),
        );
        assert_eq!(
            problems(&site),
            ["5:1 broken link: no chapter `btea` (from `02-btea.md`) (did you mean `beta`?)"]
        );
    }

    #[test]
    fn figures_and_tables_of_a_chapter_that_never_ran_are_unknown_not_missing() {
        let dir = tempfile::tempdir().unwrap();
        let body = "[d](02-b.md#fig-curve) [e](02-b.md#tab-t) [f](02-b.md#fig-other)\n";
        let never_ran = series(
            &[("01-a.md", body), ("02-b.md", WITH_BLOCK)],
            &[],
            dir.path(),
        );
        assert_eq!(problems(&never_ran), Vec::<String>::new());
        let ran = series(
            &[("01-a.md", body), ("02-b.md", WITH_BLOCK)],
            &["b"],
            dir.path(),
        );
        assert_eq!(
            problems(&ran),
            ["5:43 broken link: no anchor `#fig-other` in chapter `b` (did you mean `fig-curve`?)"]
        );
        // A chapter without experiments has no figures to wait for.
        let plain = series(&[("01-a.md", body), ("02-b.md", "text\n")], &[], dir.path());
        assert_eq!(problems(&plain).len(), 3);
    }

    #[test]
    fn images_must_be_files_inside_static() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("static/img")).unwrap();
        std::fs::write(dir.path().join("static/img/ok.png"), "png").unwrap();
        std::fs::write(dir.path().join("site.toml"), "").unwrap();
        let body = "![a](img/ok.png) ![b](./img/ok.png) ![c](https://x.y/c.png) ![d](data:image/png;base64,AA)\n\n\
                    ![e](/etc/passwd) ![f](../site.toml) ![g](img/missing.png) ![h](../../nowhere.png)\n";
        let site = series(&[("01-a.md", body)], &[], dir.path());
        let found = problems(&site);
        assert_eq!(found.len(), 4, "{found:#?}");
        assert!(
            found[0].starts_with("7:1 image `/etc/passwd` is an absolute path"),
            "{found:#?}"
        );
        assert!(
            found[1].starts_with("7:19 image `../site.toml` resolves to "),
            "{found:#?}"
        );
        assert!(
            found[1].contains("outside the site's static/ directory"),
            "{found:#?}"
        );
        assert_eq!(
            found[2],
            "7:38 image `img/missing.png` not found in static/ (add static/img/missing.png)"
        );
        assert!(
            found[3]
                .starts_with("7:60 image `../../nowhere.png` points outside the site's static/"),
            "{found:#?}"
        );
    }

    #[test]
    fn image_urls_go_under_the_base_path_unless_external() {
        assert_eq!(
            image_url("img/a.png", "/s/").as_deref(),
            Some("/s/img/a.png")
        );
        assert_eq!(
            image_url("./img/a.png", "/s/").as_deref(),
            Some("/s/img/a.png")
        );
        for external in ["https://x.y/a.png", "data:image/png;base64,AA", "/abs.png"] {
            assert_eq!(image_url(external, "/s/"), None, "{external}");
        }
    }

    #[test]
    fn mailto_and_other_files_are_not_checked() {
        assert_eq!(target("mailto:a@b.c"), Target::Other);
        // Each of these alone makes a link external, even one ending in `.md`.
        for external in ["https://x.y/02-b.md", "mailto:02-b.md", "/notes/02-b.md"] {
            assert_eq!(target(external), Target::Other, "{external}");
        }
        assert_eq!(target("notes.txt"), Target::Other);
        assert_eq!(target("02-b.md"), Target::Chapter("b".into(), None));
        assert_eq!(rewrite("02-b.md", "/s/").as_deref(), Some("/s/b/"));
        assert_eq!(rewrite("#top", "/s/"), None);
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
