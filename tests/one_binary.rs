//! Many stale chapters compile as one binary, and nothing else about them changes: each runs
//! as its own process with the results it would have had from its own binary, an edit of one
//! chapter recompiles only that chapter's binary, and a chapter that cannot be compiled
//! beside the others (an error, or items that clash) still stops only itself.

mod common;

use std::time::Duration;

use common::{Run, Site};

fn build(site: &Site) -> Run {
    site.run_within(&["build"], Duration::from_secs(600))
}

/// Builds `site`, which must succeed with `summary` (e.g. "4 run, 0 cached") in its report.
fn build_ok(site: &Site, summary: &str) {
    let run = build(site);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(&format!("experiments: {summary}")),
        "{}",
        run.stdout
    );
}

/// A chapter whose block prints the name of the binary it runs in and records a value drawn
/// from the chapter's seed; `extra` is more code for the block.
fn chapter(number: usize, extra: &str) -> String {
    format!(
        "+++\ntitle = \"C{number}\"\nnumber = {number}\n+++\n\n```rust,experiment\n{extra}\n\
         let exe = std::env::current_exe().unwrap();\n\
         println!(\"binary {{}}\", exe.file_name().unwrap().to_string_lossy());\n\
         let drawn: f64 = lab.randn(64).sum();\n\
         lab.value(\"drawn\", drawn);\n```\n\n[0]{{=drawn}}\n"
    )
}

/// The site with chapters `01-c1.md` ... of `extras` (one chapter per entry).
fn site_of(extras: &[&str]) -> Site {
    let site = Site::fixture("slow");
    std::fs::remove_file(site.path("content/01-a.md")).unwrap();
    for (i, extra) in extras.iter().enumerate() {
        site.write(
            &format!("content/0{}-c{}.md", i + 1, i + 1),
            &chapter(i + 1, extra),
        );
    }
    site
}

/// What `slug`'s block printed and recorded in its last run (the experiment cache).
fn last_run(site: &Site, slug: &str) -> (String, f64) {
    let text = site.read(&format!(".attnbook/cache/{slug}.json"));
    let cached: serde_json::Value = serde_json::from_str(&text).unwrap();
    let run = &cached["run"];
    let stdout = run["blocks"][0]["stdout"].as_str().unwrap().to_string();
    let drawn = run["results"]["values"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "drawn")
        .unwrap()["data"][0]
        .as_f64()
        .unwrap();
    (stdout, drawn)
}

fn binary_of(stdout: &str) -> &str {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("binary "))
        .unwrap_or_else(|| panic!("no binary line in {stdout:?}"))
}

#[test]
fn a_cold_build_runs_every_chapter_from_one_binary_and_an_edit_from_its_own() {
    let site = site_of(&["", "", "", ""]);
    build_ok(&site, "4 run, 0 cached");
    let first: Vec<(String, f64)> = (1..=4).map(|i| last_run(&site, &format!("c{i}"))).collect();
    for (stdout, _) in &first {
        assert!(binary_of(stdout).ends_with("-series"), "{stdout}");
    }
    // Each chapter ran as its own process with its own seed.
    for (i, (_, a)) in first.iter().enumerate() {
        for (_, b) in &first[i + 1..] {
            assert_ne!(a, b, "two chapters drew the same numbers");
        }
    }
    // A comment changes chapter 2's blocks (so its key) and nothing it computes: it runs
    // again, from its own binary, with the very same result; the others stay cached.
    let edited = chapter(2, "// edited");
    site.write("content/02-c2.md", &edited);
    build_ok(&site, "1 run, 3 cached");
    let (stdout, drawn) = last_run(&site, "c2");
    let own = binary_of(&stdout);
    assert!(
        !own.ends_with("-series") && own.contains("-c2-"),
        "{stdout}"
    );
    assert_eq!(drawn.to_bits(), first[1].1.to_bits());
}

#[test]
fn chapters_that_cannot_share_a_binary_compile_alone_and_an_error_stops_only_its_chapter() {
    // Chapters 1 and 2 each export a symbol of the same name: fine in binaries of their own,
    // a clash in one binary. Every chapter runs, those two from binaries of their own.
    let clash = "#[unsafe(no_mangle)]\npub extern \"C\" fn attnbook_test_clash() {}";
    let site = site_of(&[clash, clash, "", ""]);
    build_ok(&site, "4 run, 0 cached");
    for i in 1..=4 {
        let (stdout, _) = last_run(&site, &format!("c{i}"));
        assert!(binary_of(&stdout).contains(&format!("-c{i}-")), "{stdout}");
    }
    // Four stale chapters again, no clash, and a type error in chapter 4: one error, at its
    // place, and the three others ran.
    let key = |i: usize| {
        let text = site.read(&format!(".attnbook/cache/c{i}.json"));
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["key"].clone()
    };
    let before: Vec<_> = (1..=3).map(key).collect();
    for i in 1..=3 {
        site.write(&format!("content/0{i}-c{i}.md"), &chapter(i, "// again"));
    }
    site.write("content/04-c4.md", &chapter(4, "let oops: f64 = \"text\";"));
    let run = build(&site);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let errors = run.error_lines();
    assert_eq!(errors.len(), 1, "{}", run.stderr);
    assert!(
        errors[0].starts_with("content/04-c4.md:7:17: error"),
        "{}",
        run.stderr
    );
    for i in 1..=3 {
        assert_ne!(key(i), before[i - 1], "chapter {i} did not run again");
    }
}
