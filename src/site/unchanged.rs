//! A build that finds nothing changed since the last one: it checks, and stops.
//!
//! Every stage keeps its work by a hash of its inputs, but a no-change build of the series
//! still reads, parses, hashes and compares everything to find that out (about 100 ms, spread
//! over every stage). So the last successful build leaves a [`Record`]: a hash of everything it
//! could have read, and the output tree as it left it. A build whose inputs hash the same, with
//! the output tree untouched, has nothing to do.
//!
//! What the hash covers, and so what makes the next build a full one:
//!
//! - every file under the site root (path and bytes), except the output directory, `.git/`,
//!   `.attnbook/` (the caches and the experiments' working files) and `target/`: more than the
//!   build reads (an edit of `README.md` counts), which costs a full build, never a stale one;
//! - the experiments' cached results (each entry's size, times and inode: `verify` and
//!   `--rerun` replace them);
//! - the generator binary, the build's options, and the environment the experiments and their
//!   cache read ([`ENVIRONMENT`]);
//! - the toolchain (`rustc -V`, asked every build as the experiment cache does) and, with
//!   take-home downloads, git's answer for the commit they pin, asked again.
//!
//! A record is written only when the build reported nothing (no warning, no download left out:
//! a build that found nothing to do has nothing to say) and read nothing outside the root that
//! the hash would miss: a symbolic link anywhere under the root, a `lab.crate_path` or a path
//! dependency of `[lab.dependencies]` mean no record. Each full build removes the record before
//! it writes, so a record always describes the output that is there.
//!
//! The output tree is compared by each entry's path, size, modification and status-change
//! times and inode. A file written in the clock tick the record was taken in could be
//! rewritten in place within that tick and look untouched, so the record also holds the hash
//! of such files' bytes, and they are read again (`git` treats its index the same way).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::lab;

use super::BuildPlan;

/// Where the record is kept: with the caches, so clearing them clears it.
const RECORD: &str = ".attnbook/cache/unchanged.json";
/// The record's file name, which is not an experiment result.
const RECORD_NAME: &str = "unchanged.json";

/// The environment variables whose values the build or the experiments' cache read.
const ENVIRONMENT: [&str; 9] = [
    "RUSTC",
    "CARGO",
    "ATTNBOOK_TARGET_DIR",
    "CARGO_TARGET_DIR",
    "ATTNBOOK_CACHE_DIR",
    "XDG_CACHE_HOME",
    "HOME",
    "PATH",
    "RUSTUP_TOOLCHAIN",
];

/// A moment of the output's file system clock, as `(seconds, nanoseconds)`.
type Stamp = (i64, i64);

/// What the last successful build read (as a hash) and left in the output directory.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct Record {
    version: u32,
    inputs: String,
    toolchain: String,
    pin: Option<lab::PinQuery>,
    output: Vec<Entry>,
    /// The summary's figures: chapters, files, experiments.
    pub(super) chapters: usize,
    pub(super) files: usize,
    pub(super) experiments: usize,
}

const VERSION: u32 = 1;

/// One entry of the output tree.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Entry {
    path: PathBuf,
    dir: bool,
    len: u64,
    modified: (i64, i64),
    changed: (i64, i64),
    inode: u64,
    /// The bytes' hash, for a file written too recently for its times to tell.
    hash: Option<String>,
}

/// The hash of the build's inputs, taken before the build reads them (an edit saved during
/// the build makes the next build a full one). `None` if they cannot all be seen from the root.
pub(super) struct Inputs(Option<String>);

impl Inputs {
    pub(super) fn of(plan: &BuildPlan) -> Inputs {
        Inputs(inputs_hash(plan))
    }
}

/// The record, if the last build left one and everything it describes is still so: then
/// nothing needs doing.
pub(super) fn check(plan: &BuildPlan, inputs: &Inputs) -> Option<Record> {
    let hash = inputs.0.as_deref()?;
    let bytes = std::fs::read(plan.root.join(RECORD)).ok()?;
    let record: Record = serde_json::from_slice(&bytes).ok()?;
    if record.version != VERSION || Some(&record.inputs) != with_results(hash, &plan.root).as_ref()
    {
        return None;
    }
    // git and the output are asked side by side; the toolchain was asked from the start.
    let (pinned, output) = std::thread::scope(|scope| {
        let pin = scope.spawn(|| {
            record
                .pin
                .as_ref()
                .is_none_or(lab::PinQuery::still_answered)
        });
        let output = output_holds(&plan.out, &record.output);
        (pin.join().unwrap_or(false), output)
    });
    if !(pinned && output && lab::toolchain() == record.toolchain) {
        return None;
    }
    // Files that were too fresh to trust their times are read every time until the record is
    // taken again, once they are old enough.
    if record.output.iter().any(|e| e.hash.is_some())
        && let Some(output) = output_entries(&plan.out, Some(stamp(&plan.out)))
        && output.iter().all(|e| e.hash.is_none())
    {
        let record = Record { output, ..record };
        write(plan, &record);
        return Some(record);
    }
    Some(record)
}

/// Removes the record: a full build is about to change what it describes.
pub(super) fn forget(plan: &BuildPlan) {
    let _ = std::fs::remove_file(plan.root.join(RECORD));
}

/// What a successful full build tells [`save`].
pub(super) struct Built<'a> {
    pub(super) inputs: Inputs,
    pub(super) config: &'a crate::config::Config,
    pub(super) pin: Option<lab::PinQuery>,
    pub(super) chapters: usize,
    pub(super) files: usize,
    pub(super) experiments: usize,
}

/// Records a build that reported nothing, for the next build to find unchanged.
pub(super) fn save(plan: &BuildPlan, built: Built<'_>) {
    let Some(inputs) = built
        .inputs
        .0
        .and_then(|hash| with_results(&hash, &plan.root))
    else {
        return;
    };
    let lab = &built.config.lab;
    if lab.crate_path.is_some() || lab::has_path_dependency(lab) {
        return;
    }
    let Some(output) = output_entries(&plan.out, Some(stamp(&plan.out))) else {
        return;
    };
    let record = Record {
        version: VERSION,
        inputs,
        toolchain: lab::toolchain(),
        pin: built.pin,
        output,
        chapters: built.chapters,
        files: built.files,
        experiments: built.experiments,
    };
    write(plan, &record);
}

fn write(plan: &BuildPlan, record: &Record) {
    let path = plan.root.join(RECORD);
    let Some(dir) = path.parent() else {
        return;
    };
    let _ = std::fs::create_dir_all(dir);
    if let (Ok(json), Ok(mut tmp)) = (
        serde_json::to_vec(record),
        tempfile::NamedTempFile::new_in(dir),
    ) && std::io::Write::write_all(&mut tmp, &json).is_ok()
    {
        let _ = tmp.persist(path);
    }
}

/// The hash of everything under the root a build could read, and of what else decides its
/// output; `None` if a symbolic link could lead the build outside what is hashed.
fn inputs_hash(plan: &BuildPlan) -> Option<String> {
    let mut hasher = blake3::Hasher::new();
    let mut part = |bytes: &[u8]| part(&mut hasher, bytes);
    part(b"attnbook unchanged inputs");
    part(crate::render::cache::binary_identity().as_bytes());
    // Not `--rerun`: what a rerun stores in the experiment cache is what its output shows, as
    // the next build's would.
    let options = format!(
        "{:?} {:?} {:?} {} {} {}",
        plan.out, plan.base_url, plan.repository, plan.drafts, plan.strict, plan.recycle_output,
    );
    part(options.as_bytes());
    for name in ENVIRONMENT.iter().chain(lab_protocol::RESULT_ENV.iter()) {
        let value = std::env::var_os(name).unwrap_or_default();
        part(name.as_bytes());
        part(value.as_encoded_bytes());
    }
    let out = plan.out.canonicalize().unwrap_or_else(|_| plan.out.clone());
    let root = &plan.root;
    let skipped = |path: &Path| {
        let rel = path.strip_prefix(root).unwrap_or(path);
        let top = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy());
        matches!(top.as_deref(), Some(".git" | ".attnbook" | "target"))
            // The staging and replaced trees of a build, next to the output.
            || top.is_some_and(|t| t.starts_with(".attnbook-"))
            || path.canonicalize().is_ok_and(|p| p == out)
    };
    let walk = walkdir::WalkDir::new(root)
        .min_depth(1)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| !(e.file_type().is_dir() && skipped(e.path())));
    for entry in walk {
        let entry = entry.ok()?;
        let rel = entry.path().strip_prefix(root).ok()?;
        let kind = entry.file_type();
        if kind.is_symlink() {
            return None;
        }
        part(rel.as_os_str().as_encoded_bytes());
        if kind.is_file() {
            part(&std::fs::read(entry.path()).ok()?);
        } else {
            part(if kind.is_dir() { b"dir" } else { b"other" });
        }
    }
    Some(hasher.finalize().to_hex().to_string())
}

/// The inputs' hash with the experiment cache's state: taken when checking, and when recording
/// after the build (which holds the site's lock, so only it wrote the cache meanwhile: the
/// record then holds what it ran).
fn with_results(inputs: &str, root: &Path) -> Option<String> {
    let mut hasher = blake3::Hasher::new();
    let mut part = |bytes: &[u8]| part(&mut hasher, bytes);
    part(inputs.as_bytes());
    // The experiments' results are read from their cache, which runs, `verify` and `--rerun`
    // write: each entry is known by its file's times and inode (they are replaced, never
    // written through).
    let cache = root.join(".attnbook/cache");
    let mut results: Vec<_> = std::fs::read_dir(&cache)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            name.to_string_lossy().ends_with(".json") && name != RECORD_NAME
        })
        .collect();
    results.sort_by_key(|e| e.file_name());
    for entry in results {
        let meta = entry.metadata().ok()?;
        let times = format!(
            "{} {} {} {} {} {}",
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ctime(),
            meta.ctime_nsec(),
            meta.ino()
        );
        part(entry.file_name().as_encoded_bytes());
        part(times.as_bytes());
    }
    Some(hasher.finalize().to_hex().to_string())
}

/// Now, by the clock of the file system that holds `out`: the status-change time of a file
/// created next to it (git's index takes its own time the same way). A file whose status
/// changed before this moment and changes again after it gets a later time; one that changed
/// in this very tick might not. `(i64::MIN, 0)`, which makes every file racy, if no file can
/// be created there.
fn stamp(out: &Path) -> Stamp {
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    tempfile::Builder::new()
        .prefix(".attnbook-stamp-")
        .tempfile_in(parent)
        .ok()
        .and_then(|file| file.as_file().metadata().ok())
        .map_or((i64::MIN, 0), |meta| (meta.ctime(), meta.ctime_nsec()))
}

/// The output tree's entries, sorted. With `stamp` (recording), every file whose status
/// changed at or after it carries its bytes' hash: its times could still be those of a rewrite
/// in the same clock tick. Without (checking), no hashes are taken.
fn output_entries(out: &Path, stamp: Option<Stamp>) -> Option<Vec<Entry>> {
    let mut entries = Vec::new();
    for entry in walkdir::WalkDir::new(out).min_depth(1).sort_by_file_name() {
        let entry = entry.ok()?;
        let meta = entry.metadata().ok()?;
        if meta.file_type().is_symlink() {
            return None;
        }
        let changed = (meta.ctime(), meta.ctime_nsec());
        let racy = stamp.is_some_and(|stamp| changed >= stamp || stamp.0 == i64::MIN);
        let hash = (racy && meta.is_file())
            .then(|| file_hash(entry.path()))
            .flatten();
        entries.push(Entry {
            path: entry.path().strip_prefix(out).ok()?.to_path_buf(),
            dir: meta.is_dir(),
            len: meta.len(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed,
            inode: meta.ino(),
            hash,
        });
    }
    Some(entries)
}

/// True if the output tree is still entry for entry what the record says.
fn output_holds(out: &Path, recorded: &[Entry]) -> bool {
    let Some(mut now) = output_entries(out, None) else {
        return false;
    };
    if now.len() != recorded.len() {
        return false;
    }
    for (now, recorded) in now.iter_mut().zip(recorded) {
        if let Some(hash) = &recorded.hash {
            now.hash = file_hash(&out.join(&now.path));
            if now.hash.as_ref() != Some(hash) {
                return false;
            }
        }
        if now != recorded {
            return false;
        }
    }
    true
}

/// Adds `bytes` to `hasher` with their length first, so that two parts cannot run together.
fn part(hasher: &mut blake3::Hasher, bytes: &[u8]) {
    hasher.update(&(bytes.len() as u64).to_le_bytes());
    hasher.update(bytes);
}

fn file_hash(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(blake3::hash(&bytes).to_hex().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file whose status changed at or after the record's stamp could be rewritten in place
    /// in the same clock tick, with the same times: its bytes are compared. An older one is
    /// known by its times.
    #[test]
    fn a_file_too_recent_for_its_times_is_compared_by_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("a.html"), "page").unwrap();
        let meta = std::fs::metadata(out.join("a.html")).unwrap();
        let same_tick = (meta.ctime(), meta.ctime_nsec());
        let recorded = output_entries(&out, Some(same_tick)).unwrap();
        assert_eq!(
            recorded[0].hash.as_deref(),
            Some(blake3::hash(b"page").to_hex().as_str())
        );
        assert!(output_holds(&out, &recorded));
        let mut other_bytes = recorded;
        other_bytes[0].hash = Some(blake3::hash(b"PAGE").to_hex().to_string());
        assert!(!output_holds(&out, &other_bytes));
        let later = (same_tick.0 + 1, same_tick.1);
        let old = output_entries(&out, Some(later)).unwrap();
        assert_eq!(old[0].hash, None);
        assert!(output_holds(&out, &old));
        // The stamp is taken next to the output, and no later than now.
        assert!(stamp(&out) >= same_tick);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
