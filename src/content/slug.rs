//! The slug rule: what may follow `NN-` in a chapter's file name.
//!
//! A slug is a directory of the output (`SLUG/index.html`), a URL path segment, the prefix of
//! every id on the print page (`SLUG--id`) and a value namespace (`SLUG/name`), so it is held to
//! the strictest of those: lowercase ASCII letters and digits joined by single hyphens, and
//! none of the names the site itself writes at the top of its output. `attnbook new` and the
//! loader apply this one rule, so a chapter that `new` would refuse cannot be built either.

/// Top-level names of the output that are directories the site writes itself, or that a
/// reader would take for them. Every other top-level output file has a `.` in its name
/// (`index.html`, `print.html`, `atom.xml`, `404.html`, `search-index.json`, ...), which no
/// slug can have. `site` keeps a test that every name it writes is covered.
pub const RESERVED: [&str; 8] = [
    "tags",
    "categories",
    "verification",
    "print",
    "404",
    // Directories of the built-in `static/`.
    "figures",
    "katex",
    "vendor",
];

/// What the rule asks, for help texts.
pub const RULE: &str = "a slug is lowercase ASCII letters and digits joined by single hyphens, \
                        e.g. `attention-variants`";

/// Why `slug` is not a valid slug, or `None` if it is one.
pub fn problem(slug: &str) -> Option<String> {
    if slug.is_empty() {
        return Some("it is empty".to_string());
    }
    if let Some(c) = slug
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        let shown = if c.is_control() || c.is_whitespace() {
            format!("{:?}", c)
        } else {
            format!("`{c}`")
        };
        return Some(format!(
            "it has {shown}, which is not a lowercase ASCII letter, a digit or `-`"
        ));
    }
    if slug.starts_with('-') || slug.ends_with('-') {
        return Some("it starts or ends with `-`".to_string());
    }
    if slug.contains("--") {
        return Some(
            "it has `--`, which the print page uses to join a chapter's slug to its ids"
                .to_string(),
        );
    }
    if RESERVED.contains(&slug) {
        return Some(format!(
            "`/{slug}/` is a page or directory the site writes itself"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_joined_by_single_hyphens_pass() {
        for slug in ["a", "multi-head", "kv-cache", "2024", "c-sharp", "x1-y2"] {
            assert_eq!(problem(slug), None, "{slug}");
        }
    }

    #[test]
    fn paths_urls_and_the_sites_own_names_are_refused() {
        let cases = [
            ("", "empty"),
            ("..", "`.`"),
            (".", "`.`"),
            ("print.html", "`.`"),
            ("a/b", "`/`"),
            ("a#b", "`#`"),
            ("q?x", "`?`"),
            ("sp ace", "' '"),
            ("tab\tx", "'\\t'"),
            ("A", "`A`"),
            ("注意力", "`注`"),
            ("a_b", "`_`"),
            ("-a", "starts or ends"),
            ("a-", "starts or ends"),
            ("a--b", "`--`"),
            ("tags", "writes itself"),
            ("categories", "writes itself"),
            ("verification", "writes itself"),
            ("print", "writes itself"),
            ("404", "writes itself"),
            ("figures", "writes itself"),
            ("katex", "writes itself"),
            ("vendor", "writes itself"),
        ];
        for (slug, expected) in cases {
            let message = problem(slug).unwrap_or_else(|| panic!("{slug:?} was accepted"));
            assert!(message.contains(expected), "{slug:?}: {message}");
        }
    }
}
