//! Search: the index built for a small Chinese + English series, read the way the client reads
//! it, and the client itself (`static/search.js`) run in Node against that index.

mod common;

use std::path::Path;

use attnbook::render::search;
use serde_json::Value;

const CHAPTERS: [(&str, &str); 4] = [
    (
        "01-bottleneck.md",
        r#"+++
title = "定长瓶颈"
number = 1
summary = "编码器把整句压进一个向量。"
+++

Seq2Seq 的编码器把源句压缩成一个定长向量，解码器只能看到它。

## 信息瓶颈 {#bottleneck}

句子越长，这个向量越难装下全部信息：这就是 bottleneck。
"#,
    ),
    (
        "02-attention.md",
        r#"+++
title = "注意力：回看每个位置"
number = 2
summary = "解码器每一步都回看编码器的全部状态。"
+++

每一步，解码器给编码器的每个位置打分，
注意力把分数变成一组权重。

## 加权求和 {#weighted-sum}

用这些权重对编码器状态加权求和，得到上下文向量 $c_t$。
"#,
    ),
    (
        "03-scaled.md",
        r#"+++
title = "缩放点积"
number = 3
summary = "点积除以根号 d 再进 softmax。"
+++

维度 $d$ 变大时，点积的方差也变大。

## 为什么要缩放 {#why-scale}

把点积除以 $\sqrt{d}$ 再做 **Softmax**，分布就不会过于尖锐。

```rust
let never_indexed = 1;
```
"#,
    ),
    (
        "04-heads.md",
        r#"+++
title = "多头"
number = 4
+++

每个头先把输入投影到低维子空间，再各自计算
$\operatorname{head}_i = \mathrm{Attn}(Q W_i^Q, K W_i^K, V W_i^V)$，最后把 $h$
个头的输出拼接起来，乘以输出矩阵 $W^O$ 得到结果；头数越多，每个头的维度
$d_k = d_{model}/h$ 越小。

## 为何除以 $\sqrt{d_k}$ {#dims}

每个头各自除一次（见@ch:heads）。
"#,
    ),
];

/// The fixture series, loaded and parsed as `build` does (stages 1-2), and its index as JSON.
fn index_json(dir: &Path) -> String {
    index_json_of(dir, "", &CHAPTERS)
}

/// A series of `chapters` with `config` in its site.toml, loaded and parsed as `build` does
/// (stages 1-2): nothing ran, so no quote is bound.
fn series_of(
    dir: &Path,
    config: &str,
    chapters: &[(&str, &str)],
) -> attnbook::content::Series<attnbook::quotes::Bound> {
    std::fs::create_dir_all(dir.join("content")).unwrap();
    std::fs::write(
        dir.join("site.toml"),
        format!("title = \"检索\"\nbase_url = \"https://example.github.io/series/\"\n{config}"),
    )
    .unwrap();
    for (name, text) in chapters {
        std::fs::write(dir.join("content").join(name), text).unwrap();
    }
    let series = attnbook::content::load(dir, false).expect("fixture loads");
    series.map_chapters(|chapters| {
        chapters
            .into_iter()
            .map(|chapter| {
                let (parsed, problems) = attnbook::markdown::Parsed::new(chapter);
                assert!(problems.is_empty(), "{problems:?}");
                let ran = attnbook::lab::Ran { parsed, run: None };
                attnbook::quotes::Bound {
                    ran,
                    bindings: Vec::new(),
                    claims: Vec::new(),
                    points: Vec::new(),
                }
            })
            .collect()
    })
}

/// The index of a series of `chapters`, as JSON.
fn index_json_of(dir: &Path, config: &str, chapters: &[(&str, &str)]) -> String {
    let series = series_of(dir, config, chapters);
    let files = search::index_files(&series);
    let (path, bytes) = &files[0];
    assert_eq!(path, Path::new(search::INDEX_PATH));
    String::from_utf8(bytes.clone()).unwrap()
}

fn urls(index: &Value) -> Vec<&str> {
    index["docs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["u"].as_str().unwrap())
        .collect()
}

/// The URLs of the sections a word was cut out of, from `terms` and `postings`.
fn word_urls<'a>(index: &'a Value, word: &str) -> Vec<&'a str> {
    let terms = index["terms"].as_array().unwrap();
    let Some(i) = terms.iter().position(|t| t == word) else {
        panic!("`{word}` is not a word of the index: {terms:?}");
    };
    let urls = urls(index);
    index["postings"][i]
        .as_array()
        .unwrap()
        .chunks(2)
        .map(|pair| urls[pair[0].as_u64().unwrap() as usize])
        .collect()
}

/// The URLs of the sections whose text or heading contains `needle` (what the client's
/// substring search sees).
fn text_urls<'a>(index: &'a Value, needle: &str) -> Vec<&'a str> {
    index["docs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| {
            let head = d.get("h").unwrap_or(&d["t"]).as_str().unwrap();
            (d["b"].as_str().unwrap().to_lowercase() + head).contains(needle)
        })
        .map(|d| d["u"].as_str().unwrap())
        .collect()
}

#[test]
fn the_index_holds_jieba_words_latin_words_and_section_urls_under_the_base_path() {
    let dir = tempfile::tempdir().unwrap();
    let index: Value = serde_json::from_str(&index_json(dir.path())).unwrap();
    assert_eq!(index["version"], 4);
    assert_eq!(
        urls(&index),
        [
            "/series/bottleneck/",
            "/series/bottleneck/#bottleneck",
            "/series/attention/",
            "/series/attention/#weighted-sum",
            "/series/scaled/",
            "/series/scaled/#why-scale",
            "/series/heads/",
            "/series/heads/#dims",
        ]
    );
    // A run of ideographs gives jieba's words, and (search-engine mode) the dictionary words
    // inside a long one; not every pair of characters.
    assert_eq!(word_urls(&index, "注意力"), ["/series/attention/"]);
    assert_eq!(word_urls(&index, "注意"), ["/series/attention/"]);
    assert_eq!(
        word_urls(&index, "编码器"),
        [
            "/series/bottleneck/",
            "/series/attention/",
            "/series/attention/#weighted-sum"
        ]
    );
    let terms = index["terms"].as_array().unwrap();
    assert!(!terms.iter().any(|t| t == "意力"), "not a word");
    assert_eq!(
        word_urls(&index, "缩放"),
        ["/series/scaled/", "/series/scaled/#why-scale"]
    );
    // Lowercased: the page says "Softmax" in one place and "softmax" in the other.
    assert_eq!(
        word_urls(&index, "softmax"),
        ["/series/scaled/", "/series/scaled/#why-scale"]
    );
    assert_eq!(
        word_urls(&index, "bottleneck"),
        ["/series/bottleneck/#bottleneck"]
    );
    // A substring of a word is found in the text.
    assert_eq!(text_urls(&index, "意力"), ["/series/attention/"]);
}

#[test]
fn section_text_is_the_prose_joined_across_line_breaks() {
    let dir = tempfile::tempdir().unwrap();
    let index: Value = serde_json::from_str(&index_json(dir.path())).unwrap();
    let docs = index["docs"].as_array().unwrap();
    let intro = &docs[2];
    assert_eq!(intro["t"], "注意力：回看每个位置");
    assert!(intro.get("h").is_none());
    // Summary first; the line break inside the Chinese sentence leaves no space.
    assert_eq!(
        intro["b"],
        "解码器每一步都回看编码器的全部状态。每一步，解码器给编码器的每个位置打分，注意力把分数变成一组权重。"
    );
    let scaled = &docs[5];
    assert_eq!(scaled["h"], "为什么要缩放");
    // Inline TeX reads as text (its source is kept aside), emphasis is text, code blocks are
    // left out.
    assert_eq!(
        scaled["b"],
        "把点积除以 √d 再做 Softmax，分布就不会过于尖锐。"
    );
    assert_eq!(scaled["m"], "\\sqrt{d}");
    assert!(
        docs[0].get("m").is_none(),
        "a section without formulas has no `m`"
    );
    // A heading's formulas read as text too, and their TeX is kept for queries.
    let dims = docs.last().unwrap();
    assert_eq!(dims["h"], "为何除以 √d_k");
    assert_eq!(dims["m"], "\\sqrt{d_k}");
    // A cross-reference reads as the page prints it, not as an empty pair of brackets.
    assert_eq!(dims["b"], "每个头各自除一次（见《多头》）。");
}

/// Runs `static/search.js` in Node on the index; `None` if Node is not installed.
fn client_search(index_file: &Path, queries: &[&str]) -> Option<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("static/search.js");
    let program = r#"
        const engine = require(process.argv[1]);
        const index = engine.prepare(JSON.parse(require("fs").readFileSync(process.argv[2], "utf8")));
        const out = {};
        for (const q of JSON.parse(process.argv[3])) out[q] = engine.search(index, q);
        console.log(JSON.stringify(out));
    "#;
    let queries = serde_json::to_string(queries).unwrap();
    common::node_json(
        program,
        &[script.as_os_str(), index_file.as_os_str(), queries.as_ref()],
    )
}

fn hit_urls(results: &Value) -> Vec<&str> {
    results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["url"].as_str().unwrap())
        .collect()
}

#[test]
fn the_client_finds_chinese_words_substrings_and_english() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(search::INDEX_PATH);
    std::fs::write(&file, index_json(&dir.path().join("site"))).unwrap();
    let queries = [
        "注意力",
        "缩放",
        "softmax",
        "SOFT",
        "意力",
        "注意力权重",
        "积",
        "瓶",
        "编码器 瓶颈",
        "缩放 瓶颈",
        "为什么要缩放",
        "\\sqrt{d}",
        "max",
        "q",
        "没有这个词",
    ];
    let Some(results) = client_search(&file, &queries) else {
        return;
    };
    let found = |q: &str| hit_urls(&results[q]);
    // Where ranking ties are possible, compare the sets.
    let found_sorted = |q: &str| {
        let mut urls = found(q);
        urls.sort_unstable();
        urls
    };
    assert_eq!(found("注意力"), ["/series/attention/"]);
    assert_eq!(
        found_sorted("缩放"),
        ["/series/scaled/", "/series/scaled/#why-scale"]
    );
    assert_eq!(
        found_sorted("softmax"),
        ["/series/scaled/", "/series/scaled/#why-scale"]
    );
    assert_eq!(found_sorted("SOFT"), found_sorted("softmax"));
    // A substring of the word 注意力.
    assert_eq!(found("意力"), ["/series/attention/"]);
    // Not in the text in one run: cut into the index's terms 注意力 + 权重, all required.
    assert_eq!(found("注意力权重"), ["/series/attention/"]);
    // One character is a query: it is found wherever the text has it.
    assert_eq!(
        found_sorted("积"),
        ["/series/scaled/", "/series/scaled/#why-scale"]
    );
    assert_eq!(
        found_sorted("瓶"),
        ["/series/bottleneck/", "/series/bottleneck/#bottleneck"]
    );
    // Pieces are ANDed; the heading counts.
    assert_eq!(found("编码器 瓶颈"), ["/series/bottleneck/"]);
    assert_eq!(found("缩放 瓶颈"), Vec::<&str>::new());
    assert_eq!(found("为什么要缩放")[0], "/series/scaled/#why-scale");
    assert_eq!(found("\\sqrt{d}"), ["/series/scaled/#why-scale"]);
    // Latin pieces match at the start of a word.
    assert_eq!(found("max"), Vec::<&str>::new());
    // One Latin letter is no query; an unknown word finds nothing.
    assert_eq!(found("q"), Vec::<&str>::new());
    assert_eq!(found("没有这个词"), Vec::<&str>::new());

    // Matches are marked in the link text (what was searched: the title before the first
    // heading, the heading after) and in the snippet, in the page's case.
    let hits = results["缩放"].as_array().unwrap();
    let heading_hit = hits
        .iter()
        .find(|r| r["heading"] == "为什么要缩放")
        .unwrap();
    assert_eq!(marked(&heading_hit["label"]), ["缩放"]);
    assert_eq!(text(&heading_hit["label"]), "缩放点积 › 为什么要缩放");
    assert!(marked(&heading_hit["snippet"]).is_empty());
    let title_hit = hits.iter().find(|r| r["heading"].is_null()).unwrap();
    assert_eq!(text(&title_hit["label"]), "缩放点积");
    assert_eq!(marked(&title_hit["label"]), ["缩放"]);
    let hits = results["softmax"].as_array().unwrap();
    let why = hits
        .iter()
        .find(|r| r["heading"] == "为什么要缩放")
        .unwrap();
    assert_eq!(marked(&why["snippet"]), ["Softmax"]);
    assert_eq!(
        text(&why["snippet"]),
        "把点积除以 √d 再做 Softmax，分布就不会过于尖锐。"
    );
    let intro = hits.iter().find(|r| r["heading"].is_null()).unwrap();
    assert_eq!(marked(&intro["snippet"]), ["softmax"]);
}

#[test]
fn snippets_show_formulas_as_text_and_cut_between_words() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(search::INDEX_PATH);
    let json = index_json(&dir.path().join("site"));
    std::fs::write(&file, &json).unwrap();
    let index: Value = serde_json::from_str(&json).unwrap();
    let body = index["docs"].as_array().unwrap()[6]["b"]
        .as_str()
        .unwrap()
        .to_owned();
    let queries = ["拼接", "\\operatorname{head}", "W_i^K", "d_model"];
    let Some(results) = client_search(&file, &queries) else {
        return;
    };
    for query in queries {
        assert_eq!(hit_urls(&results[query]), ["/series/heads/"], "{query}");
    }
    let snippet = text(&results["拼接"][0]["snippet"]);
    assert!(!snippet.contains('\\'), "TeX in the snippet: {snippet}");
    assert!(snippet.contains("乘以输出矩阵 W^O 得到结果"), "{snippet}");
    assert!(snippet.contains("d_k = d_model/h"), "{snippet}");
    // The window starts inside the formula before the match: it moves to the next word.
    let shown = snippet.strip_prefix('…').expect("cut at the start");
    let at = body
        .find(shown.trim_end_matches('…'))
        .expect("the snippet is body text");
    let before = body[..at].chars().next_back().unwrap();
    let first = shown.chars().next().unwrap();
    assert!(
        before.is_whitespace() || first.is_whitespace() || is_cjk(before) || is_cjk(first),
        "cut inside a word: …{before}|{first}… in {snippet}"
    );
}

fn is_cjk(c: char) -> bool {
    attnbook::markdown::is_cjk(c)
}

/// The marked texts of a list of `{ text, mark }` parts.
fn marked(parts: &Value) -> Vec<&str> {
    parts
        .as_array()
        .unwrap()
        .iter()
        .filter(|part| part["mark"] == true)
        .map(|part| part["text"].as_str().unwrap())
        .collect()
}

/// The whole text of a list of `{ text, mark }` parts.
fn text(parts: &Value) -> String {
    parts
        .as_array()
        .unwrap()
        .iter()
        .map(|part| part["text"].as_str().unwrap())
        .collect()
}

/// English chapters, one quoting a Chinese term: each script is cut its own way.
const ENGLISH: [(&str, &str); 2] = [
    (
        "01-weights.md",
        r#"+++
title = "Attention weights"
number = 1
+++

The attentional weights of a query sum to one.

## Scores {#scores}

Each score becomes a weight after the softmax (注意力的机制).
"#,
    ),
    (
        "02-queries.md",
        r#"+++
title = "Queries and keys"
number = 2
+++

Queries are compared with every key; 注意力机制 is the Chinese term for it.

## Happy paths {#happy}

A happy reader studied the example.
"#,
    ),
];

#[test]
fn english_words_are_stemmed_in_the_index_and_in_the_query() {
    let dir = tempfile::tempdir().unwrap();
    let json = index_json_of(&dir.path().join("site"), "language = \"en\"\n", &ENGLISH);
    let index: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(index["version"], 4);
    // Snowball English stems: `weights` and `weight` are one term, so are `attention` (the
    // title) and `attentional`, `query` and `queries`.
    assert_eq!(
        word_urls(&index, "weight"),
        ["/series/weights/", "/series/weights/#scores"]
    );
    assert_eq!(word_urls(&index, "attent"), ["/series/weights/"]);
    assert_eq!(
        word_urls(&index, "queri"),
        ["/series/weights/", "/series/queries/"]
    );
    let terms = index["terms"].as_array().unwrap();
    assert!(!terms.iter().any(|t| t == "weights"), "stems only");
    // The Chinese words of an English page are jieba's.
    assert_eq!(
        word_urls(&index, "注意力"),
        ["/series/weights/#scores", "/series/queries/"]
    );
    assert_eq!(
        word_urls(&index, "机制"),
        ["/series/weights/#scores", "/series/queries/"]
    );

    let file = dir.path().join(search::INDEX_PATH);
    std::fs::write(&file, &json).unwrap();
    let queries = [
        "weights",
        "weight",
        "attention",
        "attentions",
        "query",
        "happiness",
        "studies",
        "soft",
        "注意力",
        "意力",
        "机制 queries",
        "注意力机制",
    ];
    let Some(results) = client_search(&file, &queries) else {
        return;
    };
    let found_sorted = |q: &str| {
        let mut urls = hit_urls(&results[q]);
        urls.sort_unstable();
        urls
    };
    assert_eq!(
        found_sorted("weights"),
        ["/series/weights/", "/series/weights/#scores"]
    );
    assert_eq!(found_sorted("weight"), found_sorted("weights"));
    // `attention` is in the title; `attentions` is nowhere in the text, yet has the stem.
    assert_eq!(found_sorted("attention"), ["/series/weights/"]);
    assert_eq!(found_sorted("attentions"), ["/series/weights/"]);
    assert_eq!(
        found_sorted("query"),
        ["/series/queries/", "/series/weights/"]
    );
    // Stems that are not a prefix of the text's word: happi(ness) ~ happy, studi(es) ~ studied.
    assert_eq!(found_sorted("happiness"), ["/series/queries/#happy"]);
    assert_eq!(found_sorted("studies"), ["/series/queries/#happy"]);
    // A prefix still finds the longer word.
    assert_eq!(found_sorted("soft"), ["/series/weights/#scores"]);
    assert_eq!(
        found_sorted("注意力"),
        ["/series/queries/", "/series/weights/#scores"]
    );
    assert_eq!(found_sorted("意力"), found_sorted("注意力"));
    assert_eq!(found_sorted("机制 queries"), ["/series/queries/"]);
    // A query the text holds whole in one section and in words apart in another: it falls
    // cleanly into the index's words 注意力 + 机制, so both are found, the whole string first,
    // and marked whole there.
    assert_eq!(
        hit_urls(&results["注意力机制"]),
        ["/series/queries/", "/series/weights/#scores"]
    );
    assert_eq!(marked(&results["注意力机制"][0]["snippet"]), ["注意力机制"]);
    assert_eq!(
        marked(&results["注意力机制"][1]["snippet"]),
        ["注意力", "机制"]
    );

    // A word of the query's stem is marked whole, as the page writes it.
    let hits = results["weights"].as_array().unwrap();
    let scores = hits.iter().find(|r| r["heading"] == "Scores").unwrap();
    assert_eq!(marked(&scores["snippet"]), ["weight"]);
    let happy = &results["happiness"][0];
    assert_eq!(marked(&happy["label"]), ["Happy"]);
    assert_eq!(marked(&happy["snippet"]), ["happy"]);
    let studied = &results["studies"][0];
    assert_eq!(marked(&studied["snippet"]), ["studied"]);
}

/// The index's stemmer (rust-stemmers) and the client's (the vendored Porter2) give the same
/// stem for every English word of the series and its docs, and for a list of hard cases from
/// the Snowball English description.
#[test]
fn the_index_and_the_client_stem_alike() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut words = std::collections::BTreeSet::new();
    for dir in ["content", "docs"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") {
                let text = std::fs::read_to_string(&path).unwrap().to_lowercase();
                words.extend(
                    text.split(|c: char| !c.is_ascii_lowercase())
                        .filter(|w| w.len() > 1)
                        .map(str::to_owned),
                );
            }
        }
    }
    let hard = "consign consigned consigning consignment consist consisted consistency \
        consistent consistently consisting consists consolation consolations consolatory \
        console consoled consoles consolidate consolidated consolidating consoling knack \
        knackeries knacks knag knave knaves knavish kneaded kneading knee kneel kneeled \
        kneeling kneels knees knell knelt knew knick knif knife knight knightly knights \
        skis skies dying lying tying idly gently ugly early only singly sky news howe atlas \
        cosmos bias andes inning outing canning herring earring proceed exceed succeed \
        generate generates generated generating general generally generic generically \
        generous generously communism communication communications arsenic arsenal \
        past universe universal university caresses flies dies mules denied agreed owned \
        humbled sized meeting stating siezing itemization sensational traditional reference \
        colonizer plotted hopping tanned falling hissing fizzed failing filing happy happiness \
        sayyid yay enjoying playing toy annoying ";
    words.extend(hard.split_whitespace().map(str::to_owned));
    let words: Vec<String> = words.into_iter().collect();
    assert!(words.len() > 1000, "{} words", words.len());
    let script = root.join("static/search.js");
    let program = r#"
        const engine = require(process.argv[1]);
        console.log(JSON.stringify(JSON.parse(process.argv[2]).map(engine.stemTerm)));
    "#;
    let list = serde_json::to_string(&words).unwrap();
    let Some(client) = common::node_json(program, &[script.as_os_str(), list.as_ref()]) else {
        return;
    };
    let client: Vec<String> = serde_json::from_value(client).unwrap();
    let differ: Vec<String> = words
        .iter()
        .zip(&client)
        .filter(|(word, js)| search::english_term(word) != js.as_str())
        .map(|(word, js)| format!("{word}: index {}, client {js}", search::english_term(word)))
        .collect();
    assert!(differ.is_empty(), "{} differ: {differ:#?}", differ.len());
    // The client does stem (the vendored file loaded): not every word is its own stem.
    assert!(words.iter().zip(&client).any(|(w, js)| w != js));
}

/// The index is cached whole and each chapter's words on their own: an unchanged series cuts
/// nothing (jieba is never loaded), an edited chapter is the only one cut again, and every
/// index is the one a build without caches writes.
#[test]
fn only_a_changed_chapter_is_cut_into_words_again() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("site");
    let cache = dir.path().join("render/search.cache");
    let build = |chapters: &[(&str, &str)]| {
        let series = series_of(&site, "", chapters);
        let uncached = search::Sections::of(&series).index_json(None);
        let (json, work) = search::Sections::of(&series).index_json_counted(Some(cache.clone()));
        assert_eq!(json, uncached, "a cached index differs from a fresh one");
        (json, work)
    };
    let (first, work) = build(&CHAPTERS);
    assert_eq!(
        work,
        search::IndexWork {
            sections_cut: 8,
            chapters_cached: 0,
            whole_cached: false
        }
    );
    assert!(dir.path().join("render/search-words.cache").is_file());
    let (again, work) = build(&CHAPTERS);
    assert_eq!(again, first);
    assert_eq!(
        work,
        search::IndexWork {
            sections_cut: 0,
            chapters_cached: 4,
            whole_cached: true
        }
    );
    // An edit of chapter 2's second section: its two sections are cut again, no other.
    let mut edited = CHAPTERS;
    let text = CHAPTERS[1].1.replace("加权求和，得到", "加权求和，就得到");
    edited[1].1 = &text;
    let (changed, work) = build(&edited);
    assert_ne!(changed, first);
    assert_eq!(
        work,
        search::IndexWork {
            sections_cut: 2,
            chapters_cached: 3,
            whole_cached: false
        }
    );
    // Without the whole index's cache, every chapter's words still come from theirs.
    std::fs::remove_file(&cache).unwrap();
    let (rebuilt, work) = build(&edited);
    assert_eq!(rebuilt, changed);
    assert_eq!(
        work,
        search::IndexWork {
            sections_cut: 0,
            chapters_cached: 4,
            whole_cached: false
        }
    );
}

/// The real binary: a no-change build leaves the chapters' word cache untouched (read by no
/// one, written by no one), an edit rewrites it.
#[test]
fn a_no_change_build_does_not_touch_the_word_cache() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path();
    series_of(site, "", &CHAPTERS);
    let build = || {
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_attnbook"))
            .arg("--root")
            .arg(site)
            .arg("build")
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
    };
    let words = site.join(".attnbook/cache/render/search-words.cache");
    build();
    let written = std::fs::metadata(&words).unwrap().modified().unwrap();
    build();
    assert_eq!(
        std::fs::metadata(&words).unwrap().modified().unwrap(),
        written,
        "a no-change build wrote the word cache"
    );
    let chapter = site.join("content/03-scaled.md");
    let text = std::fs::read_to_string(&chapter).unwrap();
    std::fs::write(&chapter, text.replace("分布就不会", "分布也就不会")).unwrap();
    build();
    assert_ne!(
        std::fs::metadata(&words).unwrap().modified().unwrap(),
        written
    );
    let index = std::fs::read_to_string(site.join("public").join(search::INDEX_PATH)).unwrap();
    assert!(index.contains("分布也就不会"));
}
