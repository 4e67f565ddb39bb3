//! Line charts: several named series over a shared x axis, linear or logarithmic, each
//! optionally with a shaded band (a min-max range over seeds around a mean).
//!
//! The legend is laid out by this module (a row above the plot, wrapping), not by plotters,
//! whose svg-only text estimate makes legends with Chinese names about twice too wide.

use std::ops::Range;

use plotters::element::{Circle, EmptyElement, Polygon, Rectangle, TriangleMarker};
use plotters::series::LineSeries;
use plotters::style::text_anchor::{HPos, VPos};
use plotters::style::{Color, RGBColor, ShapeStyle};

use super::band::{self, BAND_OPACITY};
use super::frame::{Frame, Plot, text_at};
use super::mark;
use super::scale::Scale;
use super::text;
use super::theme::{self, MARGIN, TICK_PX};
use super::{Area, Chart, ChartResult};
use crate::stats::summarize_columns;
use crate::value::Scalar;

/// Series with more points than this are drawn without markers.
const MAX_MARKED_POINTS: usize = 40;
/// Legend geometry: swatch length, gap after it, gap between entries, row height.
const SWATCH: f64 = 22.0;
const SWATCH_GAP: f64 = 6.0;
const ENTRY_GAP: f64 = 18.0;
const LEGEND_ROW: f64 = TICK_PX * 1.6;
/// Half the height of a band's swatch in the legend.
const BAND_SWATCH: i32 = 5;

/// A line chart of named series.
///
/// ```
/// # use lab::prelude::*;
/// let n = [16.0, 64.0, 256.0, 1024.0];
/// let chart = Line::new()
///     .series("点积", n, n.map(|x| 0.1 * x))
///     .series("加性", n, n.map(|x| 2.5 * x))
///     .log_x()
///     .log_y()
///     .x_label("序列长度 n")
///     .y_label("耗时 (µs)");
/// assert!(chart.to_svg("耗时").unwrap().contains("加性"));
/// ```
#[derive(Debug, Clone)]
pub struct Line {
    series: Vec<Series>,
    x_label: Option<String>,
    y_label: Option<String>,
    log_x: bool,
    log_y: bool,
    y_range: Option<(f64, f64)>,
    size: (u32, u32),
}

#[derive(Debug, Clone)]
struct Series {
    name: String,
    points: Vec<(f64, f64)>,
    /// The band's low and high end at each point, if the series has one.
    band: Option<Vec<(f64, f64)>>,
}

impl Series {
    /// Whether points get markers: only when they are few enough to tell apart.
    fn marked(&self) -> bool {
        self.points.len() <= MAX_MARKED_POINTS
    }
}

impl Default for Line {
    fn default() -> Self {
        Line {
            series: Vec::new(),
            x_label: None,
            y_label: None,
            log_x: false,
            log_y: false,
            y_range: None,
            size: theme::CHART_SIZE,
        }
    }
}

impl Line {
    /// An empty line chart.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a series named `name` (shown in the legend) through the points `(xs[i], ys[i])`.
    /// Both accept any numbers: arrays, vectors, `&Array1<f64>`, ranges of integers.
    ///
    /// # Panics
    ///
    /// If `xs` and `ys` differ in length.
    #[track_caller]
    pub fn series<X, Y>(mut self, name: impl Into<String>, xs: X, ys: Y) -> Self
    where
        X: IntoIterator,
        X::Item: Scalar,
        Y: IntoIterator,
        Y::Item: Scalar,
    {
        let name = name.into();
        let xs: Vec<f64> = xs.into_iter().map(Scalar::to_f64).collect();
        let ys: Vec<f64> = ys.into_iter().map(Scalar::to_f64).collect();
        assert_eq!(
            xs.len(),
            ys.len(),
            "series `{name}` needs as many x as y values: {} x, {} y",
            xs.len(),
            ys.len()
        );
        self.series.push(Series {
            name,
            points: xs.into_iter().zip(ys).collect(),
            band: None,
        });
        self
    }

    /// Shades a band around the series added last, from `lo[i]` to `hi[i]` at its `i`-th x:
    /// the range over seeds around a mean, a confidence interval. It is drawn under every line
    /// in the series' colour, has its own tooltip (the series, the y axis title and the band's
    /// lowest and highest value), and each marked point's tooltip adds the band at that point,
    /// as in `0.84 (0.81–0.86)`. Points where `lo` or `hi` is not finite break the band.
    ///
    /// ```
    /// # use lab::prelude::*;
    /// let steps = [1, 2, 3];
    /// let chart = Line::new()
    ///     .series("MQA", steps, [0.60, 0.75, 0.84])
    ///     .band([0.55, 0.71, 0.81], [0.66, 0.78, 0.86])
    ///     .y_label("准确率");
    /// let svg = chart.to_svg("准确率").unwrap();
    /// assert!(svg.contains("<title>MQA，准确率：0.55–0.86</title></polygon>"));
    /// ```
    ///
    /// # Panics
    ///
    /// If no series was added yet, or `lo` or `hi` has not one value per point of it.
    #[track_caller]
    pub fn band<L, H>(mut self, lo: L, hi: H) -> Self
    where
        L: IntoIterator,
        L::Item: Scalar,
        H: IntoIterator,
        H::Item: Scalar,
    {
        let Some(series) = self.series.last_mut() else {
            panic!("`band` shades the series added last, but there is none yet; add one first");
        };
        let lo: Vec<f64> = lo.into_iter().map(Scalar::to_f64).collect();
        let hi: Vec<f64> = hi.into_iter().map(Scalar::to_f64).collect();
        let n = series.points.len();
        assert!(
            lo.len() == n && hi.len() == n,
            "the band of series `{}` needs one low and one high value per point: {n} points, \
             {} low, {} high",
            series.name,
            lo.len(),
            hi.len()
        );
        series.band = Some(lo.into_iter().zip(hi).collect());
        self
    }

    /// Adds a series named `name` through the mean of several runs at each x, with the band
    /// from their minimum to their maximum ([`Line::band`]): `runs` holds one sequence of y
    /// values per run (seed), each as long as `xs`, such as the curves `lab.seeds` returns.
    ///
    /// ```
    /// # use lab::prelude::*;
    /// let runs = vec![vec![1.0, 0.5], vec![3.0, 1.5]];
    /// let chart = Line::new().mean_band("loss", [1, 2], &runs);
    /// let svg = chart.to_svg("loss").unwrap();
    /// assert!(svg.contains("<title>loss, 1: 2 (1–3)</title>"));
    /// ```
    ///
    /// # Panics
    ///
    /// If there are no runs, or the runs differ in length or from `xs`.
    #[track_caller]
    pub fn mean_band<X, R>(self, name: impl Into<String>, xs: X, runs: R) -> Self
    where
        X: IntoIterator,
        X::Item: Scalar,
        R: IntoIterator,
        R::Item: IntoIterator,
        <R::Item as IntoIterator>::Item: Scalar,
    {
        let name = name.into();
        let rows: Vec<Vec<f64>> = runs
            .into_iter()
            .map(|run| run.into_iter().map(Scalar::to_f64).collect())
            .collect();
        assert!(
            !rows.is_empty(),
            "series `{name}`: a mean needs at least one run"
        );
        if let Some((i, row)) = rows
            .iter()
            .enumerate()
            .find(|(_, row)| row.len() != rows[0].len())
        {
            panic!(
                "series `{name}`: run {i} has {} values but run 0 has {}",
                row.len(),
                rows[0].len()
            );
        }
        let summaries = summarize_columns(&rows);
        self.series(name, xs, summaries.iter().map(|s| s.mean))
            .band(
                summaries.iter().map(|s| s.min),
                summaries.iter().map(|s| s.max),
            )
    }

    /// Title of the x axis.
    pub fn x_label(mut self, label: impl Into<String>) -> Self {
        self.x_label = Some(label.into());
        self
    }

    /// Title of the y axis.
    pub fn y_label(mut self, label: impl Into<String>) -> Self {
        self.y_label = Some(label.into());
        self
    }

    /// A base-10 logarithmic x axis (all x values must be positive).
    pub fn log_x(mut self) -> Self {
        self.log_x = true;
        self
    }

    /// A base-10 logarithmic y axis (all y values must be positive).
    pub fn log_y(mut self) -> Self {
        self.log_y = true;
        self
    }

    /// Fixes the y axis to cover `lo..=hi`.
    pub fn y_range(mut self, lo: f64, hi: f64) -> Self {
        self.y_range = Some((lo, hi));
        self
    }

    /// Canvas size in pixels (default 600 x 380).
    pub fn size(mut self, width: u32, height: u32) -> Self {
        self.size = (width, height);
        self
    }

    fn scale(&self, axis: &str, log: bool, values: Vec<f64>) -> Result<Scale, String> {
        let finite: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
        let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !log {
            return Ok(Scale::linear(lo, hi));
        }
        if lo <= 0.0 {
            return Err(format!(
                "the {axis} axis is logarithmic but a value is {lo}"
            ));
        }
        Ok(if finite.is_empty() {
            Scale::log(1.0, 10.0)
        } else {
            Scale::log(lo, hi)
        })
    }

    /// Every x value of every series.
    fn xs(&self) -> Vec<f64> {
        let points = self.series.iter().flat_map(|s| &s.points);
        points.map(|p| p.0).collect()
    }

    /// Every y value of every series, band ends included.
    fn ys(&self) -> Vec<f64> {
        let mut ys: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .collect();
        let bands = self.series.iter().filter_map(|s| s.band.as_ref()).flatten();
        ys.extend(bands.flat_map(|&(lo, hi)| [lo, hi]));
        ys
    }

    /// The y axis: fixed by `y_range` or fitted to the data.
    fn y_scale(&self) -> Result<Scale, String> {
        match self.y_range {
            None => self.scale("y", self.log_y, self.ys()),
            Some((lo, hi)) if !self.log_y => Ok(Scale::linear(lo, hi)),
            Some((lo, hi)) if lo > 0.0 => Ok(Scale::log(lo, hi)),
            Some((lo, _)) => Err(format!(
                "the y axis is logarithmic but its range starts at {lo}"
            )),
        }
    }

    fn names(&self) -> Vec<&str> {
        self.series.iter().map(|s| s.name.as_str()).collect()
    }
}

impl Chart for Line {
    fn canvas_size(&self) -> (u32, u32) {
        self.size
    }

    fn not_finite(&self) -> usize {
        let points = self.series.iter().flat_map(|s| &s.points);
        let bands = self.series.iter().flat_map(|s| s.band.iter().flatten());
        let values = points.chain(bands).flat_map(|&(a, b)| [a, b]);
        super::count_not_finite(values)
    }

    fn draw(&self, area: Area<'_>) -> ChartResult {
        let legend_width = f64::from(self.size.0.saturating_sub(2 * MARGIN));
        let rows = legend_rows(&self.names(), legend_width);
        let legend_height = (rows.len() as f64 * LEGEND_ROW).ceil() as u32;
        let frame = Frame {
            x: self.scale("x", self.log_x, self.xs())?,
            y: self.y_scale()?,
            x_desc: self.x_label.as_deref(),
            y_desc: self.y_label.as_deref(),
            x_extra: 0,
            top: MARGIN + legend_height,
            x_grid: true,
        };
        let mut chart = frame.draw(&area)?;
        // Bands first, so that every line and marker stays above every band.
        for (i, series) in self.series.iter().enumerate() {
            if let Some(lo_hi) = &series.band {
                let banded = band::Banded {
                    name: &series.name,
                    points: &series.points,
                    band: lo_hi,
                };
                band::draw(&area, &mut chart, &frame, i, &banded)?;
            }
        }
        for (i, series) in self.series.iter().enumerate() {
            draw_series(&area, &mut chart, &frame, i, series)?;
        }
        let left = chart.plotting_area().get_pixel_range().0.start;
        draw_legend(&area, self, &rows, (left, MARGIN as i32))
    }
}

/// Draws series `i` as a 2 px line, with markers if it has few points, each titled with its
/// series, x and y.
fn draw_series(
    area: &Area<'_>,
    chart: &mut Plot<'_, '_>,
    frame: &Frame<'_>,
    i: usize,
    series: &Series,
) -> ChartResult {
    // Each finite point with its index, which finds its band.
    let finite: Vec<(usize, (f64, f64))> = series
        .points
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, (a, b))| a.is_finite() && b.is_finite())
        .collect();
    let to_plot = |&(_, (a, b)): &(usize, (f64, f64))| (frame.x.to_plot(a), frame.y.to_plot(b));
    let color = theme::series_color(i);
    let plotted: Vec<(f64, f64)> = finite.iter().map(to_plot).collect();
    // A fixed `y_range` may leave points outside it: the line is cut at the bounds and those
    // points get no marker, rather than being drawn over the axis and the labels below it.
    let y = frame.y.range();
    for run in clip_y(&plotted, y.clone()) {
        chart.draw_series(LineSeries::new(run, color.stroke_width(2)))?;
    }
    if series.marked() {
        for (&(k, point), at) in finite.iter().zip(&plotted) {
            if y.start <= at.1 && at.1 <= y.end {
                let band = series.band.as_ref().map(|band| band[k]);
                mark::title_next(area, &point_title(frame, series, point, band))?;
                marker(area, i, chart.backend_coord(at), color)?;
            }
        }
    }
    Ok(())
}

/// The parts of the polyline `points` (plot units) whose y lies in `y`, as runs of points:
/// each segment is cut where it crosses a bound, and a run ends where the line leaves the
/// range. Points inside are kept exactly, so a line wholly inside is one run equal to it.
fn clip_y(points: &[(f64, f64)], y: Range<f64>) -> Vec<Vec<(f64, f64)>> {
    let inside = |p: &(f64, f64)| y.start <= p.1 && p.1 <= y.end;
    if let [only] = points {
        return if inside(only) {
            vec![vec![*only]]
        } else {
            Vec::new()
        };
    }
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    for pair in points.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let Some((start, end)) = clip_segment(a, b, &y) else {
            continue;
        };
        match runs.last_mut() {
            Some(run) if run.last() == Some(&start) => run.push(end),
            _ => runs.push(vec![start, end]),
        }
    }
    runs
}

/// The part of segment `a`-`b` with y in `y`, if any; its ends are `a` and `b` themselves
/// where they are inside.
fn clip_segment(a: (f64, f64), b: (f64, f64), y: &Range<f64>) -> Option<((f64, f64), (f64, f64))> {
    let dy = b.1 - a.1;
    let (t0, t1) = if dy != 0.0 {
        let (u, v) = ((y.start - a.1) / dy, (y.end - a.1) / dy);
        (u.min(v).max(0.0), u.max(v).min(1.0))
    } else if y.start <= a.1 && a.1 <= y.end {
        (0.0, 1.0)
    } else {
        return None;
    };
    if t0 > t1 {
        return None;
    }
    let at = |t: f64| match t {
        0.0 => a,
        1.0 => b,
        t => (a.0 + t * (b.0 - a.0), a.1 + t * dy),
    };
    Some((at(t0), at(t1)))
}

/// The tooltip of a point: series name, x and y, with the axis titles; and the band at the
/// point, if the series has one, in parentheses after y.
fn point_title(
    frame: &Frame<'_>,
    series: &Series,
    (x, y): (f64, f64),
    band: Option<(f64, f64)>,
) -> String {
    let x = mark::value_text(x, None);
    let parts = [(None, series.name.as_str()), (frame.x_desc, x.as_str())];
    let mut value = mark::value_text(y, None);
    if let Some((lo, hi)) = band {
        let (open, close) = if mark::is_wide_text(&parts, frame.y_desc) {
            ("（", "）")
        } else {
            (" (", ")")
        };
        let (lo, hi) = (mark::value_text(lo, None), mark::value_text(hi, None));
        value = format!("{value}{open}{lo}–{hi}{close}");
    }
    mark::describe(&parts, frame.y_desc, &value)
}

/// Legend entries (series index, x offset) per row, wrapping at `width`; series without a
/// name are left out, and no series with a name means no legend.
fn legend_rows(names: &[&str], width: f64) -> Vec<Vec<(usize, f64)>> {
    let mut rows: Vec<Vec<(usize, f64)>> = Vec::new();
    let mut x = 0.0;
    for (i, name) in names.iter().enumerate().filter(|(_, n)| !n.is_empty()) {
        let entry = SWATCH + SWATCH_GAP + text::width(name, TICK_PX);
        if rows.is_empty() || (x > 0.0 && x + entry > width) {
            rows.push(Vec::new());
            x = 0.0;
        }
        rows.last_mut().expect("a row was just pushed").push((i, x));
        x += entry + ENTRY_GAP;
    }
    rows
}

/// Draws the legend rows from `origin` (backend pixels): a swatch of each series' line and
/// marker, then its name.
fn draw_legend(
    area: &Area<'_>,
    line: &Line,
    rows: &[Vec<(usize, f64)>],
    origin: (i32, i32),
) -> ChartResult {
    let (bx, by) = area.get_base_pixel();
    let label_style = theme::anchored(TICK_PX, HPos::Left, VPos::Center);
    for (r, row) in rows.iter().enumerate() {
        let y = origin.1 + (LEGEND_ROW * (r as f64 + 0.5)) as i32;
        for &(i, offset) in row {
            let x = origin.0 + offset as i32;
            let color = theme::series_color(i);
            if line.series[i].band.is_some() {
                let corners = [(0, -BAND_SWATCH), (SWATCH as i32, BAND_SWATCH)];
                let band = Rectangle::new(corners, color.mix(BAND_OPACITY).filled());
                area.draw(&(EmptyElement::at((x - bx, y - by)) + band))?;
            }
            let swatch = Rectangle::new([(0, -1), (SWATCH as i32, 1)], color.filled());
            area.draw(&(EmptyElement::at((x - bx, y - by)) + swatch))?;
            if line.series[i].marked() {
                marker(area, i, (x + SWATCH as i32 / 2, y), color)?;
            }
            let label_x = x + (SWATCH + SWATCH_GAP) as i32;
            text_at(area, &line.series[i].name, (label_x, y), &label_style)?;
        }
    }
    Ok(())
}

/// Draws the marker of series `series` at backend pixel `at`: circle, square, triangle,
/// diamond, so that series differ by more than colour.
fn marker(area: &Area<'_>, series: usize, at: (i32, i32), color: RGBColor) -> ChartResult {
    let (bx, by) = area.get_base_pixel();
    let at = (at.0 - bx, at.1 - by);
    let style: ShapeStyle = color.filled();
    match series % 4 {
        0 => area.draw(&Circle::new(at, 3, style))?,
        1 => area.draw(&(EmptyElement::at(at) + Rectangle::new([(-3, -3), (3, 3)], style)))?,
        2 => area.draw(&TriangleMarker::new(at, 4, style))?,
        _ => area.draw(
            &(EmptyElement::at(at) + Polygon::new(vec![(0, -4), (4, 0), (0, 4), (-4, 0)], style)),
        )?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legend_wraps_when_entries_do_not_fit() {
        let rows = legend_rows(&["点积注意力", "缩放点积注意力", "加性注意力"], 200.0);
        assert!(rows.len() >= 2);
        assert_eq!(rows.iter().map(Vec::len).sum::<usize>(), 3);
        assert_eq!(legend_rows(&["一", "二"], 600.0).len(), 1);
        assert!(legend_rows(&["", ""], 600.0).is_empty());
        assert_eq!(legend_rows(&["", "二"], 600.0), [vec![(1, 0.0)]]);
    }

    /// A line is cut where it leaves a fixed range and picks up where it comes back; what
    /// lies inside is kept exactly, and what lies wholly outside is not drawn.
    #[test]
    fn lines_are_clipped_to_the_y_range() {
        let y = 0.0..10.0;
        let inside = [(0.0, 1.0), (1.0, 5.0), (2.0, 10.0)];
        assert_eq!(clip_y(&inside, y.clone()), [inside.to_vec()]);
        assert_eq!(
            clip_y(
                &[(0.0, 5.0), (1.0, 20.0), (2.0, 5.0), (3.0, 5.0)],
                y.clone()
            ),
            [
                vec![(0.0, 5.0), (1.0 / 3.0, 10.0)],
                vec![(1.0 + 2.0 / 3.0, 10.0), (2.0, 5.0), (3.0, 5.0)]
            ]
        );
        // Through the whole range between two points outside it.
        assert_eq!(
            clip_y(&[(0.0, -10.0), (4.0, 30.0)], y.clone()),
            [vec![(1.0, 0.0), (2.0, 10.0)]]
        );
        assert!(
            clip_y(
                &[(0.0, -1.0), (1.0, -2.0), (2.0, 11.0), (3.0, 12.0)],
                y.clone()
            )[0]
            .iter()
            .all(|p| (0.0..=10.0).contains(&p.1))
        );
        assert!(clip_y(&[(0.0, -1.0), (1.0, -2.0)], y.clone()).is_empty());
        assert!(clip_y(&[(0.0, 11.0)], y.clone()).is_empty());
        assert_eq!(clip_y(&[(0.0, 3.0)], y), [vec![(0.0, 3.0)]]);
    }

    /// Points outside a fixed range get no marker (and so no tooltip).
    #[test]
    fn points_outside_a_fixed_range_have_no_marker() {
        let svg = |line: Line| line.to_svg("x").unwrap();
        let titles = |svg: &str| svg.matches("<title>").count();
        let all = svg(Line::new().series("a", [1.0, 2.0, 3.0], [5.0, 50.0, 5.0]));
        let clipped = svg(Line::new()
            .series("a", [1.0, 2.0, 3.0], [5.0, 50.0, 5.0])
            .y_range(0.0, 10.0));
        assert_eq!(titles(&all) - titles(&clipped), 1, "{clipped}");
    }

    #[test]
    fn log_axis_refuses_non_positive_values() {
        let line = Line::new().series("a", [0.0, 1.0], [1.0, 2.0]).log_x();
        let err = line.to_svg("x").unwrap_err().to_string();
        assert!(err.contains("logarithmic"), "{err}");
    }

    /// A fitted y axis covers the band, not only the line.
    #[test]
    fn the_y_axis_covers_the_band() {
        let line = Line::new().series("a", [0, 1], [1.0, 2.0]);
        assert_eq!(
            line.y_scale().unwrap().range(),
            line.y_scale().unwrap().range()
        );
        let banded = line.clone().band([-4.0, 0.0], [3.0, 12.0]);
        let range = banded.y_scale().unwrap().range();
        assert!(range.start <= -4.0 && range.end >= 12.0, "{range:?}");
        assert!(line.y_scale().unwrap().range().end < 12.0);
        // On a log axis a band end must be positive, as a value must.
        let log = Line::new()
            .series("a", [1, 2], [1.0, 2.0])
            .band([0.0, 1.0], [2.0, 3.0])
            .log_y();
        let err = log.to_svg("x").unwrap_err().to_string();
        assert!(err.contains("logarithmic"), "{err}");
    }

    #[test]
    fn mean_band_is_the_mean_with_the_extremes() {
        let runs = [[1.0, 10.0], [2.0, 40.0], [6.0, 10.0]];
        let line = Line::new().mean_band("m", [0, 1], runs);
        let series = &line.series[0];
        assert_eq!(series.points, [(0.0, 3.0), (1.0, 20.0)]);
        assert_eq!(
            series.band.as_deref(),
            Some(&[(1.0, 6.0), (10.0, 40.0)][..])
        );
    }

    #[test]
    #[should_panic(expected = "shades the series added last, but there is none yet")]
    fn a_band_needs_a_series() {
        let _ = Line::new().band([1.0], [2.0]);
    }

    #[test]
    #[should_panic(
        expected = "needs one low and one high value per point: 2 points, 2 low, 1 high"
    )]
    fn a_band_needs_a_value_per_point() {
        let _ = Line::new().series("a", [0, 1], [1, 2]).band([0, 1], [3]);
    }

    #[test]
    #[should_panic(expected = "series `m`: run 1 has 1 values but run 0 has 2")]
    fn mean_band_refuses_ragged_runs() {
        let _ = Line::new().mean_band("m", [0, 1], vec![vec![1.0, 2.0], vec![1.0]]);
    }

    #[test]
    #[should_panic(expected = "series `m`: a mean needs at least one run")]
    fn mean_band_needs_a_run() {
        let _ = Line::new().mean_band("m", [0, 1], Vec::<Vec<f64>>::new());
    }
}
