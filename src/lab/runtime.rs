//! Where the experiment runtime (`lab`, `attention`, `lab-protocol`) comes from.
//!
//! The runtime's sources travel inside the binary: every file of `crates/{attention,lab,
//! lab-protocol}/src`, their manifests, and the workspace root's `Cargo.toml` and `Cargo.lock`
//! (the crates inherit versions and lints from it). Their content hash names this copy.
//!
//! Once per process attnbook decides which copy the experiments link:
//!
//! - **the checkout** it was compiled from (`env!("CARGO_MANIFEST_DIR")`), when that directory
//!   still holds these crates *and their hash equals the built-in copy's*: in the repository,
//!   after `cargo run`, this is always so (cargo rebuilds the binary when a runtime source
//!   changes), and editing the core reruns the chapters as it always did. A binary built from
//!   another checkout, or one older than the edits beside it, sees a different hash and never
//!   uses those crates;
//! - otherwise **the built-in copy**, written once into the cache directory
//!   (`runtime/VERSION-HASH/` under `$ATTNBOOK_CACHE_DIR`, else `$XDG_CACHE_HOME/attnbook`,
//!   else `~/.cache/attnbook`). An installed binary whose source directory is gone uses it.
//!
//! The decision is taken once, at the first use, and kept for the process: `serve` keeps
//! following edits of the checkout it started with.
//!
//! Experiments compile into `$ATTNBOOK_TARGET_DIR`, else `$CARGO_TARGET_DIR`, else the
//! checkout's `target/` (checkout) or the cache directory's `target/` (built-in copy).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use include_dir::{Dir, include_dir};

static ATTENTION: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/crates/attention/src");
static LAB: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/crates/lab/src");
static PROTOCOL: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/crates/lab-protocol/src");

/// The runtime crates: (directory under the workspace root, manifest, sources).
const CRATES: [(&str, &str, &Dir<'_>); 3] = [
    (
        "crates/attention",
        include_str!("../../crates/attention/Cargo.toml"),
        &ATTENTION,
    ),
    (
        "crates/lab",
        include_str!("../../crates/lab/Cargo.toml"),
        &LAB,
    ),
    (
        "crates/lab-protocol",
        include_str!("../../crates/lab-protocol/Cargo.toml"),
        &PROTOCOL,
    ),
];

/// The workspace root's manifest and lock file, as compiled in.
const ROOT_MANIFEST: &str = include_str!("../../Cargo.toml");
const ROOT_LOCK: &str = include_str!("../../Cargo.lock");

/// Which copy of the runtime the experiments link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The checked-out crates of the repository this binary was compiled from.
    Checkout,
    /// The copy built into the binary, written to the cache directory.
    BuiltIn,
}

/// The runtime the experiments of this process link.
#[derive(Debug, Clone)]
pub struct Runtime {
    /// The workspace root holding `crates/lab` (and `Cargo.toml`, `Cargo.lock`).
    pub root: PathBuf,
    /// Where it came from.
    pub source: Source,
    /// The content hash of the built-in sources (hex).
    pub hash: String,
    /// Why the checkout at the compile-time path was not used, when it exists but differs.
    pub note: Option<String>,
}

impl Runtime {
    /// The `lab` crate.
    pub fn lab_crate(&self) -> PathBuf {
        self.root.join("crates").join("lab")
    }

    /// Where experiments compile by default (before `ATTNBOOK_TARGET_DIR` and
    /// `CARGO_TARGET_DIR`).
    fn default_target(&self) -> PathBuf {
        match self.source {
            Source::Checkout => self.root.join("target"),
            Source::BuiltIn => {
                cache_dir().map_or_else(|| self.root.join("target"), |c| c.join("target"))
            }
        }
    }

    /// The experiments' target directory: `$ATTNBOOK_TARGET_DIR`, else `$CARGO_TARGET_DIR`,
    /// else the checkout's `target/` or, for the built-in runtime, `<cache>/target`.
    pub fn target_dir(&self) -> PathBuf {
        ["ATTNBOOK_TARGET_DIR", "CARGO_TARGET_DIR"]
            .iter()
            .find_map(|name| std::env::var_os(name).filter(|v| !v.is_empty()))
            .map_or_else(|| self.default_target(), PathBuf::from)
    }
}

/// The runtime of this process (decided at the first call, see the module docs).
pub fn runtime() -> Result<&'static Runtime, String> {
    static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
    RUNTIME.get_or_init(locate).as_ref().map_err(Clone::clone)
}

/// The cache directory: `$ATTNBOOK_CACHE_DIR`, else `$XDG_CACHE_HOME/attnbook`, else
/// `$HOME/.cache/attnbook`. Relative values are ignored, as the XDG specification says.
pub fn cache_dir() -> Option<PathBuf> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute("ATTNBOOK_CACHE_DIR")
        .or_else(|| absolute("XDG_CACHE_HOME").map(|d| d.join("attnbook")))
        .or_else(|| absolute("HOME").map(|d| d.join(".cache").join("attnbook")))
}

/// Every file of the built-in runtime as `(path under the workspace root, bytes)`, sorted;
/// `manifest` is the root `Cargo.toml` to list.
fn built_in_files(manifest: &str) -> Vec<(String, Vec<u8>)> {
    let mut files = vec![
        ("Cargo.toml".to_string(), manifest.as_bytes().to_vec()),
        ("Cargo.lock".to_string(), ROOT_LOCK.as_bytes().to_vec()),
    ];
    for (dir, crate_manifest, sources) in CRATES {
        files.push((
            format!("{dir}/Cargo.toml"),
            crate_manifest.as_bytes().to_vec(),
        ));
        let mut stack = vec![sources];
        while let Some(d) = stack.pop() {
            for file in d.files() {
                files.push((
                    format!("{dir}/src/{}", file.path().display()),
                    file.contents().to_vec(),
                ));
            }
            stack.extend(d.dirs());
        }
    }
    files.sort();
    files
}

/// The same files as [`built_in_files`], read from a workspace root on disk (`None` when the
/// root does not hold the runtime crates).
fn files_on_disk(root: &Path) -> Option<Vec<(String, Vec<u8>)>> {
    let mut files = Vec::new();
    for rel in ["Cargo.toml", "Cargo.lock"] {
        files.push((rel.to_string(), std::fs::read(root.join(rel)).ok()?));
    }
    for (dir, _, _) in CRATES {
        let krate = root.join(dir);
        files.push((
            format!("{dir}/Cargo.toml"),
            std::fs::read(krate.join("Cargo.toml")).ok()?,
        ));
        for entry in walkdir::WalkDir::new(krate.join("src")) {
            let entry = entry.ok()?;
            if entry.file_type().is_file() {
                let rel = entry.path().strip_prefix(root).ok()?;
                files.push((
                    rel.to_string_lossy().into_owned(),
                    std::fs::read(entry.path()).ok()?,
                ));
            }
        }
    }
    files.sort();
    Some(files)
}

/// A hash of `(path, bytes)` pairs.
fn hash(files: &[(String, Vec<u8>)]) -> String {
    let mut hasher = blake3::Hasher::new();
    for (path, bytes) in files {
        hasher.update(path.as_bytes());
        hasher.update(b"\0");
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    hasher.finalize().to_hex().to_string()
}

/// The content hash of the built-in runtime (as compiled, the real root manifest included).
pub fn built_in_hash() -> String {
    hash(&built_in_files(ROOT_MANIFEST))
}

fn locate() -> Result<Runtime, String> {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR"));
    let built_in = built_in_hash();
    let note = match files_on_disk(checkout) {
        Some(files) if hash(&files) == built_in => {
            return Ok(Runtime {
                root: checkout.to_path_buf(),
                source: Source::Checkout,
                hash: built_in,
                note: None,
            });
        }
        Some(_) => Some(format!(
            "the experiment runtime in {} differs from the one this attnbook was built with; \
             its built-in copy is used (rebuild attnbook there, e.g. `cargo run --release --`, \
             to run the edited crates)",
            checkout.join("crates").display()
        )),
        None => None,
    };
    let cache = cache_dir().ok_or(
        "no cache directory for the experiment runtime: set ATTNBOOK_CACHE_DIR, XDG_CACHE_HOME \
         or HOME to an absolute path",
    )?;
    let root = write_built_in(&cache, &built_in)?;
    Ok(Runtime {
        root,
        source: Source::BuiltIn,
        hash: built_in,
        note,
    })
}

/// The root `Cargo.toml` written with the built-in copy: the compiled-in manifest's
/// `[workspace]` table (shared versions, lints) with the runtime crates as its only members,
/// and no package of its own (the generator's sources are not part of the runtime).
fn workspace_manifest() -> Result<String, String> {
    let manifest: toml::Table =
        toml::from_str(ROOT_MANIFEST).map_err(|e| format!("the built-in Cargo.toml: {e}"))?;
    let mut workspace = manifest
        .get("workspace")
        .and_then(toml::Value::as_table)
        .cloned()
        .unwrap_or_default();
    workspace.remove("default-members");
    workspace.remove("exclude");
    workspace.insert(
        "members".into(),
        toml::Value::Array(
            CRATES
                .iter()
                .map(|(d, _, _)| toml::Value::from(*d))
                .collect(),
        ),
    );
    let mut out = toml::Table::new();
    out.insert("workspace".into(), toml::Value::Table(workspace));
    let text = toml::to_string(&out).map_err(|e| format!("the built-in Cargo.toml: {e}"))?;
    Ok(format!(
        "# The experiment runtime of attnbook {}, written from the copy built into the binary.\n{text}",
        env!("CARGO_PKG_VERSION")
    ))
}

/// Writes the built-in runtime into `cache/runtime/VERSION-HASH/` unless a complete copy is
/// there (a copy is complete once renamed into place; a tampered copy is written again).
fn write_built_in(cache: &Path, hash_hex: &str) -> Result<PathBuf, String> {
    let parent = cache.join("runtime");
    let dir = parent.join(format!("{}-{}", env!("CARGO_PKG_VERSION"), &hash_hex[..16]));
    let files = built_in_files(&workspace_manifest()?);
    if files_on_disk(&dir).is_some_and(|on_disk| hash(&on_disk) == hash(&files)) {
        return Ok(dir);
    }
    let io = |e: std::io::Error| {
        format!(
            "cannot write the experiment runtime into {}: {e}",
            parent.display()
        )
    };
    std::fs::create_dir_all(&parent).map_err(io)?;
    let staging = tempfile::Builder::new()
        .prefix(".partial-")
        .tempdir_in(&parent)
        .map_err(io)?;
    for (rel, bytes) in &files {
        let path = staging.path().join(rel);
        if let Some(up) = path.parent() {
            std::fs::create_dir_all(up).map_err(io)?;
        }
        std::fs::write(&path, bytes).map_err(io)?;
    }
    if dir.exists() {
        // Incomplete or edited by hand: replaced whole.
        let _ = std::fs::remove_dir_all(&dir);
    }
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, &dir) {
        let _ = std::fs::remove_dir_all(&staged);
        // Another attnbook wrote the same copy at the same moment.
        if files_on_disk(&dir).is_none_or(|on_disk| hash(&on_disk) != hash(&files)) {
            return Err(io(e));
        }
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In this repository, after cargo built this test binary, the checkout holds exactly the
    /// built-in sources, so they are the ones used.
    #[test]
    fn the_checkout_matches_the_built_in_copy() {
        let files = files_on_disk(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
        assert_eq!(hash(&files), built_in_hash());
        assert!(files.iter().any(|(p, _)| p == "crates/lab/src/lib.rs"));
        assert!(files.iter().any(|(p, _)| p == "Cargo.toml"));
    }

    /// The built-in copy written to a cache directory is complete (every crate's sources and a
    /// workspace manifest cargo can read), written once, and written again when tampered with.
    #[test]
    fn the_built_in_copy_is_written_once_and_repaired() {
        let cache = tempfile::tempdir().unwrap();
        let dir = write_built_in(cache.path(), &built_in_hash()).unwrap();
        assert!(dir.join("crates/attention/src/lib.rs").is_file());
        assert!(dir.join("crates/lab-protocol/Cargo.toml").is_file());
        let manifest: toml::Table =
            toml::from_str(&std::fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
        assert!(manifest.get("package").is_none());
        assert!(
            manifest["workspace"]["dependencies"]
                .get("ndarray")
                .is_some()
        );
        let lib = dir.join("crates/lab/src/lib.rs");
        let mtime = std::fs::metadata(&lib).unwrap().modified().unwrap();
        assert_eq!(write_built_in(cache.path(), &built_in_hash()).unwrap(), dir);
        assert_eq!(
            std::fs::metadata(&lib).unwrap().modified().unwrap(),
            mtime,
            "not rewritten"
        );
        std::fs::write(&lib, "// edited").unwrap();
        write_built_in(cache.path(), &built_in_hash()).unwrap();
        assert_ne!(std::fs::read_to_string(&lib).unwrap(), "// edited");
        let leftovers: Vec<_> = std::fs::read_dir(cache.path().join("runtime"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    }
}
