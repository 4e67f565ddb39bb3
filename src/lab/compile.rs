//! Compiles the generated crate with cargo and maps compiler messages back to Markdown.
//!
//! Cargo builds the binaries of the stale chapters with `--keep-going`, so a chapter that does
//! not compile stops only itself. It runs with `--message-format=json`; each `compiler-message`
//! whose primary span lies in a chapter binary becomes a [`Diagnostic`] at the chapter's
//! `path:line:col`, with the compiler's label, notes and help. Anything that cannot be mapped is
//! still reported, never dropped.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;

use super::generate::SourceMap;
use crate::diagnostic::{Diagnostic, Location};

#[derive(Deserialize)]
struct CargoMessage {
    reason: String,
    message: Option<CompilerMessage>,
    executable: Option<PathBuf>,
    target: Option<Target>,
}

#[derive(Deserialize)]
struct Target {
    name: String,
}

#[derive(Deserialize)]
struct CompilerMessage {
    message: String,
    level: String,
    spans: Vec<Span>,
    children: Vec<CompilerMessage>,
    rendered: Option<String>,
}

#[derive(Deserialize)]
struct Span {
    file_name: String,
    line_start: usize,
    column_start: usize,
    is_primary: bool,
    label: Option<String>,
}

/// What the build produced: a binary for each chapter that compiled, and the problems.
pub(super) struct Built {
    /// Binary name -> path, for every requested binary that was built.
    pub executables: HashMap<String, PathBuf>,
    /// Compiler errors (mapped to Markdown where they can be) and, if the build failed
    /// without any, what cargo printed.
    pub errors: Vec<Diagnostic>,
    /// Compiler warnings mapped to Markdown.
    pub warnings: Vec<Diagnostic>,
}

/// Runs `cargo build --release --keep-going --bin ...` in `crate_dir` with `target_dir`; maps
/// messages through `map`.
pub(super) fn build(
    crate_dir: &Path,
    target_dir: &Path,
    bins: &[&str],
    map: &SourceMap,
) -> Result<Built, Vec<Diagnostic>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--keep-going",
            "--message-format=json",
        ])
        .args(bins.iter().flat_map(|bin| ["--bin", bin]))
        .current_dir(crate_dir)
        .env("CARGO_TARGET_DIR", target_dir)
        .env_remove("CARGO_PRIMARY_PACKAGE")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            vec![
                Diagnostic::error(format!("cannot run cargo: {e}"))
                    .with_help("install Rust with cargo, or set CARGO"),
            ]
        })?;
    let mut built = Built {
        executables: HashMap::new(),
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<CargoMessage>(line) else {
            continue;
        };
        match (msg.reason.as_str(), msg.message) {
            ("compiler-message", Some(m)) => match m.level.as_str() {
                // Aggregate lines like "aborting due to 2 previous errors" carry no place.
                "error" if m.message.starts_with("aborting due to") => {}
                "error" => built.errors.push(to_diagnostic(&m, map, true)),
                "warning" if is_ours(&m, map) => built.warnings.push(to_diagnostic(&m, map, false)),
                _ => {}
            },
            ("compiler-artifact", _) => {
                if let (Some(target), Some(executable)) = (msg.target, msg.executable) {
                    built.executables.insert(target.name, executable);
                }
            }
            _ => {}
        }
    }
    if !output.status.success() && built.errors.is_empty() {
        built.errors.push(
            Diagnostic::error("building the experiments failed")
                .with_note(tail(&output.stderr, 15)),
        );
    }
    Ok(built)
}

fn tail(bytes: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn primary(m: &CompilerMessage) -> Option<&Span> {
    m.spans.iter().find(|s| s.is_primary).or(m.spans.first())
}

fn is_ours(m: &CompilerMessage, map: &SourceMap) -> bool {
    primary(m).is_some_and(|s| map.origin(&s.file_name, s.line_start).is_some())
}

fn to_diagnostic(m: &CompilerMessage, map: &SourceMap, error: bool) -> Diagnostic {
    let mut d = if error {
        Diagnostic::error(&m.message)
    } else {
        Diagnostic::warning(&m.message)
    };
    let span = primary(m);
    match span.and_then(|s| map.origin(&s.file_name, s.line_start).map(|o| (s, o))) {
        Some((s, origin)) => {
            let col = s.column_start + origin.col_shift;
            d = d.at(Location::at_line(&origin.path, origin.line, col));
            if let Some(label) = s.label.as_ref().filter(|l| !l.is_empty()) {
                d = d.with_label(label.clone());
            }
            d = d.with_note(format!(
                "in experiment block {} of this chapter",
                origin.block + 1
            ));
        }
        None => {
            if let Some(rendered) = &m.rendered {
                d = d.with_note(rendered.trim_end().to_string());
            }
        }
    }
    for child in &m.children {
        let text = match child.level.as_str() {
            "help" => format!("help: {}", child.message),
            level => format!("{level}: {}", child.message),
        };
        d = d.with_note(text);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::generate::{ChapterBlocks, generate};
    use crate::markdown::Experiment;
    use crate::markdown::experiment::{BlockOptions, CodeLine};

    #[test]
    fn compiler_errors_map_to_the_markdown_line_and_column() {
        let block = Experiment {
            index: 0,
            options: BlockOptions::default(),
            lines: vec![CodeLine {
                code: "let y = x + 1;".into(),
                shown: false,
                line: 12,
                col_shift: 2,
            }],
            span: 0..0,
            line: 11,
            pinned: None,
        };
        let path = Path::new("content/01-a.md");
        let krate = generate(
            "p",
            Path::new("/lab"),
            &[ChapterBlocks {
                slug: "a",
                path,
                blocks: &[block],
            }],
        );
        let file = format!("src/bin/{}.rs", krate.bins[0]);
        let (_, module) = krate
            .files
            .iter()
            .find(|(p, _)| p.to_str() == Some(file.as_str()))
            .unwrap();
        let line = module.lines().position(|l| l.starts_with("let y")).unwrap() + 1;
        let json = format!(
            r#"{{"message":"cannot find value `x` in this scope","level":"error","spans":[{{"file_name":"{file}","line_start":{line},"column_start":9,"is_primary":true,"label":"not found in this scope"}}],"children":[{{"message":"a local variable with a similar name exists: `y`","level":"help","spans":[],"children":[],"rendered":null}}],"rendered":"..."}}"#
        );
        let m: CompilerMessage = serde_json::from_str(&json).unwrap();
        let d = to_diagnostic(&m, &krate.map, true);
        let loc = d.location.unwrap();
        assert_eq!(loc.to_string(), "content/01-a.md:12:11");
        assert_eq!(d.label.as_deref(), Some("not found in this scope"));
        assert!(
            d.notes
                .iter()
                .any(|n| n.starts_with("help: a local variable"))
        );
    }
}
