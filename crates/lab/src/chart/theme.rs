//! The one look every chart shares: colours, type sizes, strokes.
//!
//! Foreground marks (text, axes, grid) are drawn in [`INK`], a sentinel colour that the SVG
//! post-processing turns into `currentColor`, so they follow the page's text colour in light
//! and dark mode. Series colours are mid-lightness: each has a contrast ratio of at least 3
//! against white and against a near-black page (#121212), so no theme switch is needed.
//! Custom charts can use these too.

use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{Color, FontTransform, IntoFont, RGBAColor, RGBColor, ShapeStyle, TextStyle};

/// Foreground colour; becomes `currentColor` in the finished SVG (as does plotters' `BLACK`).
pub const INK: RGBColor = RGBColor(0x01, 0x02, 0x03);

/// Series colours, in the order series use them: blue, orange, green, crimson, violet, cyan,
/// ochre, grey.
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0x2F, 0x7F, 0xD8),
    RGBColor(0xE8, 0x59, 0x0C),
    RGBColor(0x2B, 0x93, 0x48),
    RGBColor(0xD6, 0x33, 0x6C),
    RGBColor(0x8B, 0x5C, 0xF6),
    RGBColor(0x0E, 0x96, 0xB0),
    RGBColor(0xB0, 0x7D, 0x12),
    RGBColor(0x86, 0x8E, 0x96),
];

/// The colour of series `i` (the palette repeats after eight series).
pub fn series_color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Viridis at 0.0, 0.1, ..., 1.0: perceptually uniform, readable in grey and by colour-blind
/// readers, and both ends stand out on white and on dark pages.
const VIRIDIS: [(u8, u8, u8); 11] = [
    (68, 1, 84),
    (72, 36, 117),
    (65, 68, 135),
    (53, 95, 141),
    (42, 120, 142),
    (33, 145, 140),
    (34, 168, 132),
    (68, 191, 112),
    (122, 209, 81),
    (189, 223, 38),
    (253, 231, 37),
];

/// The sequential colour scale of heatmaps at `t` in `0..=1` (clamped; NaN gives the low end).
pub fn viridis(t: f64) -> RGBColor {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let pos = t * (VIRIDIS.len() - 1) as f64;
    let i = (pos.floor() as usize).min(VIRIDIS.len() - 2);
    let f = pos - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Relative luminance (WCAG) of a colour, 0 for black to 1 for white.
pub fn luminance(c: RGBColor) -> f64 {
    let channel = |v: u8| {
        let v = f64::from(v) / 255.0;
        if v <= 0.04045 {
            v / 12.92
        } else {
            ((v + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * channel(c.0) + 0.7152 * channel(c.1) + 0.0722 * channel(c.2)
}

/// WCAG contrast ratio of two colours, from 1 (same luminance) to 21 (black on white).
pub fn contrast(a: RGBColor, b: RGBColor) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// Default size of a single chart, in SVG user units (pixels at 100 % zoom).
pub const CHART_SIZE: (u32, u32) = (600, 380);
/// Tick labels, legend entries, category labels.
pub const TICK_PX: f64 = 13.0;
/// Axis titles.
pub const LABEL_PX: f64 = 14.0;
/// Panel titles.
pub const TITLE_PX: f64 = 14.0;
/// Space around a chart.
pub const MARGIN: u32 = 12;

/// plotters writes `font-size = size / 1.24` into the SVG; asking for `px * 1.24` makes the
/// written size `px`.
const PLOTTERS_FONT_SCALE: f64 = 1.24;

/// The font family written into the SVG. The embedded stylesheet replaces it with a list that
/// includes CJK fonts; plotters never looks it up (svg-only build).
pub const FONT_FAMILY: &str = "sans-serif";

/// Text of `px` pixels in [`INK`], anchored at its left baseline centre.
pub fn text(px: f64) -> TextStyle<'static> {
    (FONT_FAMILY, px * PLOTTERS_FONT_SCALE)
        .into_font()
        .color(&INK)
}

/// Text of `px` pixels in [`INK`] with the given anchor.
pub fn anchored(px: f64, h: HPos, v: VPos) -> TextStyle<'static> {
    text(px).pos(Pos::new(h, v))
}

/// Text reading bottom to top that ends at its anchor point, for labels hanging below an axis.
pub fn vertical(px: f64) -> TextStyle<'static> {
    anchored(px, HPos::Right, VPos::Center).transform(FontTransform::Rotate270)
}

/// [`INK`] at an opacity, for axes and grid lines.
pub fn ink(alpha: f64) -> RGBAColor {
    INK.mix(alpha)
}

/// Axis lines and tick marks.
pub fn axis_style() -> ShapeStyle {
    ink(0.55).stroke_width(1)
}

/// Grid lines behind the data.
pub fn grid_style() -> ShapeStyle {
    ink(0.12).stroke_width(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palette_reads_on_white_and_on_dark_pages() {
        for c in PALETTE {
            assert!(
                contrast(c, RGBColor(255, 255, 255)) >= 3.0,
                "{c:?} on white"
            );
            assert!(
                contrast(c, RGBColor(0x12, 0x12, 0x12)) >= 3.0,
                "{c:?} on dark"
            );
        }
    }

    #[test]
    fn viridis_runs_from_dark_purple_to_yellow() {
        assert_eq!(viridis(0.0), RGBColor(68, 1, 84));
        assert_eq!(viridis(1.0), RGBColor(253, 231, 37));
        assert_eq!(viridis(2.0), viridis(1.0));
        assert!(luminance(viridis(0.25)) < luminance(viridis(0.75)));
    }
}
