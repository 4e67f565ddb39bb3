//! Pages: the live-reload script and the build-error box injected into every HTML page.

use super::EVENTS;
use crate::render::html::escape;

/// Long-polls the server and reloads when the generation moves; backs off while the server is
/// down. Plain ES5, no globals, nothing logged.
pub(super) fn reload_script(generation: u64) -> String {
    format!(
        "<script>/* attnbook serve: live reload */(function(){{var g={generation},w=1000;\
         function p(){{fetch(\"{EVENTS}?since=\"+g,{{cache:\"no-store\"}})\
         .then(function(r){{if(!r.ok)throw r.status;return r.json()}})\
         .then(function(s){{w=1000;if(s.generation!==g)location.reload();else p()}},\
         function(){{setTimeout(p,w);w=Math.min(2*w,10000)}})}}p()}})();</script>\n"
    )
}

pub(super) fn insert(html: &str, at: usize, snippet: &str) -> String {
    let mut out = String::with_capacity(html.len() + snippet.len());
    out.push_str(&html[..at]);
    out.push_str(snippet);
    out.push_str(&html[at..]);
    out
}

/// Where the body's content ends: before the last `</body>`, or at the end.
pub(super) fn body_end(html: &str) -> usize {
    // ASCII lowercasing keeps byte offsets, so the index is valid in `html`.
    html.to_ascii_lowercase()
        .rfind("</body")
        .unwrap_or(html.len())
}

/// Where the body's content starts: after the `<body ...>` tag, or at the start.
pub(super) fn body_start(html: &str) -> usize {
    let lower = html.to_ascii_lowercase();
    let tag = lower
        .match_indices("<body")
        .map(|(i, _)| i)
        .find(|&i| lower[i + 5..].starts_with(|c: char| c == '>' || c.is_ascii_whitespace()));
    tag.and_then(|i| lower[i..].find('>').map(|end| i + end + 1))
        .unwrap_or(0)
}

/// The diagnostics of the failed build, as a box on top of every page.
pub(super) fn error_box(diagnostics: &str) -> String {
    format!(
        "<div class=\"build-error\" role=\"alert\"><p><strong>Build failed.</strong> The site \
         shown is the last good build, if any. Fix the problems below and save: this page \
         reloads by itself.</p>\
         <pre>{}</pre></div>\n",
        escape(diagnostics)
    )
}

/// A page of the server's own (when the site has no page to show), readable without the site's
/// stylesheet, which may not exist yet.
pub(super) fn plain_page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><style>body{{margin:2rem;font:16px/1.5 system-ui,sans-serif}}\
         .build-error{{border:2px solid #c62828;padding:.75rem 1rem}}\
         .build-error pre{{white-space:pre-wrap}}</style></head>\n<body>{body}</body></html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_ends_the_body_and_the_error_box_starts_it() {
        let html = "<body class=\"x\"><pre>&lt;/body&gt;</pre></BODY></html>";
        let end = body_end(html);
        assert_eq!(&html[end..], "</BODY></html>");
        assert_eq!(&html[..body_start(html)], "<body class=\"x\">");
        assert_eq!(body_start("<bodyx><p>bare</p>"), 0);
        assert_eq!(body_end("<p>bare</p>"), "<p>bare</p>".len());
    }

    #[test]
    fn the_error_box_escapes_the_diagnostics() {
        let shown = error_box("a.md:1:1: error: <script>");
        assert!(shown.starts_with("<div class=\"build-error\""));
        assert!(shown.contains("<pre>a.md:1:1: error: &lt;script&gt;</pre>"));
    }
}
