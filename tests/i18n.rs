//! The interface in the site's language: `language` picks the message catalogue, `[messages]`
//! overrides single messages, and a wrong language or key is an error at its line. Each test
//! builds a small site (no experiments) with the real binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

fn attnbook(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_attnbook"))
        .arg("--root")
        .arg(root)
        .args(args)
        .output()
        .expect("run attnbook")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A site of two English chapters (tagged, so the taxonomy pages exist) with `config` after
/// the title and base URL.
fn site(config: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("site.toml"),
        format!("title = \"Book\"\nbase_url = \"/\"\n{config}"),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("content")).unwrap();
    for n in 1..=2 {
        std::fs::write(
            dir.path().join(format!("content/0{n}-c{n}.md")),
            format!(
                "+++\ntitle = \"Chapter title {n}\"\nnumber = {n}\ndate = 2026-01-0{n}\n\
                 tags = [\"softmax\"]\ncategory = \"basics\"\n+++\n\n## Section {n}\n\n\
                 Some text about attention and softmax weights.\n"
            ),
        )
        .unwrap();
    }
    dir
}

fn pages(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(pages(&path));
        } else if path.extension().is_some_and(|e| e == "html") {
            out.push(path);
        }
    }
    out
}

fn cjk(text: &str) -> String {
    text.chars()
        .filter(|c| matches!(*c as u32, 0x2E80..=0x9FFF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF))
        .collect()
}

fn build(root: &Path) {
    let run = attnbook(root, &["build", "--strict"]);
    assert!(run.status.success(), "{}", stderr(&run));
}

/// `language = "en"`: no page holds a CJK character (the content is English), and the
/// English words are there. The same site switched to `zh-CN` and rebuilt (the render caches
/// in place) speaks Chinese: the caches are keyed by the language.
#[test]
fn an_english_site_has_no_cjk_character_and_a_chinese_one_keeps_chinese() {
    let dir = site("language = \"en\"\n");
    build(dir.path());
    let public = dir.path().join("public");
    let all = pages(&public);
    assert!(all.len() >= 6, "{all:?}");
    for page in &all {
        let html = std::fs::read_to_string(page).unwrap();
        assert_eq!(cjk(&html), "", "{}", page.display());
    }
    let chapter = std::fs::read_to_string(public.join("c2/index.html")).unwrap();
    assert!(chapter.contains("Chapter 2"), "{chapter}");
    assert!(chapter.contains("<span class=\"dir\">Previous</span>"));
    assert!(chapter.contains("aria-label=\"Site navigation\""));
    assert!(chapter.contains("\"search_loading\":\"Loading the search index…\""));

    std::fs::write(
        dir.path().join("site.toml"),
        "title = \"Book\"\nbase_url = \"/\"\nlanguage = \"zh-CN\"\n",
    )
    .unwrap();
    build(dir.path());
    let chapter = std::fs::read_to_string(public.join("c2/index.html")).unwrap();
    assert!(chapter.contains("第 2 篇"), "{chapter}");
    assert!(chapter.contains("<span class=\"dir\">上一篇</span>"));
    assert!(chapter.contains("\"search_loading\":\"正在加载搜索索引…\""));
    let tags = std::fs::read_to_string(public.join("tags/index.html")).unwrap();
    assert!(tags.contains("<h1>标签与分类</h1>"), "{tags}");
}

/// A `[messages]` entry replaces that message on every page, in the templates' text and in
/// the scripts' JSON alike.
#[test]
fn a_message_override_shows_on_the_page() {
    let dir = site(
        "language = \"en\"\n\n[messages]\nprev = \"Back\"\nnav_contents = \"Index\"\n\
         js_search_none = \"No luck with {query}\"\n",
    );
    build(dir.path());
    let chapter = std::fs::read_to_string(dir.path().join("public/c2/index.html")).unwrap();
    assert!(
        chapter.contains("<span class=\"dir\">Back</span>"),
        "{chapter}"
    );
    assert!(chapter.contains(">Index</a>"));
    assert!(chapter.contains("\"search_none\":\"No luck with {query}\""));
    assert!(!chapter.contains(">Contents</a>"));
}

/// An unknown language is an error at its value in site.toml, naming the known ones.
#[test]
fn an_unknown_language_is_an_error_at_its_line() {
    let dir = site("description = \"d\"\nlanguage = \"fr\"\n");
    let run = attnbook(dir.path(), &["build"]);
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(
        err.contains("site.toml:4:1: error: unknown `language` `fr`"),
        "{err}"
    );
    assert!(err.contains("`en`, `zh-CN`"), "{err}");
}

/// Every unknown `[messages]` key is an error at its own line, with the closest known keys.
#[test]
fn an_unknown_message_key_is_an_error_at_its_line() {
    let dir = site("\n[messages]\nnav_contnts = \"X\"\nprev = \"ok\"\nzzz = \"Y\"\n");
    let run = attnbook(dir.path(), &["build"]);
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(
        err.contains("site.toml:5:1: error: unknown message key `nav_contnts`"),
        "{err}"
    );
    assert!(err.contains("did you mean `nav_contents`"), "{err}");
    assert!(
        err.contains("site.toml:7:1: error: unknown message key `zzz`"),
        "{err}"
    );
    assert!(!err.contains("`prev`"), "{err}");
}

/// Dates read as the site's language writes them, on the chapter pages and in the index's list;
/// what machines read (`<time datetime>`, the Atom feed, the sitemap) stays ISO 8601. A
/// `[messages]` override of `date` changes the form.
#[test]
fn dates_are_written_in_the_sites_language_and_stay_iso_for_machines() {
    let dir = site("language = \"en\"\n");
    build(dir.path());
    let public = dir.path().join("public");
    let chapter = std::fs::read_to_string(public.join("c2/index.html")).unwrap();
    assert!(
        chapter.contains("<time datetime=\"2026-01-02\">2 January 2026</time>"),
        "{chapter}"
    );
    let index = std::fs::read_to_string(public.join("index.html")).unwrap();
    assert!(index.contains("<time datetime=\"2026-01-01\">1 January 2026</time>"));
    assert!(index.contains("<time datetime=\"2026-01-02\">2 January 2026</time>"));
    let feed = std::fs::read_to_string(public.join("atom.xml")).unwrap();
    assert!(
        feed.contains("<updated>2026-01-02T00:00:00Z</updated>"),
        "{feed}"
    );
    assert!(!feed.contains("January"), "{feed}");
    let sitemap = std::fs::read_to_string(public.join("sitemap.xml")).unwrap();
    assert!(
        sitemap.contains("<lastmod>2026-01-02</lastmod>"),
        "{sitemap}"
    );

    std::fs::write(
        dir.path().join("site.toml"),
        "title = \"Book\"\nbase_url = \"/\"\nlanguage = \"zh-CN\"\n",
    )
    .unwrap();
    build(dir.path());
    let chapter = std::fs::read_to_string(public.join("c2/index.html")).unwrap();
    assert!(
        chapter.contains("<time datetime=\"2026-01-02\">2026 年 1 月 2 日</time>"),
        "{chapter}"
    );
    let index = std::fs::read_to_string(public.join("index.html")).unwrap();
    assert!(index.contains("<time datetime=\"2026-01-01\">2026 年 1 月 1 日</time>"));

    std::fs::write(
        dir.path().join("site.toml"),
        "title = \"Book\"\nbase_url = \"/\"\nlanguage = \"en\"\n\n[messages]\n\
         date = \"{month_name} {day}, {year}\"\nmonth_1 = \"Jan.\"\n",
    )
    .unwrap();
    build(dir.path());
    let chapter = std::fs::read_to_string(public.join("c2/index.html")).unwrap();
    assert!(
        chapter.contains("<time datetime=\"2026-01-02\">Jan. 2, 2026</time>"),
        "{chapter}"
    );
}

/// The time the experiments ran, in a chapter's footer and on the verification page: RFC 3339
/// in `datetime`, the site's language in the text, the same minute in both.
#[test]
fn the_time_experiments_ran_is_written_in_the_sites_language() {
    let site = common::Site::fixture("basic");
    let config = site.read("site.toml");
    let footer = regex::Regex::new(
        r#"<time datetime="(\d{4})-(\d\d)-(\d\d)T(\d\d:\d\d):\d\dZ">([^<]*)</time>"#,
    )
    .unwrap();
    let months = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    for language in ["en", "zh-CN"] {
        site.write("site.toml", &format!("{config}language = \"{language}\"\n"));
        let run = site.run(&["build"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        for page in ["public/first/index.html", "public/verification/index.html"] {
            let html = site.read(page);
            let times: Vec<_> = footer.captures_iter(&html).collect();
            assert!(!times.is_empty(), "{language} {page}: no run time\n{html}");
            for time in times {
                let (year, month, day, hm) = (&time[1], &time[2], &time[3], &time[4]);
                let month: usize = month.parse().unwrap();
                let day: u32 = day.parse().unwrap();
                let expected = match language {
                    "en" => format!("{day} {} {year} at {hm} UTC", months[month - 1]),
                    _ => format!("{year} 年 {month} 月 {day} 日 {hm}（UTC）"),
                };
                assert_eq!(&time[5], expected, "{language} {page}");
            }
        }
    }
}
