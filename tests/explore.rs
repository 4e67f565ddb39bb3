//! Explorable passages (`param="name: grid; default v"`, `lab.param`, `{{explore: name}}`):
//! every grid point is run, cached and rendered; the default shows without JavaScript;
//! `verify` checks the passage's quotes and claims at every point and names the point.

mod common;

use common::Site;

const CHAPTER: &str = "content/01-temperature.md";

/// The content of the passage between the view's opening and the end of the passage.
fn passage(page: &str) -> &str {
    let start = page.find("<div class=\"explore\"").expect("a passage");
    let end = start + page[start..].find("\n</div>\n<p>在默认").expect("its end");
    &page[start..end]
}

#[test]
fn every_point_is_rendered_the_default_shows_without_script_and_a_second_build_reruns_nothing() {
    let site = Site::fixture("explore");
    let build = site.run(&["build", "--strict"]);
    assert_eq!(build.code, 0, "{}", build.stderr);
    let said = format!("{}{}", build.stdout, build.stderr);
    assert!(said.contains("experiments: 1 run, 0 cached"), "{said}");
    let page = site.read("public/temperature/index.html");
    let passage = passage(&page);
    // The control ships hidden (the script shows it) and is labelled and announced.
    assert!(
        passage.contains("<div class=\"explore-control\" hidden>"),
        "{passage}"
    );
    assert!(passage.contains("<label for=\"explore-1-range\">调节参数 tau</label>"));
    assert!(passage.contains(
        "<input type=\"range\" id=\"explore-1-range\" min=\"0\" max=\"2\" step=\"1\" value=\"1\" aria-valuetext=\"tau = 1\""
    ));
    assert!(
        passage.contains("<output for=\"explore-1-range\" aria-live=\"polite\">tau = 1</output>")
    );
    assert!(passage.contains("<noscript>"));
    // The default point is live; the others are inert templates, each with its own numbers.
    let view = passage
        .find("<div class=\"explore-view\" data-point=\"1\">")
        .expect("view");
    let first = passage.find("<template").expect("templates");
    assert!(view < first);
    let live = &passage[view..first];
    assert!(live.contains(">0.665</a>"), "{live}");
    assert!(live.contains(">0.090</a>"), "{live}");
    assert!(live.contains("温度 1 下的权重"), "{live}");
    let at = |k: usize| {
        let start = passage
            .find(&format!(
                "<template class=\"explore-point\" data-point=\"{k}\">"
            ))
            .unwrap_or_else(|| panic!("no template for point {k}: {passage}"));
        let end = start + passage[start..].find("</template>").expect("closed");
        &passage[start..end]
    };
    // softmax([1, 2, 3] / 0.5) and / 2.
    assert!(at(0).contains(">0.867</a>"), "{}", at(0));
    assert!(at(0).contains(">0.016</a>"), "{}", at(0));
    assert!(at(0).contains("温度 0.5 下的权重"));
    assert!(at(2).contains(">0.506</a>"), "{}", at(2));
    assert!(at(2).contains(">0.186</a>"), "{}", at(2));
    assert!(at(2).contains("温度 2 下的权重"));
    assert_eq!(passage.matches("<svg").count(), 3, "one figure per point");
    // Outside the passage only the default is shown.
    assert!(page.contains("<p>在默认温度下，最大权重是 <a class=\"quote\""));
    // Each point is cached on its own; a second build runs nothing.
    for name in ["temperature", "temperature~tau=0.5", "temperature~tau=2"] {
        assert!(
            site.path(&format!(".attnbook/cache/{name}.json")).is_file(),
            "no cache entry {name}"
        );
    }
    let again = site.run(&["build", "--strict"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let said = format!("{}{}", again.stdout, again.stderr);
    assert!(said.contains("experiments: 0 run, 1 cached"), "{said}");
    assert_eq!(site.read("public/temperature/index.html"), page);
    let verify = site.run(&["verify"]);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    // 3 quotes and 1 claim at the default, the passage's 2 quotes and 1 claim at 2 more points.
    assert_eq!(
        verify.stdout,
        "7 quotes, 3 claims, 0 outputs checked, 0 drifted\n"
    );
}

#[test]
fn a_claim_false_at_one_point_fails_verify_naming_the_point_and_fix_leaves_it() {
    let site = Site::fixture("explore");
    let text = site.read(CHAPTER).replace("w.max > 0.34", "w.max > 0.55");
    site.write(CHAPTER, &text);
    let verify = site.run(&["verify"]);
    assert_eq!(verify.code, 1, "{}{}", verify.stdout, verify.stderr);
    assert!(
        verify.stdout.contains(
            "content/01-temperature.md:23:45  at tau = 2:  claim does not hold: w.max > 0.55  [w.max = 0.5065]"
        ),
        "{}",
        verify.stdout
    );
    assert!(!verify.stdout.contains("tau = 0.5"), "{}", verify.stdout);
    assert!(verify.stdout.ends_with("1 drifted\n"), "{}", verify.stdout);
    let fix = site.run(&["verify", "--fix"]);
    assert_eq!(fix.code, 1, "{}{}", fix.stdout, fix.stderr);
    assert!(
        fix.stdout
            .contains("fail at a grid point other than the default"),
        "{}",
        fix.stdout
    );
    assert_eq!(site.read(CHAPTER), text, "--fix writes nothing for a point");
    let build = site.run(&["build"]);
    assert_eq!(build.code, 0, "{}", build.stderr);
    assert!(
        build
            .stderr
            .contains("claim does not hold: w.max > 0.55 (at tau = 2)"),
        "{}",
        build.stderr
    );
}

#[test]
fn a_bound_quote_is_checked_at_every_point_and_a_rounded_one_at_the_default_only() {
    let site = Site::fixture("explore");
    // A rounded quote drifts only at the default; a bound at every point it breaks.
    let text = site
        .read(CHAPTER)
        .replace("[0.090]{=w.min}", "[0.090]{=w.min <=0.1}");
    site.write(CHAPTER, &text);
    let verify = site.run(&["verify"]);
    assert_eq!(verify.code, 1, "{}{}", verify.stdout, verify.stderr);
    assert!(
        verify
            .stdout
            .contains("at tau = 2:  quoted 0.090  rerun 0.1863"),
        "{}",
        verify.stdout
    );
    assert_eq!(
        verify.stdout.matches("  quoted ").count(),
        1,
        "{}",
        verify.stdout
    );
}

#[test]
fn malformed_parameters_and_passages_are_errors_at_their_place() {
    let site = Site::fixture("explore");
    site.write(
        CHAPTER,
        "+++\ntitle = \"坏\"\nnumber = 1\n+++\n\n\
```rust,experiment,param=\"a: ; default 1\"\nlet x = 1;\n```\n\n\
```rust,experiment,param=\"b: 1, 2; default 3\"\nlet y = 1;\n```\n\n\
```rust,experiment,param=\"c: 1,2,3,4,5,6,7,8,9; default 1\"\nlet z = 1;\n```\n\n\
{{explore: nope}}\n\n文字。\n\n{{/explore}}\n\n\
{{explore}}\n\n{{/explore}}\n\n\
> {{explore: a}}\n\n\
{{/explore}}\n",
    );
    let build = site.run(&["build"]);
    assert_eq!(build.code, 2, "{}", build.stderr);
    let err = &build.stderr;
    for expected in [
        "content/01-temperature.md:6:20: error: `param=\"a: ; default 1\"`: the grid of `a` is empty",
        "content/01-temperature.md:10:20: error: `param=\"b: 1, 2; default 3\"`: the default `3` is not in the grid of `b` (1, 2)",
        "content/01-temperature.md:14:20: error: `param=\"c: 1,2,3,4,5,6,7,8,9; default 1\"`: the grid of `c` has 9 values; at most 8",
        "content/01-temperature.md:18:1: error: unknown parameter `nope` in `{{explore: nope}}`",
        "content/01-temperature.md:24:1: error: an explorable passage names no parameter",
        "content/01-temperature.md:28:3: error: an explorable passage's marker stands inside a list, block quote or footnote",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in\n{err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn an_undeclared_parameter_read_by_a_block_is_an_error_at_its_line() {
    let site = Site::fixture("explore");
    let text = site
        .read(CHAPTER)
        .replace("lab.param(\"tau\")", "lab.param(\"temp\")");
    site.write(CHAPTER, &text);
    let build = site.run(&["build"]);
    assert_eq!(build.code, 2, "{}", build.stderr);
    assert!(
        build.stderr.contains("content/01-temperature.md:9:15: error: experiment block 1 panicked: unknown parameter `temp`: declared: tau"),
        "{}",
        build.stderr
    );
}
