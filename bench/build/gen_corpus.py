#!/usr/bin/env python3
"""Generate a synthetic corpus for the build-speed benchmark (bench/build/run.sh).

    gen_corpus.py OUT_DIR --pages N [--unique-math] [--no-math] [--format attnbook|mdbook]
                  [--bare] [--book]

Every page has mixed Chinese/English prose, four `##` sections, a table, a fenced code block
and 13 formulas (9 inline, 4 display).  The text is drawn from a seeded RNG, so the same
arguments always give the same bytes, and the two formats get the same page bodies:

- attnbook: OUT_DIR/site.toml and OUT_DIR/content/NNNN-chapter-NNNN.md with TOML front
  matter (title, number, date, tags, summary).  No experiment blocks: a build measures
  Markdown, KaTeX, highlighting, templates and the search index, not compilation.
  --bare turns the search index, highlighting and the print page off in site.toml (what Zola
  does by default); otherwise the build writes print.html, as mdBook's default build does.
- mdbook:   OUT_DIR/book.toml (mdbook-katex pre-rendering HTML+MathML at build time),
  OUT_DIR/src/SUMMARY.md and OUT_DIR/src/chNNNN.md (title as a `#` heading).

--book makes each page a book chapter of twice the length: eight `##` sections, 26 formulas
(distinct with --unique-math) and three code blocks (Python, Rust, JSON), the size of a real
chapter, for the small-book row (a handful of such chapters).

Math variants:
- default:       the 13 formulas are the same on every page (a math cache hits from page 2 on);
- --unique-math: every formula in the corpus is distinct (the page number and a per-formula
                 coefficient are part of each one), so nothing can be reused across pages;
- --no-math:     each formula is replaced by a plain-text phrase of similar length, with no `$`.

Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
from pathlib import Path

SEED = 20260425

ZH_PHRASES = [
    "注意力机制把每个位置的表示看作一组加权平均",
    "打分函数决定了查询与键之间的相似度",
    "softmax 把分数变成一个概率分布",
    "在长序列上，定长的上下文向量会成为瓶颈",
    "缩放因子让点积的方差保持在合理的范围内",
    "多头注意力在不同的子空间里并行地计算",
    "解码器在每一步都重新看一遍编码器的全部输出",
    "这一节的实验说明了权重为什么会变得尖锐",
    "我们先从最简单的情形讲起",
    "读者可以把它和上一章的结果对照起来看",
    "矩阵乘法占据了绝大部分的计算时间",
    "掩码保证了模型看不到未来的位置",
    "残差连接和层归一化让深层网络更容易训练",
    "位置编码给没有顺序的集合加上了顺序",
]
EN_PHRASES = [
    "the query attends to every key",
    "a scaled dot-product score",
    "the encoder hidden states",
    "an additive (Bahdanau) scorer",
    "multiplicative attention in the Luong style",
    "the softmax temperature",
    "key/value caching at inference time",
    "a causal mask over future positions",
    "the cost grows quadratically with sequence length",
    "FlashAttention-style tiling",
]
HEADINGS = [
    "从瓶颈说起 Bottleneck",
    "打分函数 Scoring",
    "归一化与 softmax",
    "计算代价 Complexity",
    "实验观察 Observations",
    "多头 Multi-head",
    "小结 Summary",
    "掩码与因果性 Causal masks",
]
CODE_PY = """def softmax(x):
    m = max(x)
    e = [math.exp(v - m) for v in x]
    s = sum(e)
    return [v / s for v in e]

scores = [q @ k for k in keys]   # {n} keys
weights = softmax(scores)
context = sum(w * v for w, v in zip(weights, values))
"""
CODE_RS = """fn softmax(x: &[f64]) -> Vec<f64> {{
    let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = x.iter().map(|v| (v - m).exp()).collect();
    let s: f64 = e.iter().sum();
    e.into_iter().map(|v| v / s).collect()
}}

let scores: Vec<f64> = keys.iter().map(|k| dot(&q, k)).collect(); // {n} keys
let weights = softmax(&scores);
"""

# 9 inline and 4 display templates; {a} and {b} are integer coefficients.  With
# --unique-math, {a} is the page number and {b} a per-page, per-formula value, so no two
# formulas in the corpus are equal; otherwise a = 1 and b = 2 everywhere.
INLINE = [
    r"e_j = {a} s^\top h_j + {b}",
    r"\alpha_j = \frac{{\exp(e_j / {b})}}{{\sum_k \exp(e_k)}} + {a}",
    r"d_k = {b} \cdot {a}",
    r"\sqrt{{d_k + {a}}} / {b}",
    r"c = \sum_{{j=1}}^{{{b}}} \alpha_j h_j^{{({a})}}",
    r"W \in \mathbb{{R}}^{{{a} \times {b}}}",
    r"O(n^{{{b}}} d + {a})",
    r"\operatorname{{softmax}}({a} x + {b})_i",
    r"v^\top \tanh(W_{{{a}}} h_j + W_2 s + {b})",
]
DISPLAY = [
    r"\operatorname{{softmax}}(x)_i = \frac{{e^{{{a} x_i}}}}{{\sum_{{j=1}}^{{{b}}} e^{{x_j}}}}",
    r"\mathrm{{Attention}}(Q, K, V) = \operatorname{{softmax}}\!\left(\frac{{Q K^\top}}{{\sqrt{{{b}}}}}\right) V + {a} I",
    r"e_{{ij}} = v_a^\top \tanh\left(W_a s_{{i-1}} + U_a h_j\right) + \sum_{{k=1}}^{{{a}}} \beta_k^{{{b}}}",
    r"\mathrm{{MultiHead}}(Q,K,V) = \mathrm{{Concat}}(\mathrm{{head}}_1, \dots, \mathrm{{head}}_{{{b}}}) W^O_{{{a}}}",
]
PLAIN = [
    "the alignment score",
    "归一化后的权重",
    "the key dimension",
    "缩放因子",
    "上下文向量",
    "a projection matrix",
    "quadratic cost",
    "the normalised scores",
    "the additive scorer",
]
PLAIN_DISPLAY = "（此处原为一个公式：the formula is replaced by this sentence in the no-math corpus.）"


def sentence(rng: random.Random) -> str:
    zh = rng.choice(ZH_PHRASES)
    en = rng.choice(EN_PHRASES)
    if rng.random() < 0.5:
        return f"{zh}，也就是 {en}。"
    return f"In other words, {en}: {zh}。"


class Page:
    """One page body: the same for both formats."""

    def __init__(self, n: int, math: str):
        self.n = n
        self.rng = random.Random(SEED * 100003 + n)
        self.math = math
        self.formulas = 0

    def coeffs(self) -> dict[str, int]:
        self.formulas += 1
        if self.math == "unique":
            return {"a": self.n, "b": 2 + self.formulas}
        return {"a": 1, "b": 2}

    def inline(self, i: int) -> str:
        c = self.coeffs()
        if self.math == "none":
            return PLAIN[i]
        return "$" + INLINE[i].format(**c) + "$"

    def display(self, i: int) -> str:
        c = self.coeffs()
        if self.math == "none":
            return PLAIN_DISPLAY
        return "$$\n" + DISPLAY[i].format(**c) + "\n$$"

    def paragraph(self, inline_ids: list[int]) -> str:
        rng = self.rng
        parts = [sentence(rng) for _ in range(rng.randint(3, 5))]
        for i in inline_ids:
            pos = rng.randrange(len(parts) + 1)
            parts.insert(pos, f"这里 {self.inline(i)} 表示 {PLAIN[i]}。")
        return "".join(parts)

    def table(self) -> str:
        rng = self.rng
        rows = ["| 方法 Method | 打分 Score | 代价 Cost |", "| --- | --- | --- |"]
        for name in ("dot", "scaled dot", "additive", "general"):
            rows.append(f"| {name} | {rng.choice(EN_PHRASES)} | {rng.randint(1, 999)} ms |")
        return "\n".join(rows)

    def code(self) -> str:
        if self.n % 2:
            return "```python\n" + CODE_PY.format(n=self.rng.randint(4, 64)) + "```"
        return "```rust\n" + CODE_RS.format(n=self.rng.randint(4, 64)) + "```"

    def chapter_body(self) -> str:
        """A book chapter: this page's body, then a second part with headings of its own and
        a JSON block (--book)."""
        first = self.body()
        second = self.body(suffix="（续）")
        config = '```json\n{"d_model": 512, "heads": 8, "d_k": 64, "dropout": 0.1}\n```\n'
        return first + "\n" + second + "\n" + config

    def body(self, suffix: str = "") -> str:
        rng = self.rng
        start = self.formulas
        heads = [h + suffix for h in rng.sample(HEADINGS, 4)]
        blocks = [self.paragraph([0, 1])]
        # Sections: inline formulas 2..8 and display formulas 0..3 spread over them.
        plan = [([2, 3], 0), ([4, 5], 1), ([6], 2), ([7, 8], 3)]
        for k, (head, (ids, disp)) in enumerate(zip(heads, plan)):
            blocks.append(f"## {head}")
            blocks.append(self.paragraph(ids))
            blocks.append(self.display(disp))
            blocks.append(self.paragraph([]))
            if k == 1:
                blocks.append(self.table())
            if k == 2:
                blocks.append(self.code())
        assert self.formulas - start == 13
        return "\n\n".join(blocks) + "\n"

    def title(self) -> str:
        return f"第 {self.n} 章：{HEADINGS[self.n % len(HEADINGS)]}"


def write_attnbook(out: Path, pages: int, math: str, bare: bool = False, book: bool = False) -> None:
    (out / "content").mkdir(parents=True)
    config = (
        'title = "attnbook build benchmark"\n'
        'base_url = "https://example.invalid/bench/"\n'
        'language = "zh-CN"\n'
    )
    if bare:
        # What Zola builds by default: no search index, no syntax highlighting, no print page.
        config += "\n[search]\nenabled = false\n\n[highlight]\nenabled = false\n"
        config += "\n[print]\nenabled = false\n"
    (out / "site.toml").write_text(config, encoding="utf-8")
    for n in range(1, pages + 1):
        page = Page(n, math)
        body = page.chapter_body() if book else page.body()
        front = (
            "+++\n"
            f'title = "{page.title()}"\n'
            f"number = {n}\n"
            f"date = 2026-04-{1 + n % 28:02d}\n"
            'tags = ["attention", "bench"]\n'
            'summary = "合成的基准测试页面 synthetic benchmark page"\n'
            "+++\n\n"
        )
        (out / "content" / f"{n:04d}-chapter-{n:04d}.md").write_text(front + body, encoding="utf-8")


def write_mdbook(out: Path, pages: int, math: str, book: bool = False) -> None:
    (out / "src").mkdir(parents=True)
    toml = '[book]\ntitle = "attnbook build benchmark"\nlanguage = "zh-CN"\nsrc = "src"\n'
    if math != "none":
        # Pre-render at build time (mdbook-katex's default), HTML + MathML like attnbook.
        toml += '\n[preprocessor.katex]\nafter = ["links"]\noutput = "htmlAndMathml"\n'
    (out / "book.toml").write_text(toml, encoding="utf-8")
    summary = ["# Summary", ""]
    for n in range(1, pages + 1):
        page = Page(n, math)
        body = page.chapter_body() if book else page.body()
        (out / "src" / f"ch{n:04d}.md").write_text(f"# {page.title()}\n\n{body}", encoding="utf-8")
        summary.append(f"- [{page.title()}](ch{n:04d}.md)")
    (out / "src" / "SUMMARY.md").write_text("\n".join(summary) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--pages", type=int, required=True)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--unique-math", action="store_true", help="every formula distinct")
    g.add_argument("--no-math", action="store_true", help="replace formulas by plain text")
    ap.add_argument("--format", choices=("attnbook", "mdbook"), default="attnbook")
    ap.add_argument("--bare", action="store_true",
                    help="attnbook: search index and highlighting off (Zola's defaults)")
    ap.add_argument("--book", action="store_true",
                    help="each page a full book chapter (26 formulas, 3 code blocks)")
    args = ap.parse_args(argv)
    if args.pages < 1:
        ap.error("--pages must be at least 1")
    math = "unique" if args.unique_math else "none" if args.no_math else "shared"
    out: Path = args.out_dir
    if out.exists():
        # Only ever replace a corpus this script wrote (or an empty directory).
        if any(out.iterdir()) and not ((out / "site.toml").exists() or (out / "book.toml").exists()):
            ap.error(f"{out} exists and is not a generated corpus; refusing to delete it")
        shutil.rmtree(out)
    if args.format == "attnbook":
        write_attnbook(out, args.pages, math, args.bare, args.book)
    else:
        write_mdbook(out, args.pages, math, args.book)
    return 0


if __name__ == "__main__":
    sys.exit(main())
