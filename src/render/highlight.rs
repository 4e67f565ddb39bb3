//! Build-time syntax highlighting with syntect: code becomes spans with `hl-` classes, and one
//! stylesheet holds a light and a dark theme, so the reader's theme toggle recolours code too.

use std::path::PathBuf;
use std::sync::{LazyLock, Mutex, PoisonError};

use syntect::highlighting::ThemeSet;
use syntect::html::{ClassStyle, ClassedHTMLGenerator, css_for_theme_with_class_style};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

use super::cache::{self, Cache};

const STYLE: ClassStyle = ClassStyle::SpacedPrefixed { prefix: "hl-" };

static SYNTAXES: LazyLock<SyntaxSet> = LazyLock::new(SyntaxSet::load_defaults_newlines);

/// What decides the markup besides the code and its language: bump `markup` when the HTML
/// changes shape; a new attnbook version (and so a new syntect or syntax set) starts afresh.
const CACHE_SALT: &str = concat!("attnbook ", env!("CARGO_PKG_VERSION"), "; markup 3");

/// Highlighted code memoised by content, shared by the chapters rendered in parallel and kept
/// across builds in `.attnbook/cache/render/highlight.json`: an unchanged block is not highlighted
/// again, and a build that finds every block cached never loads syntect's syntaxes.
#[derive(Debug)]
pub struct Highlighter {
    cache: Mutex<Cache<Option<String>>>,
    /// False when the site turned highlighting off: every block is then plain text.
    enabled: bool,
}

impl Default for Highlighter {
    fn default() -> Self {
        Highlighter {
            cache: Mutex::default(),
            enabled: true,
        }
    }
}

impl Highlighter {
    /// A highlighter with the cache file at `path`.
    pub fn load(path: PathBuf) -> Self {
        Highlighter {
            cache: Mutex::new(Cache::load(path)),
            enabled: true,
        }
    }

    /// A highlighter that highlights nothing (`[highlight] enabled = false`).
    pub fn off() -> Self {
        Highlighter {
            enabled: false,
            ..Highlighter::default()
        }
    }

    /// A highlighter whose memory ends with it.
    pub fn in_memory() -> Self {
        Highlighter::default()
    }

    /// [`highlight`], memoised.
    pub fn highlight(&self, code: &str, lang: &str) -> Option<String> {
        if !self.enabled {
            return None;
        }
        let key = cache::key(&[CACHE_SALT.as_bytes(), lang.as_bytes(), code.as_bytes()]);
        if let Some(hit) = self.lock().get(&key) {
            return hit.clone();
        }
        // Highlighting happens outside the lock, so chapters highlight in parallel.
        let fresh = highlight(code, lang);
        self.lock().insert(key, fresh.clone());
        fresh
    }

    /// Highlights every `(code, language)` into the memo now, so that rendering the pages
    /// only looks them up: a build calls it on a thread of its own while formulas render. It
    /// also loads syntect's syntaxes, and each syntax's contexts on its first use (~5-12 ms
    /// each, measured), off the critical path; with nothing to highlight it costs nothing.
    pub fn prefetch<'a>(&self, jobs: impl IntoIterator<Item = (String, &'a str)>) {
        for (code, lang) in jobs {
            let _ = self.highlight(&code, lang);
        }
    }

    /// Writes the cache back (the blocks of this build only).
    pub fn save(&self) {
        self.lock().save();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache<Option<String>>> {
        // A panic elsewhere cannot leave a half-written entry: insert is one map operation.
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Highlights `code` as `lang` (a fence token like `rust`, `toml`, `python`); `None` if the
/// language is unknown, so the caller escapes it plainly.
pub fn highlight(code: &str, lang: &str) -> Option<String> {
    let syntax = SYNTAXES.find_syntax_by_token(lang)?;
    let mut generator = ClassedHTMLGenerator::new_with_class_style(syntax, &SYNTAXES, STYLE);
    for line in LinesWithEndings::from(code) {
        generator
            .parse_html_for_line_which_includes_newline(line)
            .ok()?;
    }
    Some(fewer_spans(&generator.finalize(), &STYLED))
}

/// highlight.css's selectors, each as the class sets of its compounds (sorted classes each),
/// the subject last.
static STYLED: LazyLock<Vec<Vec<Vec<String>>>> = LazyLock::new(|| styled_selectors(&stylesheet()));

fn styled_selectors(css: &str) -> Vec<Vec<Vec<String>>> {
    let mut selectors: Vec<Vec<Vec<String>>> = Vec::new();
    for rule in strip_comments(css).split('}') {
        let Some((list, _)) = rule.split_once('{') else {
            continue;
        };
        for selector in list.split(',') {
            let compounds: Vec<Vec<String>> = selector
                .split(|c: char| c.is_whitespace() || matches!(c, '>' | '+' | '~'))
                .filter(|c| c.starts_with('.'))
                .map(|compound| {
                    let mut classes: Vec<String> = compound
                        .split('.')
                        .skip(1)
                        .map(|c| c.trim().to_string())
                        .filter(|c| c.starts_with("hl-"))
                        .collect();
                    classes.sort();
                    classes
                })
                .filter(|classes| !classes.is_empty())
                .collect();
            if !compounds.is_empty() && !selectors.contains(&compounds) {
                selectors.push(compounds);
            }
        }
    }
    selectors
}

/// syntect's HTML has one span per scope, most of them styled by no rule (`hl-source hl-rust`
/// around everything, `hl-meta hl-group` around every bracket pair): those are unwrapped, and
/// two adjacent spans of the same classes become one. The page looks the same with a fraction
/// of the elements (a chapter had ~11,500 of them in its code). `styled` is
/// [`styled_compounds`] of the stylesheet; the text between tags is syntect's, already escaped.
fn fewer_spans(html: &str, selectors: &[Vec<Vec<String>>]) -> String {
    const OPEN: &str = "<span class=\"";
    const CLOSE: &str = "</span>";
    let matches = |need: &[String], class: &str| {
        let mut have: Vec<&str> = class.split(' ').collect();
        have.sort_unstable();
        need.iter().all(|c| have.binary_search(&c.as_str()).is_ok())
    };
    // The selectors whose subject some span of this code is: only their compounds matter here
    // (JSON's rules need every `hl-meta` ancestor; Rust's code has none of JSON's subjects).
    let mut classes: Vec<&str> = html
        .split(OPEN)
        .skip(1)
        .filter_map(|s| s.split_once("\">").map(|(c, _)| c))
        .collect();
    classes.sort_unstable();
    classes.dedup();
    let styled: Vec<&Vec<String>> = selectors
        .iter()
        .filter(|sel| {
            let subject = sel.last().expect("a selector has a compound");
            classes.iter().any(|c| matches(subject, c))
        })
        .flatten()
        .collect();
    let is_styled = |class: &str| styled.iter().any(|need| matches(need, class));
    let mut out = String::with_capacity(html.len());
    // Per open span: its class if kept, None if unwrapped.
    let mut stack: Vec<Option<String>> = Vec::new();
    // The class and the output offset of the `</span>` just written, if nothing came after it.
    let mut last_close: Option<(String, usize)> = None;
    let mut rest = html;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix(OPEN)
            && let Some(end) = after.find("\">")
        {
            let class = &after[..end];
            rest = &after[end + 2..];
            if !is_styled(class) {
                stack.push(None);
                continue;
            }
            match last_close.take() {
                // `<span class="x">a</span><span class="x">b` is `<span class="x">ab`.
                Some((previous, at)) if previous == class => out.truncate(at),
                _ => {
                    out.push_str(OPEN);
                    out.push_str(class);
                    out.push_str("\">");
                }
            }
            stack.push(Some(class.to_string()));
        } else if let Some(after) = rest.strip_prefix(CLOSE) {
            rest = after;
            match stack.pop() {
                Some(Some(class)) => {
                    let at = out.len();
                    out.push_str(CLOSE);
                    last_close = Some((class, at));
                }
                Some(None) => {}
                // Unbalanced (not syntect's output): kept as it is.
                None => out.push_str(CLOSE),
            }
        } else {
            let first = rest.chars().next().map_or(1, char::len_utf8);
            let next = rest[first..].find('<').map_or(rest.len(), |i| i + first);
            out.push_str(&rest[..next]);
            rest = &rest[next..];
            last_close = None;
        }
    }
    out
}

/// The stylesheet: a light theme by default, a dark one for `data-theme="dark"` and for
/// readers whose system prefers dark (unless they chose light).
pub fn stylesheet() -> String {
    let themes = ThemeSet::load_defaults();
    let css = |name: &str| {
        themes
            .themes
            .get(name)
            .and_then(|t| css_for_theme_with_class_style(t, STYLE).ok())
            .unwrap_or_default()
    };
    let light = readable(&without_backgrounds(&css("InspiredGitHub")), &LIGHT);
    let dark = readable(&without_backgrounds(&css("base16-ocean.dark")), &DARK);
    // The dark colours are for screens only, as style.css's dark variables are: a page printed
    // from the dark theme is printed light, and so must its code be.
    format!(
        "/* Generated by attnbook from syntect's InspiredGitHub and base16-ocean.dark themes, \
         each colour adjusted to WCAG AA contrast on the code background. */\n{light}\n\
         @media screen {{\n{}{}\n}}\n@media screen and (prefers-color-scheme: dark) {{\n{}{}\n}}\n",
        reset_light(DARK_SCOPES[0]),
        scoped(&dark, DARK_SCOPES[0]),
        reset_light(DARK_SCOPES[1]),
        scoped(&dark, DARK_SCOPES[1])
    )
}

/// Where the dark theme applies: the reader's choice, or the system's unless they chose light.
const DARK_SCOPES: [&str; 2] = [
    "html[data-theme=\"dark\"]",
    "html:not([data-theme=\"light\"])",
];

/// Undoes the light theme under `scope`: the dark theme has no rule for some scopes the light
/// one colours (`support.type`, dark blue on the dark background), and those would keep their
/// light colour. With this rule first, a span the dark theme does not colour takes its parent's,
/// in the end the code's own readable foreground; the dark rules, as specific or more and later,
/// still win.
fn reset_light(scope: &str) -> String {
    format!(
        "{scope} [class*=\"hl-\"] {{ color: inherit; font-style: inherit; font-weight: inherit; \
         text-decoration: inherit; }}\n"
    )
}

/// WCAG 2 AA for body-sized text: code is body-sized.
const MIN_CONTRAST: f64 = 4.5;

/// What one theme's colours must stay readable on: the backgrounds code sits on in style.css
/// (`--code-bg` of `pre`, `--bg` of the page), and the colour to move a faint one towards.
struct Backdrop {
    backgrounds: [[u8; 3]; 2],
    towards: [u8; 3],
}

/// style.css's light `--code-bg` and `--bg` (a test keeps them in step).
const LIGHT: Backdrop = Backdrop {
    backgrounds: [[0xf4, 0xf5, 0xf7], [0xfc, 0xfc, 0xfa]],
    towards: [0, 0, 0],
};

/// style.css's dark `--code-bg` and `--bg`.
const DARK: Backdrop = Backdrop {
    backgrounds: [[0x1b, 0x1e, 0x23], [0x13, 0x15, 0x19]],
    towards: [0xff, 0xff, 0xff],
};

/// Every `color: #rrggbb` of a theme, moved towards black (light theme) or white (dark) just
/// far enough to reach [`MIN_CONTRAST`] on every background: syntect's themes give comments
/// and some names 2.7:1, and adjusting each colour keeps the theme's hues where a hand-picked
/// palette would drift from it with every syntect update. An alpha channel is dropped: the
/// colour is judged, and shown, opaque.
fn readable(css: &str, backdrop: &Backdrop) -> String {
    static COLOUR: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"(?m)^(\s*color:\s*)#([0-9a-fA-F]{6})(?:[0-9a-fA-F]{2})?\b")
            .expect("a valid regex")
    });
    COLOUR
        .replace_all(css, |caps: &regex::Captures<'_>| {
            let rgb = parse_hex(&caps[2]);
            let [r, g, b] = contrasting(rgb, backdrop);
            format!("{}#{r:02x}{g:02x}{b:02x}", &caps[1])
        })
        .into_owned()
}

fn parse_hex(hex: &str) -> [u8; 3] {
    let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0);
    [byte(0), byte(2), byte(4)]
}

/// The first mix of `rgb` with `backdrop.towards`, in steps of 2%, that is readable on every
/// background; the end of the road (black or white) always is.
fn contrasting(rgb: [u8; 3], backdrop: &Backdrop) -> [u8; 3] {
    (0..=50)
        .map(|step| mix(rgb, backdrop.towards, f64::from(step) / 50.0))
        .find(|c| {
            backdrop
                .backgrounds
                .iter()
                .all(|bg| contrast(*c, *bg) >= MIN_CONTRAST)
        })
        .unwrap_or(backdrop.towards)
}

fn mix(from: [u8; 3], to: [u8; 3], t: f64) -> [u8; 3] {
    let channel = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * t).round() as u8;
    [
        channel(from[0], to[0]),
        channel(from[1], to[1]),
        channel(from[2], to[2]),
    ]
}

/// The WCAG 2 contrast ratio of two colours.
fn contrast(a: [u8; 3], b: [u8; 3]) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// WCAG 2 relative luminance of an sRGB colour.
fn luminance(rgb: [u8; 3]) -> f64 {
    let linear = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * linear(rgb[0]) + 0.7152 * linear(rgb[1]) + 0.0722 * linear(rgb[2])
}

/// Drops background colours: code boxes take the site's own background in both themes.
fn without_backgrounds(css: &str) -> String {
    css.lines()
        .filter(|l| !l.trim_start().starts_with("background-color"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Prefixes every selector of every rule with `scope`.
fn scoped(css: &str, scope: &str) -> String {
    let mut out = String::new();
    for rule in css.split_inclusive('}') {
        match rule.split_once('{') {
            Some((selectors, body)) if !selectors.trim().is_empty() => {
                let selectors = strip_comments(selectors);
                let prefixed: Vec<String> = selectors
                    .split(',')
                    .map(|s| format!("{scope} {}", s.trim()))
                    .collect();
                out.push_str(&format!("{} {{{body}\n", prefixed.join(", ")));
            }
            _ => {}
        }
    }
    out
}

fn strip_comments(text: &str) -> String {
    match (text.find("/*"), text.find("*/")) {
        (Some(start), Some(end)) if end > start => {
            format!("{}{}", &text[..start], strip_comments(&text[end + 2..]))
        }
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memo_returns_what_highlighting_returns_and_survives_a_build() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("highlight.json");
        let code = "let x = 1;\n";
        let first = Highlighter::load(path.clone());
        assert_eq!(first.highlight(code, "rust"), highlight(code, "rust"));
        assert_eq!(first.highlight(code, "no-such-language"), None);
        first.save();
        let second = Highlighter::load(path);
        assert_eq!(second.lock().len(), 2);
        let key = cache::key(&[CACHE_SALT.as_bytes(), b"rust", code.as_bytes()]);
        assert_eq!(
            second.lock().get(&key).cloned(),
            Some(highlight(code, "rust"))
        );
        assert_eq!(second.highlight(code, "rust"), highlight(code, "rust"));
    }

    #[test]
    fn rust_is_highlighted_with_classes() {
        let html = highlight("let x = 1; // one\n", "rust").unwrap();
        assert!(
            html.contains("<span class=\"hl-storage hl-type hl-rust\">let</span>"),
            "{html}"
        );
        assert!(html.contains("hl-comment"));
        assert!(highlight("x", "no-such-language").is_none());
    }

    #[test]
    fn unstyled_spans_are_unwrapped_and_neighbours_of_one_class_merged() {
        let styled = styled_selectors(
            ".hl-comment { color: #111; }\n.hl-name\n{ color: #333; }\nhtml[data-theme=\"dark\"] .hl-meta.hl-fn\n.hl-name { color: #222; }",
        );
        let html = "<span class=\"hl-source hl-rust\"><span class=\"hl-comment hl-line\">//</span>\
                    <span class=\"hl-comment hl-line\"> 注释 &lt;</span>\
                    <span class=\"hl-meta hl-fn hl-rust\"><span class=\"hl-name\">f</span>()</span></span>";
        assert_eq!(
            fewer_spans(html, &styled),
            "<span class=\"hl-comment hl-line\">// 注释 &lt;</span>\
             <span class=\"hl-meta hl-fn hl-rust\"><span class=\"hl-name\">f</span>()</span>"
        );
    }

    #[test]
    fn a_chapter_s_code_keeps_its_text_with_far_fewer_spans() {
        let code = include_str!("html.rs");
        let mut generator = ClassedHTMLGenerator::new_with_class_style(
            SYNTAXES.find_syntax_by_token("rust").unwrap(),
            &SYNTAXES,
            STYLE,
        );
        for line in LinesWithEndings::from(code) {
            generator
                .parse_html_for_line_which_includes_newline(line)
                .unwrap();
        }
        let raw = generator.finalize();
        let fewer = highlight(code, "rust").unwrap();
        let text = |html: &str| {
            regex::Regex::new("<[^>]*>")
                .unwrap()
                .replace_all(html, "")
                .into_owned()
        };
        assert_eq!(text(&fewer), text(&raw));
        let spans = |html: &str| html.matches("<span").count();
        assert!(
            spans(&fewer) * 2 < spans(&raw),
            "{} spans of {}",
            spans(&fewer),
            spans(&raw)
        );
    }

    /// The colours of every rule of one theme's part of the stylesheet.
    fn colours(css: &str) -> Vec<[u8; 3]> {
        let re = regex::Regex::new(r"color:\s*#([0-9a-f]{6})").unwrap();
        re.captures_iter(css).map(|c| parse_hex(&c[1])).collect()
    }

    #[test]
    fn every_code_colour_reaches_wcag_aa_on_the_code_background_in_both_themes() {
        let css = stylesheet();
        let (light, dark) = css.split_once("@media screen {").unwrap();
        for (theme, backdrop) in [(light, &LIGHT), (dark, &DARK)] {
            let found = colours(theme);
            assert!(found.len() > 10, "{theme}");
            for colour in found {
                for bg in backdrop.backgrounds {
                    let ratio = contrast(colour, bg);
                    assert!(ratio >= MIN_CONTRAST, "{colour:?} on {bg:?}: {ratio:.2}");
                }
            }
        }
        // The theme's own comment grey (#969896, 2.7:1) was the reader's complaint.
        assert!(contrast([0x96, 0x98, 0x96], LIGHT.backgrounds[0]) < 3.0);
        assert!(!light.contains("#969896"), "{light}");
    }

    #[test]
    fn a_readable_colour_is_kept_and_a_faint_one_darkened_just_enough() {
        assert_eq!(contrasting([0x1e, 0x22, 0x27], &LIGHT), [0x1e, 0x22, 0x27]);
        let comment = contrasting([0x96, 0x98, 0x96], &LIGHT);
        assert!(contrast(comment, LIGHT.backgrounds[0]) >= MIN_CONTRAST);
        assert!(contrast(comment, LIGHT.backgrounds[0]) < 5.5, "{comment:?}");
        assert_eq!(contrast([0, 0, 0], [255, 255, 255]).round(), 21.0);
    }

    #[test]
    fn the_backgrounds_are_style_css_s() {
        let style = include_str!("../../static/style.css");
        let hex = |c: [u8; 3]| format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2]);
        for (backdrop, nth) in [(&LIGHT, 0), (&DARK, 1)] {
            let block = style.split("--code-bg:").nth(nth + 1).unwrap();
            assert!(
                block
                    .trim_start()
                    .starts_with(&hex(backdrop.backgrounds[0]))
            );
            let block = style.split("  --bg:").nth(nth + 1).unwrap();
            assert!(
                block
                    .trim_start()
                    .starts_with(&hex(backdrop.backgrounds[1]))
            );
        }
    }

    #[test]
    fn stylesheet_has_both_themes_scoped() {
        let css = stylesheet();
        assert!(css.contains("html[data-theme=\"dark\"] .hl-comment"));
        assert!(css.contains("@media screen and (prefers-color-scheme: dark)"));
        // The light theme's colours are undone before each dark theme, so a scope the dark
        // theme does not colour (support.type) cannot keep a light colour on a dark background.
        let (_, dark) = css.split_once("@media screen {").unwrap();
        for scope in DARK_SCOPES {
            let reset = dark.find(&format!("{scope} [class*=\"hl-\"] {{ color: inherit;"));
            let first_rule = dark.find(&format!("{scope} .hl-"));
            assert!(
                matches!((reset, first_rule), (Some(r), Some(f)) if r < f),
                "{dark}"
            );
        }
        assert!(
            css.contains(".hl-support.hl-type"),
            "the light theme colours support.type"
        );
        assert!(!css.contains("background-color"));
    }
}
