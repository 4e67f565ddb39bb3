#!/usr/bin/env python3
"""Live-reload latency of `attnbook serve`: from saving a prose edit to the page showing it.

    bench/serve/reload.py [--edits 20] [--chapter 03-luong.md]

Copies the series (content/, site.toml, templates/, static/ and the experiment cache in
.attnbook/cache, so nothing is compiled) into target/bench-serve/site, then in one run:

1. baseline: `attnbook build` with nothing changed, 5 times (the cost of one cached build);
2. starts `attnbook serve` on a free port, as a user does, and waits for its first build;
3. --edits times: parks a live-reload poll (what every open page does), rewrites one prose
   sentence of the chapter (a new marker each time, written the way editors save: to a
   temporary file, then renamed over the chapter), and times until
   - the poll returns (the server has rebuilt and tells the page to reload), and
   - a GET of the chapter's page returns HTML with the new marker (what the reader sees);
4. prints the latencies (min, median, max) and their ratio to the baseline build;
5. edits one experiment block of the chapter (a comment line, which changes its source) and
   times one `attnbook build`: only that chapter is compiled and rerun.

The goal (issue 8): the page reloaded within 150 ms of the save.
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_series(dst: Path) -> None:
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    for name in ["content", "templates", "static"]:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, dst / name)
    shutil.copy(ROOT / "site.toml", dst / "site.toml")
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--edits", type=int, default=20)
    ap.add_argument("--chapter", default="03-luong.md")
    args = ap.parse_args()

    subprocess.run(["cargo", "build", "--release", "--quiet", "--bin", "attnbook"], cwd=ROOT, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    exe = target / "release" / "attnbook"
    site = target / "bench-serve" / "site"
    copy_series(site)

    first = subprocess.run([exe, "--root", site, "build"], capture_output=True, text=True)
    if first.returncode != 0:
        sys.stderr.write(first.stderr)
        return 1
    builds = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([exe, "--root", site, "build"], check=True, capture_output=True)
        builds.append(time.perf_counter() - t0)
    baseline = min(builds)

    port = free_port()
    log = open(site.parent / "serve.log", "w")
    server = subprocess.Popen([exe, "--root", site, "serve", "--port", str(port)],
                              stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        for line in server.stdout:
            if line.startswith("serving"):
                break
        slug = re.sub(r"^\d+-", "", Path(args.chapter).stem)
        page_url = f"http://127.0.0.1:{port}/{slug}/"
        chapter = site / "content" / args.chapter
        original = chapter.read_text(encoding="utf-8")
        # The first paragraph line after the front matter that is plain prose.
        body_start = original.index("+++", 3) + 3
        lines = original[body_start:].split("\n")
        index = next(i for i, l in enumerate(lines)
                     if l and not l.startswith(("#", "|", "`", "$", "{", "<", "-", "!", ">")) and "[" not in l)

        polls, pages = [], []
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
            edited = lines.copy()
            edited[index] = f"{lines[index]}{marker}"
            t0 = time.perf_counter()
            save(chapter, original[:body_start] + "\n".join(edited))
            waiter.join(timeout=30)
            if "poll" not in done:
                print("the live-reload poll did not return within 30 s", file=sys.stderr)
                return 1
            html = get(page_url)
            t2 = time.perf_counter()
            if marker not in html:
                print(f"edit {n}: the page does not show the edit", file=sys.stderr)
                return 1
            polls.append(done["poll"] - t0)
            pages.append(t2 - t0)
            time.sleep(0.3)
        save(chapter, original)
    finally:
        server.terminate()
        server.wait(timeout=10)
        log.close()

    # One experiment block edited: only its chapter is compiled and run again.
    fence = "```rust,experiment"
    at = original.index(fence)
    at = original.index("\n", at) + 1
    chapter.write_text(original[:at] + "// benchmark: an edited block\n" + original[at:], encoding="utf-8")
    t0 = time.perf_counter()
    edited_build = subprocess.run([exe, "--root", site, "build"], capture_output=True, text=True)
    block_edit = time.perf_counter() - t0
    save(chapter, original)
    if edited_build.returncode != 0:
        sys.stderr.write(edited_build.stderr)
        return 1
    block_summary = re.search(r"experiments: .*", edited_build.stdout).group(0)

    ms = lambda s: f"{s * 1000:.0f} ms"
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    print(f"baseline: `attnbook build` with nothing changed, best of 5: {ms(baseline)}")
    print(f"{args.edits} prose edits of content/{args.chapter} while serving:")
    print("| from the save to | min | median | max | median / baseline build |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, xs in [("the reload signal", polls), ("the page with the edit", pages)]:
        print(f"| {name} | {ms(min(xs))} | {ms(statistics.median(xs))} | {ms(max(xs))} "
              f"| {statistics.median(xs) / baseline:.2f}x |")
    print(f"one experiment block of content/{args.chapter} edited: `attnbook build` {block_edit:.1f} s ({block_summary})")
    goal = statistics.median(pages)
    print(f"goal: page reloaded within 150 ms: median {ms(goal)}: {'met' if goal <= 0.150 else 'not met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
