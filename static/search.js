/*
 * search.js — site search over search-index.json (written by src/render/search.rs). No
 * dependencies, no build step.
 *
 * Markup, in the site header:
 *
 *   <div class="search" role="search" hidden>
 *     <input type="search" class="site-search" placeholder="Search" aria-label="Search the book"
 *            autocomplete="off" spellcheck="false" data-index="/base/search-index.json">
 *   </div>
 *   <script src="/base/search.js" defer></script>
 *
 * The script shows the box (readers without JavaScript never see a dead one), adds a panel with
 * a status line and ul.search-results > li > a + span.search-snippet (matches in <mark>), and
 * fetches the index the first time the box gets focus. `data-index` is optional: by default the
 * index is the search-index.json beside this script, which works under any base path.
 *
 * Keyboard: "/" jumps to the box; Down/Up walk the results; Enter opens the first (or the
 * focused) result; Escape closes the list, then clears the box.
 *
 * How it finds things (why, in src/render/search.rs): the query is cut at spaces and punctuation
 * and where Chinese meets Latin script; each piece must occur in a section (AND),
 * case-insensitively: a Chinese piece anywhere, a Latin one at the start of a word or as a word
 * of the same English stem ("weights" finds "weight": the index holds the text's Snowball
 * English stems, and this script stems the query with the same algorithm, Porter2, vendored in
 * vendor/wink-porter2-stemmer/ and loaded with the index). A Chinese piece the text never
 * contains in one run ("缩放注意力"), or one that falls cleanly into words of two characters or
 * more ("位置编码矩阵"), is cut into the index's terms (the words jieba cut at build time) by
 * forward maximum matching, one character where no term fits, and each must occur; the whole
 * piece and each two neighbouring words only rank a section that has them higher.
 * Ranking is BM25 over occurrences, counting a piece whose term (its stem, for English) is one
 * of the terms the build cut out twice, and headings five times.
 *
 * In Node, require() returns the engine without touching the DOM:
 * { prepare, search, pieces, stemTerm }.
 */
(function () {
  "use strict";

  // The interface's words, in the site's language: the page carries them as JSON
  // (<script type="application/json" id="attnbook-messages">, from src/messages/*.toml).
  var MESSAGES = (function () {
    try {
      var node = typeof document !== "undefined" && document.getElementById("attnbook-messages");
      return node ? JSON.parse(node.textContent) : {};
    } catch (e) {
      return {};
    }
  })();

  // The message `key` with each {name} replaced by values[name]; the key itself if the page
  // has no such message (a site template without the JSON).
  function msg(key, values) {
    var text = Object.prototype.hasOwnProperty.call(MESSAGES, key) ? MESSAGES[key] : key;
    return String(text).replace(/\{(\w+)\}/g, function (all, name) {
      return values && Object.prototype.hasOwnProperty.call(values, name) ? String(values[name]) : all;
    });
  }

  var VERSION = 4; // of search-index.json
  var MAX_RESULTS = 10;
  var SNIPPET_BEFORE = 24; // characters of context around the first match
  var SNIPPET_AFTER = 72;
  var SNIPPET_STRETCH = 16; // characters a snippet may grow so as not to end inside a word
  var BM25_K1 = 1.2; // the usual BM25 constants
  var BM25_B = 0.75;

  // Scripts written without spaces (same ranges as `is_cjk` in src/render/search.rs).
  var CJK = /[\u2E80-\u9FFF\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFFEF\u{20000}-\u{3FFFF}]/u;
  // Separators: white space and sentence punctuation, ASCII and full-width. Brackets and
  // `_ - . ^ \` stay in pieces, so `d_k`, `O(n^2)`, `\sqrt{d}` and `0.5` are found as written.
  var SEPARATORS =
    /[\s,;:!?"'`\u2018-\u201F\u2026\u3000-\u3003\u3008-\u3011\u3014-\u301F\uFF01-\uFF0F\uFF1A-\uFF20\uFF3B-\uFF40\uFF5B-\uFF65]+/u;
  // A Latin piece matches at the start of a word ("soft" finds "softmax", "is" does not find
  // "this"); a Chinese piece matches anywhere, since Chinese words are not delimited.
  var WORD_CHAR = /[a-z0-9]/;
  // A character of a Latin word as the index cuts words (letters, digits, `_`; not CJK).
  var LATIN_WORD_CHAR = /[\p{L}\p{N}_]/u;
  // The words the index stems (the rest are terms as written: `d_k`, `seq2seq`).
  var STEMMED = /^[a-z]+$/;

  // Porter2 (Snowball English), as the index's rust-stemmers: in Node from beside this file, in
  // a browser loaded with the index (see `loadStemmer`). Without it English words match by
  // prefix only.
  var stemmer = null;
  if (typeof module !== "undefined" && module.exports && typeof require === "function") {
    try {
      stemmer = require("./vendor/wink-porter2-stemmer/wink-porter2-stemmer.js");
    } catch (e) {
      stemmer = null;
    }
  }

  // Words Snowball English leaves as they are that wink-porter2-stemmer 2.0.1 does not (its
  // invariant exceptions lack `howe`); tests/search.rs compares both stemmers. (On Snowball's
  // own English vocabulary of 29,403 ASCII words the two agreed on every one.)
  var INVARIANT = { howe: true };

  /** A lowercase Latin word as the index holds it (`english_term` in src/render/search.rs). */
  function stemTerm(word) {
    if (!stemmer || !STEMMED.test(word) || INVARIANT[word] === true) return word;
    return stemmer(word);
  }

  /* ------------------------------------------------------------------------------------------
   * Engine
   * ---------------------------------------------------------------------------------------- */

  /** The fetched JSON, made ready to search. Throws on a file of another version. */
  function prepare(raw) {
    if (!raw || raw.version !== VERSION) {
      throw new Error("search index version " + (raw && raw.version) + ", expected " + VERSION);
    }
    var terms = new Map();
    var longest = 1;
    raw.terms.forEach(function (term, i) {
      terms.set(term, i);
      // The longest Chinese word: how far forward maximum matching looks.
      if (CJK.test(term)) longest = Math.max(longest, Array.from(term).length);
    });
    var total = 0;
    var docs = raw.docs.map(function (d) {
      var head = d.h === undefined ? d.t : d.h;
      total += d.n;
      return {
        title: d.t,
        heading: d.h === undefined ? null : d.h,
        url: d.u,
        body: d.b,
        lowBody: d.b.toLowerCase(),
        // The TeX of the section's inline formulas (the body has them as readable text):
        // matched, so that `\sqrt{d}` finds its section, but never shown.
        lowMath: (d.m || "").toLowerCase(),
        lowHead: head.toLowerCase(),
        length: Math.max(d.n, 1),
      };
    });
    return {
      docs: docs,
      terms: terms,
      postings: raw.postings,
      longest: longest,
      headingWeight: raw.heading_weight,
      averageLength: docs.length ? Math.max(total / docs.length, 1) : 1,
    };
  }

  /** The query cut into lowercase pieces, each all-CJK or all-other; duplicates dropped. */
  function pieces(query) {
    var out = [];
    query
      .toLowerCase()
      .split(SEPARATORS)
      .forEach(function (token) {
        var run = "";
        var runCjk = false;
        Array.from(token).forEach(function (ch) {
          var cjk = CJK.test(ch);
          if (run && cjk !== runCjk) {
            out.push(run);
            run = "";
          }
          run += ch;
          runCjk = cjk;
        });
        if (run) out.push(run);
      });
    return out.filter(function (p, i) {
      return out.indexOf(p) === i;
    });
  }

  function isCjk(piece) {
    return CJK.test(piece);
  }

  /** Whether `needle` (lowercase) occurs at `i` of `haystack` (lowercase) as a match. */
  function matchesAt(haystack, needle, i) {
    return (
      haystack.startsWith(needle, i) &&
      (i === 0 || !WORD_CHAR.test(needle[0]) || !WORD_CHAR.test(haystack[i - 1]))
    );
  }

  /** The first match of `needle` at or after `from`, or -1. */
  function find(haystack, needle, from) {
    for (var i = haystack.indexOf(needle, from); i !== -1; i = haystack.indexOf(needle, i + 1)) {
      if (matchesAt(haystack, needle, i)) return i;
    }
    return -1;
  }

  function occurrences(haystack, needle) {
    var n = 0;
    for (var i = find(haystack, needle, 0); i !== -1; i = find(haystack, needle, i + needle.length)) {
      n++;
    }
    return n;
  }

  /**
   * Per document, how often `piece` occurs: substrings, plus the words the build cut out that
   * are the piece (Chinese) or have its stem (Latin).
   */
  function frequencies(index, piece) {
    var tf = index.docs.map(function (d) {
      return (
        occurrences(d.lowBody, piece) +
        occurrences(d.lowMath, piece) +
        index.headingWeight * occurrences(d.lowHead, piece)
      );
    });
    var term = index.terms.get(isCjk(piece) ? piece : stemTerm(piece));
    if (term !== undefined) {
      var posting = index.postings[term];
      for (var i = 0; i + 1 < posting.length; i += 2) tf[posting[i]] += posting[i + 1];
    }
    return tf;
  }

  /** Forward maximum matching over the index's words; unknown characters stand alone. */
  function segment(index, piece) {
    var chars = Array.from(piece);
    var out = [];
    for (var i = 0; i < chars.length; ) {
      var n = Math.min(index.longest, chars.length - i);
      while (n > 1 && !index.terms.has(chars.slice(i, i + n).join(""))) n--;
      out.push(chars.slice(i, i + n).join(""));
      i += n;
    }
    return out;
  }

  /**
   * Searches a prepared index. Returns every matching section, best first:
   * { url, title, heading, score, label: parts, snippet: parts }, where parts are
   * [{ text, mark }] and `label` is "title" or "title › heading".
   */
  function search(index, query) {
    var wanted = pieces(query);
    var allLatin = wanted.every(function (p) {
      return !isCjk(p);
    });
    if (!wanted.length || (allLatin && wanted.join("").length < 2)) return [];
    var found = []; // [piece, tf per doc, required]
    for (var k = 0; k < wanted.length; k++) {
      var piece = wanted[k];
      var tf = frequencies(index, piece);
      if (isCjk(piece) && Array.from(piece).length > 1) {
        // Cut into the index's words: where the text lacks the whole string, or where the cut
        // is clean (words of two characters or more), so that "位置编码矩阵" also finds the
        // sections that say 位置编码 and 矩阵 apart. The words are required; the whole string
        // and each two neighbouring words only rank the sections that have them higher.
        var words = segment(index, piece);
        var clean = words.every(function (w) {
          return Array.from(w).length > 1;
        });
        if (words.length > 1 && (clean || !tf.some(Boolean))) {
          if (tf.some(Boolean)) found.push([piece, tf, false]);
          for (var w = 0; words.length > 2 && w + 1 < words.length; w++) {
            var pair = words[w] + words[w + 1];
            var pairTf = frequencies(index, pair);
            if (pairTf.some(Boolean)) found.push([pair, pairTf, false]);
          }
          wanted.splice.apply(wanted, [k + 1, 0].concat(words));
          continue;
        }
      }
      if (!tf.some(Boolean)) return [];
      found.push([piece, tf, true]);
    }
    var n = index.docs.length;
    var scores = index.docs.map(function () {
      return 0;
    });
    found.forEach(function (entry) {
      var tf = entry[1];
      var required = entry[2];
      var df = tf.filter(Boolean).length;
      var idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      tf.forEach(function (f, d) {
        if (scores[d] < 0) return;
        if (!f) {
          if (required) scores[d] = -1; // AND: a piece this section lacks rules it out
          return;
        }
        var norm = 1 - BM25_B + (BM25_B * index.docs[d].length) / index.averageLength;
        scores[d] += (idf * f * (BM25_K1 + 1)) / (f + BM25_K1 * norm);
      });
    });
    var needles = found.map(function (entry) {
      return entry[0];
    });
    // The whole strings of cut queries: a snippet shows the first place that has one.
    var phrases = found
      .filter(function (entry) {
        return !entry[2];
      })
      .map(function (entry) {
        return entry[0];
      });
    // Words of these stems are matches too (marked whole, "weight" for the query "weights").
    var stems = needles
      .filter(function (p) {
        return stemmer && STEMMED.test(p);
      })
      .map(stemTerm);
    var hits = [];
    scores.forEach(function (score, d) {
      if (score > 0) hits.push({ d: d, score: score });
    });
    hits.sort(function (a, b) {
      return b.score - a.score || a.d - b.d;
    });
    return hits.map(function (hit) {
      var doc = index.docs[hit.d];
      var searched = doc.heading === null ? doc.title : doc.heading;
      var low = searched.toLowerCase();
      return {
        url: doc.url,
        title: doc.title,
        heading: doc.heading,
        score: hit.score,
        label: (doc.heading === null ? [] : [{ text: doc.title + " › ", mark: false }]).concat(
          highlight(low.length === searched.length ? searched : low, low, needles, stems, 0, low.length)
        ),
        snippet: snippet(doc, needles, stems, phrases),
      };
    });
  }

  /** The end of the Latin word that starts at `i` of `low`, or -1 if none starts there. */
  function wordEnd(low, i) {
    if (!isWordChar(low, i) || isWordChar(low, i - 1)) return -1;
    var end = i;
    while (isWordChar(low, end)) end++;
    return end;
  }

  function isWordChar(low, i) {
    return i >= 0 && i < low.length && LATIN_WORD_CHAR.test(low[i]) && !CJK.test(low[i]);
  }

  /** The length of the word of one of `stems` that starts at `i` of `low`, or 0. */
  function stemMatchAt(low, stems, i) {
    if (!stems.length) return 0;
    var end = wordEnd(low, i);
    if (end === -1) return 0;
    var word = low.slice(i, end);
    return STEMMED.test(word) && stems.indexOf(stemTerm(word)) !== -1 ? end - i : 0;
  }

  /** The first match of a needle or of a word of one of `stems` in `low`, or -1. */
  function firstMatch(low, needles, stems) {
    var first = -1;
    needles.forEach(function (needle) {
      var at = find(low, needle, 0);
      if (at !== -1 && (first === -1 || at < first)) first = at;
    });
    if (stems.length) {
      var words = /[a-z]+/g;
      for (var m = words.exec(low); m && (first === -1 || m.index < first); m = words.exec(low)) {
        if (stemMatchAt(low, stems, m.index)) return m.index;
      }
    }
    return first;
  }

  /**
   * A window of the text around the first match (of the first of `phrases` the text has, if
   * any), cut into plain and marked parts.
   */
  function snippet(doc, needles, stems, phrases) {
    // toLowerCase keeps lengths for all but a few letters (İ); then show the lowercase text.
    var text = doc.body.length === doc.lowBody.length ? doc.body : doc.lowBody;
    var low = doc.lowBody;
    var first = -1;
    for (var p = 0; p < phrases.length && first === -1; p++) first = find(low, phrases[p], 0);
    if (first === -1) first = firstMatch(low, needles, stems);
    var start = first === -1 ? 0 : Math.max(0, first - SNIPPET_BEFORE);
    var end = Math.min(text.length, (first === -1 ? 0 : first) + SNIPPET_AFTER);
    // Cut between words: the start moves forward (never past the match), the end stretches to
    // the end of its word, or falls back to its start if the word is long (a formula).
    while (start < Math.max(first, 0) && insideRun(text, start)) start++;
    var stretched = end;
    while (stretched - end < SNIPPET_STRETCH && insideRun(text, stretched)) stretched++;
    if (insideRun(text, stretched)) {
      while (end > start && insideRun(text, end)) end--;
    } else {
      end = stretched;
    }
    // Never cut a surrogate pair in half.
    if (start > 0 && /[\uDC00-\uDFFF]/.test(text[start])) start--;
    if (end < text.length && /[\uDC00-\uDFFF]/.test(text[end])) end++;
    var parts = highlight(text, low, needles, stems, start, end);
    if (start > 0) parts.unshift({ text: "…", mark: false });
    if (end < text.length) parts.push({ text: "…", mark: false });
    return parts;
  }

  /**
   * Whether position `i` of `text` lies inside a run of Latin text: a word, a number, a
   * formula's plain text. CJK text may be cut anywhere.
   */
  function insideRun(text, i) {
    return i > 0 && i < text.length && runChar(text[i - 1]) && runChar(text[i]);
  }

  function runChar(ch) {
    return !/\s/.test(ch) && !CJK.test(ch);
  }

  /**
   * `text` from `start` to `end` cut into plain and marked parts (`low` is it in lowercase):
   * the needles, and whole words of one of `stems`.
   */
  function highlight(text, low, needles, stems, start, end) {
    var sorted = needles.slice().sort(function (a, b) {
      return b.length - a.length;
    });
    var parts = [];
    var plain = "";
    for (var i = start; i < end; ) {
      var hit = null;
      for (var k = 0; k < sorted.length && !hit; k++) {
        if (matchesAt(low, sorted[k], i)) hit = sorted[k];
      }
      var length = Math.max(hit ? hit.length : 0, stemMatchAt(low, stems, i));
      if (length) {
        if (plain) parts.push({ text: plain, mark: false });
        parts.push({ text: text.slice(i, i + length), mark: true });
        plain = "";
        i += length;
      } else {
        plain += text[i];
        i++;
      }
    }
    if (plain) parts.push({ text: plain, mark: false });
    return parts;
  }

  var engine = { prepare: prepare, search: search, pieces: pieces, stemTerm: stemTerm };

  if (typeof module !== "undefined" && module.exports) {
    module.exports = engine;
  }
  if (typeof document === "undefined") return;

  /* ------------------------------------------------------------------------------------------
   * Page
   * ---------------------------------------------------------------------------------------- */

  var script = document.currentScript;
  var loading = null; // one fetch per page, shared by every box

  function indexUrl(input) {
    var explicit = input.getAttribute("data-index");
    if (explicit) return explicit;
    return new URL("search-index.json", script ? script.src : document.baseURI).href;
  }

  /**
   * Loads the stemmer (vendor/wink-porter2-stemmer/, beside this script) alongside the index, so
   * that pages that are never searched do not fetch it. Resolves even if it fails to load.
   */
  function loadStemmer() {
    if (stemmer) return Promise.resolve();
    if (window.attnbookPorter2) {
      stemmer = window.attnbookPorter2;
      return Promise.resolve();
    }
    return new Promise(function (resolve) {
      var tag = document.createElement("script");
      tag.src = new URL(
        "vendor/wink-porter2-stemmer/wink-porter2-stemmer.js",
        script ? script.src : document.baseURI
      ).href;
      tag.onload = tag.onerror = function () {
        stemmer = window.attnbookPorter2 || null;
        resolve();
      };
      document.head.appendChild(tag);
    });
  }

  function load(input) {
    if (!loading) {
      var index = fetch(indexUrl(input)).then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      });
      loading = Promise.all([index, loadStemmer()]).then(function (loaded) {
        return prepare(loaded[0]);
      });
    }
    return loading;
  }

  function typing(target) {
    return (
      target &&
      (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName || ""))
    );
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text) node.textContent = text;
    return node;
  }

  /** Appends text parts to `node`, the marked ones in <mark>; never parses HTML. */
  function marked(node, parts) {
    parts.forEach(function (part) {
      node.appendChild(part.mark ? el("mark", null, part.text) : document.createTextNode(part.text));
    });
    return node;
  }

  var counter = 0;

  function setup(input) {
    var box = input.closest(".search") || input.parentElement;
    box.hidden = false;
    input.hidden = false;
    var id = "search-results-" + ++counter;
    var panel = el("div", "search-panel");
    var status = el("p", "search-status");
    status.id = id + "-status";
    status.setAttribute("role", "status");
    var list = el("ul", "search-results");
    list.id = id;
    list.setAttribute("aria-label", msg("search_results"));
    panel.appendChild(status);
    panel.appendChild(list);
    panel.hidden = true;
    box.appendChild(panel);
    input.setAttribute("aria-controls", id);
    input.setAttribute("aria-describedby", status.id);
    if (!input.getAttribute("aria-keyshortcuts")) input.setAttribute("aria-keyshortcuts", "/");

    var index = null;
    var failed = false;

    function links() {
      return Array.prototype.slice.call(list.querySelectorAll("a"));
    }

    function open(show) {
      panel.hidden = !show;
    }

    function render() {
      var query = input.value.trim();
      list.textContent = "";
      if (!query) {
        status.textContent = "";
        open(false);
        return;
      }
      open(true);
      if (failed) {
        status.textContent = msg("search_failed");
        return;
      }
      if (!index) {
        status.textContent = msg("search_loading");
        return;
      }
      var hits = search(index, query);
      status.textContent = hits.length
        ? msg("search_found", { n: hits.length }) +
          (hits.length > MAX_RESULTS ? msg("search_found_more", { max: MAX_RESULTS }) : "")
        : msg("search_none", { query: query });
      hits.slice(0, MAX_RESULTS).forEach(function (hit) {
        var li = el("li");
        var a = marked(el("a"), hit.label);
        a.href = hit.url;
        var text = marked(el("span", "search-snippet"), hit.snippet);
        li.appendChild(a);
        li.appendChild(text);
        list.appendChild(li);
      });
    }

    function start() {
      load(input).then(
        function (prepared) {
          index = prepared;
          render();
        },
        function () {
          failed = true;
          render();
        }
      );
    }

    input.addEventListener("focus", function () {
      start();
      if (input.value.trim()) render();
    });
    input.addEventListener("input", render);
    input.addEventListener("keydown", function (e) {
      var all = links();
      if (e.key === "ArrowDown" && all.length) {
        e.preventDefault();
        open(true);
        all[0].focus();
      } else if (e.key === "Enter" && all.length) {
        e.preventDefault();
        all[0].click();
      } else if (e.key === "Escape" && !panel.hidden) {
        // First Escape closes the list; the next one clears the box (the browser's own way).
        e.preventDefault();
        open(false);
      }
    });
    list.addEventListener("keydown", function (e) {
      var all = links();
      var at = all.indexOf(document.activeElement);
      if (at === -1) return;
      var next = null;
      if (e.key === "ArrowDown") next = all[at + 1] || null;
      else if (e.key === "ArrowUp") next = at > 0 ? all[at - 1] : input;
      else if (e.key === "Home") next = all[0];
      else if (e.key === "End") next = all[all.length - 1];
      else if (e.key === "Escape") {
        open(false);
        next = input;
      }
      if (next) {
        e.preventDefault();
        next.focus();
      }
    });
    // Keep the focus in the box while a result is clicked: browsers that do not focus links on
    // click (Safari) would otherwise close the list before the click lands.
    panel.addEventListener("mousedown", function (e) {
      e.preventDefault();
    });
    // A result on this page only scrolls: close the list so it does not cover the section.
    list.addEventListener("click", function (e) {
      if (e.target.closest && e.target.closest("a")) open(false);
    });
    box.addEventListener("focusout", function (e) {
      if (!e.relatedTarget || !box.contains(e.relatedTarget)) open(false);
    });
  }

  function init() {
    var inputs = document.querySelectorAll("input.site-search");
    if (!inputs.length) return;
    Array.prototype.forEach.call(inputs, setup);
    document.addEventListener("keydown", function (e) {
      if (e.key === "/" && !e.ctrlKey && !e.metaKey && !e.altKey && !typing(e.target)) {
        e.preventDefault();
        inputs[0].focus();
      }
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
