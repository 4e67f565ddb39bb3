#!/usr/bin/env bash
# Real-browser checks of the series: build it under the sub-path /series/, serve it, drive Debian's
# Chromium through playwright-core (tests/browser/run.mjs); axe-core checks every page's accessibility.
#
#   cargo build --release && bash tests/browser/run.sh
#   BROWSER_ONLY='^(nav|previews)' bash tests/browser/run.sh    # only the checks so named
#
# Needs: target/release/attnbook (under $CARGO_TARGET_DIR when set), Node >= 20 with npm, /usr/bin/chromium (apt-get install -y chromium;
# or set CHROMIUM_PATH). Screenshots land in tests/browser/screenshots/ (git-ignored).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
chromium="${CHROMIUM_PATH:-/usr/bin/chromium}"
bin="${CARGO_TARGET_DIR:-$root/target}/release/attnbook"

die() { echo "tests/browser/run.sh: $*" >&2; exit 2; }

[ -x "$chromium" ] || die "$chromium not found: install Debian's Chromium (apt-get install -y chromium) or set CHROMIUM_PATH"
command -v node >/dev/null || die "node not found (Node >= 20 is needed)"
command -v npm >/dev/null || die "npm not found"
node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' \
  || die "Node $(node --version) is too old: playwright-core needs Node >= 20"
[ -x "$bin" ] || die "$bin not found: run 'cargo build --release' first"

work="$(mktemp -d "${TMPDIR:-/tmp}/attnbook-browser.XXXXXX")"
trap 'rm -rf "$work"' EXIT
site="$work/site"

echo "== building the series into $site (base URL http://127.0.0.1/series/)"
"$bin" --root "$root" build --base-url http://127.0.0.1/series/ --out "$site" \
  || die "building the series failed (see above); no browser check ran"

# The pages must reference the sub-path, not the domain root.
grep -q 'href="/series/style.css"' "$site/index.html" \
  || die "index.html does not reference /series/style.css: --base-url's path is not applied"
if grep -Eq '(href|src)="/(style\.css|attnbook\.js|katex/)' "$site/index.html"; then
  die "index.html references assets at the domain root instead of /series/"
fi

if [ ! -d "$here/node_modules/playwright-core" ] || [ ! -f "$here/node_modules/axe-core/axe.min.js" ] \
  || [ ! -f "$here/node_modules/pdfjs-dist/legacy/build/pdf.mjs" ] || [ ! -d "$here/node_modules/lighthouse" ]; then
  echo "== npm ci (tests/browser)"
  npm ci --prefix "$here" --no-audit --no-fund --loglevel=error >/dev/null
fi

# A fixture whose quotes are recorded in a folded block, on a hidden line and in a hide block.
provenance="$work/provenance"
cp -r "$root/tests/fixtures/provenance" "$work/provenance-src"
"$bin" --root "$work/provenance-src" build --base-url http://127.0.0.1/series/ --out "$provenance" \
  || die "building tests/fixtures/provenance failed (see above)"

# The book as a PDF, as the Pages workflow makes it; the checks read it (outline, text, fonts).
echo "== scripts/pdf.mjs: print.html to book.pdf"
CHROMIUM_PATH="$chromium" node "$root/scripts/pdf.mjs" "$site" || die "scripts/pdf.mjs failed (see above)"

echo "== browser checks"
node "$here/run.mjs" "$site" "$provenance"
