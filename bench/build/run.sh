#!/usr/bin/env bash
# Times full builds of synthetic corpora with attnbook and with mdBook 0.5 + mdbook-katex, in
# one run, and prints one table with pages/s, CPU seconds, peak memory and the ratios.
#
#   bench/build/run.sh [--sizes "60 600 3000"] [--book 7] [--mdbook-limit SECONDS] [--rounds 3]
#
# First the small-book row (`book`): --book chapters (default 7; 0 skips it) of gen_corpus.py's
# --book kind, each with 26 distinct formulas and three code blocks, Chinese prose, no
# experiments: the size of a real series, where fixed costs show.
# For every size and each variant (`unique`: 13 formulas per page, every one distinct;
# `nomath`: the same pages with the formulas replaced by plain text; `bare`: attnbook only, the
# no-math corpus with the search index, highlighting and print page off, as Zola builds by
# default; the other rows build print.html, as mdBook builds its print.html) it
# generates both corpora with gen_corpus.py under target/bench-build/, then times with
# /usr/bin/time:
#   attnbook cold  `attnbook --root SITE build` after deleting SITE/.attnbook (caches and the
#                  kept output) and SITE/public;
#   attnbook warm  the same build again, everything kept;
#   mdbook         `mdbook build BOOK` after deleting BOOK/book (mdBook keeps no cache).
# Each is run --rounds times (default 3, each cold run from nothing again) and the fastest run
# is the row: on a shared machine noise only ever adds time. An mdBook run whose time, extrapolated linearly from the previous size, would exceed
# --mdbook-limit (default 600 s) is skipped with a note. Results and their reading:
# docs/performance.md, "Build speed".
set -euo pipefail

sizes="60 600 3000"
book=7
mdbook_limit=600
rounds=3
while [ $# -gt 0 ]; do
    case "$1" in
        --sizes) sizes="$2"; shift 2 ;;
        --book) book="$2"; shift 2 ;;
        --mdbook-limit) mdbook_limit="$2"; shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
target="${CARGO_TARGET_DIR:-$root/target}"
tools="$target/bench-tools"
work="$target/bench-build"
mkdir -p "$work"
export PATH="$tools/bin:$PATH"

# 1. The competitors, installed once into a local root (their compile time is printed).
install_tool() { # NAME CARGO-INSTALL-ARGS...
    local name="$1"; shift
    if [ -x "$tools/bin/$name" ]; then
        return
    fi
    echo "installing $name into $tools (once) ..."
    local t0 t1
    t0=$(date +%s)
    cargo install --locked --quiet --root "$tools" "$@"
    t1=$(date +%s)
    echo "installed $name in $((t1 - t0)) s"
}
install_tool mdbook mdbook --version '^0.5'
install_tool mdbook-katex mdbook-katex

# 2. attnbook itself.
cargo build --release --quiet --bin attnbook
attnbook="$target/release/attnbook"

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"
echo "rustc: $(rustc --version)"
echo "attnbook: $("$attnbook" --version 2>/dev/null || echo '?') at $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (+ local changes)')"
echo "mdbook: $(mdbook --version)"
echo "mdbook-katex: $(mdbook-katex --version 2>/dev/null || echo '?')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

results="$work/results.tsv"
printf 'tool\tvariant\tpages\twall\tuser\tsys\tmaxrss_kb\n' > "$results"

# measure TOOL VARIANT PAGES LOG SETUP CMD...: $rounds timed runs, each after `eval SETUP`
# (e.g. deleting the caches for a cold build); the fastest one becomes a row in $results (this
# machine is shared: noise, above all in file-system time, only ever adds).
measure() {
    local tool="$1" variant="$2" pages="$3" log="$4" setup="$5"; shift 5
    local tf="$work/time.out" best="" r
    for r in $(seq "$rounds"); do
        eval "$setup"
        if ! /usr/bin/time -f "%e %U %S %M" -o "$tf" "$@" > "$log" 2>&1; then
            echo "FAILED: $tool $variant $pages (log: $log)" >&2
            tail -20 "$log" >&2
            exit 1
        fi
        local line
        line="$(tail -1 "$tf")"
        if [ -z "$best" ] || [ "$(echo "${line%% *} < ${best%% *}" | bc)" = 1 ]; then
            best="$line"
        fi
    done
    read -r wall user sys rss <<< "$best"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$variant" "$pages" "$wall" "$user" "$sys" "$rss" >> "$results"
    printf '  %-14s %-7s %5s pages: %7.2f s wall, %7.2f s CPU, %6.0f MB\n' \
        "$tool" "$variant" "$pages" "$wall" "$(echo "$user + $sys" | bc)" "$(echo "$rss / 1024" | bc)"
}

if [ "$book" -gt 0 ]; then
    site="$work/book-$book/attnbook"
    bookdir="$work/book-$book/mdbook"
    python3 bench/build/gen_corpus.py "$site" --pages "$book" --unique-math --book --format attnbook
    python3 bench/build/gen_corpus.py "$bookdir" --pages "$book" --unique-math --book --format mdbook
    measure attnbook-cold book "$book" "$work/book-$book/attnbook-cold.log" \
        'rm -rf "$site/.attnbook" "$site/public"' "$attnbook" --root "$site" build
    if grep -qiE '^(warning|error)' "$work/book-$book/attnbook-cold.log"; then
        echo "attnbook reported problems on the book:" >&2
        grep -iE '^(warning|error)' "$work/book-$book/attnbook-cold.log" | head >&2
        exit 1
    fi
    measure attnbook-warm book "$book" "$work/book-$book/attnbook-warm.log" \
        : "$attnbook" --root "$site" build
    measure mdbook book "$book" "$work/book-$book/mdbook.log" 'rm -rf "$bookdir/book"' \
        mdbook build "$bookdir"
fi

declare -A md_prev_wall md_prev_pages
for n in $sizes; do
    for variant in unique nomath; do
        flag=--unique-math
        [ "$variant" = nomath ] && flag=--no-math
        site="$work/$variant-$n/attnbook"
        book="$work/$variant-$n/mdbook"
        python3 bench/build/gen_corpus.py "$site" --pages "$n" $flag --format attnbook
        python3 bench/build/gen_corpus.py "$book" --pages "$n" $flag --format mdbook

        measure attnbook-cold "$variant" "$n" "$work/$variant-$n/attnbook-cold.log" \
            'rm -rf "$site/.attnbook" "$site/public"' "$attnbook" --root "$site" build
        # The build must be clean: no warnings (a KaTeX error would be one).
        if grep -qiE '^(warning|error)' "$work/$variant-$n/attnbook-cold.log"; then
            echo "attnbook reported problems on the corpus:" >&2
            grep -iE '^(warning|error)' "$work/$variant-$n/attnbook-cold.log" | head >&2
            exit 1
        fi
        measure attnbook-warm "$variant" "$n" "$work/$variant-$n/attnbook-warm.log" \
            : "$attnbook" --root "$site" build

        if [ "$variant" = nomath ]; then
            # The same corpus the way Zola builds by default: no search index, no highlighting.
            bare="$work/bare-$n/attnbook"
            python3 bench/build/gen_corpus.py "$bare" --pages "$n" --no-math --format attnbook --bare
            measure attnbook-cold bare "$n" "$work/bare-$n-cold.log" \
                'rm -rf "$bare/.attnbook" "$bare/public"' "$attnbook" --root "$bare" build
            measure attnbook-warm bare "$n" "$work/bare-$n-warm.log" : "$attnbook" --root "$bare" build
        fi

        prev="${md_prev_wall[$variant]:-}"
        if [ -n "$prev" ]; then
            estimate=$(echo "$prev * $n / ${md_prev_pages[$variant]}" | bc)
            if [ "$estimate" -gt "$mdbook_limit" ]; then
                echo "  mdbook         $variant $n pages: SKIPPED (estimated ${estimate} s > ${mdbook_limit} s)"
                printf 'mdbook\t%s\t%s\tskipped\t%s\t\t\n' "$variant" "$n" "$estimate" >> "$results"
                continue
            fi
        fi
        measure mdbook "$variant" "$n" "$work/$variant-$n/mdbook.log" 'rm -rf "$book/book"' \
            mdbook build "$book"
        md_prev_wall[$variant]=$(tail -1 "$results" | cut -f4)
        md_prev_pages[$variant]=$n
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
python3 bench/build/report.py "$results"
