#!/usr/bin/env bash
# Vendor KaTeX's stylesheet and woff2 fonts into static/katex/.
#
# Usage: scripts/vendor-katex.sh [VERSION]        (default: 0.16.4)
#
# The `katex` Rust crate (0.4.6) renders formulas with the KaTeX 0.16.4 engine it bundles, so the
# CSS and fonts served to readers must come from that same release: later KaTeX versions renamed
# classes (`base`, `strut`, `sizing`, `accent`, ...) that the crate's HTML uses.
#
# What it does, reproducibly and idempotently (same version in, same bytes out):
#   1. `npm pack katex@VERSION` from the npm registry (npm checks the registry's integrity hash;
#      for the default version the tarball is also checked against a pinned sha512);
#   2. copies dist/katex.min.css, dist/fonts/*.woff2 and LICENSE;
#   3. adds `font-display: swap` to every @font-face, so a loading math font does not hold back
#      the text, and rewrites every @font-face `src` list to keep only its woff2 entries, since the woff and
#      ttf files are not shipped (a link checker crawls the CSS), and checks that every url() in
#      the result names a file that exists;
#   4. writes static/katex/README.md, then swaps the new directory in place of the old one.
#
# Needs: bash, npm (and so node), tar, perl, sha512sum, base64.
set -euo pipefail

readonly DEFAULT_VERSION="0.16.4"
# `npm view katex@0.16.4 dist.integrity`
readonly PINNED_INTEGRITY_0_16_4="sha512-WudRKUj8yyBeVDI4aYMNxhx5Vhh2PjpzQw1GRu/LVGqL4m1AxwD1GcUp0IMbdJaf5zsjtj8ghP0DOQRYhroNkw=="

version="${1:-$DEFAULT_VERSION}"
if [[ $# -gt 1 ]]; then
    echo "usage: $0 [VERSION]" >&2
    exit 2
fi
if ! [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
    echo "error: '$version' is not an exact version like $DEFAULT_VERSION" >&2
    exit 2
fi
if [[ $version != "$DEFAULT_VERSION" ]]; then
    echo "warning: vendoring KaTeX $version, but the katex crate renders with $DEFAULT_VERSION;" \
        "class names differ between releases" >&2
fi

for tool in npm node tar perl sha512sum base64; do
    command -v "$tool" >/dev/null || { echo "error: '$tool' not found in PATH" >&2; exit 2; }
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/static/katex"
mkdir -p "$root/static"

work="$(mktemp -d)"
staging="$(mktemp -d "$root/static/.katex-staging.XXXXXX")"
cleanup() { rm -rf "$work" "$staging" "$dest.old"; }
trap cleanup EXIT

# 1. Fetch the package tarball.
echo "fetching katex@$version from the npm registry" >&2
(cd "$work" && npm pack "katex@$version" --silent >/dev/null)
tarball="$work/katex-$version.tgz"
[[ -f $tarball ]] || { echo "error: npm pack did not produce $tarball" >&2; exit 1; }

# sha512sum prints hex; npm's integrity strings are base64.
integrity="sha512-$(sha512sum "$tarball" | cut -d' ' -f1 | perl -ne 'chomp; print pack("H*", $_)' | base64 -w0)"
if [[ $version == "$DEFAULT_VERSION" && $integrity != "$PINNED_INTEGRITY_0_16_4" ]]; then
    echo "error: katex-$version.tgz integrity mismatch" >&2
    echo "  expected $PINNED_INTEGRITY_0_16_4" >&2
    echo "  got      $integrity" >&2
    exit 1
fi

tar -xzf "$tarball" -C "$work"
pkg="$work/package"
pkg_version="$(node -p 'require(process.argv[1]).version' "$pkg/package.json")"
if [[ $pkg_version != "$version" ]]; then
    echo "error: package.json says version $pkg_version, expected $version" >&2
    exit 1
fi

# 2. Copy the files we ship.
mkdir -p "$staging/fonts"
install -m 0644 "$pkg/LICENSE" "$staging/LICENSE"
shopt -s nullglob
fonts=("$pkg"/dist/fonts/*.woff2)
shopt -u nullglob
[[ ${#fonts[@]} -gt 0 ]] || { echo "error: no woff2 fonts in the package" >&2; exit 1; }
install -m 0644 "${fonts[@]}" "$staging/fonts/"

# 3. Keep only the woff2 entries of each @font-face src list (order-independent), and let text
#    show in a fallback font while a math font loads (font-display: swap; KaTeX sets none).
perl -0777 -pe '
    s{src:([^;\}]*)}{
        my @keep = grep { /\.woff2["\x27]?\)/ } split /,(?=\s*url\()/, $1;
        die "a \@font-face src list has no woff2 entry: $1\n" unless @keep;
        "src:" . join(",", @keep)
    }ge;
    s{\@font-face\{}{\@font-face\{font-display:swap;}g;
' "$pkg/dist/katex.min.css" >"$staging/katex.min.css"
chmod 0644 "$staging/katex.min.css"

# Every url() left must be a shipped woff2 file.
bad=0
while IFS= read -r url; do
    case "$url" in
        *.woff2) [[ -f "$staging/$url" ]] || { echo "error: CSS references missing $url" >&2; bad=1; } ;;
        *) echo "error: CSS still references $url" >&2; bad=1 ;;
    esac
done < <(perl -ne 'while (/url\(\s*["\x27]?([^"\x27)]+)["\x27]?\s*\)/g) { print "$1\n" }' "$staging/katex.min.css")
[[ $bad -eq 0 ]] || exit 1
referenced="$(grep -o 'url([^)]*\.woff2)' "$staging/katex.min.css" | sort -u | wc -l)"
if [[ $referenced -ne ${#fonts[@]} ]]; then
    echo "warning: the CSS references $referenced woff2 files, the package has ${#fonts[@]}" >&2
fi

# 4. README, then swap into place.
cat >"$staging/README.md" <<EOF
# Vendored KaTeX $version

These files are copied unmodified from the npm package
[\`katex@$version\`](https://www.npmjs.com/package/katex/v/$version)
(tarball integrity \`$integrity\`), except for \`katex.min.css\`:

| file | source in the package |
| --- | --- |
| \`katex.min.css\` | \`dist/katex.min.css\`, with each \`@font-face\` \`src\` list reduced to its \`.woff2\` entry and \`font-display: swap\` added |
| \`fonts/*.woff2\` | \`dist/fonts/*.woff2\` (the \`.woff\` and \`.ttf\` files are not shipped) |
| \`LICENSE\` | \`LICENSE\` (MIT, Khan Academy and other contributors) |

Formulas are rendered at build time by the \`katex\` Rust crate, which bundles the KaTeX $DEFAULT_VERSION
engine; this stylesheet must come from the same release, because later KaTeX versions renamed
classes that the crate's HTML uses. No KaTeX JavaScript is served.

To refresh (or check) the files, run from the repository root:

\`\`\`sh
scripts/vendor-katex.sh            # KaTeX $DEFAULT_VERSION
scripts/vendor-katex.sh X.Y.Z      # another release: only together with a katex crate that bundles it
\`\`\`

The script is idempotent: running it again for the same version reproduces these files byte for
byte (\`git status\` stays clean). Do not edit the files here by hand.
EOF
chmod 0644 "$staging/README.md"

if [[ -e $dest ]]; then
    mv "$dest" "$dest.old"
fi
mv "$staging" "$dest"
chmod 0755 "$dest" "$dest/fonts"
rm -rf "$dest.old"

echo "vendored KaTeX $version into ${dest#"$root"/}: katex.min.css, ${#fonts[@]} woff2 fonts" \
    "($referenced referenced), LICENSE, README.md" >&2
