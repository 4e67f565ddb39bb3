//! The experiment cache: one JSON file per chapter, keyed by everything that can change it.
//!
//! The key hashes the chapter's block sources and options, its seed, the sources of the
//! runtime crates (`lab`, `attention`, `lab-protocol`), `Cargo.lock`, the rustc version, and
//! attnbook itself: its version and the wrapper code it generates around the blocks. A hit
//! means the chapter is neither compiled nor run.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use walkdir::WalkDir;

use super::ChapterRun;
use crate::markdown::Experiment;
use crate::markdown::experiment::BlockOptions;

/// What a cached file holds.
#[derive(Serialize, Deserialize)]
struct Entry {
    key: String,
    run: ChapterRun,
}

/// What of attnbook itself shapes a run: its version, the results format it reads
/// ([`lab_protocol::FORMAT_VERSION`]: a site whose `[lab] crate` lies outside this repository
/// has runtime sources that do not change with the format) and the fingerprint of the generated
/// wrapper code (a new wrapper or a new release reruns every chapter).
pub(super) fn generator_identity() -> String {
    format!(
        "attnbook {}\nresults format {}\n{}",
        env!("CARGO_PKG_VERSION"),
        lab_protocol::FORMAT_VERSION,
        super::generate::template_fingerprint()
    )
}

/// Hash of everything outside the chapter that results depend on (computed once per build):
/// the runtime crates' `.rs` and `.toml` files (not their `target/`), the workspace root's
/// `Cargo.toml` (the crates inherit their dependencies from it) and `Cargo.lock`, the
/// toolchain (with what else of the environment changes results) and [`generator_identity`].
pub(super) fn environment_key(
    runtime_crates: &Path,
    workspace_files: &[PathBuf],
    rustc_version: &str,
    generator: &str,
) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(rustc_version.as_bytes());
    hasher.update(b"\0");
    hasher.update(generator.as_bytes());
    hasher.update(b"\0");
    let mut files: Vec<PathBuf> = WalkDir::new(runtime_crates)
        .into_iter()
        .filter_entry(|e| e.file_name() != "target")
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            e.path()
                .extension()
                .is_some_and(|x| x == "rs" || x == "toml")
        })
        .map(|e| e.into_path())
        .collect();
    files.sort();
    for file in &files {
        hasher.update(
            file.strip_prefix(runtime_crates)
                .unwrap_or(file)
                .to_string_lossy()
                .as_bytes(),
        );
        hasher.update(&std::fs::read(file).unwrap_or_default());
    }
    // The workspace's files by name alone: where the runtime lives is no input.
    for file in workspace_files {
        hasher.update(b"\0workspace\0");
        hasher.update(file.file_name().unwrap_or_default().as_encoded_bytes());
        hasher.update(b"\0");
        hasher.update(&std::fs::read(file).unwrap_or_default());
    }
    hasher.finalize().to_hex().to_string()
}

/// The environment key `environment` with the site's own inputs (`[lab] data` and
/// `[lab.dependencies]`, [`super::inputs::fingerprint`]); unchanged when it declares none.
pub(super) fn with_site_inputs(environment: String, site_inputs: &str) -> String {
    if site_inputs.is_empty() {
        return environment;
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update(environment.as_bytes());
    hasher.update(b"\0site inputs\0");
    hasher.update(site_inputs.as_bytes());
    hasher.finalize().to_hex().to_string()
}

/// The key of one chapter's results.
pub(super) fn chapter_key(
    environment: &str,
    slug: &str,
    seed: u64,
    blocks: &[Experiment],
) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(environment.as_bytes());
    hasher.update(slug.as_bytes());
    hasher.update(&seed.to_le_bytes());
    for block in blocks {
        hasher.update(run_options(&block.options).as_bytes());
        for line in &block.lines {
            hasher.update(line.code.as_bytes());
            hasher.update(b"\n");
        }
        hasher.update(b"\x1e");
    }
    hasher.finalize().to_hex().to_string()
}

/// The options that can change a run, spelt as `BlockOptions`' `Debug` spelt them before
/// `fold` existed: folding is presentation, so setting it neither reruns the block nor
/// invalidates the caches of existing sites.
fn run_options(options: &BlockOptions) -> String {
    let BlockOptions {
        hide,
        no_output,
        timeout,
        fold: _,
        param,
    } = options;
    // A parameter's grid and default change what runs; a block without one keeps its old key.
    let param = param
        .as_ref()
        .map(|p| format!("param {} {:?} {}\u{0}", p.name, p.values, p.default))
        .unwrap_or_default();
    format!(
        "BlockOptions {{ hide: {hide:?}, no_output: {no_output:?}, timeout: {timeout:?} }}\u{0}{param}"
    )
}

/// The key of one grid point's results: the chapter's key and the point.
pub(super) fn point_key(chapter_key: &str, param: &str, value: &str) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(chapter_key.as_bytes());
    hasher.update(b"\0point\0");
    hasher.update(param.as_bytes());
    hasher.update(b"=");
    hasher.update(value.as_bytes());
    hasher.finalize().to_hex().to_string()
}

/// The chapter's cache file.
pub(super) fn path(cache_dir: &Path, slug: &str) -> PathBuf {
    cache_dir.join(format!("{slug}.json"))
}

/// The cached run, if its key matches.
pub(super) fn load(cache_dir: &Path, slug: &str, key: &str) -> Option<ChapterRun> {
    let path = path(cache_dir, slug);
    let text = std::fs::read_to_string(&path).ok()?;
    if !REMEMBER.load(std::sync::atomic::Ordering::Relaxed) {
        let entry: Entry = serde_json::from_str(&text).ok()?;
        return (entry.key == key).then(|| with_digest(entry.run, &text));
    }
    let digest = blake3::hash(text.as_bytes()).to_hex().to_string();
    let entry = remembered(&path, &digest).or_else(|| {
        let entry = std::sync::Arc::new(serde_json::from_str::<Entry>(&text).ok()?);
        remember(path.clone(), digest.clone(), std::sync::Arc::clone(&entry));
        Some(entry)
    })?;
    (entry.key == key).then(|| ChapterRun {
        digest,
        ..entry.run.clone()
    })
}

/// Whether [`load`] keeps what it parsed ([`remember_loaded_runs`]).
static REMEMBER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Entries [`load`] parsed in this process, per file, with the BLAKE3 of the bytes they were
/// parsed from.
type Remembered = std::collections::HashMap<PathBuf, (String, std::sync::Arc<Entry>)>;

static LOADED: std::sync::Mutex<Option<Remembered>> = std::sync::Mutex::new(None);

/// From now on, `load` keeps every entry it parses, by file and the hash of its bytes, and
/// parses a file again only when its bytes changed: for `serve`, whose rebuilds all run in one
/// process (parsing every chapter's results was 7 % of the instructions of a rebuild after a
/// prose edit). The file is still read and hashed every time, so what is returned is what the
/// file holds now.
pub fn remember_loaded_runs() {
    REMEMBER.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn remembered(path: &Path, digest: &str) -> Option<std::sync::Arc<Entry>> {
    let loaded = LOADED.lock().ok()?;
    let (kept, entry) = loaded.as_ref()?.get(path)?;
    (kept == digest).then(|| std::sync::Arc::clone(entry))
}

fn remember(path: PathBuf, digest: String, entry: std::sync::Arc<Entry>) {
    if let Ok(mut loaded) = LOADED.lock() {
        loaded
            .get_or_insert_with(Default::default)
            .insert(path, (digest, entry));
    }
}

fn with_digest(mut run: ChapterRun, stored: &str) -> ChapterRun {
    run.digest = blake3::hash(stored.as_bytes()).to_hex().to_string();
    run
}

/// The last stored run, whatever its key (for `check`, which never runs experiments).
pub(super) fn load_any(cache_dir: &Path, slug: &str) -> Option<ChapterRun> {
    let text = std::fs::read_to_string(path(cache_dir, slug)).ok()?;
    serde_json::from_str::<Entry>(&text)
        .ok()
        .map(|entry| with_digest(entry.run, &text))
}

/// Stores a run (atomically: a reader never sees half a file) and sets its digest to that of
/// the stored entry, as [`load`] would.
pub(super) fn store(
    cache_dir: &Path,
    slug: &str,
    key: &str,
    run: &mut ChapterRun,
) -> std::io::Result<()> {
    std::fs::create_dir_all(cache_dir)?;
    // Grid points are stored each under a key of their own.
    let entry = Entry {
        key: key.to_string(),
        run: ChapterRun {
            points: Vec::new(),
            ..run.clone()
        },
    };
    let json = serde_json::to_vec(&entry).map_err(std::io::Error::other)?;
    run.digest = blake3::hash(&json).to_hex().to_string();
    let mut tmp = tempfile::NamedTempFile::new_in(cache_dir)?;
    std::io::Write::write_all(&mut tmp, &json)?;
    tmp.persist(path(cache_dir, slug)).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::experiment::{CodeLine, Fold};

    fn block(code: &str) -> Experiment {
        Experiment {
            index: 0,
            options: BlockOptions::default(),
            lines: vec![CodeLine {
                code: code.into(),
                shown: true,
                line: 1,
                col_shift: 0,
            }],
            span: 0..0,
            line: 1,
            pinned: None,
        }
    }

    #[test]
    fn key_changes_with_code_seed_and_environment_only() {
        let k = chapter_key("env", "a", 1, &[block("x")]);
        assert_eq!(k, chapter_key("env", "a", 1, &[block("x")]));
        assert_ne!(k, chapter_key("env", "a", 1, &[block("y")]));
        assert_ne!(k, chapter_key("env", "a", 2, &[block("x")]));
        assert_ne!(k, chapter_key("env2", "a", 1, &[block("x")]));
        let mut moved = block("x");
        moved.line = 40;
        moved.lines[0].line = 41;
        assert_eq!(
            k,
            chapter_key("env", "a", 1, &[moved]),
            "moving a block in the prose keeps the cache"
        );
    }

    /// Folding is presentation: it neither reruns a block nor changes the key sites already
    /// have cached (the spelling of the options before `fold` existed).
    #[test]
    fn folding_a_block_keeps_the_key() {
        let k = chapter_key("env", "a", 1, &[block("x")]);
        let mut folded = block("x");
        folded.options.fold = Fold::Folded(Some("绘图".into()));
        assert_eq!(k, chapter_key("env", "a", 1, &[folded]));
        assert_eq!(
            run_options(&BlockOptions::default()),
            "BlockOptions { hide: false, no_output: false, timeout: None }\u{0}"
        );
        let mut timed = block("x");
        timed.options.timeout = Some(3);
        assert_ne!(k, chapter_key("env", "a", 1, &[timed]));
    }

    /// A runtime tree like the real one: `crates/{attention,lab,lab-protocol}` and a lock file.
    fn runtime() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for file in [
            "crates/attention/Cargo.toml",
            "crates/attention/src/lib.rs",
            "crates/lab/Cargo.toml",
            "crates/lab/src/lib.rs",
            "crates/lab-protocol/src/lib.rs",
            "crates/lab/README.md",
            "Cargo.toml",
            "Cargo.lock",
        ] {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, format!("// {file}\n")).unwrap();
        }
        dir
    }

    fn key_of(dir: &Path, rustc: &str, generator: &str) -> String {
        environment_key(
            &dir.join("crates"),
            &[dir.join("Cargo.toml"), dir.join("Cargo.lock")],
            rustc,
            generator,
        )
    }

    /// Each input of the environment forces a rerun when it changes: every source and manifest
    /// of the runtime crates, `Cargo.lock`, the toolchain, attnbook's version and its generated
    /// wrapper. A README and build output do not.
    #[test]
    fn the_environment_key_changes_with_every_input() {
        let dir = runtime();
        let (rustc, generator) = ("rustc 1.95.0", generator_identity());
        let base = key_of(dir.path(), rustc, &generator);
        assert_eq!(base, key_of(dir.path(), rustc, &generator), "stable");
        for file in [
            "crates/attention/src/lib.rs",
            "crates/attention/Cargo.toml",
            "crates/lab/src/lib.rs",
            "crates/lab/Cargo.toml",
            "crates/lab-protocol/src/lib.rs",
            "Cargo.toml",
            "Cargo.lock",
        ] {
            let path = dir.path().join(file);
            let before = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, format!("{before}// edited\n")).unwrap();
            assert_ne!(base, key_of(dir.path(), rustc, &generator), "{file}");
            std::fs::write(&path, before).unwrap();
        }
        std::fs::write(dir.path().join("crates/attention/src/new.rs"), "").unwrap();
        assert_ne!(base, key_of(dir.path(), rustc, &generator), "a new file");
        std::fs::remove_file(dir.path().join("crates/attention/src/new.rs")).unwrap();
        assert_eq!(base, key_of(dir.path(), rustc, &generator), "restored");
        assert_ne!(
            base,
            key_of(dir.path(), "rustc 1.96.0", &generator),
            "toolchain"
        );
        let next_release = generator.replacen(env!("CARGO_PKG_VERSION"), "999.0.0", 1);
        assert_ne!(
            base,
            key_of(dir.path(), rustc, &next_release),
            "attnbook version"
        );
        let new_wrapper = format!("attnbook {}\nanother template", env!("CARGO_PKG_VERSION"));
        assert_ne!(
            base,
            key_of(dir.path(), rustc, &new_wrapper),
            "wrapper code"
        );
        std::fs::write(dir.path().join("crates/lab/README.md"), "more words").unwrap();
        std::fs::create_dir_all(dir.path().join("crates/lab/target")).unwrap();
        std::fs::write(dir.path().join("crates/lab/target/x.rs"), "built").unwrap();
        assert_eq!(
            base,
            key_of(dir.path(), rustc, &generator),
            "docs and target/ do not count"
        );
    }

    /// Where the runtime lives is no input: the built-in copy in another cache directory, or
    /// a checkout elsewhere, with the same files gives the same key.
    #[test]
    fn the_environment_key_does_not_depend_on_where_the_runtime_lives() {
        let (a, b) = (runtime(), runtime());
        assert_eq!(
            key_of(a.path(), "rustc", "g"),
            key_of(b.path(), "rustc", "g")
        );
    }

    /// The identity names this attnbook's version, the results format (a new format reruns
    /// every chapter, even with a runtime crate outside this repository) and the generator's
    /// template fingerprint.
    #[test]
    fn the_generator_identity_is_the_version_the_format_and_the_wrapper() {
        let identity = generator_identity();
        assert_eq!(
            identity,
            format!(
                "attnbook {}\nresults format {}\n{}",
                env!("CARGO_PKG_VERSION"),
                lab_protocol::FORMAT_VERSION,
                crate::lab::generate::template_fingerprint()
            )
        );
        assert_eq!(crate::lab::generate::template_fingerprint().len(), 64);
    }

    /// A site that declares no inputs keeps its key; one that does gets another per input.
    #[test]
    fn site_inputs_change_the_environment_key_only_when_declared() {
        assert_eq!(with_site_inputs("env".into(), ""), "env");
        let a = with_site_inputs("env".into(), "a");
        assert_ne!(a, "env");
        assert_ne!(a, with_site_inputs("env".into(), "b"));
        assert_ne!(a, with_site_inputs("env2".into(), "a"));
    }

    /// Remembered entries are those of the file's current bytes: a rewritten file is parsed
    /// again, a wrong key still misses, and the run is the one `load` gives without memory.
    #[test]
    fn remembered_runs_follow_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut run = ChapterRun::default();
        run.meta.duration_ms = 5;
        store(dir.path(), "a", "k1", &mut run).unwrap();
        let plain = load(dir.path(), "a", "k1").unwrap();
        remember_loaded_runs();
        let first = load(dir.path(), "a", "k1").unwrap();
        assert_eq!(first, plain);
        assert_eq!(load(dir.path(), "a", "k1").unwrap(), plain);
        assert!(load(dir.path(), "a", "k2").is_none());
        run.meta.duration_ms = 7;
        store(dir.path(), "a", "k2", &mut run).unwrap();
        let again = load(dir.path(), "a", "k2").unwrap();
        assert_eq!(again.meta.duration_ms, 7);
        assert_eq!(again.digest, run.digest);
        assert!(load(dir.path(), "a", "k1").is_none());
    }

    #[test]
    fn store_then_load_round_trips_and_checks_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let mut run = ChapterRun::default();
        store(dir.path(), "a", "k1", &mut run).unwrap();
        assert_eq!(
            load(dir.path(), "a", "k1").map(|r| r.digest),
            Some(run.digest.clone())
        );
        assert!(!run.digest.is_empty());
        assert!(load(dir.path(), "a", "k2").is_none());
    }

    /// `check` reads the last run whatever its key, and exactly that run; a chapter never run
    /// has none.
    #[test]
    fn load_any_returns_the_stored_run_whatever_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let mut run = ChapterRun::default();
        run.meta.seed = 7;
        run.blocks.push(super::super::BlockOutput {
            stdout: "printed".into(),
            truncated: false,
        });
        store(dir.path(), "a", "old key", &mut run).unwrap();
        assert_eq!(load_any(dir.path(), "a"), Some(run.clone()));
        assert_eq!(load(dir.path(), "a", "old key"), Some(run));
        assert_eq!(load_any(dir.path(), "b"), None);
        std::fs::write(path(dir.path(), "c"), "not JSON").unwrap();
        assert_eq!(load_any(dir.path(), "c"), None);
    }

    /// Results that differ in any byte have different identities, so a render cache keyed by
    /// them cannot serve a page of other results.
    #[test]
    fn a_run_is_identified_by_its_stored_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = ChapterRun::default();
        store(dir.path(), "a", "k", &mut a).unwrap();
        let mut b = ChapterRun::default();
        b.meta.duration_ms = 1;
        store(dir.path(), "b", "k", &mut b).unwrap();
        assert_ne!(a.identity(), b.identity());
        let unstored = ChapterRun::default();
        assert_ne!(unstored.identity(), String::new());
        let mut other = ChapterRun::default();
        other.meta.seed = 3;
        assert_ne!(unstored.identity(), other.identity());
    }
}
