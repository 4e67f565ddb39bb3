//! Server-side math: every formula rendered once by the `katex` crate (HTML + MathML).
//!
//! Formulas are rendered in parallel (the KaTeX engine is thread-local, so each rayon worker
//! starts its own) and deduplicated by content, so a formula repeated across chapters costs one
//! render. KaTeX's errors carry no position; the caller maps them to the formula's line.

use std::collections::BTreeMap;

use rayon::prelude::*;

use super::cache::Cache;

/// A formula KaTeX rejected, with KaTeX's message cleaned of the JS wrapper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MathError {
    /// The cleaned message, e.g. `Expected '}', got 'EOF' at end of input: \frac{a}{`.
    pub message: String,
}

/// Renders formulas with the site's macros.
pub struct MathRenderer {
    opts: katex::Opts,
    /// Hashes the macros and the KaTeX version: a cache entry is valid only under both.
    salt: String,
}

/// Rendered formulas kept across builds (`.attnbook/cache/render/math.json`), so an unchanged formula
/// is never rendered twice (KaTeX costs ~1-2 ms per formula here). Errors are cached too.
pub type MathCache = Cache<Result<String, String>>;

impl MathRenderer {
    /// A renderer with site-wide macros (`[katex.macros]`).
    pub fn new(macros: &BTreeMap<String, String>) -> Self {
        let mut opts = katex::Opts::default();
        opts.set_throw_on_error(true);
        let mut salt = blake3::Hasher::new();
        salt.update(katex::KATEX_VERSION.as_bytes());
        for (name, body) in macros {
            opts.add_macro(name.clone(), body.clone());
            salt.update(format!("{name}\u{0}{body}\u{0}").as_bytes());
        }
        MathRenderer {
            opts,
            salt: salt.finalize().to_hex().to_string(),
        }
    }

    /// Renders one formula.
    pub fn render(&self, tex: &str, display: bool) -> Result<String, MathError> {
        let mut opts = self.opts.clone();
        opts.set_display_mode(display);
        katex::render_with_opts(tex, &opts).map_err(|e| MathError {
            message: clean_error(&e.to_string()),
        })
    }

    /// Renders many formulas in parallel, each distinct `(tex, display)` once and only if the
    /// cache lacks it; results in order.
    pub fn render_all(
        &self,
        formulas: &[(&str, bool)],
        cache: &mut MathCache,
    ) -> Vec<Result<String, MathError>> {
        let keys: Vec<String> = formulas
            .iter()
            .map(|&(tex, display)| self.key(tex, display))
            .collect();
        let mut missing: Vec<(&str, bool, &str)> = formulas
            .iter()
            .zip(&keys)
            .filter(|(_, key)| !cache.contains(key))
            .map(|(&(tex, display), key)| (tex, display, key.as_str()))
            .collect();
        missing.sort_unstable_by_key(|m| m.2);
        missing.dedup_by_key(|m| m.2);
        let fresh: Vec<(String, Result<String, String>)> = missing
            .par_iter()
            .map(|&(tex, display, key)| {
                (
                    key.to_string(),
                    self.render(tex, display).map_err(|e| e.message),
                )
            })
            .collect();
        for (key, result) in fresh {
            cache.insert(key, result);
        }
        keys.iter()
            .map(|key| match cache.get(key) {
                Some(Ok(html)) => Ok(html.clone()),
                Some(Err(message)) => Err(MathError {
                    message: message.clone(),
                }),
                // Every missing formula was rendered just above.
                None => Err(MathError {
                    message: "the formula was not rendered".into(),
                }),
            })
            .collect()
    }

    fn key(&self, tex: &str, display: bool) -> String {
        super::cache::key(&[self.salt.as_bytes(), &[u8::from(display)], tex.as_bytes()])
    }
}

/// `failed to execute js (detail: String("ParseError: KaTeX parse error: X"))` -> `X`.
fn clean_error(raw: &str) -> String {
    let message = raw
        .split_once("KaTeX parse error: ")
        .map_or(raw, |(_, rest)| rest);
    let message = message.trim_end_matches(['"', ')']);
    unescape_debug(message)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Undoes Rust's `{:?}` escaping (`\\`, `\n`, `\"`) in one left-to-right pass.
fn unescape_debug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') | Some('t') => out.push(' '),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_html_and_mathml_with_macros() {
        let mut macros = BTreeMap::new();
        macros.insert("\\R".to_string(), "\\mathbb{R}".to_string());
        let r = MathRenderer::new(&macros);
        let html = r.render("x \\in \\R", false).unwrap();
        assert!(html.contains("class=\"katex\""));
        assert!(html.contains("<math"));
        assert!(html.contains("double-struck"), "macro expanded: {html}");
        assert!(r.render("x", true).unwrap().contains("katex-display"));
    }

    #[test]
    fn errors_are_clean() {
        let r = MathRenderer::new(&BTreeMap::new());
        let err = r.render("\\frac{a}{", false).unwrap_err();
        assert!(
            !err.message.contains("failed to execute js"),
            "{}",
            err.message
        );
        assert!(err.message.contains("expected '}'"), "{}", err.message);
        let err = r.render("\\nabla \\left( x\n", true).unwrap_err();
        assert!(err.message.ends_with("\\left( x"), "{}", err.message);
    }

    #[test]
    fn render_all_keeps_order_and_dedups() {
        let r = MathRenderer::new(&BTreeMap::new());
        let mut cache = MathCache::in_memory();
        let out = r.render_all(&[("a", false), ("b", false), ("a", false)], &mut cache);
        assert_eq!(out[0], out[2]);
        assert_ne!(out[0], out[1]);
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn the_cache_survives_a_round_trip_and_is_keyed_by_macros() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("math.json");
        let r = MathRenderer::new(&BTreeMap::new());
        let mut cache = MathCache::load(path.clone());
        let first = r.render_all(&[("x^2", false), ("\\frac{a}{", true)], &mut cache);
        cache.save();
        let mut again = MathCache::load(path);
        assert_eq!(again.len(), 2);
        assert_eq!(
            r.render_all(&[("x^2", false), ("\\frac{a}{", true)], &mut again),
            first
        );
        let mut macros = BTreeMap::new();
        macros.insert("\\R".to_string(), "\\mathbb{R}".to_string());
        let other = MathRenderer::new(&macros);
        assert_ne!(other.key("x^2", false), r.key("x^2", false));
    }
}
