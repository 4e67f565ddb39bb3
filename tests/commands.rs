//! `check`, `new` and `build --timings`.

mod common;

use common::Site;

#[test]
fn broken_links_and_anchors_fail_the_build_with_suggestions() {
    let site = Site::fixture("links");
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    insta::assert_snapshot!("broken_links", run.stderr);
}

#[test]
fn good_links_are_rewritten_to_chapter_urls() {
    let site = Site::fixture("links");
    let text = site.read("content/01-a.md");
    let fixed = text
        .lines()
        .filter(|l| !l.starts_with("Broken:"))
        .collect::<Vec<_>>()
        .join("\n");
    site.write("content/01-a.md", &fixed);
    let run = site.run(&["build"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = site.read("public/a/index.html");
    assert!(
        page.contains("<a href=\"/series/b/\">the next chapter</a>"),
        "{page}"
    );
    assert!(page.contains("<a href=\"/series/b/#method\">its method</a>"));
    assert!(page.contains("<a href=\"/series/b/#fig-curve\">a figure</a>"));
    assert!(page.contains("<a href=\"#start\">this page</a>"));
}

#[test]
fn check_finds_problems_without_running_experiments() {
    let site = Site::fixture("links");
    let run = site.run(&["check"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        !site.path(".attnbook/lab").exists(),
        "check compiles nothing"
    );
    assert!(
        run.stderr
            .contains("content/01-a.md:11:9: error: broken link: no chapter `c`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("no anchor `#methdo` in chapter `b`")
            && run.stderr.contains("did you mean `method`?")
    );
    assert!(
        run.stdout.contains("never built, names unchecked: b"),
        "{}",
        run.stdout
    );
}

#[test]
fn check_passes_on_a_clean_site_and_knows_names_and_values_from_the_last_build() {
    let site = Site::fixture("basic");
    assert_eq!(site.run(&["build"]).code, 0);
    let run = site.run(&["check"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let text = site.read("content/01-first.md");
    site.write(
        "content/01-first.md",
        &text.replace("{=sum ±1e-12}", "{=summ ±1e-12}"),
    );
    let run = site.run(&["check"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("unknown value `summ`") && run.stderr.contains("did you mean `sum`?"),
        "{}",
        run.stderr
    );
    // A quote that drifted from the cached run is a finding too (exit 1), not a warning.
    site.write(
        "content/01-first.md",
        &text.replace("[1.00]{=sum ±1e-12}", "[2.00]{=sum ±1e-12}"),
    );
    let run = site.run(&["check"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("content/01-first.md:40:")
            && run.stderr.contains("quoted 2.00")
            && run.stderr.contains("error: 1 problem(s) found"),
        "{}",
        run.stderr
    );
}

#[test]
fn check_exits_2_when_it_cannot_read_the_site() {
    let site = Site::fixture("bad-config");
    let run = site.run(&["check"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("site.toml:3:1"), "{}", run.stderr);
    assert!(!run.stderr.contains("problem(s) found"), "{}", run.stderr);
}

#[test]
fn usage_errors_exit_2_with_a_hint() {
    let site = Site::fixture("basic");
    for (args, says) in [
        (&["check", "extra"][..], "unexpected argument 'extra'"),
        (&["chekc"][..], "tip: a similar subcommand exists: 'check'"),
        (&["check", "--strict"][..], "unexpected argument '--strict'"),
        (
            &["build", "--port", "1"][..],
            "unexpected argument '--port'",
        ),
        (&[][..], "Usage: attnbook"),
    ] {
        let run = site.run(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
    }
    assert!(
        !site.path("public").exists(),
        "a usage error builds nothing"
    );
}

#[test]
fn new_scaffolds_the_next_chapter_and_it_builds() {
    let site = Site::fixture("basic");
    let run = site.run(&["new", "attention-variants", "--title", "注意力的变体"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("created content/03-attention-variants.md"),
        "{}",
        run.stdout
    );
    let text = site.read("content/03-attention-variants.md");
    assert!(
        text.starts_with("+++\ntitle = \"注意力的变体\"\nnumber = 3\n"),
        "{text}"
    );
    // The shape EDITORIAL.md asks for, with a seed.
    for part in [
        "seed = ",
        "## 正文",
        "## 小结",
        "## 练习",
        "<details>\n<summary>答案</summary>",
        "references.yaml",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
    let build = site.run(&["build", "--strict"]);
    assert_eq!(build.code, 0, "{}", build.stderr);
    let page = site.read("public/attention-variants/index.html");
    assert!(page.contains(">0.67</a>"), "{page}");
    assert!(page.contains("<details>"), "{page}");
    let verify = site.run(&["verify", "attention-variants"]);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    assert_eq!(
        site.run(&["new", "attention-variants"]).code,
        2,
        "an existing slug is refused"
    );
    // A path already taken by something that is not a chapter is never replaced either.
    std::fs::create_dir(site.path("content/04-taken.md")).unwrap();
    let taken = site.run(&["new", "taken"]);
    assert_eq!(taken.code, 2, "{}", taken.stderr);
    assert!(
        taken.stderr.contains("never overwrites"),
        "{}",
        taken.stderr
    );
    assert!(site.path("content/04-taken.md").is_dir());
    let bad = site.run(&["new", "Bad Slug"]);
    assert!(bad.stderr.contains("is not a valid slug"));
}

#[test]
fn build_timings_lists_every_stage_and_the_total() {
    let site = Site::fixture("serve-plain");
    let run = site.run(&["build", "--timings"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with("built 2 chapter(s)"), "{}", run.stdout);
    assert_eq!(lines[1], "timings (wall):");
    for stage in ["content + markdown", "chapter bodies", "pages", "write"] {
        assert!(
            lines
                .iter()
                .any(|l| l.trim_start().starts_with(stage) && l.contains(" ms")),
            "no `{stage}` line: {}",
            run.stdout
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains("math") && l.contains("(side by side)"))
    );
    assert!(lines.last().unwrap().trim_start().starts_with("total"));
    // Without the flag, one line.
    let plain = site.run(&["build"]);
    assert_eq!(plain.stdout.lines().count(), 1, "{}", plain.stdout);
}

/// Redteam-3 D1, D11: `new` applies the loader's slug rule (reserved names and `--` too),
/// and a title it cannot write as one line of TOML is refused, not written broken.
#[test]
fn new_refuses_what_the_loader_would_refuse() {
    let site = Site::fixture("basic");
    for slug in ["tags", "verification", "a--b", "figures", "print"] {
        let run = site.run(&["new", slug]);
        assert_eq!(run.code, 2, "{slug}: {}", run.stdout);
        assert!(run.stderr.contains("is not a valid slug"), "{}", run.stderr);
    }
    for title in ["line1\nline2", "bell\u{7}", "tab\there"] {
        let run = site.run(&["new", "nl", "--title", title]);
        assert_eq!(run.code, 2, "{title:?}: {}", run.stdout);
        assert!(run.stderr.contains("control character"), "{}", run.stderr);
    }
    assert!(!site.path("content/03-nl.md").exists());
    // A title with quotes and backslashes is written as valid TOML; the site still loads.
    let run = site.run(&["new", "quoted", "--title", r#"a "b" \c"#]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let check = site.run(&["check"]);
    assert_eq!(check.code, 0, "{}", check.stderr);
}
