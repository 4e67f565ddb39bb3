//! `attnbook build` on fixture sites: complete pages, real math, real experiments, cache.

mod common;

use common::Site;

#[test]
fn a_site_builds_into_complete_pages() {
    let site = Site::fixture("basic");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let first = site.read("public/first/index.html");
    // Math is rendered on the server: KaTeX markup, MathML, and no raw TeX delimiters left.
    assert!(first.contains("class=\"katex\"") && first.contains("<math"));
    assert!(!first.contains("$$") && !first.contains("$e_j"));
    assert!(first.contains("<div class=\"math-display\">"));
    // The experiment's code, fresh output, figure and table are on the page.
    assert!(first.contains("<div class=\"experiment-code\"><pre><code class=\"language-rust\">"));
    assert!(first.contains("<span class=\"hl-storage hl-type hl-rust\">let</span> h"));
    assert!(first.contains("sum = 1.000"));
    assert!(
        first.contains("<figure class=\"lab-figure\" id=\"fig-bars\">") && first.contains("<svg")
    );
    assert!(first.contains("图 1") && first.contains("五个位置上的注意力权重"));
    assert!(first.contains("表 1") && first.contains("<th>位置</th>"));
    // The hidden block's code is not shown: it is on the page only inside the hidden source a
    // provenance link reveals.
    let rows = first
        .find("let</span> rows")
        .expect("the hide block's source");
    let source_only = first[..rows]
        .rfind("<div class=\"experiment-code source-only\" hidden>")
        .expect("inside the hidden source");
    assert!(!first[source_only..rows].contains("</div>"), "{first}");
    // The quote shows the rerun value, with the full value and its recording line on hover.
    assert!(
        first.contains("title=\"实验值 1；原文 1.00；规则：误差不超过 ±1e-12；记录于第 ")
            && first.contains(">1.00</a>"),
        "{first}"
    );
    // Headings get anchors and a TOC; URLs honour the base path of base_url.
    assert!(first.contains("<h2 id=\"scores\"><a class=\"anchor\" href=\"#scores\""));
    assert!(first.contains("href=\"#scores\">打分</a>"));
    assert!(first.contains("href=\"/series/katex/katex.min.css\""));
    assert!(first.contains(
        "<a class=\"next\" href=\"/series/second/\" rel=\"next\" aria-keyshortcuts=\"ArrowRight\">"
    ));
    // The run metadata footer names the seed.
    assert!(first.contains("随机种子 7"));
    // Cross-chapter quotes bind.
    assert!(site.read("public/second/index.html").contains(">1.0</a>"));
    let index = site.read("public/index.html");
    let (a, b) = (index.find("第一篇").unwrap(), index.find("第二篇").unwrap());
    assert!(a < b, "the index lists chapters in series order");
    assert!(site.path("public/.nojekyll").exists());
    assert!(
        site.path("public/katex/fonts/KaTeX_Main-Regular.woff2")
            .exists()
    );
    assert!(site.path("public/style.css").exists());
}

#[test]
fn a_page_without_experiments_matches_its_snapshot() {
    let site = Site::fixture("basic");
    assert_eq!(site.run(&["build"]).code, 0);
    let page = site.read("public/second/index.html");
    // A site without a description has no description meta, rather than an empty one.
    assert!(!page.contains("content=\"\">"), "{page}");
    assert!(
        page.contains("规则：误差不超过 ±1e-12；记录于 first 第 "),
        "{page}"
    );
    insta::assert_snapshot!("second_page", page);
}

#[test]
fn a_second_build_reruns_nothing_and_rerun_forces_it() {
    let site = Site::fixture("basic");
    assert_eq!(site.run(&["build"]).code, 0);
    let second = site.run(&["build"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert!(
        second.stdout.contains("experiments: 0 run, 1 cached"),
        "{}",
        second.stdout
    );
    let page = site.read("public/first/index.html");
    let forced = site.run(&["build", "--rerun"]);
    assert!(
        forced.stdout.contains("experiments: 1 run, 0 cached"),
        "{}",
        forced.stdout
    );
    // Same seed, same results: the page is the same apart from the run time in the footer.
    let strip = |s: &str| {
        s.split("<footer class=\"run-meta\">")
            .next()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(strip(&page), strip(&site.read("public/first/index.html")));
}

#[test]
fn editing_prose_keeps_the_cache_but_editing_a_block_reruns_it() {
    let site = Site::fixture("basic");
    assert_eq!(site.run(&["build"]).code, 0);
    let path = "content/01-first.md";
    let text = site.read(path);
    site.write(path, &text.replace("点积打分", "点积（dot product）打分"));
    assert!(site.run(&["build"]).stdout.contains("0 run, 1 cached"));
    site.write(path, &text.replace("lab.randn(8)", "lab.randn(8) * 0.5"));
    let run = site.run(&["build"]);
    assert!(
        run.stdout.contains("1 run, 0 cached"),
        "{}{}",
        run.stdout,
        run.stderr
    );
}

#[test]
fn base_url_flag_rewrites_every_link() {
    let site = Site::fixture("basic");
    let run = site.run(&["build", "--base-url", "https://user.github.io/other/"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = site.read("public/first/index.html");
    assert!(page.contains("href=\"/other/style.css\""));
    // Every file of the output: nothing of the base_url in site.toml is left anywhere.
    let mut texts = 0;
    for entry in walkdir::WalkDir::new(site.path("public")) {
        let entry = entry.unwrap();
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        texts += 1;
        assert!(
            !text.contains("/series/") && !text.contains("example.github.io"),
            "{} keeps the old base URL",
            entry.path().display()
        );
    }
    assert!(texts > 20, "only {texts} text files");
    // Each URL-bearing file, with the new base URL where it belongs.
    assert_eq!(
        site.read("public/robots.txt"),
        "User-agent: *\nAllow: /\nSitemap: https://user.github.io/other/sitemap.xml\n"
    );
    let sitemap = site.read("public/sitemap.xml");
    let locs: Vec<&str> = sitemap
        .match_indices("<loc>")
        .map(|(i, _)| &sitemap[i + 5..])
        .map(|r| &r[..r.find('<').unwrap()])
        .collect();
    assert_eq!(
        locs,
        [
            "https://user.github.io/other/",
            "https://user.github.io/other/first/",
            "https://user.github.io/other/second/"
        ]
    );
    let atom = site.read("public/atom.xml");
    for link in [
        "<link href=\"https://user.github.io/other/atom.xml\" rel=\"self\"",
        "<link href=\"https://user.github.io/other/\"/>",
        "<id>https://user.github.io/other/first/</id>",
        "<id>https://user.github.io/other/second/</id>",
    ] {
        assert!(atom.contains(link), "atom.xml lacks {link}");
    }
    let index: serde_json::Value =
        serde_json::from_str(&site.read("public/search-index.json")).unwrap();
    let urls: Vec<&str> = index["docs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["u"].as_str().unwrap())
        .collect();
    assert!(urls.contains(&"/other/first/#scores"), "{urls:?}");
    assert!(urls.iter().all(|u| u.starts_with("/other/")), "{urls:?}");
    for (file, canonical) in [
        ("404.html", "404.html"),
        ("index.html", ""),
        ("first/index.html", "first/"),
        ("tags/index.html", "tags/"),
        ("tags/dot/index.html", "tags/dot/"),
        ("categories/basics/index.html", "categories/basics/"),
    ] {
        let page = site.read(&format!("public/{file}"));
        let link =
            format!("<link rel=\"canonical\" href=\"https://user.github.io/other/{canonical}\">");
        assert!(page.contains(&link), "{file} lacks {link}");
        assert!(page.contains("href=\"/other/style.css\""), "{file}");
    }
    assert!(site.read("public/404.html").contains("href=\"/other/\""));
}

#[test]
fn an_output_flood_is_truncated_not_fatal() {
    let site = Site::fixture("flood");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = site.read("public/a/index.html");
    assert!(page.contains("输出过长，已截断。"));
    // Exactly the first 256 KiB of what the block printed is kept (the page trims the end).
    const CAP: usize = 256 * 1024;
    let mut printed = String::new();
    for i in 0.. {
        if printed.len() > CAP {
            break;
        }
        printed.push_str(&format!("line {i} of a flood\n"));
    }
    let kept = printed[..CAP].trim_end();
    assert!(
        page.contains(&format!("<pre>{kept}</pre>")),
        "the kept output is not the first 256 KiB"
    );
    let cached: serde_json::Value =
        serde_json::from_str(&site.read(".attnbook/cache/a.json")).unwrap();
    assert_eq!(
        cached["run"]["blocks"][0]["stdout"].as_str().map(str::len),
        Some(CAP)
    );
}

#[test]
fn two_relative_tolerances_in_one_paragraph_stay_quotes() {
    let site = Site::fixture("quotes");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "drift only warns: {}", run.stderr);
    assert!(
        run.stderr.contains("warning: quoted 9.99"),
        "{}",
        run.stderr
    );
    let page = site.read("public/q/index.html");
    assert!(
        !page.contains("<del>"),
        "no strikethrough between the two ~5% quotes"
    );
    assert!(page.contains(">3.0x</a>") && page.contains(">1,234,568</a>"));
    let strict = site.run(&["build", "--strict"]);
    assert_eq!(
        strict.code, 2,
        "--strict makes warnings errors: {}",
        strict.stderr
    );
    assert!(strict.stderr.contains("error: quoted 9.99"));
}

#[test]
fn a_site_template_overrides_the_default_and_sees_the_values() {
    let site = Site::fixture("template-override");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = site.read("public/t/index.html");
    assert!(
        page.contains("<main class=\"custom\">T: loss=0.25, w1=0.5</main>"),
        "{page}"
    );
    assert!(
        page.contains("<header class=\"site-header\">"),
        "the built-in base.html is still used"
    );
}

#[test]
fn experiments_run_in_a_sandbox_directory_not_the_site() {
    let site = Site::fixture("sandbox");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !site.path("scratch.txt").exists(),
        "files a block writes stay out of the site root"
    );
    assert!(site.path(".attnbook/run/sandbox-a/scratch.txt").exists());
    // Writes outside the sandbox are refused where the kernel has Landlock; elsewhere the
    // experiment runs unconfined (best effort), and this pins that it does, rather than
    // failing or skipping on such a machine.
    let confined = kernel_has_landlock();
    assert_eq!(
        site.path("escaped.txt").exists(),
        !confined,
        "Landlock available: {confined}"
    );
    let escaped = if confined { "0" } else { "1" };
    let page = site.read("public/a/index.html");
    assert!(
        page.contains(&format!("data-name=\"escaped\" title=\"实验值 {escaped}；")),
        "Landlock available: {confined}\n{page}"
    );
}

/// Whether this kernel offers Landlock: `landlock_create_ruleset` with the VERSION flag
/// answers the ABI version (1 or more), or fails when Landlock is missing or disabled.
fn kernel_has_landlock() -> bool {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_long = 1;
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call reads and writes
    // no memory; it only returns a number.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    abi >= 1
}

#[test]
fn feeds_sitemap_robots_404_and_meta_honour_base_url() {
    let site = Site::fixture("basic");
    assert_eq!(site.run(&["build"]).code, 0);
    let atom = site.read("public/atom.xml");
    assert!(atom.contains("<link href=\"https://example.github.io/series/atom.xml\" rel=\"self\""));
    assert!(atom.contains("<id>https://example.github.io/series/first/</id>"));
    assert!(atom.contains("<updated>2026-04-25T00:00:00Z</updated>"));
    assert!(
        atom.contains("&lt;h2 id=&quot;scores&quot;"),
        "entry content is escaped HTML"
    );
    let sitemap = site.read("public/sitemap.xml");
    assert!(sitemap.contains("<loc>https://example.github.io/series/second/</loc>"));
    assert!(
        site.read("public/robots.txt")
            .contains("Sitemap: https://example.github.io/series/sitemap.xml")
    );
    assert!(site.read("public/404.html").contains("href=\"/series/\""));
    let page = site.read("public/first/index.html");
    assert!(
        page.contains("<link rel=\"canonical\" href=\"https://example.github.io/series/first/\">")
    );
    assert!(page.contains("<meta property=\"og:type\" content=\"article\">"));
    assert!(page.contains("<meta property=\"og:description\" content=\"一个最小的实验。\">"));
    assert!(page.contains("<link rel=\"icon\" href=\"/series/favicon.svg\""));
    assert!(site.path("public/favicon.svg").exists());
}

#[test]
fn cross_references_show_numbers_and_link_across_chapters() {
    let site = Site::fixture("xref");
    let text = site.read("content/02-b.md");
    site.write(
        "content/02-b.md",
        &text
            .lines()
            .filter(|l| !l.starts_with("坏的"))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let a = site.read("public/a/index.html");
    assert!(
        a.contains("<a class=\"xref\" href=\"#eq-score\">式 (1)</a>"),
        "{a}"
    );
    assert!(a.contains("<a class=\"xref\" href=\"#fig-weights\">图 1</a>"));
    assert!(a.contains("<a class=\"xref\" href=\"#tab-weights\">表 1</a>"));
    assert!(a.contains("<div class=\"math-display\" id=\"eq-softmax\">"));
    assert!(
        a.contains("(2)"),
        "the second labelled equation carries its number"
    );
    let b = site.read("public/b/index.html");
    assert!(b.contains("<a class=\"xref\" href=\"/series/a/\">《加性注意力》</a>"));
    assert!(b.contains("<a class=\"xref\" href=\"/series/a/#eq-softmax\">第 1 篇式 (2)</a>"));
    assert!(b.contains("<a class=\"xref\" href=\"/series/a/#fig-weights\">第 1 篇图 1</a>"));
    // A table's caption and the TeX of its headers render like the prose.
    let table = &a[a.find("<figure class=\"lab-table\"").unwrap()..];
    let table = &table[..table.find("</figure>").unwrap()];
    assert!(
        table.contains("<span class=\"table-label\">表 1</span> 第一个权重 <span class=\"katex\">"),
        "{table}"
    );
    assert!(table.contains("<th><span class=\"katex\">"), "{table}");
    // What the references to the other page show on hover is in this page, made at build time.
    let preview = |href: &str| {
        let at = b
            .find(&format!(
                "<template class=\"preview\" data-href=\"{href}\">"
            ))
            .unwrap_or_else(|| panic!("no preview of {href}: {b}"));
        b[at..at + b[at..].find("</template>").unwrap()].to_string()
    };
    assert!(
        preview("/series/a/#eq-softmax")
            .contains("<div class=\"math-display\"><span class=\"katex-display\">")
    );
    assert!(preview("/series/a/#eq-softmax").contains("第 1 篇式 (2)（《加性注意力》）"));
    assert!(preview("/series/a/#fig-weights").contains("<p>两个权重</p>"));
    assert!(preview("/series/a/").contains("《加性注意力》"));
    // The same page's targets are on the page already: no template for them.
    assert!(!a.contains("<template"), "{a}");
}

#[test]
fn citations_link_to_a_reference_list_of_the_cited_works() {
    let site = Site::fixture("cite");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = site.read("public/a/index.html");
    assert!(
        page.contains("<a class=\"citation\" href=\"#ref-bahdanau2015\">(Bahdanau 等, 2015)</a>"),
        "{page}"
    );
    assert!(page.contains(
        "<a class=\"citation\" href=\"#ref-vaswani2017\">(Vaswani 等, 2017; Bahdanau 等, 2015)</a>"
    ));
    assert!(page.contains("<li id=\"ref-vaswani2017\">"));
    assert!(page.contains("Attention Is All You Need"));
    assert!(!page.contains("Never Cited"), "only cited works are listed");
    assert!(page.contains("<code>[@bahdanau2015]</code>"));
    assert!(
        page.contains("href=\"#bibliography\">参考文献</a>"),
        "the list is in the TOC"
    );
}

#[test]
fn unknown_citation_keys_are_errors() {
    let site = Site::fixture("cite");
    site.write(
        "content/01-a.md",
        "+++\ntitle = \"A\"\nnumber = 1\n+++\n\n见 [@bahdanua2015]。\n",
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("content/01-a.md:6:3: error: unknown citation key `bahdanua2015`"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("did you mean `bahdanau2015`?"));
}

#[test]
fn the_table_of_contents_renders_math_in_headings() {
    let site = Site::fixture("basic");
    site.write(
        "content/02-second.md",
        "+++\ntitle = \"二\"\nnumber = 2\n+++\n\n## 除以 $\\sqrt{d_k}$ {#scale}\n\n正文。\n",
    );
    assert_eq!(site.run(&["build"]).code, 0);
    let page = site.read("public/second/index.html");
    assert!(
        page.contains("<a href=\"#scale\">除以 <span class=\"katex\">"),
        "{page}"
    );
    assert!(!page.contains(">除以 \\sqrt{d_k}<"));
}

#[test]
fn editor_leftovers_in_content_are_not_chapters() {
    let site = Site::fixture("basic");
    site.write("content/.#01-first.md", "root@host.1234:1700000000");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn tag_and_category_pages_and_related_chapters() {
    let site = Site::fixture("basic");
    let second = site
        .read("content/02-second.md")
        .replace("number = 2\n", "number = 2\ntags = [\"dot\"]\n");
    site.write("content/02-second.md", &second);
    assert_eq!(site.run(&["build"]).code, 0);
    let first = site.read("public/first/index.html");
    assert!(
        first.contains("<a class=\"tag\" href=\"/series/tags/dot/\">dot</a>"),
        "{first}"
    );
    assert!(first.contains("<a class=\"category\" href=\"/series/categories/basics/\">basics</a>"));
    assert!(
        first.contains("<nav class=\"related\" aria-label=\"同一主题\">")
            && first.contains("<a href=\"/series/second/\">第二篇：没有实验</a>")
    );
    let dot = site.read("public/tags/dot/index.html");
    assert!(dot.contains("第一篇：点积注意力") && dot.contains("第二篇：没有实验"));
    assert!(
        !site
            .read("public/tags/attention/index.html")
            .contains("第二篇")
    );
    let all = site.read("public/tags/index.html");
    assert!(
        all.contains(
            "<a class=\"tag\" href=\"/series/tags/dot/\">dot</a> <span class=\"count\">2</span>"
        ),
        "{all}"
    );
    assert!(site.path("public/categories/basics/index.html").exists());
}

#[test]
fn images_come_from_static_under_the_base_path() {
    let site = Site::fixture("images");
    let text = site.read("content/01-a.md");
    site.write(
        "content/01-a.md",
        text.lines().take(7).collect::<Vec<_>>().join("\n").as_str(),
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        site.read("public/a/index.html")
            .contains("<img src=\"/series/img/dot.svg\" alt=\"一个图\"")
    );
    assert!(site.path("public/img/dot.svg").exists());
}

/// A rebuild stages into the output the build before replaced (kept in .attnbook/spare-output);
/// what it writes must still be exactly what a build from nothing writes.
#[test]
fn a_recycled_output_ends_exactly_like_a_fresh_one() {
    let site = Site::fixture("serve-plain");
    assert_eq!(site.run(&["build"]).code, 0);
    // Leftovers a recycled tree must lose, and a link a write must not follow.
    site.write("public/stray.html", "old");
    std::fs::create_dir_all(site.path("public/gone/deeper")).unwrap();
    site.write("public/gone/deeper/index.html", "old");
    site.write("outside.txt", "untouched");
    std::fs::remove_file(site.path("public/robots.txt")).unwrap();
    std::os::unix::fs::symlink(site.path("outside.txt"), site.path("public/robots.txt")).unwrap();
    std::fs::hard_link(site.path("public/index.html"), site.path("linked.html")).unwrap();
    let linked = site.read("linked.html");
    assert_eq!(site.run(&["build"]).code, 0);
    assert!(
        site.path(".attnbook/spare-output/stray.html").exists(),
        "the replaced output is kept for the next build"
    );
    std::fs::remove_file(site.path("content/02-two.md")).unwrap();
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);

    let fresh = Site::fixture("serve-plain");
    std::fs::remove_file(fresh.path("content/02-two.md")).unwrap();
    assert_eq!(fresh.run(&["build"]).code, 0);
    let tree = |root: std::path::PathBuf| -> Vec<(String, Vec<u8>)> {
        walkdir::WalkDir::new(&root)
            .sort_by_file_name()
            .into_iter()
            .map(|e| e.unwrap())
            .map(|e| {
                let rel = e.path().strip_prefix(&root).unwrap().display().to_string();
                let kind = e.file_type();
                assert!(!kind.is_symlink(), "{rel} is a link");
                let bytes = if kind.is_file() {
                    std::fs::read(e.path()).unwrap()
                } else {
                    Vec::new()
                };
                (rel, bytes)
            })
            .collect()
    };
    let (recycled, expected) = (tree(site.path("public")), tree(fresh.path("public")));
    let names = |t: &[(String, Vec<u8>)]| t.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&recycled), names(&expected));
    assert!(
        recycled == expected,
        "a file differs from the fresh build's"
    );
    assert!(!site.path("public/two").exists());
    assert_eq!(site.read("outside.txt"), "untouched");
    assert_eq!(
        site.read("linked.html"),
        linked,
        "a hard-linked copy was written through"
    );
    assert_ne!(
        site.read("public/index.html"),
        linked,
        "the index lists one chapter fewer"
    );
}

/// `[search]` and `[highlight]` can be switched off: no index, no search box or script, no
/// highlighting stylesheet, and code as plain escaped text.
#[test]
fn search_and_highlighting_can_be_switched_off() {
    let site = Site::fixture("serve-plain");
    let chapter = site.read("content/01-one.md");
    site.write(
        "content/01-one.md",
        &format!("{chapter}\n```rust\nlet x = a < b;\n```\n"),
    );
    assert_eq!(site.run(&["build"]).code, 0);
    let on = site.read("public/one/index.html");
    assert!(on.contains("search.js") && on.contains("highlight.css"));
    assert!(on.contains("<span class=\"hl-"), "{on}");
    assert!(site.path("public/search-index.json").exists());
    assert!(site.path("public/highlight.css").exists());

    let config = site.read("site.toml");
    site.write(
        "site.toml",
        &format!("{config}\n[search]\nenabled = false\n\n[highlight]\nenabled = false\n"),
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let off = site.read("public/one/index.html");
    assert!(!off.contains("search.js") && !off.contains("site-search"));
    assert!(!off.contains("highlight.css") && !off.contains("hl-"));
    assert!(
        off.contains("<pre><code class=\"language-rust\">let x = a &lt; b;\n</code></pre>"),
        "{off}"
    );
    assert!(!site.path("public/search-index.json").exists());
    assert!(!site.path("public/highlight.css").exists());

    site.write(
        "site.toml",
        &format!("{config}\n[search]\nenable = false\n"),
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "a misspelt key is an error: {}", run.stderr);
    assert!(run.stderr.contains("enable"), "{}", run.stderr);
}

/// The build caches (citations, highlighted code, search index) are keyed by everything that
/// decides their output: a rebuild after changing any of it shows the change.
#[test]
fn cached_citations_code_and_search_follow_their_sources() {
    let site = Site::fixture("cite");
    let chapter = site.read("content/01-a.md");
    site.write(
        "content/01-a.md",
        &format!("{chapter}\n```python\nprint(1)\n```\n\n## 检索 {{#find}}\n\n原来的词语\n"),
    );
    assert_eq!(site.run(&["build"]).code, 0);
    assert!(site.path(".attnbook/cache/render/citations.cache").exists());
    let first = site.read("public/a/index.html");
    assert!(first.contains("Attention Is All You Need"));
    assert!(site.read("public/search-index.json").contains("原来的词语"));

    // The bibliography changes: the reference list follows.
    let bib = site.read("content/references.bib");
    site.write(
        "content/references.bib",
        &bib.replace(
            "Attention Is All You Need",
            "Attention Is Still All You Need",
        ),
    );
    // The code block and the prose change: highlighting and the search index follow.
    let edited = site
        .read("content/01-a.md")
        .replace("print(1)", "print(2)")
        .replace("原来的词语", "改过的词语");
    site.write("content/01-a.md", &edited);
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let second = site.read("public/a/index.html");
    assert!(
        second.contains("Attention Is Still All You Need"),
        "{second}"
    );
    assert!(
        second.contains(">2</span>") && !second.contains(">1</span>)"),
        "{second}"
    );
    let index = site.read("public/search-index.json");
    assert!(index.contains("改过的词语") && !index.contains("原来的词语"));

    // The citation style changes: every citation is formatted again.
    let config = site.read("site.toml");
    site.write("site.toml", &format!("citation_style = \"ieee\"\n{config}"));
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let ieee = site.read("public/a/index.html");
    assert!(ieee.contains(">[1]</a>"), "{ieee}");
}

/// Every file under `dir` whose text contains `needle`, relative to `dir`.
fn files_containing(dir: &std::path::Path, needle: &str) -> Vec<String> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.expect("walk output"))
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            std::fs::read(e.path())
                .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(needle))
        })
        .map(|e| e.path().strip_prefix(dir).unwrap().display().to_string())
        .collect()
}

#[test]
fn drafts_no_output_and_root_relative_links() {
    let site = Site::fixture("drafts");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = site.read("public/published/index.html");
    // A root-relative link is relative to the site: the page gets it under the base path;
    // a protocol-relative one is another host's.
    assert!(
        page.contains("<a href=\"/series/\">the first page</a>"),
        "{page}"
    );
    assert!(
        page.contains("<a href=\"/series/tags/shared/\">the tags</a>"),
        "{page}"
    );
    assert!(
        page.contains("<a href=\"//example.org/x\">elsewhere</a>"),
        "{page}"
    );
    // `no_output` runs the block (its value is quoted) but shows none of what it printed.
    assert!(page.contains("title=\"实验值 3；"), "{page}");
    assert!(!page.contains("hidden-hidden-"), "{page}");
    assert!(page.contains("shown-shown-"), "{page}");

    // Without --drafts, a draft is nowhere: no page, no entry in the index, tags, feed,
    // sitemap or search index.
    assert!(!site.path("public/unfinished").exists());
    assert!(!site.path("public/tags/draft-only-tag").exists());
    let public = site.path("public");
    for needle in ["Unfinished draft", "unfinished/", "draft-only-tag"] {
        let found = files_containing(&public, needle);
        assert!(found.is_empty(), "{needle} in {found:?}");
    }

    let run = site.run(&["build", "--drafts"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let draft = site.read("public/unfinished/index.html");
    assert!(draft.contains("Work in progress."), "{draft}");
    assert!(
        site.read("public/index.html")
            .contains("/series/unfinished/")
    );
    assert!(site.path("public/tags/draft-only-tag/index.html").exists());
}

#[test]
fn a_table_in_the_intro_scrolls_in_its_own_box() {
    let site = Site::fixture("basic");
    let config = site.read("site.toml");
    site.write(
        "site.toml",
        &format!("{config}intro = \"\"\"\n| 篇 | 问题 |\n|---|---|\n| 1 | 为什么 |\n\"\"\"\n"),
    );
    assert_eq!(site.run(&["build"]).code, 0);
    let index = site.read("public/index.html");
    assert!(
        index.contains("<div class=\"table-wrap\">\n<table>"),
        "{index}"
    );
    assert_eq!(index.matches("<div class=\"table-wrap\">").count(), 1);
}

/// Redteam-3 D14: a chapter cannot write another chapter's results. `zz` keeps rewriting every
/// place `aa`'s results could be (the old shared `run/aa.json`, and `aa`'s own results and
/// sandbox directories) with a forged 666 while `aa` runs beside it; `aa`'s page and cache hold
/// its own 1. Where the kernel has Landlock, every one of those writes is refused.
#[test]
fn a_chapter_cannot_write_another_chapters_results() {
    let site = Site::fixture("sandbox");
    std::fs::remove_file(site.path("content/01-a.md")).unwrap();
    site.write(
        "content/01-aa.md",
        "+++\ntitle = \"A\"\nnumber = 1\n+++\n\n```rust,experiment\n\
         std::thread::sleep(std::time::Duration::from_millis(1500));\n\
         lab.value(\"v\", 1.0);\n```\n\n[1]{=v}\n",
    );
    let forged = r#"{"chapter":"aa","seed":SEED,"blocks_started":1,"values":[{"name":"v","block":0,"shape":[],"data":[666.0],"volatile":false,"file":"","line":0}],"tables":[],"figures":[],"panic":null}"#;
    site.write(
        "content/02-zz.md",
        &format!(
            "+++\ntitle = \"Z\"\nnumber = 2\n+++\n\n```rust,experiment\n\
             let forged = r#\"{forged}\"#;\n\
             let start = std::time::SystemTime::now();\n\
             let mut landed = 0.0;\n\
             while start.elapsed().unwrap().as_secs_f64() < 4.0 {{\n\
             \x20   for target in [\"../aa.json\", \"../results-aa/results.json\", \"../sandbox-aa/x\"] {{\n\
             \x20       if std::fs::write(target, forged).is_ok() {{ landed = 1.0; }}\n\
             \x20   }}\n\
             }}\n\
             lab.value(\"landed\", landed);\n```\n\n[0]{{=landed}}\n"
        ),
    );
    // The seed of `aa` is derived from its slug: the forger knows it (the build uses it).
    let aa_seed = {
        let hash = blake3::hash(b"aa");
        u64::from_le_bytes(hash.as_bytes()[..8].try_into().unwrap()) % 1_000_000_000
    };
    let text = site
        .read("content/02-zz.md")
        .replace("SEED", &aa_seed.to_string());
    site.write("content/02-zz.md", &text);
    let run = site.run(&["build", "--jobs", "2", "--rerun"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = site.read("public/aa/index.html");
    assert!(page.contains("title=\"实验值 1；"), "{page}");
    assert!(!page.contains("666"), "{page}");
    if kernel_has_landlock() {
        assert!(
            !run.stderr.contains("rerun 1"),
            "a forged write landed: {}",
            run.stderr
        );
    }
    // What the cache holds is what the page showed: a build from it says the same.
    let cached = site.run(&["build"]);
    assert_eq!(cached.code, 0, "{}", cached.stderr);
    assert!(
        site.read("public/aa/index.html")
            .contains("title=\"实验值 1；")
    );
}

/// Redteam-3 D21: what `.attnbook/run/` holds for chapters that are gone (and results files of
/// the layout before each chapter had its own results directory) is removed by the next build;
/// the chapters that are still there keep theirs.
#[test]
fn leftovers_of_deleted_chapters_are_pruned_from_the_run_directory() {
    let site = Site::fixture("sandbox");
    assert_eq!(site.run(&["build"]).code, 0);
    let run = site.path(".attnbook/run");
    for dir in ["results-gone", "sandbox-gone"] {
        std::fs::create_dir_all(run.join(dir)).unwrap();
        std::fs::write(run.join(dir).join("big"), "x").unwrap();
    }
    std::fs::write(run.join("gone.json"), "{}").unwrap();
    let again = site.run(&["build"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    for left in ["results-gone", "sandbox-gone", "gone.json"] {
        assert!(!run.join(left).exists(), "{left} is left");
    }
    assert!(
        run.join("sandbox-a/scratch.txt").exists(),
        "a's sandbox stays"
    );
}
