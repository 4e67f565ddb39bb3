"""Draws the series' schematic diagrams into static/figures/ as plain SVG.

Strokes and text use currentColor, so an inlined diagram follows the page's light or dark
theme; labels are Chinese; `x_{i}` and `W^{O}` become sub- and superscripts. Run it from
anywhere: `python3 scripts/draw_figures.py`. The files are committed; the build only reads them.
"""
import re
from pathlib import Path
from xml.sax.saxutils import escape

def label(t):
    # "s_{i-1}" -> s<tspan sub>i−1</tspan>; "W^{Q}" -> superscript
    out = []
    pos = 0
    for m in re.finditer(r'([_^])\{([^}]*)\}', t):
        out.append(escape(t[pos:m.start()]))
        shift = 'sub' if m.group(1) == '_' else 'super'
        out.append(f'<tspan baseline-shift="{shift}" font-size="0.75em">{escape(m.group(2))}</tspan>')
        pos = m.end()
    out.append(escape(t[pos:]))
    return ''.join(out)

class Fig:
    def __init__(self, name, w, h):
        self.name, self.w, self.h, self.parts = name, w, h, []
    def box(self, x, y, w, h, text=None, dashed=False, size=None):
        d = ' stroke-dasharray="5 4"' if dashed else ''
        self.parts.append(f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="4"{d}/>')
        if text:
            self.text(x + w / 2, y + h / 2 + 5, text, size=size)
    def text(self, x, y, t, anchor='middle', size=None):
        fs = f' font-size="{size}"' if size else ''
        self.parts.append(f'<text x="{x}" y="{y}" fill="currentColor" stroke="none" text-anchor="{anchor}"{fs}>{label(t)}</text>')
    def arrow(self, d, dashed=False):
        ds = ' stroke-dasharray="5 4"' if dashed else ''
        self.parts.append(f'<path d="{d}"{ds} marker-end="url(#{self.name}-arrow)"/>')
    def line(self, d, dashed=False):
        ds = ' stroke-dasharray="5 4"' if dashed else ''
        self.parts.append(f'<path d="{d}"{ds}/>')
    def stripes(self, x, y, w, h, k):
        # a matrix drawn as k column blocks
        for i in range(k):
            self.parts.append(f'<rect x="{x + i * w / k:.1f}" y="{y}" width="{w / k:.1f}" height="{h}"/>')
    def svg(self):
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {self.w} {self.h}" '
                f'font-family="sans-serif" font-size="14" fill="none" '
                f'stroke="currentColor" stroke-width="1.5">\n'
                f'  <defs>\n    <marker id="{self.name}-arrow" viewBox="0 0 10 10" refX="9" refY="5" '
                f'markerWidth="7" markerHeight="7" orient="auto-start-reverse">\n'
                f'      <path d="M0,0 L10,5 L0,10 z" fill="currentColor" stroke="none"/>\n'
                f'    </marker>\n  </defs>\n')
        return head + ''.join('  ' + p + '\n' for p in self.parts) + '</svg>\n'

def bahdanau_step():
    f = Fig('bahdanau-step', 640, 370)
    f.text(20, 20, '解码第 i 步', anchor='start', size=12)
    xs = [180, 270, 360, 480]
    for x, t in zip(xs, ['h_{1}', 'h_{2}', 'h_{3}', 'h_{Tₓ}']):
        f.box(x - 30, 320, 60, 32, t)
    f.text(420, 341, '…')
    f.text(70, 341, '注释向量')
    f.box(20, 252, 84, 32, 's_{i−1}')
    f.arrow('M104,268 H148')
    f.box(150, 252, 360, 32, '打分：e_{ij} = a(s_{i−1}, h_{j})')
    for x in xs:
        f.arrow(f'M{x},320 V286')
        f.arrow(f'M{x},252 V206')
    f.box(150, 172, 360, 32, 'softmax：权重 α_{i1} … α_{iTₓ}')
    f.arrow('M330,172 V130')
    f.arrow('M510,336 H560 V114 H412', dashed=True)
    f.text(568, 226, 'h_{j}', anchor='start')
    f.box(250, 98, 160, 32, 'c_{i} = Σ_{j} α_{ij} h_{j}')
    f.arrow('M330,98 V62')
    f.box(190, 28, 280, 32, 's_{i} = f(s_{i−1}, y_{i−1}, c_{i})')
    f.arrow('M62,252 V44 H188')
    f.arrow('M540,44 H472')
    f.text(546, 49, 'y_{i−1}', anchor='start')
    return f

def luong_path():
    f = Fig('luong-path', 720, 290)
    f.text(20, 30, 'Bahdanau', anchor='start')
    f.text(20, 150, 'Luong', anchor='start')
    row1 = [('s_{t−1}', 70), ('α_{t}', 70), ('c_{t}', 70), ('s_{t}', 70), ('y_{t}', 70)]
    row2 = [('h_{t}', 70), ('a_{t}', 70), ('c_{t}', 70), ('h̃_{t} = tanh(W_{c}[c_{t}; h_{t}])', 220), ('y_{t}', 70)]
    for y, row in [(44, row1), (164, row2)]:
        x = 20
        prev = None
        for t, w in row:
            if prev is not None:
                f.arrow(f'M{prev},{y + 16} H{x - 2}')
            f.box(x, y, w, 32, t)
            prev = x + w
            x += w + 40
    f.text(20, 104, '打分用的是上一步的状态；c_{t} 再参与算出 s_{t}', anchor='start', size=12)
    # input feeding: h~_t joins the next step's input
    f.arrow('M460,196 V226 H55 V198', dashed=True)
    f.text(258, 244, '输入馈送：h̃_{t} 与下一步的输入拼接，送入 h_{t+1}', size=12)
    f.text(20, 276, '先算出当前状态 h_{t}，再打分；c_{t} 与 h_{t} 合成注意力隐状态 h̃_{t}', anchor='start', size=12)
    return f

def qkv():
    f = Fig('qkv', 720, 300)
    f.box(20, 118, 70, 64, 'X')
    f.text(55, 200, 'n × d_{model}', size=12)
    f.line('M90,150 H120')
    for i, (name, w, dim) in enumerate([('Q', 'W_{Q}', 'n × d_{k}'), ('K', 'W_{K}', 'n × d_{k}'), ('V', 'W_{V}', 'n × d_{v}')]):
        y = 30 + i * 100
        f.arrow(f'M120,150 V{y + 22} H178')
        f.text(150, y + 16, '· ' + w, size=12)
        f.box(180, y, 60, 44, name)
        f.text(210, y + 60, dim, size=12)
    f.box(300, 30, 150, 44, 'QK^{⊤} / √d_{k}')
    f.arrow('M240,52 H298')
    f.arrow('M240,152 H270 V64 H298')
    f.text(375, 90, 'n × n 分数', size=12)
    f.box(490, 30, 90, 44, 'softmax')
    f.arrow('M450,52 H488')
    f.text(545, 120, '权重 A：每行和为 1', anchor='start', size=12)
    f.box(490, 190, 90, 44, 'A V')
    f.arrow('M535,74 V188')
    f.arrow('M240,252 H470 V224 H488')
    f.box(620, 190, 80, 44, '输出')
    f.arrow('M580,212 H618')
    f.text(660, 250, 'n × d_{v}', size=12)
    return f

def multihead():
    f = Fig('multihead', 760, 310)
    f.box(20, 130, 60, 60, 'X')
    f.text(50, 206, 'n × d_{model}', size=12)
    f.arrow('M80,160 H158')
    f.text(119, 150, 'W^{Q}, W^{K}, W^{V}', size=11)
    f.stripes(160, 120, 160, 80, 4)
    for i, t in enumerate(['1', '2', '…', 'h']):
        f.text(180 + i * 40, 165, t, size=13)
    f.text(240, 112, 'Q（K、V 同样）：n × d_{model}', size=12)
    f.text(240, 222, '按列切成 h 段，每段 d_{k} = d_{model}/h', size=12)
    heads_y = [20, 95, 170, 245]
    for i, y in enumerate(heads_y):
        f.arrow(f'M320,{130 + i * 20} L368,{y + 20}')
        f.box(370, y, 150, 40, ['头 1：Attention', '头 2：Attention', '…', '头 h：Attention'][i], size=13)
        f.arrow(f'M520,{y + 20} L578,{130 + i * 20}')
    f.stripes(580, 120, 80, 80, 4)
    for i, t in enumerate(['1', '2', '…', 'h']):
        f.text(590 + i * 20, 165, t, size=11)
    f.text(620, 112, '拼接：n × d_{model}', size=12)
    f.text(620, 222, '每个头写回自己那一段', size=12)
    f.arrow('M660,160 H698')
    f.box(700, 140, 44, 40, '· W^{O}', size=12)
    return f

OUT = Path(__file__).resolve().parent.parent / 'static' / 'figures'

for fn in [bahdanau_step, luong_path, qkv, multihead]:
    fig = fn()
    (OUT / f'{fig.name}.svg').write_text(fig.svg())
    print(OUT / f'{fig.name}.svg')
