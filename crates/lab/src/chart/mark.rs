//! Marks that tell their value: every bar, heatmap cell and line point carries an SVG `<title>`
//! naming its labels and value, so hovering shows it without JavaScript, and the site's script
//! can step through the marks with the keyboard (class `lab-mark`).
//!
//! plotters writes one element per line and cannot give an element a child. So a chart calls
//! [`title_next`] right before drawing a mark: that draws a sentinel `<text>` in the font family
//! [`SENTINEL_FAMILY`] whose content is the title (plotters escapes it). [`attach_titles`], run
//! by `svg::finish`, removes each sentinel and moves its text into the element that follows.
//! This keeps plotters' drawing order (a reference line stays above the bars) and its geometry.

use plotters::element::Text;
use plotters::style::IntoFont;

use super::text::is_wide;
use super::theme;
use super::{Area, ChartResult};
use crate::fmt::trim_number;

/// Font family that marks a sentinel; never reaches the finished SVG.
const SENTINEL_FAMILY: &str = "lab-mark-title";
/// Class of every titled mark in the finished SVG.
pub(crate) const MARK_CLASS: &str = "lab-mark";

/// Gives the next element drawn on `area` the tooltip `title`.
pub(crate) fn title_next(area: &Area<'_>, title: &str) -> ChartResult {
    // A newline would split the sentinel over lines that `attach_titles` reads one by one.
    let title = title.replace(['\n', '\r'], " ");
    // Any visible colour: plotters skips fully transparent text.
    let style = (SENTINEL_FAMILY, 10.0).into_font().color(&theme::INK);
    area.draw(&Text::new(title, (0, 0), style))?;
    Ok(())
}

/// Replaces every sentinel in plotters' output `body` by a `<title>` child of the element after
/// it. A sentinel not followed by a self-closing element (nothing was drawn) is dropped.
pub(crate) fn attach_titles(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut lines = body.lines().peekable();
    while let Some(line) = lines.next() {
        if !is_sentinel(line) {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        // plotters writes text as `<text ..>`, the escaped content, `</text>`.
        let title = lines.next().unwrap_or_default();
        let _close = lines.next();
        // The next line is left to the loop unless it is the mark (it may be another sentinel).
        if let Some(element) = lines.peek().and_then(|mark| titled(mark, title)) {
            lines.next();
            out.push_str(&element);
            out.push('\n');
        }
    }
    out
}

fn is_sentinel(line: &str) -> bool {
    line.starts_with("<text ") && line.contains(&format!("font-family=\"{SENTINEL_FAMILY}\""))
}

/// `<rect .../>` as `<rect class="lab-mark" ...><title>title</title></rect>` (`title` is
/// already escaped); `None` if `element` is not a self-closing element.
fn titled(element: &str, title: &str) -> Option<String> {
    let inner = element.strip_prefix('<')?.strip_suffix("/>")?;
    let (tag, attributes) = inner.split_once(' ')?;
    if tag == "text" || is_sentinel(element) {
        return None;
    }
    Some(format!(
        "<{tag} class=\"{MARK_CLASS}\" {attributes}><title>{title}</title></{tag}>"
    ))
}

/// The title of a mark: what it is (`parts`, each an optional axis title and a label) and its
/// value, optionally with the value axis' title, e.g. `键 3，查询 2：0.41`. Chinese text gets
/// full-width punctuation, other text `, ` and `: `.
pub(crate) fn describe(
    parts: &[(Option<&str>, &str)],
    value_axis: Option<&str>,
    value: &str,
) -> String {
    let mut names: Vec<String> = parts
        .iter()
        .filter(|(_, label)| !label.is_empty())
        .map(|(axis, label)| match axis {
            Some(axis) => format!("{axis} {label}"),
            None => (*label).to_owned(),
        })
        .collect();
    names.extend(value_axis.map(str::to_owned));
    let (comma, colon) = if is_wide_text(parts, value_axis) {
        ("，", "：")
    } else {
        (", ", ": ")
    };
    if names.is_empty() {
        return value.to_owned();
    }
    format!("{}{colon}{value}", names.join(comma))
}

/// Whether the names of a mark (as [`describe`] gets them) contain Chinese (or other wide)
/// text, which takes full-width punctuation.
pub(crate) fn is_wide_text(parts: &[(Option<&str>, &str)], value_axis: Option<&str>) -> bool {
    let labels = parts.iter().filter(|(_, label)| !label.is_empty());
    let texts = labels.flat_map(|(axis, label)| axis.iter().copied().chain([*label]));
    texts.chain(value_axis).any(|t| t.chars().any(is_wide))
}

/// A value as a reader wants it in a tooltip: `decimals` if the chart prints its values with
/// so many, otherwise four significant digits (no trailing zeros), scientific notation for
/// very large or small magnitudes.
pub(crate) fn value_text(v: f64, decimals: Option<usize>) -> String {
    if let Some(decimals) = decimals {
        return format!("{v:.decimals$}");
    }
    if v == 0.0 {
        return "0".to_owned();
    }
    if !v.is_finite() {
        return v.to_string();
    }
    let magnitude = v.abs().log10().floor() as i32;
    if (-4..6).contains(&magnitude) {
        trim_number(v, (3 - magnitude).max(0) as usize)
    } else {
        format!("{v:.3e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_becomes_the_title_of_the_next_element() {
        let body = "<line x1=\"0\"/>\n\
            <text x=\"0\" y=\"0\" dy=\"0.76em\" text-anchor=\"start\" \
            font-family=\"lab-mark-title\" font-size=\"8\" opacity=\"1\" fill=\"#010203\">\n\
            键 3，查询 2：0.41 &amp; more\n</text>\n\
            <rect x=\"1\" y=\"2\" width=\"3\" height=\"4\" fill=\"#FF0000\"/>\n\
            <circle cx=\"1\"/>\n";
        assert_eq!(
            attach_titles(body),
            "<line x1=\"0\"/>\n\
             <rect class=\"lab-mark\" x=\"1\" y=\"2\" width=\"3\" height=\"4\" fill=\"#FF0000\">\
             <title>键 3，查询 2：0.41 &amp; more</title></rect>\n\
             <circle cx=\"1\"/>\n"
        );
    }

    #[test]
    fn sentinel_without_a_mark_is_dropped() {
        let sentinel = "<text font-family=\"lab-mark-title\">\nt\n</text>\n";
        let body = format!(
            "{sentinel}<text x=\"1\">\nlabel\n</text>\n{sentinel}{sentinel}<rect x=\"2\"/>\n{sentinel}"
        );
        assert_eq!(
            attach_titles(&body),
            "<text x=\"1\">\nlabel\n</text>\n<rect class=\"lab-mark\" x=\"2\"><title>t</title></rect>\n"
        );
    }

    #[test]
    fn description_names_axes_and_picks_punctuation() {
        assert_eq!(
            describe(&[(Some("键"), "3"), (Some("查询"), "2")], None, "0.41"),
            "键 3，查询 2：0.41"
        );
        assert_eq!(
            describe(&[(None, "dot"), (Some("n"), "16")], Some("time"), "1.6"),
            "dot, n 16, time: 1.6"
        );
        assert_eq!(describe(&[(None, "")], None, "2"), "2");
    }

    #[test]
    fn values_keep_four_significant_digits() {
        assert_eq!(value_text(0.412_345, None), "0.4123");
        assert_eq!(value_text(16.0, None), "16");
        assert_eq!(value_text(1234.56, None), "1235");
        assert_eq!(value_text(-0.0, None), "0");
        assert_eq!(value_text(2.5e-7, None), "2.500e-7");
        assert_eq!(value_text(0.1, Some(2)), "0.10");
    }
}
