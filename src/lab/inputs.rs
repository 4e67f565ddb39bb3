//! The site's own inputs to the experiment crate, declared under `[lab]` in site.toml: the data
//! files the experiments read (`data`) and the crates they use (`[lab.dependencies]`, whose
//! versions the site keeps in [`SITE_LOCK`]).
//!
//! Both are part of the experiment cache key ([`fingerprint`]). Data files are copied into each
//! chapter's working directory at their site-relative paths before it runs, and packed into its
//! download at the same paths, so `std::fs::read("data/x.csv")` reads the same bytes in the
//! build and at a reader's. A string literal in a block that names a site file not declared is
//! found by [`undeclared_reads`]: such a chapter gets no download.

use std::path::{Path, PathBuf};

use crate::config::LabConfig;
use crate::diagnostic::{Diagnostic, Location};
use crate::markdown::Experiment;

/// The lock file of `[lab.dependencies]`, at the site root (commit it).
pub(super) const SITE_LOCK: &str = "lab.lock";

/// The experiment crate's package name as the site's lock file spells it: the build's own name
/// depends on where the site lies, the committed file must not.
const LOCK_ROOT: &str = "attnbook-experiments";

/// A hash of every input the site declares (data files, dependencies, the sources of path
/// dependencies, [`SITE_LOCK`]); empty when it declares none, so that a site without any keeps
/// the key it had before these existed.
pub(super) fn fingerprint(root: &Path, lab: &LabConfig) -> String {
    if lab.data_files.is_empty() && lab.dependencies.is_empty() {
        return String::new();
    }
    let mut hasher = blake3::Hasher::new();
    let mut file = |name: &Path, bytes: &[u8]| {
        hasher.update(name.to_string_lossy().as_bytes());
        hasher.update(b"\0");
        hasher.update(&(bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    for rel in &lab.data_files {
        file(rel, &std::fs::read(root.join(rel)).unwrap_or_default());
    }
    file(
        Path::new("[lab.dependencies]"),
        dependency_lines(lab, |p| p.to_string()).as_bytes(),
    );
    for path in path_dependencies(lab) {
        for source in crate_sources(&root.join(path)) {
            let bytes = std::fs::read(&source).unwrap_or_default();
            file(source.strip_prefix(root).unwrap_or(&source), &bytes);
        }
    }
    file(
        Path::new(SITE_LOCK),
        &std::fs::read(root.join(SITE_LOCK)).unwrap_or_default(),
    );
    hasher.finalize().to_hex().to_string()
}

/// The `.rs` and `.toml` files of a crate directory, sorted (not `target/` nor hidden ones).
fn crate_sources(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| {
            e.depth() == 0
                || !(e.file_name() == "target" || e.file_name().to_string_lossy().starts_with('.'))
        })
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
    files
}

/// The `path` of every path dependency, as written.
pub(super) fn path_dependencies(lab: &LabConfig) -> impl Iterator<Item = &str> {
    lab.dependencies
        .values()
        .filter_map(|spec| spec.get_ref().get("path")?.as_str())
}

/// The first path dependency and where it is declared (a download cannot carry it).
pub(super) fn first_path_dependency(lab: &LabConfig) -> Option<(&str, Option<&Location>)> {
    lab.dependencies.iter().find_map(|(name, spec)| {
        spec.get_ref().get("path")?;
        Some((name.as_str(), lab.dependency_at.get(name)))
    })
}

/// `[dependencies]` lines for the experiment crate, one per dependency, each `path` passed
/// through `path` (the build makes them absolute).
pub(super) fn dependency_lines(lab: &LabConfig, path: impl Fn(&str) -> String) -> String {
    lab.dependencies
        .iter()
        .map(|(name, spec)| {
            let value = match spec.get_ref() {
                toml::Value::Table(table) => {
                    let mut table = table.clone();
                    if let Some(p) = table.get("path").and_then(toml::Value::as_str) {
                        let rewritten = path(p);
                        table.insert("path".into(), toml::Value::String(rewritten));
                    }
                    inline(&toml::Value::Table(table))
                }
                other => inline(other),
            };
            format!("{name} = {value}\n")
        })
        .collect()
}

/// A TOML value on one line (tables inline).
fn inline(value: &toml::Value) -> String {
    match value {
        toml::Value::Table(table) => {
            let entries: Vec<String> = table
                .iter()
                .map(|(k, v)| format!("{} = {}", inline_key(k), inline(v)))
                .collect();
            format!("{{ {} }}", entries.join(", "))
        }
        toml::Value::Array(items) => {
            let items: Vec<String> = items.iter().map(inline).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

fn inline_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        key.to_string()
    } else {
        toml::Value::String(key.to_string()).to_string()
    }
}

/// Copies the declared data files of the site at `root` into `dir`, each at its site-relative
/// path (copies, not links: a block that writes to one cannot change the site).
pub(super) fn copy_data(root: &Path, files: &[PathBuf], dir: &Path) -> std::io::Result<()> {
    for rel in files {
        let to = dir.join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(root.join(rel), &to)?;
    }
    Ok(())
}

/// The site lock's text as the experiment crate's lock, its root package named `package`.
pub(super) fn lock_for_crate(site_lock: &str, package: &str) -> String {
    site_lock.replacen(
        &format!("name = \"{LOCK_ROOT}\""),
        &format!("name = \"{package}\""),
        1,
    )
}

/// The experiment crate's lock as the site keeps it (its root package under a fixed name).
pub(super) fn lock_for_site(crate_lock: &str, package: &str) -> String {
    crate_lock.replacen(
        &format!("name = \"{package}\""),
        &format!("name = \"{LOCK_ROOT}\""),
        1,
    )
}

/// Writes the crate's lock to the site's [`SITE_LOCK`] when it differs.
pub(super) fn keep_site_lock(root: &Path, crate_dir: &Path, package: &str) -> std::io::Result<()> {
    let crate_lock = std::fs::read_to_string(crate_dir.join("Cargo.lock"))?;
    let text = lock_for_site(&crate_lock, package);
    let path = root.join(SITE_LOCK);
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(&path, text)?;
    }
    Ok(())
}

/// One error for dependencies cargo could not resolve: at the first dependency cargo's message
/// names (in site.toml order), else at the first dependency, with cargo's first error line.
pub(super) fn resolve_error(lab: &LabConfig, cargo_stderr: &str) -> Diagnostic {
    let first_error = cargo_stderr
        .lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .unwrap_or_else(|| cargo_stderr.lines().next().unwrap_or_default())
        .trim()
        .to_string();
    let mut declared: Vec<(&String, Option<&Location>)> = lab
        .dependencies
        .keys()
        .map(|name| (name, lab.dependency_at.get(name)))
        .collect();
    declared.sort_by_key(|(_, at)| at.map(|l| (l.line, l.col)));
    let named = |name: &str| {
        [
            format!("`{name}`"),
            format!("`{name} "),
            format!("`{name}="),
        ]
        .iter()
        .any(|needle| cargo_stderr.contains(needle.as_str()))
    };
    let (name, at) = declared
        .iter()
        .find(|(name, _)| named(name))
        .or(declared.first())
        .copied()
        .unzip();
    let mut diagnostic = Diagnostic::error(match name {
        Some(name) => format!("the experiment dependency `{name}` does not resolve: {first_error}"),
        None => format!("the experiments' dependencies do not resolve: {first_error}"),
    })
    .with_help(
        "check the crate's name, version and features (and that it is published, or its path); \
         the versions in use are kept in lab.lock at the site root",
    );
    if let Some(at) = at.flatten() {
        diagnostic = diagnostic.at(at.clone());
    }
    diagnostic
}

/// A site file that a block names but the site does not declare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct UndeclaredRead {
    /// The file, relative to the site root.
    pub file: PathBuf,
    /// Where the block names it.
    pub at: Location,
}

/// Every string literal of `chapter`'s blocks that names an existing file of the site at
/// `root` (relative to the site root, to the chapter's working directory `workdir`, or
/// absolute) which is neither declared in `declared` nor attnbook's own (`.attnbook/`).
pub(super) fn undeclared_reads(
    root: &Path,
    workdir: &Path,
    declared: &[PathBuf],
    chapter: &Path,
    blocks: &[Experiment],
) -> Vec<UndeclaredRead> {
    let Ok(site) = std::fs::canonicalize(root) else {
        return Vec::new();
    };
    let own = site.join(".attnbook");
    let mut found = Vec::new();
    for block in blocks {
        let code: Vec<&str> = block.lines.iter().map(|l| l.code.as_str()).collect();
        for (line, col, literal) in string_literals(&code.join("\n")) {
            if literal.is_empty() || literal.contains('\0') || literal.len() > 4096 {
                continue;
            }
            let named = Path::new(&literal);
            let file = [root.join(named), workdir.join(named)]
                .iter()
                // One `stat` first: most literals name nothing, and resolving a path that does
                // not exist costs a `readlink` per component.
                .filter(|candidate| candidate.is_file())
                .filter_map(|candidate| std::fs::canonicalize(candidate).ok())
                .find(|real| real.is_file() && real.starts_with(&site) && !real.starts_with(&own));
            let Some(rel) =
                file.and_then(|real| real.strip_prefix(&site).ok().map(Path::to_path_buf))
            else {
                continue;
            };
            if declared.contains(&rel) || found.iter().any(|r: &UndeclaredRead| r.file == rel) {
                continue;
            }
            let code_line = &block.lines[line];
            found.push(UndeclaredRead {
                file: rel,
                at: Location::at_line(chapter, code_line.line, col + code_line.col_shift),
            });
        }
    }
    found
}

/// The string literals of Rust `code` as `(0-based line, 1-based column, value)`: `"..."` with
/// its escapes, `r"..."`/`r#"..."#`, byte strings alike; comments and char literals skipped.
/// Good enough to find file names, not a Rust lexer (a `'` of a lifetime is told from a char
/// literal by what follows it).
fn string_literals(code: &str) -> Vec<(usize, usize, String)> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line, mut line_start) = (0, 0, 0);
    let newline = |at: usize, line: &mut usize, line_start: &mut usize| {
        *line += 1;
        *line_start = at + 1;
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '\n' => newline(i, &mut line, &mut line_start),
            '/' if next == Some('/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '/' if next == Some('*') => {
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    if chars[i] == '\n' {
                        newline(i, &mut line, &mut line_start);
                    }
                    i += 1;
                }
                i += 2;
                continue;
            }
            '\'' => {
                // A char literal: 'x' or '\..'; anything else is a lifetime or label.
                if next == Some('\\') {
                    i += 2;
                    while i < chars.len() && chars[i] != '\'' && chars[i] != '\n' {
                        i += 1;
                    }
                } else if chars.get(i + 2) == Some(&'\'') {
                    i += 2;
                }
            }
            'r' | 'b'
                if (i == 0 || !is_ident(chars[i - 1])) && raw_start(&chars[i..]).is_some() =>
            {
                let (skip, hashes) = raw_start(&chars[i..]).unwrap_or((0, 0));
                let (start_line, col) = (line, i - line_start + 1);
                i += skip;
                let mut value = String::new();
                while i < chars.len() {
                    if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
                        i += hashes;
                        break;
                    }
                    if chars[i] == '\n' {
                        newline(i, &mut line, &mut line_start);
                    }
                    value.push(chars[i]);
                    i += 1;
                }
                out.push((start_line, col, value));
            }
            '"' => {
                let (start_line, col) = (line, i - line_start + 1);
                i += 1;
                let mut value = String::new();
                while i < chars.len() && chars[i] != '"' {
                    match chars[i] {
                        '\\' => {
                            i += 1;
                            match chars.get(i) {
                                Some('n') => value.push('\n'),
                                Some('t') => value.push('\t'),
                                Some('\\') => value.push('\\'),
                                Some('"') => value.push('"'),
                                Some('\'') => value.push('\''),
                                Some('\n') => {
                                    newline(i, &mut line, &mut line_start);
                                    while chars.get(i + 1).is_some_and(|c| c.is_whitespace()) {
                                        i += 1;
                                    }
                                }
                                // Other escapes (`\u{..}`, `\x..`, `\0`) name no plain file.
                                _ => value.push('\0'),
                            }
                        }
                        '\n' => {
                            newline(i, &mut line, &mut line_start);
                            value.push('\n');
                        }
                        c => value.push(c),
                    }
                    i += 1;
                }
                out.push((start_line, col, value));
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// At `r"`, `r#"`, `br"`, `br##"`...: how many characters open the literal and how many `#`.
fn raw_start(chars: &[char]) -> Option<(usize, usize)> {
    let mut i = usize::from(chars.first() == Some(&'b'));
    if chars.get(i) != Some(&'r') {
        // `b"..."` is an ordinary (byte) string, read by the `"` arm.
        return None;
    }
    i += 1;
    let hashes = chars[i..].iter().take_while(|c| **c == '#').count();
    (chars.get(i + hashes) == Some(&'"')).then_some((i + hashes + 1, hashes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::experiment::{BlockOptions, CodeLine};

    #[test]
    fn string_literals_are_found_with_their_place() {
        let code = "let a = \"data.txt\"; // \"not/this\"\n\
                    let b = r#\"raw \"x\"\"#; let c = 'q'; fn f<'a>(x: &'a str) {}\n\
                    /* \"nor\n this\" */ let d = b\"bytes\"; let e = \"esc\\\\aped\\n\";";
        let found = string_literals(code);
        assert_eq!(
            found,
            [
                (0, 9, "data.txt".to_string()),
                (1, 9, "raw \"x\"".to_string()),
                (3, 20, "bytes".to_string()),
                (3, 37, "esc\\aped\n".to_string()),
            ]
        );
        assert_eq!(
            string_literals("'\"' == c; \"s\""),
            [(0, 11, "s".to_string())]
        );
    }

    fn block(code: &[&str]) -> Experiment {
        Experiment {
            index: 0,
            options: BlockOptions::default(),
            lines: code
                .iter()
                .enumerate()
                .map(|(i, c)| CodeLine {
                    code: c.to_string(),
                    shown: true,
                    line: 10 + i,
                    col_shift: 0,
                })
                .collect(),
            span: 0..0,
            line: 9,
            pinned: None,
        }
    }

    /// Files named relative to the site root or to the working directory count; declared
    /// files, attnbook's own, missing files and directories do not.
    #[test]
    fn undeclared_site_files_named_in_blocks_are_found() {
        let site = tempfile::tempdir().unwrap();
        let root = site.path();
        let workdir = root.join(".attnbook/run/sandbox-a");
        std::fs::create_dir_all(&workdir).unwrap();
        std::fs::create_dir_all(root.join("data")).unwrap();
        for file in [
            "data.txt",
            "data/ok.csv",
            "data/other.csv",
            ".attnbook/run/x.json",
        ] {
            std::fs::write(root.join(file), "1").unwrap();
        }
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("o.txt"), "1").unwrap();
        let blocks = [block(&[
            "let t = std::fs::read_to_string(\"../../../data.txt\").unwrap();",
            "let ok = std::fs::read(\"data/ok.csv\");",
            &format!("let o = std::fs::read({:?});", outside.path().join("o.txt")),
            "let d = std::fs::read_dir(\"data\"); let m = \"missing.txt\";",
            "let w = std::fs::read(\"../x.json\"); let again = \"data.txt\";",
            "    let x = \"data/other.csv\";",
        ])];
        let declared = [PathBuf::from("data/ok.csv")];
        let found = undeclared_reads(root, &workdir, &declared, Path::new("c.md"), &blocks);
        let found: Vec<String> = found
            .iter()
            .map(|r| format!("{} {}", r.at, r.file.display()))
            .collect();
        assert_eq!(found, ["c.md:10:33 data.txt", "c.md:15:13 data/other.csv"]);
    }

    #[test]
    fn dependency_lines_are_cargo_syntax_with_paths_rewritten() {
        let text = "title = \"T\"\nbase_url = \"/\"\n[lab.dependencies]\nnalgebra = \"0.33\"\n\
                    mathx = { path = \"crates/mathx\", features = [\"fast\"] }\n\
                    \"odd\" = { version = \"1\", default-features = false }\n";
        let config = crate::config::Config::parse(Path::new("site.toml"), text).unwrap();
        let lines = dependency_lines(&config.lab, |p| format!("/site/{p}"));
        assert_eq!(
            lines,
            "mathx = { features = [\"fast\"], path = \"/site/crates/mathx\" }\n\
             nalgebra = \"0.33\"\nodd = { default-features = false, version = \"1\" }\n"
        );
        let manifest: toml::Table = toml::from_str(&format!("[dependencies]\n{lines}")).unwrap();
        assert_eq!(manifest["dependencies"]["nalgebra"].as_str(), Some("0.33"));
    }

    #[test]
    fn the_site_lock_names_no_machine_specific_package() {
        let lock =
            "version = 4\n\n[[package]]\nname = \"attnbook-lab-0123456789\"\nversion = \"0.0.0\"\n";
        let site = lock_for_site(lock, "attnbook-lab-0123456789");
        assert!(site.contains("name = \"attnbook-experiments\"") && !site.contains("0123456789"));
        assert_eq!(lock_for_crate(&site, "attnbook-lab-0123456789"), lock);
    }
}
