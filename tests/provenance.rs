//! Provenance of every number (issue 16, item 2) and the machine in the run footer (issue 13,
//! item 6): a bound quote links to the code line that recorded its value (shown lines, hidden
//! `# ` lines, `hide` blocks, folded blocks, an author's `#[track_caller]` helper, another
//! chapter), every code line carries the id such a link targets, and the verification page
//! lists every quote and pinned output with its verdict.

mod common;

use common::Site;

/// The opening tag of the quote whose data-name is `name` (the first one).
fn quote_tag<'a>(page: &'a str, name: &str) -> &'a str {
    let at = page
        .find(&format!("data-name=\"{name}\""))
        .unwrap_or_else(|| panic!("no quote {name}"));
    let start = page[..at].rfind('<').unwrap();
    let end = at + page[at..].find('>').unwrap();
    &page[start..=end]
}

/// The element whose id is `id`, up to the end of its line of code.
fn code_line<'a>(page: &'a str, id: &str) -> &'a str {
    let at = page
        .find(&format!("<span class=\"code-line\" id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no code line {id}"));
    &page[at..at + page[at..].find('\n').unwrap_or(page.len() - at)]
}

#[test]
fn quotes_link_to_the_line_that_recorded_them_and_the_site_lists_them_all() {
    let site = Site::fixture("provenance");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = site.read("public/src/index.html");

    for (name, line, code) in [
        ("shown", 15, "shown"),
        ("hidden", 12, "hidden"),
        ("helped", 16, "record"),
        ("in_hide", 25, "in_hide"),
        ("folded.1", 32, "folded"),
    ] {
        let tag = quote_tag(&page, name);
        assert!(
            tag.starts_with("<a class=\"quote\"") && tag.contains(&format!("href=\"#L{line}\"")),
            "{name} links to line {line}: {tag}"
        );
        assert!(
            tag.contains(&format!("记录于第 {line} 行")),
            "the hover text says where: {tag}"
        );
        assert!(
            code_line(&page, &format!("L{line}")).contains(code),
            "line {line} is the call recording {name}"
        );
    }
    // The drifted quote links too, and keeps its class.
    assert!(
        page.contains("<a class=\"quote drift\" href=\"#L15\""),
        "{page}"
    );
    // Hidden lines stay hidden until revealed; the hide block's code is on the page, hidden.
    assert!(page.contains("<span class=\"boring\"><span class=\"code-line\" id=\"L12\">"));
    let hide = page.find("id=\"L25\"").unwrap();
    let source_only = page[..hide]
        .rfind("<div class=\"experiment-code source-only\" hidden>")
        .unwrap();
    assert!(
        !page[source_only..hide].contains("</div>"),
        "L25 sits in the hidden source of the hide block"
    );
    let fold = page[..page.find("id=\"L32\"").unwrap()]
        .rfind("<details class=\"fold\">")
        .unwrap();
    assert!(!page[fold..page.find("id=\"L32\"").unwrap()].contains("</details>"));

    // Another chapter's value links to that chapter's page.
    let other = site.read("public/use/index.html");
    assert!(
        quote_tag(&other, "src/shown").contains("href=\"/src/#L15\""),
        "{}",
        quote_tag(&other, "src/shown")
    );
    assert!(quote_tag(&other, "own").contains("href=\"#L10\""));
    // In link text a quote keeps its hover text but is no link: links do not nest.
    let in_link = &other[other.find("<a href=\"https://example.com/\">").unwrap()..];
    let in_link = &in_link[..in_link.find("</a>").unwrap()];
    assert!(
        in_link.contains("<span class=\"quote\" data-name=\"own\" title=\"实验值 7；"),
        "{in_link}"
    );

    // The run footer names the processor and the instruction set, and links the page.
    let footer = &page[page.find("<footer class=\"run-meta\">").unwrap()..];
    let footer = &footer[..footer.find("</footer>").unwrap()];
    assert!(
        footer.contains("处理器 ") && footer.contains("指令集 "),
        "{footer}"
    );
    assert!(
        ["AVX-512", "AVX2", "可移植内核"]
            .iter()
            .any(|isa| footer.contains(isa)),
        "{footer}"
    );
    // It links the chapter's own section of the page, which that section's id names.
    assert!(footer.contains("verification/#src\""), "{footer}");

    let verification = site.read("public/verification/index.html");
    assert!(
        verification.contains("正文引用了 9 个数字：8 个与重新运行的实验一致，1 个偏离。固定的输出共 2 段：1 段一致，1 段不同。"),
        "{verification}"
    );
    assert!(
        verification.contains("<section class=\"verification-chapter\" id=\"src\""),
        "{verification}"
    );
    // The filter counts what it would keep: the drifted quote and the differing output.
    assert!(
        verification.contains("<input type=\"checkbox\" id=\"only-flagged\">")
            && verification.contains("只显示与实验不一致的条目（2 条）"),
        "{verification}"
    );
    let rows: Vec<&str> = verification.split("<tr class=\"verdict-").skip(1).collect();
    assert_eq!(rows.len(), 11, "9 quotes and 2 outputs");
    assert!(
        rows.iter()
            .any(|r| r.starts_with("drift") && r.contains(">9<") && r.contains("偏离"))
    );
    assert!(rows.iter().any(|r| r.starts_with("drift")
        && r.contains("sum = 3")
        && r.contains("c = 3")
        && r.contains("不同")));
    assert!(
        rows.iter().any(|r| r.contains("<a href=\"/src/#L25\">")),
        "the hide block's value links to its line: {verification}"
    );
}

#[test]
fn the_verification_page_can_be_switched_off() {
    let site = Site::fixture("provenance");
    let toml = site.read("site.toml");
    site.write(
        "site.toml",
        &format!("{toml}\n[verification]\nenabled = false\n"),
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!site.path("public/verification/index.html").exists());
    assert!(!site.read("public/src/index.html").contains("verification/"));
}
