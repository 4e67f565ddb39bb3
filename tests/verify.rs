//! `attnbook verify` and `verify --fix`: the prose checked against every rerun.

mod common;

use common::Site;

#[test]
fn a_clean_site_verifies() {
    let site = Site::fixture("basic");
    let run = site.run(&["verify"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    // The summary is the whole report of a clean site, counts exact.
    assert_eq!(run.stdout, "3 quotes, 1 outputs checked, 0 drifted\n");
}

#[test]
fn a_changed_number_fails_and_fix_restores_exactly_that_number() {
    let site = Site::fixture("basic");
    let path = "content/01-first.md";
    let original = site.read(path);
    site.write(
        path,
        &original.replace("[1.00]{=sum ±1e-12}", "[1.50]{=sum ±1e-12}"),
    );
    let run = site.run(&["verify"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        "content/01-first.md:40:8  quoted 1.50  rerun 1  (±1e-12)\n\
         3 quotes, 1 outputs checked, 1 drifted\n"
    );
    let fixed = site.run(&["verify", "--fix"]);
    assert_eq!(fixed.code, 0, "{}", fixed.stderr);
    assert!(
        fixed
            .stdout
            .contains("fixed 1 place(s) in content/01-first.md")
    );
    assert_eq!(site.read(path), original, "--fix changes no other byte");
    assert_eq!(site.run(&["verify"]).code, 0);
}

#[test]
fn fix_rewrites_numbers_and_outputs_and_refreshes_a_bound_quote_but_never_its_bound() {
    let site = Site::fixture("quotes");
    let before = site.read("content/01-q.md");
    let run = site.run(&["verify"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains("pinned output differs from the rerun"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("-x0 = 0.0000"));
    let json = site.run(&["verify", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).expect("json report");
    assert_eq!(report["drifted"], 3, "{report}");
    assert_eq!(site.run(&["verify", "--fix"]).code, 0);
    let after = site.read("content/01-q.md");
    // The rerun (3) holds the bound but no longer reads 40: the number is refreshed, the
    // bound is the author's and stays.
    assert!(after.contains("[3x]{=ratio >=2}"), "{after}");
    assert!(
        after.contains("[3.1x]{=ratio ~5%} and [3.0x]{=ratio ~5%} in one"),
        "{after}"
    );
    assert!(!after.contains("9.99"));
    let changed: Vec<(&str, &str)> = before
        .lines()
        .zip(after.lines())
        .filter(|(a, b)| a != b)
        .collect();
    assert_eq!(
        changed.len(),
        3,
        "the output line and the paragraph's two lines: {changed:?}"
    );
    assert_eq!(site.run(&["verify"]).code, 0);
}

#[test]
fn verify_names_unknown_chapters() {
    let site = Site::fixture("basic");
    let run = site.run(&["verify", "frist"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("no chapter `frist`") && run.stderr.contains("did you mean `first`?"),
        "{}",
        run.stderr
    );
}

#[test]
fn fix_fills_an_empty_pinned_output_inside_its_fences() {
    let site = Site::fixture("basic");
    let path = "content/01-first.md";
    let original = site.read(path);
    site.write(
        path,
        &original.replace("```output\nsum = 1.000\n```", "```output\n```"),
    );
    let run = site.run(&["verify"]);
    assert_eq!(
        run.code, 1,
        "an empty pinned output differs from real output: {}",
        run.stdout
    );
    assert_eq!(site.run(&["verify", "--fix"]).code, 0);
    assert_eq!(site.read(path), original);
}

#[test]
fn a_failing_bound_keeps_its_bound_gets_a_fresh_number_and_keeps_failing() {
    let site = Site::fixture("quotes");
    let path = "content/01-q.md";
    site.write(
        path,
        &site
            .read(path)
            .replace("[40x]{=ratio >=2}", "[40x]{=ratio >=5}"),
    );
    let fixed = site.run(&["verify", "--fix"]);
    assert_eq!(fixed.code, 1, "{}{}", fixed.stdout, fixed.stderr);
    assert!(
        fixed
            .stdout
            .contains("1 bound or band quote(s) still break their rule"),
        "{}",
        fixed.stdout
    );
    assert!(site.read(path).contains("[3x]{=ratio >=5}"));
    let run = site.run(&["verify"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains("quoted 3  rerun 3  (>=5)"),
        "{}",
        run.stdout
    );
}

/// `verify CHAPTER` reruns that chapter and the chapters its quotes read, and no other: a
/// chapter whose experiment panics does not stop the check of an unrelated one.
#[test]
fn verify_named_chapters_reruns_only_what_they_read() {
    let site = Site::fixture("basic");
    site.write(
        "content/03-broken.md",
        "+++\ntitle = \"第三篇\"\nnumber = 3\n+++\n\n```rust,experiment\npanic!(\"this chapter is broken\");\n```\n",
    );
    let all = site.run(&["verify"]);
    assert_eq!(all.code, 2, "{}", all.stderr);
    assert!(
        all.stderr.contains("this chapter is broken"),
        "{}",
        all.stderr
    );

    // `second` quotes `first/sum`: first reruns, broken does not.
    let run = site.run(&["verify", "second"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("1 quotes"), "{}", run.stdout);
    assert!(!run.stderr.contains("broken"), "{}", run.stderr);
}

/// A chapter read only through a relative bound or a claim's rule is rerun too, and so is a
/// chapter that one reads in turn: `verify third` reads `second/`'s values in a bound, and
/// `second` quotes `first/sum`.
#[test]
fn verify_named_chapters_follows_bounds_claims_and_their_chapters() {
    let site = Site::fixture("basic");
    site.write(
        "content/02-second.md",
        "+++\ntitle = \"第二篇\"\nnumber = 2\n+++\n\n```rust,experiment\nlab.value(\"two\", 2.0);\n```\n\n引用上一篇的值：[1.0]{=first/sum ±1e-12}。\n",
    );
    site.write(
        "content/03-third.md",
        "+++\ntitle = \"第三篇\"\nnumber = 3\n+++\n\n```rust,experiment\nlab.value(\"three\", 3.0);\n```\n\n[3]{=three > second/two}，[比一大]{? second/two > 1}。\n",
    );
    for chapter in ["third", "content/03-third.md"] {
        let run = site.run(&["verify", chapter]);
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("1 quotes"), "{}", run.stdout);
        assert!(run.stdout.contains("1 claims"), "{}", run.stdout);
    }
}

#[test]
fn fix_refreshes_a_band_quote_number_and_never_its_band() {
    let site = Site::fixture("quotes");
    let path = "content/01-q.md";
    let original = site.read(path);
    // The rerun (3) lies in the band but no longer rounds to the quoted 40: `--fix` refreshes
    // the number (the fixture's wrong `x.1` is fixed too), and nothing is left failing.
    site.write(
        path,
        &original.replace("[40x]{=ratio >=2}", "[40x]{=ratio 2..4}"),
    );
    let fixed = site.run(&["verify", "--fix"]);
    assert_eq!(fixed.code, 0, "{}{}", fixed.stdout, fixed.stderr);
    assert!(site.read(path).contains("[3x]{=ratio 2..4}"));
    // Outside the band: the number is refreshed, the band stays, the quote keeps failing.
    site.write(
        path,
        &original.replace("[40x]{=ratio >=2}", "[40x]{=ratio 3.5..4}"),
    );
    let fixed = site.run(&["verify", "--fix"]);
    assert_eq!(fixed.code, 1, "{}{}", fixed.stdout, fixed.stderr);
    assert!(
        fixed
            .stdout
            .contains("1 bound or band quote(s) still break their rule"),
        "{}",
        fixed.stdout
    );
    assert!(site.read(path).contains("[3x]{=ratio 3.5..4}"));
    let run = site.run(&["verify"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains("quoted 3  rerun 3  (in 3.5..4)"),
        "{}",
        run.stdout
    );
}
