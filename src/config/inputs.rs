//! What `[lab]` declares the experiments are built from besides their blocks: data files
//! (`data`) and crates (`[lab.dependencies]`), checked against the site on disk when the site
//! loads, each problem an error at its `site.toml` line.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use super::LabConfig;
use crate::diagnostic::{Diagnostic, Location};

/// The runtime crates, which a dependency of the site may not shadow.
pub const RUNTIME_CRATES: [&str; 3] = ["lab", "attention", "lab-protocol"];

/// The keys of a dependency table that mean something for the experiment crate (Cargo's own).
const DEPENDENCY_KEYS: [&str; 10] = [
    "version",
    "features",
    "default-features",
    "path",
    "git",
    "branch",
    "tag",
    "rev",
    "package",
    "registry",
];

impl LabConfig {
    /// Resolves `data` into [`LabConfig::data_files`] and checks `[lab.dependencies]`; every
    /// problem is an error at its place in `text` (the `site.toml` at `path` of the site at
    /// `root`).
    pub(crate) fn check_inputs(&mut self, root: &Path, path: &Path, text: &str) -> Vec<Diagnostic> {
        let at = |span: std::ops::Range<usize>| Location::in_source(path, text, span);
        let mut problems = Vec::new();
        let mut files = BTreeSet::new();
        for pattern in &self.data {
            match data_matches(root, pattern.get_ref()) {
                Ok(found) if found.is_empty() => problems.push(
                    Diagnostic::error(format!(
                        "the `data` pattern `{}` matches no file of the site",
                        pattern.get_ref()
                    ))
                    .at(at(pattern.span()))
                    .with_help(
                        "patterns are relative to the site root (the directory of site.toml), \
                         e.g. `data/*.csv`; hidden files and directories are not searched",
                    ),
                ),
                Ok(found) => files.extend(found),
                Err(problem) => problems.push(
                    Diagnostic::error(format!(
                        "the `data` pattern `{}` {problem}",
                        pattern.get_ref()
                    ))
                    .at(at(pattern.span()))
                    .with_help("declare files inside the site, relative to its root: `data/*.csv`"),
                ),
            }
        }
        self.data_files = files.into_iter().collect();
        for (name, spec) in &self.dependencies {
            self.dependency_at.insert(name.clone(), at(spec.span()));
            if let Err(problem) = check_dependency(root, name, spec.get_ref()) {
                problems.push(
                    Diagnostic::error(format!("the experiment dependency `{name}` {problem}"))
                        .at(at(spec.span()))
                        .with_help(
                            "write it as in Cargo.toml: `name = \"1.2\"`, \
                             `name = { version = \"1.2\", features = [\"x\"] }` or \
                             `name = { path = \"crates/name\" }` (relative to the site root)",
                        ),
                );
            }
        }
        problems
    }
}

/// The files of the site that `pattern` matches, relative to `root`, or why the pattern is
/// refused (it leaves the site, or is no glob).
fn data_matches(root: &Path, pattern: &str) -> Result<Vec<PathBuf>, String> {
    let relative = Path::new(pattern);
    if pattern.trim().is_empty() {
        return Err("is empty".into());
    }
    if relative
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err("names a path outside the site (an absolute path or `..`)".into());
    }
    let pattern = pattern.trim_start_matches("./");
    let glob = Glob::new(pattern)?;
    // Only the directory the pattern's literal part names is searched.
    let literal: PathBuf = Path::new(pattern)
        .components()
        .take_while(|c| {
            !c.as_os_str()
                .to_string_lossy()
                .contains(['*', '?', '[', '{'])
        })
        .collect();
    let canonical_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let mut found = Vec::new();
    let walk = walkdir::WalkDir::new(root.join(&literal))
        .follow_links(true)
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    for entry in walk.filter_map(Result::ok) {
        if !entry.file_type().is_file() {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        if !glob.matches(rel) {
            continue;
        }
        let inside =
            std::fs::canonicalize(entry.path()).is_ok_and(|real| real.starts_with(&canonical_root));
        if !inside {
            return Err(format!(
                "matches `{}`, a link to a file outside the site",
                rel.display()
            ));
        }
        found.push(rel.to_path_buf());
    }
    Ok(found)
}

/// A glob pattern over `/`-separated relative paths: `*` and `?` match within one path
/// component, `[abc]`, `[a-z]` and `[!a]` one character of it, and a component `**` any number
/// of components (none included). Hand-written rather than a dependency of the generator: the
/// workspace's `Cargo.toml` and `Cargo.lock` are inputs of every experiment's cache key.
struct Glob {
    components: Vec<String>,
}

impl Glob {
    fn new(pattern: &str) -> Result<Glob, String> {
        if pattern.contains(['{', '}']) {
            return Err(
                "is not a glob pattern: `{a,b}` alternatives are not supported (list each pattern)"
                    .into(),
            );
        }
        let components: Vec<String> = pattern
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .map(str::to_string)
            .collect();
        for component in &components {
            let mut open = false;
            for c in component.chars() {
                match c {
                    '[' if open => return Err("is not a glob pattern: `[` inside `[...]`".into()),
                    '[' => open = true,
                    ']' => open = false,
                    _ => {}
                }
            }
            if open {
                return Err("is not a glob pattern: a `[` is never closed".into());
            }
        }
        Ok(Glob { components })
    }

    fn matches(&self, path: &Path) -> bool {
        let parts: Vec<String> = path
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let pattern: Vec<&str> = self.components.iter().map(String::as_str).collect();
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        match_components(&pattern, &parts)
    }
}

fn match_components(pattern: &[&str], parts: &[&str]) -> bool {
    match (pattern.first(), parts.first()) {
        (None, None) => true,
        (Some(&"**"), _) => {
            match_components(&pattern[1..], parts)
                || (!parts.is_empty() && match_components(pattern, &parts[1..]))
        }
        (Some(p), Some(part)) => {
            let (p, part): (Vec<char>, Vec<char>) = (p.chars().collect(), part.chars().collect());
            match_component(&p, &part) && match_components(&pattern[1..], &parts[1..])
        }
        _ => false,
    }
}

fn match_component(pattern: &[char], text: &[char]) -> bool {
    match pattern.first() {
        None => text.is_empty(),
        Some('*') => (0..=text.len()).any(|skip| match_component(&pattern[1..], &text[skip..])),
        Some('?') => !text.is_empty() && match_component(&pattern[1..], &text[1..]),
        Some('[') => {
            let Some(end) = pattern.iter().position(|c| *c == ']') else {
                return false;
            };
            let Some(&c) = text.first() else {
                return false;
            };
            let set = &pattern[1..end];
            let (negated, set) = match set.first() {
                Some('!' | '^') => (true, &set[1..]),
                _ => (false, set),
            };
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == '-' {
                    hit |= set[i] <= c && c <= set[i + 2];
                    i += 3;
                } else {
                    hit |= set[i] == c;
                    i += 1;
                }
            }
            hit != negated && match_component(&pattern[end + 1..], &text[1..])
        }
        Some(&p) => text.first() == Some(&p) && match_component(&pattern[1..], &text[1..]),
    }
}

/// Why a `[lab.dependencies]` entry cannot be a dependency of the experiment crate.
fn check_dependency(root: &Path, name: &str, spec: &toml::Value) -> Result<(), String> {
    let valid_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid_name {
        return Err("is not a crate name (ASCII letters, digits, `-` and `_`)".into());
    }
    let table = match spec {
        toml::Value::String(_) => return shadows(name),
        toml::Value::Table(table) => table,
        _ => return Err("must be a version string or a table".into()),
    };
    shadows(name)?;
    if let Some(package) = table.get("package").and_then(toml::Value::as_str) {
        shadows(package)?;
    }
    if let Some(key) = table
        .keys()
        .find(|k| !DEPENDENCY_KEYS.contains(&k.as_str()))
    {
        return Err(format!(
            "has the key `{key}`, which an experiment dependency cannot use (known: {})",
            DEPENDENCY_KEYS.join(", ")
        ));
    }
    if !["version", "path", "git"]
        .iter()
        .any(|k| table.contains_key(*k))
    {
        return Err("names no `version`, `path` or `git`".into());
    }
    if let Some(path) = table.get("path") {
        let path = path.as_str().ok_or("has a `path` that is not a string")?;
        if !root.join(path).join("Cargo.toml").is_file() {
            return Err(format!(
                "has `path = {path:?}`, which holds no Cargo.toml (paths are relative to the \
                 site root)"
            ));
        }
    }
    Ok(())
}

/// An error when `name` is (a spelling of) one of the runtime crates.
fn shadows(name: &str) -> Result<(), String> {
    let normal = name.replace('_', "-");
    match RUNTIME_CRATES.iter().find(|c| **c == normal) {
        Some(runtime) => Err(format!(
            "would shadow attnbook's runtime crate `{runtime}`, which the experiments link \
             already; give the dependency another name"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn site(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for file in files {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "1").unwrap();
        }
        dir
    }

    fn check(root: &Path, lab: &str) -> (Config, Vec<Diagnostic>) {
        let text = format!("title = \"T\"\nbase_url = \"/\"\n\n[lab]\n{lab}");
        let mut config = Config::parse(Path::new("site.toml"), &text).unwrap();
        let problems = config.lab.check_inputs(root, Path::new("site.toml"), &text);
        (config, problems)
    }

    fn places(problems: &[Diagnostic]) -> Vec<String> {
        problems
            .iter()
            .map(|d| format!("{}: {}", d.location.as_ref().unwrap(), d.message))
            .collect()
    }

    #[test]
    fn data_patterns_match_site_files_relative_to_the_root() {
        let dir = site(&[
            "data/a.csv",
            "data/b.csv",
            "data/deep/c.csv",
            "data/.hidden.csv",
            "notes.txt",
        ]);
        let (config, problems) = check(dir.path(), "data = [\"data/*.csv\", \"./notes.txt\"]\n");
        assert!(problems.is_empty(), "{problems:?}");
        let files: Vec<String> = config
            .lab
            .data_files
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(files, ["data/a.csv", "data/b.csv", "notes.txt"]);
        let (config, _) = check(dir.path(), "data = [\"data/**/*.csv\"]\n");
        assert_eq!(
            config.lab.data_files.len(),
            3,
            "{:?}",
            config.lab.data_files
        );
    }

    /// Patterns that match nothing, leave the site or are no glob are errors at their place.
    #[test]
    fn bad_data_patterns_are_errors_at_their_line_and_column() {
        let dir = site(&["data/a.csv"]);
        let (_, problems) = check(
            dir.path(),
            "data = [\n  \"data/*.tsv\",\n  \"../secret.txt\",\n  \"/etc/passwd\",\n  \"data/[a.csv\",\n  \"data/*.csv\",\n]\n",
        );
        let found = places(&problems);
        assert_eq!(found.len(), 4, "{found:?}");
        assert!(found[0].starts_with("site.toml:6:3: ") && found[0].contains("matches no file"));
        assert!(found[1].starts_with("site.toml:7:3: ") && found[1].contains("outside the site"));
        assert!(found[2].starts_with("site.toml:8:3: ") && found[2].contains("outside the site"));
        assert!(found[3].starts_with("site.toml:9:3: ") && found[3].contains("not a glob"));
    }

    #[cfg(unix)]
    #[test]
    fn a_link_out_of_the_site_is_refused() {
        let outside = site(&["secret.txt"]);
        let dir = site(&["data/a.csv"]);
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            dir.path().join("data/s.csv"),
        )
        .unwrap();
        let (_, problems) = check(dir.path(), "data = [\"data/*.csv\"]\n");
        assert!(
            places(&problems)[0].contains("outside the site"),
            "{problems:?}"
        );
    }

    #[test]
    fn globs_match_within_components_and_across_with_double_stars() {
        let m = |pattern: &str, path: &str| Glob::new(pattern).unwrap().matches(Path::new(path));
        assert!(m("data/*.csv", "data/a.csv"));
        assert!(
            !m("data/*.csv", "data/deep/a.csv"),
            "`*` stays within a component"
        );
        assert!(m("data/**/*.csv", "data/a.csv"));
        assert!(m("data/**/*.csv", "data/x/y/a.csv"));
        assert!(m("**", "a/b"));
        assert!(m("data/?.csv", "data/a.csv") && !m("data/?.csv", "data/ab.csv"));
        assert!(m("data/[ab].csv", "data/b.csv") && !m("data/[ab].csv", "data/c.csv"));
        assert!(m("data/[a-c]1.csv", "data/b1.csv") && !m("data/[!a-c]1.csv", "data/b1.csv"));
        assert!(m("./notes.txt", "notes.txt") && !m("notes.txt", "notes.txt.bak"));
        assert!(Glob::new("data/{a,b}.csv").is_err());
        assert!(Glob::new("data/[a.csv").is_err());
    }

    #[test]
    fn dependencies_may_not_shadow_the_runtime_and_must_name_a_crate() {
        let dir = site(&["mathx/Cargo.toml"]);
        let (_, problems) = check(
            dir.path(),
            "\n[lab.dependencies]\nnalgebra = \"0.33\"\nmathx = { path = \"mathx\" }\nlab = \"1\"\nlab_protocol = { path = \"mathx\" }\nmy-lab = { path = \"mathx\", package = \"attention\" }\ngone = { path = \"gone\" }\nodd = { version = \"1\", workspace = true }\nnothing = { features = [\"x\"] }\nnumber = 5\n",
        );
        let mut found = places(&problems);
        found.sort_by_key(|f| f.split(':').nth(1).unwrap().parse::<usize>().unwrap());
        let lines: Vec<&str> = found
            .iter()
            .map(|f| f.split(": ").next().unwrap())
            .collect();
        assert_eq!(
            lines,
            [
                "site.toml:9:7",
                "site.toml:10:16",
                "site.toml:11:10",
                "site.toml:12:8",
                "site.toml:13:7",
                "site.toml:14:11",
                "site.toml:15:10"
            ],
            "{found:?}"
        );
        assert!(
            found.iter().filter(|f| f.contains("would shadow")).count() == 3,
            "{found:?}"
        );
        assert!(
            found.iter().any(|f| f.contains("holds no Cargo.toml")),
            "{found:?}"
        );
        assert!(found.iter().any(|f| f.contains("`workspace`")), "{found:?}");
        assert!(
            found
                .iter()
                .any(|f| f.contains("no `version`, `path` or `git`")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|f| f.contains("version string or a table")),
            "{found:?}"
        );
    }
}
