#!/usr/bin/env python3
"""Recall of the site search on the series: glossary terms, single characters, English words
in another inflection than the text's, and Chinese queries the text has only in parts.

    python3 bench/search/recall.py [public/search-index.json]

Runs `static/search.js` (the client readers run) in Node against a built index. For each
query the ground truth is the set of sections a reader means by "the page mentions it":

- terms and characters: the sections whose text or heading contains the query;
- English words: the sections with a word of the query's Snowball English stem (`masks`:
  `mask`, `masked`), stems from the vendored Porter2 (static/vendor/);
- compound Chinese queries: the sections that contain every one of the listed parts.

Recall is the share of those the search returns, and precision@5 the share of the first five
results that are in it. Also prints the index's size. Build first:
`cargo run --release -- build`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The glossary terms of the house style (shared/EDITORIAL.md), with the terms every chapter
# uses, then one-character queries a reader types (熵 entropy, 键 key, 值 value, ...).
TERMS = ["编码器", "解码器", "注释向量", "上下文向量", "对齐", "查询", "键", "值", "独热", "热力图",
         "掩码", "多头注意力", "前馈网络", "层归一化", "残差连接", "位置编码", "注意力", "softmax",
         "点积", "缩放", "打分", "权重", "熵", "头", "瓶颈", "Bahdanau", "Luong"]
SINGLE = ["熵", "键", "值", "头", "掩", "秩", "和", "积"]
# English words as a reader may type them, in another form than most of the text's.
ENGLISH = ["masks", "heads", "decoders", "encoders", "aligned", "alignments", "positions",
           "caching", "seed", "scaling", "models", "layers", "windows", "states"]
# Chinese queries the text does not hold in one run, with the parts a section must contain.
COMPOUND = {"缩放注意力": ["缩放", "注意力"], "注意力权重分布": ["注意力", "权重", "分布"],
            "编码器隐状态": ["编码器", "隐状态"], "多头缩放": ["多头", "缩放"],
            "位置编码矩阵": ["位置编码", "矩阵"], "解码器打分": ["解码器", "打分"]}

CLIENT = r"""
const engine = require(process.argv[1]);
const stem = require(process.argv[4]);
const raw = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
const index = engine.prepare(raw);
const out = {};
for (const q of JSON.parse(process.argv[3])) out[q] = engine.search(index, q).map((h) => h.url);
// Per section, the stems of its English words (the ground truth of the English queries): words
// as the index cuts them, so `d_model` and `scaled_dot` are not the words `model` and `scaled`.
const stems = raw.docs.map((d) => {
  const text = (d.b + " " + (d.h === undefined ? d.t : d.h)).toLowerCase();
  const words = (text.match(/[a-z0-9_]+/g) || []).filter((w) => /^[a-z]+$/.test(w));
  return [...new Set(words.map(stem))];
});
const queryStems = {};
for (const q of JSON.parse(process.argv[3])) queryStems[q] = stem(q.toLowerCase());
console.log(JSON.stringify({ out, docs: raw.docs, stems, queryStems }));
"""


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "public/search-index.json"
    queries = list(dict.fromkeys(TERMS + SINGLE + ENGLISH + list(COMPOUND)))
    stemmer = ROOT / "static/vendor/wink-porter2-stemmer/wink-porter2-stemmer.js"
    done = subprocess.run(["node", "-e", CLIENT, str(ROOT / "static/search.js"), str(path),
                           json.dumps(queries), str(stemmer)],
                          capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    docs = result["docs"]
    texts = [(d["b"] + " " + d.get("h", d["t"])).lower() for d in docs]
    print(f"index: {path.stat().st_size / 1024:.0f} KiB, {len(docs)} sections")

    def truth(q: str) -> set[str]:
        if q in COMPOUND:
            return {d["u"] for d, t in zip(docs, texts) if all(p in t for p in COMPOUND[q])}
        if q in ENGLISH:
            s = result["queryStems"][q]
            return {d["u"] for d, stems in zip(docs, result["stems"]) if s in stems}
        return {d["u"] for d, t in zip(docs, texts) if q.lower() in t}

    groups = [("terms and characters", list(dict.fromkeys(TERMS + SINGLE))),
              ("English words, other inflections", ENGLISH),
              ("Chinese queries found only in parts", list(COMPOUND))]
    all_recall, all_n = 0.0, 0
    for name, group in groups:
        total_recall, total_p5, n = 0.0, 0.0, 0
        print(f"\n{name}\n")
        print("| query | sections meaning it | found | recall | precision@5 |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for q in group:
            wanted = truth(q)
            found = result["out"][q]
            if not wanted:
                print(f"| {q} | 0 | {len(found)} | - | - |")
                continue
            recall = len(wanted & set(found)) / len(wanted)
            top = found[:5]
            p5 = sum(u in wanted for u in top) / len(top) if top else 0.0
            total_recall += recall
            total_p5 += p5
            n += 1
            print(f"| {q} | {len(wanted)} | {len(found)} | {recall:.2f} | {p5:.2f} |")
        print(f"\nmean recall {total_recall / n:.3f}, mean precision@5 {total_p5 / n:.3f} "
              f"over {n} queries")
        all_recall += total_recall
        all_n += n
    print(f"\nall: mean recall {all_recall / all_n:.3f} over {all_n} queries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
