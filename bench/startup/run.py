#!/usr/bin/env python3
"""Start-up budget: `attnbook build` of a site with one empty chapter, cold and warm.

    python3 bench/startup/run.py [--runs 21] [--attnbook target/release/attnbook]

Cold: the site's `.attnbook/` (caches, kept output) and `public/` deleted before each run.
Warm: everything kept. Both are whole processes (exec to exit), timed here, interleaved so
that load on this shared machine hits both alike; the median of each is printed with their
ratio, then one cold run's `--timings`, which lists every fixed cost of a build. The goal
(issue 15): a cold build under 30 ms. Results: docs/performance.md, "Start-up".
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def build(attnbook: Path, site: Path, *extra: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([str(attnbook), "--root", str(site), "build", *extra],
                          capture_output=True, text=True, check=True)
    return (time.perf_counter() - started) * 1000, done.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--attnbook", type=Path,
                    default=Path(__file__).resolve().parents[2] / "target/release/attnbook")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp)
        (site / "content").mkdir()
        (site / "site.toml").write_text('title = "S"\nbase_url = "https://example.org/"\n')
        (site / "content/01-empty.md").write_text('+++\ntitle = "空"\nnumber = 1\n+++\n')
        cold, warm = [], []
        build(args.attnbook, site)  # page cache of the binary itself
        for _ in range(args.runs):
            shutil.rmtree(site / ".attnbook", ignore_errors=True)
            shutil.rmtree(site / "public", ignore_errors=True)
            cold.append(build(args.attnbook, site)[0])
            warm.append(build(args.attnbook, site)[0])
        c, w = statistics.median(cold), statistics.median(warm)
        print(f"one empty chapter, {args.runs} runs each, whole process, median:")
        print(f"  cold {c:6.1f} ms  (min {min(cold):.1f}, max {max(cold):.1f})"
              f"  goal < 30 ms: {'MET' if c < 30 else 'NOT met'}")
        print(f"  warm {w:6.1f} ms  (min {min(warm):.1f}, max {max(warm):.1f})")
        print(f"  cold / warm = {c / w:.2f}x")
        shutil.rmtree(site / ".attnbook", ignore_errors=True)
        shutil.rmtree(site / "public", ignore_errors=True)
        print("\none cold run, --timings:")
        print(build(args.attnbook, site, "--timings")[1])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
