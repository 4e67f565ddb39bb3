//! SVG diagrams made for the series (`![说明](figures/x.svg){#fig:name}`) are inlined into the
//! page, so that `currentColor` follows the reader's light or dark theme. Inlined markup runs
//! with the page's rights, so a file is parsed (roxmltree, which refuses DTDs and so entity
//! tricks) and refused when it could run code or fetch anything: no scripts, no event
//! handlers, no foreign objects, no references outside the file itself.

use std::fmt::Write as _;

use crate::render::html::escape;

/// Elements that run code, embed other documents or reach outside the file.
const FORBIDDEN_ELEMENTS: [&str; 7] = [
    "script",
    "foreignObject",
    "iframe",
    "object",
    "embed",
    "audio",
    "video",
];

/// The file's `<svg>` element, with a `<title>` holding `caption` first (what a screen reader
/// announces) and `role="img"`; or every reason it cannot be inlined.
pub fn inline(text: &str, caption: &str) -> Result<String, Vec<String>> {
    let doc = roxmltree::Document::parse(text).map_err(|e| vec![format!("not valid SVG: {e}")])?;
    let root = doc.root_element();
    if root.tag_name().name() != "svg" {
        return Err(vec![format!(
            "the root element is <{}>, not <svg>",
            root.tag_name().name()
        )]);
    }
    let problems: Vec<String> = root.descendants().flat_map(problems_of).collect();
    if !problems.is_empty() {
        return Err(problems);
    }
    let element = &text[root.range()];
    let open_end = start_tag_end(element).ok_or_else(|| vec!["unclosed <svg> tag".to_string()])?;
    let (open, rest) = element.split_at(open_end);
    let mut out = String::with_capacity(element.len() + caption.len() + 32);
    if let Some(open) = open.strip_suffix("/>") {
        let _ = write!(
            out,
            "{open} role=\"img\"><title>{}</title></svg>",
            escape(caption)
        );
    } else {
        let open = open.strip_suffix('>').unwrap_or(open);
        let _ = write!(
            out,
            "{open} role=\"img\"><title>{}</title>{rest}",
            escape(caption)
        );
    }
    Ok(out)
}

/// Why one node must not be inlined.
fn problems_of(node: roxmltree::Node<'_, '_>) -> Vec<String> {
    let mut problems = Vec::new();
    if !node.is_element() {
        return problems;
    }
    let name = node.tag_name().name();
    if FORBIDDEN_ELEMENTS.contains(&name) {
        problems.push(format!("<{name}> is not allowed in an inlined diagram"));
    }
    if name == "style" && node.text().is_some_and(reaches_out) {
        problems.push("a <style> element loads something from outside the file".into());
    }
    for attribute in node.attributes() {
        let key = attribute.name();
        let value = attribute.value();
        if key.to_ascii_lowercase().starts_with("on") {
            problems.push(format!("event handler `{key}` on <{name}>"));
        } else if key == "href" && !value.starts_with('#') {
            problems.push(format!(
                "`href=\"{value}\"` on <{name}> points outside the file"
            ));
        } else if reaches_out(value) {
            problems.push(format!(
                "`{key}` on <{name}> loads something from outside the file"
            ));
        }
    }
    problems
}

/// CSS or an attribute value that fetches something (`url(x.png)`, `@import`); `url(#id)`
/// points inside the file and is fine.
fn reaches_out(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    lower.contains("@import")
        || lower.contains("javascript:")
        || lower.match_indices("url(").any(|(i, m)| {
            !lower[i + m.len()..]
                .trim_start_matches([' ', '"', '\''])
                .starts_with('#')
        })
}

/// The byte offset just after the `>` that closes the first tag, quotes respected.
fn start_tag_end(element: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in element.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(i + 1),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 10 10\"><rect fill=\"currentColor\" width=\"4\" height=\"4\" data-x=\"a>b\"/></svg>\n";

    #[test]
    fn a_clean_diagram_is_inlined_with_its_caption_as_title() {
        let out = inline(OK, "编码器 & 解码器").unwrap();
        assert!(out.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 10 10\" role=\"img\"><title>编码器 &amp; 解码器</title><rect"), "{out}");
        assert!(out.ends_with("</svg>"), "{out}");
        assert!(!out.contains("<?xml"));
    }

    #[test]
    fn every_way_to_run_code_or_reach_out_is_refused_and_listed() {
        let bad = "<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"alert(1)\">\
                   <script>alert(2)</script>\
                   <a href=\"https://example.com\"><text>x</text></a>\
                   <image href=\"x.png\"/>\
                   <use href=\"#ok\"/>\
                   <rect style=\"fill: url(https://e.com/a)\" filter=\"url(#blur)\"/>\
                   <style>@import 'x.css';</style>\
                   <foreignObject/></svg>";
        let problems = inline(bad, "x").unwrap_err();
        assert_eq!(problems.len(), 7, "{problems:#?}");
        assert!(problems.iter().any(|p| p.contains("onload")));
        assert!(problems.iter().any(|p| p.contains("<script>")));
    }

    #[test]
    fn a_doctype_and_a_non_svg_root_are_refused() {
        let dtd =
            "<!DOCTYPE svg [<!ENTITY x \"y\">]><svg xmlns=\"http://www.w3.org/2000/svg\">&x;</svg>";
        assert!(inline(dtd, "x").is_err());
        assert!(inline("<html/>", "x").unwrap_err()[0].contains("<html>"));
        assert!(inline("not xml", "x").is_err());
    }
}
