//! The experiment crate's `Cargo.lock`.
//!
//! It starts as a copy of the runtime workspace's lock file (so the experiments compile with
//! the versions attnbook was tested with) and cargo then keeps it: it drops what the crate does
//! not use and adds the crate itself. Whenever what it started from changes (the runtime's lock,
//! the crate's manifest), it starts again from the new copy, so an old resolution never
//! outlives the inputs it came from: the take-home downloads carry this file, and after an edit
//! of the workspace is undone they must carry the lock of today's sources, not of the edit.

use std::path::Path;
use std::process::{Command, Stdio};

/// The file recording what the lock was started from.
const SEED: &str = ".lock-seed";

/// Starts `crate_dir/Cargo.lock` again from `site_lock` (the lock the site keeps for its
/// `[lab.dependencies]`, when it has one) or else the lock file of the runtime's `workspace`
/// root, unless it was started from the same locks, the same workspace `Cargo.toml` (whose
/// `[workspace.dependencies]` the runtime inherits) and the same crate `manifest`. True when
/// it was started again.
pub(super) fn seed(
    crate_dir: &Path,
    workspace: Option<&Path>,
    manifest: &str,
    site_lock: Option<&str>,
) -> std::io::Result<bool> {
    let read = |name: &str| workspace.and_then(|root| std::fs::read(root.join(name)).ok());
    let workspace_lock = read("Cargo.lock");
    let seed_text = site_lock
        .map(|text| text.as_bytes().to_vec())
        .or_else(|| workspace_lock.clone());
    let mut hasher = blake3::Hasher::new();
    hasher.update(manifest.as_bytes());
    if let Some(site) = site_lock {
        // Absent, the inputs hash as before: a site without dependencies is not reseeded.
        hasher.update(b"\0site\0");
        hasher.update(site.as_bytes());
    }
    for part in [read("Cargo.toml"), workspace_lock] {
        hasher.update(b"\0");
        hasher.update(part.as_deref().unwrap_or_default());
    }
    let inputs = hasher.finalize().to_hex().to_string();
    let lock = crate_dir.join("Cargo.lock");
    let marker = crate_dir.join(SEED);
    if lock.exists() && std::fs::read_to_string(&marker).ok().as_deref() == Some(inputs.as_str()) {
        return Ok(false);
    }
    match seed_text {
        Some(text) => std::fs::write(&lock, text)?,
        None => {
            let _ = std::fs::remove_file(&lock);
        }
    }
    std::fs::write(&marker, inputs)?;
    Ok(true)
}

/// Lets cargo bring the lock file in line with the crate without building anything
/// (`cargo metadata` resolves and writes the lock, reusing every version it can).
pub(super) fn resolve(crate_dir: &Path, target_dir: &Path) -> Result<(), String> {
    resolve_raw(crate_dir, target_dir).map_err(|stderr| {
        format!(
            "cannot resolve the experiments' dependencies: {}",
            stderr.trim()
        )
    })
}

/// [`resolve`]; `Err` holds what cargo printed on standard error.
pub(super) fn resolve_raw(crate_dir: &Path, target_dir: &Path) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(crate_dir)
        .env("CARGO_TARGET_DIR", target_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lock starts again from the runtime's whenever the runtime's lock or the manifest
    /// changes, and only then (cargo's own edits of it are kept in between).
    #[test]
    fn the_lock_is_reseeded_when_its_inputs_change() {
        let dir = tempfile::tempdir().unwrap();
        let seed_file = dir.path().join("Cargo.lock");
        let krate = dir.path().join("lab");
        std::fs::create_dir_all(&krate).unwrap();
        std::fs::write(&seed_file, "version = 4\n").unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "[workspace]\n").unwrap();
        let seed_file_dir = Some(dir.path());
        assert!(seed(&krate, seed_file_dir, "m1", None).unwrap());
        assert_eq!(
            std::fs::read_to_string(krate.join("Cargo.lock")).unwrap(),
            "version = 4\n"
        );
        std::fs::write(krate.join("Cargo.lock"), "resolved by cargo").unwrap();
        assert!(!seed(&krate, seed_file_dir, "m1", None).unwrap());
        assert_eq!(
            std::fs::read_to_string(krate.join("Cargo.lock")).unwrap(),
            "resolved by cargo"
        );
        assert!(
            seed(&krate, seed_file_dir, "m2", None).unwrap(),
            "a new manifest"
        );
        std::fs::write(krate.join("Cargo.lock"), "resolved by cargo").unwrap();
        std::fs::write(&seed_file, "version = 4\n# new\n").unwrap();
        assert!(
            seed(&krate, seed_file_dir, "m2", None).unwrap(),
            "a new runtime lock"
        );
        assert_eq!(
            std::fs::read_to_string(krate.join("Cargo.lock")).unwrap(),
            "version = 4\n# new\n"
        );
        std::fs::write(krate.join("Cargo.lock"), "resolved by cargo").unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "[workspace]\n# features\n").unwrap();
        assert!(
            seed(&krate, seed_file_dir, "m2", None).unwrap(),
            "a new workspace manifest"
        );
        std::fs::write(krate.join("Cargo.lock"), "resolved by cargo").unwrap();
        assert!(!seed(&krate, seed_file_dir, "m2", None).unwrap());
        assert!(
            seed(&krate, seed_file_dir, "m2", Some("site lock")).unwrap(),
            "a site lock"
        );
        assert_eq!(
            std::fs::read_to_string(krate.join("Cargo.lock")).unwrap(),
            "site lock",
            "started from the site's lock"
        );
        assert!(!seed(&krate, seed_file_dir, "m2", Some("site lock")).unwrap());
        assert!(seed(&krate, seed_file_dir, "m2", Some("site lock 2")).unwrap());
    }
}
