//! Charts for `lab.figure`: ready-made bar, panel, line and heatmap charts in one theme, and
//! [`Custom`] for anything else drawn with plotters.
//!
//! Every chart renders through plotters' SVG backend in svg-only mode: plotters never looks a
//! font up, text stays `<text>` and the reader's browser draws the (Chinese) glyphs. The
//! finished SVG scales to its container, has no background and draws text and axes in
//! `currentColor`, so it reads in light and dark mode (see `svg` for the post-processing and
//! [`theme`] for colours and sizes).

use std::error::Error;

use plotters::coord::Shift;
use plotters::drawing::{DrawingArea, IntoDrawingArea};
use plotters::prelude::SVGBackend;

mod band;
mod bar;
mod frame;
mod heatmap;
mod line;
mod mark;
mod panels;
mod scale;
mod svg;
mod text;
pub mod theme;

pub use bar::Bar;
pub use heatmap::Heatmap;
pub use line::Line;
pub use panels::Panels;

/// The canvas a chart draws on: plotters' SVG backend, pixel coordinates from the top left.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// What drawing returns; any plotters error converts into it with `?`.
pub type ChartResult = Result<(), Box<dyn Error>>;

/// Something `lab.figure` can draw.
pub trait Chart {
    /// Canvas size in pixels, which becomes the SVG's `viewBox`. (Named apart from the
    /// builders' `.size(width, height)`, which an inherent method would otherwise shadow.)
    fn canvas_size(&self) -> (u32, u32);

    /// Draws the chart on a canvas of [`Chart::canvas_size`].
    fn draw(&self, area: Area<'_>) -> ChartResult;

    /// How many of its values are NaN or infinite: the chart leaves them out, and the build
    /// warns at the block (a chart of nothing but NaN would otherwise be empty axes).
    fn not_finite(&self) -> usize {
        0
    }

    /// Renders the finished SVG document, with `title` as its accessible name.
    fn to_svg(&self, title: &str) -> Result<String, Box<dyn Error>> {
        let size = self.canvas_size();
        let mut raw = String::new();
        {
            let root = SVGBackend::with_string(&mut raw, size).into_drawing_area();
            self.draw(root.clone())?;
            root.present()?;
        }
        Ok(svg::finish(&raw, size, title))
    }
}

impl<C: Chart + ?Sized> Chart for &C {
    fn canvas_size(&self) -> (u32, u32) {
        (**self).canvas_size()
    }

    fn draw(&self, area: Area<'_>) -> ChartResult {
        (**self).draw(area)
    }

    fn not_finite(&self) -> usize {
        (**self).not_finite()
    }
}

/// How many of `values` are NaN or infinite.
fn count_not_finite(values: impl IntoIterator<Item = f64>) -> usize {
    values.into_iter().filter(|v| !v.is_finite()).count()
}

/// A chart drawn by a closure with plotters, for plots the ready-made charts do not cover.
///
/// The closure gets the whole canvas. Drawing in [`theme::INK`] (or plotters' `BLACK`) gives
/// text and lines that follow the page colour; a white background fill is removed.
///
/// ```
/// # use lab::prelude::*;
/// use plotters::prelude::*;
/// let chart = Custom::new((480, 300), |area| {
///     let mut chart = ChartBuilder::on(&area)
///         .margin(12)
///         .x_label_area_size(30)
///         .y_label_area_size(40)
///         .build_cartesian_2d(-3.0..3.0, 0.0..1.0)?;
///     chart.configure_mesh().label_style(theme::text(13.0)).draw()?;
///     let sigmoid = (-30..=30).map(|i| i as f64 / 10.0).map(|x| (x, 1.0 / (1.0 + (-x).exp())));
///     chart.draw_series(LineSeries::new(sigmoid, theme::series_color(0).stroke_width(2)))?;
///     Ok(())
/// });
/// assert!(chart.to_svg("sigmoid").unwrap().contains("currentColor"));
/// ```
pub struct Custom<F> {
    size: (u32, u32),
    draw: F,
}

impl<F> Custom<F>
where
    F: Fn(Area<'_>) -> ChartResult,
{
    /// A `size` canvas (width, height in pixels) drawn by `draw`.
    pub fn new(size: (u32, u32), draw: F) -> Self {
        Custom { size, draw }
    }
}

impl<F> Chart for Custom<F>
where
    F: Fn(Area<'_>) -> ChartResult,
{
    fn canvas_size(&self) -> (u32, u32) {
        self.size
    }

    fn draw(&self, area: Area<'_>) -> ChartResult {
        (self.draw)(area)
    }
}
