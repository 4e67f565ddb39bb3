//! The interface's words: one message catalogue per language (`src/messages/<language>.toml`,
//! embedded in the binary), selected by `language` in `site.toml` and overridden key by key by
//! its `[messages]` table.
//!
//! Templates read the catalogue as `site.msg` (`{{ site.msg.nav_contents }}`, with the `fill`
//! filter for placeholders: `{{ site.msg.chapter_number | fill(n=chapter.number) }}`); the
//! scripts read the `js_*` keys from the JSON the pages carry; the Rust code that writes HTML
//! (labels, hover texts, the verification page) reads [`get`] and [`fill`].
//!
//! The catalogue in force is process-wide: [`crate::content::load_config`] installs the one of
//! the site it loads (a process builds one site at a time; `serve` reloads it with the config).
//! Everything rendered from it is cached under keys that include the config, so a change of
//! language or of an override renders the pages again.

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, RwLock};

/// The languages with a catalogue, and their text.
pub const CATALOGUES: [(&str, &str); 2] = [
    ("en", include_str!("messages/en.toml")),
    ("zh-CN", include_str!("messages/zh-CN.toml")),
];

/// The language of a site that does not set `language`.
pub const DEFAULT_LANGUAGE: &str = "zh-CN";

/// One language's messages, with the site's overrides applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalogue {
    /// The language (`en`, `zh-CN`).
    pub language: String,
    /// Key to text.
    pub messages: BTreeMap<String, String>,
}

impl Catalogue {
    /// The built-in catalogue of `language`, if there is one.
    pub fn builtin(language: &str) -> Option<Catalogue> {
        let (name, text) = CATALOGUES.iter().find(|(name, _)| *name == language)?;
        let messages: BTreeMap<String, String> =
            toml::from_str(text).expect("built-in catalogues are valid TOML tables of strings");
        Some(Catalogue {
            language: name.to_string(),
            messages,
        })
    }

    /// The text of `key` (the key itself when it is missing, which the unit tests rule out for
    /// the built-in keys).
    pub fn get<'a>(&'a self, key: &'a str) -> &'a str {
        self.messages.get(key).map_or(key, String::as_str)
    }

    /// The messages the scripts read (`js_*`), as JSON safe inside a `<script>` element.
    pub fn script_json(&self) -> String {
        let js: BTreeMap<&str, &str> = self
            .messages
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("js_")?, v.as_str())))
            .collect();
        serde_json::to_string(&js)
            .expect("a map of strings serializes")
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026")
    }
}

/// The names of the built-in languages, for error messages.
pub fn languages() -> Vec<&'static str> {
    CATALOGUES.iter().map(|(name, _)| *name).collect()
}

/// Every key a catalogue has (those of the default language; the unit tests check that every
/// catalogue has the same).
pub fn keys() -> Vec<String> {
    Catalogue::builtin(DEFAULT_LANGUAGE)
        .expect("the default language has a catalogue")
        .messages
        .into_keys()
        .collect()
}

static CURRENT: LazyLock<RwLock<Arc<Catalogue>>> = LazyLock::new(|| {
    RwLock::new(Arc::new(
        Catalogue::builtin(DEFAULT_LANGUAGE).expect("the default language has a catalogue"),
    ))
});

/// Makes `catalogue` the one the interface is written in.
pub fn install(catalogue: Catalogue) {
    let mut current = CURRENT.write().unwrap_or_else(|e| e.into_inner());
    if **current != catalogue {
        *current = Arc::new(catalogue);
    }
}

/// The catalogue in force.
pub fn current() -> Arc<Catalogue> {
    CURRENT.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The text of `key` in the catalogue in force.
pub fn get(key: &str) -> String {
    current().get(key).to_string()
}

/// The text of `key` with each `{name}` replaced by its value.
pub fn fill(key: &str, values: &[(&str, &dyn std::fmt::Display)]) -> String {
    fill_text(&get(key), values)
}

/// `text` with each `{name}` replaced by its value (placeholders without a value stay).
pub fn fill_text(text: &str, values: &[(&str, &dyn std::fmt::Display)]) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}').and_then(|close| {
            let name = &after[..close];
            values
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (close, v.to_string()))
        }) {
            Some((close, value)) => {
                out.push_str(&value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalogue_has_every_key_of_every_other() {
        let all: Vec<Catalogue> = languages()
            .into_iter()
            .map(|l| Catalogue::builtin(l).unwrap())
            .collect();
        for a in &all {
            for b in &all {
                let missing: Vec<&String> = a
                    .messages
                    .keys()
                    .filter(|k| !b.messages.contains_key(*k))
                    .collect();
                assert!(
                    missing.is_empty(),
                    "{} lacks {missing:?} (in {})",
                    b.language,
                    a.language
                );
            }
        }
    }

    #[test]
    fn placeholders_are_the_same_in_every_catalogue() {
        let placeholders = |text: &str| {
            let mut names: Vec<String> = text
                .split('{')
                .skip(1)
                .filter_map(|s| s.split_once('}').map(|(n, _)| n.to_string()))
                .collect();
            names.sort();
            names
        };
        let zh = Catalogue::builtin("zh-CN").unwrap();
        let en = Catalogue::builtin("en").unwrap();
        for (key, text) in &zh.messages {
            assert_eq!(placeholders(text), placeholders(en.get(key)), "{key}");
        }
    }

    #[test]
    fn the_english_catalogue_has_no_cjk_character() {
        let en = Catalogue::builtin("en").unwrap();
        for (key, text) in &en.messages {
            assert!(
                !text.chars().any(crate::text::is_cjk),
                "{key} = {text:?} is not English"
            );
        }
    }

    #[test]
    fn every_key_is_listed_in_the_authoring_guide() {
        let doc = include_str!("../docs/authoring.md");
        for key in keys() {
            assert!(
                doc.contains(&format!("| `{key}` |")),
                "docs/authoring.md §9.4 does not list `{key}`"
            );
        }
    }

    #[test]
    fn fill_replaces_named_placeholders_and_keeps_others() {
        assert_eq!(
            fill_text("第 {n} 篇 {x}", &[("n", &3)]),
            "第 3 篇 {x}".to_string()
        );
        assert_eq!(fill_text("{a}{b}", &[("a", &"x"), ("b", &1)]), "x1");
    }

    #[test]
    fn script_json_cannot_close_the_script_element() {
        let mut c = Catalogue::builtin("en").unwrap();
        c.messages.insert("js_x".into(), "</script>".into());
        let json = c.script_json();
        assert!(!json.contains("</"), "{json}");
        assert!(json.contains("\"x\""));
    }
}
