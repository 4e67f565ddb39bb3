//! The stages import one way (DESIGN §2): a module of `src/` may use the ground modules and the
//! stages up to its own, never a later stage, and no modules of `src/` or of a crate under
//! `crates/` import each other in a cycle.
//!
//! Every `.rs` file is parsed with `syn`; every path that starts with `crate`, `super` or `self`
//! (in `use` items, in code and types, and inside macro invocations) is resolved to the module
//! it names. A module reaching into its own ancestors (`use super::*`, a parent's type) is how
//! Rust modules are built and is not an edge; everything else is.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// Modules every stage may use; they use only each other.
const GROUND: &[&str] = &[
    "diagnostic",
    "text",
    "config",
    "interrupt",
    "messages",
    "memo",
];

/// The stages of `src/`, in pipeline order (DESIGN §2), then the entry points that drive them.
/// Written once here: a module may import only the ground and the stages up to its own.
const STAGES: &[&str] = &[
    "content", "markdown", "lab", "quotes", "render", "site", "serve", "cli", "fuzzing",
];

/// A module path below the crate root, e.g. `["render", "html"]`; the root is `[]`.
type ModPath = Vec<String>;

/// One path found in a file that names something of the same crate.
#[derive(Debug, Clone)]
struct Import {
    /// The module it names (the longest known module prefix of the resolved path).
    target: ModPath,
    /// The path as written, `crate::lab::ChapterRun`.
    written: String,
    line: usize,
}

/// The files of one crate, by module.
struct Crate {
    files: BTreeMap<ModPath, PathBuf>,
    imports: BTreeMap<ModPath, Vec<Import>>,
}

fn module_of(src: &Path, file: &Path) -> ModPath {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts
}

/// Parses every module file of a crate whose sources are `sources` (`(path, text)`; `src` is
/// the directory they are under) and collects what each imports.
fn analyse(src: &Path, sources: &[(PathBuf, String)]) -> Crate {
    let files: BTreeMap<ModPath, PathBuf> = sources
        .iter()
        .filter(|(p, _)| p.file_name().is_some_and(|n| n != "main.rs"))
        .map(|(p, _)| (module_of(src, p), p.clone()))
        .collect();
    let known: BTreeSet<ModPath> = files.keys().cloned().collect();
    let mut imports = BTreeMap::new();
    for (path, text) in sources {
        if path.file_name().is_some_and(|n| n == "main.rs") {
            continue;
        }
        let module = module_of(src, path);
        let file = syn::parse_file(text)
            .unwrap_or_else(|e| panic!("{}: cannot parse: {e}", path.display()));
        let mut collector = Collector {
            file_module: module.clone(),
            scope: module.clone(),
            known: &known,
            found: Vec::new(),
        };
        collector.visit_file(&file);
        imports.insert(module, collector.found);
    }
    Crate { files, imports }
}

struct Collector<'a> {
    /// The module of the file.
    file_module: ModPath,
    /// The module the visitor is in (inline `mod tests { .. }` nests below the file's).
    scope: ModPath,
    known: &'a BTreeSet<ModPath>,
    found: Vec<Import>,
}

impl Collector<'_> {
    /// Resolves `segments` (as written, starting with `crate`, `super` or `self`) against the
    /// current scope and records the module it names.
    fn record(&mut self, segments: &[String], line: usize) {
        let Some(first) = segments.first() else {
            return;
        };
        let mut resolved: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" | "super" => self.scope.clone(),
            _ => return,
        };
        let mut rest = segments;
        if first == "crate" || first == "self" {
            rest = &rest[1..];
        }
        while rest.first().is_some_and(|s| s == "super") {
            resolved.pop();
            rest = &rest[1..];
        }
        resolved.extend(rest.iter().cloned());
        let target = (0..=resolved.len())
            .rev()
            .map(|n| resolved[..n].to_vec())
            .find(|prefix| self.known.contains(prefix))
            .unwrap_or_default();
        // Inline modules are part of their file; a module may use its own ancestors.
        if self.file_module.starts_with(&target) {
            return;
        }
        self.found.push(Import {
            target,
            written: segments.join("::"),
            line,
        });
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, line: usize) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, line);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.record(&prefix.clone(), line);
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.record(&prefix.clone(), line);
                prefix.pop();
            }
            syn::UseTree::Glob(_) => self.record(&prefix.clone(), line),
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.use_tree(prefix, item, line);
                }
            }
        }
    }

    /// Paths inside macro invocations (`format!`, `assert!`, ...), which syn leaves as tokens.
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id) if ["crate", "super", "self"].contains(&&*id.to_string()) => {
                    let line = id.span().start().line;
                    let mut segments = vec![id.to_string()];
                    let mut j = i + 1;
                    while let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(next)) =
                        (trees.get(j), trees.get(j + 1), trees.get(j + 2))
                    {
                        let TokenTree::Ident(next) = next else { break };
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        segments.push(next.to_string());
                        j += 3;
                    }
                    if segments.len() > 1 {
                        self.record(&segments, line);
                    }
                    i = j.max(i + 1);
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let line = item.use_token.span.start().line;
        self.use_tree(&mut Vec::new(), &item.tree, line);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if item.content.is_some() {
            self.scope.push(item.ident.to_string());
            syn::visit::visit_item_mod(self, item);
            self.scope.pop();
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            let line = path
                .segments
                .first()
                .map_or(0, |s| s.ident.span().start().line);
            self.record(&segments, line);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }
}

/// `site::emit` of a module path, `crate` for the root.
fn name(module: &[String]) -> String {
    if module.is_empty() {
        "crate".into()
    } else {
        module.join("::")
    }
}

/// Every import of a stage from a later stage, and of a ground module from any stage.
fn back_imports(krate: &Crate) -> Vec<String> {
    let rank = |module: &[String]| -> Option<usize> {
        let top = module.first()?;
        if GROUND.contains(&top.as_str()) {
            return Some(0);
        }
        STAGES.iter().position(|s| s == top).map(|i| i + 1)
    };
    let mut problems = Vec::new();
    for (module, imports) in &krate.imports {
        let file = &krate.files[module];
        let Some(from) = rank(module) else {
            if !module.is_empty() {
                problems.push(format!(
                    "{}: module `{}` is neither a stage nor a ground module: add it to \
                     STAGES or GROUND in tests/architecture.rs",
                    file.display(),
                    name(module)
                ));
            }
            continue;
        };
        for import in imports {
            let Some(to) = rank(&import.target) else {
                continue;
            };
            if to > from {
                let what = if from == 0 {
                    format!("the ground module `{}`", module[0])
                } else {
                    format!("stage `{}`", module[0])
                };
                problems.push(format!(
                    "{}:{}: `{}`: {what} imports `{}`, which comes later in the pipeline \
                     (order: {} | {})",
                    file.display(),
                    import.line,
                    import.written,
                    import.target[0],
                    GROUND.join(", "),
                    STAGES.join(" -> ")
                ));
            }
        }
    }
    problems
}

/// Every set of modules that import each other (strongly connected components of more than
/// one module), each with the imports that close it.
fn cycles(krate: &Crate) -> Vec<String> {
    let nodes: Vec<&ModPath> = krate.files.keys().collect();
    let index: BTreeMap<&ModPath, usize> = nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let edges: Vec<BTreeSet<usize>> = nodes
        .iter()
        .map(|m| {
            krate.imports[*m]
                .iter()
                .filter_map(|i| index.get(&i.target).copied())
                .collect()
        })
        .collect();
    let components = strongly_connected(&edges);
    let mut problems = Vec::new();
    for component in components.into_iter().filter(|c| c.len() > 1) {
        let members: BTreeSet<usize> = component.iter().copied().collect();
        let mut lines = vec![format!(
            "modules that import each other: {}",
            component
                .iter()
                .map(|&i| name(nodes[i]))
                .collect::<Vec<_>>()
                .join(", ")
        )];
        for &i in &component {
            let mut seen = BTreeSet::new();
            for import in &krate.imports[nodes[i]] {
                let Some(&j) = index.get(&import.target) else {
                    continue;
                };
                if members.contains(&j) && seen.insert(j) {
                    lines.push(format!(
                        "  {}:{}: `{}` -> {}",
                        krate.files[nodes[i]].display(),
                        import.line,
                        import.written,
                        name(nodes[j])
                    ));
                }
            }
        }
        problems.push(lines.join("\n"));
    }
    problems
}

/// Tarjan's algorithm, iteratively; components in no particular order, members sorted.
fn strongly_connected(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    let n = edges.len();
    let mut order = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut next = 0;
    let mut components = Vec::new();
    for root in 0..n {
        if order[root] != usize::MAX {
            continue;
        }
        let mut work: Vec<(usize, Vec<usize>)> = Vec::new();
        order[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        work.push((root, edges[root].iter().copied().collect()));
        while let Some((v, pending)) = work.last_mut() {
            let v = *v;
            if let Some(w) = pending.pop() {
                if order[w] == usize::MAX {
                    order[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, edges[w].iter().copied().collect()));
                } else if on_stack[w] {
                    low[v] = low[v].min(order[w]);
                }
                continue;
            }
            work.pop();
            if let Some((parent, _)) = work.last() {
                low[*parent] = low[*parent].min(low[v]);
            }
            if low[v] == order[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                component.sort_unstable();
                components.push(component);
            }
        }
    }
    components
}

fn read_crate(src: &Path) -> Vec<(PathBuf, String)> {
    let mut sources: Vec<(PathBuf, String)> = walkdir::WalkDir::new(src)
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.expect("walk"))
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).expect("read");
            (e.into_path(), text)
        })
        .collect();
    // Files that are not modules of the library (binaries under src/bin) are their own crates.
    sources.retain(|(p, _)| !p.strip_prefix(src).is_ok_and(|r| r.starts_with("bin")));
    sources
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn no_stage_imports_a_later_stage() {
    let src = workspace().join("src");
    let krate = analyse(&src, &read_crate(&src));
    assert!(
        krate.files.len() > 50,
        "found only {} modules",
        krate.files.len()
    );
    let problems = back_imports(&krate);
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n"));
}

#[test]
fn no_modules_of_src_or_crates_import_each_other_in_a_cycle() {
    let mut problems = Vec::new();
    let mut crates = vec![workspace().join("src")];
    for entry in std::fs::read_dir(workspace().join("crates")).expect("crates/") {
        let src = entry.expect("entry").path().join("src");
        if src.is_dir() {
            crates.push(src);
        }
    }
    for src in &crates {
        let krate = analyse(src, &read_crate(src));
        problems.extend(cycles(&krate));
    }
    assert!(crates.len() >= 4, "{crates:?}");
    assert!(problems.is_empty(), "\n{}\n", problems.join("\n\n"));
}

/// The checks themselves, on small made-up crates: each must see what it is there to see.
mod checks {
    use super::*;

    fn krate(files: &[(&str, &str)]) -> Crate {
        let src = Path::new("/x/src");
        let sources: Vec<(PathBuf, String)> = files
            .iter()
            .map(|(p, t)| (src.join(p), t.to_string()))
            .collect();
        analyse(src, &sources)
    }

    #[test]
    fn a_back_import_is_named_with_its_file_line_and_path() {
        let k = krate(&[
            ("lib.rs", "pub mod content; pub mod lab;"),
            (
                "content/mod.rs",
                "\nuse crate::lab::ChapterRun;\npub struct C;",
            ),
            (
                "lab/mod.rs",
                "use crate::content::C; pub struct ChapterRun;",
            ),
        ]);
        assert_eq!(
            back_imports(&k),
            [format!(
                "{}:2: `crate::lab::ChapterRun`: stage `content` imports `lab`, which comes \
                 later in the pipeline (order: {} | {})",
                Path::new("/x/src/content/mod.rs").display(),
                GROUND.join(", "),
                STAGES.join(" -> ")
            )]
        );
    }

    #[test]
    fn paths_in_code_types_groups_and_macros_count_and_ancestors_do_not() {
        let k = krate(&[
            ("lib.rs", ""),
            ("text.rs", "pub fn f() {}"),
            ("content/mod.rs", "pub mod taxonomy;"),
            (
                "content/taxonomy.rs",
                "use super::*;\nuse crate::{text, markdown::{self, Doc}};\n\
                 fn g(_: crate::render::Page) { crate::lab::run(); }\n\
                 fn h() { println!(\"{}\", crate::quotes::x()); }\n\
                 #[cfg(test)] mod tests { use super::super::Chapter; use crate::site::z; }",
            ),
            ("markdown/mod.rs", ""),
            ("lab/mod.rs", ""),
            ("quotes/mod.rs", ""),
            ("render/mod.rs", ""),
            ("site/mod.rs", ""),
        ]);
        let targets: Vec<String> = k.imports[&vec!["content".to_string(), "taxonomy".into()]]
            .iter()
            .map(|i| format!("{}@{}", name(&i.target), i.line))
            .collect();
        assert_eq!(
            targets,
            [
                "text@2",
                "markdown@2",
                "markdown@2",
                "render@3",
                "lab@3",
                "quotes@4",
                "site@5"
            ]
        );
        assert_eq!(back_imports(&k).len(), 6, "{:#?}", back_imports(&k));
    }

    #[test]
    fn a_ground_module_may_not_use_a_stage() {
        let k = krate(&[
            ("interrupt.rs", "fn f() { crate::lab::kill(); }"),
            ("lab/mod.rs", ""),
        ]);
        let problems = back_imports(&k);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("the ground module `interrupt` imports `lab`"));
    }

    #[test]
    fn siblings_that_import_each_other_are_a_cycle_and_a_chain_is_not() {
        let k = krate(&[
            ("render/mod.rs", "mod html; mod links; mod svg;"),
            ("render/html.rs", "use super::links::rewrite;"),
            (
                "render/links.rs",
                "fn f() -> String { super::html::line_id(1) }",
            ),
            ("render/svg.rs", "use super::html;"),
        ]);
        let found = cycles(&k);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("modules that import each other: render::html, render::links"),
            "{}",
            found[0]
        );
        assert!(found[0].contains("`super::links::rewrite` -> render::links"));
        assert!(found[0].contains("`super::html::line_id` -> render::html"));
        let chain = krate(&[
            ("a.rs", "use crate::b::x;"),
            ("b.rs", "use crate::c::y;"),
            ("c.rs", ""),
        ]);
        assert!(cycles(&chain).is_empty());
    }
}
