/*
 * attnbook.js — theme toggle. No dependencies.
 *
 * Inline this in <head>, before the stylesheet, so a stored choice applies before the first paint
 * (no flash of the wrong theme):
 *
 *   <script>document.documentElement.classList.add("js");try{var t=localStorage.getItem("attnbook-theme");if(t==="light"||t==="dark")document.documentElement.setAttribute("data-theme",t)}catch(e){}</script>
 *
 * Then load this file at the end of <body> (or with `defer`).
 *
 * Modes: "auto" (no data-theme attribute; the CSS follows prefers-color-scheme), "light", "dark"
 * (html[data-theme="light" | "dark"]). The choice is stored in localStorage under "attnbook-theme";
 * "auto" removes the key. button.theme-toggle cycles through the modes, starting with the one
 * that visibly changes the page (from auto on a light system: dark, light, auto). The script sets
 * the button's text, title and aria-label, and removes its `hidden` attribute, so the template
 * can ship the button hidden for readers without JavaScript.
 */
// The interface's words, in the site's language: the page carries them as JSON
// (<script type="application/json" id="attnbook-messages">, from src/messages/*.toml).
var ATTNBOOK_MESSAGES = (function () {
  try {
    var node = document.getElementById("attnbook-messages");
    return node ? JSON.parse(node.textContent) : {};
  } catch (e) {
    return {};
  }
})();

// The message `key` with each {name} replaced by values[name]; the key itself if the page
// has no such message (a site template without the JSON).
function attnbookMsg(key, values) {
  var text = Object.prototype.hasOwnProperty.call(ATTNBOOK_MESSAGES, key) ? ATTNBOOK_MESSAGES[key] : key;
  return String(text).replace(/\{(\w+)\}/g, function (all, name) {
    return values && Object.prototype.hasOwnProperty.call(values, name) ? String(values[name]) : all;
  });
}

(function () {
  "use strict";

  var KEY = "attnbook-theme";

  var LABELS = { auto: attnbookMsg("theme_auto"), light: attnbookMsg("theme_light"), dark: attnbookMsg("theme_dark") };
  var root = document.documentElement;

  function stored() {
    try {
      var t = window.localStorage.getItem(KEY);
      return t === "light" || t === "dark" ? t : "auto";
    } catch (e) {
      return "auto"; // storage disabled (private mode, blocked cookies)
    }
  }

  function store(mode) {
    try {
      if (mode === "auto") window.localStorage.removeItem(KEY);
      else window.localStorage.setItem(KEY, mode);
    } catch (e) {
      /* not persisted; the choice still applies to this page */
    }
  }

  function systemDark() {
    return !!(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
  }

  function current() {
    var t = root.getAttribute("data-theme");
    return t === "light" || t === "dark" ? t : "auto";
  }

  // auto -> the scheme the page is not showing -> the other one -> auto
  function next(mode) {
    var sys = systemDark() ? "dark" : "light";
    var other = sys === "dark" ? "light" : "dark";
    if (mode === "auto") return other;
    if (mode === other) return sys;
    return "auto";
  }

  function apply(mode) {
    if (mode === "auto") root.removeAttribute("data-theme");
    else root.setAttribute("data-theme", mode);
  }

  function label(button, mode) {
    button.textContent = LABELS[mode];
    var text = attnbookMsg("theme_title", { mode: LABELS[mode], next: LABELS[next(mode)] });
    button.setAttribute("title", text);
    button.setAttribute("aria-label", text);
  }

  // Apply the stored mode too, in case the inline snippet is missing.
  apply(stored());

  function init() {
    var buttons = document.querySelectorAll("button.theme-toggle");
    if (!buttons.length) return;
    function refresh() {
      var mode = current();
      for (var i = 0; i < buttons.length; i++) label(buttons[i], mode);
    }
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].hidden = false;
      buttons[i].addEventListener("click", function () {
        var mode = next(current());
        apply(mode);
        store(mode);
        refresh();
      });
    }
    refresh();
    // "auto" cycles relative to the system scheme, so relabel when it changes.
    if (window.matchMedia) {
      var mq = window.matchMedia("(prefers-color-scheme: dark)");
      if (mq.addEventListener) mq.addEventListener("change", refresh);
      else if (mq.addListener) mq.addListener(refresh);
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();

/*
 * Buttons in the corner of code blocks (div.code-buttons in every `article pre`):
 * - copy: copies the code as the reader sees it. Hidden `# ` lines of experiments are on the
 *   page in span.boring, which the stylesheet hides; innerText leaves out what is not rendered,
 *   so they are copied exactly when revealed.
 * - toggle (only where the code has hidden lines): reveals or hides them, as mdBook's eye does,
 *   by the class `show-hidden` on the pre; aria-pressed tells its state.
 * Folded blocks (details.fold) open for printing and close again after (browsers without
 * ::details-content print a closed details closed, whatever the print stylesheet says).
 */
(function () {
  "use strict";

  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    // Plain http (a LAN preview): fall back to a hidden textarea.
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      document.body.removeChild(area);
      if (ok) resolve(); else reject(new Error("copy failed"));
    });
  }

  function copyButton(code) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "copy-code";
    button.textContent = attnbookMsg("copy");
    button.setAttribute("aria-label", attnbookMsg("copy_label"));
    button.addEventListener("click", function () {
      copy(code.innerText).then(
        function () { button.textContent = attnbookMsg("copied"); },
        function () { button.textContent = attnbookMsg("copy_failed"); }
      );
      setTimeout(function () { button.textContent = attnbookMsg("copy"); }, 1500);
    });
    return button;
  }

  function toggleButton(pre) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "toggle-hidden";
    function label() {
      var shown = pre.classList.contains("show-hidden");
      button.textContent = shown ? attnbookMsg("hidden_hide") : attnbookMsg("hidden_show");
      button.setAttribute("aria-pressed", shown ? "true" : "false");
      button.setAttribute("title", attnbookMsg("hidden_title"));
    }
    button.addEventListener("click", function () {
      pre.classList.toggle("show-hidden");
      label();
    });
    label();
    return button;
  }

  function addButtons(pre) {
    var code = pre.querySelector("code");
    if (!code || pre.querySelector(".code-buttons")) return;
    var bar = document.createElement("div");
    bar.className = "code-buttons";
    if (code.querySelector(".boring")) bar.appendChild(toggleButton(pre));
    bar.appendChild(copyButton(code));
    pre.appendChild(bar);
  }

  // Printing shows folded code: open every closed fold, and close them again afterwards.
  var openedForPrint = [];
  window.addEventListener("beforeprint", function () {
    var folds = document.querySelectorAll("details.fold:not([open])");
    for (var i = 0; i < folds.length; i++) folds[i].open = true;
    openedForPrint = Array.prototype.slice.call(folds);
  });
  window.addEventListener("afterprint", function () {
    for (var i = 0; i < openedForPrint.length; i++) openedForPrint[i].open = false;
    openedForPrint = [];
  });

  function init() {
    var blocks = document.querySelectorAll("article pre");
    for (var i = 0; i < blocks.length; i++) addButtons(blocks[i]);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();

/*
 * Charts from the lab crate: every bar, heatmap cell and line point (`.lab-mark`) carries an SVG
 * <title> that the browser shows on hover without this script. With it, a chart that has marks
 * is one tab stop and the arrow keys move between its marks: Left/Right to the previous/next
 * mark in drawing order (along a bar chart, a heatmap row, a series), Up/Down to the nearest mark
 * straight above/below (the same heatmap column, another series at the same x), Home/End to the
 * first/last. The current mark gets the class `is-current` (a ring in style.css) and its title is
 * announced through a polite live region next to the chart.
 */
(function () {
  "use strict";

  function centre(mark) {
    var b = mark.getBBox();
    return { x: b.x + b.width / 2, y: b.y + b.height / 2, half: Math.max(b.width / 2, 1) };
  }

  // The mark nearest straight below (dir 1) or above (dir -1) mark i, or i itself if none.
  function vertical(marks, i, dir) {
    var from = centre(marks[i]);
    var best = i;
    var bestDy = Infinity;
    for (var j = 0; j < marks.length; j++) {
      var c = centre(marks[j]);
      var dy = (c.y - from.y) * dir;
      if (j !== i && dy > 0 && Math.abs(c.x - from.x) <= from.half && dy < bestDy) {
        best = j;
        bestDy = dy;
      }
    }
    return best;
  }

  // The mark `key` moves to from mark i, or -1 if the key is not ours.
  function target(marks, i, key) {
    switch (key) {
      case "ArrowRight": return Math.min(i + 1, marks.length - 1);
      case "ArrowLeft": return Math.max(i - 1, 0);
      case "ArrowDown": return vertical(marks, i, 1);
      case "ArrowUp": return vertical(marks, i, -1);
      case "Home": return 0;
      case "End": return marks.length - 1;
      default: return -1;
    }
  }

  function setUp(svg) {
    var marks = svg.querySelectorAll(".lab-mark");
    if (!marks.length) return;
    var live = document.createElement("p");
    live.className = "visually-hidden";
    live.setAttribute("aria-live", "polite");
    svg.parentNode.insertBefore(live, svg.nextSibling);
    svg.setAttribute("tabindex", "0");
    var current = 0;
    function show(i) {
      marks[current].classList.remove("is-current");
      current = i;
      marks[i].classList.add("is-current");
      var title = marks[i].querySelector("title");
      live.textContent = title ? title.textContent : "";
    }
    svg.addEventListener("focus", function () { show(current); });
    svg.addEventListener("blur", function () {
      marks[current].classList.remove("is-current");
      live.textContent = "";
    });
    svg.addEventListener("keydown", function (event) {
      var i = target(marks, current, event.key);
      if (i < 0) return;
      event.preventDefault(); // the arrows would scroll the page
      show(i);
    });
  }

  function init() {
    var charts = document.querySelectorAll("svg.lab-chart");
    for (var i = 0; i < charts.length; i++) setUp(charts[i]);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();

/*
 * Provenance of quoted numbers: a.quote links to the code line that recorded its value
 * (span.code-line#L12, the Markdown line). Following such a link, by a click or by opening a
 * page at `#L12`, shows that line wherever it hides: it opens the fold (details.fold) around
 * it, reveals hidden `# ` lines (pre.show-hidden) and the code of a `hide` block
 * (section.show-source, its div.source-only loses `hidden`), then marks the line `is-target`
 * and scrolls it into view. On a touch screen there is no hover, so the first tap on a quoted
 * number shows its title in div.quote-tip, with a link that follows it; a tap elsewhere closes
 * the tip.
 */
(function () {
  "use strict";

  var current = null;

  function reveal(line) {
    for (var node = line.parentNode; node && node !== document; node = node.parentNode) {
      if (node.tagName === "DETAILS" && !node.open) node.open = true;
      if (node.tagName === "PRE" && line.closest(".boring")) node.classList.add("show-hidden");
      if (node.classList && node.classList.contains("source-only")) node.hidden = false;
      if (node.classList && node.classList.contains("hidden-code")) node.classList.add("show-source");
    }
  }

  // Shows the code line the location's hash names, if it is one; true when it did.
  function showTarget() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var line = id && document.getElementById(id);
    if (!line || !line.classList.contains("code-line")) return false;
    reveal(line);
    if (current) current.classList.remove("is-target");
    current = line;
    line.classList.add("is-target");
    line.scrollIntoView({ block: "center" });
    keepInView(line);
    return true;
  }

  // style.css lays out off-screen boxes lazily with a placeholder height: the boxes laid out
  // as the scroll passes them, and the code just revealed, move the line after the browser
  // scrolled to it (ch. 10: 3,500 px below the screen). For two seconds, until the reader
  // scrolls or types, a line that is no longer on the screen is brought back to its middle.
  var watch = null;

  function keepInView(line) {
    if (watch) clearInterval(watch.timer);
    watch = { line: line, until: Date.now() + 2000, timer: setInterval(recheck, 150) };
  }

  function recheck() {
    if (!watch) return;
    if (Date.now() > watch.until) {
      stopWatching();
      return;
    }
    var box = watch.line.getBoundingClientRect();
    if (box.top < 0 || box.bottom > window.innerHeight) {
      watch.line.scrollIntoView({ block: "center", behavior: "instant" });
    }
  }

  function stopWatching() {
    if (watch) clearInterval(watch.timer);
    watch = null;
  }

  ["wheel", "touchstart", "keydown"].forEach(function (type) {
    window.addEventListener(type, stopWatching, { passive: true, capture: true });
  });

  var tip = null;

  function closeTip() {
    if (tip && tip.parentNode) tip.parentNode.removeChild(tip);
    tip = null;
  }

  function openTip(quote) {
    closeTip();
    tip = document.createElement("div");
    tip.className = "quote-tip";
    tip.setAttribute("role", "tooltip");
    tip.textContent = quote.getAttribute("title") || "";
    if (quote.getAttribute("href")) {
      var follow = document.createElement("a");
      follow.href = quote.getAttribute("href");
      follow.textContent = attnbookMsg("follow_code");
      tip.appendChild(document.createElement("br"));
      tip.appendChild(follow);
    }
    document.body.appendChild(tip);
    var box = quote.getBoundingClientRect();
    var left = Math.max(8, Math.min(box.left, window.innerWidth - tip.offsetWidth - 8));
    tip.style.left = left + window.scrollX + "px";
    tip.style.top = box.bottom + window.scrollY + 6 + "px";
    tip.owner = quote;
  }

  var lastPointer = "mouse";
  document.addEventListener("pointerdown", function (event) {
    lastPointer = event.pointerType || "mouse";
  }, true);

  document.addEventListener("click", function (event) {
    var quote = event.target.closest && event.target.closest(".quote");
    if (quote && lastPointer === "touch" && !(tip && tip.owner === quote)) {
      event.preventDefault(); // the first tap shows what hover shows; the tip's link follows
      openTip(quote);
      return;
    }
    if (!(tip && tip.contains(event.target))) closeTip();
  });

  // A same-page link changes the hash (hashchange); following the link to the line already
  // targeted does not, so the click shows it again.
  window.addEventListener("hashchange", function () {
    closeTip();
    showTarget();
  });
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[href^='#L']");
    if (link && link.getAttribute("href") === window.location.hash) {
      event.preventDefault();
      closeTip();
      showTarget();
    }
  });

  function init() {
    showTarget();
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();

/*
 * Scrollable boxes reachable from the keyboard: a code block, an output, a wide table or
 * formula that scrolls sideways gets tabindex="0" (WCAG 2.1.1; axe's scrollable-region-focusable),
 * so arrow keys can scroll it; a wide table also gets p.scroll-hint above it, and a shadow at
 * the edge it continues past (style.css). Only boxes that do scroll get it, re-measured when the
 * window changes size: a tab stop on every block would make the keyboard walk through the whole page.
 *
 * style.css lays out off-screen boxes lazily (content-visibility: auto), so measuring one lays it
 * out: the boxes are measured in idle time, a few milliseconds at a time, all reads of a slice
 * before its writes, so that loading the page runs no long task for it; a box the browser lays
 * out as it comes near the screen is measured first. When every box is measured, <html> has
 * data-boxes="measured" ("measuring" before).
 */
(function () {
  "use strict";

  var BOXES = "pre, .table-wrap, .math-display, .katex-display, .figure-svg";
  var SLICE_MS = 4;
  var root = document.documentElement;
  var queue = [];
  var scheduled = false;

  var idle = window.requestIdleCallback
    ? function (f) { window.requestIdleCallback(f, { timeout: 1000 }); }
    : function (f) { setTimeout(f, 16); };
  var now = window.performance && performance.now ? function () { return performance.now(); } : Date.now;

  // The boxes style.css lays out lazily themselves: skipped, such a box has its placeholder's
  // size and no overflow, so it is measured laid out (for that moment only).
  var LAZY = "pre, div.math-display, .table-wrap";

  // Whether the box scrolls sideways (their height follows their content: style.css).
  function measure(box) {
    var lazy = box.matches(LAZY);
    var before = lazy ? box.style.contentVisibility : "";
    if (lazy) box.style.contentVisibility = "visible";
    var x = box.scrollWidth > box.clientWidth + 1;
    if (lazy) box.style.contentVisibility = before;
    return { x: x };
  }

  function apply(box, m) {
    var scrolls = m.x;
    if (box.classList.contains("table-wrap")) hint(box, m.x);
    if (focusableInside(box)) return;
    if (scrolls && !box.hasAttribute("tabindex")) {
      box.setAttribute("tabindex", "0");
      box.setAttribute("data-scroll-focus", "");
    } else if (!scrolls && box.hasAttribute("data-scroll-focus")) {
      box.removeAttribute("tabindex");
      box.removeAttribute("data-scroll-focus");
    }
  }

  // A table wider than its column says so above itself: its right side is out of sight.
  function hint(box, scrolls) {
    var before = box.previousElementSibling;
    var has = before && before.classList.contains("scroll-hint");
    if (scrolls && !has) {
      var p = document.createElement("p");
      p.className = "scroll-hint";
      p.setAttribute("aria-hidden", "true");
      p.textContent = attnbookMsg("table_scroll");
      box.parentNode.insertBefore(p, box);
    } else if (!scrolls && has) {
      before.parentNode.removeChild(before);
    }
  }

  function work() {
    scheduled = false;
    var start = now();
    var measured = [];
    while (queue.length && now() - start < SLICE_MS) {
      var box = queue.shift();
      box.attnbookQueued = false;
      if (box.isConnected !== false && document.documentElement.contains(box)) measured.push([box, measure(box)]);
    }
    for (var i = 0; i < measured.length; i++) apply(measured[i][0], measured[i][1]);
    if (queue.length) schedule();
    else root.setAttribute("data-boxes", "measured");
  }

  function schedule() {
    if (scheduled) return;
    scheduled = true;
    idle(work);
  }

  // A box with something focusable inside (a code block's copy button, a chart's keyboard
  // marks) scrolls to its focus: it needs no tab stop of its own, nor measuring.
  function focusableInside(box) {
    return !box.hasAttribute("data-scroll-focus") && !!box.querySelector("[tabindex], a[href], button");
  }

  // Queues boxes for measuring (first = ahead of the others).
  function enqueue(boxes, first) {
    var fresh = [];
    for (var i = 0; i < boxes.length; i++) {
      if (boxes[i].attnbookQueued || (focusableInside(boxes[i]) && !boxes[i].classList.contains("table-wrap"))) continue;
      // Display math in div.math-display: the div scrolls, the formula inside does not.
      if (boxes[i].classList.contains("katex-display") && boxes[i].parentElement && boxes[i].parentElement.classList.contains("math-display")) continue;
      boxes[i].attnbookQueued = true;
      fresh.push(boxes[i]);
    }
    if (!fresh.length) return;
    queue = first ? fresh.concat(queue) : queue.concat(fresh);
    root.setAttribute("data-boxes", "measuring");
    schedule();
  }

  function all() {
    enqueue(document.querySelectorAll(BOXES), false);
  }

  // The box and the boxes inside it.
  function within(el) {
    var list = Array.prototype.slice.call(el.querySelectorAll(BOXES));
    if (el.matches && el.matches(BOXES)) list.unshift(el);
    return list;
  }

  var pending = null;
  function later() {
    if (pending) clearTimeout(pending);
    pending = setTimeout(all, 150);
  }

  function init() {
    all();
    window.addEventListener("resize", later);
    // A box the browser lays out as it nears the screen: measured now, with what it has.
    document.addEventListener(
      "contentvisibilityautostatechange",
      function (e) {
        if (!e.skipped && e.target.querySelectorAll) enqueue(within(e.target), true);
      },
      true,
    );
    // An explorable passage's slider swaps the content of its view (handled before this).
    document.addEventListener("input", function (e) {
      var view = e.target.closest && e.target.closest("div.explore");
      if (view) enqueue(within(view), true);
    });
    // Fonts change widths: KaTeX's arrive after DOMContentLoaded.
    if (document.fonts && document.fonts.ready) document.fonts.ready.then(all);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();

/*
 * A jump to a heading (a table-of-contents link, a #hash in the address): style.css lays out
 * off-screen boxes lazily with a placeholder height, and boxes laid out on the way as a smooth
 * scroll passes them change the heading's place. When the scroll has ended, the heading is put
 * where the jump meant it to be (its scroll-margin below the top), at most a few times, unless
 * the reader has scrolled meanwhile.
 */
(function () {
  "use strict";

  var jump = null; // { el, tries, until }

  function target() {
    var id = "";
    try {
      id = decodeURIComponent(window.location.hash.slice(1));
    } catch (e) {
      return null;
    }
    var el = id && document.getElementById(id);
    return el && !el.classList.contains("code-line") ? el : null; // code lines: see "Provenance"
  }

  function start() {
    var el = target();
    jump = el ? { el: el, tries: 0, until: Date.now() + 4000 } : null;
    if (jump && !("onscrollend" in window)) setTimeout(check, 800);
  }

  function check() {
    if (!jump || Date.now() > jump.until) {
      jump = null;
      return;
    }
    var el = jump.el;
    var margin = parseFloat(getComputedStyle(el).scrollMarginTop) || 0;
    var top = el.getBoundingClientRect().top;
    var scroller = document.scrollingElement || document.documentElement;
    var atEnd = window.scrollY + window.innerHeight >= scroller.scrollHeight - 2;
    if (Math.abs(top - margin) <= 2 || (atEnd && top > margin) || jump.tries >= 4) {
      jump = null;
      return;
    }
    jump.tries++;
    el.scrollIntoView({ block: "start", behavior: "instant" });
    if (!("onscrollend" in window)) setTimeout(check, 100);
  }

  function cancel() {
    jump = null;
  }

  window.addEventListener("hashchange", start);
  document.addEventListener("click", function (event) {
    // Following a link to the hash already in the address scrolls without a hashchange.
    var link = event.target.closest && event.target.closest("a[href^='#']");
    if (link && !event.defaultPrevented && link.getAttribute("href") === window.location.hash) setTimeout(start, 0);
  });
  window.addEventListener("scrollend", function () {
    if (jump) check();
  });
  ["wheel", "touchstart", "keydown", "pointerdown"].forEach(function (type) {
    window.addEventListener(type, cancel, { passive: true, capture: true });
  });
  if (window.location.hash) {
    window.addEventListener("load", function () {
      start();
      if (jump && window.scrollY > 0) check();
    });
  }
})();

/*
 * Turning pages, as in mdBook: Left and Right open the previous and the next chapter (the links
 * of nav.prev-next, which the page shows at its end, marked aria-keyshortcuts). Nothing happens
 * while the reader types (the search box, any field), with a modifier held (Alt+Left is the
 * browser's Back), or when the focus is on something that uses the arrows itself: a chart's
 * marks, a box that scrolls sideways, the search results. p.shortcuts lists the keys; it is
 * shown by this script, since without it the keys do nothing.
 */
(function () {
  "use strict";

  function usesArrows(el) {
    if (!el || el === document.body || el === document.documentElement) return false;
    var tag = el.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable) return true;
    if (el.hasAttribute("data-scroll-focus") || el.getAttribute("role") === "slider") return true;
    return !!(el.closest && el.closest("svg.lab-chart, .search, .search-panel"));
  }

  document.addEventListener("keydown", function (event) {
    if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
    if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
    if (event.isComposing || usesArrows(event.target) || usesArrows(document.activeElement)) return;
    var link = document.querySelector(event.key === "ArrowLeft" ? "nav.prev-next a.prev" : "nav.prev-next a.next");
    if (!link) return;
    event.preventDefault();
    window.location.href = link.href;
  });

  function init() {
    var hints = document.querySelectorAll("p.shortcuts[hidden]");
    for (var i = 0; i < hints.length; i++) hints[i].hidden = false;
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();

/*
 * Previews of what a link points at (issue 27, item 3): a cross-reference (a.xref: a figure, a
 * table, an equation, a chapter), a citation (a.citation: its entry in the reference list) and
 * a glossary term (a.term: English and definition) show their target in div.preview-tip on
 * hover (after a short pause), on keyboard focus, and on a first tap on a touch screen, whose
 * second tap (or the tip's link) follows the link. The content is on the page already, made
 * at build time: the element the link's #id names when it is on this page (copied without its
 * ids and tab stops), otherwise template.preview[data-href] with the link's href. Escape or
 * moving away closes the tip. Without JavaScript these are ordinary links.
 */
(function () {
  "use strict";

  var SELECTOR = "a.xref, a.citation, a.term";
  var tip = null;
  var owner = null;
  var timer = null;
  var lastPointer = "mouse";

  function clean(node) {
    var all = node.querySelectorAll ? [node].concat([].slice.call(node.querySelectorAll("*"))) : [];
    for (var i = 0; i < all.length; i++) {
      var el = all[i];
      el.removeAttribute("id");
      el.removeAttribute("tabindex");
      el.removeAttribute("aria-live");
      el.removeAttribute("data-scroll-focus");
      if (el.classList) el.classList.remove("is-current", "is-target");
    }
    return node;
  }

  function copy(el) {
    return clean(el.cloneNode(true));
  }

  function para(className, nodes) {
    var p = document.createElement("p");
    if (className) p.className = className;
    for (var i = 0; i < nodes.length; i++) p.appendChild(nodes[i]);
    return p;
  }

  // The preview of an element of this page.
  function fromTarget(target) {
    var box = document.createElement("div");
    if (target.tagName === "FIGURE") {
      var art = target.querySelector(".figure-svg, .table-wrap, img");
      if (art) box.appendChild(copy(art));
      var caption = target.querySelector("figcaption");
      if (caption) box.appendChild(para("preview-caption", [].slice.call(copy(caption).childNodes)));
    } else if (target.classList.contains("math-display")) {
      box.appendChild(copy(target));
    } else if (target.tagName === "LI" || target.tagName === "P") {
      box.appendChild(para("", [].slice.call(copy(target).childNodes)));
    } else if (target.tagName === "TR") {
      // A glossary row on the print page: term, English, (variants,) note.
      var cells = target.cells;
      var title = para("preview-title", [document.createTextNode(cells[0].textContent + " ")]);
      var en = document.createElement("span");
      en.lang = "en";
      en.textContent = cells[1] ? cells[1].textContent : "";
      title.appendChild(en);
      box.appendChild(title);
      var note = cells[cells.length - 1];
      if (note && note.textContent.trim() && cells.length > 2) box.appendChild(para("", [document.createTextNode(note.textContent)]));
    } else if (target.tagName === "ARTICLE") {
      // A chapter of the print page: its title and summary.
      var h1 = target.querySelector("h1");
      var summary = target.querySelector(".chapter-header .summary");
      if (h1) box.appendChild(para("preview-title", [document.createTextNode(h1.textContent)]));
      if (summary) box.appendChild(para("", [document.createTextNode(summary.textContent)]));
    } else {
      return null;
    }
    return box.childNodes.length ? box : null;
  }

  function content(link) {
    var href = link.getAttribute("href") || "";
    var url;
    try {
      url = new URL(href, window.location.href);
    } catch (e) {
      return null;
    }
    if (url.origin === window.location.origin && url.pathname === window.location.pathname && url.hash) {
      var target = document.getElementById(decodeURIComponent(url.hash.slice(1)));
      var local = target && fromTarget(target);
      if (local) return local;
    }
    var templates = document.querySelectorAll("template.preview");
    for (var i = 0; i < templates.length; i++) {
      if (templates[i].getAttribute("data-href") === href) {
        var box = document.createElement("div");
        box.appendChild(templates[i].content.cloneNode(true));
        return box;
      }
    }
    return null;
  }

  function hide() {
    clearTimeout(timer);
    if (owner) owner.removeAttribute("aria-describedby");
    if (tip && tip.parentNode) tip.parentNode.removeChild(tip);
    tip = null;
    owner = null;
  }

  function show(link, withLink) {
    clearTimeout(timer);
    if (owner === link && tip) return;
    hide();
    var box = content(link);
    if (!box) return;
    tip = document.createElement("div");
    tip.className = "preview-tip";
    tip.id = "preview-tip";
    tip.setAttribute("role", "tooltip");
    tip.appendChild(box);
    if (withLink) {
      var follow = document.createElement("a");
      follow.href = link.href;
      follow.className = "preview-follow";
      follow.textContent = attnbookMsg("follow_link", { text: link.textContent.trim() });
      tip.appendChild(para("", [follow]));
    }
    tip.addEventListener("mouseenter", function () { clearTimeout(timer); });
    tip.addEventListener("mouseleave", later);
    document.body.appendChild(tip);
    owner = link;
    link.setAttribute("aria-describedby", "preview-tip");
    var r = link.getBoundingClientRect();
    var width = tip.offsetWidth;
    var left = Math.max(8, Math.min(r.left, document.documentElement.clientWidth - width - 8));
    var below = r.bottom + 8;
    var top = below + tip.offsetHeight > window.innerHeight && r.top - tip.offsetHeight - 8 > 0
      ? r.top - tip.offsetHeight - 8
      : below;
    tip.style.left = left + window.scrollX + "px";
    tip.style.top = top + window.scrollY + "px";
  }

  function later() {
    clearTimeout(timer);
    timer = setTimeout(hide, 250);
  }

  function linkOf(event) {
    return event.target.closest ? event.target.closest(SELECTOR) : null;
  }

  document.addEventListener("pointerdown", function (event) {
    lastPointer = event.pointerType || "mouse";
  }, true);

  document.addEventListener("mouseover", function (event) {
    var link = linkOf(event);
    if (!link || lastPointer === "touch") return;
    clearTimeout(timer);
    timer = setTimeout(function () { show(link, false); }, 200);
  });
  document.addEventListener("mouseout", function (event) {
    var link = linkOf(event);
    if (link && !(event.relatedTarget && link.contains(event.relatedTarget))) later();
  });
  document.addEventListener("focusin", function (event) {
    var link = linkOf(event);
    if (link && lastPointer !== "touch") show(link, false);
  });
  document.addEventListener("focusout", function (event) {
    if (linkOf(event) && !(tip && event.relatedTarget && tip.contains(event.relatedTarget))) later();
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && tip) hide();
  });
  document.addEventListener("click", function (event) {
    var link = linkOf(event);
    if (link && lastPointer === "touch" && owner !== link) {
      var before = tip;
      show(link, true);
      if (tip && tip !== before) event.preventDefault(); // the first tap previews, the second follows
      return;
    }
    if (!(tip && tip.contains(event.target)) && !link) hide();
  });
  window.addEventListener("hashchange", hide);
})();

/*
 * Explorable passages (render/html.rs, explore_open_html): the build rendered the passage at
 * every point of its parameter's grid; the default is on the page, the others in inert
 * <template>s. The range input (shown only here, so a page without JavaScript has no dead
 * control) swaps the view's content for the chosen point's, and says which point it shows in
 * its aria-valuetext and the aria-live <output>.
 */
(function () {
  "use strict";

  var slice = Array.prototype.slice;
  slice.call(document.querySelectorAll("div.explore")).forEach(function (box) {
    var control = box.querySelector(".explore-control");
    var input = control && control.querySelector("input[type=range]");
    var output = control && control.querySelector("output");
    var view = box.querySelector(".explore-view");
    if (!input || !view) return;
    var texts;
    try {
      texts = JSON.parse(input.getAttribute("data-texts"));
    } catch (e) {
      return;
    }
    var contents = {};
    contents[view.getAttribute("data-point")] = slice.call(view.childNodes);
    slice.call(box.querySelectorAll("template.explore-point")).forEach(function (t) {
      contents[t.getAttribute("data-point")] = t;
    });
    function show(k) {
      var content = contents[k];
      if (!content || view.getAttribute("data-point") === String(k)) return;
      if (!Array.isArray(content)) {
        content = slice.call(document.importNode(content.content, true).childNodes);
        contents[k] = content;
      }
      while (view.firstChild) view.removeChild(view.firstChild);
      content.forEach(function (node) {
        view.appendChild(node);
      });
      view.setAttribute("data-point", String(k));
      input.setAttribute("aria-valuetext", texts[k]);
      if (output) output.textContent = texts[k];
    }
    input.addEventListener("input", function () {
      show(input.value);
    });
    input.addEventListener("change", function () {
      show(input.value);
    });
    control.hidden = false;
  });
})();
