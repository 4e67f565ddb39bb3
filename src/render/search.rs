//! The search index: every section of every chapter as plain text, plus the words in it, written
//! to `search-index.json` for `static/search.js` to search in the reader's browser.
//!
//! Chinese has no spaces between words, so a search needs a segmenter on both sides or
//! substring matching. jieba's dictionary is megabytes, too much to send to a browser, and the
//! browser's own `Intl.Segmenter` cuts differently from jieba. So words are cut once, here, by
//! elasticlunr-rs's Chinese pipeline (jieba `cut_for_search`, then its trimmer and stop words),
//! and the client needs no segmenter:
//!
//! - it finds each Chinese query string anywhere in the stored text, so `意力` finds `注意力`,
//!   and each Latin one at the start of a word (`soft` finds `softmax`), numbers and `d_k` too;
//! - it ranks a section higher when the query is one of the words cut from it, not just a
//!   substring of one, using the word counts below;
//! - it splits a query that the text does not contain in one piece (`缩放注意力`) into the
//!   words of the index, longest first, and asks for all of them.
//!
//! One document per section (h2 or h3), so a result links to the place it was found. The text
//! is that of the prose as Markdown gave it: inline code, inline TeX and quoted numbers as shown
//! on the page; code blocks, experiments, display math and raw HTML are left out.
//!
//! The file (keys short because each `docs` entry repeats them):
//!
//! ```json
//! { "version": 1, "heading_weight": 5,
//!   "docs": [ { "t": "chapter title", "h": "section heading (absent before the first one)",
//!               "u": "/base/slug/#id", "b": "plain text", "n": 312 } ],
//!   "terms": ["softmax", "注意力", ...],     // sorted, lowercase, two characters or more
//!   "postings": [[doc, count, doc, count, ...], ...] }
//! ```
//!
//! `n` is the number of words in the section; a count weighs words of the chapter title (in the
//! section before the first heading) and of the section's heading `heading_weight` times.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::OnceLock;

use elasticlunr::lang::{Chinese, Language};
use elasticlunr::pipeline::Pipeline;
use pulldown_cmark::{Event, TagEnd};
use rayon::prelude::*;
use serde::Serialize;

use super::cache::{self, Cache};

use crate::content::{Chapter, Series};
use crate::markdown::{Heading, Piece};
use crate::render::chapter_url;
use crate::text::sanitize;

/// Where the index goes, relative to the output root. `search.js` fetches it from beside itself.
pub const INDEX_PATH: &str = "search-index.json";

/// Bumped whenever the client has to change with the file.
const VERSION: u32 = 1;

/// How many body words one word of a title or heading is worth.
const HEADING_WEIGHT: u32 = 5;

/// The files search adds to the output: the index. The client (`search.js`, `search.css`) is an
/// ordinary static file.
pub fn index_files(series: &Series) -> Vec<(PathBuf, Vec<u8>)> {
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
    pub fn of(series: &Series) -> Sections {
        let base_path = series.config.base_path();
        let mut docs = Vec::new();
        for chapter in &series.chapters {
            let url = chapter_url(&base_path, &chapter.slug);
            for section in sections(chapter) {
                // The client shows this text as HTML: no character HTML forbids.
                docs.push(SearchDoc {
                    t: sanitize(&chapter.front.title).into_owned(),
                    h: section.heading.map(|h| sanitize(&h.text).into_owned()),
                    u: match section.heading {
                        Some(h) => format!("{url}#{}", h.id),
                        None => url.clone(),
                    },
                    b: sanitize(&section.text).into_owned(),
                    n: 0,
                });
            }
        }
        Sections { docs }
    }

    /// The index as JSON. With a cache file, sections identical to the last build's reuse its
    /// index, and jieba (~0.15 s to load its dictionary) is not needed at all.
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
            .map_init(Words::new, |words, doc| {
                let heading = doc.h.as_deref().unwrap_or(&doc.t);
                let mut counts = HashMap::new();
                doc.n = words.count(heading, HEADING_WEIGHT, &mut counts)
                    + words.count(&doc.b, 1, &mut counts);
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

/// jieba through elasticlunr-rs's Chinese pipeline. Latin words pass through whole, without
/// stemming: the client matches them as word prefixes.
struct Words {
    chinese: &'static Chinese,
    pipeline: Pipeline,
}

impl Words {
    fn new() -> Self {
        // Loading jieba's dictionary takes ~0.15 s; `serve` rebuilds on every change.
        static CHINESE: OnceLock<Chinese> = OnceLock::new();
        let chinese = CHINESE.get_or_init(Chinese::new);
        Words {
            chinese,
            pipeline: chinese.make_pipeline(),
        }
    }

    /// Adds `weight` per word of `text` to `counts`; returns the number of words.
    fn count(&self, text: &str, weight: u32, counts: &mut HashMap<String, u32>) -> u32 {
        let mut n = 0;
        for token in self.chinese.tokenize(&text.to_lowercase()) {
            let word = if plainly_a_word(&token) {
                // What the pipeline would return, without its regular expressions.
                (!matches!(token.as_str(), "的" | "了")).then_some(token)
            } else {
                self.pipeline.run(vec![token]).pop()
            };
            if let Some(word) = word {
                *counts.entry(word).or_default() += weight;
                n += 1;
            }
        }
        n
    }
}

/// True if the pipeline's trimmer would leave `token` as it is: it starts and ends with an ASCII
/// letter or a CJK unified ideograph (the trimmer keeps `\p{Unified_Ideograph}\p{Latin}`).
/// Most tokens are; the others (punctuation, digits, rarer scripts) go through the pipeline.
fn plainly_a_word(token: &str) -> bool {
    let sure = |c: char| c.is_ascii_alphabetic() || ('\u{4E00}'..='\u{9FFF}').contains(&c);
    token.chars().next().is_some_and(sure) && token.chars().next_back().is_some_and(sure)
}

/// A chapter's text between two h2/h3 headings.
struct Section<'a> {
    /// `None` for the text before the first heading (the chapter's summary starts it).
    heading: Option<&'a Heading>,
    text: String,
}

fn sections(chapter: &Chapter) -> Vec<Section<'_>> {
    let doc = &chapter.doc;
    let summary = chapter.front.summary.as_deref().unwrap_or_default();
    let mut raw = vec![(None, format!("{summary}\n"))];
    // The text of a section heading is the section's `h`, not part of its body.
    let mut in_section_heading = false;
    for piece in &doc.pieces {
        let text: Cow<'_, str> = match piece {
            Piece::HeadingStart(i) if is_section(&doc.headings[*i]) => {
                raw.push((Some(&doc.headings[*i]), String::new()));
                in_section_heading = true;
                continue;
            }
            Piece::HeadingEnd(_) => {
                in_section_heading = false;
                "\n".into()
            }
            _ if in_section_heading => continue,
            Piece::Event(Event::Text(t) | Event::Code(t)) => t.as_ref().into(),
            Piece::Event(Event::End(tag)) if is_inline(tag) => continue,
            Piece::Event(Event::End(_) | Event::SoftBreak | Event::HardBreak | Event::Rule) => {
                "\n".into()
            }
            Piece::Event(_) => continue,
            Piece::Math(i) if !doc.maths[*i].display => doc.maths[*i].tex.as_str().into(),
            Piece::Quote(i) => quote_text(chapter, *i).into(),
            Piece::Math(_)
            | Piece::Experiment(_)
            | Piece::Code { .. }
            | Piece::Placement { .. } => "\n".into(),
            // Citations and cross-references are rendered from state of their own; their
            // labels ("[1]", "图 2") are not what a reader searches for.
            _ => continue,
        };
        raw.last_mut().expect("starts with one").1.push_str(&text);
    }
    raw.into_iter()
        .map(|(heading, text)| Section {
            heading,
            text: normalize(&text),
        })
        .filter(|s| s.heading.is_some() || !s.text.is_empty())
        .collect()
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
fn quote_text(chapter: &Chapter, i: usize) -> String {
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

/// Characters written without spaces between them: CJK ideographs and punctuation, kana,
/// full-width forms. (`search.js` has the same ranges.)
fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{2E80}'..='\u{9FFF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{FE30}'..='\u{FE4F}'
        | '\u{FF00}'..='\u{FFEF}'
        | '\u{20000}'..='\u{3FFFF}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_path_cuts_the_same_words_as_the_pipeline() {
        let words = Words::new();
        let text = "Softmax 把注意力分数变成权重，的了 d_k=64 是 √d 和 ½ 与 Ω。Café naïve ÷ x² (attention) 64-bit 「注意」";
        let mut fast = HashMap::new();
        let n = words.count(text, 1, &mut fast);
        let mut slow = HashMap::new();
        let tokens = words
            .pipeline
            .run(words.chinese.tokenize(&text.to_lowercase()));
        for token in &tokens {
            *slow.entry(token.clone()).or_default() += 1;
        }
        assert_eq!(fast, slow);
        assert_eq!(n as usize, tokens.len());
        assert!(plainly_a_word("softmax") && plainly_a_word("注意力"));
        assert!(!plainly_a_word("，") && !plainly_a_word("64") && !plainly_a_word("é"));
    }

    #[test]
    fn whitespace_between_chinese_characters_disappears() {
        assert_eq!(normalize("缩放\n点积 注意力"), "缩放点积注意力");
        assert_eq!(normalize("用 softmax\n归一化"), "用 softmax 归一化");
        assert_eq!(normalize("  a \n\n b  "), "a b");
    }

    #[test]
    fn words_are_lowercase_jieba_words() {
        let words = Words::new();
        let mut counts = HashMap::new();
        let n = words.count("Softmax 把注意力分数变成权重", 1, &mut counts);
        assert!(counts.contains_key("softmax"), "{counts:?}");
        assert!(counts.contains_key("注意力"), "{counts:?}");
        assert_eq!(n, counts.values().sum::<u32>());
    }
}
