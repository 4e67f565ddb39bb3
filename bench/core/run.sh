#!/usr/bin/env bash
# Times the attention core against NumPy in one run and prints one table with the ratios.
#
#   bench/core/run.sh [--rounds N] [--json FILE] [CASE-FILTER...]
#
# Builds `cargo run --release -p attention --example bench_core`, makes a virtualenv with
# NumPy (in target/bench-venv, or $BENCH_VENV), and runs compare.py, which alternates NumPy
# and Rust case by case. Results and their reading: docs/performance.md.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
venv="${BENCH_VENV:-$target/bench-venv}"

cargo build --release --quiet -p attention --example bench_core
bin="$target/release/examples/bench_core"

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet "numpy==${NUMPY_VERSION:-2.4.6}" "threadpoolctl==3.8.0"
fi

# Some machines set these to steer OpenBLAS to its AVX2 kernels, which roughly halves GEMM
# speed on AVX-512 CPUs: NumPy gets its own best kernels here.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
# At most two BLAS threads; single-thread rows are pinned to one with threadpoolctl.
export OPENBLAS_NUM_THREADS=2 OMP_NUM_THREADS=2

echo "rustc: $(rustc --version)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (+ local changes)')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
"$venv/bin/python" bench/core/compare.py --rust-bin "$bin" "$@"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
