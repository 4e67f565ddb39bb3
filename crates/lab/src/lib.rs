//! The runtime of attnbook's experiment blocks.
//!
//! The generator turns each chapter's ```` ```rust,experiment ```` blocks into one function
//! `fn run(lab: &mut Lab)` and a `main` that calls [`run_main`]. A run goes:
//!
//! 1. [`run_main`] reads `<chapter-slug> <seed> <results.json>` and picks the chapter;
//! 2. [`run_chapter`] creates the [`Lab`] (seeded RNG) and runs the blocks, catching a panic;
//! 3. each block announces itself with [`Lab::begin_block`] and records values, tables and
//!    figures ([`chart`]) on the `Lab`;
//! 4. the recorded [`lab_protocol::ChapterResults`] are written atomically as JSON, panic
//!    included, for the generator to read.
//!
//! Blocks get everything through [`prelude`].

mod alloc;
mod bench;
mod caught;
pub mod chart;
mod context;
mod control;
pub mod fmt;
pub mod prelude;
mod random;
mod runner;
mod sandbox;
mod stats;
mod value;

pub use alloc::{live_bytes, peak_alloc};
pub use bench::thread_cpu_time;
pub use context::{Lab, Run, TableCaption};
pub use random::RandnShape;
pub use runner::{ChapterFn, run_chapter, run_main, run_standalone};
pub use value::{IntoValue, Scalar};

/// The JSON types the results file is made of.
pub use lab_protocol;
