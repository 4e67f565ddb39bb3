//! Generates the one experiment crate of a site (pure: text in, files out).
//!
//! One binary per chapter (`src/bin/NAME.rs`), so chapters compile separately: a type error in
//! one chapter stops only that chapter, and a one-block edit recompiles one small binary. When
//! many chapters are stale at once (a cold build), one more binary holds them all
//! ([`series_binary`]): the chapters' files are its modules, so nothing else changes. Each
//! chapter's blocks run in order inside one `run` function, so a variable of one block is
//! visible in the next (notebook scope). A `lab.begin_block(i)` call
//! before each block lets the runtime attribute stdout to blocks. A [`SourceMap`] records, for
//! every generated line, the Markdown line it came from, so compiler errors and panics point at
//! the chapter.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::markdown::Experiment;

/// A chapter that has experiment blocks.
pub struct ChapterBlocks<'a> {
    /// The chapter slug (passed to the binary).
    pub slug: &'a str,
    /// The chapter file (for the source map).
    pub path: &'a Path,
    /// Its blocks in order.
    pub blocks: &'a [Experiment],
}

/// Where a generated line came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The chapter file.
    pub path: PathBuf,
    /// 1-based Markdown line.
    pub line: usize,
    /// Characters the generator removed from the start of the line (`# ` of hidden lines).
    pub col_shift: usize,
    /// Index of the block in its chapter.
    pub block: usize,
}

/// Generated file (relative to the crate root) -> per-line origins (index 0 = line 1).
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    files: BTreeMap<String, Vec<Option<Origin>>>,
}

impl SourceMap {
    /// The Markdown origin of `file:line` (file as cargo reports it, e.g. `src/ch_0_why.rs`).
    pub fn origin(&self, file: &str, line: usize) -> Option<&Origin> {
        let key = file.replace('\\', "/");
        let lines = self
            .files
            .iter()
            .find(|(name, _)| key.ends_with(name.as_str()))?
            .1;
        lines.get(line.checked_sub(1)?)?.as_ref()
    }
}

/// The generated crate: files to write and the source map.
pub struct GeneratedCrate {
    /// `(relative path, contents)`, in a stable order.
    pub files: Vec<(PathBuf, String)>,
    /// The binary of each chapter, in the order given.
    pub bins: Vec<String>,
    /// Line origins.
    pub map: SourceMap,
}

/// Generates the crate `package` linking the `lab` crate at `lab_path`.
pub fn generate(package: &str, lab_path: &Path, chapters: &[ChapterBlocks<'_>]) -> GeneratedCrate {
    generate_with(package, lab_path, "", chapters)
}

/// [`generate`], the crate depending on `dependencies` too (`[dependencies]` lines of the
/// site's `[lab.dependencies]`).
pub(super) fn generate_with(
    package: &str,
    lab_path: &Path,
    dependencies: &str,
    chapters: &[ChapterBlocks<'_>],
) -> GeneratedCrate {
    let manifest = manifest(package, lab_path, dependencies);
    let mut files = vec![(PathBuf::from("Cargo.toml"), manifest)];
    let mut map = SourceMap::default();
    let mut bins = Vec::new();
    for chapter in chapters {
        let bin = bin_name(package, chapter.slug);
        let file = format!("src/bin/{bin}.rs");
        let (text, lines) = chapter_binary(chapter);
        map.files.insert(file.clone(), lines);
        files.push((PathBuf::from(file), text));
        bins.push(bin);
    }
    GeneratedCrate { files, bins, map }
}

/// The Markdown line of each value's recording call, given where `#[track_caller]` placed it
/// (`file:line`) and the chapter's blocks: the generated binary of a chapter depends on its
/// blocks alone, so the line a cached run recorded still maps through the blocks of today.
///
/// `None` for a location outside the chapter's binary (a call inside a library the author did
/// not mark `#[track_caller]`) or from a runtime that did not report one.
pub struct RecordedLines {
    origins: Vec<Option<Origin>>,
}

impl RecordedLines {
    /// The line map of a chapter with `blocks`.
    pub fn new(blocks: &[Experiment]) -> Self {
        let chapter = ChapterBlocks {
            slug: "",
            path: Path::new(""),
            blocks,
        };
        RecordedLines {
            origins: chapter_binary(&chapter).1,
        }
    }

    /// The 1-based Markdown line of generated `file:line`, if it is a line of a block.
    pub fn markdown_line(&self, file: &str, line: u32) -> Option<usize> {
        // Cargo compiles a package's binaries with paths relative to the package root.
        if !file.replace('\\', "/").starts_with("src/bin/") {
            return None;
        }
        let index = usize::try_from(line).ok()?.checked_sub(1)?;
        self.origins.get(index)?.as_ref().map(|o| o.line)
    }
}

/// A hash of the code this module wraps around the blocks (manifest, prelude, `run`, `main`),
/// taken from the crate it generates for a fixed chapter: any change to the wrapper changes it,
/// with no version to remember to bump. Part of the experiment cache key.
pub(super) fn template_fingerprint() -> String {
    let block = Experiment {
        index: 0,
        options: Default::default(),
        lines: vec![crate::markdown::experiment::CodeLine {
            code: "BLOCK".into(),
            shown: true,
            line: 2,
            col_shift: 0,
        }],
        span: 0..0,
        line: 1,
        pinned: None,
    };
    let chapter = ChapterBlocks {
        slug: "slug",
        path: Path::new("content/slug.md"),
        blocks: std::slice::from_ref(&block),
    };
    fingerprint(&generate("package", Path::new("/lab"), &[chapter]))
}

/// A hash of every file of a generated crate, names included.
fn fingerprint(krate: &GeneratedCrate) -> String {
    let mut hasher = blake3::Hasher::new();
    for (path, text) in &krate.files {
        hasher.update(path.to_string_lossy().as_bytes());
        hasher.update(b"\0");
        hasher.update(text.as_bytes());
        hasher.update(b"\0");
    }
    hasher.finalize().to_hex().to_string()
}

fn manifest(package: &str, lab_path: &Path, dependencies: &str) -> String {
    // An empty [workspace] keeps the crate out of any enclosing workspace.
    format!(
        "[package]\nname = \"{package}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [dependencies]\nlab = {{ path = {lab:?} }}\n{dependencies}\n[workspace]\n\n\
         [profile.release]\ndebug = false\nincremental = true\n",
        lab = lab_path.display().to_string()
    )
}

/// A binary name that depends on the site's package and the slug alone, so a chapter keeps its
/// binary (and cargo its incremental state) whatever else changes. The package keeps sites that
/// share a target directory apart (`target/release/NAME` is one file for all of them); the
/// hash keeps `a-b` and `a_b` apart.
pub(super) fn bin_name(package: &str, slug: &str) -> String {
    let clean: String = ascii_slug(slug, '_').take(40).collect();
    let hash = blake3::hash(slug.as_bytes()).to_hex();
    format!("{package}-{clean}-{}", &hash[..8])
}

/// The binary that holds several chapters at once ([`series_binary`]); no chapter's
/// [`bin_name`] can equal it, since those always end in a hash after the slug.
pub(super) fn series_bin_name(package: &str) -> String {
    format!("{package}-series")
}

/// The source of one binary that runs any of `chapters` (`(slug, chapter binary)` pairs): each
/// chapter's own file becomes a module of it (`#[path]`), so its lines, the compiler's messages
/// about them and the places `#[track_caller]` records are the same as in the chapter's own
/// binary, and [`SourceMap`] and [`RecordedLines`] map them unchanged. The generic code of
/// ndarray, plotters and the attention core is then compiled once for all of them instead of
/// once per chapter (docs/performance.md, "One binary for the stale chapters": 28.6 s instead
/// of 47.8 s for the series' 11 chapters on two cores).
pub(super) fn series_binary(chapters: &[(&str, &str)]) -> String {
    let mut text = String::from(
        "//! The experiments of several chapters in one binary (generated by attnbook); the\n\
         //! first argument names the chapter to run.\n",
    );
    for (i, (_, bin)) in chapters.iter().enumerate() {
        text.push_str(&format!(
            "#[path = {:?}]\nmod chapter_{i};\n",
            format!("{bin}.rs")
        ));
    }
    text.push_str("fn main() {\n    lab::run_main(&[\n");
    for (i, (slug, _)) in chapters.iter().enumerate() {
        text.push_str(&format!(
            "        ({slug:?}, chapter_{i}::run as lab::ChapterFn),\n"
        ));
    }
    text.push_str("    ])\n}\n");
    text
}

/// The slug's characters for a Cargo name: ASCII letters and digits lowercased, anything
/// else `sep`.
pub(super) fn ascii_slug(slug: &str, sep: char) -> impl Iterator<Item = char> + '_ {
    slug.chars().map(move |c| {
        if c.is_ascii_alphanumeric() {
            c.to_ascii_lowercase()
        } else {
            sep
        }
    })
}

fn chapter_binary(chapter: &ChapterBlocks<'_>) -> (String, Vec<Option<Origin>>) {
    let mut text = String::new();
    let mut lines: Vec<Option<Origin>> = Vec::new();
    let mut emit = |line: String, origin: Option<Origin>| {
        text.push_str(&line);
        text.push('\n');
        lines.push(origin);
    };
    emit(
        format!(
            "//! Experiments of `{}` (generated by attnbook).",
            chapter.path.display()
        ),
        None,
    );
    emit("#![allow(unused, clippy::all)]".into(), None);
    emit("use lab::prelude::*;".into(), None);
    emit("pub fn run(lab: &mut lab::Lab) {".into(), None);
    for block in chapter.blocks {
        let fence = Origin {
            path: chapter.path.to_path_buf(),
            line: block.line,
            col_shift: 0,
            block: block.index,
        };
        let declare = block
            .options
            .param
            .as_ref()
            .map(|p| {
                format!(
                    " lab.declare_param({:?}, {:?}_f64);",
                    p.name,
                    p.value(p.default)
                )
            })
            .unwrap_or_default();
        emit(
            format!("lab.begin_block({});{declare}", block.index),
            Some(fence),
        );
        for line in &block.lines {
            let origin = Origin {
                path: chapter.path.to_path_buf(),
                line: line.line,
                col_shift: line.col_shift,
                block: block.index,
            };
            emit(line.code.clone(), Some(origin));
        }
    }
    emit("}".into(), None);
    emit(
        format!(
            "fn main() {{ lab::run_main(&[({:?}, run as lab::ChapterFn)]) }}",
            chapter.slug
        ),
        None,
    );
    (text, lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markdown::experiment::{BlockOptions, CodeLine};

    fn block(index: usize, line: usize, code: &[(&str, bool)]) -> Experiment {
        Experiment {
            index,
            options: BlockOptions::default(),
            lines: code
                .iter()
                .enumerate()
                .map(|(i, (c, shown))| CodeLine {
                    code: c.to_string(),
                    shown: *shown,
                    line: line + 1 + i,
                    col_shift: if *shown { 0 } else { 2 },
                })
                .collect(),
            span: 0..0,
            line,
            pinned: None,
        }
    }

    /// Any change to the generated wrapper, a file's text or its name, changes the fingerprint
    /// (and with it the experiment cache key); the fingerprint is stable between calls.
    #[test]
    fn the_template_fingerprint_follows_the_generated_code() {
        assert_eq!(template_fingerprint(), template_fingerprint());
        let blocks = [block(0, 1, &[("BLOCK", true)])];
        let chapter = || ChapterBlocks {
            slug: "slug",
            path: Path::new("content/slug.md"),
            blocks: &blocks,
        };
        let base = fingerprint(&generate("package", Path::new("/lab"), &[chapter()]));
        let mut edited = generate("package", Path::new("/lab"), &[chapter()]);
        edited.files[1].1 = edited.files[1]
            .1
            .replace("use lab::prelude::*;", "use lab::*;");
        assert_ne!(base, fingerprint(&edited));
        let mut renamed = generate("package", Path::new("/lab"), &[chapter()]);
        renamed.files[0].0 = PathBuf::from("Cargo2.toml");
        assert_ne!(base, fingerprint(&renamed));
    }

    #[test]
    fn blocks_share_one_function_and_map_back_to_markdown() {
        let blocks = [
            block(0, 10, &[("let x = 1;", false)]),
            block(1, 20, &[("println!(\"{x}\");", true)]),
        ];
        let path = Path::new("content/01-why.md");
        let krate = generate(
            "demo",
            Path::new("/lab"),
            &[ChapterBlocks {
                slug: "why",
                path,
                blocks: &blocks,
            }],
        );
        let bin = bin_name("demo", "why");
        let file = format!("src/bin/{bin}.rs");
        assert_eq!(krate.bins, std::slice::from_ref(&bin));
        let (_, module) = krate
            .files
            .iter()
            .find(|(p, _)| p.to_str() == Some(file.as_str()))
            .unwrap();
        let lines: Vec<&str> = module.lines().collect();
        let x = lines.iter().position(|l| *l == "let x = 1;").unwrap() + 1;
        let p = lines.iter().position(|l| l.starts_with("println")).unwrap() + 1;
        assert!(lines[x..p].contains(&"lab.begin_block(1);"));
        let origin = krate.map.origin(&format!("/tmp/x/{file}"), x).unwrap();
        assert_eq!((origin.line, origin.col_shift, origin.block), (11, 2, 0));
        assert_eq!(krate.map.origin(&file, p).unwrap().line, 21);
        assert!(krate.map.origin(&file, 1).is_none());
        assert!(module.contains("lab::run_main(&[(\"why\", run as lab::ChapterFn)])"));
        let (_, manifest) = &krate.files[0];
        assert!(manifest.contains("lab = { path = \"/lab\" }") && manifest.contains("[workspace]"));
    }

    /// A recording line maps to the Markdown line of the call, hidden `# ` lines and `hide`
    /// blocks included; locations outside the chapter's binary map to nothing.
    #[test]
    fn recorded_lines_map_back_to_the_markdown_line_of_the_call() {
        let mut hidden_block = block(1, 20, &[("lab.value(\"b\", 2.0);", true)]);
        hidden_block.options.hide = true;
        let blocks = [
            block(
                0,
                10,
                &[("let x = 1;", true), ("lab.value(\"a\", x);", false)],
            ),
            hidden_block,
        ];
        let krate = generate(
            "demo",
            Path::new("/lab"),
            &[ChapterBlocks {
                slug: "why",
                path: Path::new("content/why.md"),
                blocks: &blocks,
            }],
        );
        let module = &krate.files[1].1;
        let line_of =
            |needle: &str| module.lines().position(|l| l.contains(needle)).unwrap() as u32 + 1;
        let file = format!("src/bin/{}.rs", bin_name("demo", "why"));
        let lines = RecordedLines::new(&blocks);
        assert_eq!(lines.markdown_line(&file, line_of("\"a\"")), Some(12));
        assert_eq!(lines.markdown_line(&file, line_of("\"b\"")), Some(21));
        assert_eq!(lines.markdown_line(&file, 1), None, "the wrapper");
        assert_eq!(lines.markdown_line(&file, 0), None, "unknown");
        assert_eq!(lines.markdown_line(&file, 10_000), None);
        assert_eq!(
            lines.markdown_line("/home/me/lab/src/context.rs", line_of("\"a\"")),
            None,
            "a library line"
        );
    }

    #[test]
    fn binary_names_are_stable_distinct_and_valid() {
        assert_eq!(bin_name("p", "01-why"), bin_name("p", "01-why"));
        assert_ne!(bin_name("p", "a-b"), bin_name("p", "a_b"));
        assert_ne!(
            bin_name("p", "a"),
            bin_name("q", "a"),
            "sites share a target directory"
        );
        let name = bin_name("attnbook-lab-0123456789", "Überblick: 注意力");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
    }

    /// The shared binary includes each chapter's own file as a module (so every line keeps its
    /// file and number) and dispatches on the slug; its name is never a chapter's.
    #[test]
    fn the_shared_binary_includes_the_chapters_files_and_names_their_slugs() {
        let text = series_binary(&[("01-why", "p-01_why-1"), ("a\"b", "p-a_b-2")]);
        assert!(
            text.contains("#[path = \"p-01_why-1.rs\"]\nmod chapter_0;"),
            "{text}"
        );
        assert!(
            text.contains("#[path = \"p-a_b-2.rs\"]\nmod chapter_1;"),
            "{text}"
        );
        assert!(
            text.contains("(\"01-why\", chapter_0::run as lab::ChapterFn),"),
            "{text}"
        );
        assert!(
            text.contains("(\"a\\\"b\", chapter_1::run as lab::ChapterFn),"),
            "{text}"
        );
        for slug in ["series", "p-series", ""] {
            assert_ne!(bin_name("p", slug), series_bin_name("p"));
        }
    }
}
