//! Watching: which paths are sources of the site, and batches of changes to them.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver};

use notify::{EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{DebounceEventResult, Debouncer, RecommendedCache, new_debouncer};

use super::DEBOUNCE;
use crate::diagnostic::{self, Diagnostic};
use crate::site::BuildPlan;

/// The sources of the site, watched for changes.
pub(super) struct Watch {
    debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
    events: Receiver<DebounceEventResult>,
    sources: Sources,
    /// The source directories watched so far (a missing one is watched once it appears).
    watched: Vec<PathBuf>,
}

impl Watch {
    pub(super) fn start(plan: &BuildPlan) -> Result<Watch, Diagnostic> {
        let sources = Sources::new(plan)?;
        let (sender, events) = mpsc::channel();
        let debouncer = new_debouncer(DEBOUNCE, None, sender).map_err(|e| watch_error(&e))?;
        let mut watch = Watch {
            debouncer,
            events,
            sources,
            watched: Vec::new(),
        };
        // The root, not recursively: it sees `site.toml` even when an editor replaces it by a
        // rename (which a watch on the file itself would lose), and source directories appearing.
        watch
            .debouncer
            .watch(&watch.sources.root, RecursiveMode::NonRecursive)
            .map_err(|e| watch_error(&e))?;
        watch.watch_new_dirs()?;
        Ok(watch)
    }

    /// Blocks until a source changes; returns every changed source queued up by then.
    pub(super) fn next_batch(&mut self) -> Result<Vec<PathBuf>, Diagnostic> {
        loop {
            let first = self.events.recv().map_err(|_| {
                Diagnostic::error("the file watcher stopped").with_help("restart `attnbook serve`")
            })?;
            let mut changed = self.sources.changed(first);
            while let Ok(more) = self.events.try_recv() {
                changed.extend(self.sources.changed(more));
            }
            self.watched.retain(|dir| dir.is_dir());
            if let Err(d) = self.watch_new_dirs() {
                eprint!("{}", diagnostic::render(&[&d], &|_| None));
            }
            if !changed.is_empty() {
                changed.sort();
                changed.dedup();
                return Ok(changed);
            }
        }
    }

    fn watch_new_dirs(&mut self) -> Result<(), Diagnostic> {
        for dir in &self.sources.dirs {
            if dir.is_dir() && !self.watched.contains(dir) {
                self.debouncer
                    .watch(dir, RecursiveMode::Recursive)
                    .map_err(|e| watch_error(&e))?;
                self.watched.push(dir.clone());
            }
        }
        Ok(())
    }

    /// `content/01-a.md and 2 more`, for the log line before a rebuild.
    pub(super) fn describe(&self, changed: &[PathBuf]) -> String {
        let first = changed.first().map_or_else(String::new, |path| {
            let shown = path
                .strip_prefix(&self.sources.root)
                .or_else(|_| path.strip_prefix(&self.sources.workspace))
                .unwrap_or(path);
            if shown.as_os_str().is_empty() {
                "(the watcher asked for a full rescan)".to_string()
            } else {
                shown.display().to_string()
            }
        });
        match changed.len() {
            0 | 1 => first,
            n => format!("{first} and {} more", n - 1),
        }
    }
}

fn watch_error(e: &notify::Error) -> Diagnostic {
    Diagnostic::error(format!("cannot watch the site's files: {e}")).with_help(
        "on Linux, raise the inotify limits (sysctl fs.inotify.max_user_watches and max_user_instances)",
    )
}

/// Which paths are sources of the site, and which are its products or editor litter.
struct Sources {
    /// The site root, canonical (the watcher reports paths below what it was given).
    root: PathBuf,
    /// The attnbook workspace, whose `crates/` the experiments compile against (the site root
    /// when they link the built-in runtime).
    workspace: PathBuf,
    /// `site.toml`.
    config: PathBuf,
    /// Watched recursively: content, templates, static, and the workspace's crates.
    dirs: Vec<PathBuf>,
    /// Never sources, even when inside a watched directory: the output and the cache.
    ignored: Vec<PathBuf>,
}

impl Sources {
    fn new(plan: &BuildPlan) -> Result<Sources, Diagnostic> {
        let root = plan.root.canonicalize().map_err(|e| {
            Diagnostic::error(format!("cannot serve {}: {e}", plan.root.display()))
                .with_help("run `attnbook serve` in a site directory, or pass --root DIR")
        })?;
        let mut dirs: Vec<PathBuf> = ["content", "templates", "static"]
            .iter()
            .map(|d| root.join(d))
            .collect();
        // The checked-out runtime crates, when the experiments link them (never the built-in
        // copy in the cache directory, which does not change).
        let crates = crate::lab::watched_runtime().filter(|c| c.is_dir());
        let workspace = crates
            .as_deref()
            .and_then(Path::parent)
            .map_or_else(|| root.clone(), absolute);
        dirs.extend(crates.as_deref().map(absolute));
        Ok(Sources {
            config: root.join("site.toml"),
            ignored: vec![absolute(&plan.out), root.join(".attnbook")],
            dirs,
            workspace,
            root,
        })
    }

    /// The sources an event batch touched; a watcher error or overflow asks for a full rebuild.
    fn changed(&self, result: DebounceEventResult) -> Vec<PathBuf> {
        let events = match result {
            Ok(events) => events,
            Err(errors) => {
                for e in errors {
                    eprintln!("warning: file watcher: {e}");
                }
                return vec![self.root.clone()];
            }
        };
        let mut changed = Vec::new();
        for event in events {
            if event.need_rescan() {
                changed.push(self.root.clone());
            }
            // Reads (the build opening sources) are no change; inotify reports them all.
            if matches!(event.kind, EventKind::Access(_)) {
                continue;
            }
            changed.extend(event.paths.iter().filter(|p| self.is_source(p)).cloned());
        }
        changed
    }

    fn is_source(&self, path: &Path) -> bool {
        if self.ignored.iter().any(|p| path.starts_with(p)) || is_editor_litter(path) {
            return false;
        }
        *path == self.config
            || self.dirs.iter().any(|dir| {
                path.strip_prefix(dir)
                    .is_ok_and(|rel| !rel.iter().any(|c| c == "target" || c == ".git"))
            })
    }
}

/// Swap files, backups and lock files that editors write next to the file being saved.
fn is_editor_litter(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    name.ends_with('~')
        || name.starts_with(".#")
        || (name.starts_with('#') && name.ends_with('#'))
        || [".swp", ".swx", ".swo", ".tmp", ".bak"]
            .iter()
            .any(|ext| name.ends_with(ext))
        || name == "4913"
        || name == ".DS_Store"
}

/// `path` made absolute and free of symlinks, as far as it exists.
fn absolute(path: &Path) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => absolute(parent).join(name),
        _ => std::env::current_dir().map_or_else(|_| path.to_path_buf(), |cwd| cwd.join(path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_litter_is_not_a_change() {
        for name in ["a.md~", ".#a.md", "#a.md#", "a.md.swp", "4913"] {
            assert!(is_editor_litter(Path::new(name)), "{name}");
        }
        assert!(!is_editor_litter(Path::new("content/01-a.md")));
    }

    /// The sources of a site served as `attnbook --root ROOT serve` serves it (into `public/`).
    fn sources_of(root: &Path) -> Sources {
        let plan = BuildPlan {
            repository: None,
            root: root.to_path_buf(),
            out: root.join("public"),
            base_url: Some("/".into()),
            drafts: false,
            strict: false,
            lab: crate::lab::LabPlan {
                rerun: false,
                jobs: 1,
                timeout: std::time::Duration::from_secs(120),
                output_cap: 256 * 1024,
                progress: false,
            },
            timings: false,
            recycle_output: false,
            force: false,
        };
        Sources::new(&plan).unwrap()
    }

    /// The serve tests cannot touch the workspace's `crates/` (every test's experiments
    /// compile against it): which paths count is pinned here instead.
    #[test]
    fn sources_are_the_config_content_templates_static_and_the_crates() {
        let site = tempfile::tempdir().unwrap();
        let sources = sources_of(site.path());
        let root = site.path().canonicalize().unwrap();
        let crates = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("crates")
            .canonicalize()
            .unwrap();
        for source in [
            root.join("site.toml"),
            root.join("content/01-a.md"),
            root.join("content/new-dir/02-b.md"),
            root.join("templates/chapter.html"),
            root.join("static/img/a.png"),
            crates.join("attention/src/lib.rs"),
            crates.join("lab/Cargo.toml"),
        ] {
            assert!(sources.is_source(&source), "{}", source.display());
        }
        for product in [
            root.join("public/index.html"),
            root.join(".attnbook/lab/Cargo.toml"),
            root.join("site.toml.tmp"),
            root.join("README.md"),
            root.join("content/01-a.md.swp"),
            crates.join("target/debug/liblab.rlib"),
            crates.join("lab/.git/HEAD"),
        ] {
            assert!(!sources.is_source(&product), "{}", product.display());
        }
    }
}
