#!/usr/bin/env python3
"""Recall of the site search on the series: every glossary term and single characters.

    python3 bench/search/recall.py [public/search-index.json]

Runs `static/search.js` (the client readers run) in Node against a built index. For each
query the ground truth is the set of sections whose text or heading contains it (what a reader
means by "the page mentions it"); recall is the share of those the search returns, and
precision@5 the share of the first five results that are in it. Also prints the index's size.
Build first: `cargo run --release -- build`.
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

CLIENT = r"""
const engine = require(process.argv[1]);
const raw = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
const index = engine.prepare(raw);
const out = {};
for (const q of JSON.parse(process.argv[3])) out[q] = engine.search(index, q).map((h) => h.url);
console.log(JSON.stringify({ out, docs: raw.docs }));
"""


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "public/search-index.json"
    queries = list(dict.fromkeys(TERMS + SINGLE))
    done = subprocess.run(["node", "-e", CLIENT, str(ROOT / "static/search.js"), str(path),
                           json.dumps(queries)], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    docs = result["docs"]
    total_recall, total_p5, n = 0.0, 0.0, 0
    print(f"index: {path.stat().st_size / 1024:.0f} KiB, {len(docs)} sections")
    print("| query | sections containing it | found | recall | precision@5 |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for q in queries:
        low = q.lower()
        truth = {d["u"] for d in docs if low in (d["b"] + " " + d.get("h", d["t"])).lower()}
        found = result["out"][q]
        if not truth:
            print(f"| {q} | 0 | {len(found)} | - | - |")
            continue
        recall = len(truth & set(found)) / len(truth)
        top = found[:5]
        p5 = sum(u in truth for u in top) / len(top) if top else 0.0
        total_recall += recall
        total_p5 += p5
        n += 1
        print(f"| {q} | {len(truth)} | {len(found)} | {recall:.2f} | {p5:.2f} |")
    print(f"\nmean recall {total_recall / n:.3f}, mean precision@5 {total_p5 / n:.3f} over {n} queries")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
