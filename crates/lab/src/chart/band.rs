//! The shaded band of a line chart's series: a range (min to max over seeds, an interval)
//! drawn as a translucent polygon under the lines, cut to the y axis, with its own tooltip.

use std::ops::Range;

use plotters::element::Polygon;
use plotters::style::Color;

use super::frame::{Frame, Plot};
use super::mark;
use super::theme;
use super::{Area, ChartResult};

/// Opacity of a band's fill: light enough for the lines (its own included) to read over it,
/// and for overlapping bands of two series to show both.
pub(crate) const BAND_OPACITY: f64 = 0.2;

/// A series with a band: its name, its points `(x, y)` and the band `(lo, hi)` at each.
pub(crate) struct Banded<'a> {
    /// The series' name, for the tooltip.
    pub(crate) name: &'a str,
    /// The series' points.
    pub(crate) points: &'a [(f64, f64)],
    /// The band's low and high end at each point.
    pub(crate) band: &'a [(f64, f64)],
}

/// Draws the band of series `i`: a translucent polygon in its colour per run of points where
/// the band is finite, clipped to the y axis, each titled with the series and the band's
/// extent.
pub(crate) fn draw(
    area: &Area<'_>,
    chart: &mut Plot<'_, '_>,
    frame: &Frame<'_>,
    i: usize,
    series: &Banded<'_>,
) -> ChartResult {
    let title = title(frame, series);
    let style = theme::series_color(i).mix(BAND_OPACITY).filled();
    let to_plot = |x: f64, y: f64| (frame.x.to_plot(x), frame.y.to_plot(y));
    for run in finite_runs(series.points, series.band) {
        // Along the low ends, back along the high ends.
        let outline: Vec<(f64, f64)> = run
            .iter()
            .map(|&(x, lo, _)| to_plot(x, lo))
            .chain(run.iter().rev().map(|&(x, _, hi)| to_plot(x, hi)))
            .collect();
        let clipped = clip_polygon_y(&outline, &frame.y.range());
        if clipped.len() >= 3 {
            mark::title_next(area, &title)?;
            chart.draw_series(std::iter::once(Polygon::new(clipped, style)))?;
        }
    }
    Ok(())
}

/// The runs of consecutive points `(x, lo, hi)` whose x and band ends are all finite, of at
/// least two points (a single point has no area).
fn finite_runs(points: &[(f64, f64)], band: &[(f64, f64)]) -> Vec<Vec<(f64, f64, f64)>> {
    let mut runs: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new()];
    for (&(x, _), &(lo, hi)) in points.iter().zip(band) {
        if x.is_finite() && lo.is_finite() && hi.is_finite() {
            runs.last_mut().expect("never empty").push((x, lo, hi));
        } else if !runs.last().expect("never empty").is_empty() {
            runs.push(Vec::new());
        }
    }
    runs.retain(|run| run.len() >= 2);
    runs
}

/// The polygon `outline` (plot units) cut to the horizontal strip of `y` (Sutherland-Hodgman,
/// against the low bound and then the high one). A polygon wholly inside is returned as it is.
fn clip_polygon_y(outline: &[(f64, f64)], y: &Range<f64>) -> Vec<(f64, f64)> {
    let above = clip_polygon(outline, |p| p.1 >= y.start, y.start);
    clip_polygon(&above, |p| p.1 <= y.end, y.end)
}

/// The part of polygon `outline` on the `inside` side of the horizontal line at `bound`.
fn clip_polygon(
    outline: &[(f64, f64)],
    inside: impl Fn(&(f64, f64)) -> bool,
    bound: f64,
) -> Vec<(f64, f64)> {
    let cross = |a: (f64, f64), b: (f64, f64)| {
        let t = (bound - a.1) / (b.1 - a.1);
        (a.0 + t * (b.0 - a.0), bound)
    };
    let mut out = Vec::with_capacity(outline.len() + 2);
    for (k, &point) in outline.iter().enumerate() {
        let previous = outline[(k + outline.len() - 1) % outline.len()];
        match (inside(&previous), inside(&point)) {
            (true, true) => out.push(point),
            (true, false) => out.push(cross(previous, point)),
            (false, true) => {
                out.push(cross(previous, point));
                out.push(point);
            }
            (false, false) => {}
        }
    }
    out
}

/// The tooltip of a band: the series, the y axis title and the band's extent, lowest low end
/// to highest high end.
fn title(frame: &Frame<'_>, series: &Banded<'_>) -> String {
    let finite = |v: &f64| v.is_finite();
    let band = series.band;
    let lo = band
        .iter()
        .map(|b| b.0)
        .filter(finite)
        .fold(f64::INFINITY, f64::min);
    let hi = band
        .iter()
        .map(|b| b.1)
        .filter(finite)
        .fold(f64::NEG_INFINITY, f64::max);
    let extent = format!(
        "{}–{}",
        mark::value_text(lo, None),
        mark::value_text(hi, None)
    );
    mark::describe(&[(None, series.name)], frame.y_desc, &extent)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A polygon inside the strip is kept as it is; one crossing a bound is cut along it; one
    /// wholly outside disappears.
    #[test]
    fn bands_are_clipped_to_the_y_range() {
        let y = 0.0..10.0;
        let inside = [(0.0, 1.0), (4.0, 2.0), (4.0, 9.0), (0.0, 10.0)];
        assert_eq!(clip_polygon_y(&inside, &y), inside);
        // A square from y = 5 to 15, cut at 10: its top edge comes down to the bound (the
        // outline starts where it re-enters the strip).
        let square = [(0.0, 5.0), (2.0, 5.0), (2.0, 15.0), (0.0, 15.0)];
        assert_eq!(
            clip_polygon_y(&square, &y),
            [(0.0, 10.0), (0.0, 5.0), (2.0, 5.0), (2.0, 10.0)]
        );
        // Slanted edges are cut where they cross: through both bounds.
        let tall = [(0.0, -10.0), (4.0, -10.0), (4.0, 30.0)];
        let cut = clip_polygon_y(&tall, &y);
        assert!(cut.iter().all(|p| (0.0..=10.0).contains(&p.1)), "{cut:?}");
        assert!(
            cut.contains(&(4.0, 0.0)) && cut.contains(&(4.0, 10.0)),
            "{cut:?}"
        );
        assert!(
            cut.contains(&(1.0, 0.0)) && cut.contains(&(2.0, 10.0)),
            "{cut:?}"
        );
        assert!(clip_polygon_y(&[(0.0, 11.0), (1.0, 12.0), (1.0, 20.0)], &y).is_empty());
    }

    #[test]
    fn a_band_breaks_where_it_is_not_finite() {
        let points = [(0.0, 1.0), (1.0, 1.0), (2.0, 1.0), (3.0, 1.0), (4.0, 1.0)];
        let band = [
            (0.0, 2.0),
            (0.0, 2.0),
            (f64::NAN, 2.0),
            (0.0, 2.0),
            (0.0, f64::INFINITY),
        ];
        // Two points, then one (no area), then nothing.
        assert_eq!(
            finite_runs(&points, &band),
            [vec![(0.0, 0.0, 2.0), (1.0, 0.0, 2.0)]]
        );
        let whole = [(0.0, 2.0); 5];
        assert_eq!(finite_runs(&points, &whole)[0].len(), 5);
    }
}
