//! The output guard: which directories a build may replace.
//!
//! A build swaps its output directory out whole (emit.rs), and `serve` deletes the old one, so
//! an output directory that holds anything else loses it. Before anything is staged, the
//! output must be somewhere a site can live: not the site root or a directory that contains
//! it, not inside the site's sources or cache, not a file; and if it already holds something,
//! that must be an earlier attnbook build (or `--force` must say that losing it is fine, as in
//! Zola). Paths are compared after resolving symbolic links and `..`, so `--out .`,
//! `--out ../site` and a link to the root are all seen for what they are.

use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};

use crate::diagnostic::Diagnostic;
use crate::render::search::INDEX_PATH;

/// The file every build writes into its output, so the next build knows the directory is its own.
pub(crate) const MARKER: &str = ".attnbook-output";

/// What the marker says to someone who finds it.
pub(crate) const MARKER_TEXT: &str =
    "written by attnbook: every `attnbook build` replaces this whole directory\n";

/// Directories of the site root that hold sources or the cache; an output inside one would
/// swallow them. (The bibliography lives in `content/`.)
const SOURCE_DIRS: [&str; 4] = ["content", "static", "templates", ".attnbook"];

/// The files every build made before the marker existed, all present in such an output.
const LEGACY_FILES: [&str; 3] = ["index.html", ".nojekyll", INDEX_PATH];

/// What to suggest instead of a refused output directory.
const HELP: &str = "choose a directory of its own for the output, e.g. --out public";

/// Refuses an output directory whose replacement would lose sources or someone's files.
///
/// `out` may not exist yet. With `force`, a non-empty directory that no attnbook build made is
/// accepted; nothing overrides the other refusals.
pub(crate) fn check_output_dir(root: &Path, out: &Path, force: bool) -> Result<(), Diagnostic> {
    let real_root = resolve(root).map_err(|e| unusable(out, &e))?;
    let real_out = resolve(out).map_err(|e| unusable(out, &e))?;
    if let Some(reason) = clash_with_sources(&real_root, &real_out) {
        return Err(refusal(out, &reason).with_help(HELP));
    }
    check_existing(out, force)
}

/// Why `out` may not replace anything of the site at `root` (both resolved), if it may not.
fn clash_with_sources(root: &Path, out: &Path) -> Option<String> {
    if out == root {
        return Some("it is the site root".to_string());
    }
    if root.starts_with(out) {
        return Some(format!("it contains the site root {}", root.display()));
    }
    // Resolved one by one: a source directory may itself be a link to elsewhere.
    SOURCE_DIRS.iter().find_map(|dir| {
        let real = resolve(&root.join(dir)).ok()?;
        out.starts_with(&real)
            .then(|| format!("it is inside the site's `{dir}/`"))
    })
}

/// What is at `out` now must be nothing, an empty directory or an earlier build.
fn check_existing(out: &Path, force: bool) -> Result<(), Diagnostic> {
    match std::fs::metadata(out) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(refusal(out, "it is a file, not a directory").with_help(HELP)),
        // Under a file (`ENOTDIR`) the output cannot be created at all, and the write says
        // so with the path it could not create; nothing can be lost there.
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            if std::fs::symlink_metadata(out).is_ok() {
                return Err(refusal(out, "it is a symbolic link to nothing").with_help(HELP));
            }
            return Ok(());
        }
        Err(e) => return Err(unusable(out, &e)),
    }
    if force || made_by_attnbook(out) {
        return Ok(());
    }
    let mut entries = std::fs::read_dir(out).map_err(|e| unusable(out, &e))?;
    if entries.next().is_none() {
        return Ok(());
    }
    Err(
        refusal(out, "it is not empty, and no attnbook build made it")
            .with_note(format!(
                "a directory an attnbook build made holds `{MARKER}`"
            ))
            .with_help(
                "choose another directory (e.g. --out public), empty this one, \
                 or pass --force to replace it and everything in it",
            ),
    )
}

/// The marker, or the files every build wrote before there was a marker.
fn made_by_attnbook(dir: &Path) -> bool {
    dir.join(MARKER).is_file() || LEGACY_FILES.iter().all(|f| dir.join(f).is_file())
}

/// Refuses a list of output files with a path that is not plainly inside the output directory
/// (absolute, empty, or with a `.` or `..` component) or that is given twice. Every path comes
/// from the site's own code, but names in it come from the input (slugs, tags, static files):
/// this is the last check before anything is written, whatever an earlier one missed.
pub(crate) fn check_paths<T>(files: &[(PathBuf, T)]) -> Result<(), Vec<Diagnostic>> {
    let mut seen = std::collections::HashSet::new();
    let mut problems = Vec::new();
    for (rel, _) in files {
        let plain = !rel.as_os_str().is_empty()
            && rel.components().all(|c| matches!(c, Component::Normal(_)));
        if !plain {
            problems.push(Diagnostic::error(format!(
                "refusing to write `{}`: the path would be outside the output directory",
                rel.display()
            )));
        } else if !seen.insert(rel) {
            problems.push(
                Diagnostic::error(format!(
                    "refusing to write `{}` twice: two outputs of the site have the same path",
                    rel.display()
                ))
                .with_help("rename the chapter or the file of static/ that takes this path"),
            );
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(problems)
}

fn refusal(out: &Path, reason: &str) -> Diagnostic {
    Diagnostic::error(format!(
        "refusing to use {} as the output directory: {reason}",
        out.display()
    ))
    .with_note("a build replaces its output directory whole; nothing has been changed")
}

fn unusable(out: &Path, e: &std::io::Error) -> Diagnostic {
    Diagnostic::error(format!(
        "cannot use {} as the output directory: {e}",
        out.display()
    ))
    .with_help(HELP)
}

/// `path` made absolute, with every symbolic link and `..` resolved as far as the path exists;
/// the part that does not exist yet is appended as written (its `..` taken lexically, as
/// creating it would).
fn resolve(path: &Path) -> std::io::Result<PathBuf> {
    let mut real = PathBuf::new();
    for component in std::path::absolute(path)?.components() {
        match component {
            Component::CurDir => {}
            // `real` is resolved so far, so its parent is the real parent.
            Component::ParentDir => {
                real.pop();
            }
            other => {
                real.push(other);
                if let Ok(resolved) = real.canonicalize() {
                    real = resolved;
                }
            }
        }
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["content", "static", ".attnbook"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        std::fs::write(dir.path().join("site.toml"), "title = \"t\"\n").unwrap();
        dir
    }

    fn refused(root: &Path, out: &Path, force: bool) -> String {
        match check_output_dir(root, out, force) {
            Ok(()) => panic!("{} was accepted", out.display()),
            Err(d) => d.message,
        }
    }

    #[test]
    fn resolve_follows_links_and_dot_dot_as_far_as_the_path_exists() {
        let site = site();
        let root = site.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(&root, root.join("static/up")).unwrap();
        assert_eq!(resolve(&root.join("static/up")).unwrap(), root);
        assert_eq!(resolve(&root.join("content/..")).unwrap(), root);
        assert_eq!(resolve(&root.join("new/../.")).unwrap(), root);
        assert_eq!(
            resolve(&root.join("new/deeper")).unwrap(),
            root.join("new/deeper")
        );
        assert_eq!(resolve(Path::new("/")).unwrap(), Path::new("/"));
    }

    #[test]
    fn the_root_its_ancestors_and_its_sources_are_refused_even_with_force() {
        let site = site();
        let root = site.path();
        let cases = [
            (root.to_path_buf(), "is the site root"),
            (root.join("."), "is the site root"),
            (root.join("content/.."), "is the site root"),
            (root.join(".."), "contains the site root"),
            (PathBuf::from("/"), "contains the site root"),
            (root.join("content"), "inside the site's `content/`"),
            (root.join("content/new/out"), "inside the site's `content/`"),
            (root.join("static/x"), "inside the site's `static/`"),
            (root.join("templates/x"), "inside the site's `templates/`"),
            (
                root.join(".attnbook/spare-output"),
                "inside the site's `.attnbook/`",
            ),
            (root.join("site.toml"), "is a file"),
        ];
        for (out, expected) in cases {
            let message = refused(root, &out, true);
            assert!(message.contains(expected), "{}: {message}", out.display());
        }
    }

    #[test]
    fn a_link_to_the_root_is_the_root() {
        let site = site();
        let link = site.path().join("public");
        std::os::unix::fs::symlink(site.path(), &link).unwrap();
        assert!(refused(site.path(), &link, true).contains("is the site root"));
    }

    #[test]
    fn a_foreign_directory_needs_force_and_an_earlier_build_does_not() {
        let site = site();
        let out = site.path().join("public");
        std::fs::create_dir(&out).unwrap();
        assert!(check_output_dir(site.path(), &out, false).is_ok(), "empty");
        std::fs::write(out.join("index.html"), "mine").unwrap();
        assert!(refused(site.path(), &out, false).contains("not empty"));
        assert!(check_output_dir(site.path(), &out, true).is_ok(), "forced");
        std::fs::write(out.join(".nojekyll"), "").unwrap();
        std::fs::write(out.join(INDEX_PATH), "[]").unwrap();
        assert!(check_output_dir(site.path(), &out, false).is_ok(), "legacy");
        std::fs::remove_file(out.join(".nojekyll")).unwrap();
        std::fs::write(out.join(MARKER), MARKER_TEXT).unwrap();
        assert!(check_output_dir(site.path(), &out, false).is_ok(), "marker");
    }

    #[test]
    fn a_dangling_link_is_refused_and_a_path_under_a_file_is_left_to_the_write() {
        let site = site();
        let root = site.path();
        assert!(check_output_dir(root, &root.join("site.toml/x"), false).is_ok());
        std::os::unix::fs::symlink(root.join("nowhere"), root.join("dangling")).unwrap();
        assert!(refused(root, &root.join("dangling"), true).contains("symbolic link"));
    }
}
