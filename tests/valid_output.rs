//! Nothing lost, nothing escapes: whatever the text, feeds and pages stay well-formed, every
//! tag keeps its page, and a bad `--base-url` never reaches the build.

mod common;

use std::collections::BTreeSet;

use common::Site;

/// What XML 1.0 forbids in text (C0 controls but TAB, LF, CR; U+FFFE, U+FFFF) and HTML too (DEL,
/// C1 controls). Written out here, not taken from the crate, so the test checks the tool.
fn forbidden(c: char) -> bool {
    (c < ' ' && !matches!(c, '\t' | '\n' | '\r'))
        || ('\u{7F}'..='\u{9F}').contains(&c)
        || matches!(c, '\u{FFFE}' | '\u{FFFF}')
}

/// Every string in a JSON document.
fn json_strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| json_strings(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| json_strings(v, out)),
        _ => {}
    }
}

#[test]
fn forbidden_characters_are_warned_at_their_lines_and_never_reach_the_output() {
    let site = Site::fixture("control-chars");
    let strict = site.run(&["build", "--strict"]);
    assert_eq!(strict.code, 2, "{}", strict.stderr);
    assert!(
        !site.path("public").exists(),
        "a strict failure wrote output"
    );

    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for at in [
        "site.toml:3:1",              // description = "pasted\u0007here"
        "content/01-pasted.md:2:1",   // title = "分页\u000c符"
        "content/01-pasted.md:5:1",   // tags = ["pdf", "bell\u0007"]
        "content/01-pasted.md:11:12", // a raw form feed in the prose
        "content/01-pasted.md:11:21", // a raw U+0001
    ] {
        assert!(
            run.stderr.contains(at),
            "no warning at {at}:\n{}",
            run.stderr
        );
    }
    assert!(run.stderr.contains("U+000C (form feed)"), "{}", run.stderr);

    for feed in ["public/atom.xml", "public/sitemap.xml"] {
        let text = site.read(feed);
        if let Err(e) = roxmltree::Document::parse(&text) {
            panic!("{feed} is not well-formed XML: {e}\n{text}");
        }
    }
    let atom = site.read("public/atom.xml");
    assert!(atom.contains("<title>分页 符</title>"), "{atom}");

    let mut checked = 0;
    for entry in walkdir::WalkDir::new(site.path("public")) {
        let entry = entry.expect("walk public/");
        let path = entry.path();
        let text = match path.extension().and_then(|e| e.to_str()) {
            Some("html" | "xml") => {
                vec![site.read(&path.strip_prefix(site.root()).unwrap().to_string_lossy())]
            }
            Some("json") => {
                let json: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
                let mut strings = Vec::new();
                json_strings(&json, &mut strings);
                strings
            }
            _ => continue,
        };
        for t in text {
            let bad: Vec<char> = t.chars().filter(|&c| forbidden(c)).collect();
            assert!(bad.is_empty(), "{} holds {bad:?}", path.display());
        }
        checked += 1;
    }
    assert!(checked > 3, "only {checked} files checked");

    let page = site.read("public/pasted/index.html");
    // The escape sequences are gone whole, not left as `[31m` (the code above shows them).
    assert!(page.contains("<pre>red and plain</pre>"), "{page}");
}

#[test]
fn a_pinned_output_matches_what_the_page_shows_without_escape_sequences() {
    let site = Site::fixture("control-chars");
    let run = site.run(&["verify"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
}

#[test]
fn tags_whose_names_share_a_slug_each_keep_a_page() {
    let site = Site::fixture("tag-slugs");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);

    // Every chapter can be reached from a tag page linked from the tag index.
    let index = site.read("public/tags/index.html");
    let re = regex::Regex::new(r#"href="/(tags|categories)/([^"/]+)/""#).unwrap();
    let mut reached = BTreeSet::new();
    let mut pages = BTreeSet::new();
    for link in re.captures_iter(&index) {
        let page = site.read(&format!("public/{}/{}/index.html", &link[1], &link[2]));
        pages.insert(format!("{}/{}", &link[1], &link[2]));
        for title in ["标题一", "标题二", "标题三", "标题四"] {
            if page.contains(title) && &link[1] == "tags" {
                reached.insert(title);
            }
        }
    }
    assert_eq!(reached.len(), 4, "reached only {reached:?} from {pages:?}");

    let only = |page: &str, title: &str| {
        let text = site.read(&format!("public/{page}/index.html"));
        let titles: Vec<&str> = ["标题一", "标题二", "标题三", "标题四"]
            .into_iter()
            .filter(|t| text.contains(t))
            .collect();
        assert_eq!(titles, [title], "{page}");
    };
    only("tags/c", "标题一");
    only("tags/c-sharp", "标题二");
    only("tags/c-plus-plus", "标题三");
    only("categories/q-k-1", "标题二");
    // `Rust`/`rust` and `Q K`/`q k` are one term each, with a warning naming both places.
    let rust = site.read("public/tags/rust/index.html");
    assert!(rust.contains("标题三") && rust.contains("标题四"), "{rust}");
    let qk = site.read("public/categories/q-k/index.html");
    assert!(qk.contains("标题一") && qk.contains("标题三"), "{qk}");
    assert!(
        run.stderr.contains("content/04-rust.md:4:1")
            && run
                .stderr
                .contains("tag `rust` is spelt `Rust` in content/03-cpp.md:4:1"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("category `q k` is spelt `Q K` in content/01-c.md:5:1"),
        "{}",
        run.stderr
    );
    // The chapter page links its tag to the right page.
    let csharp = site.read("public/c-sharp/index.html");
    assert!(csharp.contains("href=\"/tags/c-sharp/\""), "{csharp}");
}

#[test]
fn a_bad_base_url_flag_stops_before_the_build_and_names_the_flag() {
    let site = Site::fixture("tag-slugs");
    for url in [
        "user.github.io/repo/",
        "https://user.github.io/repo/?x=1#top",
    ] {
        let run = site.run(&["build", "--base-url", url]);
        assert_eq!(run.code, 2, "{url}: {}", run.stderr);
        assert!(run.stderr.contains("--base-url"), "{}", run.stderr);
        assert!(
            run.stderr.contains("`https://user.github.io/repo/`"),
            "{}",
            run.stderr
        );
        assert!(!site.path("public").exists());
    }
    let run = site.run(&["build", "--base-url", "https://user.github.io/repo/"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        site.read("public/tags/c-sharp/index.html")
            .contains("href=\"/repo/c-sharp/\"")
    );
}

#[test]
fn a_bad_base_url_in_site_toml_is_an_error_at_its_line() {
    let site = Site::fixture("tag-slugs");
    site.write(
        "site.toml",
        "title = \"Tag slugs\"\nbase_url = \"https://user.github.io/repo/?x=1\"\n",
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("site.toml:2:1"), "{}", run.stderr);
    assert!(run.stderr.contains("query or fragment"), "{}", run.stderr);
}
