//! Files: request paths resolved to files of the output directory, and never outside it.

use std::path::{Component, Path, PathBuf};

/// The output directory as the server sees it.
pub(super) struct Output {
    pub(super) dir: PathBuf,
}

/// What a request path names.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Target {
    /// A file inside the output directory (symlinks resolved).
    File(PathBuf),
    /// A directory asked for without its trailing `/`.
    Redirect(String),
    NotFound,
    /// Outside the output directory.
    Forbidden,
    BadRequest,
}

impl Output {
    /// Maps a request path (still percent-encoded) to what to answer; `query` is kept by
    /// redirects.
    pub(super) fn resolve(&self, raw: &str, query: &str) -> Target {
        self.lookup(raw, query).unwrap_or_else(|target| target)
    }

    fn lookup(&self, raw: &str, query: &str) -> Result<Target, Target> {
        let segments = segments(raw)?;
        // Canonical on both sides, so a symlink pointing out of the site is caught by the
        // prefix check; re-read per request because every build swaps the directory in anew.
        let base = self.dir.canonicalize().map_err(|_| Target::NotFound)?;
        let mut real = inside(&base, &segments.iter().fold(base.clone(), |p, s| p.join(s)))?;
        if real.is_dir() {
            if !raw.ends_with('/') {
                let query = if query.is_empty() {
                    String::new()
                } else {
                    format!("?{query}")
                };
                // Built from the path without its leading slashes: `//host` would leave the site.
                return Ok(Target::Redirect(format!(
                    "/{}/{query}",
                    raw.trim_start_matches('/')
                )));
            }
            real = inside(&base, &real.join("index.html"))?;
        }
        if real.is_file() {
            Ok(Target::File(real))
        } else {
            Err(Target::NotFound)
        }
    }
}

/// Resolves `path` and checks that it stays inside `base`.
fn inside(base: &Path, path: &Path) -> Result<PathBuf, Target> {
    let real = path.canonicalize().map_err(|_| Target::NotFound)?;
    if real.starts_with(base) {
        Ok(real)
    } else {
        Err(Target::Forbidden)
    }
}

/// Splits a request path into plain names: percent-decoded first (so `%2e%2e` and `%2f` are
/// seen for what they are), `.` and empty names dropped, and `..` or anything a file system
/// would read as more than one name refused.
fn segments(raw: &str) -> Result<Vec<String>, Target> {
    if !raw.starts_with('/') {
        return Err(Target::BadRequest);
    }
    let decoded = percent_decode(raw).ok_or(Target::BadRequest)?;
    let mut names = Vec::new();
    for name in decoded.split('/') {
        match name {
            "" | "." => {}
            ".." => return Err(Target::Forbidden),
            _ if is_plain_name(name) => names.push(name.to_string()),
            _ => return Err(Target::Forbidden),
        }
    }
    Ok(names)
}

fn is_plain_name(name: &str) -> bool {
    let mut parts = Path::new(name).components();
    !name.contains(['\\', '\0'])
        && matches!(
            (parts.next(), parts.next()),
            (Some(Component::Normal(_)), None)
        )
}

/// `%XX` escapes to bytes; `None` for a result that is not UTF-8.
fn percent_decode(raw: &str) -> Option<String> {
    percent_encoding::percent_decode_str(raw)
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

/// The Content-Type of a file, by extension (text types in UTF-8, as the site writes them).
pub(super) fn content_type(path: &Path) -> String {
    let mime = mime_guess::from_path(path).first_or_octet_stream();
    let text = mime.type_() == mime_guess::mime::TEXT
        || mime.subtype() == mime_guess::mime::JAVASCRIPT
        || mime.subtype() == mime_guess::mime::XML;
    if text {
        format!("{mime}; charset=utf-8")
    } else {
        mime.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traversal_is_refused_however_it_is_spelt() {
        for raw in [
            "/../site.toml",
            "/%2e%2e/site.toml",
            "/..%2fsite.toml",
            "/a/%2E%2E/%2e%2e/x",
        ] {
            assert_eq!(segments(raw), Err(Target::Forbidden), "{raw}");
        }
        assert_eq!(segments("/a\\..\\b"), Err(Target::Forbidden));
        assert_eq!(segments("http://evil/x"), Err(Target::BadRequest));
        // A malformed escape stays literal (as browsers do): a file name, not a way out.
        assert_eq!(segments("/%zz"), Ok(vec!["%zz".to_string()]));
        assert_eq!(segments("/%ff"), Err(Target::BadRequest), "not UTF-8");
        assert_eq!(
            segments("//a/./b/"),
            Ok(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(segments("/%E4%BD%A0"), Ok(vec!["你".to_string()]));
    }

    #[test]
    fn directories_redirect_to_their_slash_and_serve_their_index() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ch")).unwrap();
        std::fs::write(dir.path().join("ch/index.html"), "<p>x</p>").unwrap();
        let output = Output {
            dir: dir.path().to_path_buf(),
        };
        assert_eq!(
            output.resolve("//ch", "a=1"),
            Target::Redirect("/ch/?a=1".into())
        );
        assert!(
            matches!(output.resolve("/ch/", ""), Target::File(f) if f.ends_with("ch/index.html"))
        );
        assert_eq!(output.resolve("/nope/", ""), Target::NotFound);
    }
}
