#!/usr/bin/env python3
"""The author's loop on the series: no-change rebuilds, prose edits (build and `serve`) and
experiment-block edits, each against a floor with the print and verification pages off.

    bench/serve/reload.py [--runs 9] [--edits 20] [--block-edits 3] [--chapter 03-luong.md]

Copies the series (content/, site.toml, templates/, static/ and the experiment cache in
.attnbook/cache, so nothing is compiled until a block is edited) into target/bench-serve/, once
as it is ("series") and once with `[print] enabled = false` and `[verification] enabled =
false` ("floor": what the two whole-series pages cost is the difference). In each copy, in one
run of this script:

1. no-change rebuild: `attnbook build` with nothing changed, --runs times (after one build
   that fills the caches);
2. paragraph edit, build: one prose sentence of the chapter rewritten (a new marker each time),
   then `attnbook build`, --runs times;
3. paragraph edit, `serve`: starts `attnbook serve` on a free port, as a user does; --edits
   times parks a live-reload poll (what every open page does), saves the edit the way editors
   do (a temporary file renamed over the chapter) and times until the poll returns and until a
   GET of the chapter's page shows the edit;
4. experiment-block edit: a comment line added to the chapter's first experiment block (its
   source changes, so only that chapter is compiled and run again), then `attnbook build`,
   --block-edits times.

It prints the medians (and min/max), the series against its floor, the cost of the two pages as
a share of the no-change rebuild, and the goals of issue 28: no-change rebuild <= 100 ms, prose
edit to reloaded page in `serve` <= 150 ms median, print page cost <= 20 % of a no-change
rebuild.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def floor_config(config: str) -> str:
    """site.toml with `enabled = false` in its `[print]` and `[verification]` tables (added to
    a table the file already has, e.g. `[print] pdf = true`: TOML allows a table once; `pdf`,
    which needs the print page, is dropped)."""
    lines = config.split("\n")
    for table in ["print", "verification"]:
        header = next((i for i, l in enumerate(lines) if l.strip() == f"[{table}]"), None)
        if header is None:
            lines += ["", f"[{table}]", "enabled = false"]
        else:
            end = next((i for i in range(header + 1, len(lines)) if lines[i].lstrip().startswith("[")),
                       len(lines))
            # `pdf = true` needs the print page: the floor goes without the PDF too.
            lines = [l for i, l in enumerate(lines)
                     if not (header < i < end and l.split("=")[0].strip() in ("enabled", "pdf"))]
            lines.insert(header + 1, "enabled = false")
    return "\n".join(lines) + "\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_series(dst: Path, floor: bool) -> None:
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    for name in ["content", "templates", "static"]:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, dst / name)
    config = (ROOT / "site.toml").read_text(encoding="utf-8")
    (dst / "site.toml").write_text(floor_config(config) if floor else config, encoding="utf-8")
    cache = ROOT / ".attnbook" / "cache"
    if cache.is_dir():
        shutil.copytree(cache, dst / ".attnbook" / "cache")


def get(url: str, timeout: float = 30) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode("utf-8")


def save(path: Path, text: str) -> None:
    """Writes like an editor that saves atomically: temporary file, then rename."""
    tmp = path.with_name(f".{path.name}.swp-bench")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class Chapter:
    """The chapter under edit: its text and the prose line the edits change."""

    def __init__(self, path: Path):
        self.path = path
        self.original = path.read_text(encoding="utf-8")
        self.body_start = self.original.index("+++", 3) + 3
        self.lines = self.original[self.body_start:].split("\n")
        # The first paragraph line after the front matter that is plain prose.
        self.index = next(
            i for i, l in enumerate(self.lines)
            if l and not l.startswith(("#", "|", "`", "$", "{", "<", "-", "!", ">")) and "[" not in l)

    def edit_prose(self, marker: str) -> None:
        edited = self.lines.copy()
        edited[self.index] = f"{self.lines[self.index]}{marker}"
        save(self.path, self.original[:self.body_start] + "\n".join(edited))

    def edit_block(self, n: int) -> None:
        fence = "```rust,experiment"
        at = self.original.index(fence)
        at = self.original.index("\n", at) + 1
        save(self.path, self.original[:at] + f"// benchmark: edited block {n}\n" + self.original[at:])

    def restore(self) -> None:
        save(self.path, self.original)


def build(exe: Path, site: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    run = subprocess.run([exe, "--root", site, "build"], capture_output=True, text=True)
    took = time.perf_counter() - t0
    if run.returncode != 0:
        sys.stderr.write(run.stderr)
        raise SystemExit(f"`attnbook build` failed in {site}")
    return took, run.stdout


def measure(exe: Path, site: Path, args) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    build(exe, site)  # fills the caches of this copy
    out["no-change rebuild"] = [build(exe, site)[0] for _ in range(args.runs)]
    chapter = Chapter(site / "content" / args.chapter)
    prose = []
    for n in range(args.runs):
        chapter.edit_prose(f"BUILDEDIT{n:04d}")
        prose.append(build(exe, site)[0])
    chapter.restore()
    build(exe, site)
    out["paragraph edit, build"] = prose
    out["paragraph edit, serve: reload signal"], out["paragraph edit, serve: page shows it"] = serve(
        exe, site, chapter, args)
    blocks = []
    for n in range(args.block_edits):
        chapter.edit_block(n)
        took, stdout = build(exe, site)
        if "1 run" not in stdout:
            raise SystemExit(f"a block edit did not rerun exactly one chapter: {stdout}")
        blocks.append(took)
    chapter.restore()
    build(exe, site)
    out["experiment-block edit, build"] = blocks
    return out


def serve(exe: Path, site: Path, chapter: Chapter, args) -> tuple[list[float], list[float]]:
    port = free_port()
    log = open(site.parent / f"serve-{site.name}.log", "w")
    server = subprocess.Popen([exe, "--root", site, "serve", "--port", str(port)],
                              stdout=subprocess.PIPE, stderr=log, text=True)
    polls, pages = [], []
    try:
        for line in server.stdout:
            if line.startswith("serving"):
                break
        slug = re.sub(r"^\d+-", "", chapter.path.stem)
        page_url = f"http://127.0.0.1:{port}/{slug}/"
        for n in range(args.edits):
            generation = int(re.search(r"var g=(\d+)", get(page_url)).group(1))
            done = {}

            def poll() -> None:
                get(f"http://127.0.0.1:{port}/__attnbook/events?since={generation}")
                done["poll"] = time.perf_counter()

            waiter = threading.Thread(target=poll)
            waiter.start()
            time.sleep(0.2)  # the poll is parked before the save
            marker = f"BENCHMARK{n:04d}"
            t0 = time.perf_counter()
            chapter.edit_prose(marker)
            waiter.join(timeout=30)
            if "poll" not in done:
                raise SystemExit("the live-reload poll did not return within 30 s")
            html = get(page_url)
            t2 = time.perf_counter()
            if marker not in html:
                raise SystemExit(f"edit {n}: the page does not show the edit")
            polls.append(done["poll"] - t0)
            pages.append(t2 - t0)
            time.sleep(0.3)
        chapter.restore()
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()
    return polls, pages


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--block-edits", type=int, default=3)
    ap.add_argument("--chapter", default="03-luong.md")
    args = ap.parse_args()

    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "attnbook"], cwd=ROOT, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    exe = target / "release" / "attnbook"
    results = {}
    for name, floor in [("series", False), ("floor", True)]:
        site = target / "bench-serve" / name
        copy_series(site, floor)
        results[name] = measure(exe, site, args)

    ms = lambda s: f"{s * 1000:.0f} ms"
    med = statistics.median
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} "
          f"(1 min) at the end; chapter edited: content/{args.chapter}")
    print("| measurement | runs | series: median (min-max) | floor: median | series / floor |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for what, xs in results["series"].items():
        ys = results["floor"][what]
        print(f"| {what} | {len(xs)} | {ms(med(xs))} ({ms(min(xs))}-{ms(max(xs))}) "
              f"| {ms(med(ys))} | {med(xs) / med(ys):.2f}x |")
    rebuild = med(results["series"]["no-change rebuild"])
    floor = med(results["floor"]["no-change rebuild"])
    share = max(rebuild - floor, 0) / rebuild
    reload = med(results["series"]["paragraph edit, serve: page shows it"])
    print(f"the print and verification pages' share of a no-change rebuild: {share:.0%}")
    goals = [
        ("no-change rebuild <= 100 ms", rebuild <= 0.100, ms(rebuild)),
        ("prose edit to reloaded page in serve <= 150 ms median", reload <= 0.150, ms(reload)),
        ("print and verification pages <= 20 % of a no-change rebuild", share <= 0.20, f"{share:.0%}"),
    ]
    for goal, met, value in goals:
        print(f"goal: {goal}: {value}: {'met' if met else 'not met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
