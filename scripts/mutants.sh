#!/usr/bin/env bash
# Mutation testing of the modules that carry the promises (issue 17), with cargo-mutants.
#
# Not run in CI: one mutant costs one incremental build of the attnbook crate, and these
# modules have ~370 mutants. Run it before resolving a change to them, then record the figures
# in docs/testing.md.
#
#   scripts/mutants.sh                 # every module below, with all the unit tests (--lib)
#   scripts/mutants.sh quotes cache    # some modules: quotes | cache | links | masking
#   SUITE=full scripts/mutants.sh      # the whole test suite per mutant (many hours)
#   OUT=/tmp/mutants scripts/mutants.sh
#   ARGS="--re ValueIndex" scripts/mutants.sh quotes   # only some mutants (a rerun of survivors)
#
# Needs `cargo install cargo-mutants --locked`. It mutates a snapshot of the committed tree
# (git archive HEAD) with a copy of target/debug, in $WORK, so that the working tree stays
# usable and the first build reuses the dependencies already built. Results go to
# $OUT/<module>/mutants.out/{caught,missed,timeout,unviable}.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-/tmp/attnbook-mutants}
WORK=${WORK:-/tmp/attnbook-mutants-tree}
SUITE=${SUITE:-unit}
# Generous, and still a bound: a mutant that makes a loop endless is counted as a timeout.
TIMEOUT=${TIMEOUT:-300}

# The files cargo-mutants mutates for each module. The tolerance and formatting code is in
# src/quotes/mod.rs; the masking is src/markdown/inline.rs.
files_of() {
    case "$1" in
        quotes) echo "src/quotes/mod.rs src/quotes/syntax.rs src/quotes/output.rs src/quotes/fix.rs" ;;
        cache) echo "src/lab/cache.rs" ;;
        links) echo "src/render/links.rs" ;;
        masking) echo "src/markdown/inline.rs" ;;
        *) echo "unknown module $1 (quotes, cache, links, masking)" >&2; exit 2 ;;
    esac
}

snapshot() {
    rm -rf "$WORK"
    mkdir -p "$WORK/target"
    git archive HEAD | tar -x -C "$WORK"
    if [ -d target/debug ]; then
        cp -a target/debug "$WORK/target/"
    fi
}

run_module() {
    local module=$1 args=() test_args=() status=0
    for file in $(files_of "$module"); do
        args+=(--file "$file")
    done
    if [ "$SUITE" = full ]; then
        # Integration tests included: they run the real binary on fixture sites.
        test_args=(-- --workspace)
    else
        # `--lib` on every cargo call, the build included: cargo-mutants builds with
        # `cargo test --no-run`, which would otherwise link every integration test per
        # mutant (~20 s) where the unit tests alone take ~4 s to build and ~2 s to run.
        test_args=(--cargo-arg=--lib)
    fi
    # Exit 2 (mutants missed) and 3 (timeouts) are results; 1 and 4 (bad usage, the tests
    # failing without any mutation) are not.
    mkdir -p "$OUT/$module"
    # shellcheck disable=SC2086 # ARGS is a list of words
    (cd "$WORK" && cargo mutants --in-place "${args[@]}" --timeout "$TIMEOUT" ${ARGS:-} \
        --output "$OUT/$module" "${test_args[@]}") || status=$?
    case $status in 0 | 2 | 3) ;; *) echo "cargo mutants failed ($status)" >&2; exit "$status" ;; esac
    local results=$OUT/$module/mutants.out
    echo "== $module: $(wc -l < "$results/caught.txt") caught," \
        "$(wc -l < "$results/missed.txt") missed," \
        "$(wc -l < "$results/timeout.txt") timeout," \
        "$(wc -l < "$results/unviable.txt") unviable"
}

modules=("$@")
[ ${#modules[@]} -gt 0 ] || modules=(quotes cache links masking)
for module in "${modules[@]}"; do
    files_of "$module" >/dev/null
done
snapshot
for module in "${modules[@]}"; do
    run_module "$module"
done
