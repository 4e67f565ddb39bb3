#!/usr/bin/env bash
# Fresh clone to built site, the way README.md says, timed step by step:
#
#   bench/coldstart/run.sh [WORKDIR]      (default target/coldstart; ~10 minutes on 2 cores)
#
# 1. `git clone` of this repository (its committed HEAD) into WORKDIR/clone, with its own empty
#    target directory, so nothing compiled is reused (crates already downloaded to ~/.cargo
#    are: the machine is offline apart from the registries);
# 2. `cargo build --release --timings` (the generator; the HTML report of which crate took how
#    long is kept in WORKDIR/cargo-timing.html);
# 3. `target/release/attnbook build`: compiles the experiment crate (its dependencies: ndarray,
#    rand, plotters, ...), runs every experiment, renders every formula;
# 4. the same build again, everything cached (the everyday rebuild).
#
# Prints wall and CPU seconds of each step, the total, and each step's share of the total and
# of the machine's cores (CPU / wall). Results: docs/performance.md.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
work="${1:-$root/target/coldstart}"
rm -rf "$work"
mkdir -p "$work"
clone="$work/clone"

step() { # NAME CMD...: runs CMD in the clone, appends "NAME wall user sys" to the results
    local name="$1"; shift
    local tf="$work/time.out"
    (cd "$clone" && /usr/bin/time -f "%e %U %S" -o "$tf" "$@") > "$work/$name.log" 2>&1 || {
        echo "FAILED: $name (log: $work/$name.log)" >&2
        tail -20 "$work/$name.log" >&2
        exit 1
    }
    read -r wall user sys < <(tail -1 "$tf")
    printf '%s\t%s\t%s\t%s\n' "$name" "$wall" "$user" "$sys" >> "$work/results.tsv"
    printf '  %-28s %8.1f s wall %8.1f s CPU\n' "$name" "$wall" "$(echo "$user + $sys" | bc)"
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"
echo "rustc: $(rustc --version)"
echo "commit: $(git -C "$root" rev-parse --short HEAD)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
: > "$work/results.tsv"
t0=$(date +%s.%N)
git clone -q "$root" "$clone"
unset CARGO_TARGET_DIR ATTNBOOK_TARGET_DIR
step "cargo build --release" cargo build --release --timings
cp "$clone"/target/cargo-timings/cargo-timing.html "$work/" 2>/dev/null || true
step "first build" target/release/attnbook build
step "second build (cached)" target/release/attnbook build
t1=$(date +%s.%N)
total=$(echo "$t1 - $t0" | bc)
printf '  %-28s %8.1f s wall\n' "total (clone to site)" "$total"
# Each step's share of the total, and how many of the cores it kept busy.
while IFS=$'\t' read -r name wall user sys; do
    printf '  %-28s %5.1f%% of the total, %.2f cores busy\n' "$name" \
        "$(echo "100 * $wall / $total" | bc -l)" "$(echo "($user + $sys) / $wall" | bc -l)"
done < "$work/results.tsv"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
grep -E "experiments|built" "$work/first build.log" | tail -2 || true
