//! Turns plotters' SVG output into a document that fits the site.
//!
//! plotters writes a fixed-size `<svg width=.. height=..>` with hex colours. The site needs a
//! figure that scales to a phone's width, reads in light and dark mode and carries its caption
//! for screen readers, so this pass:
//!
//! - replaces the root tag: `viewBox` kept, `width="100%"`, `role="img"`, a `<title>`, and a
//!   small stylesheet (CJK-capable font list; a text colour used only when the SVG is shown
//!   standalone, since an inlined SVG inherits the page's);
//! - turns the theme's ink colour and plain black into `currentColor`;
//! - gives each mark its tooltip (see `mark`);
//! - drops a white full-canvas background so the page shows through;
//! - rounds the font sizes that plotters' scaling leaves as `12.999999999999998`.

use super::mark;
use super::theme::INK;
use crate::fmt::trim_number;

/// Class on every chart's root element, for the site's CSS.
pub(crate) const CHART_CLASS: &str = "lab-chart";

/// Fonts for CJK and Latin text, tried in order by the reader's browser.
const STYLE: &str = concat!(
    ".lab-chart text{font-family:system-ui,-apple-system,\"Segoe UI\",\"PingFang SC\",",
    "\"Hiragino Sans GB\",\"Noto Sans CJK SC\",\"Source Han Sans SC\",\"Microsoft YaHei\",",
    "sans-serif;font-variant-numeric:tabular-nums;",
    // A value printed on a heatmap cell must not hide the cell's tooltip.
    "pointer-events:none}",
    // `:root` matches only when the SVG is its own document (an <img>, or opened directly).
    "svg.lab-chart:root{color:#1f2328}",
    "@media (prefers-color-scheme:dark){svg.lab-chart:root{color:#e6edf3}}"
);

/// The finished document for plotters' output `raw` of `size`, titled `title`.
pub(crate) fn finish(raw: &str, size: (u32, u32), title: &str) -> String {
    // plotters' root tag is the first line; the drawing follows.
    let body = raw.split_once(">\n").map_or("", |(_, body)| body);
    let body = mark::attach_titles(body);
    let body = remove_background(&body, size);
    let body = to_current_color(&body);
    let body = round_font_sizes(&body);
    let (w, h) = size;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" width=\"100%\" \
         style=\"max-width:{w}px;height:auto\" role=\"img\" class=\"{CHART_CLASS}\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n{body}",
        escape(title)
    )
}

/// Removes rectangles that paint the whole canvas white (`root.fill(&WHITE)` in custom charts).
fn remove_background(body: &str, (w, h): (u32, u32)) -> String {
    let white = format!(
        "<rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" opacity=\"1\" fill=\"#FFFFFF\" \
         stroke=\"none\"/>\n"
    );
    body.replace(&white, "")
}

fn to_current_color(body: &str) -> String {
    let ink = format!("\"#{:02X}{:02X}{:02X}\"", INK.0, INK.1, INK.2);
    body.replace(&ink, "\"currentColor\"")
        .replace("\"#000000\"", "\"currentColor\"")
}

fn round_font_sizes(body: &str) -> String {
    const ATTR: &str = "font-size=\"";
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(start) = rest.find(ATTR) {
        let value_start = start + ATTR.len();
        let Some(len) = rest[value_start..].find('"') else {
            break;
        };
        out.push_str(&rest[..value_start]);
        let value = &rest[value_start..value_start + len];
        match value.parse::<f64>() {
            Ok(px) => out.push_str(&trim_number(px, 1)),
            Err(_) => out.push_str(value),
        }
        rest = &rest[value_start + len..];
    }
    out.push_str(rest);
    out
}

/// Escapes text for XML content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAW: &str = "<svg width=\"10\" height=\"20\" viewBox=\"0 0 10 20\" \
        xmlns=\"http://www.w3.org/2000/svg\">\n\
        <rect x=\"0\" y=\"0\" width=\"10\" height=\"20\" opacity=\"1\" fill=\"#FFFFFF\" \
        stroke=\"none\"/>\n\
        <text font-size=\"12.999999999999998\" fill=\"#010203\">注意</text>\n\
        <line stroke=\"#000000\"/>\n</svg>\n";

    #[test]
    fn finished_svg_is_responsive_titled_and_themed() {
        let svg = finish(RAW, (10, 20), "权重 <a & b>");
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 10 20\""));
        assert!(svg.contains("width=\"100%\""));
        assert!(!svg.contains("width=\"10\" height"));
        assert!(svg.contains("<title>权重 &lt;a &amp; b&gt;</title>"));
        assert!(!svg.contains("#FFFFFF"));
        assert!(!svg.contains("#000000") && !svg.contains("#010203"));
        assert!(svg.contains("<text font-size=\"13\" fill=\"currentColor\">注意</text>"));
        assert!(svg.contains("<line stroke=\"currentColor\"/>"));
        assert!(svg.ends_with("</svg>\n"));
    }
}
