//! `site.toml`: the site configuration.
//!
//! Strict like the front matter: an unknown or misspelt key is an error with its line, never
//! silently ignored. Only `title` and `base_url` are required (DESIGN §3.7).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::diagnostic::{Diagnostic, Location};

mod inputs;
pub use inputs::RUNTIME_CRATES;

/// The parsed `site.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Site title, shown in the header and the `<title>`.
    pub title: String,
    /// Where the site is published, e.g. `https://user.github.io/repo/`.
    pub base_url: String,
    /// Language of the content (`lang` attribute).
    #[serde(default = "default_language")]
    pub language: String,
    /// One-paragraph description of the site (index page and meta tags).
    #[serde(default)]
    pub description: String,
    /// Author shown in page metadata.
    #[serde(default)]
    pub author: String,
    /// Markdown introduction shown on the index page above the chapter list.
    #[serde(default)]
    pub intro: String,
    /// CSL style for citations and reference lists (a name from hayagriva's archive); the default
    /// is the Chinese national standard GB/T 7714-2015, author-date.
    #[serde(default = "default_citation_style")]
    pub citation_style: String,
    /// KaTeX settings.
    #[serde(default)]
    pub katex: KatexConfig,
    /// Experiment settings.
    #[serde(default)]
    pub lab: LabConfig,
    /// The git repository of the `lab` crate the experiments link (for the series, this
    /// repository). With it, each chapter page offers its experiments as a standalone Cargo
    /// project pinned to the commit the site was built from; without it, no download.
    #[serde(default)]
    pub repository: Option<String>,
    /// Site search.
    #[serde(default)]
    pub search: Switch,
    /// Build-time syntax highlighting of code blocks.
    #[serde(default)]
    pub highlight: Switch,
    /// The verification page (`verification/index.html`): every quoted number and pinned
    /// output of the site with its rerun and status.
    #[serde(default)]
    pub verification: Switch,

    /// The print page: the whole series on one page (`print.html`), and the PDF made of it.
    #[serde(default)]
    pub print: PrintConfig,
    /// `[feed]`: what the Atom feed's entries carry.
    #[serde(default)]
    pub feed: FeedConfig,
    /// `[messages]`: the site's own text for single interface messages (key = "text"), over
    /// the catalogue of `language` ([`crate::messages`]).
    #[serde(default)]
    pub messages: BTreeMap<toml::Spanned<String>, toml::Spanned<String>>,
    /// Problems that do not stop the build (characters XML forbids in a value), at their keys.
    #[serde(skip)]
    pub warnings: Vec<Diagnostic>,
}

/// `[search]`, `[highlight]`, `[verification]`: a feature that is on unless
/// `enabled = false`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Switch {
    /// Whether the feature is built.
    #[serde(default = "yes")]
    pub enabled: bool,
}

impl Default for Switch {
    fn default() -> Self {
        Switch { enabled: true }
    }
}

fn yes() -> bool {
    true
}

/// `[print]`: the print page (on unless `enabled = false`) and, with `pdf = true`, a link on
/// every page to `book.pdf` beside it, which the site's workflow prints from `print.html`
/// (`scripts/pdf.mjs`); `build` does not make the PDF.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrintConfig {
    /// Whether `print.html` is built.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Whether every page links `book.pdf` (published beside `print.html`).
    #[serde(default)]
    pub pdf: bool,
}

/// `[feed]`: `content = "full"` (the default) puts each chapter's whole page body in its
/// entry; `"summary"` only its summary and link, for chapters too large to send to every
/// subscriber on every poll, whose formulas and figures a feed reader shows without the
/// site's stylesheet anyway.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedConfig {
    /// What each entry carries.
    #[serde(default)]
    pub content: FeedContent,
}

/// What an Atom entry carries (`[feed] content`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FeedContent {
    /// The chapter's body.
    #[default]
    Full,
    /// Its summary and link only.
    Summary,
}

impl Default for PrintConfig {
    fn default() -> Self {
        PrintConfig {
            enabled: true,
            pdf: false,
        }
    }
}

/// The PDF is printed from the print page: `pdf = true` with `enabled = false` links a file
/// nothing can make.
fn print_problem(path: &Path, text: &str, print: &PrintConfig) -> Option<Diagnostic> {
    if print.enabled || !print.pdf {
        return None;
    }
    let at = value_span(text, "pdf").unwrap_or(0..0);
    Some(
        Diagnostic::error("`[print] pdf = true` needs the print page, but `enabled = false`")
            .at(Location::in_source(path, text, at))
            .with_help(
                "book.pdf is printed from print.html: remove `enabled = false` or `pdf = true`",
            ),
    )
}

/// `[katex]`: site-wide math settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KatexConfig {
    /// Macros available in every formula, e.g. `"\\R" = "\\mathbb{R}"`.
    #[serde(default)]
    pub macros: BTreeMap<String, String>,
}

/// `[lab]`: how experiments are built and run.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabConfig {
    /// Path (relative to the site root) to another `lab` crate to link experiments against.
    pub crate_path: Option<PathBuf>,
    /// Default per-block timeout in seconds.
    pub timeout: Option<u64>,
    /// Address-space limit of an experiment process, in MiB (default 4096).
    pub memory_mb: Option<u64>,
    /// Blocks showing more code lines than this start folded (unless `fold=false`); none by
    /// default.
    pub fold_lines: Option<usize>,
    /// Files the experiments read: glob patterns relative to the site root (`data/*.csv`).
    /// Each match is part of the cache key, copied into every chapter's working directory at
    /// its site-relative path, and packed into the take-home downloads.
    #[serde(default)]
    pub data: Vec<toml::Spanned<String>>,
    /// `[lab.dependencies]`: crates the experiments may use, in Cargo's own syntax.
    #[serde(default)]
    pub dependencies: BTreeMap<String, toml::Spanned<toml::Value>>,
    /// The files `data` matches, relative to the site root, sorted (filled by
    /// [`crate::content::load_config`], which knows the site root).
    #[serde(skip)]
    pub data_files: Vec<PathBuf>,
    /// Where each dependency is declared (filled with `data_files`).
    #[serde(skip)]
    pub dependency_at: BTreeMap<String, Location>,
}

fn default_citation_style() -> String {
    "gb-7714-2015-author-date".to_string()
}

fn default_language() -> String {
    "zh-CN".to_string()
}

impl Config {
    /// Parses `site.toml` text; `path` is used for diagnostics only.
    pub fn parse(path: &Path, text: &str) -> Result<Config, Vec<Diagnostic>> {
        let mut config: Config = match parse_toml(path, text) {
            Ok(config) => config,
            Err(mut problems) => {
                // Every problem at once: a bad `base_url` is reported beside an unknown key,
                // read from the plain TOML table when the typed one cannot be made.
                let url = toml::from_str::<toml::Table>(text).ok().and_then(|t| {
                    t.get("base_url")
                        .and_then(|v| v.as_str().map(str::to_string))
                });
                problems.extend(url.and_then(|url| base_url_problem(path, text, &url)));
                problems.extend(repository_problem(
                    path,
                    text,
                    plain_string(text, "repository"),
                ));
                problems.sort_by_key(|d| d.location.as_ref().map(|l| l.span.start));
                return Err(problems);
            }
        };
        let problems: Vec<Diagnostic> = base_url_problem(path, text, &config.base_url)
            .into_iter()
            .chain(repository_problem(path, text, config.repository.clone()))
            .chain(config.message_problems(path, text))
            .chain(print_problem(path, text, &config.print))
            .collect();
        if !problems.is_empty() {
            return Err(problems);
        }
        config.warnings = config.forbidden_characters(path, text);
        Ok(config)
    }

    /// The catalogue of the site's `language` with its `[messages]` overrides applied
    /// (the default language's if `language` has none, which [`Config::parse`] reports).
    pub fn catalogue(&self) -> crate::messages::Catalogue {
        let mut catalogue = crate::messages::Catalogue::builtin(&self.language)
            .or_else(|| crate::messages::Catalogue::builtin(crate::messages::DEFAULT_LANGUAGE))
            .expect("the default language has a catalogue");
        for (key, text) in &self.messages {
            if let Some(slot) = catalogue.messages.get_mut(key.get_ref()) {
                *slot = text.get_ref().clone();
            }
        }
        catalogue
    }

    /// An unknown `language` (at its value, listing the known ones) and every unknown key of
    /// `[messages]` (at the key, with the closest known keys).
    fn message_problems(&self, path: &Path, text: &str) -> Vec<Diagnostic> {
        let mut problems = Vec::new();
        let languages = crate::messages::languages();
        if !languages.contains(&self.language.as_str()) {
            let at = value_span(text, "language").unwrap_or(0..0);
            problems.push(
                Diagnostic::error(format!(
                    "unknown `language` `{}`: the interface has a catalogue for {}",
                    self.language,
                    languages
                        .iter()
                        .map(|l| format!("`{l}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .at(Location::in_source(path, text, at))
                .with_help(
                    "set `language` to one of them; single messages can be replaced under `[messages]`",
                ),
            );
        }
        let keys = crate::messages::keys();
        for key in self.messages.keys() {
            if keys.iter().any(|k| k == key.get_ref()) {
                continue;
            }
            let mut close: Vec<(f64, &String)> = keys
                .iter()
                .map(|k| (strsim::jaro_winkler(k, key.get_ref()), k))
                .filter(|(score, _)| *score > 0.75)
                .collect();
            close.sort_by(|a, b| b.0.total_cmp(&a.0));
            let help = if close.is_empty() {
                "the keys are those of src/messages/en.toml (listed in docs/authoring.md)"
                    .to_string()
            } else {
                format!(
                    "did you mean {}?",
                    close
                        .iter()
                        .take(3)
                        .map(|(_, k)| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            problems.push(
                Diagnostic::error(format!(
                    "unknown message key `{}` in `[messages]`",
                    key.get_ref()
                ))
                .at(Location::in_source(path, text, key.span()))
                .with_help(help),
            );
        }
        problems
    }

    /// A TOML escape (`\u000c`) puts in a string what the file itself may not hold: every text
    /// value that reaches a page is checked after unescaping, and reported at its key.
    fn forbidden_characters(&self, path: &Path, text: &str) -> Vec<Diagnostic> {
        let values = [
            ("title", &self.title),
            ("language", &self.language),
            ("description", &self.description),
            ("author", &self.author),
            ("intro", &self.intro),
        ]
        .into_iter()
        .chain(self.katex.macros.values().map(|v| ("macros", v)));
        values
            .filter_map(|(key, value)| {
                let at = value_span(text, key)
                    .or_else(|| text.find(key).map(|i| i..i + key.len()))
                    .unwrap_or(0..0);
                crate::text::check_value(path, text, at, key, value)
            })
            .collect()
    }

    /// The path part of `base_url`, always starting and ending with `/` (`/repo/`).
    pub fn base_path(&self) -> String {
        let rest = self
            .base_url
            .split_once("://")
            .map(|(_, rest)| rest.find('/').map_or("/", |i| &rest[i..]))
            .unwrap_or(&self.base_url);
        let trimmed = rest.trim_matches('/');
        if trimmed.is_empty() {
            "/".to_string()
        } else {
            format!("/{trimmed}/")
        }
    }

    /// `base_url` with exactly one trailing slash.
    pub fn base_url_slash(&self) -> String {
        format!("{}/", self.base_url.trim_end_matches('/'))
    }
}

/// The error for a `base_url` that [`check_base_url`] refuses, at its value in `text`.
fn base_url_problem(path: &Path, text: &str, url: &str) -> Option<Diagnostic> {
    let bad = check_base_url(url).err()?;
    let at = value_span(text, "base_url").unwrap_or(0..0);
    Some(
        Diagnostic::error(format!("`base_url` {}, got `{url}`", bad.problem))
            .at(Location::in_source(path, text, at))
            .with_help(bad.help),
    )
}

/// A top-level string of the TOML text, read without the typed config (which may not parse).
fn plain_string(text: &str, key: &str) -> Option<String> {
    let table = toml::from_str::<toml::Table>(text).ok()?;
    table.get(key)?.as_str().map(str::to_string)
}

/// The error for a `repository` that is not a git URL cargo can fetch, at its value in `text`.
fn repository_problem(path: &Path, text: &str, url: Option<String>) -> Option<Diagnostic> {
    let url = url?;
    let problem = check_repository(&url).err()?;
    let at = value_span(text, "repository").unwrap_or(0..0);
    Some(
        Diagnostic::error(format!("`repository` {problem}, got `{url}`"))
            .at(Location::in_source(path, text, at))
            .with_help(
                "write the git URL of the repository, e.g. `https://github.com/user/repo`; \
                 the take-home projects depend on it with `git = \"...\"`",
            ),
    )
}

/// Checks `repository`: a URL cargo accepts for a `git` dependency (`https`, `http`, `ssh`,
/// `git` or `file` scheme), with nothing that would change its meaning once `?rev=` is
/// appended in the lock file (a query or fragment) or break it (spaces).
pub fn check_repository(url: &str) -> Result<(), String> {
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("contains a space or a control character".into());
    }
    if url.contains(['?', '#']) {
        return Err("has a query or fragment (`?...`, `#...`)".into());
    }
    // A plain URL: only the characters RFC 3986 lets a URL hold as they are, so cargo's URL
    // parser leaves it unchanged (the take-home Cargo.toml and Cargo.lock must name one and
    // the same source) and no TOML escape is needed (`"`, `\`, invisible and combining
    // characters are not among them).
    if let Some(c) = url.chars().find(|&c| !plain_url_char(c)) {
        return Err(format!(
            "holds {c:?} (U+{:04X}), which a plain URL does not; percent-encode it",
            c as u32
        ));
    }
    match url.split_once("://") {
        Some(("https" | "http" | "ssh" | "git", rest))
            if !rest.starts_with('/') && !rest.is_empty() =>
        {
            Ok(())
        }
        Some(("file", rest)) if rest.starts_with('/') && rest.len() > 1 => Ok(()),
        Some(("https" | "http" | "ssh" | "git" | "file", _)) => Err("has no host or path".into()),
        Some((scheme, _)) => Err(format!(
            "has the scheme `{scheme}`, not https, http, ssh, git or file"
        )),
        None => Err("is not a URL (cargo cannot fetch `host:path`)".into()),
    }
}

/// An unreserved or reserved character of RFC 3986, or `%` of a percent-encoding.
fn plain_url_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~:/?#[]@!$&'()*+,;=%".contains(c)
}

/// What is wrong with a `base_url`, and how to write it instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadBaseUrl {
    /// What is wrong, e.g. `has a query or fragment`.
    pub problem: String,
    /// The fix.
    pub help: String,
}

/// Checks a `base_url`, from site.toml or from `--base-url`: an `http://` or `https://` URL
/// with a host, or a path starting with `/`. Every page and asset URL is this string with a path
/// appended, so a query or fragment, a missing scheme (the URL would be read as a relative
/// path) or a space breaks all of them.
pub fn check_base_url(url: &str) -> Result<(), BadBaseUrl> {
    let bad = |problem: &str, help: String| {
        Err(BadBaseUrl {
            problem: problem.to_string(),
            help,
        })
    };
    let example =
        "write e.g. `https://user.github.io/repo/`, or `/` for a site at the root of its host";
    if url.is_empty() {
        return bad("is empty", example.to_string());
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad(
            "contains a space or a control character",
            "percent-encode it (`%20`) or remove it".to_string(),
        );
    }
    if url.contains(['?', '#']) {
        let kept = url.split(['?', '#']).next().unwrap_or_default();
        return bad(
            "has a query or fragment (`?...`, `#...`)",
            format!("every page URL is appended to it; write `{kept}`"),
        );
    }
    if url.starts_with("//") {
        return bad("has no scheme", format!("write `https:{url}`"));
    }
    if url.starts_with('/') {
        return Ok(());
    }
    match url.split_once("://") {
        Some(("http" | "https", rest)) if !rest.starts_with('/') && !rest.is_empty() => Ok(()),
        Some(("http" | "https", _)) => bad("has no host", example.to_string()),
        Some((scheme, _)) => bad(
            &format!("has the scheme `{scheme}`, not http or https"),
            example.to_string(),
        ),
        None => bad(
            "is not an absolute URL",
            format!(
                "write `https://{url}` (or `/{}` for a path on the same host)",
                url.trim_start_matches("./")
            ),
        ),
    }
}

/// Byte span of `key = value` on a top-level line of the TOML text (for pointing at values).
pub(crate) fn value_span(toml_text: &str, key: &str) -> Option<std::ops::Range<usize>> {
    let mut offset = 0;
    for line in toml_text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix(key)
            && rest.trim_start().starts_with('=')
        {
            let start = offset + (line.len() - trimmed.len());
            return Some(start..offset + line.trim_end().len());
        }
        offset += line.len();
    }
    None
}

/// Deserializes a TOML document and reports every problem in it, not only the first: every
/// syntax error (toml's recovering parser), then every unknown key and every value of the wrong
/// type. serde stops at the first of those, so each one found is reported, its key taken out of
/// the document, and the rest deserialized again, until it succeeds or only a required key
/// taken out (already reported) is missing.
pub fn parse_toml<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, Vec<Diagnostic>> {
    let (mut document, syntax) = toml::de::DeTable::parse_recoverable(text);
    if !syntax.is_empty() {
        return Err(syntax
            .iter()
            .map(|e| toml_diagnostic(path, text, e))
            .collect());
    }
    let mut problems = Vec::new();
    let mut taken_out = Vec::new();
    loop {
        let error = match T::deserialize(toml::de::Deserializer::from(document.clone())) {
            Ok(value) if problems.is_empty() => return Ok(value),
            Ok(_) => return Err(problems),
            Err(error) => error,
        };
        let missing = error
            .message()
            .strip_prefix("missing field `")
            .and_then(|r| r.split('`').next());
        if missing.is_some_and(|field| taken_out.iter().any(|k| k == field)) {
            return Err(problems);
        }
        problems.push(toml_diagnostic(path, text, &error));
        // A missing key has nothing to take out: deserializing again would only repeat it.
        if missing.is_some() {
            return Err(problems);
        }
        match error
            .span()
            .and_then(|at| take_out(document.get_mut(), &at))
        {
            Some(key) => taken_out.push(key),
            None => return Err(problems),
        }
    }
}

/// Removes the entry whose key or value holds `at` (the innermost, in nested tables); returns
/// its key.
fn take_out(table: &mut toml::de::DeTable<'_>, at: &std::ops::Range<usize>) -> Option<String> {
    let holds = |span: std::ops::Range<usize>| span.start <= at.start && at.end <= span.end;
    // A table's span need not cover its keys (`[lab]` and the lines under it), so look inside
    // every nested table first.
    for (_, value) in table.iter_mut() {
        if let toml::de::DeValue::Table(inner) = value.get_mut()
            && let Some(found) = take_out(inner, at)
        {
            return Some(found);
        }
    }
    let key = table
        .iter()
        .find(|(key, value)| holds(key.span()) || holds(value.span()))
        .map(|(key, _)| key.clone())?;
    table.remove(&key);
    Some(key.get_ref().to_string())
}

/// Turns a TOML error into a diagnostic at its span, with a hint for unknown keys.
pub fn toml_diagnostic(path: &Path, text: &str, error: &toml::de::Error) -> Diagnostic {
    let span = error.span().unwrap_or(0..0);
    let message = error.message().trim().to_string();
    let mut diagnostic =
        Diagnostic::error(first_line(&message)).at(Location::in_source(path, text, span));
    if let Some(hint) = unknown_field_hint(&message) {
        diagnostic = diagnostic.with_help(hint);
    } else if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|r| r.split('`').next())
    {
        diagnostic = diagnostic.with_help(format!("add `{field} = ...`"));
    }
    diagnostic
}

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or(message).to_string()
}

/// serde says "unknown field `titel`, expected one of `title`, ..."; turn that into a fix.
fn unknown_field_hint(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, expected) = rest.split_once('`')?;
    let known: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    let close = crate::diagnostic::closest(field, known.iter().copied());
    crate::diagnostic::did_you_mean(&close)
        .or_else(|| Some(format!("known keys: {}", known.join(", "))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_config_is_enough() {
        let c = Config::parse(
            Path::new("site.toml"),
            "title = \"T\"\nbase_url = \"https://a.b/repo\"\n",
        )
        .unwrap();
        assert_eq!(c.language, "zh-CN");
        assert_eq!(c.base_path(), "/repo/");
        assert_eq!(c.base_url_slash(), "https://a.b/repo/");
    }

    #[test]
    fn base_path_of_a_user_site_is_root() {
        let c = Config::parse(
            Path::new("s"),
            "title = \"T\"\nbase_url = \"https://a.b\"\n",
        )
        .unwrap();
        assert_eq!(c.base_path(), "/");
    }

    #[test]
    fn unknown_key_names_its_line_and_suggests_the_fix() {
        let text = "title = \"T\"\nbase_url = \"/\"\nlanguge = \"en\"\n";
        let problems = Config::parse(Path::new("site.toml"), text).unwrap_err();
        assert_eq!(problems.len(), 1);
        let d = &problems[0];
        let loc = d.location.clone().unwrap();
        assert_eq!((loc.line, loc.col), (3, 1));
        assert!(
            d.message.contains("unknown field `languge`"),
            "{}",
            d.message
        );
        assert_eq!(d.help.as_deref(), Some("did you mean `language`?"));
    }

    /// A bad `base_url` is not hidden by an unknown key elsewhere (tests/fixtures/bad-config).
    #[test]
    fn a_bad_base_url_is_listed_beside_other_problems() {
        let text = "title = \"T\"\nbase_url = \"example.com\"\nlangage = \"zh\"\n";
        let problems = Config::parse(Path::new("site.toml"), text).unwrap_err();
        let found: Vec<(usize, &str)> = problems
            .iter()
            .map(|d| (d.location.as_ref().unwrap().line, d.message.as_str()))
            .collect();
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].0, 2, "{found:?}");
        assert!(found[0].1.starts_with("`base_url` "), "{found:?}");
        assert!(found[1].1.contains("`langage`"), "{found:?}");
    }

    #[test]
    fn repository_takes_the_git_urls_cargo_fetches() {
        for good in [
            "https://github.com/attnbook/attnbook",
            "https://github.com/attnbook/attnbook.git",
            "ssh://git@github.com/attnbook/attnbook.git",
            "git://example.org/repo",
            "file:///srv/git/attnbook",
            "https://example.org/~user/r%20x.git",
        ] {
            assert_eq!(check_repository(good), Ok(()), "{good}");
        }
        for (bad, problem) in [
            ("git@github.com:attnbook/attnbook.git", "is not a URL"),
            ("github.com/attnbook/attnbook", "is not a URL"),
            ("ftp://example.org/repo", "scheme `ftp`"),
            ("https://", "no host"),
            ("file://relative/path", "no host or path"),
            ("https://github.com/a/b?ref=x", "query or fragment"),
            ("https://github.com/a b", "space"),
            ("", "is not a URL"),
            // Redteam-3 D9: characters that need a TOML escape or that cargo re-encodes.
            ("https://github.com/a/b\"c", "holds '\"'"),
            ("https://github.com/a/b\\c", "U+005C"),
            ("https://github.com/a/b\u{ad}c", "U+00AD"),
            ("https://github.com/a/b\u{200b}c", "U+200B"),
            ("https://github.com/a/b\u{301}c", "U+0301"),
            ("https://github.com/a/<b>", "U+003C"),
            ("https://gïthub.com/a/b", "U+00EF"),
        ] {
            let err = check_repository(bad).unwrap_err();
            assert!(err.contains(problem), "{bad}: {err}");
        }
    }

    /// A bad `repository` is an error at its line, named by its key, listed with the other
    /// problems of the file.
    #[test]
    fn a_bad_repository_names_its_key_and_line() {
        let text = "title = \"T\"\nbase_url = \"/\"\nrepository = \"git@github.com:a/b\"\n";
        let problems = Config::parse(Path::new("site.toml"), text).unwrap_err();
        assert_eq!(problems.len(), 1);
        let loc = problems[0].location.clone().unwrap();
        assert_eq!((loc.line, loc.col), (3, 1));
        assert!(
            problems[0].message.starts_with("`repository` is not a URL"),
            "{}",
            problems[0].message
        );
        let text = "title = \"T\"\nbase_url = \"x\"\nrepository = \"ftp://h/r\"\nlangage = 1\n";
        let problems = Config::parse(Path::new("site.toml"), text).unwrap_err();
        let lines: Vec<usize> = problems
            .iter()
            .map(|d| d.location.as_ref().unwrap().line)
            .collect();
        assert_eq!(lines, [2, 3, 4], "{problems:?}");
        let text = "title = \"T\"\nbase_url = \"/\"\nrepository = \"https://github.com/a/b\"\n";
        let config = Config::parse(Path::new("site.toml"), text).unwrap();
        assert_eq!(config.repository.as_deref(), Some("https://github.com/a/b"));
    }

    #[test]
    fn every_problem_of_a_file_is_listed() {
        let text = "title = \"T\"\nbase_url = \"/\"\ntitel = 1\n\n[lab]\ntimeout = \"soon\"\nmemry_mb = 5\n\n[search]\nenable = false\n";
        let problems = Config::parse(Path::new("site.toml"), text).unwrap_err();
        let found: Vec<(usize, &str)> = problems
            .iter()
            .map(|d| (d.location.as_ref().unwrap().line, d.message.as_str()))
            .collect();
        assert_eq!(found.len(), 4, "{found:?}");
        assert!(
            found.iter().any(|(l, m)| *l == 3 && m.contains("`titel`")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|(l, m)| *l == 6 && m.contains("invalid type")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|(l, m)| *l == 7 && m.contains("`memry_mb`")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|(l, m)| *l == 10 && m.contains("`enable`")),
            "{found:?}"
        );
    }

    #[test]
    fn a_bad_required_value_is_reported_once_not_again_as_missing() {
        let text = "title = 5\nbase_url = \"/\"\n";
        let problems = Config::parse(Path::new("site.toml"), text).unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].message.contains("invalid type"));
    }

    #[test]
    fn a_bad_base_url_is_an_error_at_its_line_saying_what_is_wrong() {
        let cases = [
            (
                "user.github.io/repo/",
                "not an absolute URL",
                "`https://user.github.io/repo/`",
            ),
            (
                "https://a.b/repo/?q=1#top",
                "query or fragment",
                "`https://a.b/repo/`",
            ),
            ("https://a.b/#x", "query or fragment", "`https://a.b/`"),
            ("https://", "no host", "https://user.github.io/repo/"),
            ("ftp://a.b/", "scheme `ftp`", "https://"),
            ("//a.b/repo/", "no scheme", "`https://a.b/repo/`"),
            ("https://a.b/my repo/", "space", "%20"),
            ("", "is empty", "https://"),
        ];
        for (url, problem, help) in cases {
            let text = format!("title = \"T\"\n\nbase_url = \"{url}\"\n");
            let problems = Config::parse(Path::new("site.toml"), &text).unwrap_err();
            let d = &problems[0];
            assert!(d.message.contains(problem), "{url}: {}", d.message);
            assert!(
                d.help.as_deref().is_some_and(|h| h.contains(help)),
                "{url}: {:?}",
                d.help
            );
            assert_eq!(d.location.as_ref().map(|l| l.line), Some(3), "{url}");
        }
        for url in [
            "/",
            "/repo/",
            "http://localhost:1111/",
            "https://a.b",
            "https://a.b/repo",
        ] {
            assert_eq!(check_base_url(url), Ok(()), "{url}");
        }
    }

    #[test]
    fn a_control_character_from_an_escape_is_a_warning_at_its_key() {
        let text = "title = \"T\"\nbase_url = \"/\"\ndescription = \"a\\fb\"\n";
        let config = Config::parse(Path::new("site.toml"), text).unwrap();
        let lines: Vec<usize> = config
            .warnings
            .iter()
            .filter_map(|d| d.location.as_ref().map(|l| l.line))
            .collect();
        assert_eq!(lines, [3], "{:?}", config.warnings);
    }

    #[test]
    fn every_syntax_error_is_listed() {
        let text = "title = \"T\nbase_url = \"/\"\nx = = 1\n";
        let problems = Config::parse(Path::new("site.toml"), text).unwrap_err();
        let lines: Vec<usize> = problems
            .iter()
            .map(|d| d.location.as_ref().unwrap().line)
            .collect();
        assert!(lines.contains(&1) && lines.contains(&3), "{problems:?}");
    }
}
