//! The modules of `lab` import each other without cycles.
//!
//! Each module of `src/` is a node; `use crate::..`, `use super::..`, `use child::..` and
//! inline `crate::x::f()` / `super::x::f()` paths are its edges. An edge is lifted to the two
//! siblings that contain its ends (`chart::bar -> value` is `chart -> value`), and an edge to an
//! ancestor (a child using its parent's items) or to a descendant is not a dependency between
//! siblings. What is left must be acyclic, so that each module can be read, and changed, after
//! the ones below it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path from the crate root: `[]` is the root, `["chart", "svg"]` is `chart::svg`.
type ModPath = Vec<String>;

/// One module's source: its code without comments, and where it came from.
struct Module {
    file: PathBuf,
    /// `(line, code)` pairs, comments removed.
    lines: Vec<(usize, String)>,
}

/// A module path use found in a module's code, before resolution.
struct Use {
    line: usize,
    /// Absolute path segments (after `crate`, `super` and child-module resolution).
    path: ModPath,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/lib.rs` is the root, `src/a.rs` and `src/a/mod.rs` are `a`, `src/a/b.rs` is `a::b`.
fn module_path(file: &Path) -> ModPath {
    let relative = file.strip_prefix(src_dir()).unwrap().with_extension("");
    let mut parts: ModPath = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// Drops `//` comments (doc comments included) and the contents of string literals, so that
/// neither a doc link like ``[`super::Panels`]`` nor a message counts as a use.
fn strip(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' if in_string => {
                chars.next();
            }
            // A character literal `'"'` is not the start of a string.
            '\'' if !in_string && chars.peek() == Some(&'"') => {
                chars.next();
                chars.next();
            }
            '"' => {
                in_string = !in_string;
                out.push('"');
            }
            '/' if !in_string && chars.peek() == Some(&'/') => break,
            c if !in_string => out.push(c),
            _ => {}
        }
    }
    out
}

/// Every module of the crate, including inline ones written `mod name {` at the start of a
/// line (rustfmt puts their closing `}` at the start of a line too): test modules.
fn modules() -> BTreeMap<ModPath, Module> {
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    let mut modules = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let path = module_path(&file);
        let mut inline: Option<(String, Vec<(usize, String)>)> = None;
        let mut own = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let code = strip(raw);
            if let Some(name) = code
                .strip_prefix("mod ")
                .and_then(|rest| rest.strip_suffix(" {"))
            {
                inline = Some((name.trim().to_owned(), Vec::new()));
                continue;
            }
            match &mut inline {
                Some((name, lines)) if code == "}" => {
                    let mut child = path.clone();
                    child.push(std::mem::take(name));
                    let lines = std::mem::take(lines);
                    modules.insert(
                        child,
                        Module {
                            file: file.clone(),
                            lines,
                        },
                    );
                    inline = None;
                }
                Some((_, lines)) => lines.push((i + 1, code)),
                None => own.push((i + 1, code)),
            }
        }
        modules.insert(path, Module { file, lines: own });
    }
    modules
}

/// The paths a `use` tree names: `a::{b, c::{d, self}}` gives `a::b`, `a::c::d` and `a::c`.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(tree).trim();
        return vec![path.trim_end_matches("::self").to_owned()];
    };
    let prefix = &tree[..open];
    let inner = tree[open + 1..].trim_end().strip_suffix('}').unwrap_or("");
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .filter(|item| !item.trim().is_empty())
        .flat_map(|item| {
            expand(item)
                .into_iter()
                .map(|p| match p.as_str() {
                    "self" => prefix.trim_end_matches("::").to_owned(),
                    _ => format!("{prefix}{p}"),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The `use` statements of a module (possibly over several lines), as `(line, tree, public)`,
/// and the lines they take.
fn use_statements(module: &Module) -> (Vec<(usize, String, bool)>, BTreeSet<usize>) {
    let mut out = Vec::new();
    let mut taken = BTreeSet::new();
    let mut current: Option<(usize, String, bool)> = None;
    for (line, code) in &module.lines {
        let trimmed = code.trim();
        match &mut current {
            None => {
                let public = trimmed.starts_with("pub");
                let rest = trimmed
                    .strip_prefix("pub(crate) use ")
                    .or_else(|| trimmed.strip_prefix("pub use "))
                    .or_else(|| trimmed.strip_prefix("use "));
                let Some(rest) = rest else { continue };
                current = Some((*line, rest.to_owned(), public));
            }
            Some((_, text, _)) => {
                text.push(' ');
                text.push_str(trimmed);
            }
        }
        taken.insert(*line);
        if let Some((start, text, public)) = current.take() {
            match text.split_once(';') {
                Some((tree, _)) => out.push((start, tree.to_owned(), public)),
                None => current = Some((start, text, public)),
            }
        }
    }
    (out, taken)
}

/// Makes a written path absolute: `crate::a`, `super::a` (from `here`) and `child::a` (a child
/// module of `here`, as `use` allows); `None` for other crates.
fn absolute(written: &str, here: &ModPath, known: &BTreeSet<ModPath>) -> Option<ModPath> {
    let mut segments = written.split("::").map(str::trim);
    let first = segments.next()?;
    let mut path = match first {
        "crate" => Vec::new(),
        "self" => here.clone(),
        "super" => here[..here.len().checked_sub(1)?].to_vec(),
        child => {
            let mut path = here.clone();
            path.push(child.to_owned());
            if !known.contains(&path) {
                return None;
            }
            path
        }
    };
    for segment in segments {
        match segment {
            "super" => {
                path.pop();
            }
            "*" => {}
            s => path.push(s.to_owned()),
        }
    }
    Some(path)
}

/// `crate::..` and `super::..` paths written inline in code (not in `use` statements).
fn inline_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = code[from..].find(start) {
            let begin = from + at;
            let boundary = code[..begin]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_' || c == ':'));
            let end = code[begin..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .map_or(code.len(), |e| begin + e);
            if boundary {
                out.push(code[begin..end].trim_end_matches(':').to_owned());
            }
            from = end.max(begin + start.len());
        }
    }
    out
}

/// Where a path leads: the longest known module it starts with, followed through that
/// module's `pub use` re-exports (`crate::Lab` is `context`).
fn target(
    path: &ModPath,
    known: &BTreeSet<ModPath>,
    exports: &BTreeMap<(ModPath, String), ModPath>,
    depth: usize,
) -> ModPath {
    let module = (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| known.contains(p))
        .unwrap_or_default();
    if depth < 8
        && let Some(item) = path.get(module.len())
        && let Some(reexported) = exports.get(&(module.clone(), item.clone()))
    {
        let mut next = reexported.clone();
        next.extend(path[module.len() + 1..].iter().cloned());
        return target(&next, known, exports, depth + 1);
    }
    module
}

/// Every module's uses and the sibling-level dependency edges they make, each edge with the
/// `file:line` that causes it.
fn sibling_edges() -> BTreeMap<(ModPath, ModPath), Vec<String>> {
    let modules = modules();
    let known: BTreeSet<ModPath> = modules.keys().cloned().collect();
    let mut uses: Vec<(ModPath, Use)> = Vec::new();
    let mut exports = BTreeMap::new();
    for (here, module) in &modules {
        let (statements, taken) = use_statements(module);
        for (line, tree, public) in statements {
            for written in expand(&tree) {
                let Some(path) = absolute(&written, here, &known) else {
                    continue;
                };
                if public && let Some(name) = written.rsplit("::").next() {
                    exports.insert((here.clone(), name.trim().to_owned()), path.clone());
                }
                uses.push((here.clone(), Use { line, path }));
            }
        }
        for (line, code) in module.lines.iter().filter(|(l, _)| !taken.contains(l)) {
            for written in inline_paths(code) {
                if let Some(path) = absolute(&written, here, &known) {
                    uses.push((here.clone(), Use { line: *line, path }));
                }
            }
        }
    }
    let mut edges: BTreeMap<(ModPath, ModPath), Vec<String>> = BTreeMap::new();
    for (from, used) in uses {
        let to = target(&used.path, &known, &exports, 0);
        let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        // An ancestor (or the module itself) or a descendant: not between siblings.
        if common == to.len() || common == from.len() {
            continue;
        }
        let edge = (from[..=common].to_vec(), to[..=common].to_vec());
        let file = &modules[&from].file;
        let at = format!(
            "{}:{}",
            file.strip_prefix(src_dir()).unwrap().display(),
            used.line
        );
        let places = edges.entry(edge).or_default();
        if !places.contains(&at) {
            places.push(at);
        }
    }
    edges
}

/// A cycle in `edges`, as the modules along it, if there is one.
fn find_cycle(edges: &BTreeMap<(ModPath, ModPath), Vec<String>>) -> Option<Vec<ModPath>> {
    fn visit(
        node: &ModPath,
        edges: &BTreeMap<(ModPath, ModPath), Vec<String>>,
        stack: &mut Vec<ModPath>,
        done: &mut BTreeSet<ModPath>,
    ) -> Option<Vec<ModPath>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node.clone());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.clone());
        for ((from, to), _) in edges.iter().filter(|((from, _), _)| from == node) {
            debug_assert_eq!(from, node);
            if let Some(cycle) = visit(to, edges, stack, done) {
                return Some(cycle);
            }
        }
        stack.pop();
        done.insert(node.clone());
        None
    }
    let mut done = BTreeSet::new();
    for (from, _) in edges.keys() {
        if let Some(cycle) = visit(from, edges, &mut Vec::new(), &mut done) {
            return Some(cycle);
        }
    }
    None
}

fn name(path: &ModPath) -> String {
    if path.is_empty() {
        "crate".to_owned()
    } else {
        path.join("::")
    }
}

#[test]
fn no_two_modules_import_each_other() {
    let edges = sibling_edges();
    if let Some(cycle) = find_cycle(&edges) {
        let steps: Vec<String> = cycle
            .windows(2)
            .map(|pair| {
                let at = &edges[&(pair[0].clone(), pair[1].clone())];
                format!(
                    "{} -> {} ({})",
                    name(&pair[0]),
                    name(&pair[1]),
                    at.join(", ")
                )
            })
            .collect();
        panic!(
            "the modules of lab import each other in a cycle:\n  {}\nmove what they share \
             into one of them or into a module below both",
            steps.join("\n  ")
        );
    }
}

/// The scanner sees the edges it must: if it found none, the test above would pass for
/// nothing.
#[test]
fn the_scanner_sees_the_crate_s_imports() {
    let edges = sibling_edges();
    let has = |from: &[&str], to: &[&str]| {
        let path = |p: &[&str]| p.iter().map(|s| (*s).to_owned()).collect::<ModPath>();
        edges.contains_key(&(path(from), path(to)))
    };
    // `use super::frame::{..}` between siblings in `chart`.
    assert!(has(&["chart", "line"], &["chart", "frame"]), "{edges:?}");
    // `use crate::value::Scalar` from inside `chart`, lifted to `chart -> value`.
    assert!(has(&["chart"], &["value"]), "{edges:?}");
    // `use crate::Lab` resolved through the root's `pub use context::Lab`.
    assert!(has(&["runner"], &["context"]), "{edges:?}");
    // An inline path in code: `crate::control::block_starts(index)`.
    assert!(has(&["context"], &["control"]), "{edges:?}");
    // A child using its parent (`use super::{Area, Chart}`) makes no edge: every edge joins
    // two siblings.
    for (from, to) in edges.keys() {
        let n = from.len();
        assert!(
            n == to.len() && from[..n - 1] == to[..n - 1] && from != to,
            "{from:?} -> {to:?}"
        );
    }
}

#[test]
fn use_trees_expand_to_every_path() {
    assert_eq!(
        expand("super::theme::{self, MARGIN, TICK_PX}"),
        [
            "super::theme",
            "super::theme::MARGIN",
            "super::theme::TICK_PX"
        ]
    );
    assert_eq!(
        expand("crate::{a::{b, c as d}, e}"),
        ["crate::a::b", "crate::a::c", "crate::e"]
    );
    assert_eq!(
        inline_paths("let x = crate::control::block_starts(i); super::mark::f()"),
        ["crate::control::block_starts", "super::mark::f"]
    );
    assert_eq!(strip("x(); // see [`super::Panels`]"), "x(); ");
    assert_eq!(strip("f(\"crate::a\")"), "f(\"\")");
}

#[test]
fn a_cycle_is_found_and_a_chain_is_not() {
    let path = |s: &str| vec![s.to_owned()];
    let mut edges = BTreeMap::new();
    edges.insert((path("a"), path("b")), vec![]);
    edges.insert((path("b"), path("c")), vec![]);
    assert_eq!(find_cycle(&edges), None);
    edges.insert((path("c"), path("a")), vec![]);
    assert_eq!(
        find_cycle(&edges),
        Some(vec![path("a"), path("b"), path("c"), path("a")])
    );
}
