//! The series reads as prose, formulas, the experiments' substance, output and charts (issue 16,
//! item 1): plotting and table formatting are folded or live in `lab` helpers, so no chapter of
//! `content/` shows a long stretch of open code. This test holds that line on the real chapters.
//!
//! A *run* is what a reader scrolls through between two pieces of prose: the lines shown by
//! consecutive experiment blocks that start open (not `fold`, not `hide`; hidden `# ` lines and
//! trailing blank lines do not count). Pinned outputs, figures, tables and display math between
//! two blocks do not end a run; a heading or a paragraph does.

use std::path::Path;

use attnbook::content::Chapter;
use attnbook::markdown::{self, Experiment, Fold};

/// The longest run a chapter may show. The aim is about 25 lines; a few experiments whose
/// computing loop cannot be split (ch. 4's entropy sweep, ch. 8's training loop) reach 28.
const MAX_RUN: usize = 30;

fn starts_open(exp: &Experiment) -> bool {
    !exp.options.hide && !matches!(exp.options.fold, Fold::Folded(_))
}

/// Lines a reader sees in a block, trailing blank lines dropped (as the page counts them).
fn shown(exp: &Experiment) -> usize {
    exp.shown_code().trim_end().lines().count()
}

/// The longest run of a chapter, with the line of the block that starts it.
fn longest_run(path: &Path, source: String) -> (usize, usize) {
    let chapter = Chapter::parse(path, source).expect("the chapter parses");
    let (doc, _) = markdown::parse(&chapter);
    let (mut best, mut best_line) = (0, 0);
    let (mut run, mut run_line) = (0, 0);
    let mut previous_end: Option<usize> = None;
    for exp in &doc.experiments {
        let prose_between = previous_end.is_some_and(|end| {
            doc.prose
                .iter()
                .any(|p| p.start >= end && p.end <= exp.span.start && !p.is_empty())
        });
        if prose_between {
            run = 0;
        }
        if starts_open(exp) {
            if run == 0 {
                run_line = exp.line;
            }
            run += shown(exp);
            if run > best {
                (best, best_line) = (run, run_line);
            }
        }
        previous_end = Some(exp.pinned.as_ref().map_or(exp.span.end, |p| p.span.end));
    }
    (best, best_line)
}

#[test]
fn no_chapter_shows_a_long_run_of_open_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut chapters: Vec<_> = std::fs::read_dir(root.join("content"))
        .expect("content/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    chapters.sort();
    assert!(!chapters.is_empty());
    let mut report = Vec::new();
    let mut too_long = Vec::new();
    for path in &chapters {
        let relative = path.strip_prefix(root).unwrap();
        let (run, line) = longest_run(relative, std::fs::read_to_string(path).unwrap());
        report.push(format!(
            "{}: {run} lines from line {line}",
            relative.display()
        ));
        if run > MAX_RUN {
            too_long.push(format!("{}:{line}: {run} lines", relative.display()));
        }
    }
    assert!(
        too_long.is_empty(),
        "open code runs longer than {MAX_RUN} lines (split the block at a seam with a line of \
         prose, or fold its plotting and formatting):\n{}\n\nall chapters:\n{}",
        too_long.join("\n"),
        report.join("\n")
    );
}

/// The measure itself: a folded block and a `hide` block add nothing, prose ends a run, a
/// pinned output does not, and hidden lines are not counted.
#[test]
fn the_measure_counts_what_a_reader_sees() {
    let chapter = "+++\ntitle = \"t\"\nnumber = 1\n+++\n\n\
```rust,experiment\n# let hidden = 1;\nlet a = 1;\nlet b = 2;\n```\n\n\
```output\n3\n```\n\n\
```rust,experiment\nlet c = 3;\n\n```\n\n\
```rust,experiment,fold=\"绘图代码\"\nlet d = 4;\nlet e = 5;\nlet f = 6;\nlet g = 7;\n```\n\n\
```rust,experiment,hide\nlet h = 8;\nlet i = 9;\nlet j = 10;\nlet k = 11;\n```\n\n\
```rust,experiment\nlet l = 12;\n```\n\n\
一段正文。\n\n\
```rust,experiment\nlet m = 13;\nlet n = 14;\n```\n";
    let (run, line) = longest_run(Path::new("content/01-t.md"), chapter.to_string());
    assert_eq!((run, line), (4, 6), "2 + 1 + 1 lines from the first block");
}
