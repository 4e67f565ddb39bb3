//! The print page: the whole series on one page, for printing and saving as PDF (mdBook's
//! `print.html`), on unless `site.toml` says `[print] enabled = false`.
//!
//! The chapters' bodies are the ones their own pages show (math, charts and figure numbers
//! included), placed in series order; one pass over each body's tags then makes them live
//! together on one page:
//!
//! - every `id` is prefixed with the chapter's slug (`scores` -> `bahdanau--scores`), so the
//!   headings, figures and equations of two chapters never share an id;
//! - every link into a chapter of the series becomes an anchor on this page: `#scores` in a
//!   chapter, a chapter page `/base/luong/` (`@ch:`, a link to `03-luong.md`) and a place on it
//!   `/base/luong/#fig-weights` (`@fig:`, `@eq:`, `@tab:`) alike;
//! - a relative link or image is resolved against the chapter page it was written for;
//! - folded code and `<details>` answers are open.
//!
//! Rewriting the rendered HTML, rather than rendering each chapter a second time with prefixed
//! ids, also reaches the ids and links of raw HTML that an author wrote into a chapter.

use std::collections::HashSet;
use std::sync::LazyLock;

use rayon::prelude::*;
use regex::{Captures, Regex};
use serde::Serialize;

use crate::content::Series;
use crate::diagnostic::Diagnostic;
use crate::render::Page;

use super::cache::Output;
use super::{MetaView, PageContext, SiteView, Templates, cache};

/// Where the print page is written, relative to the output directory: beside `index.html`
/// rather than in a directory of its own, so no chapter slug can collide with it.
pub const PATH: &str = "print.html";

/// Separates a chapter's slug from an id of its body: slugs are made of words joined by
/// single hyphens, so the prefixed ids of two chapters cannot meet.
const SEPARATOR: &str = "--";

/// One chapter on the print page.
#[derive(Serialize)]
struct PrintChapter<'a> {
    /// The chapter's own anchor (its slug), the target of links to its page.
    id: &'a str,
    number: u32,
    /// An unnumbered appendix page (the glossary): labelled `附录`, not `第 0 篇`.
    appendix: bool,
    title: &'a str,
    summary: Option<&'a str>,
    content: String,
}

/// A chapter of the print page as its key sees it: what its scoped body is made from.
#[derive(Serialize)]
struct PrintKey<'a> {
    id: &'a str,
    number: u32,
    appendix: bool,
    title: &'a str,
    summary: Option<&'a str>,
    /// The digest of the chapter page's body.
    body: &'a str,
}

/// Renders the print page; `intro_html` is the rendered `intro` of site.toml.
///
/// The page is assembled from parts: each chapter's scoped body (the regular-expression pass
/// over every tag of the body) is kept in the page store under a key of the body's digest and
/// everything the scope reads, so an edit of one chapter scopes only that one; the template is
/// rendered with a stand-in for each body, and the bodies take their places as the page is
/// written, read from the store only if the page must be written at all. The 9 MB of bodies
/// thus never pass through Tera's context, its renderer or the sanitize pass again (they are
/// sanitized once, when scoped). A template that does more with a body than print it whole
/// (`{{ chapter.content | safe }}`) gets the bodies themselves, the same bytes either way.
pub fn page(
    templates: &Templates,
    series: &Series<Page>,
    intro_html: &str,
) -> Result<super::cache::Output, Diagnostic> {
    let base_path = SiteView::new(&series.config).base_path;
    let mut all_slugs: Vec<&str> = series.chapters.iter().map(|c| c.slug.as_str()).collect();
    all_slugs.sort_unstable();
    let slugs: HashSet<&str> = all_slugs.iter().copied().collect();
    let store = templates.store();
    // Scoped and sanitized as the whole page would be (character by character, so the joined
    // page is the same).
    let scope = |c: &Page| {
        let scoped = scoped_html(
            &without_previews(&c.html),
            &Scope {
                slug: &c.slug,
                base_path: &base_path,
                chapters: &slugs,
            },
        );
        match crate::text::sanitize(&scoped) {
            std::borrow::Cow::Borrowed(_) => scoped.into_bytes(),
            std::borrow::Cow::Owned(clean) => clean.into_bytes(),
        }
    };
    let parts: Vec<Output> = series
        .chapters
        .par_iter()
        .map(|c| {
            let key = cache::Key::new("print body")
                .bytes(cache::binary_identity().as_bytes())
                .bytes(c.digest.as_bytes())
                .bytes(c.slug.as_bytes())
                .bytes(base_path.as_bytes())
                .json(&all_slugs)
                .finish();
            store
                .output_or_make(&key, || Ok::<_, std::convert::Infallible>(scope(c)))
                .unwrap_or_else(|never| match never {})
        })
        .collect();
    // A stored body that cannot be read back (removed during the build) is scoped again.
    let bodies = |parts: Vec<Output>| -> Vec<String> {
        parts
            .into_iter()
            .zip(&series.chapters)
            .map(|(part, c)| {
                let bytes = part.into_bytes().unwrap_or_else(|_| scope(c));
                String::from_utf8(bytes)
                    .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
            })
            .collect()
    };
    if templates.passes_through(PATH, "content") {
        // Stand-ins no source can hold: they name the parts' keys, which hash the bodies.
        let nonce = parts
            .iter()
            .fold(cache::Key::new("print stand-ins"), |mut key, part| {
                key.bytes(part.key().unwrap_or_default().as_bytes());
                key
            })
            .finish();
        let stand_ins: Vec<String> = (0..parts.len())
            .map(|i| format!("<!--attnbook-part-{}-{i}-->", &nonce[..16]))
            .collect();
        let shell = render(templates, series, intro_html, "shell", |i| {
            stand_ins[i].clone()
        })?;
        match assembled(shell, &stand_ins, parts) {
            Ok(page) => return Ok(page),
            Err(parts) => {
                let bodies = bodies(parts);
                return render(templates, series, intro_html, "whole", |i| {
                    bodies[i].clone()
                });
            }
        }
    }
    // The page rendered with the bodies themselves in the template's context.
    let bodies = bodies(parts);
    render(templates, series, intro_html, "whole", |i| {
        bodies[i].clone()
    })
}

/// `shell` with each stand-in replaced by its part; the parts back when a stand-in is not
/// there exactly once, in order (the template left a body out, printed it twice or changed it).
fn assembled(
    shell: Output,
    stand_ins: &[String],
    parts: Vec<Output>,
) -> Result<Output, Vec<Output>> {
    let Ok(shell) = shell.into_bytes() else {
        return Err(parts);
    };
    let mut cuts = Vec::with_capacity(stand_ins.len());
    let mut from = 0;
    for stand_in in stand_ins {
        let needle = stand_in.as_bytes();
        let found = memchr::memmem::find_iter(&shell, needle).collect::<Vec<_>>();
        match found[..] {
            [at] if at >= from => {
                cuts.push(at);
                from = at + needle.len();
            }
            _ => return Err(parts),
        }
    }
    let mut joined = Vec::with_capacity(parts.len() * 2 + 1);
    let mut kept = 0;
    for ((at, stand_in), part) in cuts.into_iter().zip(stand_ins).zip(parts) {
        joined.push(Output::from(shell[kept..at].to_vec()));
        joined.push(part);
        kept = at + stand_in.len();
    }
    joined.push(Output::from(shell[kept..].to_vec()));
    Ok(Output::joined(joined))
}

/// The print page through its template, each chapter's `content` made by `content`;
/// `kind` tells the two renderings apart in the store.
fn render(
    templates: &Templates,
    series: &Series<Page>,
    intro_html: &str,
    kind: &str,
    content: impl Fn(usize) -> String + Sync,
) -> Result<Output, Diagnostic> {
    let site = SiteView::new(&series.config);
    let keys: Vec<PrintKey<'_>> = series
        .chapters
        .iter()
        .map(|c| PrintKey {
            id: &c.slug,
            number: c.front.number,
            appendix: c.is_appendix(),
            title: &c.front.title,
            summary: c.front.summary.as_deref(),
            body: &c.digest,
        })
        .collect();
    let slugs: HashSet<&str> = series.chapters.iter().map(|c| c.slug.as_str()).collect();
    let mut context = PageContext::new();
    context.kind(kind);
    context.insert_with(
        "chapters",
        &(&keys, &site.base_path),
        move || -> Vec<PrintChapter<'_>> {
            series
                .chapters
                .iter()
                .enumerate()
                .map(|(i, c)| PrintChapter {
                    id: &c.slug,
                    number: c.front.number,
                    appendix: c.is_appendix(),
                    title: &c.front.title,
                    summary: c.front.summary.as_deref(),
                    content: content(i),
                })
                .collect()
        },
    );
    context.insert(
        "meta",
        MetaView::website(
            &site,
            format!(
                "{}{}{}",
                crate::messages::get("nav_print"),
                crate::messages::get("title_separator"),
                site.title
            ),
            format!("{}{PATH}", site.base_url),
        ),
    );
    // The intro's links to chapter pages become anchors here too; its ids get the empty
    // slug's prefix (`--id`), which no chapter's can have.
    let intro_scope = Scope {
        slug: "",
        base_path: &site.base_path,
        chapters: &slugs,
    };
    context.insert("intro_html", scoped_html(intro_html, &intro_scope));
    context.insert("site", site);
    templates.render(PATH, context)
}

/// A chapter body without its previews of other pages' targets (`template.preview`): on the
/// print page every target is on the page itself.
fn without_previews(html: &str) -> std::borrow::Cow<'_, str> {
    static PREVIEW: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"(?s)<template class="preview" data-href="[^"]*">.*?</template>\n?"#)
            .expect("a valid regex")
    });
    PREVIEW.replace_all(html, "")
}

/// What a chapter body's ids and links are rewritten against.
pub struct Scope<'a> {
    /// The chapter's slug, the prefix of its ids.
    pub slug: &'a str,
    /// The site's base path (`/repo/`), under which chapter pages live.
    pub base_path: &'a str,
    /// Every chapter's slug: links to these pages become anchors on the print page.
    pub chapters: &'a HashSet<&'a str>,
}

/// A chapter body with its ids prefixed, its links pointing into the print page and its
/// `<details>` open (see the module documentation).
pub fn scoped_html(html: &str, scope: &Scope<'_>) -> String {
    // Most tags (the highlighted code's `<span class>`, KaTeX's) have no attribute this pass
    // changes: they are found with the regex's fast search and kept as they are, and only a
    // tag that names one of those attributes (or is `<details>`) is taken apart into its
    // captures, which costs the regex far more (the captures of every tag were 80 % of
    // scoping an edited chapter).
    let mut out = String::with_capacity(html.len() + html.len() / 16);
    let mut kept = 0;
    for found in TAG.find_iter(html) {
        let text = found.as_str();
        if text.starts_with("<!--") || !MAY_CHANGE.is_match(text) {
            continue;
        }
        let Some(tag) = TAG.captures_at(html, found.start()) else {
            continue;
        };
        out.push_str(&html[kept..found.start()]);
        out.push_str(&scoped_tag(&tag, scope));
        kept = found.end();
    }
    out.push_str(&html[kept..]);
    out
}

/// A tag, a comment is matched first so that a tag inside it is left alone. Attribute values
/// may hold `>`; text cannot hold `<`, which every writer of a body escapes.
static TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?s)<!--.*?-->|<([A-Za-z][A-Za-z0-9:-]*)((?:\s+[^\s"'>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)*)(\s*/?>)"#,
    )
    .expect("a valid regex")
});

/// What a tag that [`scoped_tag`] changes must hold (ASCII case ignored): one of the attributes
/// [`scoped_attributes`] rewrites, where [`ATTRIBUTE`] would find it (after white space, before
/// `=`), or the name `details`. A tag without any is left as it is. Text that only looks like
/// one (`title="a id=b"`) has the tag taken apart and kept, so no tag that changes is missed,
/// and KaTeX's `aria-hidden` and the charts' `stroke-width` are passed over.
static MAY_CHANGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)^<details[\s/>]|\s(?:id|name|href|xlink:href|src|for|headers|aria-(?:labelledby|describedby|controls|owns|details|flowto|activedescendant))\s*="#,
    )
    .expect("a valid regex")
});

/// One tag of [`scoped_html`], scoped.
fn scoped_tag(tag: &Captures<'_>, scope: &Scope<'_>) -> String {
    let (Some(name), Some(attrs), Some(end)) = (tag.get(1), tag.get(2), tag.get(3)) else {
        return tag[0].to_string();
    };
    let mut attrs = scoped_attributes(attrs.as_str(), scope);
    if name.as_str().eq_ignore_ascii_case("details") && !has_attribute(&attrs, "open") {
        attrs.push_str(" open");
    }
    format!("<{}{attrs}{}", name.as_str(), end.as_str())
}

/// Attribute name, the `=` and the value in one of its three spellings.
static ATTRIBUTE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(\s+)([^\s"'>/=]+)(\s*=\s*)(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+))"#)
        .expect("a valid regex")
});

fn has_attribute(attrs: &str, name: &str) -> bool {
    attrs.split_whitespace().any(|a| {
        a.split('=')
            .next()
            .is_some_and(|n| n.eq_ignore_ascii_case(name))
    })
}

fn scoped_attributes(attrs: &str, scope: &Scope<'_>) -> String {
    ATTRIBUTE
        .replace_all(attrs, |a: &Captures<'_>| {
            let (space, name, equals) = (&a[1], &a[2], &a[3]);
            let (value, quote) = match (a.get(4), a.get(5), a.get(6)) {
                (Some(v), _, _) => (v.as_str(), "\""),
                (_, Some(v), _) => (v.as_str(), "'"),
                (_, _, Some(v)) => (v.as_str(), ""),
                _ => return a[0].to_string(),
            };
            let value = match name.to_ascii_lowercase().as_str() {
                "id" | "name" => prefixed(scope.slug, value),
                "href" | "xlink:href" | "src" => scoped_url(value, scope),
                // Attributes that name other elements by id, space-separated.
                "for"
                | "headers"
                | "aria-labelledby"
                | "aria-describedby"
                | "aria-controls"
                | "aria-owns"
                | "aria-details"
                | "aria-flowto"
                | "aria-activedescendant" => value
                    .split_whitespace()
                    .map(|id| prefixed(scope.slug, id))
                    .collect::<Vec<_>>()
                    .join(" "),
                _ => return a[0].to_string(),
            };
            format!("{space}{name}{equals}{quote}{value}{quote}")
        })
        .into_owned()
}

fn prefixed(slug: &str, id: &str) -> String {
    format!("{slug}{SEPARATOR}{id}")
}

/// Where a link of a chapter body points on the print page.
fn scoped_url(url: &str, scope: &Scope<'_>) -> String {
    if let Some(fragment) = url.strip_prefix('#') {
        return in_chapter(scope.slug, fragment);
    }
    let external = url.contains("://")
        || url.starts_with("//")
        || ["mailto:", "data:", "tel:", "javascript:"]
            .iter()
            .any(|scheme| url.starts_with(scheme));
    if external {
        return url.to_string();
    }
    let absolute = if url.starts_with('/') {
        url.to_string()
    } else {
        resolve(&format!("{}{}/", scope.base_path, scope.slug), url)
    };
    let (path, fragment) = absolute
        .split_once('#')
        .map_or((absolute.as_str(), None), |(p, f)| (p, Some(f)));
    let chapter = path
        .strip_prefix(scope.base_path)
        .map(|rest| rest.strip_suffix("index.html").unwrap_or(rest))
        .and_then(|rest| rest.strip_suffix('/'))
        .filter(|slug| scope.chapters.contains(slug));
    match chapter {
        Some(slug) => in_chapter(slug, fragment.unwrap_or("")),
        None => absolute,
    }
}

/// The print page's anchor of `fragment` in chapter `slug`: the chapter itself when empty.
fn in_chapter(slug: &str, fragment: &str) -> String {
    if fragment.is_empty() {
        format!("#{slug}")
    } else {
        format!("#{}", prefixed(slug, fragment))
    }
}

/// `relative` resolved against the directory URL path `base` (ending in `/`), with `.` and `..`
/// segments collapsed as a browser does.
fn resolve(base: &str, relative: &str) -> String {
    let (path, rest) = match relative.find(['?', '#']) {
        Some(at) => relative.split_at(at),
        None => (relative, ""),
    };
    let mut segments: Vec<&str> = base.trim_end_matches('/').split('/').collect();
    let parts: Vec<&str> = path.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        match *part {
            "." => {}
            ".." => {
                if segments.len() > 1 {
                    segments.pop();
                }
            }
            _ if part.is_empty() && i + 1 < parts.len() => {}
            _ => segments.push(part),
        }
    }
    let mut out = segments.join("/");
    if matches!(parts.last(), Some(&"." | &"..")) {
        out.push('/');
    }
    format!("{out}{rest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scoped(html: &str) -> String {
        let chapters: HashSet<&str> = ["bahdanau", "luong"].into_iter().collect();
        scoped_html(
            html,
            &Scope {
                slug: "bahdanau",
                base_path: "/series/",
                chapters: &chapters,
            },
        )
    }

    /// The pass as it was before it skipped tags: every tag through its captures.
    fn scoped_through_every_capture(html: &str, scope: &Scope<'_>) -> String {
        TAG.replace_all(html, |tag: &Captures<'_>| {
            if tag.get(1).is_none() {
                return tag[0].to_string();
            }
            scoped_tag(tag, scope)
        })
        .into_owned()
    }

    /// Skipping the tags without an attribute to rewrite changes nothing: upper-case names,
    /// unquoted and single-quoted values, `/` in unquoted values, comments holding tags,
    /// `<details>` in any case, attributes whose values merely mention `id`.
    #[test]
    fn skipping_tags_with_nothing_to_scope_changes_nothing() {
        let chapters: HashSet<&str> = ["bahdanau", "luong"].into_iter().collect();
        let scope = Scope {
            slug: "bahdanau",
            base_path: "/series/",
            chapters: &chapters,
        };
        let html = concat!(
            "<p class=\"x\"><span class=\"hl-ident\">a</span><SPAN CLASS=hl>b</SPAN></p>",
            "<!-- <a href=\"#x\"> --><A HREF=\"#Up\">c</A><a href=../luong/ >d</a>",
            "<img SRC='/series/luong/f.svg' alt=\"id\"><br/><br />",
            "<DETAILS><summary>s</summary></DETAILS><details open><summary id=s>t</summary></details>",
            "<td headers=\"a b\" data-for=x>1</td><div aria-labelledby='h1 h2' role=note>",
            "<input Id=q NAME=q disabled><label For=q>q</label>",
            "<svg><use xlink:href=\"#m\"/></svg><a href=\"https://e.org/#x\">e</a>",
            // What the prefilter passes over, and spellings it must still catch.
            "<span class=\"katex-html\" aria-hidden=\"true\"><line stroke-width=\"2\"/></span>",
            "<p data-id=\"x\" width=3 hidden valid>v</p><p title=\"a id=b\">w</p>",
            "<h2\n  id = \"spaced\">x</h2><a\thref\t=\t'#tab'>y</a><DETAILS\n>z</DETAILS>",
            "<details/><th ARIA-DESCRIBEDBY=\"d\">h</th><p aria-controls=m aria-owns='n o'>q</p>"
        );
        assert_eq!(
            scoped_html(html, &scope),
            scoped_through_every_capture(html, &scope)
        );
        for chapter in ["bottleneck", "luong", "kv-cache"] {
            let Ok(source) = std::fs::read_to_string(format!("public/{chapter}/index.html")) else {
                continue;
            };
            assert_eq!(
                scoped_html(&source, &scope),
                scoped_through_every_capture(&source, &scope),
                "{chapter}"
            );
        }
    }

    #[test]
    fn ids_take_the_chapter_prefix_and_anchors_follow_them() {
        assert_eq!(
            scoped(
                "<h2 id=\"scores\"><a class=\"anchor\" href=\"#scores\" aria-hidden=\"true\">#</a>打分</h2>"
            ),
            "<h2 id=\"bahdanau--scores\"><a class=\"anchor\" href=\"#bahdanau--scores\" aria-hidden=\"true\">#</a>打分</h2>"
        );
        assert_eq!(
            scoped("<label for='x'>a</label><input id=x aria-describedby=\"x y\">"),
            "<label for='bahdanau--x'>a</label><input id=bahdanau--x aria-describedby=\"bahdanau--x bahdanau--y\">"
        );
    }

    #[test]
    fn links_to_chapters_of_the_series_become_anchors_on_the_page() {
        let cases = [
            ("/series/luong/", "#luong"),
            ("/series/luong/#fig-weights", "#luong--fig-weights"),
            ("/series/luong/index.html#eq-score", "#luong--eq-score"),
            ("/series/bahdanau/#eq-score", "#bahdanau--eq-score"),
            ("../luong/#method", "#luong--method"),
            ("#", "#bahdanau"),
            ("/series/tags/", "/series/tags/"),
            ("/series/no-such/", "/series/no-such/"),
            ("https://example.org/luong/", "https://example.org/luong/"),
            ("mailto:a@b.c", "mailto:a@b.c"),
            ("img/heat.png", "/series/bahdanau/img/heat.png"),
            ("../img/heat.png?x#y", "/series/img/heat.png?x#y"),
        ];
        for (from, to) in cases {
            assert_eq!(
                scoped(&format!("<a href=\"{from}\">x</a>")),
                format!("<a href=\"{to}\">x</a>"),
                "{from}"
            );
        }
    }

    #[test]
    fn details_open_and_text_and_comments_stay_as_written() {
        assert_eq!(
            scoped("<details class=\"fold\"><summary>代码</summary></details>"),
            "<details class=\"fold\" open><summary>代码</summary></details>"
        );
        assert_eq!(
            scoped("<details open=\"\"><summary>答案</summary></details>"),
            "<details open=\"\"><summary>答案</summary></details>"
        );
        let text = "<pre><code>id=\"x\" &lt;a href=\"#y\"&gt;</code></pre><!-- <a id=\"z\"> -->";
        assert_eq!(scoped(text), text);
        let title = "<span title=\"a > b\" id=\"q\">x</span>";
        assert_eq!(
            scoped(title),
            "<span title=\"a > b\" id=\"bahdanau--q\">x</span>"
        );
    }
}
