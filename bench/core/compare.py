"""Times NumPy and the Rust attention core side by side and prints the ratios.

Run through run.sh, which prepares the environment (virtualenv, OpenBLAS variables) and
builds the Rust benchmark. For every case, each round times the NumPy version in this process
and then the Rust version in a subprocess (`bench_core =NAME`), so both sides see the same
machine load; the result of a case is the minimum over rounds of each side's median (noise
on a shared machine only ever adds time). Ratios are NumPy time / Rust time.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

SAMPLES = 7
SAMPLE_SECONDS = 0.02
SDPA_SIZES = (128, 512, 2048, 4096)
D = 64


# -- timing ---------------------------------------------------------------------------------


def timed(f):
    """Wall and thread-CPU seconds per call: medians of SAMPLES samples of >= 20 ms each,
    after warming up while choosing the iteration count (as the Rust side does)."""
    iters = 1
    while sample(f, iters)[0] * iters < SAMPLE_SECONDS:
        iters *= 2
    walls, cpus = zip(*(sample(f, iters) for _ in range(SAMPLES)))
    return sorted(walls)[SAMPLES // 2], sorted(cpus)[SAMPLES // 2]


def sample(f, iters):
    wall, cpu = time.perf_counter(), time.thread_time()
    for _ in range(iters):
        f()
    return (time.perf_counter() - wall) / iters, (time.thread_time() - cpu) / iters


# -- the NumPy side -------------------------------------------------------------------------


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def small_cases():
    """The series' small case: query width 32, 7 keys, additive hidden size 32, with U H
    computed once per sentence (as on the Rust side)."""
    rng = np.random.default_rng(1)
    s = rng.standard_normal(32)
    h = rng.standard_normal((7, 32))
    w, u = rng.standard_normal((32, 32)) / 8, rng.standard_normal((32, 32)) / 8
    v = rng.standard_normal(32) / 6
    uh = h @ u.T
    sqrt_d = np.sqrt(32)
    return {
        "small/dot": lambda: softmax(h @ s),
        "small/scaled": lambda: softmax(h @ s / sqrt_d),
        "small/additive": lambda: softmax(np.tanh(uh + w @ s) @ v),
    }


def gemm_case(dtype):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2048, 2048)).astype(dtype)
    b = rng.standard_normal((2048, 2048)).astype(dtype)
    return lambda: a @ b


def sdpa_cases(n, dtype):
    """Two NumPy versions: the textbook one, and the fastest we could write (scale Q instead
    of the n x n scores, reuse one preallocated score buffer, every step in place)."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((n, D)).astype(dtype) for _ in range(3))
    scale = dtype(1 / np.sqrt(D))
    buf = np.empty((n, n), dtype)

    def obvious():
        s = q @ k.T / np.sqrt(D)
        s = s - s.max(axis=1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=1, keepdims=True)
        return p @ v

    def in_place():
        np.matmul(q * scale, k.T, out=buf)
        np.subtract(buf, buf.max(axis=1, keepdims=True), out=buf)
        np.exp(buf, out=buf)
        np.divide(buf, buf.sum(axis=1, keepdims=True), out=buf)
        return buf @ v

    return {"numpy": obvious, "numpy-inplace": in_place}


# -- the Rust side --------------------------------------------------------------------------


def rust(binary, name):
    out = subprocess.run([binary, "=" + name], check=True, capture_output=True, text=True)
    line = out.stdout.strip()
    got, wall, cpu = line.split("\t")
    assert got == name, line
    return float(wall), float(cpu)


# -- cases ----------------------------------------------------------------------------------


def cases():
    """(case, threads, {label: NumPy callable}, [Rust case names]) in table order."""
    small = small_cases()
    for what in ("dot", "scaled", "additive"):
        name = f"small/{what}"
        yield name, 1, {"numpy": small[name]}, [f"{name}/fused", f"{name}/api"]
    for dtype in ("f32", "f64"):
        np_type = np.float32 if dtype == "f32" else np.float64
        yield f"gemm/{dtype}/2048", 1, {"numpy": gemm_case(np_type)}, [f"gemm/{dtype}/2048"]
    for n in SDPA_SIZES:
        for dtype in ("f32", "f64"):
            np_type = np.float32 if dtype == "f32" else np.float64
            for threads in (1, 2):
                names = [f"sdpa/{v}/{dtype}/{n}/t{threads}" for v in ("flash", "flash-causal")]
                if dtype == "f64" and threads == 1 and n <= 2048:
                    names.append(f"sdpa/api/{dtype}/{n}/t{threads}")
                yield f"sdpa/{dtype}/{n}/t{threads}", threads, sdpa_cases(n, np_type), names


def measure(binary, rounds, only):
    """{case: {variant: (wall, cpu)}}, each the minimum over rounds."""
    best = {}
    for r in range(rounds):
        for case, threads, numpy_fns, rust_names in cases():
            if only and not any(o in case for o in only):
                continue
            print(f"round {r + 1}/{rounds}: {case}", file=sys.stderr, flush=True)
            got = best.setdefault(case, {})
            with threadpool_limits(limits=threads, user_api="blas"):
                for label, f in numpy_fns.items():
                    keep_min(got, label, timed(f))
            for name in rust_names:
                keep_min(got, "rust:" + rust_variant(name), rust(binary, name))
    return best


def rust_variant(name):
    """`small/dot/fused` -> fused, `gemm/f32/2048` -> ndarray, `sdpa/flash/f32/..` -> flash."""
    parts = name.split("/")
    return {"small": parts[-1], "gemm": "ndarray"}.get(parts[0], parts[1])


def keep_min(got, label, t):
    old = got.get(label)
    got[label] = t if old is None else (min(old[0], t[0]), min(old[1], t[1]))


# -- report ---------------------------------------------------------------------------------


def fmt_time(t):
    for unit, scale in (("s", 1), ("ms", 1e3), ("us", 1e6), ("ns", 1e9)):
        if t * scale >= 1:
            return f"{t * scale:.3g} {unit}"
    return f"{t * 1e9:.3g} ns"


def useful_flops(case, variant):
    """Multiply-adds count 2: 2 n^3 for GEMM; 4 n^2 d for attention, about half of that
    (keys j <= i only) for causal attention."""
    parts = case.split("/")
    if parts[0] == "gemm":
        return 2 * 2048**3
    if parts[0] == "sdpa":
        n = int(parts[2])
        return 2 * D * n * (n + 1) if variant == "flash-causal" else 4 * n * n * D
    return None


def report(best):
    header = [
        "case", "Rust", "variant", "NumPy (best)", "best/Rust", "best/Rust CPU",
        "NumPy textbook", "textbook/Rust", "Rust GFLOP/s",
    ]
    rows = []
    for case, got in best.items():
        numpy = {k: v for k, v in got.items() if k.startswith("numpy")}
        best_label = min(numpy, key=lambda k: numpy[k][0])
        np_wall, np_cpu = numpy[best_label]
        textbook = numpy.get("numpy") if len(numpy) > 1 else None
        one_thread = not case.endswith("/t2")
        for label, (wall, cpu) in got.items():
            if not label.startswith("rust:"):
                continue
            variant = label[5:]
            flops = useful_flops(case, variant)
            rows.append([
                case,
                fmt_time(wall),
                variant,
                f"{fmt_time(np_wall)} ({best_label})",
                f"{np_wall / wall:.2f}x",
                f"{np_cpu / cpu:.2f}x" if one_thread else "",
                fmt_time(textbook[0]) if textbook else "",
                f"{textbook[0] / wall:.2f}x" if textbook else "",
                f"{flops / wall / 1e9:.0f}" if flops else "",
            ])
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
    lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    return "\n".join(lines)


def goals(best):
    """The issue's goals, as measured in this run."""
    lines = []

    def ratio(case, variant="rust:fused"):
        got = best.get(case)
        if not got or variant not in got:
            return None
        np_wall = min(t[0] for k, t in got.items() if k.startswith("numpy"))
        return np_wall / got[variant][0]

    for what, target in (("dot", 30), ("scaled", 30), ("additive", 10)):
        r = ratio(f"small/{what}")
        if r is not None:
            ok = "met" if r >= target else "NOT met"
            lines.append(f"- small {what} + softmax: {r:.1f}x NumPy (goal >= {target}x): {ok}")
    r = ratio("sdpa/f32/2048/t1", "rust:flash")
    if r is not None:
        ok = "met" if r >= 1.5 else "NOT met"
        textbook = best["sdpa/f32/2048/t1"]["numpy"][0] / best["sdpa/f32/2048/t1"]["rust:flash"][0]
        lines.append(
            f"- flash attention f32 n=2048 1 thread: {r:.2f}x the best NumPy, {textbook:.2f}x the "
            f"textbook NumPy (goal >= 1.5x): {ok}"
        )
        wall = best["sdpa/f32/2048/t1"]["rust:flash"][0]
        gflops = useful_flops("sdpa/f32/2048/t1", "flash") / wall / 1e9
        peaks = {}
        for label, t in best.get("gemm/f32/2048", {}).items():
            peaks[label] = 2 * 2048**3 / t[0] / 1e9
        if peaks:
            peak_label = max(peaks, key=peaks.get)
            share = gflops / peaks[peak_label]
            ok = "met" if share >= 0.6 else "NOT met"
            lines.append(
                f"- flash attention f32 n=2048 1 thread: {gflops:.0f} GFLOP/s = {share:.0%} of the "
                f"best sgemm in this run ({peak_label}: {peaks[peak_label]:.0f} GFLOP/s) "
                f"(goal >= 60%): {ok}"
            )
    return "\n".join(lines)


def environment():
    blas = [
        f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')})"
        for i in threadpool_info()
    ]
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": ", ".join(blas),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", "(unset)"),
        "OPENBLAS_L2_SIZE": os.environ.get("OPENBLAS_L2_SIZE", "(unset)"),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rust-bin", required=True, help="the built bench_core example")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="also write the raw minima here")
    parser.add_argument("only", nargs="*", help="run only cases whose name contains one of these")
    args = parser.parse_args()
    env = environment()
    best = measure(args.rust_bin, args.rounds, args.only)
    print("\n".join(f"{k}: {v}" for k, v in env.items()))
    print()
    print(report(best))
    print()
    print(goals(best))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": env, "minima": best}, f, indent=1)


if __name__ == "__main__":
    main()
