//! Heatmaps of alignment and attention matrices, with token labels on both axes.
//!
//! Rows are queries (target tokens), columns keys (source tokens), as in the alignment figures
//! of Bahdanau et al.: source tokens along the top, target tokens down the left. The canvas
//! size follows from the matrix (square cells), so a 5 x 7 matrix is not stretched to 640 x 400.

use std::fmt::Display;

use ndarray::{Array2, ArrayRef2};
use plotters::element::Rectangle;
use plotters::style::text_anchor::{HPos, VPos};
use plotters::style::{Color, FontTransform, RGBColor};

use super::frame::text_at;
use super::mark;
use super::scale::Scale;
use super::text;
use super::theme::{self, LABEL_PX, MARGIN, TICK_PX};
use super::{Area, Chart, ChartResult};

/// Room for the colour bar: gap to the grid, bar width, gap to its labels.
const BAR_GAP: f64 = 16.0;
const BAR_WIDTH: f64 = 14.0;
const BAR_LABEL_GAP: f64 = 6.0;
/// Slices the colour bar is drawn with.
const BAR_STEPS: usize = 48;
/// Annotation text on light and on dark cells (it sits on the cell, not on the page). Mid
/// viridis (teal) reaches 4.5:1 with neither white nor a dark grey, only with near-black; pure
/// black would be turned into `currentColor` by `svg`, hence #040404.
const ON_LIGHT: RGBColor = RGBColor(0x04, 0x04, 0x04);
const ON_DARK: RGBColor = RGBColor(0xFF, 0xFF, 0xFF);
/// Size of the values printed in cells: the bar charts' value labels, whatever the cell size,
/// so that every number in a chapter reads at one size.
const VALUE_PX: f64 = TICK_PX - 1.0;
/// Room kept free on each side of a value inside its cell.
const VALUE_PAD: f64 = 2.0;

/// Whether `label` fits a `cell` px square at [`VALUE_PX`]: its estimated width and a line
/// height, with [`VALUE_PAD`] on each side.
fn value_fits(label: &str, cell: f64) -> bool {
    let room = cell - 2.0 * VALUE_PAD;
    text::width(label, VALUE_PX) <= room && VALUE_PX * 1.2 <= room
}

/// The annotation colour that contrasts more with the cell colour `fill`.
fn ink_on(fill: RGBColor) -> RGBColor {
    if theme::contrast(ON_LIGHT, fill) >= theme::contrast(ON_DARK, fill) {
        ON_LIGHT
    } else {
        ON_DARK
    }
}

/// A heatmap of a matrix with labelled rows and columns and a colour bar.
///
/// ```
/// # use lab::prelude::*;
/// let weights = array![[0.7, 0.2, 0.1], [0.1, 0.8, 0.1]];
/// let chart = Heatmap::new(&weights, ["我", "爱", "你"], ["I", "love"])
///     .x_label("源语言")
///     .y_label("目标语言")
///     .range(0.0, 1.0)
///     .annotate(2);
/// assert!(chart.to_svg("对齐矩阵").unwrap().contains("爱"));
/// ```
#[derive(Debug, Clone)]
pub struct Heatmap {
    data: Array2<f64>,
    x_labels: Vec<String>,
    y_labels: Vec<String>,
    x_label: Option<String>,
    y_label: Option<String>,
    range: Option<(f64, f64)>,
    annotate: Option<usize>,
    cell: Option<u32>,
}

impl Heatmap {
    /// A heatmap of `matrix` (rows: `y_labels`, top to bottom; columns: `x_labels`).
    ///
    /// # Panics
    ///
    /// If the label counts do not match the matrix.
    #[track_caller]
    pub fn new<X, Y>(matrix: &ArrayRef2<f64>, x_labels: X, y_labels: Y) -> Self
    where
        X: IntoIterator,
        X::Item: Display,
        Y: IntoIterator,
        Y::Item: Display,
    {
        let x_labels: Vec<String> = x_labels.into_iter().map(|l| l.to_string()).collect();
        let y_labels: Vec<String> = y_labels.into_iter().map(|l| l.to_string()).collect();
        let (rows, cols) = matrix.dim();
        assert!(
            x_labels.len() == cols && y_labels.len() == rows,
            "a {rows} x {cols} heatmap needs {cols} column (x) labels and {rows} row (y) labels, \
             got {} and {}",
            x_labels.len(),
            y_labels.len()
        );
        Heatmap {
            data: matrix.to_owned(),
            x_labels,
            y_labels,
            x_label: None,
            y_label: None,
            range: None,
            annotate: Some(2),
            cell: None,
        }
    }

    /// Title above the column labels (e.g. the source sentence).
    pub fn x_label(mut self, label: impl Into<String>) -> Self {
        self.x_label = Some(label.into());
        self
    }

    /// Title left of the row labels (e.g. the target sentence).
    pub fn y_label(mut self, label: impl Into<String>) -> Self {
        self.y_label = Some(label.into());
        self
    }

    /// Maps `lo` to the low end of the colour scale and `hi` to the high end (default: the
    /// data's minimum and maximum). Attention weights read best on `0.0..1.0`.
    pub fn range(mut self, lo: f64, hi: f64) -> Self {
        self.range = Some((lo, hi));
        self
    }

    /// Writes each value into its cell with `decimals` decimals (default 2) when every value
    /// fits its cell at the chart's font size; the tooltips show values so too.
    pub fn annotate(mut self, decimals: usize) -> Self {
        self.annotate = Some(decimals);
        self
    }

    /// Leaves the cells blank: values show only in the tooltips.
    pub fn hide_values(mut self) -> Self {
        self.annotate = None;
        self
    }

    /// Side of a cell in pixels (default: 14 to 48, from the matrix size).
    pub fn cell_size(mut self, px: u32) -> Self {
        self.cell = Some(px);
        self
    }

    fn value_range(&self) -> (f64, f64) {
        if let Some(range) = self.range {
            return range;
        }
        let finite = self.data.iter().copied().filter(|v| v.is_finite());
        let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        if lo < hi {
            (lo, hi)
        } else if lo.is_finite() {
            (lo - 0.5, lo + 0.5)
        } else {
            (0.0, 1.0)
        }
    }

    /// Colour-bar ticks inside the value range, in value units.
    fn bar_ticks(&self) -> Vec<(f64, String)> {
        let (lo, hi) = self.value_range();
        let scale = Scale::linear(lo, hi);
        let eps = (hi - lo) * 1e-9;
        scale
            .ticks()
            .into_iter()
            .filter(|t| (lo - eps..=hi + eps).contains(t))
            .map(|t| (t, scale.label(t)))
            .collect()
    }

    fn layout(&self) -> Layout {
        let (rows, cols) = self.data.dim();
        let cell = self.cell.map_or_else(
            || {
                (560.0 / cols.max(1) as f64)
                    .min(420.0 / rows.max(1) as f64)
                    .clamp(14.0, 48.0)
                    .floor()
            },
            f64::from,
        );
        let desc = |d: &Option<String>| d.as_ref().map_or(0.0, |_| LABEL_PX * 1.25 + 6.0);
        let y_labels = text::max_width(self.y_labels.iter().map(String::as_str), TICK_PX);
        let x_labels = text::max_width(self.x_labels.iter().map(String::as_str), TICK_PX);
        let x_vertical = x_labels > cell * 0.92;
        let x_label_room = if x_vertical {
            x_labels + 8.0
        } else {
            TICK_PX * 1.3 + 6.0
        };
        let left = (f64::from(MARGIN) + desc(&self.y_label) + y_labels + 8.0).ceil();
        let top = (f64::from(MARGIN) + desc(&self.x_label) + x_label_room).ceil();
        let bar_x = left + cols as f64 * cell + BAR_GAP;
        let ticks = self.bar_ticks();
        let bar_labels = text::max_width(ticks.iter().map(|(_, l)| l.as_str()), TICK_PX);
        Layout {
            cell,
            left,
            top,
            x_vertical,
            bar_x,
            width: (bar_x + BAR_WIDTH + BAR_LABEL_GAP + bar_labels + f64::from(MARGIN)).ceil()
                as u32,
            height: (top + rows as f64 * cell + f64::from(MARGIN)).ceil() as u32,
        }
    }

    fn draw_cells(&self, area: &Area<'_>, l: &Layout) -> ChartResult {
        let (lo, hi) = self.value_range();
        // Cells smaller than 10 px touch; larger ones keep a 1 px gap so rows stay countable.
        let gap = i32::from(l.cell >= 10.0);
        for ((r, c), &v) in self.data.indexed_iter().filter(|(_, v)| v.is_finite()) {
            let (x, y) = l.cell_origin(r, c);
            let color = theme::viridis((v - lo) / (hi - lo));
            let size = l.cell as i32 - gap;
            mark::title_next(area, &self.cell_title(r, c, v))?;
            area.draw(&Rectangle::new(
                [(x, y), (x + size, y + size)],
                color.filled(),
            ))?;
        }
        Ok(())
    }

    /// The tooltip of cell (`r`, `c`): column, row and value, e.g. `键 3，查询 2：0.41`.
    fn cell_title(&self, r: usize, c: usize, v: f64) -> String {
        let parts = [
            (self.x_label.as_deref(), self.x_labels[c].as_str()),
            (self.y_label.as_deref(), self.y_labels[r].as_str()),
        ];
        mark::describe(&parts, None, &mark::value_text(v, self.annotate))
    }

    fn draw_values(&self, area: &Area<'_>, l: &Layout, decimals: usize) -> ChartResult {
        let (lo, hi) = self.value_range();
        let labels = self.data.mapv(|v| {
            if v.is_finite() {
                format!("{v:.decimals$}")
            } else {
                String::new()
            }
        });
        // All cells or none: a grid where only the short numbers show reads as missing data.
        if !labels.iter().all(|label| value_fits(label, l.cell)) {
            return Ok(());
        }
        for ((r, c), label) in labels.indexed_iter() {
            let fill = theme::viridis((self.data[(r, c)] - lo) / (hi - lo));
            let ink = ink_on(fill);
            let style = theme::anchored(VALUE_PX, HPos::Center, VPos::Center).color(&ink);
            let (x, y) = l.cell_origin(r, c);
            let half = (l.cell / 2.0) as i32;
            text_at(area, label, (x + half, y + half), &style)?;
        }
        Ok(())
    }

    fn draw_labels(&self, area: &Area<'_>, l: &Layout) -> ChartResult {
        let half = (l.cell / 2.0) as i32;
        let row_style = theme::anchored(TICK_PX, HPos::Right, VPos::Center);
        for (r, label) in self.y_labels.iter().enumerate() {
            let (x, y) = l.cell_origin(r, 0);
            text_at(area, label, (x - 6, y + half), &row_style)?;
        }
        // Column labels sit above the grid; vertical ones read upwards from it.
        let col_style = if l.x_vertical {
            theme::anchored(TICK_PX, HPos::Left, VPos::Center).transform(FontTransform::Rotate270)
        } else {
            theme::anchored(TICK_PX, HPos::Center, VPos::Bottom)
        };
        for (c, label) in self.x_labels.iter().enumerate() {
            let (x, y) = l.cell_origin(0, c);
            text_at(area, label, (x + half, y - 6), &col_style)?;
        }
        self.draw_titles(area, l)
    }

    fn draw_titles(&self, area: &Area<'_>, l: &Layout) -> ChartResult {
        let (rows, cols) = self.data.dim();
        if let Some(title) = &self.x_label {
            let x = (l.left + cols as f64 * l.cell / 2.0) as i32;
            text_at(
                area,
                title,
                (x, MARGIN as i32),
                &theme::anchored(LABEL_PX, HPos::Center, VPos::Top),
            )?;
        }
        if let Some(title) = &self.y_label {
            let y = (l.top + rows as f64 * l.cell / 2.0) as i32;
            let style = theme::anchored(LABEL_PX, HPos::Center, VPos::Top)
                .transform(FontTransform::Rotate270);
            text_at(area, title, (MARGIN as i32, y), &style)?;
        }
        Ok(())
    }

    fn draw_color_bar(&self, area: &Area<'_>, l: &Layout) -> ChartResult {
        let (lo, hi) = self.value_range();
        let height = self.data.nrows() as f64 * l.cell;
        let x = l.bar_x as i32;
        let y_of = |t: f64| (l.top + height * (1.0 - t)).round() as i32;
        for step in 0..BAR_STEPS {
            let (t0, t1) = (
                step as f64 / BAR_STEPS as f64,
                (step + 1) as f64 / BAR_STEPS as f64,
            );
            let color = theme::viridis((t0 + t1) / 2.0);
            area.draw(&Rectangle::new(
                [(x, y_of(t1)), (x + BAR_WIDTH as i32, y_of(t0))],
                color.filled(),
            ))?;
        }
        let label_style = theme::anchored(TICK_PX, HPos::Left, VPos::Center);
        for (value, label) in self.bar_ticks() {
            let y = y_of((value - lo) / (hi - lo));
            let tick = Rectangle::new(
                [(x + BAR_WIDTH as i32, y), (x + BAR_WIDTH as i32 + 3, y + 1)],
                theme::axis_style(),
            );
            area.draw(&tick)?;
            text_at(
                area,
                &label,
                (x + (BAR_WIDTH + BAR_LABEL_GAP) as i32, y),
                &label_style,
            )?;
        }
        Ok(())
    }
}

impl Chart for Heatmap {
    fn canvas_size(&self) -> (u32, u32) {
        let l = self.layout();
        (l.width, l.height)
    }

    fn not_finite(&self) -> usize {
        super::count_not_finite(self.data.iter().copied())
    }

    fn draw(&self, area: Area<'_>) -> ChartResult {
        let l = self.layout();
        self.draw_cells(&area, &l)?;
        if let Some(decimals) = self.annotate {
            self.draw_values(&area, &l, decimals)?;
        }
        self.draw_labels(&area, &l)?;
        self.draw_color_bar(&area, &l)
    }
}

/// Pixel geometry of a heatmap.
struct Layout {
    cell: f64,
    /// Left edge of the grid.
    left: f64,
    /// Top edge of the grid.
    top: f64,
    x_vertical: bool,
    bar_x: f64,
    width: u32,
    height: u32,
}

impl Layout {
    /// Top-left pixel of cell (`row`, `col`).
    fn cell_origin(&self, row: usize, col: usize) -> (i32, i32) {
        let x = self.left + col as f64 * self.cell;
        let y = self.top + row as f64 * self.cell;
        (x.round() as i32, y.round() as i32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn canvas_follows_the_matrix_shape() {
        let m = Array2::<f64>::zeros((2, 8));
        let wide = Heatmap::new(&m, 0..8, ["a", "b"]);
        let (w, h) = wide.canvas_size();
        assert!(w > h, "{w} x {h}");
    }

    #[test]
    fn long_column_labels_turn_vertical() {
        let m = array![[0.5, 0.5]];
        assert!(!Heatmap::new(&m, ["我", "你"], ["x"]).layout().x_vertical);
        let long = Heatmap::new(&m, ["attention", "mechanism"], ["x"]).cell_size(20);
        assert!(long.layout().x_vertical);
    }

    #[test]
    fn colour_bar_ticks_stay_inside_the_range() {
        let m = array![[0.03, 0.91]];
        let ticks = Heatmap::new(&m, ["a", "b"], ["x"]).bar_ticks();
        assert!(ticks.len() >= 2);
        assert!(ticks.iter().all(|(t, _)| (0.03..=0.91).contains(t)));
    }

    #[test]
    fn values_show_only_in_cells_large_enough_for_them() {
        // "0.41" at 12 px is about 26 px wide; "-12.50" about 40 px.
        assert!(value_fits("0.41", 32.0));
        assert!(!value_fits("0.41", 28.0));
        assert!(!value_fits("-12.50", 40.0));
        assert!(value_fits("-12.50", 48.0));
        // A short label still needs a line's height.
        assert!(!value_fits("1", 16.0));
    }

    #[test]
    fn values_contrast_with_every_cell_colour() {
        for i in 0..=100 {
            let fill = theme::viridis(f64::from(i) / 100.0);
            let ratio = theme::contrast(ink_on(fill), fill);
            assert!(ratio >= 4.5, "{fill:?}: {ratio}");
        }
    }

    #[test]
    fn small_cells_print_no_values() {
        let m = Array2::<f64>::from_elem((3, 3), 0.25);
        let svg = |cell| {
            Heatmap::new(&m, 0..3, 0..3)
                .cell_size(cell)
                .to_svg("t")
                .unwrap()
        };
        assert!(svg(40).contains("\n0.25\n</text>"));
        assert!(!svg(20).contains("0.25\n</text>"));
    }

    #[test]
    #[should_panic(expected = "needs 2 column (x) labels and 1 row (y) labels, got 3 and 1")]
    fn label_counts_must_match() {
        let _ = Heatmap::new(&array![[1.0, 2.0]], ["a", "b", "c"], ["x"]);
    }
}
