//! The axes, grid and label areas shared by the bar, panel and line charts.
//!
//! Label areas are sized from the tick labels this crate chose (see `scale`) and its own text
//! width estimate, so a Chinese axis title or a long tick label gets the room it needs and no
//! more.

use std::error::Error;

use plotters::chart::{ChartBuilder, ChartContext};
use plotters::coord::cartesian::Cartesian2d;
use plotters::element::Text;
use plotters::prelude::SVGBackend;
use plotters::style::TextStyle;

use super::scale::Scale;
use super::text;
use super::theme::{self, LABEL_PX, MARGIN, TICK_PX};
use super::{Area, ChartResult};

/// The coordinate system of every framed chart: plot units on both axes, our own ticks.
pub(crate) type Coord = Cartesian2d<Scale, Scale>;
/// A framed chart, ready for series.
pub(crate) type Plot<'a, 's> = ChartContext<'a, SVGBackend<'s>, Coord>;

/// Length of tick marks; plotters puts labels twice as far from the axis.
const TICK_MARK: i32 = 4;
const LABEL_DIST: f64 = 2.0 * TICK_MARK as f64;

/// Axes of a chart and the room around them.
pub(crate) struct Frame<'t> {
    /// Horizontal axis.
    pub(crate) x: Scale,
    /// Vertical axis.
    pub(crate) y: Scale,
    /// Horizontal axis title.
    pub(crate) x_desc: Option<&'t str>,
    /// Vertical axis title.
    pub(crate) y_desc: Option<&'t str>,
    /// Room below the axis for labels the chart draws itself (categories).
    pub(crate) x_extra: u32,
    /// Room above the plot (legend, panel title).
    pub(crate) top: u32,
    /// Vertical grid lines at the x ticks.
    pub(crate) x_grid: bool,
}

impl Frame<'_> {
    /// Width of the area left of the plot: axis title, tick labels, tick marks.
    pub(crate) fn left(&self) -> u32 {
        let labels = self.y.labels();
        let ticks = text::max_width(labels.iter().map(String::as_str), TICK_PX);
        (ticks + LABEL_DIST + desc_room(self.y_desc)).ceil() as u32
    }

    /// Width of the plot inside an area `area_width` wide.
    pub(crate) fn plot_width(&self, area_width: u32) -> f64 {
        f64::from(area_width) - f64::from(self.left() + self.right() + MARGIN / 2)
    }

    /// Margin right of the plot: enough for half of the last x tick label.
    fn right(&self) -> u32 {
        let last = self
            .x
            .labels()
            .last()
            .map_or(0.0, |l| text::width(l, TICK_PX) / 2.0);
        MARGIN.max(last.ceil() as u32 + 2)
    }

    fn bottom(&self) -> u32 {
        let ticks = if self.x.ticks().is_empty() {
            0.0
        } else {
            LABEL_DIST + TICK_PX * 1.3
        };
        (ticks + f64::from(self.x_extra) + desc_room(self.x_desc)).ceil() as u32
    }

    /// Draws axes, grid, ticks and titles on `area` and returns the chart for the series.
    pub(crate) fn draw<'a, 's>(&self, area: &'a Area<'s>) -> Result<Plot<'a, 's>, Box<dyn Error>> {
        let mut chart = ChartBuilder::on(area)
            .margin_top(self.top)
            .margin_right(self.right())
            .margin_left(MARGIN / 2)
            .margin_bottom(MARGIN / 2)
            .x_label_area_size(self.bottom())
            .y_label_area_size(self.left())
            .build_cartesian_2d(self.x.clone(), self.y.clone())?;
        let x_label = |v: &f64| self.x.label(*v);
        let y_label = |v: &f64| self.y.label(*v);
        let mut mesh = chart.configure_mesh();
        mesh.bold_line_style(theme::grid_style())
            .axis_style(theme::axis_style())
            .label_style(theme::text(TICK_PX))
            .axis_desc_style(theme::text(LABEL_PX))
            .set_all_tick_mark_size(TICK_MARK)
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label);
        if !self.x_grid {
            mesh.disable_x_mesh();
        }
        if let Some(desc) = self.x_desc {
            mesh.x_desc(desc);
        }
        if let Some(desc) = self.y_desc {
            mesh.y_desc(desc);
        }
        mesh.draw()?;
        Ok(chart)
    }
}

/// Room for an axis title: one line of text and a gap.
fn desc_room(desc: Option<&str>) -> f64 {
    desc.map_or(0.0, |_| LABEL_PX * 1.25 + 6.0)
}

/// Draws `label` at a point given in backend pixels (what `Plot::backend_coord` returns), on an
/// area that may be a panel of the canvas.
pub(crate) fn text_at(
    area: &Area<'_>,
    label: &str,
    at: (i32, i32),
    style: &TextStyle<'_>,
) -> ChartResult {
    let (bx, by) = area.get_base_pixel();
    area.draw(&Text::new(label, (at.0 - bx, at.1 - by), style.clone()))?;
    Ok(())
}
