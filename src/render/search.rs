//! The search index: every section of every chapter as plain text, plus the terms in it, written
//! to `search-index.json` for `static/search.js` to search in the reader's browser.
//!
//! Each script is cut its own way wherever it occurs, on a site of any `language` (the series'
//! Chinese prose says `softmax`, an English book may quote `注意力`):
//!
//! - **Chinese** (a run of ideographs, kana or hangul) is cut into words by jieba (`jieba-rs`,
//!   its built-in dictionary, search-engine mode: a long word also gives the dictionary words
//!   inside it, `注意力` gives `注意` and `注意力`; no HMM, so a sequence the dictionary lacks
//!   falls apart into shorter words or single characters rather than guessed words).
//!   Loading the dictionary takes ~0.13 s, more than rendering a small book: the words of each
//!   chapter are cached (`.attnbook/cache/render/search-words.cache`, keyed by a hash of the
//!   chapter's section texts) and the whole index too (`search.cache`), so jieba is loaded only
//!   when some chapter's text changed, and cuts only that chapter.
//! - **Latin text** gives its words (letters and digits; `_` joins, so `d_k` is one word),
//!   lowercase; a word of ASCII letters only is reduced to its Snowball English stem
//!   (`rust-stemmers`: `weights` and `weight` give `weight`, `attention` and `attentional`
//!   give `attent`); other words (`d_k`, `seq2seq`, `café`) stay as written.
//!
//! The browser has neither jieba nor Rust; the client (`static/search.js`) does not need jieba
//! and brings the same stemmer:
//!
//! - it finds each Chinese query string anywhere in the stored text, so `意力` finds `注意力`
//!   and `熵` finds `交叉熵`, and each Latin one at the start of a word (`soft` finds
//!   `softmax`), numbers and `d_k` too: recall is at least that of substring search, whatever
//!   the terms;
//! - it stems a Latin query word with the Porter2 stemmer vendored from npm
//!   (`static/vendor/wink-porter2-stemmer/`, MIT; Porter2 *is* Snowball English, and
//!   `tests/search.rs` checks that both stemmers agree on every English word of the series and
//!   a list of hard cases) and adds the sections that hold a word of that stem, so `weights`
//!   finds `weight` and `queries` finds `query`. A stem map in the index (each surface form to
//!   its stem) would cover only the words the text has, not the reader's `attentions`;
//! - it counts a query piece whose stem (Latin) or itself (Chinese) is one of the index's terms
//!   twice, so a section using the word ranks above one that merely contains the characters;
//! - it cuts a Chinese query that the text does not contain in one piece (`缩放注意力`) into
//!   terms of the index by forward maximum matching against the index's own vocabulary (the
//!   longest Chinese term at each position, else one character), and asks for all of them: the
//!   words jieba cut at build time are the words the query is cut into. A query the text does
//!   contain is cut too when it falls cleanly into words of two characters or more
//!   (`位置编码矩阵`), so that sections saying the words apart are found; the whole string and
//!   each two neighbouring words, where a section has them, only rank it higher.
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
//!   "terms": ["attent", "softmax", "注意", "注意力", ...], // sorted, two characters or more
//!   "postings": [[doc, count, doc, count, ...], ...] }
//! ```
//!
//! `n` is the number of words in the section; a count weighs words of the chapter title (in the
//! section before the first heading) and of the section's heading `heading_weight` times.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use pulldown_cmark::{Event, TagEnd};
use rayon::prelude::*;
use rust_stemmers::{Algorithm, Stemmer};
use serde::{Deserialize, Serialize};

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
/// 3: inline formulas as readable text, their TeX in `m`; 4: jieba words and English stems).
const VERSION: u32 = 4;

/// The segmenter, its dictionary loaded on first use (~0.13 s), which a build whose chapters
/// all come from the cache never reaches.
static JIEBA: LazyLock<jieba_rs::Jieba> = LazyLock::new(jieba_rs::Jieba::new);

/// Snowball English (Porter2), as the client's `static/vendor/wink-porter2-stemmer/`.
static STEMMER: LazyLock<Stemmer> = LazyLock::new(|| Stemmer::create(Algorithm::English));

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
    /// Which of `docs` each chapter has: the unit whose words are cached together.
    chapters: Vec<Range<usize>>,
}

/// What building an index cost: how many sections had their words cut (the rest came from
/// the cache), and whether the whole index came from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IndexWork {
    /// Sections cut into words in this build (jieba and the stemmer ran over them).
    pub sections_cut: usize,
    /// Chapters whose words came from the cache.
    pub chapters_cached: usize,
    /// The whole index came from the cache: nothing was cut or assembled.
    pub whole_cached: bool,
}

/// The terms of one section: its number of words and how often (weighted) each term occurs.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SectionWords {
    n: u32,
    /// Sorted by term.
    counts: Vec<(String, u32)>,
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
        let mut chapters = Vec::new();
        for (chapter, refs) in series
            .chapters
            .iter()
            .map(AsRef::<Bound>::as_ref)
            .zip(&refs)
        {
            let url = chapter_url(&base_path, &chapter.slug);
            let first = docs.len();
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
            chapters.push(first..docs.len());
        }
        Sections { docs, chapters }
    }

    /// The index as JSON. With a cache file, an unchanged series reuses the last build's
    /// index, and a chapter whose text is unchanged reuses its words (kept beside it, in
    /// `search-words.cache`).
    pub fn index_json(self, cache: Option<PathBuf>) -> String {
        self.index_json_counted(cache).0
    }

    /// [`Sections::index_json`], and what it cost.
    pub fn index_json_counted(self, cache: Option<PathBuf>) -> (String, IndexWork) {
        let Some(path) = cache else {
            let (words, work) = self.words(&mut Cache::in_memory());
            return (SearchIndex::build(self.docs, words).to_json(), work);
        };
        let mut whole: Cache<String> = Cache::load(path.clone());
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
        let key = cache::key(&[&[salt().as_bytes()], texts.as_slice()].concat());
        if let Some(json) = whole.get(&key) {
            let json = json.clone();
            whole.save();
            let work = IndexWork {
                chapters_cached: self.chapters.len(),
                whole_cached: true,
                ..IndexWork::default()
            };
            return (json, work);
        }
        let mut chapters: Cache<Vec<SectionWords>> = Cache::load(words_cache_file(&path));
        let (words, work) = self.words(&mut chapters);
        chapters.save();
        let json = SearchIndex::build(self.docs, words).to_json();
        whole.insert(key, json.clone());
        whole.save();
        (json, work)
    }

    /// The words of every section, from `cache` for a chapter whose texts it has, cut (in
    /// parallel) for the others.
    fn words(&self, cache: &mut Cache<Vec<SectionWords>>) -> (Vec<SectionWords>, IndexWork) {
        let salt = salt();
        let keys: Vec<String> = self
            .chapters
            .iter()
            .map(|range| {
                let texts: Vec<&[u8]> = self.docs[range.clone()]
                    .iter()
                    .flat_map(|d| [heading_text(d).as_bytes(), d.b.as_bytes()])
                    .collect();
                cache::key(&[&[salt.as_bytes()], texts.as_slice()].concat())
            })
            .collect();
        let missing: Vec<usize> = (0..keys.len())
            .filter(|&i| !cache.contains(&keys[i]))
            .collect();
        let cut: Vec<(usize, Vec<SectionWords>)> = missing
            .par_iter()
            .map(|&i| {
                let docs = &self.docs[self.chapters[i].clone()];
                (i, docs.par_iter().map(section_words).collect())
            })
            .collect();
        let mut work = IndexWork {
            chapters_cached: keys.len() - missing.len(),
            ..IndexWork::default()
        };
        for (i, words) in cut {
            work.sections_cut += words.len();
            cache.insert(keys[i].clone(), words);
        }
        let mut all = Vec::with_capacity(self.docs.len());
        for key in &keys {
            all.extend(cache.get(key).cloned().unwrap_or_default());
        }
        (all, work)
    }
}

/// What decides the words of a text besides the text: the generator's version (jieba's
/// dictionary and the stemmer come with it) and the index's format.
fn salt() -> String {
    format!(
        "attnbook {}; search index {VERSION}, heading weight {HEADING_WEIGHT}",
        env!("CARGO_PKG_VERSION")
    )
}

/// The per-chapter word cache beside the index's own cache file.
fn words_cache_file(index_cache: &Path) -> PathBuf {
    index_cache.with_file_name("search-words.cache")
}

/// What a section's heading weight applies to: its heading, or the chapter's title before the
/// first heading.
fn heading_text(doc: &SearchDoc) -> &str {
    doc.h.as_deref().unwrap_or(&doc.t)
}

/// Cuts one section into words.
fn section_words(doc: &SearchDoc) -> SectionWords {
    let mut counts = HashMap::new();
    let n = count_terms(heading_text(doc), HEADING_WEIGHT, &mut counts)
        + count_terms(&doc.b, 1, &mut counts);
    let mut counts: Vec<(String, u32)> = counts.into_iter().collect();
    counts.sort_unstable();
    SectionWords { n, counts }
}

impl SearchIndex {
    /// Collects the postings of every section's words.
    fn build(mut docs: Vec<SearchDoc>, words: Vec<SectionWords>) -> SearchIndex {
        let mut postings: BTreeMap<String, Vec<u32>> = BTreeMap::new();
        for (id, (doc, words)) in docs.iter_mut().zip(words).enumerate() {
            doc.n = words.n;
            let id = u32::try_from(id).unwrap_or(u32::MAX);
            // One-character words are left out: every substring search finds them anyway,
            // and they would be a third of the postings.
            for (term, count) in words
                .counts
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
        *counts.entry(term.into_owned()).or_default() += weight;
        n += 1;
    });
    n
}

/// Calls `add` with every term of `text` (lowercase): each Latin word (letters and digits, `_`
/// joins, so `d_k` is one word) as [`english_term`] gives it, and each word jieba cuts a run of
/// ideographs into.
fn terms(text: &str, mut add: impl FnMut(Cow<'_, str>)) {
    let mut word: Option<usize> = None;
    let mut run: Option<usize> = None;
    let flush_run = |run: &mut Option<usize>, end: usize, add: &mut dyn FnMut(Cow<'_, str>)| {
        if let Some(start) = run.take() {
            let run = &text[start..end];
            // A lone ideograph is its own word: no need to load the dictionary for it (a new
            // site whose one chapter is titled `空` builds without jieba).
            if run.chars().nth(1).is_none() {
                add(run.into());
                return;
            }
            for word in JIEBA.cut_for_search(run, false) {
                add(word.word.into());
            }
        }
    };
    for (at, c) in text.char_indices() {
        if is_ideograph(c) {
            if let Some(start) = word.take() {
                add(english_term(&text[start..at]));
            }
            run.get_or_insert(at);
        } else {
            flush_run(&mut run, at, &mut add);
            if c.is_alphanumeric() || c == '_' {
                word.get_or_insert(at);
            } else if let Some(start) = word.take() {
                add(english_term(&text[start..at]));
            }
        }
    }
    flush_run(&mut run, text.len(), &mut add);
    if let Some(start) = word {
        add(english_term(&text[start..]));
    }
}

/// A lowercase Latin word as the index holds it: its Snowball English stem if it is ASCII
/// letters only (the rule `stemTerm` in `static/search.js` applies to a query), else as it is.
pub fn english_term(word: &str) -> Cow<'_, str> {
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase()) {
        STEMMER.stem(word)
    } else {
        word.into()
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
        terms(text, |t| out.push(t.into_owned()));
        out
    }

    #[test]
    fn ideographs_give_jieba_words_and_latin_text_gives_stems() {
        // Search-engine mode: the dictionary words inside a long word come with it.
        assert_eq!(all_terms("注意力"), ["注意", "注意力"]);
        assert_eq!(all_terms("熵"), ["熵"]);
        assert_eq!(
            all_terms("softmax 把分数，变成权重 d_k=64"),
            ["softmax", "把", "分数", "变成", "权重", "d_k", "64"]
        );
        // Where scripts meet there is no space, and none is needed.
        assert_eq!(all_terms("用softmax归一化"), ["用", "softmax", "归一化"]);
        assert_eq!(all_terms("café naïve x²"), ["café", "naïve", "x²"]);
        assert_eq!(all_terms("「注意」。"), ["注意"]);
        assert!(all_terms(" ,.;").is_empty());
        // English words are reduced to their stems; words with digits or `_` are not.
        assert_eq!(
            all_terms("weights weight attention attentional queries query seq2seq"),
            [
                "weight", "weight", "attent", "attent", "queri", "queri", "seq2seq"
            ]
        );
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
        let n = count_terms("Softmax 把注意力 Weights", 5, &mut counts);
        assert_eq!(n, 5);
        assert_eq!(counts["softmax"], 5);
        assert_eq!(counts["注意力"], 5);
        assert_eq!(counts["weight"], 5);
        assert!(!counts.contains_key("Softmax"));
    }
}
