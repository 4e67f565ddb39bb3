//! Stage 6: every output file of the site, then the atomic swap into the output directory.

use include_dir::{Dir, include_dir};

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::content::Series;
use crate::diagnostic::Diagnostic;
use crate::render;
use crate::render::Page;
use crate::render::cache::Output;

/// Default static assets (CSS, JS, KaTeX CSS and fonts), embedded so any site looks right.
static DEFAULT_STATIC: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/static");

/// The directory of the built-in `static/` that holds the series' diagrams, not site defaults.
const SERIES_DIAGRAMS: &str = "figures";

/// Every output file as `(relative path, bytes)`; a stored page's bytes are read only if
/// they must be written.
pub(super) type Files = Vec<(PathBuf, Output)>;

pub(super) fn render_site(
    series: &Series<Page>,
    intro: &str,
    timings: &mut super::Timings,
) -> Result<Files, Vec<Diagnostic>> {
    let store = render::cache::Blobs::open(render::cache::pages_dir(&series.root));
    let templates = render::Templates::load(&series.root, store)?;
    timings.lap("templates");
    let values = std::sync::OnceLock::new();
    let related = render::taxonomy::Related::new(series);
    let mut files: Files = Vec::new();
    let mut errors = Vec::new();
    // Every page at once: the chapters' pages and the site's own, in parallel (the print page
    // and the verification page are the largest).
    let print = series.config.print.enabled;
    let verification = series.config.verification.enabled;
    let (pages, (site_pages, taxonomy)) = rayon::join(
        || {
            (0..series.chapters.len())
                .into_par_iter()
                .map(|i| render::chapter_page(&templates, series, &values, &related, i))
                .collect::<Vec<_>>()
        },
        || {
            rayon::join(
                || {
                    let mut pages: Vec<(&str, Box<dyn Fn() -> _ + Send + Sync>)> = vec![
                        (
                            "index.html",
                            Box::new(|| render::index_page(&templates, series, intro)),
                        ),
                        (
                            "404.html",
                            Box::new(|| render::not_found_page(&templates, series)),
                        ),
                        (
                            "atom.xml",
                            Box::new(|| render::feed(&templates, series, "atom.xml")),
                        ),
                        (
                            "sitemap.xml",
                            Box::new(|| render::feed(&templates, series, "sitemap.xml")),
                        ),
                    ];
                    if print {
                        pages.push((
                            render::print::PATH,
                            Box::new(|| render::print::page(&templates, series, intro)),
                        ));
                    }
                    if verification {
                        pages.push((
                            render::verification::PAGE_PATH,
                            Box::new(|| render::verification::page(&templates, series)),
                        ));
                    }
                    pages
                        .into_par_iter()
                        .map(|(path, render)| (path, render()))
                        .collect::<Vec<_>>()
                },
                || render::taxonomy::pages(&templates, series),
            )
        },
    );
    for (chapter, page) in series.chapters.iter().zip(pages) {
        match page {
            Ok(page) => files.push((PathBuf::from(&chapter.slug).join("index.html"), page)),
            Err(d) => errors.push(d),
        }
    }
    for (path, page) in site_pages {
        match page {
            Ok(page) => files.push((PathBuf::from(path), page)),
            Err(d) => errors.push(d),
        }
    }
    match taxonomy {
        Ok(pages) => files.extend(pages),
        Err(d) => errors.push(d),
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    templates.prune();
    timings.lap("pages");
    files.push((PathBuf::from(".nojekyll"), Vec::new().into()));
    files.push((
        PathBuf::from(super::output::MARKER),
        Vec::from(super::output::MARKER_TEXT).into(),
    ));
    let robots = format!(
        "User-agent: *\nAllow: /\nSitemap: {}sitemap.xml\n",
        series.config.base_url_slash()
    );
    files.push((PathBuf::from("robots.txt"), robots.into_bytes().into()));
    if series.config.highlight.enabled {
        files.push((
            PathBuf::from("highlight.css"),
            render::highlight::stylesheet().into_bytes().into(),
        ));
    }
    static_files(&series.root, &mut files)?;
    timings.lap("static files");
    Ok(files)
}

/// Files the site writes that its `static/` may replace, like the built-in stylesheets and
/// scripts: they have no template to override instead.
const REPLACEABLE: [&str; 2] = ["robots.txt", "highlight.css"];

/// Embedded defaults first, then the site's `static/` on top. A static file may replace a
/// built-in asset, never a page the site renders (`index.html`, a tag page, the feed: silently
/// replaced, the page would be lost); that is an error naming the file.
fn static_files(root: &Path, files: &mut Files) -> Result<(), Vec<Diagnostic>> {
    let rendered: std::collections::HashSet<PathBuf> = files
        .iter()
        .map(|(p, _)| p.clone())
        .filter(|p| !REPLACEABLE.iter().any(|r| p == Path::new(r)))
        .collect();
    let mut clashes = Vec::new();
    let mut add = |rel: PathBuf, bytes: Vec<u8>| {
        files.retain(|(p, _)| *p != rel);
        files.push((rel, bytes.into()));
    };
    let mut stack = vec![&DEFAULT_STATIC];
    while let Some(dir) = stack.pop() {
        // The series' own diagrams are the series' static files, not defaults of every site
        // (redteam-3 D22): the series gets them from its `static/` on disk like any site.
        stack.extend(
            dir.dirs()
                .filter(|d| d.path() != Path::new(SERIES_DIAGRAMS)),
        );
        for file in dir.files() {
            add(file.path().to_path_buf(), file.contents().to_vec());
        }
    }
    let dir = root.join("static");
    if dir.is_dir() {
        for entry in walkdir::WalkDir::new(&dir)
            .sort_by_file_name()
            .into_iter()
            .filter_map(Result::ok)
        {
            if entry.file_type().is_file() {
                let rel = entry
                    .path()
                    .strip_prefix(&dir)
                    .unwrap_or(entry.path())
                    .to_path_buf();
                if rendered.contains(&rel) {
                    clashes.push(
                        Diagnostic::error(format!(
                            "`static/{}` would replace the page the site writes at `{}`",
                            rel.display(),
                            rel.display()
                        ))
                        .with_help(
                            "rename or move the file; to change a page the site renders, \
                             override its template in templates/",
                        ),
                    );
                    continue;
                }
                let bytes = std::fs::read(entry.path()).map_err(|e| {
                    vec![Diagnostic::error(format!(
                        "cannot read {}: {e}",
                        entry.path().display()
                    ))]
                })?;
                add(rel, bytes);
            }
        }
    }
    if clashes.is_empty() {
        Ok(())
    } else {
        Err(clashes)
    }
}

/// Stage 6: writes into a staging directory next to `out`, then swaps it in.
///
/// With `spare` (`.attnbook/spare-output`), the output replaced last time is kept there and
/// becomes the next staging directory: rewriting the files of an existing tree costs about a
/// third of creating them, and nothing has to be deleted (measured: 600 pages, 63 ms against
/// 170 ms to create and 110 ms to delete). Whatever the old tree has that this build does not
/// write is pruned before the swap, so the result is exactly `files`.
pub(super) fn write_site(
    out: &Path,
    spare: Option<&Path>,
    files: Files,
    timings: &mut super::Timings,
) -> Result<usize, Vec<Diagnostic>> {
    let io = |what: &str, e: std::io::Error| {
        vec![
            Diagnostic::error(format!("cannot {what} {}: {e}", out.display()))
                .with_help("check that the output directory's parent exists and is writable"),
        ]
    };
    // Whatever the input, nothing is written outside `out`, and no file is written twice.
    super::output::check_paths(&files)?;
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| io("create the parent of", e))?;
    let staging = tempfile::Builder::new()
        .prefix(".attnbook-out-")
        .tempdir_in(parent)
        .map_err(|e| io("stage output next to", e))?;
    let _registered = crate::interrupt::staging_dir(staging.path().to_path_buf());
    // Renaming a directory onto an empty one replaces it; on another file system it fails,
    // and the spare is of no use.
    if let Some(spare) = spare.filter(|s| s.is_dir())
        && std::fs::rename(spare, staging.path()).is_err()
    {
        let _ = std::fs::remove_dir_all(spare);
    }
    if prune(staging.path(), &files).is_err() {
        // Something in the old tree could not be listed or removed: start from nothing.
        let _ = std::fs::remove_dir_all(staging.path());
        std::fs::create_dir_all(staging.path()).map_err(|e| io("stage output next to", e))?;
    }
    let keys = spare.and_then(Path::parent).map(|dir| dir.join(KEYS_DIR));
    let recorded = keys
        .as_deref()
        .map(|dir| Manifest::load(dir, staging.path()))
        .unwrap_or_default();
    let mut written = Manifest::default();
    let count = files.len();
    for (rel, output) in files {
        let path = staging.path().join(&rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io("write", e))?;
        }
        let key = output.key().map(str::to_owned);
        // A recycled tree mostly holds these very bytes already. A stored page written into
        // it by an earlier build and untouched since is known by its key: it is neither read
        // from the store nor compared (30 MB each way for the series). Anything else is read
        // and compared, which costs a fraction of rewriting it (the series' 33 MB, mostly the
        // print page and the feed, took 100-300 ms to rewrite here), and is written only if
        // it differs.
        let known = key
            .as_deref()
            .is_some_and(|key| recorded.holds(&rel, key, &path));
        if !known {
            // Bytes that cannot be the file's (another length, or a file left as another key's
            // page) are written without reading the old ones.
            let superseded = key
                .as_deref()
                .is_some_and(|key| recorded.superseded(&rel, key, &path));
            let same_length = std::fs::symlink_metadata(&path)
                .is_ok_and(|m| m.is_file() && m.len() == output.len());
            if superseded || !same_length {
                replace(&path, output).map_err(|e| io("write", e))?;
            } else {
                let bytes = output.into_bytes().map_err(|e| io("write", e))?;
                if !holds(&path, &bytes) {
                    replace(&path, Output::from(bytes)).map_err(|e| io("write", e))?;
                }
            }
        }
        if let Some(entry) = key.and_then(|key| Entry::of(&path, key)) {
            written.files.insert(rel, entry);
        }
    }
    if let Some(dir) = &keys {
        written.save(dir, staging.path());
    }
    let staged = staging.keep();
    timings.lap("write");
    let old = parent.join(format!(".attnbook-old-{}", std::process::id()));
    // An interrupt waits for the two renames: `out` is never left missing.
    crate::interrupt::critical(|| {
        if out.exists()
            && let Err(e) = std::fs::rename(out, &old)
        {
            // `keep()` ended the temporary directory's own cleanup: a failed swap leaves no copy.
            let _ = std::fs::remove_dir_all(&staged);
            return Err(io("replace", e));
        }
        if let Err(e) = std::fs::rename(&staged, out) {
            let _ = std::fs::rename(&old, out);
            let _ = std::fs::remove_dir_all(&staged);
            return Err(io("replace", e));
        }
        Ok(())
    })?;
    timings.lap("swap");
    if old.exists() {
        let kept = spare.is_some_and(|spare| {
            spare
                .parent()
                .is_some_and(|p| std::fs::create_dir_all(p).is_ok())
                && std::fs::rename(&old, spare).is_ok()
        });
        if !kept {
            let _ = std::fs::remove_dir_all(&old);
        }
    }
    if let Some(dir) = &keys {
        Manifest::tidy(dir, &[out, spare.unwrap_or(out)]);
    }
    timings.lap("keep or remove old output");
    Ok(count)
}

/// Where, beside the spare output, the keys of the pages in each output tree are kept.
const KEYS_DIR: &str = "output-keys";

/// What an output tree holds: for each file written from a stored page, the page's key and
/// the file as it was left (length, modification time, inode). Kept per tree (by the tree's
/// own inode, which the swaps' renames preserve) in `.attnbook/output-keys/`; a file that no
/// longer matches what was recorded (edited, replaced, touched) is read and compared again.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Manifest {
    files: HashMap<PathBuf, Entry>,
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Entry {
    key: String,
    len: u64,
    modified_ns: i64,
    modified_s: i64,
    inode: u64,
}

impl Entry {
    /// The file at `path` as it is now, holding the page stored under `key`.
    fn of(path: &Path, key: String) -> Option<Entry> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        Some(Entry {
            key,
            len: meta.len(),
            modified_ns: meta.mtime_nsec(),
            modified_s: meta.mtime(),
            inode: meta.ino(),
        })
    }
}

impl Manifest {
    /// The manifest's file for the tree at `tree`: named by the tree's device and inode.
    fn file(dir: &Path, tree: &Path) -> Option<PathBuf> {
        let meta = std::fs::metadata(tree).ok()?;
        Some(dir.join(format!("{}-{}.json", meta.dev(), meta.ino())))
    }

    fn load(dir: &Path, tree: &Path) -> Manifest {
        Manifest::file(dir, tree)
            .and_then(|file| std::fs::read(file).ok())
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn save(&self, dir: &Path, tree: &Path) {
        let Some(file) = Manifest::file(dir, tree) else {
            return;
        };
        let _ = std::fs::create_dir_all(dir);
        if let Ok(json) = serde_json::to_vec(self) {
            let _ = std::fs::write(file, json);
        }
    }

    /// True if `path` (at `rel` in the tree) is still the file written from the page stored
    /// under `key`.
    fn holds(&self, rel: &Path, key: &str, path: &Path) -> bool {
        self.files.get(rel).is_some_and(|recorded| {
            recorded.key == key
                && Entry::of(path, key.to_string()).is_some_and(|now| now == *recorded)
        })
    }

    /// True if `path` (at `rel`) is still the file written from the page stored under a key
    /// other than `key`: its bytes are another page's, not worth reading to compare (two keys
    /// seldom name the same bytes, and then the file is only written again).
    fn superseded(&self, rel: &Path, key: &str, path: &Path) -> bool {
        self.files.get(rel).is_some_and(|recorded| {
            recorded.key != key
                && Entry::of(path, recorded.key.clone()).is_some_and(|now| now == *recorded)
        })
    }

    /// Removes the manifests of every tree but `trees`.
    fn tidy(dir: &Path, trees: &[&Path]) {
        let keep: Vec<PathBuf> = trees
            .iter()
            .filter_map(|tree| Manifest::file(dir, tree))
            .collect();
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            if !keep.contains(&entry.path()) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Writes the bytes of `output` to `path` as a new file, streamed part after part (the print
/// page's parts are copied from the page store, never gathered in memory). A recycled tree's
/// file is removed first, never written through: `serve` may still be sending it from the
/// build before last, and a reader that has it open keeps reading the old bytes (the removed
/// file lives until it is closed).
fn replace(path: &Path, output: Output) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    output.write_to(&mut std::fs::File::create(path)?)
}

/// True if the regular file at `path` holds exactly `bytes` (pruning left only regular files
/// with one link in the tree).
fn holds(path: &Path, bytes: &[u8]) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() == bytes.len() as u64)
        && std::fs::read(path).is_ok_and(|old| old == bytes)
}

/// Removes from a recycled tree every entry that is neither one of `files` nor a directory
/// on the way to one (a path that changed from directory to file or back goes too, and so do
/// symbolic links and files with other hard links).
fn prune(tree: &Path, files: &Files) -> std::io::Result<()> {
    let wanted_files: HashSet<&Path> = files.iter().map(|(rel, _)| rel.as_path()).collect();
    let wanted_dirs: HashSet<&Path> = files
        .iter()
        .flat_map(|(rel, _)| rel.ancestors().skip(1))
        .collect();
    let mut walk = walkdir::WalkDir::new(tree).min_depth(1).into_iter();
    while let Some(entry) = walk.next() {
        let entry = entry?;
        let rel = entry.path().strip_prefix(tree).unwrap_or(entry.path());
        let is_dir = entry.file_type().is_dir();
        // A symbolic link someone put in the old output goes: a write would follow it. So does
        // a file with another hard link (a copy made with `cp -al`): a write would change both.
        let keep = if is_dir {
            wanted_dirs.contains(rel)
        } else {
            entry.file_type().is_file()
                && wanted_files.contains(rel)
                && entry.metadata()?.nlink() == 1
        };
        if keep {
            continue;
        }
        if is_dir {
            walk.skip_current_dir();
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names in `dir`, sorted.
    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// However a path reached the list of outputs, one that is absolute or climbs out with
    /// `..` is refused before anything is staged, and so is a path given twice.
    #[test]
    fn no_output_path_leaves_the_output_directory() {
        let parent = tempfile::tempdir().unwrap();
        let out = parent.path().join("site/public");
        let escape = parent.path().join("escaped.html");
        for bad in [
            "../../escaped.html",
            "a/../../../escaped.html",
            escape.to_str().unwrap(),
            "",
            ".",
            "./index.html",
        ] {
            let files = vec![
                (PathBuf::from("index.html"), b"index".to_vec().into()),
                (PathBuf::from(bad), b"bad".to_vec().into()),
            ];
            let result = write_site(&out, None, files, &mut super::super::Timings::new());
            let errors = result.expect_err(bad);
            assert!(errors[0].message.contains("outside"), "{bad}: {errors:?}");
            assert!(!escape.exists(), "{bad} was written");
            assert!(!out.exists(), "{bad}: nothing is staged");
        }
        let twice = vec![
            (PathBuf::from("tags/index.html"), b"chapter".to_vec().into()),
            (PathBuf::from("tags/index.html"), b"tags".to_vec().into()),
        ];
        let errors = write_site(&out, None, twice, &mut super::super::Timings::new())
            .expect_err("a path given twice");
        assert!(errors[0].message.contains("twice"), "{errors:?}");
    }

    /// Every top-level name the site writes is one no chapter slug can take, so a chapter's
    /// `SLUG/index.html` never replaces (or is replaced by) a page of the site's own.
    #[test]
    fn no_slug_can_name_a_top_level_output_of_the_site() {
        let mut paths: Vec<String> = DEFAULT_STATIC
            .entries()
            .iter()
            .map(|e| e.path().display().to_string())
            .collect();
        paths.extend(
            [
                render::verification::PAGE_PATH,
                render::print::PATH,
                render::search::INDEX_PATH,
                "index.html",
                "tags/index.html",
                "categories/x/index.html",
                "404.html",
                "atom.xml",
                "sitemap.xml",
                "robots.txt",
                "highlight.css",
                ".nojekyll",
                super::super::output::MARKER,
            ]
            .map(String::from),
        );
        for path in paths {
            let top = Path::new(&path).components().next().unwrap();
            let top = top.as_os_str().to_str().unwrap();
            assert!(
                crate::content::slug::problem(top).is_some(),
                "a chapter could take the slug `{top}` ({path})"
            );
        }
    }

    /// A recycled tree's files that already hold the new bytes are left alone; every other
    /// file is rewritten, a same-length edit included, so the output is exactly the new files.
    #[test]
    fn a_recycled_tree_is_rewritten_only_where_it_differs() {
        use std::os::unix::fs::MetadataExt as _;
        let parent = tempfile::tempdir().unwrap();
        let out = parent.path().join("out");
        let spare = parent.path().join("spare");
        std::fs::create_dir_all(spare.join("a")).unwrap();
        std::fs::write(spare.join("same.html"), "kept bytes").unwrap();
        std::fs::write(spare.join("a/edited.html"), "old text!!").unwrap();
        std::fs::write(spare.join("shorter.html"), "a longer old text").unwrap();
        let inode = std::fs::metadata(spare.join("same.html")).unwrap().ino();
        let files = vec![
            (PathBuf::from("same.html"), b"kept bytes".to_vec().into()),
            (
                PathBuf::from("a/edited.html"),
                b"new text!!".to_vec().into(),
            ),
            (PathBuf::from("shorter.html"), b"short".to_vec().into()),
            (PathBuf::from("fresh.html"), b"fresh".to_vec().into()),
        ];
        write_site(&out, Some(&spare), files, &mut super::super::Timings::new()).unwrap();
        assert_eq!(std::fs::read(out.join("same.html")).unwrap(), b"kept bytes");
        assert_eq!(
            std::fs::metadata(out.join("same.html")).unwrap().ino(),
            inode
        );
        assert_eq!(
            std::fs::read(out.join("a/edited.html")).unwrap(),
            b"new text!!"
        );
        assert_eq!(std::fs::read(out.join("shorter.html")).unwrap(), b"short");
        assert_eq!(std::fs::read(out.join("fresh.html")).unwrap(), b"fresh");
        assert_eq!(
            listing(&out),
            ["a", "fresh.html", "same.html", "shorter.html"]
        );
    }

    /// A file a reader still has open from the build before last (`serve` may be sending it)
    /// keeps its bytes when the recycled tree is rewritten: a changed file is a new file.
    #[test]
    fn an_open_file_of_a_recycled_tree_keeps_its_bytes() {
        use std::io::Read as _;
        let parent = tempfile::tempdir().unwrap();
        let out = parent.path().join("out");
        let spare = parent.path().join("spare");
        let build = |text: &str| {
            let files = vec![
                (
                    PathBuf::from("p/index.html"),
                    text.as_bytes().to_vec().into(),
                ),
                (PathBuf::from("same.css"), b"kept".to_vec().into()),
            ];
            write_site(&out, Some(&spare), files, &mut super::super::Timings::new()).unwrap();
        };
        build("first build");
        // A reader opens the first build's page; two builds later its tree is recycled.
        let mut reading = std::fs::File::open(out.join("p/index.html")).unwrap();
        let unchanged = std::fs::metadata(out.join("same.css")).unwrap().ino();
        build("second build");
        build("third build, longer than the others");
        assert_eq!(
            std::fs::read(out.join("p/index.html")).unwrap(),
            b"third build, longer than the others"
        );
        let mut seen = String::new();
        reading.read_to_string(&mut seen).unwrap();
        assert_eq!(seen, "first build");
        // A file that holds the same bytes is left as it is.
        assert_eq!(
            std::fs::metadata(out.join("same.css")).unwrap().ino(),
            unchanged
        );
    }

    /// A stored page that a recycled tree got from an earlier build and still holds untouched
    /// is neither read from the store nor compared; one whose file changed since is written
    /// again from the page's bytes.
    #[test]
    fn a_page_the_recycled_tree_holds_untouched_is_not_read_again() {
        let parent = tempfile::tempdir().unwrap();
        let out = parent.path().join("out");
        let spare = parent.path().join(".attnbook/spare-output");
        let made = || Output::Made {
            bytes: b"page".to_vec(),
            key: Some("k1".into()),
        };
        let build = |output: Output| {
            let files = vec![(PathBuf::from("p/index.html"), output)];
            write_site(&out, Some(&spare), files, &mut super::super::Timings::new())
        };
        // Two builds: the first one's tree becomes the spare, with its manifest.
        build(made()).unwrap();
        build(made()).unwrap();
        // The page's bytes are not there to read: had the write needed them, it would fail.
        let gone = Output::Kept {
            key: "k1".into(),
            path: parent.path().join("no-such-blob"),
            len: 4,
        };
        build(gone).unwrap();
        assert_eq!(std::fs::read(out.join("p/index.html")).unwrap(), b"page");
        // The tree recycled next is the second build's: edit its file (same length).
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(spare.join("p/index.html"), "PAGE").unwrap();
        let gone = Output::Kept {
            key: "k1".into(),
            path: parent.path().join("no-such-blob"),
            len: 4,
        };
        assert!(build(gone).is_err(), "an edited file was trusted");
        build(made()).unwrap();
        assert_eq!(std::fs::read(out.join("p/index.html")).unwrap(), b"page");
        // One manifest per tree: the output's and the spare's.
        assert_eq!(
            listing(&parent.path().join(".attnbook/output-keys")).len(),
            2
        );
    }

    #[test]
    fn a_failed_swap_leaves_no_staging_directory() {
        let parent = tempfile::tempdir().unwrap();
        let out = parent.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("kept.html"), "old").unwrap();
        // `out/.` exists, but a directory cannot be renamed by a path ending in `.`: the swap
        // fails after the staging directory was written.
        let files = vec![(PathBuf::from("index.html"), b"new".to_vec().into())];
        let result = write_site(
            &out.join("."),
            None,
            files,
            &mut super::super::Timings::new(),
        );
        assert!(result.is_err(), "the swap should fail");
        assert_eq!(listing(parent.path()), ["out"]);
        assert_eq!(listing(&out), ["kept.html"]);
    }
}
