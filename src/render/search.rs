//! The search index: every section of every chapter as plain text, plus the terms in it, written
//! to `search-index.json` for `static/search.js` to search in the reader's browser.
//!
//! Chinese has no spaces between words. Rather than a segmenter (jieba's dictionary takes
//! ~0.13 s to load, more than a small book takes to build, and the browser's `Intl.Segmenter`
//! cuts differently anyway), the index follows Lucene's `CJKAnalyzer`: a run of ideographs
//! gives every overlapping pair of characters as a term (a lone ideograph is its own term),
//! Latin text gives its words. Cutting costs time in proportion to the text and needs no
//! set-up, and the client needs no segmenter:
//!
//! - it finds each Chinese query string anywhere in the stored text, so `意力` finds `注意力`
//!   and `熵` finds `交叉熵`, and each Latin one at the start of a word (`soft` finds
//!   `softmax`), numbers and `d_k` too; recall is that of substring search whatever the terms;
//! - it counts a Latin query that is a whole word of a section, not just the start of one,
//!   twice;
//! - it splits a Chinese query that the text does not contain in one piece (`缩放注意力`) into
//!   terms of the index, longest first (pairs, here), and asks for all of them.
//!
//! One document per section (h2 or h3), so a result links to the place it was found. The text
//! is that of the prose as Markdown gave it: inline code and quoted numbers as shown on the
//! page, inline formulas as readable plain text (`QKᵀ/√d_k`, see `tex_text`) so that snippets
//! read as prose; code blocks, experiments, display math and raw HTML are left out. The TeX of
//! a section's inline formulas is stored beside it (`m`), so a query written in TeX
//! (`\sqrt{d}`) still finds the section.
//!
//! The file (keys short because each `docs` entry repeats them):
//!
//! ```json
//! { "version": 1, "heading_weight": 5,
//!   "docs": [ { "t": "chapter title", "h": "section heading (absent before the first one)",
//!               "u": "/base/slug/#id", "b": "plain text", "n": 312,
//!               "m": "TeX of the inline formulas, one per line (absent if none)" } ],
//!   "terms": ["softmax", "注意", "意力", ...], // sorted, lowercase, two characters or more
//!   "postings": [[doc, count, doc, count, ...], ...] }
//! ```
//!
//! `n` is the number of words in the section; a count weighs words of the chapter title (in the
//! section before the first heading) and of the section's heading `heading_weight` times.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use pulldown_cmark::{Event, TagEnd};
use rayon::prelude::*;
use serde::Serialize;

use super::cache::{self, Cache};
use super::tex_text;

use crate::content::Series;
use crate::lab::Ran;
use crate::markdown::{Heading, Piece, is_cjk};
use crate::quotes::Bound;
use crate::render::chapter_url;
use crate::text::sanitize;

/// Where the index goes, relative to the output root. `search.js` fetches it from beside itself.
pub const INDEX_PATH: &str = "search-index.json";

/// Bumped whenever the client has to change with the file (2: pairs of ideographs as terms;
/// 3: inline formulas as readable text, their TeX in `m`).
const VERSION: u32 = 3;

/// How many body words one word of a title or heading is worth.
const HEADING_WEIGHT: u32 = 5;

/// The files search adds to the output: the index. The client (`search.js`, `search.css`) is an
/// ordinary static file.
pub fn index_files<C: AsRef<Bound> + AsRef<Ran>>(series: &Series<C>) -> Vec<(PathBuf, Vec<u8>)> {
    let json = Sections::of(series).index_json(None);
    vec![(PathBuf::from(INDEX_PATH), json.into_bytes())]
}

/// What the client loads (see the module documentation for the format).
#[derive(Debug, Serialize)]
pub struct SearchIndex {
    version: u32,
    heading_weight: u32,
    docs: Vec<SearchDoc>,
    terms: Vec<String>,
    postings: Vec<Vec<u32>>,
}

#[derive(Debug, Clone, Serialize)]
struct SearchDoc {
    t: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    h: Option<String>,
    u: String,
    b: String,
    n: u32,
    #[serde(skip_serializing_if = "String::is_empty")]
    m: String,
}

/// The text of every section of a series, taken out of it so the index can be built on
/// another thread while the pages render (cutting the words is the slow part).
#[derive(Debug, Clone)]
pub struct Sections {
    docs: Vec<SearchDoc>,
}

impl Sections {
    /// Every section of every chapter of a parsed series (quotes show their rerun values once
    /// stage 4 has bound them, their quoted text before).
    pub fn of<C: AsRef<Bound> + AsRef<Ran>>(series: &Series<C>) -> Sections {
        let base_path = series.config.base_path();
        // A reference reads as the page prints it (`图 2`), so a snippet has no empty `（）`
        // where one stood; an unresolved one (reported by the build) reads as nothing.
        let (refs, _) = super::xref::resolve_all(series);
        let mut docs = Vec::new();
        for (chapter, refs) in series
            .chapters
            .iter()
            .map(AsRef::<Bound>::as_ref)
            .zip(&refs)
        {
            let url = chapter_url(&base_path, &chapter.slug);
            for section in sections(chapter, refs) {
                // The client shows this text as HTML: no character HTML forbids.
                docs.push(SearchDoc {
                    t: sanitize(&chapter.front.title).into_owned(),
                    h: section.heading.map(|h| {
                        let title = if section.title.is_empty() {
                            &h.text
                        } else {
                            &section.title
                        };
                        sanitize(title).into_owned()
                    }),
                    u: match section.heading {
                        Some(h) => format!("{url}#{}", h.id),
                        None => url.clone(),
                    },
                    b: sanitize(&section.text).into_owned(),
                    n: 0,
                    m: sanitize(&section.tex).into_owned(),
                });
            }
        }
        Sections { docs }
    }

    /// The index as JSON. With a cache file, sections identical to the last build's reuse its
    /// index.
    pub fn index_json(self, cache: Option<PathBuf>) -> String {
        let Some(path) = cache else {
            return SearchIndex::build(self).to_json();
        };
        let mut cache: Cache<String> = Cache::load(path);
        let texts: Vec<&[u8]> = self
            .docs
            .iter()
            .flat_map(|d| {
                [
                    d.t.as_bytes(),
                    d.h.as_deref().map_or(&[0xff][..], str::as_bytes),
                    d.u.as_bytes(),
                    d.b.as_bytes(),
                    d.m.as_bytes(),
                ]
            })
            .collect();
        let salt = format!(
            "attnbook {}; search index {VERSION}, heading weight {HEADING_WEIGHT}",
            env!("CARGO_PKG_VERSION")
        );
        let key = cache::key(&[&[salt.as_bytes()], texts.as_slice()].concat());
        let json = match cache.get(&key) {
            Some(json) => json.clone(),
            None => {
                let json = SearchIndex::build(self).to_json();
                cache.insert(key, json.clone());
                json
            }
        };
        cache.save();
        json
    }
}

impl SearchIndex {
    /// Cuts the words of every section, in parallel, and collects the postings.
    fn build(sections: Sections) -> SearchIndex {
        let mut docs = sections.docs;
        let counts: Vec<HashMap<String, u32>> = docs
            .par_iter_mut()
            .map(|doc| {
                let heading = doc.h.as_deref().unwrap_or(&doc.t);
                let mut counts = HashMap::new();
                doc.n = count_terms(heading, HEADING_WEIGHT, &mut counts)
                    + count_terms(&doc.b, 1, &mut counts);
                counts
            })
            .collect();
        let mut postings: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for (id, counts) in counts.into_iter().enumerate() {
            let id = u32::try_from(id).unwrap_or(u32::MAX);
            // One-character words are left out: every substring search finds them anyway,
            // and they would be a third of the postings.
            for (term, count) in counts
                .into_iter()
                .filter(|(t, _)| t.chars().nth(1).is_some())
            {
                postings.entry(term).or_default().extend([id, count]);
            }
        }
        let (terms, postings) = postings.into_iter().unzip();
        SearchIndex {
            version: VERSION,
            heading_weight: HEADING_WEIGHT,
            docs,
            terms,
            postings,
        }
    }

    /// The JSON the client fetches.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("plain strings and numbers serialize")
    }
}

/// Adds `weight` per term of `text` to `counts`; returns the number of terms.
fn count_terms(text: &str, weight: u32, counts: &mut HashMap<String, u32>) -> u32 {
    let mut n = 0;
    terms(&text.to_lowercase(), |term| {
        *counts.entry(term.to_owned()).or_default() += weight;
        n += 1;
    });
    n
}

/// Calls `add` with every term of `text` (lowercase): each word of letters and digits (`_`
/// joins, so `d_k` is one word), each overlapping pair of characters in a run of ideographs,
/// and a lone ideograph on its own.
fn terms(text: &str, mut add: impl FnMut(&str)) {
    let mut word: Option<usize> = None;
    let mut run: Vec<(usize, char)> = Vec::new();
    let flush_run = |run: &mut Vec<(usize, char)>, add: &mut dyn FnMut(&str)| {
        match run.as_slice() {
            [] => {}
            [(at, c)] => add(&text[*at..at + c.len_utf8()]),
            pairs => {
                for pair in pairs.windows(2) {
                    let (start, (end, last)) = (pair[0].0, pair[1]);
                    add(&text[start..end + last.len_utf8()]);
                }
            }
        }
        run.clear();
    };
    for (at, c) in text.char_indices() {
        if is_ideograph(c) {
            if let Some(start) = word.take() {
                add(&text[start..at]);
            }
            run.push((at, c));
        } else {
            flush_run(&mut run, &mut add);
            if c.is_alphanumeric() || c == '_' {
                word.get_or_insert(at);
            } else if let Some(start) = word.take() {
                add(&text[start..at]);
            }
        }
    }
    flush_run(&mut run, &mut add);
    if let Some(start) = word {
        add(&text[start..]);
    }
}

/// Ideographs, kana and hangul: scripts written without spaces between words, whose
/// characters form the pairs (CJK punctuation and full-width forms separate terms).
fn is_ideograph(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30FF}'
        | '\u{3400}'..='\u{4DBF}'
        | '\u{4E00}'..='\u{9FFF}'
        | '\u{AC00}'..='\u{D7AF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{3FFFF}')
}

/// A chapter's text between two h2/h3 headings.
struct Section<'a> {
    /// `None` for the text before the first heading (the chapter's summary starts it).
    heading: Option<&'a Heading>,
    /// The heading as the body's text reads: formulas as plain text, not TeX.
    title: String,
    text: String,
    /// The TeX of its inline formulas (heading included), one per line.
    tex: String,
}

impl<'a> Section<'a> {
    fn new(heading: Option<&'a Heading>, text: String) -> Self {
        Section {
            heading,
            title: String::new(),
            text,
            tex: String::new(),
        }
    }
}

fn sections<'a>(chapter: &'a Bound, refs: &[Option<super::xref::Resolved>]) -> Vec<Section<'a>> {
    let doc = &chapter.doc;
    let summary = chapter.front.summary.as_deref().unwrap_or_default();
    let mut sections = vec![Section::new(None, format!("{summary}\n"))];
    // The text of a section heading is the section's `h`, not part of its body.
    let mut in_section_heading = false;
    for piece in &doc.pieces {
        let text: Cow<'_, str> = match piece {
            Piece::HeadingStart(i) if is_section(&doc.headings[*i]) => {
                sections.push(Section::new(Some(&doc.headings[*i]), String::new()));
                in_section_heading = true;
                continue;
            }
            Piece::HeadingEnd(_) if in_section_heading => {
                in_section_heading = false;
                continue;
            }
            Piece::HeadingEnd(_) => "\n".into(),
            Piece::Event(Event::Text(t) | Event::Code(t)) => t.as_ref().into(),
            Piece::Event(Event::End(tag)) if is_inline(tag) => continue,
            Piece::Event(Event::End(_) | Event::SoftBreak | Event::HardBreak | Event::Rule) => {
                "\n".into()
            }
            Piece::Event(_) => continue,
            Piece::Math(i) if !doc.maths[*i].display => {
                let tex = &doc.maths[*i].tex;
                let section = sections.last_mut().expect("starts with one");
                section.tex.push_str(tex);
                section.tex.push('\n');
                tex_text::readable(tex).into()
            }
            Piece::Quote(i) => quote_text(chapter, *i).into(),
            Piece::Ref(i) => match refs.get(*i) {
                Some(Some(resolved)) => resolved.text.as_str().into(),
                _ => continue,
            },
            Piece::Math(_)
            | Piece::Experiment(_)
            | Piece::Code { .. }
            | Piece::Placement { .. }
            | Piece::Glossary { .. } => "\n".into(),
            Piece::ImageFigure(i) => format!("\n{}\n", doc.image_figures[*i].caption).into(),
            // Citations are rendered from state of their own; their labels ("[1]") are not
            // what a reader searches for.
            _ => continue,
        };
        let section = sections.last_mut().expect("starts with one");
        let into = if in_section_heading {
            &mut section.title
        } else {
            &mut section.text
        };
        into.push_str(&text);
    }
    for section in &mut sections {
        section.title = normalize(&section.title);
        section.text = normalize(&section.text);
        section.tex.truncate(section.tex.trim_end().len());
    }
    sections.retain(|s| s.heading.is_some() || !s.text.is_empty());
    sections
}

fn is_section(heading: &Heading) -> bool {
    matches!(heading.level, 2 | 3)
}

/// Tags whose end does not end a block of text.
fn is_inline(tag: &TagEnd) -> bool {
    matches!(
        tag,
        TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Link
            | TagEnd::Image
            | TagEnd::Superscript
            | TagEnd::Subscript
    )
}

/// A quoted number as the page shows it: the rerun value once bound, the quoted text before.
fn quote_text(chapter: &Bound, i: usize) -> String {
    match chapter.bindings.get(i) {
        Some(binding) => binding.shown.clone(),
        None => {
            let quote = &chapter.doc.quotes[i];
            let number = chapter
                .source
                .get(quote.number.span.clone())
                .unwrap_or_default();
            format!("{}{number}{}", quote.prefix, quote.suffix)
        }
    }
}

/// Collapses whitespace to one space, and to nothing between two CJK characters: a line break
/// inside a Chinese sentence is no space on the page, and a query must find the words across it.
fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            pending_space = !out.is_empty();
            continue;
        }
        if pending_space && !(out.chars().next_back().is_some_and(is_cjk) && is_cjk(c)) {
            out.push(' ');
        }
        pending_space = false;
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_terms(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        terms(text, |t| out.push(t.to_owned()));
        out
    }

    #[test]
    fn ideographs_give_pairs_and_latin_text_gives_words() {
        assert_eq!(all_terms("注意力"), ["注意", "意力"]);
        assert_eq!(all_terms("熵"), ["熵"]);
        assert_eq!(
            all_terms("softmax 把分数，变成权重 d_k=64"),
            [
                "softmax", "把分", "分数", "变成", "成权", "权重", "d_k", "64"
            ]
        );
        // Where scripts meet there is no space, and none is needed.
        assert_eq!(
            all_terms("用softmax归一化"),
            ["用", "softmax", "归一", "一化"]
        );
        assert_eq!(all_terms("café naïve x²"), ["café", "naïve", "x²"]);
        assert_eq!(all_terms("「注意」。"), ["注意"]);
        assert!(all_terms(" ,.;").is_empty());
    }

    #[test]
    fn whitespace_between_chinese_characters_disappears() {
        assert_eq!(normalize("缩放\n点积 注意力"), "缩放点积注意力");
        assert_eq!(normalize("用 softmax\n归一化"), "用 softmax 归一化");
        assert_eq!(normalize("  a \n\n b  "), "a b");
    }

    #[test]
    fn terms_are_counted_lowercase_with_their_weight() {
        let mut counts = HashMap::new();
        let n = count_terms("Softmax 把注意力", 5, &mut counts);
        assert_eq!(n, 4);
        assert_eq!(counts["softmax"], 5);
        assert_eq!(counts["注意"], 5);
        assert!(!counts.contains_key("Softmax"));
    }
}
