//! Server-side math: every formula rendered once by the `katex` crate (HTML + MathML).
//!
//! Formulas are rendered in parallel (the KaTeX engine is thread-local, so each rayon worker
//! starts its own) and deduplicated by content, so a formula repeated across chapters costs one
//! render. KaTeX's errors carry no position; the caller maps them to the formula's line.

use std::collections::BTreeMap;

use rayon::prelude::*;

use super::cache::Cache;

/// A formula KaTeX rejected, with KaTeX's message cleaned of the JS wrapper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MathError {
    /// The cleaned message, e.g. `Expected '}', got 'EOF' at end of input: \frac{a}{`.
    pub message: String,
    /// Where KaTeX points in the formula, as two lines: the TeX around the spot and a row of
    /// carets under it (KaTeX marks the spot with U+0332 combining underlines).
    pub pointer: Option<String>,
}

impl MathError {
    /// Reads an unwrapped KaTeX message: `MESSAGE at position N: CONTEXT` with the offending
    /// part of CONTEXT underlined becomes `MESSAGE at position N` plus a caret pointer.
    fn from_katex(text: &str) -> Self {
        const UNDERLINE: char = '\u{332}';
        let collapse = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let Some((message, context)) = split_position(text).filter(|_| text.contains(UNDERLINE))
        else {
            return MathError {
                message: collapse(&text.replace(UNDERLINE, "")),
                pointer: None,
            };
        };
        let (mut shown, mut carets) = (String::new(), String::new());
        for c in context.chars() {
            if c == UNDERLINE {
                carets.pop();
                carets.push('^');
                continue;
            }
            shown.push(if c.is_whitespace() { ' ' } else { c });
            carets.push(' ');
        }
        MathError {
            message: collapse(message),
            pointer: Some(format!("{shown}\n{}", carets.trim_end())),
        }
    }
}

/// `MESSAGE at position N: CONTEXT` -> (`MESSAGE at position N`, `CONTEXT`).
fn split_position(text: &str) -> Option<(&str, &str)> {
    let at = text.rfind(" at position ")?;
    let colon = at + text[at..].find(": ")?;
    Some((&text[..colon], &text[colon + 2..]))
}

/// Renders formulas with the site's macros.
pub struct MathRenderer {
    opts: katex::Opts,
    /// Hashes the macros and the KaTeX version: a cache entry is valid only under both.
    salt: String,
}

/// Rendered formulas kept across builds (`.attnbook/cache/render/math.json`), so an unchanged formula
/// is never rendered twice (KaTeX costs ~1-2 ms per formula here). Errors are cached too.
pub type MathCache = Cache<Result<String, String>>;

impl MathRenderer {
    /// A renderer with site-wide macros (`[katex.macros]`).
    pub fn new(macros: &BTreeMap<String, String>) -> Self {
        let mut opts = katex::Opts::default();
        opts.set_throw_on_error(true);
        let mut salt = blake3::Hasher::new();
        salt.update(katex::KATEX_VERSION.as_bytes());
        // Cached errors are KaTeX's unwrapped messages; older caches held them mangled.
        salt.update(b"errors-v2");
        for (name, body) in macros {
            opts.add_macro(name.clone(), body.clone());
            salt.update(format!("{name}\u{0}{body}\u{0}").as_bytes());
        }
        MathRenderer {
            opts,
            salt: salt.finalize().to_hex().to_string(),
        }
    }

    /// Renders one formula.
    pub fn render(&self, tex: &str, display: bool) -> Result<String, MathError> {
        self.render_raw(tex, display)
            .map_err(|message| MathError::from_katex(&message))
    }

    /// Renders one formula; an error is KaTeX's unwrapped message, as the cache keeps it.
    fn render_raw(&self, tex: &str, display: bool) -> Result<String, String> {
        let mut opts = self.opts.clone();
        opts.set_display_mode(display);
        katex::render_with_opts(tex, &opts).map_err(|e| unwrap_error(&e.to_string()))
    }

    /// Renders many formulas in parallel, each distinct `(tex, display)` once and only if the
    /// cache lacks it; results in order.
    pub fn render_all(
        &self,
        formulas: &[(&str, bool)],
        cache: &mut MathCache,
    ) -> Vec<Result<String, MathError>> {
        let keys: Vec<String> = formulas
            .iter()
            .map(|&(tex, display)| self.key(tex, display))
            .collect();
        let mut missing: Vec<(&str, bool, &str)> = formulas
            .iter()
            .zip(&keys)
            .filter(|(_, key)| !cache.contains(key))
            .map(|(&(tex, display), key)| (tex, display, key.as_str()))
            .collect();
        missing.sort_unstable_by_key(|m| m.2);
        missing.dedup_by_key(|m| m.2);
        let fresh: Vec<(String, Result<String, String>)> = missing
            .par_iter()
            .map(|&(tex, display, key)| (key.to_string(), self.render_raw(tex, display)))
            .collect();
        for (key, result) in fresh {
            cache.insert(key, result);
        }
        rendered(&keys, cache)
    }

    /// [`MathRenderer::render_all`] through a cache shared by threads: the lock is held only to
    /// look formulas up and to add the new ones, never while KaTeX renders (a rayon worker
    /// waiting on the lock could otherwise be the one that holds it).
    pub fn render_all_shared(
        &self,
        formulas: &[(&str, bool)],
        cache: &std::sync::Mutex<MathCache>,
    ) -> Vec<Result<String, MathError>> {
        let lock = || {
            cache
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let keys: Vec<String> = formulas
            .iter()
            .map(|&(tex, display)| self.key(tex, display))
            .collect();
        let mut missing: Vec<(&str, bool, &str)> = {
            let cache = lock();
            formulas
                .iter()
                .zip(&keys)
                .filter(|(_, key)| !cache.contains(key))
                .map(|(&(tex, display), key)| (tex, display, key.as_str()))
                .collect()
        };
        missing.sort_unstable_by_key(|m| m.2);
        missing.dedup_by_key(|m| m.2);
        let fresh: Vec<(String, Result<String, String>)> = missing
            .iter()
            .map(|&(tex, display, key)| (key.to_string(), self.render_raw(tex, display)))
            .collect();
        let mut cache = lock();
        for (key, result) in fresh {
            cache.insert(key, result);
        }
        rendered(&keys, &mut cache)
    }

    /// Marks `formulas` used in `cache` (without rendering any), so that saving keeps them.
    pub fn keep(&self, formulas: &[(&str, bool)], cache: &mut MathCache) {
        for &(tex, display) in formulas {
            cache.get(&self.key(tex, display));
        }
    }

    fn key(&self, tex: &str, display: bool) -> String {
        super::cache::key(&[self.salt.as_bytes(), &[u8::from(display)], tex.as_bytes()])
    }
}

/// KaTeX's own message out of the JS wrapper the `katex` crate puts around it:
/// `failed to execute js (detail: String("ParseError: KaTeX parse error: X"))` -> `X`, with
/// Rust's `{:?}` escapes undone (so `\u{332}` is the underline KaTeX wrote, not text).
fn unwrap_error(raw: &str) -> String {
    let detail = raw
        .strip_prefix("failed to execute js (detail: ")
        .and_then(|d| d.strip_suffix(')'))
        .unwrap_or(raw);
    let detail = match detail
        .strip_prefix("String(\"")
        .and_then(|d| d.strip_suffix("\")"))
    {
        Some(quoted) => unescape_debug(quoted),
        None => detail.to_string(),
    };
    if let Some(message) = detail.strip_prefix("ParseError: KaTeX parse error: ") {
        message.to_string()
    } else if detail.contains("stack overflow") || detail.contains("too much recursion") {
        "the formula is nested too deeply for KaTeX (it ran out of stack)".to_string()
    } else {
        format!("KaTeX failed: {detail}")
    }
}

/// Undoes Rust's `{:?}` escaping of a string in one left-to-right pass.
fn unescape_debug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some('u') => out.push(unicode_escape(&mut chars)),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// The character of a `{XXXX}` hex escape (after `\u`); U+FFFD if malformed.
fn unicode_escape(chars: &mut std::str::Chars<'_>) -> char {
    let rest = chars.as_str();
    let parsed = rest
        .strip_prefix('{')
        .and_then(|r| r.split_once('}'))
        .map(|(hex, after)| {
            (
                u32::from_str_radix(hex, 16).ok().and_then(char::from_u32),
                after,
            )
        });
    match parsed {
        Some((c, after)) => {
            *chars = after.chars();
            c.unwrap_or(char::REPLACEMENT_CHARACTER)
        }
        None => char::REPLACEMENT_CHARACTER,
    }
}

/// The cached results for `keys`, in order: every missing formula was rendered and inserted
/// just before this is called.
fn rendered(keys: &[String], cache: &mut MathCache) -> Vec<Result<String, MathError>> {
    keys.iter()
        .map(|key| match cache.get(key) {
            Some(Ok(html)) => Ok(html.clone()),
            Some(Err(message)) => Err(MathError::from_katex(message)),
            None => Err(MathError::from_katex("the formula was not rendered")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_html_and_mathml_with_macros() {
        let mut macros = BTreeMap::new();
        macros.insert("\\R".to_string(), "\\mathbb{R}".to_string());
        let r = MathRenderer::new(&macros);
        let html = r.render("x \\in \\R", false).unwrap();
        assert!(html.contains("class=\"katex\""));
        assert!(html.contains("<math"));
        assert!(html.contains("double-struck"), "macro expanded: {html}");
        assert!(r.render("x", true).unwrap().contains("katex-display"));
    }

    #[test]
    fn errors_are_clean() {
        let r = MathRenderer::new(&BTreeMap::new());
        let err = r.render("\\frac{a}{", false).unwrap_err();
        assert!(
            !err.message.contains("failed to execute js"),
            "{}",
            err.message
        );
        assert!(err.message.contains("expected '}'"), "{}", err.message);
        let err = r.render("\\nabla \\left( x\n", true).unwrap_err();
        assert!(err.message.ends_with("\\left( x"), "{}", err.message);
    }

    #[test]
    fn an_undefined_command_is_named_plainly_with_a_caret_under_it() {
        let r = MathRenderer::new(&BTreeMap::new());
        let err = r.render("a + \\foo", false).unwrap_err();
        assert_eq!(
            err.message,
            "Undefined control sequence: \\foo at position 5"
        );
        assert_eq!(err.pointer.as_deref(), Some("a + \\foo\n    ^^^^"));
    }

    #[test]
    fn a_too_deep_formula_says_so_without_the_js_wrapper() {
        let r = MathRenderer::new(&BTreeMap::new());
        let deep = format!("{}x{}", "{".repeat(3000), "}".repeat(3000));
        let err = r.render(&deep, false).unwrap_err();
        assert_eq!(
            err.message,
            "the formula is nested too deeply for KaTeX (it ran out of stack)"
        );
    }

    #[test]
    fn cached_errors_keep_their_pointer() {
        let r = MathRenderer::new(&BTreeMap::new());
        let mut cache = MathCache::in_memory();
        let first = r.render_all(&[("\\foo", false)], &mut cache);
        let again = r.render_all(&[("\\foo", false)], &mut cache);
        assert_eq!(first, again);
        assert!(first[0].as_ref().unwrap_err().pointer.is_some());
    }

    #[test]
    fn render_all_keeps_order_and_dedups() {
        let r = MathRenderer::new(&BTreeMap::new());
        let mut cache = MathCache::in_memory();
        let out = r.render_all(&[("a", false), ("b", false), ("a", false)], &mut cache);
        assert_eq!(out[0], out[2]);
        assert_ne!(out[0], out[1]);
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn the_cache_survives_a_round_trip_and_is_keyed_by_macros() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("math.json");
        let r = MathRenderer::new(&BTreeMap::new());
        let mut cache = MathCache::load(path.clone());
        let first = r.render_all(&[("x^2", false), ("\\frac{a}{", true)], &mut cache);
        cache.save();
        let mut again = MathCache::load(path);
        assert_eq!(again.len(), 2);
        assert_eq!(
            r.render_all(&[("x^2", false), ("\\frac{a}{", true)], &mut again),
            first
        );
        let mut macros = BTreeMap::new();
        macros.insert("\\R".to_string(), "\\mathbb{R}".to_string());
        let other = MathRenderer::new(&macros);
        assert_ne!(other.key("x^2", false), r.key("x^2", false));
    }
}
