//! Axis ranges, ticks and tick labels.
//!
//! The charts choose their own ticks instead of plotters' key points so that they know every
//! tick label before drawing (to size the label areas without plotters' text estimates) and
//! so that linear and logarithmic axes share one coordinate type: a log axis is drawn as a
//! linear axis over `log10` of the data, with ticks at powers of ten.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

/// About this many ticks on a linear axis.
const TARGET_TICKS: f64 = 5.0;

/// One axis: its range and ticks, in plot units (`log10` of the data on a log axis).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
    ticks: Vec<f64>,
    /// Decimals of the tick labels of a linear axis.
    decimals: usize,
}

impl Scale {
    /// A linear axis covering `min..=max`, widened to round tick values.
    pub(crate) fn linear(min: f64, max: f64) -> Scale {
        let (min, max) = widen_degenerate(min, max);
        let step = nice_step((max - min) / TARGET_TICKS);
        let lo = (min / step).floor() * step;
        let hi = (max / step).ceil() * step;
        let count = ((hi - lo) / step).round() as usize;
        let ticks = (0..=count).map(|i| lo + i as f64 * step).collect();
        Scale {
            lo,
            hi,
            log: false,
            ticks,
            decimals: decimals_for(step),
        }
    }

    /// A base-10 log axis covering `min..=max` (both positive), widened to whole decades.
    pub(crate) fn log(min: f64, max: f64) -> Scale {
        let lo = min.log10().floor();
        let hi = max.log10().ceil().max(lo + 1.0);
        let decades = (hi - lo) as i32;
        // With few decades, 2x and 5x ticks keep the axis from having only two labels.
        let mantissas: &[f64] = if decades <= 2 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        let ticks = (lo as i32..=hi as i32)
            .flat_map(|e| mantissas.iter().map(move |m| f64::from(e) + m.log10()))
            .filter(|t| *t <= hi + 1e-9)
            .collect();
        Scale {
            lo,
            hi,
            log: true,
            ticks,
            decimals: 0,
        }
    }

    /// An axis without ticks over `range` (categories, heatmap cells).
    pub(crate) fn plain(range: Range<f64>) -> Scale {
        Scale {
            lo: range.start,
            hi: range.end,
            log: false,
            ticks: Vec::new(),
            decimals: 0,
        }
    }

    /// Maps a data value to plot units.
    pub(crate) fn to_plot(&self, value: f64) -> f64 {
        if self.log { value.log10() } else { value }
    }

    /// The range in plot units.
    pub(crate) fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }

    /// Tick positions in plot units.
    pub(crate) fn ticks(&self) -> Vec<f64> {
        self.ticks.clone()
    }

    /// The label of a tick at `plot` (plot units).
    pub(crate) fn label(&self, plot: f64) -> String {
        if self.log {
            log_label(plot)
        } else {
            // `+ 0.0` turns the `-0` of a rounded tiny negative into `0`.
            format!("{:.*}", self.decimals, plot + 0.0)
        }
    }

    /// All tick labels.
    pub(crate) fn labels(&self) -> Vec<String> {
        self.ticks.iter().map(|&t| self.label(t)).collect()
    }
}

/// A scale is directly a plotters coordinate (in plot units) whose key points are our ticks.
impl Ranged for Scale {
    type ValueType = f64;
    type FormatOption = DefaultFormatting;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = self.hi - self.lo;
        let t = if span == 0.0 {
            0.5
        } else {
            (value - self.lo) / span
        };
        (f64::from(limit.0) + f64::from(limit.1 - limit.0) * t).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        // The ticks are the bold grid lines; no light lines in between.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// Gives an empty or non-finite range some extent so that ticks can be computed.
fn widen_degenerate(min: f64, max: f64) -> (f64, f64) {
    if !(min.is_finite() && max.is_finite()) || min > max {
        (0.0, 1.0)
    } else if min == max {
        let pad = if min == 0.0 { 1.0 } else { min.abs() * 0.5 };
        (min - pad, max + pad)
    } else {
        (min, max)
    }
}

/// The step among 1, 2, 2.5, 5 times a power of ten closest above `raw`.
fn nice_step(raw: f64) -> f64 {
    let magnitude = 10f64.powf(raw.log10().floor());
    let mantissa = raw / magnitude;
    let nice = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .find(|&m| m >= mantissa - 1e-9);
    nice.unwrap_or(10.0) * magnitude
}

/// Decimals needed to print multiples of `step` exactly.
fn decimals_for(step: f64) -> usize {
    (0..10)
        .find(|&d| {
            let scaled = step * 10f64.powi(d);
            (scaled - scaled.round()).abs() < 1e-6 * scaled.max(1.0)
        })
        .map_or(10, |d| d as usize)
}

/// Label of `10^plot`: plain digits for moderate values, `1e6` style beyond.
fn log_label(plot: f64) -> String {
    let value = 10f64.powf(plot);
    let exponent = plot.floor() as i32;
    if (-3..=5).contains(&exponent) {
        let decimals = (-exponent).max(0) as usize;
        format!("{value:.decimals$}")
    } else {
        let mantissa = (value / 10f64.powi(exponent)).round();
        if mantissa == 1.0 {
            format!("1e{exponent}")
        } else {
            format!("{mantissa}e{exponent}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_ticks_are_round_and_cover_the_data() {
        let s = Scale::linear(0.03, 2.9);
        assert_eq!(s.range(), 0.0..3.0);
        assert_eq!(s.labels(), ["0", "1", "2", "3"]);
        let s = Scale::linear(-1.2, 0.4);
        assert_eq!(s.labels(), ["-1.5", "-1.0", "-0.5", "0.0", "0.5"]);
        assert_eq!(
            Scale::linear(0.0, 0.3).labels(),
            ["0.0", "0.1", "0.2", "0.3"]
        );
        assert_eq!(Scale::linear(0.0, 12_000.0).labels()[1], "2500");
    }

    #[test]
    fn degenerate_ranges_still_get_ticks() {
        assert!(Scale::linear(0.0, 0.0).ticks().len() >= 2);
        assert!(Scale::linear(5.0, 5.0).range().contains(&5.0));
        assert_eq!(Scale::linear(f64::NAN, 1.0).range(), 0.0..1.0);
    }

    #[test]
    fn log_ticks_are_powers_of_ten() {
        let s = Scale::log(8.0, 4096.0);
        assert_eq!(s.range(), 0.0..4.0);
        assert_eq!(s.labels(), ["1", "10", "100", "1000", "10000"]);
        let s = Scale::log(0.02, 0.4);
        assert_eq!(
            s.labels(),
            ["0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"]
        );
        assert_eq!(Scale::log(1.0, 1e7).labels().last().unwrap(), "1e7");
        assert!((s.to_plot(100.0) - 2.0).abs() < 1e-12);
    }
}
