#!/usr/bin/env node
/*
 * Lighthouse mobile performance of a built site, for docs/performance.md (the browser checks
 * in run.mjs only test a bound). Serves SITE_DIR under /series/ gzipped, as GitHub Pages does,
 * and runs Lighthouse's mobile performance audit on each page RUNS times, pages interleaved
 * (one page's runs see the load the others see), then prints the median score and metrics per
 * page, with where the main thread spent its time (mainthread-work-breakdown) in the median run.
 *
 *   node tests/browser/lighthouse.mjs SITE_DIR [RUNS=3] [PAGE ...]
 *   node tests/browser/lighthouse.mjs /tmp/site 3 bahdanau print.html
 *
 * A PAGE is a chapter slug or a file (print.html); with none, every chapter of the site's
 * index and print.html. With A_SITE and B_SITE set instead of SITE_DIR (SITE_DIR = "-"), both
 * are measured, alternating per run, so an A/B comparison sees the same machine load.
 */

import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import os from "node:os";
import zlib from "node:zlib";

const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const PREFIX = "/series/";
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml; charset=utf-8",
  ".woff2": "font/woff2",
  ".png": "image/png",
};

function serve(root) {
  const server = http.createServer((req, res) => {
    let rel = decodeURIComponent(new URL(req.url, "http://x").pathname);
    if (!rel.startsWith(PREFIX)) return res.writeHead(404).end();
    let file = path.join(root, rel.slice(PREFIX.length));
    if (fs.existsSync(file) && fs.statSync(file).isDirectory()) file = path.join(file, "index.html");
    if (!fs.existsSync(file)) return res.writeHead(404).end();
    const type = TYPES[path.extname(file)] || "application/octet-stream";
    let body = fs.readFileSync(file);
    const headers = { "Content-Type": type, "Cache-Control": "no-cache" };
    if (/gzip/.test(req.headers["accept-encoding"] || "") && /^(text\/|application\/json|image\/svg)/.test(type)) {
      body = zlib.gzipSync(body);
      headers["Content-Encoding"] = "gzip";
    }
    res.writeHead(200, headers).end(body);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, base: `http://127.0.0.1:${server.address().port}${PREFIX}` })));
}

function chapters(root) {
  const html = fs.readFileSync(path.join(root, "index.html"), "utf8");
  const slugs = [];
  for (const m of html.matchAll(/href="\/series\/([a-z0-9-]+)\/"/g)) if (!slugs.includes(m[1]) && fs.existsSync(path.join(root, m[1], "index.html")) && !["tags", "categories", "verification"].includes(m[1])) slugs.push(m[1]);
  return slugs;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const [siteArg, runsArg, ...pageArgs] = process.argv.slice(2);
  const sites = siteArg && siteArg !== "-" ? { site: siteArg } : { A: process.env.A_SITE, B: process.env.B_SITE };
  if (Object.values(sites).some((s) => !s)) {
    console.error("usage: node tests/browser/lighthouse.mjs SITE_DIR [RUNS] [PAGE ...]  (or SITE_DIR=- with A_SITE, B_SITE)");
    process.exit(2);
  }
  const runs = Number(runsArg || 3);
  const first = Object.values(sites)[0];
  const pages = pageArgs.length ? pageArgs : [...chapters(first), "print.html"];
  const servers = {};
  for (const [k, dir] of Object.entries(sites)) servers[k] = await serve(dir);
  const { default: lighthouse } = await import("lighthouse");
  const chromeLauncher = await import("chrome-launcher");
  const chrome = await chromeLauncher.launch({ chromePath: CHROMIUM, chromeFlags: ["--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run"] });
  const results = {}; // site -> page -> [run]
  console.log(`# load average before: ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  try {
    for (let r = 0; r < runs; r++) {
      for (const p of pages) {
        for (const [k, { base }] of Object.entries(servers)) {
          const url = p.includes(".") ? base + p : `${base}${p}/`;
          const { lhr } = await lighthouse(url, { port: chrome.port, output: "json", logLevel: "error", onlyCategories: ["performance"] });
          if (lhr.runtimeError) {
            console.log(`${k} ${p}: ${lhr.runtimeError.code}`);
            continue;
          }
          const a = lhr.audits;
          const v = (id) => Math.round(a[id]?.numericValue ?? NaN);
          const breakdown = Object.fromEntries((a["mainthread-work-breakdown"]?.details?.items || []).map((i) => [i.group, Math.round(i.duration)]));
          const boot = (a["bootup-time"]?.details?.items || []).map((i) => `${i.url.replace(/^.*\/series\//, "")} ${Math.round(i.total)}/${Math.round(i.scripting)}`);
          const run = { score: Math.round(lhr.categories.performance.score * 100), fcp: v("first-contentful-paint"), lcp: v("largest-contentful-paint"), tbt: v("total-blocking-time"), cls: a["cumulative-layout-shift"]?.numericValue ?? NaN, si: v("speed-index"), nodes: a["dom-size"]?.numericValue, breakdown, boot };
          ((results[k] ||= {})[p] ||= []).push(run);
          console.log(`# run ${r + 1} ${k} ${p}: ${run.score} (FCP ${run.fcp}, LCP ${run.lcp}, TBT ${run.tbt}, CLS ${run.cls.toFixed(3)}, SI ${run.si}, ${run.nodes} nodes) ${JSON.stringify(breakdown)} ${boot.join(", ")}`);
        }
      }
    }
  } finally {
    await chrome.kill();
    for (const { server } of Object.values(servers)) server.close();
  }
  console.log(`# load average after: ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  console.log(`| page | ${Object.keys(sites).map((k) => `${k === "site" ? "" : k + " "}score (runs)`).join(" | ")} | FCP ms | LCP ms | TBT ms | CLS | SI ms | DOM nodes |`);
  for (const p of pages) {
    const cells = [];
    let last;
    for (const k of Object.keys(sites)) {
      const rs = results[k]?.[p] || [];
      cells.push(`${median(rs.map((x) => x.score))} (${rs.map((x) => x.score).join(", ")})`);
      last = rs;
    }
    const m = (f) => median(last.map(f));
    console.log(`| ${p} | ${cells.join(" | ")} | ${m((x) => x.fcp)} | ${m((x) => x.lcp)} | ${m((x) => x.tbt)} | ${m((x) => x.cls).toFixed(3)} | ${m((x) => x.si)} | ${last[0]?.nodes} |`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
