//! `attnbook init`: a new site, in each language, that builds with `--strict` and verifies as
//! it stands; a non-empty directory is refused unless `--force`.

use std::path::Path;
use std::process::{Command, Output};

fn attnbook(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_attnbook"))
        .args(args)
        .output()
        .expect("run attnbook")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `init DIR --language L`, then `build --strict` and `verify`: rc 0 each time, and the page
/// shows the experiment's chart and its bound numbers.
fn init_builds_and_verifies(language: &str) {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("book");
    let site_arg = site.to_str().unwrap();
    let init = attnbook(&["init", site_arg, "--language", language]);
    assert!(init.status.success(), "{}", text(&init));
    for file in [
        "site.toml",
        "content/01-first.md",
        ".gitignore",
        ".github/workflows/pages.yml",
        "scripts/pdf.mjs",
    ] {
        assert!(site.join(file).is_file(), "{file}");
    }
    let workflow = std::fs::read_to_string(site.join(".github/workflows/pages.yml")).unwrap();
    assert!(
        workflow.contains("node scripts/pdf.mjs public"),
        "{workflow}"
    );
    let gitignore = std::fs::read_to_string(site.join(".gitignore")).unwrap();
    assert!(gitignore.contains("public/") && gitignore.contains(".attnbook/"));
    let config = std::fs::read_to_string(site.join("site.toml")).unwrap();
    assert!(
        config.contains(&format!("language = \"{language}\"")),
        "{config}"
    );
    assert!(
        config.contains("[print]\n") && config.contains("pdf = true"),
        "{config}"
    );
    let build = attnbook(&["--root", site_arg, "build", "--strict"]);
    assert!(build.status.success(), "{}", text(&build));
    let page = std::fs::read_to_string(site.join("public/first/index.html")).unwrap();
    assert!(
        page.contains("id=\"fig-weights\""),
        "the chart is on the page"
    );
    assert!(page.contains("<svg"), "the chart is drawn");
    assert!(page.contains("0.67"), "the bound number is on the page");
    assert!(page.contains("<details"), "the exercise's answer is folded");
    let verify = attnbook(&["--root", site_arg, "verify"]);
    assert!(verify.status.success(), "{}", text(&verify));
    assert!(text(&verify).contains("0 drifted"), "{}", text(&verify));
    interface_is_in(language, &site.join("public"));
}

/// Every page of the built site speaks the site's language: an English site's pages hold no
/// CJK character at all (its content, from `init`, is English too), a Chinese site's pages
/// carry the Chinese navigation.
fn interface_is_in(language: &str, public: &Path) {
    let mut pages = Vec::new();
    collect_pages(public, &mut pages);
    assert!(pages.len() >= 5, "{pages:?}");
    for page in &pages {
        let html = std::fs::read_to_string(page).unwrap();
        let cjk: String = html
            .chars()
            .filter(|c| matches!(*c as u32, 0x2E80..=0x9FFF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF))
            .collect();
        if language == "en" {
            assert!(cjk.is_empty(), "{}: {cjk}", page.display());
        } else if !page.ends_with("print.html") {
            assert!(html.contains("站点导航"), "{}", page.display());
        }
    }
}

fn collect_pages(dir: &Path, pages: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_pages(&path, pages);
        } else if path.extension().is_some_and(|e| e == "html") {
            pages.push(path);
        }
    }
}

#[test]
fn an_english_site_builds_strict_and_verifies() {
    init_builds_and_verifies("en");
}

#[test]
fn a_chinese_site_builds_strict_and_verifies() {
    init_builds_and_verifies("zh-CN");
}

/// A directory with a file in it is refused (rc 2, nothing written, the file kept); with
/// `--force` the site is written beside it. An unknown language is a usage error listing the
/// known ones.
#[test]
fn a_non_empty_directory_is_refused_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let keep = dir.path().join("notes.txt");
    std::fs::write(&keep, "mine").unwrap();
    let root = dir.path().to_str().unwrap();
    let refused = attnbook(&["--root", root, "init"]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("is not empty"),
        "{}",
        text(&refused)
    );
    assert!(text(&refused).contains("--force"), "{}", text(&refused));
    assert!(!dir.path().join("site.toml").exists(), "nothing written");
    let forced = attnbook(&["--root", root, "init", "--force"]);
    assert!(forced.status.success(), "{}", text(&forced));
    assert!(Path::new(&dir.path().join("site.toml")).is_file());
    assert_eq!(std::fs::read_to_string(&keep).unwrap(), "mine");
    let unknown = attnbook(&["init", "x", "--language", "fr"]);
    assert_eq!(unknown.status.code(), Some(2));
    let message = text(&unknown);
    assert!(
        message.contains("en") && message.contains("zh-CN"),
        "{message}"
    );
}

/// Without a terminal (stderr is a pipe here), a build whose experiments run past
/// `ATTNBOOK_PROGRESS_AFTER` seconds prints one plain line per chapter; by default a short
/// build prints none.
#[test]
fn without_a_terminal_a_long_build_prints_a_line_per_chapter() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().to_str().unwrap();
    assert!(
        attnbook(&["init", site, "--language", "en"])
            .status
            .success()
    );
    let quiet = attnbook(&["--root", site, "build", "--rerun"]);
    assert!(quiet.status.success(), "{}", text(&quiet));
    assert!(
        !text(&quiet).contains("experiments of first"),
        "{}",
        text(&quiet)
    );
    let loud = Command::new(env!("CARGO_BIN_EXE_attnbook"))
        .args(["--root", site, "build", "--rerun"])
        .env("ATTNBOOK_PROGRESS_AFTER", "0")
        .output()
        .unwrap();
    assert!(loud.status.success(), "{}", text(&loud));
    let stderr = String::from_utf8_lossy(&loud.stderr);
    assert!(stderr.contains("experiments of first ran in "), "{stderr}");
    assert!(stderr.contains(" s (1/1)"), "{stderr}");
}

/// The count in a progress line counts every chapter that has finished, including those that
/// finished before the lines started: the chapter that ends last says `(2/2)` even though the
/// first one finished silently.
#[test]
fn progress_lines_count_chapters_that_finished_silently() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().to_str().unwrap();
    assert!(
        attnbook(&["init", site, "--language", "en"])
            .status
            .success()
    );
    std::fs::write(
        dir.path().join("content/02-slow.md"),
        "+++\ntitle = \"Slow\"\nnumber = 2\ndate = 2026-12-02\nsummary = \"Waits.\"\n+++\n\n\
         It waits for a while.\n\n```rust,experiment\n\
         std::thread::sleep(std::time::Duration::from_millis(2500));\n\
         lab.value(\"slow.done\", 1.0);\n```\n\nDone: [1]{=slow.done ±0}.\n",
    )
    .unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_attnbook"))
        .args(["--root", site, "build", "--rerun"])
        .env("ATTNBOOK_PROGRESS_AFTER", "1")
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run));
    let stderr = String::from_utf8_lossy(&run.stderr);
    let line = stderr
        .lines()
        .find(|l| l.starts_with("experiments of slow "))
        .unwrap_or_else(|| panic!("no progress line for the slow chapter: {stderr}"));
    assert!(line.ends_with("(2/2)"), "{stderr}");
    assert!(!stderr.contains("experiments of first "), "{stderr}");
}
