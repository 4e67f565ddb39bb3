//! Build-time syntax highlighting with syntect: code becomes spans with `hl-` classes, and one
//! stylesheet holds a light and a dark theme, so the reader's theme toggle recolours code too.

use std::path::PathBuf;
use std::sync::{LazyLock, Mutex, PoisonError};

use syntect::highlighting::ThemeSet;
use syntect::html::{ClassStyle, ClassedHTMLGenerator, css_for_theme_with_class_style};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

use super::cache::{self, Cache};

const STYLE: ClassStyle = ClassStyle::SpacedPrefixed { prefix: "hl-" };

static SYNTAXES: LazyLock<SyntaxSet> = LazyLock::new(SyntaxSet::load_defaults_newlines);

/// What decides the markup besides the code and its language: bump `markup` when the HTML
/// changes shape; a new attnbook version (and so a new syntect or syntax set) starts afresh.
const CACHE_SALT: &str = concat!("attnbook ", env!("CARGO_PKG_VERSION"), "; markup 1");

/// Highlighted code memoised by content, shared by the chapters rendered in parallel and kept
/// across builds in `.attnbook/cache/render/highlight.json`: an unchanged block is not highlighted
/// again, and a build that finds every block cached never loads syntect's syntaxes.
#[derive(Debug)]
pub struct Highlighter {
    cache: Mutex<Cache<Option<String>>>,
    /// False when the site turned highlighting off: every block is then plain text.
    enabled: bool,
}

impl Default for Highlighter {
    fn default() -> Self {
        Highlighter {
            cache: Mutex::default(),
            enabled: true,
        }
    }
}

impl Highlighter {
    /// A highlighter with the cache file at `path`.
    pub fn load(path: PathBuf) -> Self {
        Highlighter {
            cache: Mutex::new(Cache::load(path)),
            enabled: true,
        }
    }

    /// A highlighter that highlights nothing (`[highlight] enabled = false`).
    pub fn off() -> Self {
        Highlighter {
            enabled: false,
            ..Highlighter::default()
        }
    }

    /// A highlighter whose memory ends with it.
    pub fn in_memory() -> Self {
        Highlighter::default()
    }

    /// [`highlight`], memoised.
    pub fn highlight(&self, code: &str, lang: &str) -> Option<String> {
        if !self.enabled {
            return None;
        }
        let key = cache::key(&[CACHE_SALT.as_bytes(), lang.as_bytes(), code.as_bytes()]);
        if let Some(hit) = self.lock().get(&key) {
            return hit.clone();
        }
        // Highlighting happens outside the lock, so chapters highlight in parallel.
        let fresh = highlight(code, lang);
        self.lock().insert(key, fresh.clone());
        fresh
    }

    /// Writes the cache back (the blocks of this build only).
    pub fn save(&self) {
        self.lock().save();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache<Option<String>>> {
        // A panic elsewhere cannot leave a half-written entry: insert is one map operation.
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Loads what highlighting `langs` needs: syntect's syntax set, and the contexts of each
/// syntax, which syntect decodes on a syntax's first use (~5-12 ms each, measured). A build
/// calls it on a thread of its own while formulas render, so the chapter bodies find it done;
/// with no code to highlight it is never called and costs nothing.
pub fn warm_up<'a>(langs: impl IntoIterator<Item = &'a str>) {
    for lang in langs {
        let _ = highlight("\n", lang);
    }
}

/// The fence languages of every code block of `series` (experiments are Rust), deduplicated.
pub fn languages(series: &crate::content::Series) -> std::collections::BTreeSet<&str> {
    use crate::markdown::Piece;
    let mut langs = std::collections::BTreeSet::new();
    for chapter in &series.chapters {
        if !chapter.doc.experiments.is_empty() {
            langs.insert("rust");
        }
        for piece in &chapter.doc.pieces {
            if let Piece::Code {
                lang: Some(lang), ..
            } = piece
            {
                langs.insert(lang.as_str());
            }
        }
    }
    langs
}

/// Highlights `code` as `lang` (a fence token like `rust`, `toml`, `python`); `None` if the
/// language is unknown, so the caller escapes it plainly.
pub fn highlight(code: &str, lang: &str) -> Option<String> {
    let syntax = SYNTAXES.find_syntax_by_token(lang)?;
    let mut generator = ClassedHTMLGenerator::new_with_class_style(syntax, &SYNTAXES, STYLE);
    for line in LinesWithEndings::from(code) {
        generator
            .parse_html_for_line_which_includes_newline(line)
            .ok()?;
    }
    Some(generator.finalize())
}

/// The stylesheet: a light theme by default, a dark one for `data-theme="dark"` and for
/// readers whose system prefers dark (unless they chose light).
pub fn stylesheet() -> String {
    let themes = ThemeSet::load_defaults();
    let css = |name: &str| {
        themes
            .themes
            .get(name)
            .and_then(|t| css_for_theme_with_class_style(t, STYLE).ok())
            .unwrap_or_default()
    };
    let light = without_backgrounds(&css("InspiredGitHub"));
    let dark = without_backgrounds(&css("base16-ocean.dark"));
    format!(
        "/* Generated by attnbook from syntect's InspiredGitHub and base16-ocean.dark themes. */\n{light}\n\
         {}\n@media (prefers-color-scheme: dark) {{\n{}\n}}\n",
        scoped(&dark, "html[data-theme=\"dark\"]"),
        scoped(&dark, "html:not([data-theme=\"light\"])")
    )
}

/// Drops background colours: code boxes take the site's own background in both themes.
fn without_backgrounds(css: &str) -> String {
    css.lines()
        .filter(|l| !l.trim_start().starts_with("background-color"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Prefixes every selector of every rule with `scope`.
fn scoped(css: &str, scope: &str) -> String {
    let mut out = String::new();
    for rule in css.split_inclusive('}') {
        match rule.split_once('{') {
            Some((selectors, body)) if !selectors.trim().is_empty() => {
                let selectors = strip_comments(selectors);
                let prefixed: Vec<String> = selectors
                    .split(',')
                    .map(|s| format!("{scope} {}", s.trim()))
                    .collect();
                out.push_str(&format!("{} {{{body}\n", prefixed.join(", ")));
            }
            _ => {}
        }
    }
    out
}

fn strip_comments(text: &str) -> String {
    match (text.find("/*"), text.find("*/")) {
        (Some(start), Some(end)) if end > start => {
            format!("{}{}", &text[..start], strip_comments(&text[end + 2..]))
        }
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memo_returns_what_highlighting_returns_and_survives_a_build() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("highlight.json");
        let code = "let x = 1;\n";
        let first = Highlighter::load(path.clone());
        assert_eq!(first.highlight(code, "rust"), highlight(code, "rust"));
        assert_eq!(first.highlight(code, "no-such-language"), None);
        first.save();
        let second = Highlighter::load(path);
        assert_eq!(second.lock().len(), 2);
        let key = cache::key(&[CACHE_SALT.as_bytes(), b"rust", code.as_bytes()]);
        assert_eq!(
            second.lock().get(&key).cloned(),
            Some(highlight(code, "rust"))
        );
        assert_eq!(second.highlight(code, "rust"), highlight(code, "rust"));
    }

    #[test]
    fn rust_is_highlighted_with_classes() {
        let html = highlight("let x = 1; // one\n", "rust").unwrap();
        assert!(
            html.contains("<span class=\"hl-storage hl-type hl-rust\">let</span>"),
            "{html}"
        );
        assert!(html.contains("hl-comment"));
        assert!(highlight("x", "no-such-language").is_none());
    }

    #[test]
    fn stylesheet_has_both_themes_scoped() {
        let css = stylesheet();
        assert!(css.contains("html[data-theme=\"dark\"] .hl-comment"));
        assert!(css.contains("@media (prefers-color-scheme: dark)"));
        assert!(!css.contains("background-color"));
    }
}
