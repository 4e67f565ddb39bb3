//! attnbook: builds an executable, verified article series as a static site.
//!
//! The modules are the pipeline, in order (see [`site`] for the build as a list of stages):
//!
//! 1. [`content`]  - site.toml and chapters with their front matter;
//! 2. [`markdown`] - one parse per chapter into typed pieces;
//! 3. [`lab`]      - the experiment blocks compiled, run and cached;
//! 4. [`quotes`]   - quoted numbers bound, checked, fixed;
//! 5. [`render`]   - math and Tera templates;
//! 6. [`site`]     - the stages in order and the atomic write of the output.
//!
//! Each stage owns the chapter type it produces ([`content::Chapter`], [`markdown::Parsed`],
//! [`lab::Ran`], [`quotes::Bound`], [`render::Page`], each wrapping the one before) and imports
//! only the stages before it and the ground modules: [`diagnostic`], the one error type every
//! stage reports with; [`text`], which keeps characters XML and HTML forbid out of the output;
//! [`config`]; [`interrupt`]. [`cli`] turns flags into plans. `tests/architecture.rs` fails on
//! an import against the pipeline or a cycle (docs/architecture.md).

#![allow(
    clippy::result_large_err,
    reason = "a Diagnostic is a cold-path value; boxing every error would only add noise"
)]

pub mod cli;
pub mod config;
pub mod content;
pub mod diagnostic;
pub mod fuzzing;
pub mod interrupt;
pub mod lab;
pub mod markdown;
pub mod memo;
pub mod messages;
pub mod quotes;
pub mod render;
pub mod serve;
pub mod site;
pub mod text;
