"""Chapter 8's update step in Rust (crates/attention) and in JAX, timed in one run.

Run through run.sh, which builds the Rust side (`bench_train`), makes the virtualenv, sets
XLA to one thread and pins this process (and so the Rust subprocesses) to one core.

1. `bench_train export` rebuilds chapter 8's training exactly as the chapter runs it (seed,
   task, initialisation, batches, learning-rate schedule), trains it, and writes the initial
   parameters, the batches and its own results to a JSON file.
2. This script builds the same model in JAX from those parameters (f64, `jax.jit` of the
   whole update: `value_and_grad` of the loss and Adam), and trains it on the same batches.
3. Rounds alternate the two sides (the order flips every round): Rust in a subprocess
   (`bench_train time`), JAX in this process. Each round times UPDATES updates from the
   initial parameters, after a warm-up that is not timed (JAX: one compilation per batch
   length, then a few updates; Rust: 20 updates). The JAX clock is read after
   `block_until_ready`. Reported: the median over rounds of updates/s (wall and CPU time),
   and the median of the per-round ratios.
4. The losses of the two trainings are compared update by update, and the trained
   parameters on a batch neither side trained on.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

jax.config.update("jax_enable_x64", True)

WARMUP_PER_LENGTH = 3
JAX_VARIANTS = ("pytree", "flat")


# -- the model, as crates/attention/src/train writes it -------------------------------------


def make_loss(cfg, hyper, positions):
    """Chapter 8's loss (params, src, tgt) -> mean cross-entropy, params a dict by name."""
    d, heads, kv_heads = cfg["d_model"], cfg["heads"], cfg["kv_heads"]
    dh = d // heads
    group = heads // kv_heads
    scale = 1.0 / np.sqrt(dh)
    bos = cfg["vocab"]
    ln_eps = hyper["ln_eps"]
    pe = jnp.asarray(positions)

    def linear(p, name, x):
        return x @ p[name + ".w"] + p[name + ".b"]

    def layer_norm(p, name, x):
        centred = x - jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.sum(centred * centred, axis=-1, keepdims=True) / d
        xhat = centred * (1.0 / jnp.sqrt(var + ln_eps))
        return xhat * p[name + ".gamma"] + p[name + ".beta"]

    def feed_forward(p, name, x):
        return linear(p, name + ".l2", jax.nn.relu(linear(p, name + ".l1", x)))

    def attention(p, name, xq, xkv, mask=None):
        b, m, n = xq.shape[0], xq.shape[1], xkv.shape[1]
        q = linear(p, name + ".w_q", xq).reshape(b, m, heads, dh)
        k = linear(p, name + ".w_k", xkv).reshape(b, n, kv_heads, dh)
        v = linear(p, name + ".w_v", xkv).reshape(b, n, kv_heads, dh)
        if group > 1:  # query head i reads key/value head i // group
            k, v = jnp.repeat(k, group, axis=2), jnp.repeat(v, group, axis=2)
        scores = jnp.einsum("bmhd,bnhd->bhmn", q, k) * scale
        if mask is not None:
            scores = jnp.where(mask, scores, -jnp.inf)
        weights = jax.nn.softmax(scores, axis=-1)
        out = jnp.einsum("bhmn,bnhd->bmhd", weights, v).reshape(b, m, heads * dh)
        return linear(p, name + ".w_o", out)

    def loss_fn(p, src, tgt):
        b, n, m = src.shape[0], src.shape[1], tgt.shape[1]
        x = p["embed"][src] + pe[:n]
        h1 = layer_norm(p, "enc_ln1", x + attention(p, "enc_attn", x, x))
        memory = layer_norm(p, "enc_ln2", h1 + feed_forward(p, "enc_ff", h1))
        dec_in = jnp.concatenate([jnp.full((b, 1), bos, src.dtype), tgt[:, :-1]], axis=1)
        y = p["embed"][dec_in] + pe[:m]
        causal = jnp.tril(jnp.ones((m, m), bool))
        g1 = layer_norm(p, "dec_ln1", y + attention(p, "dec_attn", y, y, causal))
        g2 = layer_norm(p, "dec_ln2", g1 + attention(p, "cross_attn", g1, memory))
        g3 = layer_norm(p, "dec_ln3", g2 + feed_forward(p, "dec_ff", g2))
        logp = jax.nn.log_softmax(linear(p, "out", g3), axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, tgt[..., None], axis=-1))

    return loss_fn


def make_step(loss_fn, hyper, unravel=None):
    """The jitted update (params, m, v, t, src, tgt) -> (params, m, v, t, loss): the loss
    and its gradient, then Adam with chapter 8's schedule. With `unravel`, the parameters
    and Adam's state are each one flat vector (`jax.flatten_util.ravel_pytree`)."""
    b1, b2, eps = hyper["beta1"], hyper["beta2"], hyper["eps"]
    lr0, steps = hyper["lr"], hyper["steps"]
    f = loss_fn if unravel is None else (lambda flat, src, tgt: loss_fn(unravel(flat), src, tgt))

    def update(p, m, v, t, src, tgt):
        loss, g = jax.value_and_grad(f)(p, src, tgt)
        t = t + 1
        lr = lr0 * (1.0 - (t - 1) / steps)  # chapter 8: linear decay to 0
        c1, c2 = 1.0 - b1**t, 1.0 - b2**t
        m = jax.tree.map(lambda m, g: b1 * m + (1.0 - b1) * g, m, g)
        v = jax.tree.map(lambda v, g: b2 * v + (1.0 - b2) * g * g, v, g)
        p = jax.tree.map(lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), p, m, v)
        return p, m, v, t, loss

    return jax.jit(update, donate_argnums=(0, 1, 2, 3))


# -- the JAX side -----------------------------------------------------------------------------


class Jax:
    """One JAX variant: `pytree` (parameters and Adam's state as dicts of arrays, as JAX code
    is usually written) or `flat` (each one vector, unflattened inside the jitted step)."""

    def __init__(self, data, variant):
        self.variant = variant
        params = {
            t["name"]: np.array(t["data"], np.float64).reshape(t["shape"]) for t in data["params"]
        }
        pos = data["positions"]
        positions = np.array(pos["data"], np.float64).reshape(pos["shape"])
        loss_fn = make_loss(data["config"], data, positions)
        if variant == "flat":
            flat, self.unravel = ravel_pytree(params)
            self.params = np.asarray(flat)
            self.step = make_step(loss_fn, data, self.unravel)
        else:
            self.params, self.unravel = params, lambda p: p
            self.step = make_step(loss_fn, data)
        self.loss = jax.jit(loss_fn)
        batches = [
            (jnp.asarray(np.array(b["src"], np.int32)), jnp.asarray(np.array(b["tgt"], np.int32)))
            for b in data["batches"]
        ]
        self.batches, self.eval_batch = batches[: data["updates"]], batches[data["updates"]]

    def fresh(self):
        """Device copies of the initial state (the step donates its inputs)."""
        p = jax.tree.map(jnp.array, self.params)
        zeros = lambda: jax.tree.map(jnp.zeros_like, p)
        return p, zeros(), zeros(), jnp.zeros((), jnp.float64)

    def warm_up(self):
        """Compiles the step for every batch length and runs a few updates; returns seconds."""
        start = time.perf_counter()
        lengths = {}
        for b in self.batches:
            lengths.setdefault(b[0].shape[1], b)
        for src, tgt in lengths.values():
            state = self.fresh()
            for _ in range(WARMUP_PER_LENGTH):
                state = self.step(*state[:4], src, tgt)[:4]
            jax.block_until_ready(state)
        jax.block_until_ready(self.loss(self.unravel(self.fresh()[0]), *self.eval_batch))
        return time.perf_counter() - start

    def train(self):
        """(wall s, process CPU s, losses, trained params by name) of one timed training."""
        p, m, v, t = self.fresh()
        jax.block_until_ready((p, m, v, t))
        losses = []
        wall, cpu = time.perf_counter(), time.process_time()
        for src, tgt in self.batches:
            p, m, v, t, loss = self.step(p, m, v, t, src, tgt)
            losses.append(loss)
        jax.block_until_ready((p, losses))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return wall, cpu, np.array([float(l) for l in losses]), self.unravel(p)


def rust_round(binary, extra_env, updates):
    out = subprocess.run([binary, "time", str(updates)], check=True, capture_output=True, text=True,
                         env={**os.environ, **extra_env})
    side, n, wall, cpu, fingerprint = out.stdout.strip().split("\t")
    assert side == "rust" and int(n) == updates, out.stdout
    return float(wall), float(cpu), fingerprint


# -- report -----------------------------------------------------------------------------------


def agreement(data, jax_side, jax_losses, jax_params):
    rust = data["rust"]
    r_losses = np.array(rust["losses"])
    diff = np.abs(r_losses - jax_losses)
    updates = len(r_losses)
    lines = ["loss of update k (before it; both sides, same parameters and batch at k = 1):"]
    lines.append("| k | Rust | JAX | abs diff | rel diff |")
    lines.append("| ---: | ---: | ---: | ---: | ---: |")
    for k in sorted({1, 2, 10, 100, 200, 500, updates} & set(range(1, updates + 1))):
        r, j = r_losses[k - 1], jax_losses[k - 1]
        d = abs(r - j)
        lines.append(f"| {k} | {r:.15f} | {j:.15f} | {d:.1e} | {d / abs(r):.1e} |")
    lines.append(
        f"max abs diff over all {updates} updates: {diff.max():.1e} (at k = {diff.argmax() + 1})"
    )
    j_eval = float(jax_side.loss(jax_params, *jax_side.eval_batch))
    r_eval = rust["eval_loss"]
    lines.append(
        f"loss after {updates} updates on a batch neither trained on: Rust {r_eval:.15f}, "
        f"JAX {j_eval:.15f}, abs diff {abs(r_eval - j_eval):.1e}, "
        f"rel diff {abs(r_eval - j_eval) / abs(r_eval):.1e}"
    )
    worst, worst_name = 0.0, ""
    worst_all, scale = 0.0, 0.0
    for t in rust["params"]:
        r = np.array(t["data"]).reshape(t["shape"])
        d = np.abs(r - np.asarray(jax_params[t["name"]])).max()
        scale = max(scale, np.abs(r).max())
        worst_all = max(worst_all, d)
        # The key bias cannot change any score (softmax ignores a shift of a whole row), so
        # its gradient is rounding noise on both sides and Adam moves it by noise.
        if not t["name"].endswith("w_k.b") and d > worst:
            worst, worst_name = d, t["name"]
    lines.append(
        f"trained parameters, max abs diff: {worst:.1e} ({worst_name}; largest |parameter| "
        f"{scale:.2f}); with the key biases, whose gradient is exactly 0 in exact arithmetic: "
        f"{worst_all:.1e}"
    )
    return "\n".join(lines), {
        "max_loss_diff": float(diff.max()),
        "eval_loss": {"rust": r_eval, "jax": j_eval},
        "param_max_diff": float(worst),
    }


def environment(rustc):
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "affinity": sorted(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jaxlib": jax.lib.__version__ if hasattr(jax.lib, "__version__") else "?",
        "numpy": np.__version__,
        "rustc": rustc,
        "XLA_FLAGS": os.environ.get("XLA_FLAGS", "(unset)"),
        "jax devices": ", ".join(str(d) for d in jax.devices()),
    }


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rust-bin", required=True, help="the built bench_train example")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--updates", type=int, default=1000, help="updates per timed training")
    parser.add_argument("--export", default="target/bench-train.json", help="the exchange file")
    parser.add_argument("--rustc", default="?")
    parser.add_argument("--json", help="also write the raw figures here")
    parser.add_argument(
        "--also", action="append", default=[], metavar="NAME=BIN",
        help="time another build of bench_train in the same rounds (the crate before a change)",
    )
    parser.add_argument("--no-mallopt", action="store_true", help="skip the rust-mallopt variant")
    args = parser.parse_args()

    env = environment(args.rustc)
    print("\n".join(f"{k}: {v}" for k, v in env.items()))
    print(f"load average before: {load()}")
    print(f"rust: exporting chapter 8's training ({args.updates} updates) to {args.export}")
    out = subprocess.run(
        [args.rust_bin, "export", args.export, str(args.updates)], check=True, capture_output=True,
        text=True,
    )
    print("".join("  " + l + "\n" for l in out.stdout.splitlines()), end="")
    with open(args.export) as f:
        data = json.load(f)
    sides = {v: Jax(data, v) for v in JAX_VARIANTS}
    for v, side in sides.items():
        print(f"jax ({v}): compile + warm-up {side.warm_up():.1f} s (not timed)")

    # (binary, extra environment) per Rust variant. `mallopt`: the same binary with glibc's
    # heap never trimmed (bench_train calls mallopt when BENCH_TRAIN_MALLOPT is set).
    rust_runs = {}
    for name, binary in [("rust", args.rust_bin)] + [
        (f"rust-{n}", b) for n, b in (extra.split("=", 1) for extra in args.also)
    ]:
        rust_runs[name] = (binary, {})
        if not args.no_mallopt:
            rust_runs[f"{name}-mallopt"] = (binary, {"BENCH_TRAIN_MALLOPT": "1"})
    jax_names = [f"jax-{v}" for v in JAX_VARIANTS]
    names = list(rust_runs) + jax_names
    rows = []
    results = {}
    fingerprints = set()
    for r in range(args.rounds):
        # Rotate the order so that no side always runs first or last.
        order = names[r % len(names):] + names[: r % len(names)]
        got = {}
        for who in order:
            print(f"round {r + 1}/{args.rounds}: {who}", file=sys.stderr, flush=True)
            if who in rust_runs:
                wall, cpu, fp = rust_round(*rust_runs[who], args.updates)
                fingerprints.add(fp)
            else:
                wall, cpu, losses, params = sides[who[4:]].train()
                if who not in results:
                    results[who] = (losses, params)
                else:
                    assert np.array_equal(losses, results[who][0]), f"{who} not deterministic"
            got[who] = (wall, cpu)
        rows.append(got)
    # Every Rust variant must train to the same losses, bit for bit.
    assert len(fingerprints) == 1, f"Rust trainings differ: {fingerprints}"
    print(f"load average after: {load()}")

    n = args.updates
    print()
    print(f"{n} updates per round, {args.rounds} rounds, one core, f64. Updates/s by wall clock,")
    print("CPU time in brackets (the thread's for Rust, the process's for JAX):")
    print("| round | " + " | ".join(names) + " |")
    print("| ---: |" + "|".join(" ---: " for _ in names) + "|")
    for i, g in enumerate(rows):
        cells = [f"{n / g[w][0]:.1f} ({n / g[w][1]:.1f})" for w in names]
        print(f"| {i + 1} | " + " | ".join(cells) + " |")
    med = {w: (statistics.median(n / g[w][0] for g in rows),
               statistics.median(n / g[w][1] for g in rows)) for w in names}
    print("| median | " + " | ".join(f"{med[w][0]:.1f} ({med[w][1]:.1f})" for w in names) + " |")
    print()
    print("Ratios, median over rounds of the per-round ratio (> 1: the row is faster), wall (CPU):")
    print("| | " + " | ".join(names[1:]) + " |")
    print("| --- |" + "|".join(" ---: " for _ in names[1:]) + "|")
    ratios = {}
    for x in rust_runs:
        cells = []
        for y in names[1:]:
            if y == x or (y in rust_runs and list(rust_runs).index(y) < list(rust_runs).index(x)):
                cells.append("")
                continue
            rw = statistics.median(g[y][0] / g[x][0] for g in rows)
            rc = statistics.median(g[y][1] / g[x][1] for g in rows)
            ratios[f"{x}/{y}"] = (rw, rc)
            cells.append(f"{rw:.2f}x ({rc:.2f}x)")
        print(f"| {x} | " + " | ".join(cells) + " |")
    print()
    agree = {}
    for who, (losses, params) in results.items():
        print(f"Rust against {who}:")
        text, agree[who] = agreement(data, sides[who[4:]], losses, params)
        print(text)
        print()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"environment": env, "updates": n, "rounds": rows, "medians": med,
                       "ratios": ratios, "agreement": agree}, f, indent=1)


if __name__ == "__main__":
    main()
