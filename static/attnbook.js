/*
 * attnbook.js — theme toggle. No dependencies.
 *
 * Inline this in <head>, before the stylesheet, so a stored choice applies before the first paint
 * (no flash of the wrong theme):
 *
 *   <script>try{var t=localStorage.getItem("attnbook-theme");if(t==="light"||t==="dark")document.documentElement.setAttribute("data-theme",t)}catch(e){}</script>
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
(function () {
  "use strict";

  var KEY = "attnbook-theme";
  var LABELS = { auto: "自动", light: "浅色", dark: "深色" };
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
    var text = "主题：" + LABELS[mode] + "（点击切换为" + LABELS[next(mode)] + "）";
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
    button.textContent = "复制";
    button.setAttribute("aria-label", "复制代码");
    button.addEventListener("click", function () {
      copy(code.innerText).then(
        function () { button.textContent = "已复制"; },
        function () { button.textContent = "复制失败"; }
      );
      setTimeout(function () { button.textContent = "复制"; }, 1500);
    });
    return button;
  }

  function toggleButton(pre) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "toggle-hidden";
    function label() {
      var shown = pre.classList.contains("show-hidden");
      button.textContent = shown ? "收起隐藏行" : "显示隐藏行";
      button.setAttribute("aria-pressed", shown ? "true" : "false");
      button.setAttribute("title", "显示或收起编译但不展示的代码行");
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
    return true;
  }

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
      follow.textContent = "查看记录它的代码";
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
 * so arrow keys can scroll it. Only boxes that do scroll get it, re-measured when the window
 * changes size: a tab stop on every block would make the keyboard walk through the whole page.
 */
(function () {
  "use strict";

  var BOXES = "pre, .table-wrap, .math-display, .katex-display, .figure-svg";

  function mark() {
    var boxes = document.querySelectorAll(BOXES);
    for (var i = 0; i < boxes.length; i++) {
      var box = boxes[i];
      var scrolls = box.scrollWidth > box.clientWidth + 1 || box.scrollHeight > box.clientHeight + 1;
      // A box with something focusable inside (a chart's keyboard marks) scrolls to its focus.
      if (!box.hasAttribute("data-scroll-focus") && box.querySelector("[tabindex], a[href], button")) continue;
      if (scrolls && !box.hasAttribute("tabindex")) {
        box.setAttribute("tabindex", "0");
        box.setAttribute("data-scroll-focus", "");
      } else if (!scrolls && box.hasAttribute("data-scroll-focus")) {
        box.removeAttribute("tabindex");
        box.removeAttribute("data-scroll-focus");
      }
    }
  }

  var pending = null;
  function later() {
    if (pending) clearTimeout(pending);
    pending = setTimeout(mark, 150);
  }

  function init() {
    mark();
    window.addEventListener("resize", later);
    // Fonts change widths: KaTeX's arrive after DOMContentLoaded.
    if (document.fonts && document.fonts.ready) document.fonts.ready.then(mark);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
