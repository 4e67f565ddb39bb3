#!/usr/bin/env bash
# Times chapter 8's update step (forward, backward, Adam) in Rust through crates/attention and
# in JAX, in one run on one core, and prints updates/s, the ratio and how closely the two
# trainings' losses agree.
#
#   bench/train/run.sh [--rounds N] [--updates K] [--json FILE]
#
# Builds `cargo build --release -p attention --example bench_train` (the Rust side), makes a
# virtualenv with JAX in bench/train/.venv (or $BENCH_TRAIN_VENV), and runs compare.py pinned
# to one core (`taskset -c ${BENCH_CPU:-0}`, which the Rust subprocesses inherit) with XLA on
# one thread. Defaults: 5 rounds of 1000 updates (chapter 8's training), ~2 minutes plus
# JAX's compilation. Results and their reading: docs/performance.md.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="${BENCH_TRAIN_VENV:-$root/bench/train/.venv}"

cargo build --release --quiet -p attention --example bench_train
bin="$target/release/examples/bench_train"

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "jax==${JAX_VERSION:-0.10.2}" "jaxlib==${JAX_VERSION:-0.10.2}" \
        "numpy==${NUMPY_VERSION:-2.4.6}"
fi

# One thread for XLA's CPU backend; the whole run is pinned to one core as well.
export XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
export JAX_PLATFORMS=cpu

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
changes="$(git diff --quiet HEAD 2>/dev/null || echo ' (+ local changes)')"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$changes"
echo "uptime: $(uptime)"
exec taskset -c "${BENCH_CPU:-0}" "$venv/bin/python" bench/train/compare.py --rust-bin "$bin" \
    --export "$target/bench-train.json" --rustc "$(rustc --version)" "$@"
