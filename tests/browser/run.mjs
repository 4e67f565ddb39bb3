#!/usr/bin/env node
/*
 * Real-browser checks of a built attnbook site.
 *
 *   node tests/browser/run.mjs SITE_DIR [PROVENANCE_SITE_DIR]
 *   BROWSER_ONLY='^(nav|previews)' node tests/browser/run.mjs ...   # only the checks named so
 *
 * PROVENANCE_SITE_DIR, if given, is tests/fixtures/provenance built the same way: its quotes
 * are recorded in a folded block, on a hidden `# ` line and in a `hide` block, which the series
 * itself may not have; it is served by a second server.
 *
 * SITE_DIR must have been built with a base URL whose path is /series/ (tests/browser/run.sh does
 * that). A static HTTP server (node:http, no dependency) serves it on 127.0.0.1 at an ephemeral
 * port under /series/ only, like a GitHub Pages project site: anything outside /series/ is a plain
 * 404, a missing page inside it gets the site's 404.html with status 404. Debian's Chromium
 * (/usr/bin/chromium, or $CHROMIUM_PATH) is driven through playwright-core; no browser download.
 *
 * The checks test the product: pages, math, charts, links, theme, TOC, phone layout, search
 * relevance (the first result of each query is the chapter about it), axe-core over every page
 * (tests/browser/node_modules/axe-core, injected into each page; no violation allowed) and the
 * print page, printed to PDF. The server is the harness: it is checked once as a precondition.
 *
 * Output: one line per check (`ok - name`, `not ok - name: reason`), then
 * `N passed, M failed`. Exit status 1 if any check failed, 2 on a harness error (the server's
 * precondition included).
 * Screenshots go to tests/browser/screenshots/ (git-ignored).
 */

import http from "node:http";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import zlib from "node:zlib";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PREFIX = "/series/";
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
// axe-core over every page, twice, and Lighthouse over every chapter take most of it.
const GLOBAL_TIMEOUT_MS = Number(process.env.BROWSER_TEST_TIMEOUT_MS || 2_400_000);
const SCREENSHOT_DIR = path.join(HERE, "screenshots");
const LAUNCH_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const MIN_VISIBLE_KATEX = 10; // per chapter page
const DESKTOP = { width: 1280, height: 900 };
const NARROW = { width: 390, height: 844 };
const PHONE = { width: 360, height: 800 };
const PHONE_LABEL_MIN = 5; // CSS px, the smallest chart label on a 360-px phone (see its check)
// Queries and the chapter (and section, where one section is plainly about it) that must come
// first: what a reader typing them is looking for.
const SEARCH_QUERIES = [
  { query: "置换等变", slug: "qkv", section: "permutation" },
  { query: "覆盖度", slug: "bahdanau", section: "coverage" },
  { query: "输入馈送", slug: "luong", section: "input-feeding" },
  { query: "瓶颈", slug: "bottleneck" },
  { query: "缩放点积", slug: "scaled-dot-product" },
  { query: "多头注意力", slug: "multi-head" },
];
const CJK = /[\u3400-\u4dbf\u4e00-\u9fff]/;
// Lighthouse's mobile performance score (0-100) each chapter and the print page must reach: a
// generous bound, since CI shares its machine; docs/performance.md has a quiet run's figures.
const LIGHTHOUSE_MIN_CHAPTER = Number(process.env.LIGHTHOUSE_MIN_CHAPTER || 30);
const LIGHTHOUSE_MIN_PRINT = Number(process.env.LIGHTHOUSE_MIN_PRINT || 10);
// Most cumulative layout shift a page may show in the same runs. The chapter header's lines
// were laid out first at content-visibility's placeholder height (style.css), which moved
// the title and all under it: 0.076 on ch. 11, 0.033 on the glossary, 0.021 on ch. 9; at most
// 0.010 on every page since.
const LIGHTHOUSE_MAX_CLS = 0.02;

// ------------------------------------------------------------------------------------------------
// Static server
// ------------------------------------------------------------------------------------------------

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".xml": "application/xml; charset=utf-8",
  ".svg": "image/svg+xml; charset=utf-8",
  ".woff2": "font/woff2",
  ".woff": "font/woff",
  ".ttf": "font/ttf",
  ".otf": "font/otf",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".avif": "image/avif",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
  ".md": "text/markdown; charset=utf-8",
  ".wasm": "application/wasm",
};

function contentType(file) {
  const base = path.basename(file);
  if (base === "atom.xml" || base.endsWith(".atom")) return "application/atom+xml; charset=utf-8";
  if (base.endsWith(".rss")) return "application/rss+xml; charset=utf-8";
  return TYPES[path.extname(base).toLowerCase()] || "application/octet-stream";
}

async function statOrNull(p) {
  try {
    return await fsp.stat(p);
  } catch {
    return null;
  }
}

/** Serves `root` under PREFIX. Resolves to { server, origin, served }. */
function startServer(root) {
  const served = []; // { path, status, type } of every response, for checks on fonts etc.
  const server = http.createServer(async (req, res) => {
    const send = (status, type, body, extra = {}) => {
      served.push({ path: req.url, status, type });
      const headers = { "Cache-Control": "no-cache", ...extra };
      if (type) headers["Content-Type"] = type;
      if (body != null) headers["Content-Length"] = Buffer.byteLength(body);
      res.writeHead(status, headers);
      res.end(req.method === "HEAD" ? undefined : body);
    };
    const plain404 = () => send(404, "text/plain; charset=utf-8", "not found\n");
    try {
      if (req.method !== "GET" && req.method !== "HEAD") {
        return send(405, "text/plain; charset=utf-8", "method not allowed\n", { Allow: "GET, HEAD" });
      }
      const url = new URL(req.url, "http://127.0.0.1");
      let pathname;
      try {
        pathname = decodeURIComponent(url.pathname);
      } catch {
        return plain404();
      }
      if (pathname === PREFIX.slice(0, -1)) {
        return send(301, "text/plain; charset=utf-8", "moved\n", { Location: PREFIX + url.search });
      }
      if (!pathname.startsWith(PREFIX)) return plain404();
      const rel = pathname.slice(PREFIX.length);
      if (rel.includes("\0") || rel.split("/").some((s) => s === ".." || s === ".")) return plain404();
      let file = path.join(root, ...rel.split("/").filter(Boolean));
      let st = await statOrNull(file);
      if (st && st.isDirectory()) {
        if (!pathname.endsWith("/")) {
          return send(301, "text/plain; charset=utf-8", "moved\n", {
            Location: url.pathname + "/" + url.search,
          });
        }
        file = path.join(file, "index.html");
        st = await statOrNull(file);
      }
      if (!st || !st.isFile()) {
        // Like GitHub Pages: the site's own 404 page, with status 404.
        const page404 = path.join(root, "404.html");
        if (fs.existsSync(page404)) return send(404, TYPES[".html"], await fsp.readFile(page404));
        return plain404();
      }
      // Text gzipped when the client takes it, as GitHub Pages serves it (Lighthouse's
      // simulated phone network counts the bytes on the wire).
      const type = contentType(file);
      const body = await fsp.readFile(file);
      if (/gzip/.test(req.headers["accept-encoding"] || "") && /^(text\/|application\/(json|xml|atom)|image\/svg)/.test(type)) {
        return send(200, type, zlib.gzipSync(body), { "Content-Encoding": "gzip", Vary: "Accept-Encoding" });
      }
      return send(200, type, body);
    } catch (e) {
      return send(500, "text/plain; charset=utf-8", `server error: ${e.message}\n`);
    }
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({ server, origin: `http://127.0.0.1:${port}`, served });
    });
  });
}

// ------------------------------------------------------------------------------------------------
// Check bookkeeping
// ------------------------------------------------------------------------------------------------

const results = { passed: 0, failed: 0 };
let finished = false; // set by the global timeout: later results are not reported

function oneLine(s) {
  return String(s).replace(/\s*\n\s*/g, " | ").slice(0, 1500);
}

function assert(cond, message) {
  if (!cond) throw new Error(message);
}

// BROWSER_ONLY=regex runs only the checks whose name matches (while developing; CI runs all).
const ONLY = process.env.BROWSER_ONLY ? new RegExp(process.env.BROWSER_ONLY) : null;

async function check(name, fn) {
  if (finished) return;
  if (ONLY && !ONLY.test(name)) return;
  try {
    await fn();
    if (finished) return;
    results.passed++;
    console.log(`ok - ${name}`);
  } catch (e) {
    if (finished) return;
    results.failed++;
    const msg = e && e.message ? e.message.split("\nCall log:")[0] : String(e);
    console.log(`not ok - ${name}: ${oneLine(msg)}`);
  }
}

// ------------------------------------------------------------------------------------------------
// Browser helpers
// ------------------------------------------------------------------------------------------------

/** Collects everything that went wrong while a page was open. */
function watch(page) {
  const problems = [];
  page.on("console", (m) => {
    if (m.type() === "error") {
      const loc = m.location();
      problems.push(`console error: ${m.text()}${loc && loc.url ? ` (${loc.url}:${loc.lineNumber})` : ""}`);
    }
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => {
    const error = r.failure() ? r.failure().errorText : "?";
    // A navigation (opening a search result) cancels the old page's pending requests: that is
    // the browser's doing, not a broken resource.
    if (error === "net::ERR_ABORTED") return;
    problems.push(`request failed: ${r.url()} (${error})`);
  });
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.url()}`);
  });
  return problems;
}

async function goto(page, url, expectStatus = 200) {
  const resp = await page.goto(url, { waitUntil: "load" });
  assert(resp, `no response for ${url}`);
  assert(resp.status() === expectStatus, `${url}: HTTP ${resp.status()}, expected ${expectStatus}`);
  await page.evaluate(() => document.fonts.ready.then(() => undefined));
  await boxesMeasured(page);
  return resp;
}

/** attnbook.js measures the scrolling boxes for their tab stops in idle time (off-screen ones
 *  are laid out lazily; html[data-boxes] is "measuring" meanwhile): the page is ready for the
 *  keyboard, and for axe, when it is done. The print page has thousands of boxes: under load
 *  it takes a minute. */
async function boxesMeasured(page) {
  await page
    .waitForFunction(() => document.documentElement.getAttribute("data-boxes") !== "measuring", null, { timeout: 120000 })
    .catch(() => {});
}

/** Waits until fn() returns the same JSON twice in a row (e.g. after a smooth scroll). */
async function settle(page, fn, arg, { interval = 100, timeout = 5000 } = {}) {
  const end = Date.now() + timeout;
  let prev = JSON.stringify(await page.evaluate(fn, arg));
  for (;;) {
    await page.waitForTimeout(interval);
    const cur = JSON.stringify(await page.evaluate(fn, arg));
    if (cur === prev || Date.now() > end) return JSON.parse(cur);
    prev = cur;
  }
}

/** Scrolls the element into view and waits until it stands still. After a jump deep into a page
 *  the browser lays out the lazy boxes near the screen (style.css: content-visibility: auto),
 *  and their real heights move what is below them for a moment: a pointer aimed at once lands
 *  on something else (a reader aims where the link stands). */
async function scrollToStill(page, locator) {
  await locator.scrollIntoViewIfNeeded();
  const handle = await locator.elementHandle();
  await settle(page, (el) => Math.round(el.getBoundingClientRect().top), handle, { interval: 250 });
  await locator.scrollIntoViewIfNeeded();
}

async function pollUntil(fn, timeout = 5000, interval = 100) {
  const end = Date.now() + timeout;
  for (;;) {
    const v = await fn();
    if (v || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, interval));
  }
}

function luminance(rgb) {
  const m = String(rgb).match(/\d+(\.\d+)?/g);
  if (!m || m.length < 3) return NaN;
  const [r, g, b] = m.slice(0, 3).map(Number);
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

// In-page: a short, greppable description of an element.
const DESCRIBE_FN = `
  (el) => {
    let s = el.tagName.toLowerCase();
    if (el.id) s += '#' + el.id;
    const cls = typeof el.className === 'string' ? el.className : (el.className && el.className.baseVal) || '';
    if (cls.trim()) s += '.' + cls.trim().split(/\\s+/).slice(0, 3).join('.');
    let p = el.parentElement, chain = [];
    while (p && chain.length < 3 && p !== document.body) {
      let q = p.tagName.toLowerCase();
      if (p.id) q += '#' + p.id;
      else if (typeof p.className === 'string' && p.className.trim()) q += '.' + p.className.trim().split(/\\s+/)[0];
      chain.unshift(q);
      if (p.id) break;
      p = p.parentElement;
    }
    const copy = el.cloneNode(true);
    copy.querySelectorAll && copy.querySelectorAll('.katex-mathml').forEach((m) => m.remove());
    const text = (copy.textContent || '').replace(/\\s+/g, ' ').trim().slice(0, 50);
    return (chain.length ? chain.join(' > ') + ' > ' : '') + s + (text ? ' "' + text + '"' : '');
  }
`;

// In-page: the bound quotes of a page, each with its link, and the quotes that do not link.
const QUOTES_FN = `
  () => {
    const quotes = [...document.querySelectorAll("article .quote:not(.unbound)")];
    const unlinked = quotes.filter((q) => q.tagName !== "A" || !q.getAttribute("href"));
    const where = (line) => {
      if (!line) return "missing";
      if (line.closest(".source-only")) return "hide block";
      if (line.closest(".boring")) return "hidden line";
      if (line.closest("details.fold:not([open])")) return "folded block";
      return "shown line";
    };
    const linked = quotes.filter((q) => q.tagName === "A" && (q.getAttribute("href") || "").startsWith("#L"));
    return {
      count: quotes.length,
      unlinked: unlinked.map((q) => q.outerHTML.slice(0, 120)),
      local: linked.map((q, i) => ({ index: i, href: q.getAttribute("href"), where: where(document.getElementById(q.getAttribute("href").slice(1))) })),
    };
  }
`;

/**
 * Clicks the `index`-th quote of the page that links within it (or taps it on a touch screen:
 * `tap` shows the tip first, whose link is then tapped) and checks that the line it names ends
 * up marked `is-target`, rendered and inside the viewport.
 */
async function followQuote(page, index, { tap = false } = {}) {
  const quote = page.locator("article a.quote[href^='#L']").nth(index);
  const href = await quote.getAttribute("href");
  const hashBefore = await page.evaluate(() => location.hash);
  // Deep in a page the lazy boxes above a quote are still being laid out when it first
  // scrolls into view: aim once it stands still, as a reader does.
  await scrollToStill(page, quote);
  if (tap) {
    await quote.tap();
    const tip = page.locator(".quote-tip");
    await tip.waitFor({ state: "visible", timeout: 3000 });
    const text = await tip.textContent();
    assert(/实验值/.test(text), `the tip shows the hover text, got "${text}"`);
    const hashAfterTap = await page.evaluate(() => location.hash);
    assert(hashAfterTap === hashBefore, `the first tap followed the link (hash ${hashAfterTap})`);
    await tip.locator("a").tap();
  } else {
    await quote.click();
  }
  const state = await pollUntil(async () => {
    const s = await page.evaluate((id) => {
      const line = document.getElementById(id);
      if (!line) return { missing: true };
      const r = line.getBoundingClientRect();
      return {
        target: line.classList.contains("is-target"),
        visible: line.checkVisibility ? line.checkVisibility() : r.width > 0,
        inView: r.width > 0 && r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight,
        hash: location.hash,
        background: getComputedStyle(line).backgroundColor,
      };
    }, href.slice(1));
    return s.missing || (s.target && s.visible && s.inView) ? s : null;
  }, 5000) || (await page.evaluate((id) => {
    const line = document.getElementById(id);
    const r = line ? line.getBoundingClientRect() : null;
    return { target: !!line && line.classList.contains("is-target"), visible: !!line && line.checkVisibility(), rect: r && [r.top, r.bottom, r.width] };
  }, href.slice(1)));
  assert(!state.missing, `${href}: no element with that id`);
  assert(state.target && state.visible && state.inView, `${href}: line not highlighted and visible: ${JSON.stringify(state)}`);
  assert(state.background !== "rgba(0, 0, 0, 0)", `${href}: the highlighted line has no background`);
  return href;
}


/**
 * Precondition: the harness's server routes the sub-path like GitHub Pages and sends the types
 * a browser needs. Throws a HarnessError; the product is tested by the checks.
 */
async function harnessSelfTest(origin, chapters) {
  try {
    const get = (p) =>
      new Promise((resolve, reject) => {
        const req = http.get(origin + p, (res) => {
          res.resume();
          res.on("end", () => resolve({ status: res.statusCode, type: res.headers["content-type"] || "", loc: res.headers.location }));
        });
        req.on("error", reject);
      });
    const expect = async (p, status, typeRe) => {
      const r = await get(p);
      assert(r.status === status, `GET ${p}: HTTP ${r.status}, expected ${status}`);
      if (typeRe) assert(typeRe.test(r.type), `GET ${p}: Content-Type "${r.type}" does not match ${typeRe}`);
      return r;
    };
    await expect("/", 404);
    await expect("/index.html", 404);
    await expect("/style.css", 404);
    const r = await expect("/series", 301);
    assert(r.loc === PREFIX, `/series redirects to ${r.loc}`);
    await expect("/series/../index.html", 404);
    await expect(PREFIX, 200, /^text\/html/);
    await expect(`${PREFIX}style.css`, 200, /^text\/css/);
    await expect(`${PREFIX}attnbook.js`, 200, /^text\/javascript/);
    await expect(`${PREFIX}favicon.svg`, 200, /^image\/svg\+xml/);
    await expect(`${PREFIX}atom.xml`, 200, /^application\/atom\+xml/);
    await expect(`${PREFIX}sitemap.xml`, 200, /^application\/xml/);
    await expect(`${PREFIX}katex/fonts/KaTeX_Main-Regular.woff2`, 200, /^font\/woff2$/);
    if (chapters.length) {
      const c = chapters[0];
      await expect(`${PREFIX}${c}/`, 200, /^text\/html/);
      const red = await expect(`${PREFIX}${c}`, 301);
      assert(red.loc === `${PREFIX}${c}/`, `${PREFIX}${c} redirects to ${red.loc}`);
    }
    await expect(`${PREFIX}no-such-page/`, 404, /^text\/html/);
  } catch (e) {
    throw new HarnessError(`the test server is broken, so no browser check ran: ${e.message}`);
  }
}

class HarnessError extends Error {}

/** Every HTML page of the built site, relative to it (KaTeX's files aside). */
function htmlPages(root) {
  return fs
    .readdirSync(root, { recursive: true })
    .map((f) => String(f))
    .filter((f) => f.endsWith(".html") && !f.startsWith("katex"))
    .sort();
}

/** The chapters' slugs in series order, as the index lists them. */
function seriesOrder(root) {
  const index = fs.readFileSync(path.join(root, "index.html"), "utf8");
  return [...index.matchAll(/<a class="chapter-link" href="\/series\/([^/"]+)\/"/g)].map((m) => m[1]);
}

let axeSource = null;

/** axe-core's violations on the open page: its source injected as a script, then run. */
async function axeViolations(page, options) {
  if (axeSource === null) {
    const file = path.join(HERE, "node_modules", "axe-core", "axe.min.js");
    assert(fs.existsSync(file), `${file} not found: run npm ci in tests/browser (run.sh does)`);
    axeSource = await fsp.readFile(file, "utf8");
  }
  await boxesMeasured(page);
  await page.evaluate(axeSource);
  return page.evaluate((opts) => window.axe.run(document, opts).then((r) => r.violations), options);
}


// ------------------------------------------------------------------------------------------------
// The checks
// ------------------------------------------------------------------------------------------------

async function discover(siteDir) {
  assert(fs.existsSync(path.join(siteDir, "index.html")), `${siteDir}/index.html does not exist`);
  const chapters = [];
  for (const ent of await fsp.readdir(siteDir, { withFileTypes: true })) {
    if (!ent.isDirectory()) continue;
    const f = path.join(siteDir, ent.name, "index.html");
    if (!fs.existsSync(f)) continue;
    const html = await fsp.readFile(f, "utf8");
    // Appendix pages (the glossary) are not chapters: no experiments, math or feed entry.
    if (/<article class="chapter"/.test(html) && !/class="chapter-number">附录</.test(html)) {
      chapters.push(ent.name);
    }
  }
  chapters.sort();
  return chapters;
}

async function main() {
  const siteDir = process.argv[2];
  const provenanceRoot = process.argv[3] ? path.resolve(process.argv[3]) : null;
  const extraServers = [];
  if (!siteDir) {
    console.error("usage: node tests/browser/run.mjs SITE_DIR");
    process.exit(2);
  }
  if (!fs.existsSync(CHROMIUM)) {
    console.error(
      `error: ${CHROMIUM} not found. Install Debian's Chromium: apt-get install -y chromium ` +
        `(or set CHROMIUM_PATH).`,
    );
    process.exit(2);
  }
  const root = path.resolve(siteDir);
  const t0 = Date.now();

  let server, browser;
  // Lighthouse's own browser, killed by the clean-up too, so a global timeout leaves none behind.
  let lighthouseChrome = null;
  let timedOut = false;
  let harnessBroken = false;
  const cleanup = async () => {
    if (browser) await browser.close().catch(() => {});
    browser = null;
    if (lighthouseChrome) await Promise.resolve(lighthouseChrome.kill()).catch(() => {});
    lighthouseChrome = null;
    for (const extra of extraServers.splice(0)) {
      extra.closeAllConnections?.();
      await new Promise((r) => extra.close(() => r()));
    }
    if (server) {
      server.closeAllConnections?.();
      await new Promise((r) => server.close(() => r()));
    }
    server = null;
  };
  const timer = setTimeout(async () => {
    timedOut = true;
    finished = true;
    console.log(`not ok - global timeout: the run took longer than ${GLOBAL_TIMEOUT_MS / 1000}s`);
    results.failed++;
    printSummary();
    await Promise.race([cleanup(), new Promise((r) => setTimeout(r, 10_000))]);
    process.exit(1);
  }, GLOBAL_TIMEOUT_MS);
  for (const sig of ["SIGINT", "SIGTERM"]) {
    process.on(sig, async () => {
      await Promise.race([cleanup(), new Promise((r) => setTimeout(r, 5_000))]);
      process.exit(130);
    });
  }

  try {
    const chapters = await discover(root);
    const s = await startServer(root);
    server = s.server;
    const { origin, served } = s;
    const base = origin + PREFIX;
    const pageUrl = (slug) => (slug === "index" ? base : `${base}${slug}/`);
    console.log(`# site ${root} served at ${base}`);
    console.log(`# chapters: ${chapters.join(", ") || "(none)"}`);

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: LAUNCH_ARGS,
      timeout: 60_000,
    });
    console.log(`# chromium ${browser.version()}, playwright-core ${await playwrightVersion()}`);

    const newContext = async (opts = {}) => {
      const ctx = await browser.newContext({ viewport: DESKTOP, colorScheme: "light", ...opts });
      ctx.setDefaultTimeout(15_000);
      ctx.setDefaultNavigationTimeout(20_000);
      return ctx;
    };

    // The static server is the harness, not the product: it is checked once as a precondition
    // (a broken harness is exit 2, no check runs), never counted as a passing check.
    await harnessSelfTest(origin, chapters);

    await check("pages: the index links every chapter, under /series/", async () => {
      assert(chapters.length > 0, "no chapter pages (no <slug>/index.html with article.chapter) in the site");
      const ctx = await newContext();
      try {
        const page = await ctx.newPage();
        await goto(page, base);
        const links = await page.evaluate(() =>
          [...document.querySelectorAll("main a[href]")].map((a) => new URL(a.href).pathname),
        );
        const missing = chapters.filter((c) => !links.includes(`/series/${c}/`));
        assert(missing.length === 0, `the index does not link ${missing.map((c) => `/series/${c}/`).join(", ")}`);
      } finally {
        await ctx.close();
      }
    });

    // -------- (a) load, (b) math, (c) charts, plus link collection, on a 1280px viewport
    const linkReport = { pages: {}, urls: new Map() }; // pathname -> ids ; url -> [from pages]
    const cjkInCharts = [];
    {
      const ctx = await newContext();
      try {
        for (const slug of ["index", ...chapters]) {
          const url = pageUrl(slug);
          const page = await ctx.newPage();
          const problems = watch(page);
          let loaded = false;
          await check(`load ${slug}: HTTP 200, no console errors, no failed requests`, async () => {
            await goto(page, url);
            await page.waitForTimeout(200); // late errors from deferred scripts
            loaded = true;
            assert(problems.length === 0, problems.join("; "));
          });
          if (!loaded) {
            await page.close();
            continue;
          }

          // Links and resources: everything that points at the deployment host stays under /series/.
          const refs = await page.evaluate(() => {
            const out = [];
            for (const el of document.querySelectorAll("[href], [src]")) {
              const attr = el.hasAttribute("href") ? "href" : "src";
              const raw = el.getAttribute(attr);
              if (!raw || raw.startsWith("data:") || raw.startsWith("mailto:") || raw.startsWith("javascript:")) continue;
              try {
                out.push({ tag: el.tagName.toLowerCase(), raw, abs: new URL(raw, document.baseURI).href });
              } catch {
                out.push({ tag: el.tagName.toLowerCase(), raw, abs: null });
              }
            }
            return { out, ids: [...document.querySelectorAll("[id]")].map((e) => e.id) };
          });
          linkReport.pages[new URL(url).pathname] = new Set(refs.ids);
          for (const r of refs.out) {
            if (!linkReport.urls.has(r.abs ?? r.raw)) linkReport.urls.set(r.abs ?? r.raw, { ...r, from: [] });
            linkReport.urls.get(r.abs ?? r.raw).from.push(slug);
          }

          if (slug !== "index") {
            await check(`math ${slug}: KaTeX rendered, visible, fonts loaded, no raw TeX`, async () => {
              const m = await page.evaluate(
                ({ describe }) => {
                  const describeEl = eval(describe);
                  const visible = (el) => {
                    const r = el.getBoundingClientRect();
                    return r.width > 0 && r.height > 0;
                  };
                  const inClosedDetails = (el) => {
                    for (let p = el.parentElement; p; p = p.parentElement)
                      if (p.tagName === "DETAILS" && !p.open) return true;
                    return false;
                  };
                  const katex = [...document.querySelectorAll(".katex")].filter((e) => !inClosedDetails(e));
                  const invisible = katex.filter((e) => !visible(e));
                  const displays = [...document.querySelectorAll("div.math-display")].filter((e) => !inClosedDetails(e));
                  const invisibleDisplays = displays.filter((e) => !visible(e) || !e.querySelector(".katex-display"));
                  // With KaTeX's CSS applied, the MathML copy is clipped to 1px.
                  const mathmlShown = [...document.querySelectorAll(".katex .katex-mathml")].filter((e) => {
                    const r = e.getBoundingClientRect();
                    return r.width > 2 || r.height > 2;
                  });
                  const errors = [...document.querySelectorAll(".katex-error, .math-error")].map(describeEl);
                  // Visible prose text (not code, not math) must hold no unrendered TeX.
                  const raw = [];
                  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
                  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
                    const p = n.parentElement;
                    if (!p || p.closest("pre, code, script, style, .katex, svg, textarea")) continue;
                    const t = n.nodeValue;
                    if (!t.includes("$") && !/\\[a-zA-Z]+/.test(t)) continue;
                    if (!p.checkVisibility()) continue;
                    if (t.includes("$$") || /\$[^$]*\\[a-zA-Z]+/.test(t) || /\\(frac|sum|sqrt|mathrm|mathbf|left|right|begin|end|operatorname|top|cdot|times)\b/.test(t))
                      raw.push(describeEl(p) + " :: " + t.trim().slice(0, 60));
                  }
                  const family = (f) => f.family.replace(/["']/g, "");
                  const faces = [...document.fonts];
                  const loadedFaces = faces.filter((f) => family(f).startsWith("KaTeX_") && f.status === "loaded").map((f) => `${family(f)}/${f.style}/${f.weight}`);
                  const errorFaces = faces.filter((f) => family(f).startsWith("KaTeX_") && f.status === "error").map((f) => `${family(f)}/${f.style}/${f.weight}`);
                  const sample = document.querySelector(".katex .mathnormal");
                  return {
                    total: katex.length,
                    visible: katex.length - invisible.length,
                    invisible: invisible.slice(0, 3).map(describeEl),
                    displays: displays.length,
                    invisibleDisplays: invisibleDisplays.slice(0, 3).map(describeEl),
                    mathmlShown: mathmlShown.length,
                    errors: errors.slice(0, 3),
                    raw: raw.slice(0, 3),
                    checkMain: document.fonts.check("16px KaTeX_Main"),
                    checkMath: document.fonts.check("italic 16px KaTeX_Math"),
                    loadedFaces,
                    errorFaces,
                    sampleFont: sample ? getComputedStyle(sample).fontFamily : null,
                  };
                },
                { describe: DESCRIBE_FN },
              );
              const bad = [];
              if (m.visible < MIN_VISIBLE_KATEX)
                bad.push(`only ${m.visible} visible .katex elements (need >= ${MIN_VISIBLE_KATEX}; ${m.total} in the DOM)`);
              if (m.invisible.length)
                bad.push(`${m.total - m.visible} .katex elements with an empty bounding box, e.g. ${m.invisible.join("; ")}`);
              if (m.displays === 0) bad.push("no div.math-display on the page");
              if (m.invisibleDisplays.length) bad.push(`display math not rendered/visible: ${m.invisibleDisplays.join("; ")}`);
              if (m.mathmlShown) bad.push(`${m.mathmlShown} .katex-mathml copies are visible (KaTeX CSS not applied)`);
              if (m.errors.length) bad.push(`KaTeX error boxes: ${m.errors.join("; ")}`);
              if (m.raw.length) bad.push(`raw TeX in the visible text: ${m.raw.join("; ")}`);
              if (!m.checkMain || !m.checkMath) bad.push("document.fonts.check() is false for KaTeX_Main / KaTeX_Math");
              if (!m.loadedFaces.some((f) => f.startsWith("KaTeX_Main/")))
                bad.push(`KaTeX_Main was never loaded (loaded faces: ${m.loadedFaces.join(", ") || "none"})`);
              if (!m.loadedFaces.some((f) => f.startsWith("KaTeX_Math/")))
                bad.push(`KaTeX_Math was never loaded (loaded faces: ${m.loadedFaces.join(", ") || "none"})`);
              if (m.errorFaces.length) bad.push(`KaTeX fonts failed to load: ${m.errorFaces.join(", ")}`);
              if (m.sampleFont && !/KaTeX_Math/.test(m.sampleFont)) bad.push(`.katex .mathnormal uses font-family ${m.sampleFont}`);
              assert(bad.length === 0, bad.join("; "));
            });

            await check(`charts ${slug}: SVG figures and tables visible`, async () => {
              const c = await page.evaluate(
                ({ describe, cjkSource }) => {
                  const describeEl = eval(describe);
                  const cjk = new RegExp(cjkSource);
                  const visible = (el) => {
                    const r = el.getBoundingClientRect();
                    return r.width > 0 && r.height > 0;
                  };
                  const figures = [...document.querySelectorAll("figure.lab-figure")];
                  const svgs = [...document.querySelectorAll("figure.lab-figure svg")].filter(
                    (s) => !s.parentElement.closest("svg"), // outermost svg only
                  );
                  const problems = [];
                  const cjkTexts = [];
                  for (const f of figures) if (!f.querySelector("svg")) problems.push(`${describeEl(f)} has no <svg>`);
                  for (const s of svgs) {
                    const r = s.getBoundingClientRect();
                    if (!(r.width > 0 && r.height > 0)) problems.push(`${describeEl(s.closest("figure"))}: svg has a ${r.width}x${r.height} box`);
                    const texts = [...s.querySelectorAll("text")];
                    if (!texts.length) problems.push(`${describeEl(s.closest("figure"))}: svg has no <text>`);
                    else if (!texts.some(visible)) problems.push(`${describeEl(s.closest("figure"))}: no <text> has a box`);
                    for (const t of texts) if (cjk.test(t.textContent) && visible(t)) cjkTexts.push(t.textContent.trim());
                  }
                  const tables = [...document.querySelectorAll("figure.lab-table table")];
                  for (const t of tables) if (!visible(t) || !t.querySelector("td, th")) problems.push(`${describeEl(t.closest("figure"))}: table not visible`);
                  return { figures: figures.length, svgs: svgs.length, tables: tables.length, problems, cjkTexts: cjkTexts.slice(0, 3) };
                },
                { describe: DESCRIBE_FN, cjkSource: CJK.source },
              );
              if (c.cjkTexts.length) cjkInCharts.push(`${slug}: ${c.cjkTexts.join(" / ")}`);
              assert(c.figures > 0 || c.tables > 0, "no figure.lab-figure or figure.lab-table on the page");
              assert(c.problems.length === 0, c.problems.slice(0, 5).join("; "));
            });
          }
          await page.close();
        }
      } finally {
        await ctx.close();
      }
    }

    // -------- provenance: every bound quote links to its recording line; following one shows it
    {
      const ctx = await newContext();
      try {
        for (const slug of chapters) {
          await check(`provenance ${slug}: every bound quote links; clicking one highlights its line in view`, async () => {
            const page = await ctx.newPage();
            try {
              const problems = watch(page);
              await goto(page, pageUrl(slug));
              const q = await page.evaluate(eval(QUOTES_FN));
              if (q.count === 0) return; // a chapter that quotes nothing has nothing to link
              assert(q.unlinked.length === 0, `quotes without a link: ${q.unlinked.slice(0, 3).join(" | ")}`);
              assert(q.local.length > 0, "no quote links to a line of this page");
              // Prefer a line that hides (a fold, a hidden line, a hide block): the harder case.
              const pick = q.local.find((l) => l.where !== "shown line") || q.local[0];
              assert(pick.where !== "missing", `${pick.href}: no such line on the page`);
              await followQuote(page, pick.index);
              assert(problems.length === 0, problems.join("; "));
            } finally {
              await page.close();
            }
          });
        }
      } finally {
        await ctx.close();
      }
    }

    await check("charts: SVG <text> with Chinese characters renders on at least one page", async () => {
      assert(cjkInCharts.length > 0, "no visible <text> with CJK characters in any figure.lab-figure svg");
    });

    await check("links: every page's links and resources stay under /series/ and resolve", async () => {
      const bad = [];
      const deployHost = "127.0.0.1"; // run.sh builds with --base-url http://127.0.0.1/series/
      const toFetch = new Map();
      for (const r of linkReport.urls.values()) {
        if (!r.abs) {
          bad.push(`unparsable ${r.tag} URL "${r.raw}" on ${r.from[0]}`);
          continue;
        }
        const u = new URL(r.abs);
        if (u.protocol !== "http:" && u.protocol !== "https:") continue;
        if (u.hostname !== deployHost) continue; // external link
        if (!u.pathname.startsWith(PREFIX)) {
          bad.push(`${r.tag} "${r.raw}" on ${r.from[0]} points outside ${PREFIX}`);
          continue;
        }
        const local = new URL(u.pathname, origin).href;
        if (!toFetch.has(local)) toFetch.set(local, { ...r, hash: u.hash, path: u.pathname, froms: new Set() });
        if (u.hash) toFetch.get(local).hashes = [...(toFetch.get(local).hashes || []), { hash: u.hash, from: r.from[0] }];
        r.from.forEach((f) => toFetch.get(local).froms.add(f));
      }
      const ctx = await newContext();
      try {
        for (const [local, r] of toFetch) {
          const resp = await ctx.request.get(local, { maxRedirects: 0 });
          if (resp.status() !== 200) bad.push(`${r.tag} "${r.raw}" on ${[...r.froms][0]}: HTTP ${resp.status()}`);
          const ids = linkReport.pages[r.path];
          for (const h of r.hashes || []) {
            const id = decodeURIComponent(h.hash.slice(1));
            if (ids && id && !ids.has(id)) bad.push(`link to ${r.path}${h.hash} on ${h.from}: no element with that id`);
          }
        }
      } finally {
        await ctx.close();
      }
      assert(toFetch.size > 0, "no links or resources under /series/ found (was the site built with --base-url http://127.0.0.1/series/?)");
      assert(bad.length === 0, bad.slice(0, 8).join("; ") + (bad.length > 8 ? `; ... ${bad.length - 8} more` : ""));
    });

    await check("fonts: the pages load KaTeX's woff2 fonts, every one present in the site", async () => {
      const fonts = served.filter((s) => /\/katex\/fonts\/.*\.woff2$/.test(s.path));
      assert(fonts.length > 0, "the browser never requested a KaTeX font");
      const bad = fonts.filter((s) => s.status !== 200);
      assert(bad.length === 0, bad.map((s) => `${s.path}: HTTP ${s.status}`).join("; "));
    });

    await check("feeds: atom.xml and sitemap.xml parse and list every chapter under /series/", async () => {
      const ctx = await newContext();
      try {
        const page = await ctx.newPage();
        await goto(page, base);
        const r = await page.evaluate(async () => {
          const parse = async (p) => {
            const resp = await fetch(p);
            const text = await resp.text();
            const doc = new DOMParser().parseFromString(text, "application/xml");
            return { status: resp.status, type: resp.headers.get("content-type"), doc, error: doc.querySelector("parsererror")?.textContent };
          };
          const atom = await parse("atom.xml");
          const sitemap = await parse("sitemap.xml");
          return {
            atom: { status: atom.status, error: atom.error, root: atom.doc.documentElement.localName, links: [...atom.doc.getElementsByTagName("entry")].map((e) => e.getElementsByTagName("link")[0]?.getAttribute("href")) },
            sitemap: { status: sitemap.status, error: sitemap.error, root: sitemap.doc.documentElement.localName, locs: [...sitemap.doc.getElementsByTagName("loc")].map((l) => l.textContent.trim()) },
          };
        });
        const bad = [];
        if (r.atom.status !== 200 || r.atom.error || r.atom.root !== "feed") bad.push(`atom.xml: HTTP ${r.atom.status}, root <${r.atom.root}>, ${r.atom.error || ""}`);
        if (r.sitemap.status !== 200 || r.sitemap.error || r.sitemap.root !== "urlset") bad.push(`sitemap.xml: HTTP ${r.sitemap.status}, root <${r.sitemap.root}>, ${r.sitemap.error || ""}`);
        const paths = (list) => list.filter(Boolean).map((u) => new URL(u, base).pathname);
        const atomPaths = paths(r.atom.links);
        const sitemapPaths = paths(r.sitemap.locs);
        for (const c of chapters) {
          if (!atomPaths.includes(`${PREFIX}${c}/`)) bad.push(`atom.xml has no entry linking ${PREFIX}${c}/`);
          if (!sitemapPaths.includes(`${PREFIX}${c}/`)) bad.push(`sitemap.xml has no <loc> for ${PREFIX}${c}/`);
        }
        const outside = [...atomPaths, ...sitemapPaths].filter((p) => !p.startsWith(PREFIX));
        if (outside.length) bad.push(`URLs outside ${PREFIX}: ${outside.slice(0, 3).join(", ")}`);
        assert(bad.length === 0, bad.join("; "));
      } finally {
        await ctx.close();
      }
    });

    // -------- (d) theme toggle
    const themeSlug = chapters.includes("luong") ? "luong" : chapters[0];
    await check("theme: button.theme-toggle switches html[data-theme] and the background, and survives a reload", async () => {
      assert(themeSlug, "no chapter page");
      const state = (page) =>
        settle(page, () => ({
          theme: document.documentElement.getAttribute("data-theme"),
          bg: getComputedStyle(document.body).backgroundColor,
          stored: (() => {
            try {
              return localStorage.getItem("attnbook-theme");
            } catch {
              return "(no storage)";
            }
          })(),
          label: document.querySelector("button.theme-toggle")?.textContent.trim(),
        }));
      for (const scheme of ["light", "dark"]) {
        const ctx = await newContext({ colorScheme: scheme });
        try {
          const page = await ctx.newPage();
          const problems = watch(page);
          await goto(page, pageUrl(themeSlug));
          const button = page.locator("header button.theme-toggle").first();
          assert(await button.isVisible(), `[${scheme} system] button.theme-toggle is not visible (still hidden: attnbook.js not run?)`);
          const s0 = await state(page);
          assert(s0.theme === null, `[${scheme} system] data-theme is "${s0.theme}" on a first visit`);
          const l0 = luminance(s0.bg);
          assert(scheme === "light" ? l0 > 128 : l0 < 128, `[${scheme} system] auto theme gives body background ${s0.bg}`);

          await button.click();
          const s1 = await state(page);
          const want = scheme === "light" ? "dark" : "light";
          assert(s1.theme === want, `[${scheme} system] after one click data-theme is "${s1.theme}", expected "${want}"`);
          assert(s1.bg !== s0.bg, `[${scheme} system] body background stayed ${s0.bg} after the click`);
          const l1 = luminance(s1.bg);
          assert(want === "dark" ? l1 < 128 : l1 > 128, `[${scheme} system] data-theme=${want} but body background is ${s1.bg}`);
          assert(s1.stored === want, `[${scheme} system] localStorage attnbook-theme is "${s1.stored}", expected "${want}"`);
          assert(s1.label !== s0.label, `[${scheme} system] button label did not change ("${s1.label}")`);

          await page.reload({ waitUntil: "load" });
          const s2 = await state(page);
          assert(s2.theme === want && s2.bg === s1.bg, `[${scheme} system] after reload: data-theme "${s2.theme}", background ${s2.bg} (before reload: "${want}", ${s1.bg})`);

          // Another page of the site gets the same choice.
          await goto(page, base);
          const s3 = await state(page);
          assert(s3.theme === want && s3.bg === s1.bg, `[${scheme} system] on the index: data-theme "${s3.theme}", background ${s3.bg}`);

          // The cycle comes back to auto: the other explicit theme, then auto (key removed).
          await page.locator("header button.theme-toggle").first().click();
          const s4 = await state(page);
          assert(s4.theme === scheme, `[${scheme} system] second click gives data-theme "${s4.theme}", expected "${scheme}"`);
          await page.locator("header button.theme-toggle").first().click();
          const s5 = await state(page);
          assert(s5.theme === null && s5.stored === null, `[${scheme} system] third click gives data-theme "${s5.theme}", stored "${s5.stored}", expected auto`);
          assert(s5.bg === s0.bg, `[${scheme} system] back on auto the background is ${s5.bg}, was ${s0.bg}`);
          assert(problems.length === 0, problems.join("; "));
        } finally {
          await ctx.close();
        }
      }
    });

    // -------- (e) table of contents
    const tocSlug = await (async () => {
      // The chapter with the most TOC entries: the most room to scroll.
      let best = chapters[0], bestN = -1;
      for (const c of chapters) {
        const html = await fsp.readFile(path.join(root, c, "index.html"), "utf8");
        const aside = html.split('<aside class="toc-sidebar"')[1] || "";
        const n = (aside.split("</aside>")[0].match(/<a /g) || []).length;
        if (n > bestN) [best, bestN] = [c, n];
      }
      return best;
    })();

    const headingInView = (id) => {
      const el = document.getElementById(id);
      if (!el) return null;
      const r = el.getBoundingClientRect();
      const maxScroll = document.documentElement.scrollHeight - window.innerHeight;
      return { top: Math.round(r.top), bottom: Math.round(r.bottom), y: Math.round(window.scrollY), atEnd: window.scrollY >= maxScroll - 2, hash: location.hash, vh: window.innerHeight };
    };
    const assertScrolledTo = (v, id, label) => {
      assert(v, `${label}: no element with id "${id}"`);
      assert(decodeURIComponent(v.hash) === `#${id}`, `${label}: location.hash is "${v.hash}", expected "#${id}"`);
      const nearTop = v.top >= -2 && v.top <= 150;
      const visibleAtEnd = v.atEnd && v.top >= 0 && v.bottom <= v.vh;
      assert(nearTop || visibleAtEnd, `${label}: heading #${id} is at top=${v.top}px after the click (scrollY=${v.y}), expected near the viewport top`);
    };

    await check(`toc ${tocSlug} at 1280px: sticky sidebar; a click scrolls to the heading and sets the hash`, async () => {
      assert(tocSlug, "no chapter page");
      const ctx = await newContext({ viewport: DESKTOP });
      try {
        const page = await ctx.newPage();
        const problems = watch(page);
        await goto(page, pageUrl(tocSlug));
        const sidebar = page.locator("aside.toc-sidebar nav.toc");
        assert((await sidebar.count()) === 1, "no aside.toc-sidebar nav.toc");
        assert(await sidebar.isVisible(), "aside.toc-sidebar nav.toc is not visible at 1280px");
        assert(!(await page.locator("details.toc-inline").isVisible()), "details.toc-inline is visible at 1280px (expected only the sidebar)");
        const pos = await page.evaluate(() => getComputedStyle(document.querySelector("aside.toc-sidebar")).position);
        assert(pos === "sticky" || pos === "fixed", `aside.toc-sidebar has position: ${pos}`);

        const sidebarBox = () => {
          const r = document.querySelector("aside.toc-sidebar").getBoundingClientRect();
          return { top: Math.round(r.top), bottom: Math.round(r.bottom), y: Math.round(window.scrollY), vh: window.innerHeight, sh: document.documentElement.scrollHeight };
        };
        for (const frac of [0.5, 0.9]) {
          await page.evaluate((f) => window.scrollTo({ top: (document.documentElement.scrollHeight - window.innerHeight) * f, behavior: "instant" }), frac);
          const b = await settle(page, sidebarBox);
          assert(b.y > b.vh, `the page did not scroll (scrollY=${b.y}, scrollHeight=${b.sh})`);
          assert(b.top >= 0 && b.top < b.vh * 0.25 && b.bottom > b.top, `after scrolling to ${Math.round(frac * 100)}% (scrollY=${b.y}) the sidebar TOC box is at top=${b.top}, bottom=${b.bottom} (viewport ${b.vh}px): not sticky`);
        }
        await page.evaluate(() => window.scrollTo({ top: 0, behavior: "instant" }));

        const links = await page.evaluate(() =>
          [...document.querySelectorAll("aside.toc-sidebar nav.toc a[href^='#']")].map((a) => a.getAttribute("href")),
        );
        assert(links.length >= 2, `only ${links.length} TOC links`);
        const href = links[Math.floor(links.length / 2)];
        const id = decodeURIComponent(href.slice(1));
        await page.locator(`aside.toc-sidebar nav.toc a[href="${href}"]`).click();
        await pollUntil(async () => (await page.evaluate(() => location.hash)) === href);
        const v = await settle(page, headingInView, id);
        assertScrolledTo(v, id, `click on sidebar link ${href}`);
        // The sidebar is still in view after the jump.
        const b = await page.evaluate(sidebarBox);
        assert(b.top >= 0 && b.top < b.vh, `after the jump the sidebar is at top=${b.top}`);
        assert(problems.length === 0, problems.join("; "));
      } finally {
        await ctx.close();
      }
    });

    await check(`copy ${tocSlug}: the copy button copies a code block to the clipboard`, async () => {
      const ctx = await newContext({ viewport: DESKTOP });
      try {
        await ctx.grantPermissions(["clipboard-read", "clipboard-write"]);
        const page = await ctx.newPage();
        const problems = watch(page);
        await goto(page, pageUrl(tocSlug));
        const pre = page.locator("div.experiment-code pre").first();
        assert((await pre.count()) === 1, "no experiment code block");
        await pre.hover();
        const button = pre.locator("button.copy-code");
        assert((await button.count()) === 1, "no button.copy-code in the code block");
        await button.click();
        await pollUntil(async () => (await button.textContent()) === "已复制");
        const copied = await page.evaluate(() => navigator.clipboard.readText());
        const shown = await pre.locator("code").innerText();
        assert(copied === shown && copied.length > 10, `clipboard holds ${JSON.stringify(copied.slice(0, 40))}`);
        assert(problems.length === 0, problems.join("; "));
      } finally {
        await ctx.close();
      }
    });

    await check(`toc ${tocSlug} at 390px: details.toc-inline shown, sidebar hidden, links work`, async () => {
      const ctx = await newContext({ viewport: NARROW, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
      try {
        const page = await ctx.newPage();
        await goto(page, pageUrl(tocSlug));
        const inline = page.locator("details.toc-inline");
        assert((await inline.count()) === 1, "no details.toc-inline");
        assert(await inline.isVisible(), "details.toc-inline is not visible at 390px");
        assert(!(await page.locator("aside.toc-sidebar").isVisible()), "aside.toc-sidebar is visible at 390px");
        await inline.locator("summary").click();
        assert(await page.evaluate(() => document.querySelector("details.toc-inline").open), "tapping the summary did not open details.toc-inline");
        const links = await inline.locator("a[href^='#']").evaluateAll((as) => as.map((a) => a.getAttribute("href")));
        assert(links.length >= 2, `only ${links.length} links in the inline TOC`);
        const href = links[Math.floor(links.length / 2)];
        const id = decodeURIComponent(href.slice(1));
        await inline.locator(`a[href="${href}"]`).click();
        await pollUntil(async () => (await page.evaluate(() => location.hash)) === href);
        assertScrolledTo(await settle(page, headingInView, id), id, `tap on inline TOC link ${href}`);
      } finally {
        await ctx.close();
      }
    });

    // -------- (f) phone width, screenshots
    await fsp.mkdir(SCREENSHOT_DIR, { recursive: true });
    const shotSlug = chapters.includes("scaled-dot-product") ? "scaled-dot-product" : chapters[0];
    {
      const ctx = await newContext({ viewport: PHONE, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
      try {
        for (const slug of ["index", ...chapters, "404"]) {
          await check(`phone ${slug}: no horizontal scroll at 360x800`, async () => {
            const page = await ctx.newPage();
            try {
              await goto(page, slug === "404" ? `${base}404.html` : pageUrl(slug));
              const o = await page.evaluate(
                ({ describe, width }) => {
                  const describeEl = eval(describe);
                  const de = document.documentElement;
                  const vw = Math.min(window.innerWidth, width);
                  const res = { scrollWidth: de.scrollWidth, bodyScrollWidth: document.body.scrollWidth, innerWidth: window.innerWidth, clientWidth: de.clientWidth, culprits: [] };
                  if (de.scrollWidth <= vw && document.body.scrollWidth <= vw && window.innerWidth <= width) return res;
                  // Find what sticks out: elements past the right edge that no scrolling/clipping box
                  // contains; a formula is reported whole (with its TeX), a box by its outermost element.
                  const clipped = (el) => {
                    for (let p = el.parentElement; p && p !== document.body && p !== de; p = p.parentElement)
                      if (getComputedStyle(p).overflowX !== "visible") return true;
                    return false;
                  };
                  const out = (el) => {
                    const r = el.getBoundingClientRect();
                    return (r.width > 0 || r.height > 0) && (r.right > vw + 0.5 || r.left < -0.5);
                  };
                  const section = (el) => {
                    let id = null;
                    for (const h of document.querySelectorAll("main h2[id], main h3[id]"))
                      if (h.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) id = h.id;
                    return id ? `in section #${id}` : "before the first section";
                  };
                  const seen = new Set();
                  for (const el of document.body.querySelectorAll("*")) {
                    if (el.closest(".katex-mathml") || !out(el) || clipped(el)) continue;
                    const unit = el.closest(".katex") || el;
                    if (seen.has(unit)) continue;
                    seen.add(unit);
                    const parent = unit.parentElement;
                    if (parent && parent !== document.body && out(parent) && !clipped(parent)) continue; // report the outermost
                    const r = unit.getBoundingClientRect();
                    const box = `[left ${Math.round(r.left)}px, right ${Math.round(r.right)}px, width ${Math.round(r.width)}px]`;
                    if (unit.classList.contains("katex")) {
                      const tex = (unit.querySelector("annotation")?.textContent || "?").trim();
                      const block = unit.closest("p, li, td, th, h1, h2, h3, h4, figcaption, blockquote, dd, dt") || unit.parentElement;
                      const prev = unit.previousSibling ? (unit.previousSibling.textContent || "").replace(/\s+/g, " ").slice(-12) : "";
                      res.culprits.push(`inline formula $${tex}$ in ${block.tagName.toLowerCase()} ${section(unit)} (after "${prev}") ${box}`);
                    } else {
                      res.culprits.push(`${describeEl(unit)} ${section(unit)} ${box}`);
                    }
                  }
                  if (!res.culprits.length) {
                    // Nothing has a box past the edge: look for content overflowing a box that does not scroll.
                    for (const el of document.body.querySelectorAll("*")) {
                      if (el.closest(".katex") || clipped(el)) continue;
                      if (getComputedStyle(el).overflowX === "visible" && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1)
                        res.culprits.push(`${describeEl(el)} ${section(el)} [scrollWidth ${el.scrollWidth}px > clientWidth ${el.clientWidth}px]`);
                    }
                    res.culprits = res.culprits.slice(-6); // the innermost ones come last
                  }
                  return res;
                },
                { describe: DESCRIBE_FN, width: PHONE.width },
              );
              const overflows = !(o.scrollWidth <= PHONE.width && o.bodyScrollWidth <= PHONE.width && o.innerWidth <= PHONE.width);
              if (slug === shotSlug || overflows) {
                // The chosen chapter always; any page that overflows too, as evidence.
                await page.screenshot({ path: path.join(SCREENSHOT_DIR, `phone-${slug}.png`), fullPage: true });
              }
              assert(
                o.scrollWidth <= PHONE.width && o.bodyScrollWidth <= PHONE.width && o.innerWidth <= PHONE.width,
                `document scrollWidth ${o.scrollWidth}px / body ${o.bodyScrollWidth}px / innerWidth ${o.innerWidth}px > ${PHONE.width}px; ` +
                  `sticking out: ${o.culprits.slice(0, 6).join("; ") || "(no single element found)"}` +
                  (o.culprits.length > 6 ? `; ... ${o.culprits.length - 6} more` : ""),
              );
            } finally {
              await page.close();
            }
          });
        }
        // A chart scales to the phone's column (issue 27, item 6: a box that scrolled sideways
        // hid its right side), so its labels shrink with it: the usual 600-px chart keeps labels
        // of 7-8 CSS px at 360 px; the widest (900-px panel grids) reach 5 px (10 device px at
        // DPR 2), the floor this check holds. A narrower layout for those is the way above it.
        await check(`phone: chart labels at least ${PHONE_LABEL_MIN} CSS px tall at ${PHONE.width}px on every chapter`, async () => {
          const page = await ctx.newPage();
          try {
            const small = [];
            let charts = 0;
            for (const slug of chapters) {
              await goto(page, pageUrl(slug));
              const found = await page.evaluate(() => {
                const heights = [...document.querySelectorAll("figure.lab-figure svg text")]
                  .map((t) => t.getBoundingClientRect().height)
                  .filter((h) => h > 0);
                return { charts: document.querySelectorAll("figure.lab-figure svg").length, min: heights.length ? Math.min(...heights) : null };
              });
              charts += found.charts;
              if (found.min != null && found.min < PHONE_LABEL_MIN) small.push(`${slug}: ${found.min.toFixed(1)}px`);
            }
            assert(charts > 0, "no charts found on any chapter");
            assert(!small.length, `labels too small: ${small.join(", ")}`);
          } finally {
            await page.close();
          }
        });
      } finally {
        await ctx.close();
      }
    }

    await check(`screenshots: phone-${shotSlug}.png (360px) and desktop-${shotSlug}.png (1280px) written`, async () => {
      const ctx = await newContext({ viewport: DESKTOP });
      try {
        const page = await ctx.newPage();
        await goto(page, pageUrl(shotSlug));
        await page.screenshot({ path: path.join(SCREENSHOT_DIR, `desktop-${shotSlug}.png`), fullPage: true });
        await page.screenshot({ path: path.join(SCREENSHOT_DIR, `desktop-${shotSlug}-top.png`) });
      } finally {
        await ctx.close();
      }
      for (const f of [`phone-${shotSlug}.png`, `desktop-${shotSlug}.png`]) {
        const st = await statOrNull(path.join(SCREENSHOT_DIR, f));
        assert(st && st.size > 10_000, `${f} missing or suspiciously small`);
      }
    });

    // -------- (k) issue 27: a book to move through, previews, line breaks, nothing clipped
    const WIDE = { width: 1366, height: 900 };
    const order = seriesOrder(root);
    const appendixSlugs = order.filter((slug) => !chapters.includes(slug));

    await check("nav: every chapter page lists the series (current marked, appendix after the chapters), beside the text at 1366px, folded at 390px", async () => {
      const bad = [];
      for (const [viewport, opts] of [[WIDE, {}], [NARROW, { isMobile: true, hasTouch: true }]]) {
        const ctx = await newContext({ viewport, ...opts });
        try {
          const page = await ctx.newPage();
          for (const slug of order) {
            await goto(page, pageUrl(slug));
            const r = await page.evaluate(() => {
              const side = document.querySelector("aside.chapters-sidebar nav.chapter-list");
              const inline = document.querySelector("details.chapters-inline");
              const shown = [side, inline].filter((el) => el && el.checkVisibility());
              const list = side && side.checkVisibility() ? side : inline && inline.querySelector("nav.chapter-list");
              const links = list ? [...list.querySelectorAll("a")] : [];
              const group = list && list.querySelector(".chapter-list-group");
              return {
                sideShown: !!side && side.checkVisibility(),
                inlineShown: !!inline && inline.checkVisibility(),
                inlineOpen: !!inline && inline.open,
                shown: shown.length,
                paths: links.map((a) => new URL(a.href).pathname),
                current: links.filter((a) => a.getAttribute("aria-current") === "page").map((a) => new URL(a.href).pathname),
                afterGroup: group ? links.filter((a) => group.compareDocumentPosition(a) & Node.DOCUMENT_POSITION_FOLLOWING).map((a) => new URL(a.href).pathname) : [],
              };
            });
            const where = `${slug} at ${viewport.width}px`;
            const want = order.map((s) => `${PREFIX}${s}/`);
            if (viewport.width >= 1320 && !(r.sideShown && !r.inlineShown)) bad.push(`${where}: the chapter list is not beside the text`);
            if (viewport.width < 1320 && !(r.inlineShown && !r.sideShown && !r.inlineOpen)) bad.push(`${where}: the chapter list is not a closed details (shown ${r.inlineShown}, open ${r.inlineOpen}, sidebar ${r.sideShown})`);
            if (JSON.stringify(r.paths) !== JSON.stringify(want)) bad.push(`${where}: lists ${r.paths.join(" ")}`);
            if (JSON.stringify(r.current) !== JSON.stringify([`${PREFIX}${slug}/`])) bad.push(`${where}: current ${r.current.join(" ") || "none"}`);
            if (JSON.stringify(r.afterGroup) !== JSON.stringify(appendixSlugs.map((s) => `${PREFIX}${s}/`))) bad.push(`${where}: after the 附录 label: ${r.afterGroup.join(" ") || "nothing"}`);
          }
          if (viewport.width < 1320) {
            await goto(page, pageUrl(chapters[0]));
            await page.locator("details.chapters-inline > summary").click();
            const visible = await page.locator("details.chapters-inline nav.chapter-list a").nth(1).isVisible();
            if (!visible) bad.push("tapping 全部篇目 does not show the list");
          }
        } finally {
          await ctx.close();
        }
      }
      assert(bad.length === 0, bad.slice(0, 8).join("; "));
    });

    await check("nav: ← and → turn pages, the shortcuts are listed, they do nothing while typing in the search box", async () => {
      assert(order.length >= 3, "need three pages");
      const ctx = await newContext({ viewport: WIDE });
      try {
        const page = await ctx.newPage();
        const problems = watch(page);
        const [first, second, third] = order;
        await goto(page, pageUrl(second));
        const hint = page.locator("p.shortcuts");
        assert(await hint.isVisible(), "p.shortcuts is not shown");
        const text = await hint.textContent();
        assert(/←/.test(text) && /→/.test(text), `p.shortcuts says "${text}"`);
        await page.locator("nav.prev-next").scrollIntoViewIfNeeded();
        assert(await page.locator("nav.prev-next a.next").isVisible(), "no visible next link at the end of the chapter");
        await Promise.all([page.waitForURL(`**${PREFIX}${third}/`), page.keyboard.press("ArrowRight")]);
        await Promise.all([page.waitForURL(`**${PREFIX}${second}/`), page.keyboard.press("ArrowLeft")]);
        await Promise.all([page.waitForURL(`**${PREFIX}${first}/`), page.keyboard.press("ArrowLeft")]);
        // In the search box the arrows move the caret.
        const input = page.locator("input.site-search");
        await input.click();
        await input.fill("注意力");
        await page.keyboard.press("ArrowLeft");
        await page.keyboard.press("ArrowRight");
        await page.waitForTimeout(500);
        assert(new URL(page.url()).pathname === `${PREFIX}${first}/`, `typing in the search box turned the page to ${page.url()}`);
        // Modifiers are the browser's (Alt+Left is Back).
        await page.keyboard.press("Escape");
        await page.keyboard.press("Escape");
        await page.evaluate(() => document.activeElement && document.activeElement.blur());
        await page.keyboard.press("Shift+ArrowRight");
        await page.waitForTimeout(500);
        assert(new URL(page.url()).pathname === `${PREFIX}${first}/`, `Shift+→ turned the page to ${page.url()}`);
        assert(problems.length === 0, problems.join("; "));
      } finally {
        await ctx.close();
      }
    });

    // The chapter with the most kinds of previewed links.
    const previewSlug = chapters.includes("scaled-dot-product") ? "scaled-dot-product" : chapters[0];
    await check(`previews ${previewSlug}: hover and focus on a figure, table, equation and chapter reference, a citation and a glossary term show the target`, async () => {
      const ctx = await newContext({ viewport: WIDE });
      try {
        const page = await ctx.newPage();
        const problems = watch(page);
        await goto(page, pageUrl(previewSlug));
        const kinds = [
          ["figure", "article a.xref[href^='#fig-']", (t) => t.svg && t.text.length > 4],
          ["table", "article a.xref[href^='#tab-']", (t) => t.table],
          ["equation", "article a.xref[href^='#eq-']", (t) => t.katex],
          ["chapter", "article a.xref[href$='/']", (t) => t.text.length > 8],
          ["equation of another chapter", "article a.xref[href*='/#eq-']", (t) => t.katex],
          ["citation", "article a.citation", (t) => t.text.length > 10],
          ["glossary term", "article a.term", (t) => t.english],
        ];
        const bad = [];
        const tipState = () =>
          page.evaluate(() => {
            const tip = document.querySelector(".preview-tip");
            if (!tip || !tip.checkVisibility()) return null;
            const r = tip.getBoundingClientRect();
            return {
              text: tip.textContent.trim(),
              svg: !!tip.querySelector("svg"),
              table: !!tip.querySelector("table"),
              katex: !!tip.querySelector(".katex"),
              english: !!tip.querySelector("[lang='en']"),
              ids: tip.querySelectorAll("[id]").length,
              inView: r.left >= 0 && r.right <= document.documentElement.clientWidth + 1,
              described: document.querySelector("[aria-describedby='preview-tip']")?.textContent || null,
            };
          });
        let found = 0;
        for (const [kind, selector, ok] of kinds) {
          const link = page.locator(selector).first();
          if ((await link.count()) === 0) {
            if (kind !== "equation of another chapter" && kind !== "chapter") bad.push(`no ${kind} link (${selector}) on ${previewSlug}`);
            continue;
          }
          found++;
          await scrollToStill(page, link);
          await link.hover();
          const hovered = await pollUntil(tipState, 3000);
          if (!hovered) bad.push(`hovering a ${kind} shows no preview`);
          else if (!ok(hovered)) bad.push(`the ${kind} preview lacks its target: "${hovered.text.slice(0, 80)}"`);
          else if (hovered.ids) bad.push(`the ${kind} preview copies ${hovered.ids} ids`);
          else if (!hovered.inView) bad.push(`the ${kind} preview sticks out of the window`);
          await page.mouse.move(2, 2);
          const gone = await pollUntil(async () => (await tipState()) === null, 3000);
          if (!gone) bad.push(`the ${kind} preview stays after the pointer left`);
          await link.focus();
          const focused = await pollUntil(tipState, 3000);
          if (!focused || !ok(focused)) bad.push(`focusing a ${kind} shows no preview`);
          else if (!focused.described) bad.push(`the focused ${kind} link is not described by its preview`);
          await page.keyboard.press("Escape");
          if (await tipState()) bad.push(`Escape does not close the ${kind} preview`);
        }
        assert(found >= 5, `only ${found} kinds of previewed links`);
        if (problems.length) bad.push(problems.join("; "));
        assert(bad.length === 0, bad.join("; "));
      } finally {
        await ctx.close();
      }
    });

    await check(`previews ${previewSlug} on a phone: the first tap on a reference shows its preview, the second follows it`, async () => {
      const ctx = await newContext({ viewport: NARROW, isMobile: true, hasTouch: true });
      try {
        const page = await ctx.newPage();
        await goto(page, pageUrl(previewSlug));
        const link = page.locator("article a.xref[href^='#fig-'], article a.xref[href^='#eq-']").first();
        await scrollToStill(page, link);
        const href = await link.getAttribute("href");
        await link.tap();
        const tip = page.locator(".preview-tip");
        await tip.waitFor({ state: "visible", timeout: 3000 });
        assert((await page.evaluate(() => location.hash)) === "", "the first tap followed the link");
        assert((await tip.locator("a.preview-follow").count()) === 1, "the preview has no link to follow");
        await link.tap();
        await pollUntil(async () => (await page.evaluate(() => location.hash)) === href, 3000);
        assert((await page.evaluate(() => location.hash)) === href, `the second tap did not follow ${href}`);
      } finally {
        await ctx.close();
      }
    });

    await check("previews without JavaScript: references, citations and glossary terms are ordinary links to their targets", async () => {
      const ctx = await newContext({ viewport: WIDE, javaScriptEnabled: false });
      try {
        const page = await ctx.newPage();
        await goto(page, pageUrl(previewSlug));
        const r = await page.evaluate(() => {
          const links = [...document.querySelectorAll("article a.xref, article a.citation, article a.term")];
          const local = links.filter((a) => a.getAttribute("href").startsWith("#"));
          return {
            links: links.length,
            terms: document.querySelectorAll("article a.term").length,
            missing: local.filter((a) => !document.getElementById(decodeURIComponent(a.getAttribute("href").slice(1)))).map((a) => a.getAttribute("href")),
            templatesShown: [...document.querySelectorAll("template")].filter((t) => t.checkVisibility()).length,
          };
        });
        assert(r.links > 5 && r.terms > 0, `${r.links} links, ${r.terms} glossary terms`);
        assert(r.missing.length === 0, `links without a target: ${r.missing.join(", ")}`);
        assert(r.templatesShown === 0, "a preview template is shown");
        await page.locator("article a.term").first().click();
        await page.waitForURL(/\/glossary\/#term-/);
        const row = await page.evaluate(() => document.getElementById(decodeURIComponent(location.hash.slice(1)))?.tagName);
        assert(row === "TR", `the glossary term link lands on ${row}`);
      } finally {
        await ctx.close();
      }
    });

    // In-page: every inline formula whose neighbouring text starts with closing punctuation (or
    // ends with opening punctuation) and that mark sitting on another line than the formula.
    const PUNCTUATION_FN = () => {
      const closing = /^[，。、；：？！）」』”’》〉】〕〗｝］．…]/;
      const opening = /[（「『“‘《〈【〔〖｛［]$/;
      const main = document.querySelector("main");
      // Text outside formulas, code and templates, in document order.
      const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT, {
        acceptNode: (n) => (n.nodeValue.length && !n.parentElement.closest(".katex, pre, script") ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP),
      });
      const formulas = [...main.querySelectorAll(".katex")].filter((k) => !k.closest(".katex-display") && k.checkVisibility() && !k.closest("details:not([open])"));
      const charBox = (node, at) => {
        const range = document.createRange();
        range.setStart(node, at);
        range.setEnd(node, at + 1);
        return [...range.getClientRects()].find((r) => r.width > 0) || null;
      };
      const sameLine = (a, b) => a && b && a.top < b.bottom - 2 && b.top < a.bottom - 2;
      const lastLeaf = (el) => {
        while (el.lastChild) el = el.lastChild;
        return el;
      };
      const bad = [];
      let checked = 0;
      for (const k of formulas) {
        const rects = [...k.getClientRects()].filter((r) => r.width > 0);
        if (!rects.length) continue;
        walker.currentNode = lastLeaf(k);
        const next = walker.nextNode();
        walker.currentNode = k;
        const prev = walker.previousNode();
        const tex = (k.querySelector("annotation")?.textContent || "").trim();
        const BLOCK = "p, li, td, th, figcaption, dd, dt, h1, h2, h3, h4, blockquote, summary";
        const block = k.closest(BLOCK);
        const inBlock = (t) => t && t.parentElement.closest(BLOCK) === block;
        if (inBlock(next) && closing.test(next.nodeValue)) {
          checked++;
          const box = charBox(next, 0);
          if (box && !sameLine(box, rects[rects.length - 1])) bad.push(`"${next.nodeValue[0]}" starts a line after $${tex}$`);
        }
        if (inBlock(prev) && opening.test(prev.nodeValue)) {
          checked++;
          const box = charBox(prev, prev.nodeValue.length - 1);
          if (box && !sameLine(box, rects[0])) bad.push(`"${prev.nodeValue.slice(-1)}" ends a line before $${tex}$`);
        }
      }
      return { checked, bad };
    };

    await check("line breaks: no line starts with closing punctuation after an inline formula, none ends with opening punctuation before one, at 1366px and 390px (chapters and print page)", async () => {
      const bad = [];
      let checked = 0;
      for (const viewport of [WIDE, NARROW]) {
        const ctx = await newContext({ viewport });
        ctx.setDefaultNavigationTimeout(120_000); // the print page is the whole series
        ctx.setDefaultTimeout(120_000);
        try {
          const page = await ctx.newPage();
          for (const slug of [...chapters, "print"]) {
            await goto(page, slug === "print" ? `${base}print.html` : pageUrl(slug));
            const r = await page.evaluate(PUNCTUATION_FN);
            checked += r.checked;
            for (const b of r.bad) bad.push(`${slug} at ${viewport.width}px: ${b}`);
          }
        } finally {
          await ctx.close();
        }
      }
      assert(checked > 50, `only ${checked} formulas next to full-width punctuation`);
      assert(bad.length === 0, `${bad.length} breaks: ${bad.slice(0, 8).join("; ")}`);
    });

    await check("clipping: at 390px and 1366px no chart is cut off or scrolls, and every wide table wraps or shows that it scrolls", async () => {
      const bad = [];
      for (const [viewport, opts] of [[NARROW, { isMobile: true, hasTouch: true, deviceScaleFactor: 2 }], [WIDE, {}]]) {
        const ctx = await newContext({ viewport, ...opts });
        try {
          const page = await ctx.newPage();
          for (const slug of order) {
            await goto(page, pageUrl(slug));
            await page.waitForTimeout(300); // the scroll boxes are measured after the fonts
            const r = await page.evaluate(({ describe }) => {
              const describeEl = eval(describe);
              const out = [];
              const vw = document.documentElement.clientWidth;
              for (const box of document.querySelectorAll("figure.lab-figure .figure-svg")) {
                if (!box.checkVisibility()) continue;
                const svg = box.querySelector("svg, img");
                const b = box.getBoundingClientRect();
                const s = svg.getBoundingClientRect();
                if (box.scrollWidth > box.clientWidth + 1) out.push(`${describeEl(box.closest("figure"))}: the chart scrolls (${box.scrollWidth} > ${box.clientWidth}px)`);
                else if (s.right > b.right + 1 || s.left < b.left - 1 || s.right > vw + 1) out.push(`${describeEl(box.closest("figure"))}: the chart is cut off (${Math.round(s.left)}..${Math.round(s.right)}px in ${Math.round(b.left)}..${Math.round(b.right)}px)`);
              }
              for (const wrap of document.querySelectorAll("main .table-wrap")) {
                if (!wrap.checkVisibility() || wrap.closest("details:not([open])")) continue;
                const w = wrap.getBoundingClientRect();
                if (w.right > vw + 1) out.push(`${describeEl(wrap)}: the table box ends at ${Math.round(w.right)}px`);
                const scrolls = wrap.scrollWidth > wrap.clientWidth + 1;
                const hint = wrap.previousElementSibling;
                if (scrolls && !(hint && hint.classList.contains("scroll-hint") && hint.checkVisibility()))
                  out.push(`${describeEl(wrap.querySelector("table"))}: cut off at ${wrap.clientWidth}px of ${wrap.scrollWidth}px, with no sign that it scrolls`);
                for (const cell of wrap.querySelectorAll("td, th")) {
                  if (cell.scrollWidth > cell.clientWidth + 1 && getComputedStyle(cell).overflowX !== "visible") out.push(`${describeEl(cell)}: cell content cut off`);
                }
              }
              return out;
            }, { describe: DESCRIBE_FN });
            for (const b of r) bad.push(`${slug} at ${viewport.width}px: ${b}`);
          }
        } finally {
          await ctx.close();
        }
      }
      assert(bad.length === 0, `${bad.length} problems: ${bad.slice(0, 8).join("; ")}`);
    });

    // -------- (g) search: the first result of a query is the chapter that is about it
    await check(`search: the first result of each query (${SEARCH_QUERIES.map((q) => q.query).join(", ")}) is the chapter about it`, async () => {
      const ctx = await newContext({ viewport: DESKTOP });
      try {
        const page = await ctx.newPage();
        const problems = watch(page);
        // From the index, so that opening any result is a navigation to another page.
        const startUrl = base;
        const bad = [];
        for (const { query, slug, section } of SEARCH_QUERIES) {
          if (!chapters.includes(slug)) {
            bad.push(`"${query}": the series has no chapter ${slug} any more; update SEARCH_QUERIES`);
            continue;
          }
          await goto(page, startUrl);
          const input = page.locator("input.site-search").first();
          assert(await input.isVisible(), "input.site-search is not visible at 1280px");
          await input.click();
          await input.fill(query);
          const results = page.locator("ul.search-results > li > a");
          const shown = await pollUntil(async () => (await results.count()) > 0 && (await results.first().isVisible()), 5000);
          if (!shown) {
            bad.push(`"${query}" gives no visible result`);
            continue;
          }
          const top = await results.evaluateAll((as) =>
            as.slice(0, 3).map((a) => ({
              href: a.href,
              text: a.textContent.trim(),
              marks: [...a.parentElement.querySelectorAll("mark")].map((m) => m.textContent.toLowerCase()),
            })),
          );
          const first = top[0];
          const u = new URL(first.href);
          const expected = `${PREFIX}${slug}/`;
          if (u.origin !== origin || u.pathname !== expected || (section && u.hash !== `#${section}`)) {
            const list = top.map((t) => `${new URL(t.href).pathname}${new URL(t.href).hash} "${t.text}"`).join(" | ");
            bad.push(`"${query}": first result should be ${expected}${section ? `#${section}` : ""}, the results begin ${list}`);
            continue;
          }
          const words = query.toLowerCase().split(/\s+/);
          if (!words.every((w) => first.marks.some((m) => m.includes(w))))
            bad.push(`"${query}": the first result does not mark the query (marks: ${first.marks.join(", ") || "none"})`);
          const [resp] = await Promise.all([page.waitForNavigation({ waitUntil: "load" }).catch(() => null), results.first().click()]);
          if (!resp || resp.status() !== 200) {
            bad.push(`"${query}": opening the first result gave ${resp ? `HTTP ${resp.status()}` : "no navigation"}`);
            continue;
          }
          // The reader lands where the query is: the targeted section (or the page) holds it.
          const found = await page.evaluate((q) => {
            const id = decodeURIComponent(location.hash.slice(1));
            const heading = id && document.getElementById(id);
            let text = "";
            if (heading) {
              for (let el = heading; el; el = el.nextElementSibling) {
                if (el !== heading && /^H[1-3]$/.test(el.tagName)) break;
                text += el.textContent;
              }
            } else text = document.querySelector("main")?.textContent || "";
            return text.toLowerCase().includes(q.toLowerCase());
          }, query);
          if (!found) bad.push(`"${query}": the page opened by the first result (${page.url()}) does not contain the query where it lands`);
        }
        if (problems.length) bad.push(problems.join("; "));
        assert(bad.length === 0, bad.join("; "));
      } finally {
        await ctx.close();
      }
    });

    // -------- (h) 404
    if (provenanceRoot) {
      const p = await startServer(provenanceRoot);
      extraServers.push(p.server);
      const fixtureUrl = `${p.origin}${PREFIX}src/`;
      for (const where of ["folded block", "hidden line", "hide block"]) {
        await check(`provenance fixture: a quote recorded in a ${where} opens it and highlights the line`, async () => {
          const ctx = await newContext();
          try {
            const page = await ctx.newPage();
            const problems = watch(page);
            await goto(page, fixtureUrl);
            const q = await page.evaluate(eval(QUOTES_FN));
            const pick = q.local.find((l) => l.where === where);
            assert(pick, `no quote recorded in a ${where}: ${JSON.stringify(q.local)}`);
            await followQuote(page, pick.index);
            assert(problems.length === 0, problems.join("; "));
          } finally {
            await ctx.close();
          }
        });
      }
      await check("provenance fixture on a phone: a tap shows the tooltip, its link opens the line", async () => {
        const ctx = await newContext({ viewport: PHONE, hasTouch: true, isMobile: true });
        try {
          const page = await ctx.newPage();
          await goto(page, fixtureUrl);
          const q = await page.evaluate(eval(QUOTES_FN));
          const pick = q.local.find((l) => l.where === "folded block") || q.local[0];
          await followQuote(page, pick.index, { tap: true });
        } finally {
          await ctx.close();
        }
      });
      await check("verification page: lists every quote and pinned output with its verdict", async () => {
        const ctx = await newContext();
        try {
          const page = await ctx.newPage();
          await goto(page, `${p.origin}${PREFIX}src/`);
          await page.locator("footer.run-meta a.verification-link").click();
          await page.waitForURL(/\/verification\/#src$/);
          const rows = await page.evaluate(() =>
            [...document.querySelectorAll("table.verification-table tbody tr")].map((r) => r.className),
          );
          assert(rows.length >= 10, `${rows.length} rows`);
          assert(rows.includes("verdict-drift") && rows.includes("verdict-ok"), rows.join(","));
          // The footer's link lands on its chapter's section.
          const top = await page.evaluate(() => {
            const r = document.getElementById("src")?.getBoundingClientRect();
            return r && r.top >= -5 && r.top < window.innerHeight / 2 ? null : r ? r.top : "missing";
          });
          assert(top === null, `section #src is at top=${top}px after the jump`);
          // The filter keeps only what does not agree.
          await page.locator("#only-flagged").check();
          const shown = await page.evaluate(() =>
            [...document.querySelectorAll("table.verification-table tbody tr")].filter((r) => r.checkVisibility()).map((r) => r.className),
          );
          assert(shown.length > 0 && shown.length < rows.length && shown.every((c) => c !== "verdict-ok"), `with the filter: ${shown.join(",")}`);
        } finally {
          await ctx.close();
        }
      });
    }

    await check("404: a missing page under /series/ gets 404.html with the site header", async () => {
      const ctx = await newContext({ viewport: DESKTOP });
      try {
        const page = await ctx.newPage();
        const problems = watch(page);
        const missing = `${base}no-such-chapter/deeper/`;
        await goto(page, missing, 404);
        const r = await page.evaluate(() => {
          const header = document.querySelector("header.site-header");
          const title = header && header.querySelector("a.site-title");
          const hr = header && header.getBoundingClientRect();
          return {
            header: !!header,
            headerBox: hr ? [Math.round(hr.width), Math.round(hr.height)] : null,
            titleText: title ? title.textContent.trim() : null,
            titlePath: title ? new URL(title.href).pathname : null,
            h1: document.querySelector("main h1")?.textContent.trim() || null,
            bodyMargin: getComputedStyle(document.body).marginTop,
            toggleVisible: !!document.querySelector("button.theme-toggle:not([hidden])"),
          };
        });
        const bad = [];
        if (!r.header) bad.push("no header.site-header");
        else if (!(r.headerBox[0] > 0 && r.headerBox[1] > 0)) bad.push(`header.site-header has a ${r.headerBox.join("x")} box`);
        if (!r.titleText) bad.push("no a.site-title text in the header");
        if (r.titlePath !== PREFIX) bad.push(`a.site-title links ${r.titlePath}, expected ${PREFIX}`);
        if (!r.h1) bad.push("no h1 in main");
        if (r.bodyMargin !== "0px") bad.push(`body margin is ${r.bodyMargin}: style.css not applied at a nested missing path`);
        if (!r.toggleVisible) bad.push("theme toggle still hidden: attnbook.js not run at a nested missing path");
        const others = problems.filter((p) => !p.includes(missing) && !/status of 404/.test(p));
        if (others.length) bad.push(others.join("; "));
        assert(bad.length === 0, bad.join("; "));
      } finally {
        await ctx.close();
      }
    });

    // -------- explorable passages: the slider swaps the figure and numbers computed at each point
    await check("explore: the slider (keyboard and pointer) swaps the figure and the quotes, announced; axe stays clean; without JavaScript the default shows", async () => {
      const url = `${base}qkv/`;
      const state = (page) => page.evaluate(() => {
        const box = document.querySelector("div.explore");
        const view = box.querySelector(".explore-view");
        const input = box.querySelector("input[type=range]");
        return {
          point: view.getAttribute("data-point"),
          value: input.value,
          max: input.max,
          valuetext: input.getAttribute("aria-valuetext"),
          output: box.querySelector("output").textContent,
          live: box.querySelector("output").getAttribute("aria-live"),
          visible: !box.querySelector(".explore-control").hidden && input.getBoundingClientRect().width > 0,
          label: input.labels.length ? input.labels[0].textContent : "",
          caption: (view.querySelector("figcaption") || {}).textContent || "",
          quotes: [...view.querySelectorAll("a.quote")].map((a) => a.textContent).join("|"),
          templates: box.querySelectorAll("template.explore-point").length,
        };
      });
      let initial;
      const ctx = await newContext();
      try {
        const page = await ctx.newPage();
        await goto(page, url);
        initial = await state(page);
        assert(initial.visible, "the slider is not shown with JavaScript on");
        assert(initial.label.trim().length > 0, "the slider has no label");
        assert(initial.live === "polite", `the value is not announced (aria-live ${initial.live})`);
        assert(initial.valuetext === initial.output, `aria-valuetext ${initial.valuetext} vs output ${initial.output}`);
        assert(initial.caption && initial.quotes, `no figure or quotes in the passage: ${JSON.stringify(initial)}`);
        await page.focus("div.explore input[type=range]");
        await page.keyboard.press("ArrowRight");
        const right = await state(page);
        assert(Number(right.value) === Number(initial.value) + 1, `ArrowRight moved ${initial.value} -> ${right.value}`);
        assert(right.point === right.value, `the view shows point ${right.point}, the slider ${right.value}`);
        assert(right.caption !== initial.caption, `the figure did not change: ${right.caption}`);
        assert(right.quotes !== initial.quotes, `the quotes did not change: ${right.quotes}`);
        assert(right.valuetext === right.output && right.output !== initial.output, `announced ${right.valuetext} / ${right.output}`);
        const violations = await axeViolations(page, { resultTypes: ["violations"] });
        assert(violations.length === 0, `axe after a swap: ${violations.map((v) => v.id).join(", ")}`);
        // Pointer: a click at the slider's left end picks the first point.
        const boxRect = await page.locator("div.explore input[type=range]").boundingBox();
        await page.mouse.click(boxRect.x + 2, boxRect.y + boxRect.height / 2);
        const left = await settle(page, () => document.querySelector("div.explore .explore-view").getAttribute("data-point") === "0")
          .then(() => state(page));
        assert(left.value === "0" && left.point === "0", `a click at the left end gave ${left.value} / ${left.point}`);
        assert(left.caption !== right.caption && left.quotes !== right.quotes, "the first point shows the same figure or quotes");
        // And back to the default: the very content the page was served with.
        await page.focus("div.explore input[type=range]");
        for (let i = 0; i < Number(initial.value); i++) await page.keyboard.press("ArrowRight");
        const back = await state(page);
        assert(back.caption === initial.caption && back.quotes === initial.quotes, "back at the default, the content differs");
        await page.close();
      } finally {
        await ctx.close();
      }
      const noJs = await newContext({ javaScriptEnabled: false });
      try {
        const page = await noJs.newPage();
        await goto(page, url);
        const r = await state(page);
        assert(!r.visible, "without JavaScript the slider is shown but could not work");
        assert(r.point === initial.value, `without JavaScript the view shows point ${r.point}, not the default ${initial.value}`);
        assert(r.caption === initial.caption && r.quotes === initial.quotes, "without JavaScript the default content differs");
        assert(r.templates === Number(r.max), `${r.templates} templates for ${Number(r.max) + 1} points`);
        await page.close();
      } finally {
        await noJs.close();
      }
    });

    // -------- (i) accessibility: axe-core over every page, light and dark
    const pages = htmlPages(root);
    await check(`a11y: axe-core finds no violation on any of the ${pages.length} pages (light; colour contrast in dark too)`, async () => {
      assert(pages.includes("print.html") && pages.includes("index.html"), `pages found: ${pages.join(", ")}`);
      const bad = [];
      for (const [scheme, options] of [
        ["light", { resultTypes: ["violations"] }],
        ["dark", { runOnly: { type: "rule", values: ["color-contrast"] }, resultTypes: ["violations"] }],
      ]) {
        const ctx = await newContext({ colorScheme: scheme });
        try {
          // In dark, print.html is left out: its chapters are the chapter pages' bodies, checked
          // there, and it is printed light; it is the slowest page to check (all of the series).
          for (const file of scheme === "dark" ? pages.filter((f) => f !== "print.html") : pages) {
            const page = await ctx.newPage();
            await goto(page, base + file.replace(/index\.html$/, ""));
            for (const v of await axeViolations(page, options)) {
              const where = v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ");
              bad.push(`${file} (${scheme}): ${v.id} [${v.impact}] x${v.nodes.length}: ${where} -- ${oneLine(v.nodes[0]?.failureSummary || v.help)}`);
            }
            await page.close();
          }
        } finally {
          await ctx.close();
        }
      }
      assert(bad.length === 0, `${bad.length} violation(s): ${bad.slice(0, 10).join(" || ")}`);
    });

    // -------- (j) the print page, on screen and printed to PDF
    await check("print: print.html holds every chapter in series order, ids unique, every in-page link resolves, none leaves for a chapter page", async () => {
      const order = seriesOrder(root);
      const ctx = await newContext();
      try {
        const page = await ctx.newPage();
        const problems = watch(page);
        await goto(page, base);
        const link = await page.evaluate(() => [...document.querySelectorAll("header a[href]")].map((a) => new URL(a.href).pathname));
        assert(link.includes(`${PREFIX}print.html`), `the site navigation does not link ${PREFIX}print.html: ${link.join(", ")}`);
        await goto(page, `${base}print.html`);
        const r = await page.evaluate((chapterSlugs) => {
          const ids = [...document.querySelectorAll("[id]")].map((e) => e.id);
          const seen = new Set();
          return {
            articles: [...document.querySelectorAll("article.print-chapter")].map((a) => a.id),
            duplicates: ids.filter((id) => (seen.has(id) ? true : (seen.add(id), false))),
            broken: [...document.querySelectorAll('a[href^="#"]')]
              .map((a) => decodeURIComponent(a.getAttribute("href").slice(1)))
              .filter((id) => id && !document.getElementById(id)),
            leaving: [...document.querySelectorAll("main a[href]")]
              .map((a) => new URL(a.href))
              .filter((u) => u.origin === location.origin && chapterSlugs.some((c) => u.pathname === `/series/${c}/`))
              .map((u) => u.pathname + u.hash),
            xrefs: document.querySelectorAll("main a.xref").length,
            katex: [...document.querySelectorAll(".katex")].filter((k) => k.getBoundingClientRect().height > 0).length,
            rawTex: [...document.querySelectorAll("main p")].some((p) => /\$[^$\s][^$]*\$/.test(p.textContent.replace(/\.katex/g, ""))),
          };
        }, chapters);
        const bad = [];
        if (JSON.stringify(r.articles) !== JSON.stringify(order)) bad.push(`chapters ${r.articles.join(", ")}; the series order is ${order.join(", ")}`);
        if (r.duplicates.length) bad.push(`duplicate ids: ${[...new Set(r.duplicates)].slice(0, 5).join(", ")}`);
        if (r.broken.length) bad.push(`in-page links without a target: ${r.broken.slice(0, 5).map((id) => "#" + id).join(", ")}`);
        if (r.leaving.length) bad.push(`links leave for chapter pages: ${r.leaving.slice(0, 5).join(", ")}`);
        if (r.xrefs === 0) bad.push("no cross-reference (a.xref) on the print page");
        if (r.katex < MIN_VISIBLE_KATEX * order.length) bad.push(`only ${r.katex} visible KaTeX formulas`);
        if (problems.length) bad.push(problems.join("; "));
        assert(bad.length === 0, bad.join("; "));
      } finally {
        await ctx.close();
      }
    });

    await check("print: printed, each chapter starts a page, folds open, figures numbered as on the chapter pages, a PDF of more pages than chapters", async () => {
      const order = seriesOrder(root);
      const expectedFigures = order.flatMap((slug) =>
        [...fs.readFileSync(path.join(root, slug, "index.html"), "utf8")
          // An explorable passage prints at its default point: its other points are inert templates.
          .replace(/<template[\s\S]*?<\/template>/g, "")
          .matchAll(/<span class="figure-label">([^<]*)<\/span>/g)].map((m) => `${slug} ${m[1]}`),
      );
      const ctx = await newContext();
      try {
        const page = await ctx.newPage();
        await goto(page, `${base}print.html`);
        await page.emulateMedia({ media: "print" });
        const r = await page.evaluate(() => ({
          breaks: [...document.querySelectorAll("article.print-chapter")].map((a) => getComputedStyle(a).breakBefore),
          closed: document.querySelectorAll("details:not([open])").length,
          // A `hide` block's code (div.source-only) is hidden on purpose, on paper too.
          hiddenCode: [...document.querySelectorAll("main pre")].filter((p) => !p.closest(".source-only") && p.getBoundingClientRect().height === 0).length,
          nav: getComputedStyle(document.querySelector(".site-nav")).display,
          figures: [...document.querySelectorAll("article.print-chapter")].flatMap((a) =>
            [...a.querySelectorAll("figure.lab-figure")]
              .filter((f) => f.querySelector("svg")?.getBoundingClientRect().height > 0)
              .map((f) => `${a.id} ${f.querySelector(".figure-label")?.textContent}`),
          ),
          codeColour: (() => {
            const c = document.querySelector("pre code span[class*='hl-comment']");
            return c ? getComputedStyle(c).color : null;
          })(),
        }));
        const bad = [];
        if (r.breaks.some((b) => b !== "page")) bad.push(`break-before of the chapters under print media: ${r.breaks.join(", ")}`);
        if (r.closed) bad.push(`${r.closed} <details> still closed`);
        if (r.hiddenCode) bad.push(`${r.hiddenCode} code blocks have no height when printed`);
        if (r.nav !== "none") bad.push(`the site navigation prints (display ${r.nav})`);
        if (JSON.stringify(r.figures) !== JSON.stringify(expectedFigures))
          bad.push(`figures printed: ${r.figures.length} (${r.figures.slice(0, 4).join(", ")}...); on the chapter pages: ${expectedFigures.length}`);
        if (expectedFigures.length === 0) bad.push("the series has no figure to print");
        const pdf = await page.pdf({ preferCSSPageSize: true, printBackground: true });
        await fsp.mkdir(SCREENSHOT_DIR, { recursive: true });
        await fsp.writeFile(path.join(SCREENSHOT_DIR, "print.pdf"), pdf);
        const sheets = (pdf.toString("latin1").match(/\/Type\s*\/Page(?![s\w])/g) || []).length;
        if (pdf.subarray(0, 5).toString() !== "%PDF-") bad.push("Page.printToPDF did not return a PDF");
        if (sheets <= order.length) bad.push(`the PDF has ${sheets} pages for ${order.length} chapters`);
        console.log(`# print.pdf: ${sheets} pages, ${(pdf.length / 1024).toFixed(0)} KiB`);
        assert(bad.length === 0, bad.join("; "));
      } finally {
        await ctx.close();
      }
    });

    await check("pdf: book.pdf (scripts/pdf.mjs) is linked from the index and every chapter; its outline has every chapter and its sections, its text every title, page numbers, every font embedded (CJK included)", async () => {
      const file = path.join(root, "book.pdf");
      assert(fs.existsSync(file), `${file} not found: tests/browser/run.sh prints it with scripts/pdf.mjs`);
      const bad = [];
      for (const slug of ["index", ...seriesOrder(root)]) {
        const html = fs.readFileSync(path.join(root, slug === "index" ? "" : slug, "index.html"), "utf8");
        if (!html.includes(`<a href="${PREFIX}book.pdf" type="application/pdf">`)) bad.push(`${slug} does not link book.pdf`);
      }
      // What the print page holds, as the reader sees it printed.
      const ctx = await newContext();
      let expected;
      try {
        const page = await ctx.newPage();
        await goto(page, `${base}print.html`);
        await page.emulateMedia({ media: "print" });
        expected = await page.evaluate(() => ({
          cover: document.querySelector(".print-cover h1").innerText,
          chapters: [...document.querySelectorAll("article.print-chapter")].map((a) => ({
            title: a.querySelector(".chapter-header h1").innerText,
            sections: [...a.querySelectorAll("h2")].map((h) => h.innerText),
          })),
        }));
      } finally {
        await ctx.close();
      }
      // Chromium's PDF maps a glyph that Noto CJK shares between an ideograph and a radical to
      // the radical (力 as U+2F12, 长 as U+2ED3): NFKC folds the Kangxi radicals back, the table
      // the simplified radicals of the supplement, which have no decomposition. Spaces are layout.
      const RADICALS = { "⻓": "长", "⻔": "门", "⻅": "见", "⻚": "页", "⻢": "马", "⻜": "飞", "⻛": "风", "⻉": "贝", "⻋": "车", "⻘": "青", "⻬": "齐", "⻮": "齿", "⻰": "龙", "⻳": "龟", "⻨": "麦", "⻩": "黄", "⻥": "鱼", "⻦": "鸟", "⻆": "角", "⻤": "鬼", "⻝": "食" };
      const norm = (t) => t.normalize("NFKC").replace(/[\u2e80-\u2eff]/g, (c) => RADICALS[c] || c).replace(/\s+/g, "");
      const pdfjs = await import("pdfjs-dist/legacy/build/pdf.mjs");
      const doc = await pdfjs.getDocument({ data: new Uint8Array(await fsp.readFile(file)), verbosity: 0, disableFontFace: true }).promise;
      try {
        const outline = (await doc.getOutline()) || [];
        const want = [expected.cover, ...expected.chapters.map((c) => c.title)].map(norm);
        const got = outline.map((o) => norm(o.title));
        if (JSON.stringify(got) !== JSON.stringify(want)) bad.push(`outline's top level: ${got.join(" | ")}; expected ${want.join(" | ")}`);
        expected.chapters.forEach((c, i) => {
          const items = (outline[i + 1]?.items || []).map((o) => norm(o.title));
          const sections = c.sections.map(norm);
          if (JSON.stringify(items) !== JSON.stringify(sections))
            bad.push(`${c.title}: bookmarks ${items.join(" | ") || "(none)"}; sections ${sections.join(" | ")}`);
        });
        let text = "";
        const fonts = new Map();
        for (let n = 1; n <= doc.numPages; n++) {
          const page = await doc.getPage(n);
          const pageText = (await page.getTextContent()).items.map((i) => i.str).join("");
          text += pageText;
          if (!norm(pageText).includes(`${n}/${doc.numPages}`)) bad.push(`page ${n} does not show "${n} / ${doc.numPages}"`);
          if (n % 10 !== 1) continue; // fonts on every tenth page: the operator lists are slow
          const ops = await page.getOperatorList();
          ops.fnArray.forEach((fn, i) => {
            if (fn !== pdfjs.OPS.setFont) return;
            const font = page.commonObjs.get(ops.argsArray[i][0]);
            fonts.set(font.name, font.missingFile ? "missing" : "embedded");
          });
        }
        const flat = norm(text);
        for (const c of expected.chapters) if (!flat.includes(norm(c.title))) bad.push(`the text lacks the title ${c.title}`);
        const missing = [...fonts].filter(([, v]) => v === "missing").map(([k]) => k);
        if (missing.length) bad.push(`fonts not embedded: ${missing.join(", ")}`);
        const cjk = [...fonts.keys()].filter((k) => /CJK|Hei|Song|Ming|Kai|Gothic/i.test(k));
        if (cjk.length === 0) bad.push(`no CJK font among the embedded fonts: ${[...fonts.keys()].join(", ")}`);
        console.log(`# book.pdf: ${doc.numPages} pages, ${outline.length} top-level bookmarks, ${fonts.size} fonts (${[...new Set(cjk.map((k) => k.replace(/^[A-Z]{6}\+/, "")))].join(", ")})`);
      } finally {
        await doc.destroy();
      }
      assert(bad.length === 0, bad.slice(0, 12).join("; "));
    });

    await check(`performance: Lighthouse mobile performance of every chapter >= ${LIGHTHOUSE_MIN_CHAPTER}, of the print page >= ${LIGHTHOUSE_MIN_PRINT}; layout shift of every page < ${LIGHTHOUSE_MAX_CLS}`, async () => {
      const { default: lighthouse } = await import("lighthouse");
      const chromeLauncher = await import("chrome-launcher");
      // A browser of its own: Lighthouse drives it over its debugging port, one page at a time.
      const chrome = await chromeLauncher.launch({
        chromePath: CHROMIUM,
        chromeFlags: ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"],
      });
      lighthouseChrome = chrome;
      const bad = [];
      try {
        const pages = [...seriesOrder(root).map((slug) => ({ name: slug, url: `${base}${slug}/`, min: LIGHTHOUSE_MIN_CHAPTER })), { name: "print", url: `${base}print.html`, min: LIGHTHOUSE_MIN_PRINT }];
        for (const p of pages) {
          const run = await lighthouse(p.url, { port: chrome.port, output: "json", logLevel: "error", onlyCategories: ["performance"] });
          const lhr = run.lhr;
          if (lhr.runtimeError) {
            bad.push(`${p.name}: ${lhr.runtimeError.code} ${lhr.runtimeError.message}`);
            continue;
          }
          const score = Math.round(lhr.categories.performance.score * 100);
          const ms = (id) => Math.round(lhr.audits[id]?.numericValue ?? NaN);
          const nodes = lhr.audits["dom-size"]?.numericValue;
          console.log(`# lighthouse ${p.name}: performance ${score} (FCP ${ms("first-contentful-paint")} ms, LCP ${ms("largest-contentful-paint")} ms, TBT ${ms("total-blocking-time")} ms, CLS ${(lhr.audits["cumulative-layout-shift"]?.numericValue ?? NaN).toFixed(3)}, SI ${ms("speed-index")} ms, ${nodes} DOM nodes)`);
          if (score < p.min) bad.push(`${p.name}: ${score} < ${p.min}`);
          // Layout shift depends on layout, not on the machine's speed: the exact bound holds in CI.
          const cls = lhr.audits["cumulative-layout-shift"]?.numericValue;
          if (!(cls < LIGHTHOUSE_MAX_CLS)) {
            const moved = (lhr.audits["layout-shifts"]?.details?.items || []).map((i) => `${i.node?.selector || "?"} ${(i.score ?? 0).toFixed(3)}`);
            bad.push(`${p.name}: layout shift ${cls?.toFixed(3)} >= ${LIGHTHOUSE_MAX_CLS} (${moved.slice(0, 4).join(", ") || "no element named"})`);
          }
        }
      } finally {
        await chrome.kill();
        lighthouseChrome = null;
      }
      assert(bad.length === 0, bad.join("; "));
    });
  } catch (e) {
    if (!finished) {
      results.failed++;
      console.log(`not ok - harness: ${oneLine(e instanceof HarnessError ? e.message : e && e.stack ? e.stack : e)}`);
      if (e instanceof HarnessError) harnessBroken = true;
    }
  } finally {
    clearTimeout(timer);
    await cleanup();
  }
  if (timedOut) return;
  if (harnessBroken) process.exit(2);
  console.log(`# ${((Date.now() - t0) / 1000).toFixed(1)}s; screenshots in ${path.relative(process.cwd(), SCREENSHOT_DIR) || "."}`);
  printSummary();
  process.exit(results.failed ? 1 : 0);
}

function printSummary() {
  const parts = [`${results.passed} passed`, `${results.failed} failed`];
  console.log(parts.join(", "));
}

async function playwrightVersion() {
  try {
    const pkg = JSON.parse(await fsp.readFile(path.join(HERE, "node_modules", "playwright-core", "package.json"), "utf8"));
    return pkg.version;
  } catch {
    return "?";
  }
}

main();
