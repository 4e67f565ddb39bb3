//! The keyboard on charts (`static/attnbook.js`), run in Node against a small stand-in for the
//! DOM: a chart with marks is one tab stop, the arrow keys move between its marks, and the
//! current mark's title is announced in a live region.

mod common;

use std::path::Path;

use serde_json::Value;

/// A 2 x 3 heatmap (cells 40 px, row-major as the lab crate draws them), focused and driven by
/// `keys`; after each key: the current mark, its ring, and the live region's text.
const HARNESS: &str = r#"
const keys = JSON.parse(process.argv[2]);
function classList() {
  const set = new Set();
  return { add: (c) => set.add(c), remove: (c) => set.delete(c), contains: (c) => set.has(c) };
}
const marks = [];
for (let r = 0; r < 2; r++) for (let c = 0; c < 3; c++) {
  const title = { textContent: `键 ${c}，查询 ${r}：0.${r}${c}` };
  marks.push({
    classList: classList(),
    getBBox: () => ({ x: 100 + 40 * c, y: 50 + 40 * r, width: 39, height: 39 }),
    querySelector: (s) => (s === "title" ? title : null),
  });
}
const listeners = {};
const attributes = {};
let live = null;
const svg = {
  querySelectorAll: (s) => (s === ".lab-mark" ? marks : []),
  setAttribute: (k, v) => { attributes[k] = v; },
  addEventListener: (type, f) => { listeners[type] = f; },
  parentNode: { insertBefore: (node) => { live = node; } },
  nextSibling: null,
};
// The page script also listens on the window (printing, hash changes) and the document (taps
// on quoted numbers), and reads the location's hash; a browser always has them.
global.window = { addEventListener() {}, location: { hash: "" } };
global.navigator = {};
global.document = {
  addEventListener() {},
  readyState: "complete",
  documentElement: { getAttribute: () => null, setAttribute() {}, removeAttribute() {} },
  createElement: () => ({ setAttribute(k, v) { this[k] = v; }, textContent: "" }),
  querySelectorAll: (s) => (s === "svg.lab-chart" ? [svg] : []),
};
require(process.argv[1]);
const current = () => marks.findIndex((m) => m.classList.contains("is-current"));
const steps = [];
listeners.focus();
steps.push({ key: "focus", current: current(), live: live.textContent });
for (const key of keys) {
  let prevented = false;
  listeners.keydown({ key, preventDefault: () => { prevented = true; } });
  steps.push({ key, current: current(), live: live.textContent, prevented });
}
listeners.blur();
steps.push({ key: "blur", current: current(), live: live.textContent });
console.log(JSON.stringify({ tabindex: attributes.tabindex, ariaLive: live["aria-live"], steps }));
"#;

/// Runs the harness; `None` if Node is not installed (outside CI).
fn run(keys: &[&str]) -> Option<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("static/attnbook.js");
    let keys = serde_json::to_string(keys).unwrap();
    common::node_json(HARNESS, &[script.as_os_str(), keys.as_ref()])
}

#[test]
fn arrow_keys_walk_a_heatmap_and_announce_each_cell() {
    let keys = [
        "ArrowRight",
        "ArrowDown",
        "ArrowDown",
        "ArrowLeft",
        "ArrowUp",
        "End",
        "ArrowRight",
        "Home",
        "Tab",
    ];
    let Some(out) = run(&keys) else { return };
    assert_eq!(out["tabindex"], "0", "one tab stop");
    assert_eq!(out["ariaLive"], "polite");
    let steps = out["steps"].as_array().unwrap();
    let path: Vec<(&str, i64)> = steps
        .iter()
        .map(|s| (s["key"].as_str().unwrap(), s["current"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        path,
        [
            ("focus", 0),
            ("ArrowRight", 1),
            // Down is the cell below in the same column; the last row has nothing below.
            ("ArrowDown", 4),
            ("ArrowDown", 4),
            ("ArrowLeft", 3),
            ("ArrowUp", 0),
            ("End", 5),
            ("ArrowRight", 5),
            ("Home", 0),
            // Tab leaves the chart: not handled, the ring stays until blur.
            ("Tab", 0),
            ("blur", -1),
        ]
    );
    assert_eq!(steps[2]["live"], "键 1，查询 1：0.11");
    assert_eq!(steps[0]["live"], "键 0，查询 0：0.00");
    assert_eq!(
        steps[1]["prevented"], true,
        "arrows must not scroll the page"
    );
    assert_eq!(steps[9]["prevented"], false, "Tab must move focus on");
    assert_eq!(steps[10]["live"], "");
}
