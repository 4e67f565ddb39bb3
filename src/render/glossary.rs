//! The glossary page's tables, from `content/glossary.toml` (rendered once per build and
//! placed wherever a chapter writes `{{glossary}}`).

use std::fmt::Write as _;

use crate::content::Glossary;
use crate::render::html::escape;
use crate::render::math::{MathError, MathRenderer};

/// The terms table, then the notation table; symbols through KaTeX. A symbol KaTeX rejects is
/// shown as its TeX in code, and returned with KaTeX's message (by its index in `notation`).
pub fn html(glossary: &Glossary, renderer: &MathRenderer) -> (String, Vec<(usize, String)>) {
    html_with(glossary, |i| {
        renderer.render(&glossary.notation[i].symbol, false)
    })
}

/// [`html`] with the symbols rendered ahead (through the math cache): `symbol(i)` is the
/// rendering of notation entry `i`.
pub fn html_with(
    glossary: &Glossary,
    mut symbol: impl FnMut(usize) -> Result<String, MathError>,
) -> (String, Vec<(usize, String)>) {
    let mut rejected = Vec::new();
    let mut out = String::new();
    if !glossary.terms.is_empty() {
        out.push_str("<div class=\"table-wrap\"><table class=\"glossary\">\n<thead><tr><th>术语</th><th>英文</th><th>不用的写法</th><th>说明</th></tr></thead>\n<tbody>\n");
        for term in &glossary.terms {
            let variants: Vec<String> = term.variants.iter().map(|v| escape(v)).collect();
            let _ = writeln!(
                out,
                "<tr id=\"{id}\"><td>{}</td><td lang=\"en\">{}</td><td>{}</td><td>{}</td></tr>",
                escape(&term.term),
                escape(&term.english),
                variants.join("、"),
                escape(term.note.as_deref().unwrap_or_default()),
                id = escape(&term.id()),
            );
        }
        out.push_str("</tbody>\n</table></div>\n");
    }
    if !glossary.notation.is_empty() {
        out.push_str("<div class=\"table-wrap\"><table class=\"notation\">\n<thead><tr><th>记号</th><th>含义</th></tr></thead>\n<tbody>\n");
        for (i, entry) in glossary.notation.iter().enumerate() {
            let symbol = symbol(i).unwrap_or_else(|e| {
                rejected.push((i, e.message));
                format!("<code>{}</code>", escape(&entry.symbol))
            });
            let _ = writeln!(
                out,
                "<tr><td>{symbol}</td><td>{}</td></tr>",
                escape(&entry.meaning)
            );
        }
        out.push_str("</tbody>\n</table></div>\n");
    }
    (out, rejected)
}
