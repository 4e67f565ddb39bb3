//! Server-side math: every formula rendered once by the `katex` crate (HTML + MathML).
//!
//! Formulas are rendered in parallel (the KaTeX engine is thread-local, so each rayon worker
//! starts its own) and deduplicated by content, so a formula repeated across chapters costs one
//! render. KaTeX's errors carry no position; the caller maps them to the formula's line.

use std::collections::BTreeMap;

use rayon::prelude::*;

/// A formula KaTeX rejected, with KaTeX's message cleaned of the JS wrapper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MathError {
    /// The cleaned message, e.g. `Expected '}', got 'EOF' at end of input: \frac{a}{`.
    pub message: String,
}

/// Renders formulas with the site's macros.
pub struct MathRenderer {
    opts: katex::Opts,
}

impl MathRenderer {
    /// A renderer with site-wide macros (`[katex.macros]`).
    pub fn new(macros: &BTreeMap<String, String>) -> Self {
        let mut opts = katex::Opts::default();
        opts.set_throw_on_error(true);
        for (name, body) in macros {
            opts.add_macro(name.clone(), body.clone());
        }
        MathRenderer { opts }
    }

    /// Renders one formula.
    pub fn render(&self, tex: &str, display: bool) -> Result<String, MathError> {
        let mut opts = self.opts.clone();
        opts.set_display_mode(display);
        katex::render_with_opts(tex, &opts).map_err(|e| MathError {
            message: clean_error(&e.to_string()),
        })
    }

    /// Renders many formulas in parallel, each distinct `(tex, display)` once, results in order.
    pub fn render_all(&self, formulas: &[(&str, bool)]) -> Vec<Result<String, MathError>> {
        let mut unique: Vec<(&str, bool)> = formulas.to_vec();
        unique.sort_unstable();
        unique.dedup();
        let rendered: BTreeMap<(&str, bool), Result<String, MathError>> = unique
            .par_iter()
            .map(|&(tex, display)| ((tex, display), self.render(tex, display)))
            .collect();
        formulas.iter().map(|key| rendered[key].clone()).collect()
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
        let out = r.render_all(&[("a", false), ("b", false), ("a", false)]);
        assert_eq!(out[0], out[2]);
        assert_ne!(out[0], out[1]);
    }
}
