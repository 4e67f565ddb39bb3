#!/usr/bin/env node
/*
 * Prints a built site's print page (print.html) to book.pdf beside it, with headless Chromium.
 *
 *   node scripts/pdf.mjs SITE_DIR              # writes SITE_DIR/book.pdf
 *   node scripts/pdf.mjs SITE_DIR --out FILE   # writes FILE
 *
 * SITE_DIR is the output of `attnbook build` (with `[print] pdf = true` every page links
 * book.pdf; see docs/authoring.md, "The print page"). The site is served on 127.0.0.1 under the
 * path of its base URL (read from print.html's canonical link), so its root-relative links and
 * fonts resolve as on the published site. Chromium ($CHROMIUM_PATH, else /usr/bin/chromium,
 * chromium, google-chrome) is driven over the DevTools protocol on a pipe: no npm package. It
 * waits for the web fonts under print media, then Page.printToPDF with
 *   - generateDocumentOutline: the headings (chapters h1, sections h2, ...) become bookmarks;
 *   - generateTaggedPDF: a tagged (accessible) PDF;
 *   - preferCSSPageSize: the page size and margins of style.css's @page, whose bottom margin
 *     box prints the page number (CSS, so a reader's own "Save as PDF" numbers pages too).
 * Chromium embeds (a subset of) every font it uses, the CJK system font included
 * (fonts-noto-cjk on Debian and Ubuntu).
 *
 * Output: one line `book.pdf: N pages, K KiB`. Exit 1 on any failure, with the reason.
 */

import http from "node:http";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { spawn, execFileSync } from "node:child_process";

const TIMEOUT_MS = Number(process.env.PDF_TIMEOUT_MS || 300_000);
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".woff2": "font/woff2",
  ".woff": "font/woff",
  ".ttf": "font/ttf",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".webp": "image/webp",
};

function fail(message) {
  console.error(`scripts/pdf.mjs: ${message}`);
  process.exit(1);
}

function parseArgs(argv) {
  let site = null;
  let out = null;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--out") out = argv[++i];
    else if (argv[i] === "-h" || argv[i] === "--help") {
      console.log("usage: node scripts/pdf.mjs SITE_DIR [--out FILE]");
      process.exit(0);
    } else if (site === null) site = argv[i];
    else fail(`unexpected argument ${argv[i]} (usage: node scripts/pdf.mjs SITE_DIR [--out FILE])`);
  }
  if (!site) fail("usage: node scripts/pdf.mjs SITE_DIR [--out FILE]");
  return { site: path.resolve(site), out: path.resolve(out ?? path.join(site, "book.pdf")) };
}

/** The path of the site's base URL (`/repo/`), from print.html's canonical link. */
function basePath(printHtml) {
  const m = printHtml.match(/<link rel="canonical" href="([^"]*)">/);
  if (!m) fail("print.html has no <link rel=\"canonical\">: is it an attnbook print page?");
  const url = new URL(m[1], "http://localhost/");
  if (!url.pathname.endsWith("/print.html")) fail(`print.html's canonical URL ${m[1]} does not end in /print.html`);
  return url.pathname.slice(0, -"print.html".length);
}

/** Serves `root` under `prefix` on 127.0.0.1; resolves to the server, listening. */
function serve(root, prefix) {
  const server = http.createServer(async (req, res) => {
    const pathname = decodeURIComponent(new URL(req.url, "http://127.0.0.1").pathname);
    let file = pathname.startsWith(prefix) ? path.join(root, pathname.slice(prefix.length)) : null;
    if (file && !path.resolve(file).startsWith(root)) file = null;
    try {
      if (file && (await fsp.stat(file)).isDirectory()) file = path.join(file, "index.html");
      const body = file ? await fsp.readFile(file) : null;
      if (!body) throw new Error("outside the site");
      res.writeHead(200, { "Content-Type": TYPES[path.extname(file)] || "application/octet-stream" });
      res.end(body);
    } catch {
      res.writeHead(404, { "Content-Type": "text/plain" });
      res.end("not found\n");
    }
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

function findChromium() {
  const candidates = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"];
  for (const c of candidates.filter(Boolean)) {
    try {
      execFileSync(c, ["--version"], { stdio: "ignore" });
      return c;
    } catch {
      /* next */
    }
  }
  fail("no Chromium found: install it (apt-get install -y chromium fonts-noto-cjk) or set CHROMIUM_PATH");
}

/** A DevTools-protocol connection over Chromium's --remote-debugging-pipe (fd 3 in, fd 4 out). */
function connect(child) {
  const pending = new Map();
  const listeners = [];
  let nextId = 1;
  let buffer = Buffer.alloc(0);
  child.stdio[4].on("data", (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    let end;
    while ((end = buffer.indexOf(0)) >= 0) {
      const message = JSON.parse(buffer.subarray(0, end).toString("utf8"));
      buffer = buffer.subarray(end + 1);
      if (message.id && pending.has(message.id)) {
        const { resolve, reject, method } = pending.get(message.id);
        pending.delete(message.id);
        if (message.error) reject(new Error(`${method}: ${message.error.message}`));
        else resolve(message.result);
      } else if (message.method) {
        for (const l of listeners) l(message);
      }
    }
  });
  return {
    send(method, params = {}, sessionId) {
      const id = nextId++;
      child.stdio[3].write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + "\0");
      return new Promise((resolve, reject) => pending.set(id, { resolve, reject, method }));
    },
    once(method, sessionId) {
      return new Promise((resolve) => {
        const l = (m) => {
          if (m.method === method && m.sessionId === sessionId) {
            listeners.splice(listeners.indexOf(l), 1);
            resolve(m.params);
          }
        };
        listeners.push(l);
      });
    },
  };
}

async function main() {
  const { site, out } = parseArgs(process.argv.slice(2));
  const printFile = path.join(site, "print.html");
  if (!fs.existsSync(printFile)) fail(`${printFile} not found: build the site first (with the print page on)`);
  const prefix = basePath(fs.readFileSync(printFile, "utf8"));
  const server = await serve(site, prefix);
  const url = `http://127.0.0.1:${server.address().port}${prefix}print.html`;
  const profile = await fsp.mkdtemp(path.join(os.tmpdir(), "attnbook-pdf-"));
  const args = [
    "--headless",
    "--remote-debugging-pipe",
    `--user-data-dir=${profile}`,
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    ...(process.getuid?.() === 0 ? ["--no-sandbox"] : []),
    "about:blank",
  ];
  const child = spawn(findChromium(), args, { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr = (stderr + d).slice(-4000)));
  const timer = setTimeout(() => {
    child.kill("SIGKILL");
    fail(`timed out after ${TIMEOUT_MS / 1000} s printing ${url}`);
  }, TIMEOUT_MS);
  child.on("exit", (code) => {
    if (code !== 0 && code !== null) fail(`Chromium exited with ${code}:\n${stderr}`);
  });
  try {
    const cdp = connect(child);
    const { targetId } = await cdp.send("Target.createTarget", { url: "about:blank" });
    const { sessionId } = await cdp.send("Target.attachToTarget", { targetId, flatten: true });
    await cdp.send("Page.enable", {}, sessionId);
    const loaded = cdp.once("Page.loadEventFired", sessionId);
    const nav = await cdp.send("Page.navigate", { url }, sessionId);
    if (nav.errorText) throw new Error(`loading ${url}: ${nav.errorText}`);
    await loaded;
    // The fonts print media lays out (KaTeX's among them) are loaded before printing.
    await cdp.send("Emulation.setEmulatedMedia", { media: "print" }, sessionId);
    const fonts = await cdp.send(
      "Runtime.evaluate",
      {
        expression: "document.body.offsetHeight, document.fonts.ready.then(() => document.fonts.status)",
        awaitPromise: true,
        returnByValue: true,
      },
      sessionId,
    );
    if (fonts.result?.value !== "loaded") throw new Error(`fonts did not load: ${JSON.stringify(fonts.result)}`);
    const { data } = await cdp.send(
      "Page.printToPDF",
      {
        printBackground: true,
        preferCSSPageSize: true,
        generateDocumentOutline: true,
        generateTaggedPDF: true,
      },
      sessionId,
    );
    const pdf = Buffer.from(data, "base64");
    if (pdf.subarray(0, 5).toString() !== "%PDF-") throw new Error("Page.printToPDF did not return a PDF");
    await fsp.mkdir(path.dirname(out), { recursive: true });
    await fsp.writeFile(out, pdf);
    const pages = (pdf.toString("latin1").match(/\/Type\s*\/Page(?![s\w])/g) || []).length;
    console.log(`${path.basename(out)}: ${pages} pages, ${(pdf.length / 1024).toFixed(0)} KiB`);
    await cdp.send("Browser.close").catch(() => {});
  } catch (e) {
    child.kill("SIGKILL");
    fail(e.message);
  } finally {
    clearTimeout(timer);
    server.close();
  }
  await new Promise((r) => (child.exitCode !== null ? r() : child.once("exit", r)));
  await fsp.rm(profile, { recursive: true, force: true });
}

main().catch((e) => fail(e.stack || String(e)));
