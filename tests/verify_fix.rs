//! Non-finite reruns and `verify --fix`: nothing lost (an edit saved during the run, a chapter
//! that is a symbolic link) and nothing unparsable written (NaN or inf into a quote or output).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Site;

/// Every tolerance form fails on an infinite or NaN rerun and says why; `build` shows the same
/// quotes as drift (a warning that `--strict` makes an error).
#[test]
fn non_finite_reruns_fail_every_rule_in_verify_and_build() {
    let site = Site::fixture("nonfinite");
    let run = site.run(&["verify"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    for line in [
        "content/01-nf.md:18:11  quoted 0.13  rerun inf (not a finite number)  (±0.01)",
        "quoted 0.13  rerun inf (not a finite number)  (~10%)",
        "quoted 0.13  rerun NaN (not a finite number)  (rounding to 2 decimals)",
        "quoted 0.13  rerun inf (not a finite number)  (>=0.1)",
        "quoted 0.13  rerun -inf (not a finite number)  (<=0.2)",
    ] {
        assert!(run.stdout.contains(line), "{line}\n{}", run.stdout);
    }
    assert!(
        run.stdout
            .ends_with("\n6 quotes, 1 outputs checked, 7 drifted\n"),
        "{}",
        run.stdout
    );

    let build = site.run(&["build"]);
    assert_eq!(build.code, 0, "drift only warns: {}", build.stderr);
    let warnings = build
        .stderr
        .matches("rerun inf (not a finite number)")
        .count();
    assert_eq!(warnings, 3, "{}", build.stderr);
    let page = site.read("public/nf/index.html");
    assert_eq!(page.matches("quote drift").count(), 6, "{page}");
    let strict = site.run(&["build", "--strict"]);
    assert_eq!(strict.code, 2, "{}", strict.stderr);
}

/// `--fix` writes no NaN or inf: each such quote and the output is an error at its place and is
/// left as it is, while the finite drift in the same chapter is fixed.
#[test]
fn fix_never_writes_a_non_finite_rerun() {
    let site = Site::fixture("nonfinite");
    let path = "content/01-nf.md";
    let before = site.read(path);
    let fixed = site.run(&["verify", "--fix"]);
    assert_eq!(fixed.code, 2, "{}{}", fixed.stdout, fixed.stderr);
    for error in [
        "content/01-nf.md:18:11: error: the rerun is inf (not a finite number): --fix leaves the quote 0.13 as it is",
        "content/01-nf.md:18:38: error: the rerun is inf",
        "error: the rerun is NaN (not a finite number)",
        "content/01-nf.md:15:1: error: the rerun output prints NaN or inf",
        // A bound's number is refreshed like any other, so a non-finite rerun is refused too.
        "content/01-nf.md:19:9: error: the rerun is inf (not a finite number): --fix leaves the quote 0.13 as it is",
        "content/01-nf.md:19:30: error: the rerun is -inf (not a finite number)",
    ] {
        assert!(fixed.stderr.contains(error), "{error}\n{}", fixed.stderr);
    }
    assert!(
        fixed
            .stdout
            .contains("fixed 1 place(s) in content/01-nf.md"),
        "{}",
        fixed.stdout
    );
    assert!(
        fixed
            .stderr
            .contains("error: 6 error(s), 0 warning(s); only the fixes listed were written"),
        "the summary does not claim that nothing was written: {}",
        fixed.stderr
    );
    assert_eq!(
        site.read(path),
        before.replace("[0.40]{=ok}", "[0.50]{=ok}"),
        "only the finite drift is rewritten"
    );
}

/// The chapter of `fix_rewrites_byte_for_byte`, with `\n` line ends; the test adds a BOM and
/// CRLF. Two fixes on one line, grouping, U+2212, an exponent, a broken bound (its number
/// refreshed, its bound kept), a bound that holds with a stale number, and a drifted output
/// printed without a final newline.
const MANY_FORMS: &str = "+++
title = \"A\"
number = 1
seed = 1
+++

```rust,experiment
lab.value(\"a\", 0.1312);
lab.value(\"big\", 1234567.0);
lab.value(\"neg\", -0.0213);
lab.value(\"tiny\", 0.000213);
print!(\"x = 1.50\\ny = 2\");
```

```output
x = 1.00
y = 2
```

Two on a line: [0.08]{=a} and [0.09]{=a ±0.01}; [1,000,000]{=big}; [−0.05]{=neg}; [1.1e-4]{=tiny}; [5]{=a >=1}; [0.5]{=a <=0.2}.
";

/// `--fix` changes the drifted numbers and output and no other byte: the BOM, the CRLF line
/// ends (the rewritten output gets them too, and ends its line before the fence) and the
/// file's permissions stay.
#[cfg(unix)]
#[test]
fn fix_rewrites_byte_for_byte() {
    use std::os::unix::fs::PermissionsExt;
    let site = Site::fixture("quotes");
    std::fs::remove_file(site.path("content/01-q.md")).unwrap();
    let crlf = |text: &str| format!("\u{feff}{}", text.replace('\n', "\r\n"));
    let path = "content/01-many.md";
    site.write(path, &crlf(MANY_FORMS));
    std::fs::set_permissions(site.path(path), std::fs::Permissions::from_mode(0o640)).unwrap();
    let fixed = site.run(&["verify", "--fix"]);
    assert_eq!(
        fixed.code, 1,
        "the bound stays a failure: {}{}",
        fixed.stdout, fixed.stderr
    );
    assert!(
        fixed
            .stdout
            .contains("fixed 8 place(s) in content/01-many.md"),
        "{}",
        fixed.stdout
    );
    let expected = MANY_FORMS
        .replace("x = 1.00\ny = 2\n", "x = 1.50\ny = 2\n")
        .replace("[0.08]{=a} and [0.09]", "[0.13]{=a} and [0.13]")
        .replace("[1,000,000]", "[1,234,567]")
        .replace("[−0.05]", "[−0.02]")
        .replace("[1.1e-4]", "[2.1e-4]")
        .replace("[5]{=a >=1}", "[0]{=a >=1}")
        .replace("[0.5]{=a <=0.2}", "[0.1]{=a <=0.2}");
    assert_eq!(
        std::fs::read(site.path(path)).unwrap(),
        crlf(&expected).into_bytes()
    );
    let mode = std::fs::metadata(site.path(path))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o640);
    assert_eq!(site.run(&["verify"]).code, 1, "only the bound is left");
}

/// A rerun output with a line that would close the pinned block's fence is not written: an
/// error says how to make room for it, and the chapter is left as it is.
#[test]
fn fix_never_writes_an_output_that_closes_its_fence() {
    let site = Site::fixture("quotes");
    std::fs::remove_file(site.path("content/01-q.md")).unwrap();
    let text = "+++\ntitle = \"F\"\nnumber = 1\n+++\n\n```rust,experiment\nprintln!(\"```\");\n```\n\n```output\nnothing\n```\n";
    site.write("content/01-f.md", text);
    let fixed = site.run(&["verify", "--fix"]);
    assert_eq!(fixed.code, 2, "{}{}", fixed.stdout, fixed.stderr);
    assert!(
        fixed.stderr.contains("content/01-f.md:11:1: error: the rerun output has a line that would close this pinned block's fence"),
        "{}",
        fixed.stderr
    );
    assert_eq!(site.read("content/01-f.md"), text);
}

/// A chapter that is a symbolic link is fixed at its target; the link stays a link.
#[test]
fn fix_writes_through_a_symlinked_chapter() {
    let site = Site::fixture("quotes");
    std::fs::create_dir(site.path("sources")).expect("mkdir");
    std::fs::rename(site.path("content/01-q.md"), site.path("sources/01-q.md")).expect("move");
    std::os::unix::fs::symlink("../sources/01-q.md", site.path("content/01-q.md"))
        .expect("symlink");
    let fixed = site.run(&["verify", "--fix"]);
    assert_eq!(fixed.code, 0, "{}{}", fixed.stdout, fixed.stderr);
    let link = std::fs::symlink_metadata(site.path("content/01-q.md")).expect("stat");
    assert!(link.is_symlink(), "the chapter is still a symbolic link");
    assert!(
        !site.read("sources/01-q.md").contains("9.99"),
        "the target is fixed"
    );
    assert_eq!(site.run(&["verify"]).code, 0);
}

const WAITING_CHAPTER: &str = r#"+++
title = "Waits"
number = 1
+++

```rust,experiment,timeout=120
// Tell the test the run has started, then wait (bounded) until it has edited the chapter.
let here = std::env::current_dir().unwrap();
std::fs::write(here.join("started"), "").unwrap();
let mut steps = 0;
while !here.join("go").exists() && steps < 3000 {
    std::thread::sleep(std::time::Duration::from_millis(20));
    steps += 1;
}
lab.value("x", 2.0);
```

The value is [1.0]{=x}.
"#;

/// An edit saved while the experiments run is kept: `--fix` refuses to overwrite the chapter,
/// says so, and a second `--fix` fixes the edited text.
#[test]
fn fix_keeps_an_edit_saved_during_the_run() {
    let site = Site::fixture("quotes");
    let path = "content/01-q.md";
    site.write(path, WAITING_CHAPTER);
    let edited = WAITING_CHAPTER.replace("The value is", "Edited during the run: the value is");
    let output = fix_while(&site, || site.write(path, &edited));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("content/01-q.md was edited while `verify --fix` ran")
            && stderr.contains("run `attnbook verify --fix` again"),
        "{stderr}"
    );
    assert_eq!(site.read(path), edited, "the edit survives");

    let again = fix_while(&site, || {});
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    assert_eq!(site.read(path), edited.replace("[1.0]{=x}", "[2.0]{=x}"));
}

/// Runs `verify --fix` on a site whose experiment waits for `go`: calls `during` once the
/// experiment has started, then lets it finish.
fn fix_while(site: &Site, during: impl FnOnce()) -> std::process::Output {
    let run = site.root().join(".attnbook/run");
    // A `started` left by an earlier run would be taken for this run's.
    for old in find(&run, "started") {
        std::fs::remove_file(old).expect("remove started");
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_attnbook"))
        .arg("--root")
        .arg(site.root())
        .args(["verify", "--fix"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run attnbook");
    let sandbox = wait_for_started(&run, &mut child);
    during();
    std::fs::write(sandbox.join("go"), "").expect("write go");
    child.wait_with_output().expect("wait for attnbook")
}

/// Waits (bounded) until the experiment has written `started` somewhere under `run` and returns
/// that directory, the block's working directory.
fn wait_for_started(run: &Path, child: &mut std::process::Child) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Some(started) = find(run, "started").first() {
            return started.parent().expect("sandbox dir").to_path_buf();
        }
        if let Some(status) = child.try_wait().expect("poll attnbook") {
            panic!("attnbook ended ({status}) before the experiment started");
        }
        assert!(Instant::now() < deadline, "the experiment never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn find(dir: &Path, name: &str) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name() == name)
        .map(walkdir::DirEntry::into_path)
        .collect()
}

/// Redteam-3 D2: a pinned output inside a blockquote or a list item is rewritten line by line
/// with its container's prefix (`> `, the item's indentation). Afterwards `verify` passes and a
/// second `--fix` changes nothing.
#[test]
fn fix_rewrites_a_pinned_output_inside_its_container() {
    let site = Site::fixture("quotes");
    std::fs::remove_file(site.path("content/01-q.md")).unwrap();
    let path = "content/01-c.md";
    let text = "+++\ntitle = \"C\"\nnumber = 1\n+++\n\n\
                > ```rust,experiment\n> println!(\"a = 1\\nb = 2\");\n> ```\n>\n\
                > ```output\n> a = 9\n> b = 9\n> ```\n\n\
                1. item\n\n   ```rust,experiment\n   println!(\"c = 3\\n\\nd = 4\");\n   ```\n\n\
                \x20  ```output\n   c = 9\n   ```\n\n- > ```rust,experiment\n  > println!(\"e\");\n  > ```\n\
                \x20 >\n  > ```output\n  > f\n  > ```\n";
    site.write(path, text);
    let fixed = site.run(&["verify", "--fix"]);
    assert_eq!(fixed.code, 0, "{}{}", fixed.stdout, fixed.stderr);
    assert!(
        fixed.stdout.contains("fixed 3 place(s) in content/01-c.md"),
        "{}",
        fixed.stdout
    );
    let expected = text
        .replace("> a = 9\n> b = 9\n", "> a = 1\n> b = 2\n")
        .replace("   c = 9\n", "   c = 3\n\n   d = 4\n")
        .replace("  > f\n", "  > e\n");
    assert_eq!(site.read(path), expected);
    let verify = site.run(&["verify"]);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    assert!(verify.stdout.contains("0 drifted"), "{}", verify.stdout);
    let again = site.run(&["verify", "--fix"]);
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    assert!(!again.stdout.contains("fixed"), "{}", again.stdout);
    assert_eq!(site.read(path), expected, "a second --fix is a no-op");
}

/// Redteam-3 D18: a quoted number in a heading whose anchor is derived from its text keeps the
/// anchor when `--fix` rewrites the number: the heading gets its old id explicitly, the report
/// says so, and the link to it still resolves.
#[test]
fn fix_keeps_the_anchor_of_a_heading_it_edits() {
    let site = Site::fixture("quotes");
    std::fs::remove_file(site.path("content/01-q.md")).unwrap();
    let path = "content/01-c.md";
    let text = "+++\ntitle = \"C\"\nnumber = 1\n+++\n\n## Heading [0.99]{=a}\n\n\
                ```rust,experiment\nlab.value(\"a\", 0.13);\n```\n\n见[上文](#heading-0-99)。\n";
    site.write(path, text);
    let fixed = site.run(&["verify", "--fix"]);
    assert_eq!(fixed.code, 0, "{}{}", fixed.stdout, fixed.stderr);
    assert!(
        fixed.stdout.contains(
            "content/01-c.md:6:1: the heading's anchor stays #heading-0-99: --fix gave it that id explicitly"
        ),
        "{}",
        fixed.stdout
    );
    let expected = text.replace(
        "## Heading [0.99]{=a}\n",
        "## Heading [0.13]{=a} {#heading-0-99}\n",
    );
    assert_eq!(site.read(path), expected);
    let again = site.run(&["verify", "--fix"]);
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    assert_eq!(site.read(path), expected, "a second --fix is a no-op");
    let check = site.run(&["check"]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
}
