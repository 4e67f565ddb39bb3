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
 * Copy buttons on code blocks: a small button in the corner of every `pre > code` copies the
 * code as the reader sees it (hidden `# ` lines of experiments are not on the page).
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

  function addButton(pre) {
    var code = pre.querySelector("code");
    if (!code || pre.querySelector("button.copy-code")) return;
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
    pre.appendChild(button);
  }

  function init() {
    var blocks = document.querySelectorAll("article pre");
    for (var i = 0; i < blocks.length; i++) addButton(blocks[i]);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
