//! The glossary page's tables, from `content/glossary.toml` (rendered once per build and
//! placed wherever a chapter writes `{{glossary}}`).

use std::fmt::Write as _;

use crate::content::Glossary;
use crate::content::glossary::Term;
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
        let _ = write!(
            out,
            "<div class=\"table-wrap\"><table class=\"glossary\">\n<thead><tr><th>{}</th><th>{}</th><th>{}</th><th>{}</th></tr></thead>\n<tbody>\n",
            escape(&crate::messages::get("glossary_term")),
            escape(&crate::messages::get("glossary_english")),
            escape(&crate::messages::get("glossary_avoid")),
            escape(&crate::messages::get("glossary_note")),
        );
        let separator = crate::messages::get("glossary_separator");
        for term in &glossary.terms {
            let variants: Vec<String> = term.variants.iter().map(|v| escape(v)).collect();
            let _ = writeln!(
                out,
                "<tr id=\"{id}\"><td>{}</td><td lang=\"en\">{}</td><td>{}</td><td>{}</td></tr>",
                escape(&term.term),
                escape(&term.english),
                variants.join(&separator),
                escape(term.note.as_deref().unwrap_or_default()),
                id = escape(&term.id()),
            );
        }
        out.push_str("</tbody>\n</table></div>\n");
    }
    if !glossary.notation.is_empty() {
        let _ = write!(
            out,
            "<div class=\"table-wrap\"><table class=\"notation\">\n<thead><tr><th>{}</th><th>{}</th></tr></thead>\n<tbody>\n",
            escape(&crate::messages::get("notation_symbol")),
            escape(&crate::messages::get("notation_meaning")),
        );
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

/// HTML-escapes text as `render::html::escape` does (pulldown-cmark's escaper), without
/// importing `html`, which imports this module for its term links.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let _ = pulldown_cmark_escape::escape_html(&mut out, text);
    out
}

/// The id of a term's row in the glossary table (`term-attention`), which links point at.
pub fn anchor(term: &Term) -> String {
    term.id()
}

/// A term that chapters link to the glossary at its first use, with what the preview shows.
#[derive(Debug, Clone)]
pub struct TermLink {
    /// The Chinese form the prose uses.
    pub term: String,
    /// Its row on the glossary page (`/base/glossary/#term-attention`).
    pub url: String,
    /// The preview: the English term, then the note, as HTML.
    pub preview: String,
}

/// The terms to link, longest first (so `多头注意力` wins over `注意力` where both start), for a
/// glossary placed on the page at `page_url`. One-character terms (`键`, `值`) are left out:
/// they are too often part of another word (`最大值`).
pub fn term_links(glossary: &Glossary, page_url: &str) -> Vec<TermLink> {
    let mut links: Vec<TermLink> = glossary
        .terms
        .iter()
        .filter(|t| t.term.chars().count() > 1)
        .map(|t| TermLink {
            term: t.term.clone(),
            url: format!("{page_url}#{}", anchor(t)),
            preview: format!(
                "<p class=\"preview-title\">{} <span lang=\"en\">{}</span></p>{}",
                escape(&t.term),
                escape(&t.english),
                t.note
                    .as_deref()
                    .map(|n| format!("<p>{}</p>", escape(n)))
                    .unwrap_or_default()
            ),
        })
        .collect();
    links.sort_by_key(|l| std::cmp::Reverse(l.term.chars().count()));
    links
}

/// Links the first use of each term in `text`, skipping those in `used` (indices into
/// `terms`) and marking the ones it links. `None` when nothing was linked. A Latin term must
/// stand as a word (`softmax`, not in `log_softmax`).
pub fn link_first_uses(text: &str, terms: &[TermLink], used: &mut [bool]) -> Option<String> {
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while at < text.len() {
        let rest = &text[at..];
        let hit = terms.iter().enumerate().find(|(i, t)| {
            !used[*i] && rest.starts_with(t.term.as_str()) && stands_alone(text, at, t.term.len())
        });
        match hit {
            Some((i, t)) => {
                used[i] = true;
                out.push_str(&escape(&text[copied..at]));
                out.push_str(&format!(
                    "<a class=\"term\" href=\"{}\">{}</a>",
                    escape(&t.url),
                    escape(&t.term)
                ));
                at += t.term.len();
                copied = at;
            }
            None => at += rest.chars().next().map_or(1, char::len_utf8),
        }
    }
    (copied > 0).then(|| {
        out.push_str(&escape(&text[copied..]));
        out
    })
}

fn stands_alone(text: &str, at: usize, len: usize) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let starts_latin = text[at..].chars().next().is_some_and(word);
    let ends_latin = text[..at + len].chars().next_back().is_some_and(word);
    let joined_before = starts_latin && text[..at].chars().next_back().is_some_and(word);
    let joined_after = ends_latin && text[at + len..].chars().next().is_some_and(word);
    !(joined_before || joined_after)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glossary() -> Glossary {
        let text = "[[term]]\nterm = \"注意力\"\nenglish = \"attention\"\nnote = \"按权重回看\"\n\
                    [[term]]\nterm = \"多头注意力\"\nenglish = \"multi-head attention\"\n\
                    [[term]]\nterm = \"值\"\nenglish = \"value\"\n\
                    [[term]]\nterm = \"在线 softmax\"\nenglish = \"online softmax\"\n";
        Glossary::parse(std::path::Path::new("content/glossary.toml"), text).unwrap()
    }

    #[test]
    fn a_term_links_once_at_its_first_use_longest_term_first() {
        let terms = term_links(&glossary(), "/s/glossary/");
        assert_eq!(terms.len(), 3, "one-character terms are not linked");
        let mut used = vec![false; terms.len()];
        let first =
            link_first_uses("多头注意力把注意力分成几份，最大值", &terms, &mut used).unwrap();
        assert_eq!(
            first,
            "<a class=\"term\" href=\"/s/glossary/#term-multi-head-attention\">多头注意力</a>把\
             <a class=\"term\" href=\"/s/glossary/#term-attention\">注意力</a>分成几份，最大值"
        );
        assert_eq!(
            link_first_uses("注意力 & 多头注意力", &terms, &mut used),
            None
        );
        assert!(
            terms[2]
                .preview
                .contains("<span lang=\"en\">attention</span>")
        );
        assert!(terms[2].preview.contains("<p>按权重回看</p>"));
    }

    #[test]
    fn a_latin_term_links_only_as_a_word() {
        let terms = term_links(&glossary(), "/g/");
        let mut used = vec![false; terms.len()];
        assert_eq!(link_first_uses("x在线 softmaxes", &terms, &mut used), None);
        assert!(link_first_uses("用在线 softmax。", &terms, &mut used).is_some());
    }
}
