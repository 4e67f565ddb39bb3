//! Everything an experiment block sees through `use lab::prelude::*`.
//!
//! The attention core, ndarray (with its prelude: `array!`, `s!`, `Array1`, `Axis`, ...), the
//! random-number traits needed for `lab.rng()`, and the chart types. plotters itself is
//! reachable as `plotters::...` for custom charts (`use plotters::prelude::*;` in a block).

pub use attention::*;

pub use ndarray;
pub use ndarray::prelude::*;

pub use rand::rngs::StdRng;
pub use rand::{Rng, RngExt, SeedableRng};
pub use rand_distr::{Distribution, Normal, StandardNormal, Uniform};

pub use plotters;
// Unnamed: `.filled()`, `.stroke_width(2)`, `.mix(0.5)` on theme colours work in a block
// without `use plotters::prelude::*`, and no `Color` name can clash with a block's own.
pub use plotters::style::Color as _;

pub use crate::chart::{Area, Bar, Chart, ChartResult, Custom, Heatmap, Line, Panels, theme};
pub use crate::fmt::{fmt_cell, group_thousands};
pub use crate::{IntoValue, Lab, RandnShape, Run, peak_alloc, thread_cpu_time};
