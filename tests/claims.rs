//! Claims (`[statement]{? rule}`) and bounds relative to other values: every kind holds on
//! the fixture, every kind fails when the experiment changes, and the page, `verify`,
//! `verify --fix`, `build --strict` and `check` say so.

mod common;

use common::Site;

const CHAPTER: &str = "content/01-claims.md";

#[test]
fn every_kind_of_claim_and_relative_bound_holds_and_is_marked_on_the_page() {
    let site = Site::fixture("claims");
    let run = site.run(&["verify"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout,
        "4 quotes, 5 claims, 0 outputs checked, 0 drifted\n"
    );
    let build = site.run(&["build", "--strict"]);
    assert_eq!(build.code, 0, "{}", build.stderr);
    let page = site.read("public/claims/index.html");
    assert_eq!(
        page.matches("<span class=\"claim\" title=").count(),
        5,
        "{page}"
    );
    assert_eq!(page.matches("class=\"claim-mark\"").count(), 5);
    // The hover text fills the numbers in; the mark links to the line that recorded them.
    assert!(
        page.contains("max(acc.rel.*) &lt; acc.sin：acc.rel.0 = 0.8, acc.rel.1 = 0.91, acc.rel.2 = 0.88, max(acc.rel.*) = 0.91, acc.sin = 0.95；成立"),
        "{page}"
    );
    assert!(
        page.contains("<a class=\"claim-mark\" href=\"#L11\""),
        "{page}"
    );
    let verification = site.read("public/verification/index.html");
    assert!(
        verification.contains("用实验检验的论断 5 条：5 条成立"),
        "{verification}"
    );
}

/// The experiment changes so that every claim and relative bound of the chapter is false.
fn broken(site: &Site) {
    let text = site
        .read(CHAPTER)
        .replace("0.65 + 0.01", "0.85 + 0.01")
        .replace("(\"acc.sin\", 0.95)", "(\"acc.sin\", 0.90)")
        .replace("(\"walk.max_diff\", 0.0)", "(\"walk.max_diff\", 1e-13)")
        .replace("(\"mem.flash\", 2.07)", "(\"mem.flash\", 2.2)")
        .replace("0.80, 0.91, 0.88", "0.80, 0.97, 0.93");
    site.write(CHAPTER, &text);
}

#[test]
fn every_kind_fails_with_its_place_rule_and_values_and_fix_never_touches_a_claim() {
    let site = Site::fixture("claims");
    broken(&site);
    let run = site.run(&["verify"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    for expected in [
        "content/01-claims.md:21:6  claim does not hold: all(mha.acc.seed.* > mqa.acc.seed.*)  [mha.acc.seed.0 = 0.8, mqa.acc.seed.0 = 0.85,",
        "content/01-claims.md:22:1  claim does not hold: max(acc.rel.*) < acc.sin  [acc.rel.0 = 0.8, acc.rel.1 = 0.97, acc.rel.2 = 0.93, max(acc.rel.*) = 0.97, acc.sin = 0.9]",
        "content/01-claims.md:23:1  claim does not hold: mean(mha.acc.seed.*) - mean(mqa.acc.seed.*) > 0.1 and count(mha.acc.seed.*) == 5",
        "content/01-claims.md:25:12  quoted 0  rerun 1e-13  (==0 (= 0))",
        "content/01-claims.md:26:5  quoted 2.07  rerun 2.071  (== mem.flash ±0.01 (= 2.2))",
        "content/01-claims.md:26:",
        "content/01-claims.md:28:1  claim does not hold: 0.9 <= max(acc.rel.*) <= 0.95 or abs(acc.sin - 1) < 1e-9",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(expected)),
            "no line starts with {expected:?}:\n{}",
            run.stdout
        );
    }
    assert!(
        run.stdout
            .contains("quoted 0.92  rerun 0.93  (< acc.sin (= 0.9))"),
        "{}",
        run.stdout
    );
    // The claim that no run is below 0.6 still holds; four claims and three bounds fail.
    assert!(!run.stdout.contains("not any("), "{}", run.stdout);
    assert!(
        run.stdout
            .ends_with("4 quotes, 5 claims, 0 outputs checked, 7 drifted\n"),
        "{}",
        run.stdout
    );
    let before = site.read(CHAPTER);
    let fix = site.run(&["verify", "--fix"]);
    assert_eq!(fix.code, 1, "{}{}", fix.stdout, fix.stderr);
    assert!(
        fix.stdout
            .contains("4 claim(s) do not hold: --fix never rewrites a claim"),
        "{}",
        fix.stdout
    );
    let after = site.read(CHAPTER);
    // The numbers of the relative bounds are refreshed; no claim and no rule changed.
    for line in before.lines().filter(|l| l.contains("{?")) {
        assert!(
            after.contains(line),
            "--fix changed the claim line {line:?}"
        );
    }
    assert!(
        after.contains("{=ex.mib == mem.flash ±0.01}") && after.contains("{=walk.max_diff ==0}")
    );
}

#[test]
fn a_failing_claim_warns_in_build_fails_strict_and_check_evaluates_cached_results() {
    let site = Site::fixture("claims");
    assert_eq!(site.run(&["build"]).code, 0);
    // `check` runs nothing: a rule that the cached results contradict is a finding.
    let text = site
        .read(CHAPTER)
        .replace("mean(mqa.acc.seed.*) > 0.1", "mean(mqa.acc.seed.*) > 0.5");
    site.write(CHAPTER, &text);
    let check = site.run(&["check"]);
    assert_eq!(check.code, 1, "{}{}", check.stdout, check.stderr);
    assert!(
        check.stderr.contains("claim does not hold"),
        "{}",
        check.stderr
    );
    assert!(
        check.stderr.contains("content/01-claims.md:23:1"),
        "{}",
        check.stderr
    );
    broken(&site);
    let build = site.run(&["build"]);
    assert_eq!(build.code, 0, "{}", build.stderr);
    assert!(
        build.stderr.contains("warning: claim does not hold"),
        "{}",
        build.stderr
    );
    let page = site.read("public/claims/index.html");
    assert!(page.contains("<span class=\"claim fails\""), "{page}");
    let strict = site.run(&["build", "--strict"]);
    assert_ne!(strict.code, 0, "{}", strict.stderr);
}

#[test]
fn malformed_and_unknown_rules_are_errors_at_their_column_and_escapes_stay_text() {
    let site = Site::fixture("claims");
    let original = site.read(CHAPTER);
    let with = |lines: &str| original.replace("。\n\n逐位相同", &format!("。\n{lines}\n逐位相同"));
    // Malformed rules stop the build at load, every one of them reported at its column.
    site.write(
        CHAPTER,
        &with("[坏的规则]{? acc.sin <}\n[一族值不能单独出现]{? acc.rel.* > 1}\n"),
    );
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    for expected in [
        "content/01-claims.md:24:19",
        "the rule ends too early",
        "content/01-claims.md:25:15",
        "`acc.rel.*` names a family of values",
    ] {
        assert!(
            run.stderr.contains(expected),
            "{expected:?} missing:\n{}",
            run.stderr
        );
    }
    // A name no experiment recorded is an error once the experiments ran.
    site.write(CHAPTER, &with("[未知的值]{? nope > 1}\n"));
    let run = site.run(&["build"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("unknown value `nope`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("content/01-claims.md:24:"),
        "{}",
        run.stderr
    );
    // A backslash makes the claim text.
    site.write(CHAPTER, &with("\\[不是论断]{? acc.sin > 1}\n"));
    let run = site.run(&["build", "--strict"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let page = site.read("public/claims/index.html");
    assert!(page.contains("[不是论断]{? acc.sin &gt; 1}"), "{page}");
}
