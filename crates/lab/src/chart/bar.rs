//! Bar charts: one value per named category (a weight per position, a time per method).
//!
//! The drawing itself ([`draw_bars`]) is shared with [`super::Panels`], which puts one small
//! bar chart per group on a grid.

use std::error::Error;
use std::fmt::Display;
use std::ops::Range;

use plotters::element::{DashedPathElement, Rectangle};
use plotters::series::DashedLineSeries;
use plotters::style::Color;
use plotters::style::text_anchor::{HPos, VPos};

use super::frame::{Frame, Plot, text_at};
use super::mark;
use super::scale::Scale;
use super::text;
use super::theme::{self, TICK_PX};
use super::{Area, Chart, ChartResult};
use crate::value::Scalar;

/// A bar chart of `values` over category `labels`.
///
/// ```
/// # use lab::prelude::*;
/// let weights = array![0.1, 0.6, 0.3];
/// let chart = Bar::new(["我", "爱", "你"], &weights)
///     .y_label("注意力权重")
///     .reference(1.0 / 3.0, "均匀分布")
///     .annotate(2);
/// assert!(chart.to_svg("权重").unwrap().contains("均匀分布"));
/// ```
#[derive(Debug, Clone)]
pub struct Bar {
    bars: Bars,
    options: BarOptions,
    size: (u32, u32),
}

impl Bar {
    /// One bar per label. Labels can be anything printable (`0..16`, `["我", "爱"]`, strings),
    /// values any numbers (`&Array1<f64>`, `[0.2, 0.8]`, `vec![3, 5]`).
    ///
    /// # Panics
    ///
    /// If there are not as many labels as values.
    #[track_caller]
    pub fn new<L, V>(labels: L, values: V) -> Self
    where
        L: IntoIterator,
        L::Item: Display,
        V: IntoIterator,
        V::Item: Scalar,
    {
        Bar {
            bars: Bars::new(labels, values),
            options: BarOptions::default(),
            size: theme::CHART_SIZE,
        }
    }

    /// Title of the horizontal (category) axis.
    pub fn x_label(mut self, label: impl Into<String>) -> Self {
        self.options.x_label = Some(label.into());
        self
    }

    /// Title of the vertical (value) axis.
    pub fn y_label(mut self, label: impl Into<String>) -> Self {
        self.options.y_label = Some(label.into());
        self
    }

    /// A dashed horizontal line at `y` with a label, e.g. the entropy of a uniform distribution.
    pub fn reference(mut self, y: f64, label: impl Into<String>) -> Self {
        self.options.reference = Some((y, label.into()));
        self
    }

    /// Prints each value above its bar with `decimals` decimals (when the labels fit).
    pub fn annotate(mut self, decimals: usize) -> Self {
        self.options.annotate = Some(decimals);
        self
    }

    /// Fixes the value axis to cover `lo..=hi` (rounded out to tick values).
    pub fn y_range(mut self, lo: f64, hi: f64) -> Self {
        self.options.y_range = Some((lo, hi));
        self
    }

    /// Canvas size in pixels (default 600 x 380).
    pub fn size(mut self, width: u32, height: u32) -> Self {
        self.size = (width, height);
        self
    }
}

impl Chart for Bar {
    fn canvas_size(&self) -> (u32, u32) {
        self.size
    }

    fn not_finite(&self) -> usize {
        super::count_not_finite(self.bars.values.iter().copied())
    }

    fn draw(&self, area: Area<'_>) -> ChartResult {
        let y = self.options.y_scale(self.bars.values.iter().copied());
        // The reference line's label goes in a key above the plot, where no bar can hide it.
        let key_room = if self.options.reference.is_some() {
            KEY_ROW
        } else {
            0.0
        };
        let panel = BarPanel {
            bars: &self.bars,
            options: &self.options,
            y,
            top: theme::MARGIN + key_room as u32,
            x_desc: self.options.x_label.as_deref(),
            y_desc: self.options.y_label.as_deref(),
            title: "",
        };
        let plot = draw_bars(&area, &panel)?;
        if let Some((_, label)) = &self.options.reference {
            let y = theme::MARGIN as i32 + (KEY_ROW / 2.0) as i32;
            draw_reference_key(&area, (plot.end, y), label)?;
        }
        Ok(())
    }
}

/// Category labels and their values.
#[derive(Debug, Clone)]
pub(crate) struct Bars {
    pub(crate) labels: Vec<String>,
    pub(crate) values: Vec<f64>,
}

impl Bars {
    #[track_caller]
    pub(crate) fn new<L, V>(labels: L, values: V) -> Self
    where
        L: IntoIterator,
        L::Item: Display,
        V: IntoIterator,
        V::Item: Scalar,
    {
        let labels: Vec<String> = labels.into_iter().map(|l| l.to_string()).collect();
        let values: Vec<f64> = values.into_iter().map(Scalar::to_f64).collect();
        assert_eq!(
            labels.len(),
            values.len(),
            "a bar chart needs one label per value: {} labels, {} values",
            labels.len(),
            values.len()
        );
        Bars { labels, values }
    }
}

/// Options shared by a bar chart and a grid of bar panels.
#[derive(Debug, Clone, Default)]
pub(crate) struct BarOptions {
    pub(crate) x_label: Option<String>,
    pub(crate) y_label: Option<String>,
    pub(crate) reference: Option<(f64, String)>,
    pub(crate) annotate: Option<usize>,
    pub(crate) y_range: Option<(f64, f64)>,
}

impl BarOptions {
    /// The value axis for `values`: from zero (or below, for negative values) to the largest
    /// value, the reference line included, unless fixed by `y_range`.
    pub(crate) fn y_scale(&self, values: impl Iterator<Item = f64>) -> Scale {
        if let Some((lo, hi)) = self.y_range {
            return Scale::linear(lo, hi);
        }
        let reference = self.reference.as_ref().map(|(y, _)| *y);
        let finite = values
            .chain(reference)
            .chain([0.0])
            .filter(|v| v.is_finite());
        let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        Scale::linear(lo, hi)
    }
}

/// Everything needed to draw one bar chart on an area.
pub(crate) struct BarPanel<'a> {
    pub(crate) bars: &'a Bars,
    pub(crate) options: &'a BarOptions,
    pub(crate) y: Scale,
    pub(crate) top: u32,
    pub(crate) x_desc: Option<&'a str>,
    pub(crate) y_desc: Option<&'a str>,
    /// Panel title, named in the bars' tooltips ("" for a single chart).
    pub(crate) title: &'a str,
}

/// Height of the key row that explains the reference line.
pub(crate) const KEY_ROW: f64 = TICK_PX * 1.7;
/// Length of the dashed sample line in the key.
const KEY_SWATCH: i32 = 24;

/// Draws bars, category labels, the reference line and value labels; returns the plot's
/// horizontal pixel range (backend pixels).
pub(crate) fn draw_bars(
    area: &Area<'_>,
    panel: &BarPanel<'_>,
) -> Result<Range<i32>, Box<dyn Error>> {
    let n = panel.bars.values.len();
    let mut frame = Frame {
        x: Scale::plain(-0.5..n.max(1) as f64 - 0.5),
        y: panel.y.clone(),
        x_desc: panel.x_desc,
        y_desc: panel.y_desc,
        x_extra: 0,
        top: panel.top,
        x_grid: false,
    };
    let slot = frame.plot_width(area.dim_in_pixel().0) / n.max(1) as f64;
    let categories = Categories::layout(&panel.bars.labels, slot);
    frame.x_extra = categories.height;
    let mut chart = frame.draw(area)?;
    draw_bar_marks(area, &chart, panel)?;
    if let Some((y, _)) = &panel.options.reference {
        let right = n.max(1) as f64 - 0.5;
        let style = theme::ink(0.75).stroke_width(1);
        chart.draw_series(DashedLineSeries::new(
            [(-0.5, *y), (right, *y)],
            6,
            4,
            style,
        ))?;
    }
    if let Some(decimals) = panel.options.annotate {
        annotate(area, &chart, &panel.bars.values, decimals, slot)?;
    }
    categories.draw(area, &chart, &panel.bars.labels)?;
    Ok(chart.plotting_area().get_pixel_range().0)
}

/// Draws one rectangle per finite value, each titled with its labels and value.
fn draw_bar_marks(area: &Area<'_>, chart: &Plot<'_, '_>, panel: &BarPanel<'_>) -> ChartResult {
    let color = theme::series_color(0);
    let range = panel.y.range();
    let base = 0f64.clamp(range.start, range.end);
    let bars = panel.bars.labels.iter().zip(&panel.bars.values);
    for (i, (label, &v)) in bars.enumerate().filter(|(_, (_, v))| v.is_finite()) {
        let x = i as f64;
        let parts = [
            (None, panel.title),
            (panel.options.x_label.as_deref(), label.as_str()),
        ];
        let value = mark::value_text(v, panel.options.annotate);
        let title = mark::describe(&parts, panel.options.y_label.as_deref(), &value);
        mark::title_next(area, &title)?;
        // A value beyond a fixed `y_range` is drawn to the edge of the plot, not over the
        // axes; its title keeps the real value.
        let top = v.clamp(range.start, range.end);
        let bar = Rectangle::new([(x - 0.38, base), (x + 0.38, top)], color.filled());
        chart.plotting_area().draw(&bar)?;
    }
    Ok(())
}

/// Draws the key of the reference line, a dashed sample and its label, ending at `right` and
/// centred on `y` (backend pixels).
pub(crate) fn draw_reference_key(
    area: &Area<'_>,
    (right, y): (i32, i32),
    label: &str,
) -> ChartResult {
    let label_x = right - text::width(label, TICK_PX).ceil() as i32;
    let swatch_x = label_x - 6 - KEY_SWATCH;
    let (bx, by) = area.get_base_pixel();
    let sample = [
        (swatch_x - bx, y - by),
        (swatch_x + KEY_SWATCH - bx, y - by),
    ];
    area.draw(&DashedPathElement::new(
        sample,
        6,
        4,
        theme::ink(0.75).stroke_width(1),
    ))?;
    text_at(
        area,
        label,
        (label_x, y),
        &theme::anchored(TICK_PX, HPos::Left, VPos::Center),
    )
}

/// Writes each value above (or, if negative, below) its bar, if every label fits its slot.
fn annotate(
    area: &Area<'_>,
    chart: &Plot<'_, '_>,
    values: &[f64],
    decimals: usize,
    slot: f64,
) -> ChartResult {
    let labels: Vec<String> = values.iter().map(|v| format!("{v:.decimals$}")).collect();
    let px = TICK_PX - 1.0;
    if text::max_width(labels.iter().map(String::as_str), px) > slot * 0.95 {
        return Ok(());
    }
    for (i, (value, label)) in values.iter().zip(&labels).enumerate() {
        if !value.is_finite() {
            continue;
        }
        // At the bar's end, which a fixed `y_range` may have cut (see `draw_bar_marks`).
        let range = chart.y_range();
        let (x, y) = chart.backend_coord(&(i as f64, value.clamp(range.start, range.end)));
        let (dy, v) = if *value >= 0.0 {
            (-3, VPos::Bottom)
        } else {
            (3, VPos::Top)
        };
        text_at(
            area,
            label,
            (x, y + dy),
            &theme::anchored(px, HPos::Center, v),
        )?;
    }
    Ok(())
}

/// How category labels are placed under the bars.
struct Categories {
    /// Label every `every`-th bar (1: all).
    every: usize,
    vertical: bool,
    /// Room they take below the axis.
    height: u32,
}

impl Categories {
    /// Horizontal if they fit their slot; thinned out if they are numbers (positions 0..64);
    /// otherwise vertical (words), thinned out only if even that does not fit.
    fn layout(labels: &[String], slot: f64) -> Categories {
        let widest = text::max_width(labels.iter().map(String::as_str), TICK_PX);
        let line = TICK_PX * 1.3;
        let gap = 8.0;
        let every = |needed: f64| ((needed / slot.max(1.0)).ceil() as usize).max(1);
        let horizontal = |every| Categories {
            every,
            vertical: false,
            height: (gap + line) as u32,
        };
        if widest <= slot * 0.9 {
            horizontal(1)
        } else if labels.iter().all(|l| l.parse::<f64>().is_ok()) {
            horizontal(every(widest + 6.0))
        } else {
            Categories {
                every: every(line),
                vertical: true,
                height: (gap + widest + 4.0).ceil() as u32,
            }
        }
    }

    fn draw(&self, area: &Area<'_>, chart: &Plot<'_, '_>, labels: &[String]) -> ChartResult {
        let bottom = chart.y_range().start;
        let style = if self.vertical {
            theme::vertical(TICK_PX)
        } else {
            theme::anchored(TICK_PX, HPos::Center, VPos::Top)
        };
        for (i, label) in labels.iter().enumerate().step_by(self.every) {
            let (x, y) = chart.backend_coord(&(i as f64, bottom));
            text_at(area, label, (x, y + 7), &style)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bar beyond a fixed range is drawn exactly like a bar at the range's edge: only its
    /// title (the real value) differs.
    #[test]
    fn bars_beyond_a_fixed_range_stop_at_its_edge() {
        let svg = |v: f64| {
            let svg = Bar::new(["a", "b"], [0.5, v])
                .y_range(0.0, 1.0)
                .to_svg("x")
                .unwrap();
            let titles = without_titles(&svg);
            (svg, titles)
        };
        let (over, over_plain) = svg(5.0);
        let annotated = |v: f64| {
            without_titles(
                &Bar::new(["a"], [v])
                    .y_range(0.0, 1.0)
                    .annotate(0)
                    .to_svg("x")
                    .unwrap()
                    .replace(">\n5\n<", ">\n1\n<"),
            )
        };
        assert_eq!(
            annotated(5.0),
            annotated(1.0),
            "the label sits on the cut bar"
        );
        let (_, edge_plain) = svg(1.0);
        assert!(over.contains('5'), "the title keeps the real value");
        assert_eq!(over_plain, edge_plain);
        let (_, below_plain) = svg(-3.0);
        let (_, zero_plain) = svg(0.0);
        assert_eq!(below_plain, zero_plain);
    }

    /// `svg` without its `<title>` elements.
    fn without_titles(svg: &str) -> String {
        let mut out = String::new();
        let mut rest = svg;
        while let Some(start) = rest.find("<title>") {
            out.push_str(&rest[..start]);
            let end = rest[start..]
                .find("</title>")
                .map_or(rest.len(), |e| start + e + 8);
            rest = &rest[end..];
        }
        out.push_str(rest);
        out
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn short_labels_stay_horizontal() {
        let c = Categories::layout(&strings(&["我", "爱", "你"]), 100.0);
        assert!(!c.vertical);
        assert_eq!(c.every, 1);
    }

    #[test]
    fn crowded_numbers_are_thinned_and_words_turn_vertical() {
        let numbers: Vec<String> = (0..64).map(|i| i.to_string()).collect();
        let c = Categories::layout(&numbers, 8.0);
        assert!(!c.vertical && c.every > 1);
        let words = strings(&["attention", "is", "all", "you", "need"]);
        let c = Categories::layout(&words, 30.0);
        assert!(c.vertical);
        assert_eq!(c.every, 1);
    }

    #[test]
    fn value_axis_includes_zero_and_reference() {
        let options = BarOptions {
            reference: Some((2.77, "log 16".into())),
            ..BarOptions::default()
        };
        let y = options.y_scale([0.5, 1.0].into_iter());
        assert!(y.range().start <= 0.0 && y.range().end >= 2.77);
    }

    #[test]
    #[should_panic(expected = "one label per value: 2 labels, 3 values")]
    fn labels_must_match_values() {
        let _ = Bar::new(["a", "b"], [1.0, 2.0, 3.0]);
    }
}
