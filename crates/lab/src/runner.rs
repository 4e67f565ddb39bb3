//! The `main` of a generated experiment binary.
//!
//! The generator runs `BINARY <chapter-slug> <seed> <results.json>` once per chapter. The
//! results file is written whatever happens in the chapter, so that values recorded before a
//! panic still reach the generator together with the panic's location. Exit codes: 0 the
//! chapter ran, 101 it panicked (as an uncaught Rust panic would), 2 bad arguments or the
//! results could not be written.

use std::io::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;

use lab_protocol::ChapterResults;

use crate::Lab;
use crate::caught::{self, PanicSeen};

/// The function the generator emits for one chapter: all of its blocks, in order.
pub type ChapterFn = fn(&mut Lab);

/// Exit code when the chapter panicked (the code of an uncaught panic).
const EXIT_PANIC: i32 = 101;
/// Exit code for bad arguments or an unwritable results file.
const EXIT_ERROR: i32 = 2;

/// Runs the chapter named on the command line and exits; see the module docs for the contract.
pub fn run_main(chapters: &[(&str, ChapterFn)]) -> ! {
    keep_the_heap();
    if let Err(message) = crate::control::open_from_env() {
        eprintln!("error: {message}");
        std::process::exit(EXIT_ERROR);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(main_with_args(&args, chapters))
}

/// The `main` of a chapter's take-home project (`attnbook` offers one per chapter): runs the
/// chapter with the seed of the site's build, writes what it recorded to `results` (the same
/// JSON the generator reads, so a reader can compare it with the site bit for bit), lists the
/// recorded values, and exits 0, or 101 if a block panicked.
pub fn run_standalone(slug: &str, seed: u64, results: &str, chapter: ChapterFn) -> ! {
    keep_the_heap();
    let recorded = run_chapter(slug, seed, chapter);
    if let Err(e) = write_atomically(Path::new(results), &recorded) {
        eprintln!("error: cannot write the results to {results}: {e}");
        std::process::exit(EXIT_ERROR);
    }
    print!("{}", summary(&recorded, results));
    std::process::exit(if recorded.panic.is_some() {
        EXIT_PANIC
    } else {
        0
    })
}

/// Tells glibc's malloc to keep the heap it has grown rather than give it back: no trimming
/// of a heap's top below 256 MiB free (by default glibc trims above 128 KiB, a threshold it
/// raises as blocks are freed), nothing mmapped below 32 MiB, 16 MiB of slack each time a
/// heap grows. A training step allocates and frees its temporaries every update; with the
/// defaults the heap shrank after each update and the next one faulted fresh zeroed pages in
/// (docs/performance.md: the same results, 15-30% less time per update). Called before the
/// chapter starts any thread. Only where the C library is glibc.
fn keep_the_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    for (param, value) in [
        (libc::M_TRIM_THRESHOLD, 256 << 20),
        (libc::M_MMAP_THRESHOLD, 32 << 20),
        (libc::M_TOP_PAD, 16 << 20),
    ] {
        // SAFETY: mallopt only sets allocator parameters; no other thread runs yet. A
        // parameter it refuses (return value 0) leaves glibc's default, which is harmless.
        unsafe { libc::mallopt(param, value) };
    }
}

/// Values shown per vector in the summary; `results.json` has them all.
const SUMMARY_ELEMENTS: usize = 6;

/// One line per recorded value: its name and data, shortest round-trip formatting (the digits
/// that read back as the same `f64`).
fn summary(results: &ChapterResults, path: &str) -> String {
    let mut out = format!(
        "\n{} value(s), {} table(s), {} figure(s) recorded; all of them in {path}\n",
        results.values.len(),
        results.tables.len(),
        results.figures.len()
    );
    for value in &results.values {
        let shown: Vec<String> = value
            .data
            .iter()
            .take(SUMMARY_ELEMENTS)
            .map(|n| n.0.to_string())
            .collect();
        let more = if value.data.len() > SUMMARY_ELEMENTS {
            ", ..."
        } else {
            ""
        };
        let data = if value.shape.is_empty() {
            shown.join("")
        } else {
            format!("{:?} [{}{more}]", value.shape, shown.join(", "))
        };
        out.push_str(&format!("  {} = {data}\n", value.name));
    }
    out
}

/// Everything `run_main` does except reading the process arguments and exiting.
fn main_with_args(args: &[String], chapters: &[(&str, ChapterFn)]) -> i32 {
    let (slug, seed, path) = match parse_args(args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("error: {message}");
            eprintln!("usage: <experiment-binary> <chapter-slug> <seed> <results.json>");
            return EXIT_ERROR;
        }
    };
    let Some(&(_, chapter)) = chapters.iter().find(|(name, _)| *name == slug) else {
        let known: Vec<&str> = chapters.iter().map(|(name, _)| *name).collect();
        eprintln!(
            "error: unknown chapter `{slug}`; this binary has: {}",
            known.join(", ")
        );
        return EXIT_ERROR;
    };
    if std::env::var_os("ATTNBOOK_SANDBOX").is_some()
        && let Err(message) = confine(Path::new(path))
    {
        eprintln!("error: {message}");
        return EXIT_ERROR;
    }
    let results = run_chapter(slug, seed, chapter);
    if let Err(e) = write_atomically(Path::new(path), &results) {
        eprintln!("error: cannot write the results to {path}: {e}");
        return EXIT_ERROR;
    }
    if results.panic.is_some() {
        EXIT_PANIC
    } else {
        0
    }
}

/// Confines writes to the working directory and the results file's directory.
fn confine(results: &Path) -> Result<(), String> {
    let here = std::env::current_dir().map_err(|e| format!("no working directory: {e}"))?;
    let results_dir = results
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match crate::sandbox::confine(&here, results_dir)? {
        crate::sandbox::Confinement::Enforced => {}
        other => eprintln!("note: file-system sandbox {other:?} on this kernel"),
    }
    Ok(())
}

fn parse_args(args: &[String]) -> Result<(&str, u64, &str), String> {
    let [slug, seed, path] = args else {
        return Err(format!("expected 3 arguments, got {}", args.len()));
    };
    let seed = seed
        .parse()
        .map_err(|_| format!("the seed must be an unsigned 64-bit integer, got `{seed}`"))?;
    Ok((slug, seed, path))
}

/// Runs one chapter to completion or to its first uncaught panic and returns what it recorded.
///
/// The panic (message, location, block) is in [`ChapterResults::panic`]; the usual panic message
/// is still printed on stderr.
pub fn run_chapter(slug: &str, seed: u64, chapter: impl FnOnce(&mut Lab)) -> ChapterResults {
    caught::install_hook();
    caught::clear();
    let mut lab = Lab::new(slug, seed);
    // Unwind safety: after a panic `lab` is only read, to hand back what was recorded.
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| chapter(&mut lab)));
    let _ = std::io::stdout().flush();
    let block = lab.current_block();
    let mut results = lab.into_results();
    if outcome.is_err() {
        results.panic = Some(match caught::take() {
            Some(seen) => seen.into_panic(block),
            // A panic that bypassed the hook (another hook was installed over ours).
            None => PanicSeen::unknown().into_panic(block),
        });
    }
    results
}

/// Writes the results next to `path` under a temporary name, then renames it into place, so
/// the generator never reads a half-written file.
fn write_atomically(path: &Path, results: &ChapterResults) -> std::io::Result<()> {
    let json = serde_json::to_vec(results)?;
    let file_name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("the results path has no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(file_name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let written = std::fs::write(&tmp, json).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn arguments_are_slug_seed_path() {
        let parsed = args(&["01-why", "42", "/tmp/r.json"]);
        assert_eq!(parse_args(&parsed).unwrap(), ("01-why", 42, "/tmp/r.json"));
        assert!(
            parse_args(&args(&["01-why", "-1", "x"]))
                .unwrap_err()
                .contains("seed")
        );
        assert!(
            parse_args(&args(&["01-why"]))
                .unwrap_err()
                .contains("3 arguments")
        );
    }

    #[test]
    fn bad_arguments_and_unknown_chapters_exit_2() {
        let chapters: [(&str, ChapterFn); 1] = [("a", |_| {})];
        assert_eq!(main_with_args(&args(&["a"]), &chapters), EXIT_ERROR);
        let unknown = args(&["b", "1", "/nonexistent/r.json"]);
        assert_eq!(main_with_args(&unknown, &chapters), EXIT_ERROR);
    }

    /// A fresh directory under the system temp dir, unique to this process and test.
    fn scratch_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("lab-runner-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn read_results(path: &Path) -> ChapterResults {
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    /// The take-home summary lists every value with the digits that read back as the same
    /// `f64`, vectors cut after a few elements.
    #[test]
    fn the_standalone_summary_lists_every_value_exactly() {
        let results = run_chapter("c", 1, |lab| {
            lab.value("third", 1.0 / 3.0);
            lab.value("v", &[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7][..]);
        });
        let text = summary(&results, "results.json");
        assert!(
            text.contains(
                "2 value(s), 0 table(s), 0 figure(s) recorded; all of them in results.json"
            ),
            "{text}"
        );
        assert!(text.contains("  third = 0.3333333333333333\n"), "{text}");
        assert!(
            text.contains("  v = [7] [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, ...]\n"),
            "{text}"
        );
    }

    #[test]
    fn results_are_written_after_success_and_after_a_panic() {
        let dir = scratch_dir("write");
        let path = dir.join("results.json");
        let chapters: [(&str, ChapterFn); 2] = [
            ("ok", |lab| lab.value("x", 1.0)),
            ("bad", |lab| {
                lab.value("x", 1.0);
                panic!("boom {}", 42);
            }),
        ];
        let run =
            |slug: &str| main_with_args(&args(&[slug, "3", path.to_str().unwrap()]), &chapters);

        assert_eq!(run("ok"), 0);
        let ok = read_results(&path);
        assert_eq!(
            (ok.chapter.as_str(), ok.seed, ok.values.len()),
            ("ok", 3, 1)
        );
        assert_eq!(ok.panic, None);

        assert_eq!(run("bad"), EXIT_PANIC);
        let bad = read_results(&path);
        assert_eq!(
            bad.values.len(),
            1,
            "values recorded before the panic are kept"
        );
        let panic = bad.panic.unwrap();
        assert_eq!(panic.message, "boom 42");
        assert!(panic.file.ends_with("runner.rs") && panic.line > 0);

        // The temporary file was renamed away, not left beside the results.
        let entries = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(entries, 1);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_generator_keys_its_cache_by_the_cores_environment() {
        assert!(lab_protocol::RESULT_ENV.contains(&attention::PORTABLE_ENV));
    }

    #[test]
    fn unwritable_results_exit_2() {
        let chapters: [(&str, ChapterFn); 1] = [("a", |_| {})];
        let to_missing_dir = args(&["a", "1", "/nonexistent-dir/r.json"]);
        assert_eq!(main_with_args(&to_missing_dir, &chapters), EXIT_ERROR);
    }
}
