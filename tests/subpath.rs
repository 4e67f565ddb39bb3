//! The built site served under a sub-path (as GitHub Pages serves a project site) on 127.0.0.1:
//! every link, stylesheet, script, image, font and feed URL on every page must resolve, the
//! absolute ones (canonical links, feed, sitemap, robots.txt) included, and every `#fragment`
//! must name an `id` on the page it points to.

mod common;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use common::Site;
use regex::Regex;

const PREFIX: &str = "/series/";
/// The origin of the fixture's `base_url` (and of `--base-url` below): absolute URLs on it are
/// the site's own and are followed like the relative ones.
const ORIGIN: &str = "https://example.github.io";

static URL_ATTR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?:href|src)="([^"]+)""#).unwrap());
static CSS_URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"url\(["']?([^"')]+)["']?\)"#).unwrap());
/// URLs in the feed (`href="..."`), the sitemap (`<loc>`) and robots.txt (`Sitemap:`).
static XML_URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:href="([^"]+)"|<loc>([^<]+)</loc>|Sitemap: (\S+))"#).unwrap()
});
static ID: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#"\sid="([^"]+)""#).unwrap());

/// Serves `root` under PREFIX on an ephemeral port, from a background thread.
fn serve(root: PathBuf) -> u16 {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let port = server.server_addr().to_ip().unwrap().port();
    std::thread::spawn(move || {
        for request in server.incoming_requests() {
            let path = request
                .url()
                .split(['?', '#'])
                .next()
                .unwrap_or("/")
                .to_string();
            let file = path.strip_prefix(PREFIX).map(|rel| {
                let rel = if rel.is_empty() || rel.ends_with('/') {
                    format!("{rel}index.html")
                } else {
                    rel.to_string()
                };
                root.join(rel)
            });
            let response =
                match file.filter(|f| f.is_file() && !f.to_string_lossy().contains("..")) {
                    Some(f) => tiny_http::Response::from_data(std::fs::read(f).unwrap())
                        .with_status_code(200),
                    None => tiny_http::Response::from_data(Vec::new()).with_status_code(404),
                };
            let _ = request.respond(response);
        }
    });
    port
}

fn get(port: u16, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).unwrap();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// Resolves a reference found on `page` to an absolute path on this server and the fragment
/// it names, if it is internal: relative, root-relative, or absolute on [`ORIGIN`].
fn resolve(page: &str, reference: &str) -> Option<(String, Option<String>)> {
    let (reference, fragment) = match reference.split_once('#') {
        Some((r, f)) => (r, Some(f.to_string()).filter(|f| !f.is_empty())),
        None => (reference, None),
    };
    let reference = reference.strip_prefix(ORIGIN).unwrap_or(reference);
    if reference.contains("://")
        || reference.starts_with("data:")
        || reference.starts_with("mailto:")
    {
        return None;
    }
    if reference.is_empty() {
        return fragment.map(|f| (page.to_string(), Some(f)));
    }
    if reference.starts_with('/') {
        return Some((reference.to_string(), fragment));
    }
    let dir = &page[..page.rfind('/')? + 1];
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in reference.split('/') {
        match part {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            p => parts.push(p),
        }
    }
    let trailing = if reference.ends_with('/') { "/" } else { "" };
    Some((format!("/{}{trailing}", parts.join("/")), fragment))
}

/// The references a fetched `url` holds, by the kind of file it is.
fn references(url: &str, body: &str) -> Vec<String> {
    let pattern: &Regex = if url.ends_with(".css") {
        &CSS_URL
    } else if url.ends_with(".xml") || url.ends_with(".txt") {
        &XML_URL
    } else if url.ends_with('/') || url.ends_with(".html") {
        &URL_ATTR
    } else {
        return Vec::new();
    };
    pattern
        .captures_iter(body)
        .filter_map(|caps| {
            caps.iter()
                .skip(1)
                .flatten()
                .next()
                .map(|m| m.as_str().replace("&amp;", "&"))
        })
        .collect()
}

/// Visits every URL reachable from the home page, the 404 page and robots.txt; returns how many
/// were visited and what is broken: missing files, links outside the base path, and fragments
/// no `id` of their page carries.
fn crawl(port: u16) -> (usize, Vec<String>) {
    let mut pages: BTreeMap<String, String> = BTreeMap::new();
    let mut queue = VecDeque::from([
        PREFIX.to_string(),
        format!("{PREFIX}404.html"),
        format!("{PREFIX}robots.txt"),
    ]);
    let mut fragments = Vec::new();
    let mut broken = Vec::new();
    while let Some(url) = queue.pop_front() {
        if pages.contains_key(&url) {
            continue;
        }
        // `book.pdf` (`[print] pdf = true`) is printed from print.html by scripts/pdf.mjs after
        // the build, as the Pages workflow does; the browser tests check it.
        if url == format!("{PREFIX}book.pdf") {
            pages.insert(url, String::new());
            continue;
        }
        let (status, body) = get(port, &url);
        if status != 200 {
            broken.push(format!("{url} -> {status}"));
            pages.insert(url, String::new());
            continue;
        }
        for reference in references(&url, &body) {
            let Some((next, fragment)) = resolve(&url, &reference) else {
                continue;
            };
            if !next.starts_with(PREFIX) {
                broken.push(format!("{url} links outside the base path: {next}"));
                continue;
            }
            if let Some(fragment) = fragment {
                fragments.push((url.clone(), next.clone(), fragment));
            }
            queue.push_back(next);
        }
        pages.insert(url, body);
    }
    // Each page's ids, gathered once: the print page alone is megabytes, and tens of thousands
    // of fragments point into the pages.
    let mut ids: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, page, fragment) in &fragments {
        let ids = ids.entry(page.as_str()).or_insert_with(|| {
            ID.captures_iter(&pages[page])
                .map(|c| c.get(1).map_or("", |m| m.as_str()))
                .collect()
        });
        if !ids.contains(fragment.as_str()) {
            broken.push(format!(
                "{from} links to {page}#{fragment}, which has no such id"
            ));
        }
    }
    assert!(!fragments.is_empty(), "no fragment was followed");
    for reached in ["atom.xml", "sitemap.xml"] {
        let url = format!("{PREFIX}{reached}");
        assert!(pages.contains_key(&url), "the crawl never reached {url}");
    }
    (pages.len(), broken)
}

fn assert_no_broken_links(site_root: &Path) {
    let port = serve(site_root.join("public"));
    let (visited, broken) = crawl(port);
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(visited > 20, "only {visited} URLs visited");
}

#[test]
fn the_fixture_site_served_under_a_sub_path_has_no_broken_link_or_asset() {
    let site = Site::fixture("basic");
    assert_eq!(site.run(&["build"]).code, 0);
    assert_no_broken_links(site.root());
}

#[test]
fn the_series_served_under_a_sub_path_has_no_broken_link_or_asset() {
    let out = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_attnbook"))
        .arg("--root")
        .arg(root)
        .args([
            "build",
            "--base-url",
            "https://example.github.io/series/",
            "--out",
        ])
        .arg(out.path().join("public"))
        .status()
        .unwrap();
    assert!(status.success());
    assert_no_broken_links(out.path());
}

#[test]
fn resolving_relative_references() {
    let path = |p: &str| Some((p.to_string(), None));
    assert_eq!(
        resolve("/series/a/", "../katex/x.css"),
        path("/series/katex/x.css")
    );
    assert_eq!(
        resolve("/series/katex/katex.min.css", "fonts/A.woff2"),
        path("/series/katex/fonts/A.woff2")
    );
    assert_eq!(resolve("/series/a/", "https://x.y/"), None);
    assert_eq!(
        resolve("/series/a/", "https://example.github.io/series/b/"),
        path("/series/b/")
    );
    assert_eq!(
        resolve("/series/a/", "#top"),
        Some(("/series/a/".to_string(), Some("top".to_string())))
    );
    assert_eq!(
        resolve("/series/a/", "../b/#x"),
        Some(("/series/b/".to_string(), Some("x".to_string())))
    );
    assert_eq!(resolve("/series/a/", "#"), None);
}
