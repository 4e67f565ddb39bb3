//! Small multiples: a grid of bar charts, one per group, sharing their value axis.
//!
//! Comparing the same quantity across settings (the weights over 16 positions for each
//! `d_k`) reads better side by side on one scale than as one crowded grouped bar chart.

use std::fmt::Display;

use plotters::element::Text;
use plotters::style::text_anchor::{HPos, VPos};

use super::bar::{BarOptions, BarPanel, Bars, KEY_ROW, draw_bars, draw_reference_key};
use super::scale::Scale;
use super::theme::{self, MARGIN, TITLE_PX};
use super::{Area, Chart, ChartResult};
use crate::value::Scalar;

/// A grid of bar-chart panels with titles.
///
/// ```
/// # use lab::prelude::*;
/// let mut panels = Panels::new().cols(2).y_label("权重").reference(0.25, "均匀");
/// for d_k in [4, 64] {
///     let w = softmax(&array![1.0, 2.0, 3.0, 4.0].mapv(|x: f64| x * (d_k as f64).sqrt() / 4.0));
///     panels = panels.panel(format!("d_k = {d_k}"), 0..4, &w);
/// }
/// assert!(panels.to_svg("每个 d_k 一个面板").unwrap().contains("d_k = 64"));
/// ```
#[derive(Debug, Clone)]
pub struct Panels {
    panels: Vec<(String, Bars)>,
    options: BarOptions,
    cols: usize,
    panel_size: (u32, u32),
    shared_y: bool,
}

impl Default for Panels {
    fn default() -> Self {
        Panels {
            panels: Vec::new(),
            options: BarOptions::default(),
            cols: 2,
            panel_size: (300, 210),
            shared_y: true,
        }
    }
}

impl Panels {
    /// An empty grid, two panels per row.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a panel titled `title` with one bar per label.
    ///
    /// # Panics
    ///
    /// If there are not as many labels as values.
    #[track_caller]
    pub fn panel<L, V>(mut self, title: impl Into<String>, labels: L, values: V) -> Self
    where
        L: IntoIterator,
        L::Item: Display,
        V: IntoIterator,
        V::Item: Scalar,
    {
        self.panels.push((title.into(), Bars::new(labels, values)));
        self
    }

    /// Panels per row (default 2).
    pub fn cols(mut self, cols: usize) -> Self {
        self.cols = cols.max(1);
        self
    }

    /// Title of the category axes (shown under the bottom panels).
    pub fn x_label(mut self, label: impl Into<String>) -> Self {
        self.options.x_label = Some(label.into());
        self
    }

    /// Title of the value axes (shown left of the first column).
    pub fn y_label(mut self, label: impl Into<String>) -> Self {
        self.options.y_label = Some(label.into());
        self
    }

    /// A dashed reference line at `y` in every panel.
    pub fn reference(mut self, y: f64, label: impl Into<String>) -> Self {
        self.options.reference = Some((y, label.into()));
        self
    }

    /// Prints each value above its bar with `decimals` decimals (when the labels fit).
    pub fn annotate(mut self, decimals: usize) -> Self {
        self.options.annotate = Some(decimals);
        self
    }

    /// Fixes every value axis to `lo..=hi`.
    pub fn y_range(mut self, lo: f64, hi: f64) -> Self {
        self.options.y_range = Some((lo, hi));
        self
    }

    /// Gives each panel its own value axis instead of one shared scale.
    pub fn independent_y(mut self) -> Self {
        self.shared_y = false;
        self
    }

    /// Size of one panel in pixels (default 300 x 210).
    pub fn panel_size(mut self, width: u32, height: u32) -> Self {
        self.panel_size = (width, height);
        self
    }

    fn rows(&self) -> usize {
        self.panels.len().div_ceil(self.cols).max(1)
    }

    fn draw_panel(&self, area: &Area<'_>, index: usize, shared: Option<&Scale>) -> ChartResult {
        let (title, bars) = &self.panels[index];
        let (width, _) = area.dim_in_pixel();
        let title_style = theme::anchored(TITLE_PX, HPos::Center, VPos::Top);
        area.draw(&Text::new(
            title.as_str(),
            (width as i32 / 2, 6),
            title_style,
        ))?;
        let y = shared
            .cloned()
            .unwrap_or_else(|| self.options.y_scale(bars.values.iter().copied()));
        // Axis titles only on the outer panels: the left column and the lowest panel of each
        // column.
        let first_col = index.is_multiple_of(self.cols);
        let lowest = index + self.cols >= self.panels.len();
        let panel = BarPanel {
            bars,
            options: &self.options,
            y,
            top: (TITLE_PX * 1.6) as u32 + 6,
            x_desc: self.options.x_label.as_deref().filter(|_| lowest),
            y_desc: self.options.y_label.as_deref().filter(|_| first_col),
            title,
        };
        draw_bars(area, &panel)?;
        Ok(())
    }

    /// Height of the key row above the panels (explaining the reference line), if any.
    fn key_height(&self) -> u32 {
        self.options
            .reference
            .as_ref()
            .map_or(0, |_| MARGIN / 2 + KEY_ROW as u32)
    }
}

impl Chart for Panels {
    fn not_finite(&self) -> usize {
        let values = self.panels.iter().flat_map(|(_, bars)| &bars.values);
        super::count_not_finite(values.copied())
    }

    fn canvas_size(&self) -> (u32, u32) {
        let cols = self.cols.min(self.panels.len()).max(1);
        (
            self.panel_size.0 * cols as u32,
            self.panel_size.1 * self.rows() as u32 + self.key_height(),
        )
    }

    fn draw(&self, area: Area<'_>) -> ChartResult {
        let cols = self.cols.min(self.panels.len()).max(1);
        let shared = self.shared_y.then(|| {
            let all = self
                .panels
                .iter()
                .flat_map(|(_, bars)| bars.values.iter().copied());
            self.options.y_scale(all)
        });
        let (key, grid) = area.split_vertically(self.key_height());
        if let Some((_, label)) = &self.options.reference {
            let (width, height) = key.dim_in_pixel();
            let right = width as i32 - MARGIN as i32;
            draw_reference_key(&key, (right, height as i32 - (KEY_ROW / 2.0) as i32), label)?;
        }
        let cells = grid.split_evenly((self.rows(), cols));
        for (index, cell) in cells.iter().enumerate().take(self.panels.len()) {
            self.draw_panel(cell, index, shared.as_ref())?;
        }
        Ok(())
    }
}
