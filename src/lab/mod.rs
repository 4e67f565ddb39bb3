//! Stage 3: compile and run the experiment blocks, cached.
//!
//! 1. Key each chapter's blocks (`cache`); chapters whose key is cached are done.
//! 2. Generate the experiment crate, one binary per chapter ([`generate`]), and build the stale
//!    chapters' binaries with cargo (`compile`), mapping compiler messages to Markdown lines.
//! 3. Run each chapter that compiled in its own process group, in parallel (`process`), and
//!    read its results back over JSON; panics and timeouts become diagnostics at the block,
//!    and whatever the experiments started is killed when they end (`reap`).
//! 4. Store the fresh results of every chapter that succeeded in the cache.
//!
//! With `repository` in site.toml, [`downloads`] then packs each chapter's blocks as a
//! standalone Cargo project for its page (`take_home`).
//!
//! One chapter's failure costs only that chapter: the others are still compiled, run, cached
//! and bound, so one mistake gives one error.

mod cache;
mod compile;
mod generate;
mod inputs;
mod lock;
mod process;
mod reap;
pub mod runtime;
mod take_home;

pub use reap::{kill_orphans, signal_group};

/// Kills every process group of `groups` and whatever the experiments started that this process
/// adopted: what an interrupt does (`interrupt::install(lab::kill_everything)`).
pub fn kill_everything(groups: &[u32]) {
    for &group in groups {
        signal_group(group, libc::SIGKILL);
    }
    kill_orphans(&[]);
}
pub use cache::remember_loaded_runs;
pub use take_home::{Download, Downloads, PinQuery, downloads, prefetch_pin};

use rayon::prelude::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::content::{Chapter, Series};
use crate::diagnostic::{Diagnostic, Location};
use crate::markdown::Parsed;
pub use generate::{ChapterBlocks, GeneratedCrate, RecordedLines, SourceMap, generate};
use lab_protocol::ChapterResults;

/// The stdout of one block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockOutput {
    /// What the block printed (capped).
    pub stdout: String,
    /// True if output was dropped at the cap.
    pub truncated: bool,
}

/// When, how and with what the experiments of a chapter last ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// RFC 3339 UTC time of the run.
    pub ran_at: String,
    /// `rustc -V` of the toolchain.
    pub toolchain: String,
    /// The chapter seed.
    pub seed: u64,
    /// Wall time of the run, milliseconds.
    pub duration_ms: u64,
    /// The processor's model name (`/proc/cpuinfo`), or its architecture where that is unknown.
    #[serde(default)]
    pub cpu: String,
    /// The instruction set the attention core's kernels used (`avx512`, `avx2`, `portable`).
    #[serde(default)]
    pub isa: String,
}

/// One chapter's experiment results.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChapterRun {
    /// Values, tables and figures.
    pub results: ChapterResults,
    /// Per-block stdout, one entry per block.
    pub blocks: Vec<BlockOutput>,
    /// Run metadata.
    pub meta: RunMeta,
    /// Loaded from the cache in this build (not serialised).
    #[serde(skip)]
    pub from_cache: bool,
    /// BLAKE3 of the cache entry this run was stored as or loaded from (not serialised): what
    /// later stages key their caches by, instead of serialising the results again.
    #[serde(skip)]
    pub digest: String,
    /// The runs at the other points of the chapter's parameter grids (the run itself is at
    /// every default), in block order and grid order. Cached each under a key of its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<PointRun>,
}

/// The chapter run at one point of a parameter's grid, the other parameters at their default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PointRun {
    /// The parameter's name.
    pub param: String,
    /// The point's index in the parameter's grid.
    pub index: usize,
    /// The run.
    pub run: ChapterRun,
}

impl ChapterRun {
    /// What identifies these results in a render cache's key: the digest of their cache
    /// entry (or, for a run that was never stored, of their JSON), with the identities of the
    /// runs at the other grid points.
    pub fn identity(&self) -> String {
        let own = if self.digest.is_empty() {
            serde_json::to_vec(self)
                .map(|json| blake3::hash(&json).to_hex().to_string())
                .unwrap_or_default()
        } else {
            self.digest.clone()
        };
        if self.points.is_empty() {
            return own;
        }
        let mut all = blake3::Hasher::new();
        all.update(own.as_bytes());
        for point in &self.points {
            all.update(point.param.as_bytes());
            all.update(&(point.index as u64).to_le_bytes());
            all.update(point.run.identity().as_bytes());
        }
        all.finalize().to_hex().to_string()
    }

    /// The run at point `index` of `param`'s grid: this one at the default, else one of
    /// [`ChapterRun::points`].
    pub fn at(
        &self,
        param: &crate::markdown::experiment::Param,
        index: usize,
    ) -> Option<&ChapterRun> {
        if index == param.default {
            return Some(self);
        }
        self.points
            .iter()
            .find(|p| p.param == param.name && p.index == index)
            .map(|p| &p.run)
    }
}

/// A grid point other than the default, to run.
#[derive(Debug, Clone)]
struct PointSpec {
    param: String,
    index: usize,
    value: String,
}

impl PointSpec {
    /// What the run of the point is called in file names (cache, sandbox, results).
    fn file_name(&self, slug: &str) -> String {
        format!("{slug}~{}={}", self.param, self.value)
    }

    /// `name = value`, as diagnostics name the point.
    fn text(&self) -> String {
        format!("{} = {}", self.param, self.value)
    }
}

/// The points of every parameter the chapter's blocks declare, defaults left out.
fn points_of(chapter: &Parsed) -> Vec<PointSpec> {
    chapter
        .doc
        .experiments
        .iter()
        .filter_map(|e| e.options.param.as_ref())
        .flat_map(|p| {
            p.values
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != p.default)
                .map(|(index, value)| PointSpec {
                    param: p.name.clone(),
                    index,
                    value: value.clone(),
                })
        })
        .collect()
}

/// A parsed chapter with what its experiments produced: this stage's output. It dereferences
/// to the [`Parsed`] chapter.
#[derive(Debug, Clone)]
pub struct Ran {
    /// The chapter as parsed.
    pub parsed: Parsed,
    /// Its experiment results, if it has experiments and they ran (or came from the cache).
    pub run: Option<ChapterRun>,
}

impl Ran {
    /// True when the chapter has experiments but no results: they failed (already reported)
    /// or never ran. Lookups of its values, figures and tables are then not errors of their
    /// own, so that one mistake gives one error.
    pub fn lacks_results(&self) -> bool {
        !self.doc.experiments.is_empty() && self.run.is_none()
    }
}

impl std::ops::Deref for Ran {
    type Target = Parsed;
    fn deref(&self) -> &Parsed {
        &self.parsed
    }
}

impl AsRef<Chapter> for Ran {
    fn as_ref(&self) -> &Chapter {
        &self.parsed.chapter
    }
}

impl AsRef<Parsed> for Ran {
    fn as_ref(&self) -> &Parsed {
        &self.parsed
    }
}

impl AsRef<Ran> for Ran {
    fn as_ref(&self) -> &Ran {
        self
    }
}

/// How to run the lab stage.
#[derive(Debug, Clone)]
pub struct LabPlan {
    /// Ignore the cache.
    pub rerun: bool,
    /// Chapters run at once.
    pub jobs: usize,
    /// Default per-block timeout.
    pub timeout: Duration,
    /// Bytes of stdout kept per chapter.
    pub output_cap: usize,
    /// Show progress bars (when stderr is a terminal).
    pub progress: bool,
}

/// Where the lab stage keeps its files.
struct Paths {
    /// The site root, absolute (data files and path dependencies are relative to it).
    site: PathBuf,
    work: PathBuf,
    lab_crate: PathBuf,
    /// The workspace root whose `Cargo.toml` the `lab` crate inherits from, if it has one.
    workspace: Option<PathBuf>,
    target: PathBuf,
    package: String,
    /// The runtime when the site links attnbook's own (`None` with `[lab] crate_path`).
    runtime: Option<&'static runtime::Runtime>,
}

impl Paths {
    fn new<C>(series: &Series<C>) -> Result<Self, String> {
        let (lab_crate, target, runtime) = match &series.config.lab.crate_path {
            Some(p) => {
                let lab_crate = series.root.join(p);
                let runtime = runtime::runtime().ok();
                let target = runtime.map_or_else(
                    || series.root.join(".attnbook").join("target"),
                    |r| r.target_dir(),
                );
                (lab_crate, target, None)
            }
            None => {
                let runtime = runtime::runtime()?;
                (runtime.lab_crate(), runtime.target_dir(), Some(runtime))
            }
        };
        let lab_crate = std::fs::canonicalize(&lab_crate).unwrap_or(lab_crate);
        let root = std::fs::canonicalize(&series.root).unwrap_or_else(|_| series.root.clone());
        let hash = blake3::hash(root.to_string_lossy().as_bytes()).to_hex();
        Ok(Paths {
            site: std::path::absolute(&series.root).unwrap_or_else(|_| series.root.clone()),
            // Absolute: experiment processes run with their sandbox as working directory.
            work: std::path::absolute(series.root.join(".attnbook"))
                .unwrap_or_else(|_| series.root.join(".attnbook")),
            workspace: workspace_root(&lab_crate),
            lab_crate,
            target,
            package: format!("attnbook-lab-{}", &hash[..10]),
            runtime,
        })
    }

    /// The runtime crates' directory (`crates/`, holding `lab` and its siblings).
    fn crates(&self) -> &Path {
        self.lab_crate.parent().unwrap_or(&self.lab_crate)
    }

    /// The workspace root's `Cargo.toml` and `Cargo.lock`: the runtime crates inherit their
    /// dependencies from the one, and the experiment crate's lock starts from the other.
    fn workspace_files(&self) -> Vec<PathBuf> {
        self.workspace
            .iter()
            .flat_map(|root| [root.join("Cargo.toml"), root.join("Cargo.lock")])
            .collect()
    }
}

/// Says once per process why the checkout at the compile-time path is not used.
fn note_runtime(paths: &Paths) {
    static SAID: std::sync::Once = std::sync::Once::new();
    if let Some(note) = paths.runtime.and_then(|r| r.note.as_ref()) {
        SAID.call_once(|| eprintln!("note: {note}"));
    }
}

/// The nearest ancestor of `krate` whose `Cargo.toml` has a `[workspace]` table: the manifest
/// the crate inherits `workspace = true` fields from (for attnbook's runtime, the repository's
/// root).
fn workspace_root(krate: &Path) -> Option<PathBuf> {
    krate.ancestors().skip(1).find_map(|dir| {
        let text = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
        let manifest: toml::Table = toml::from_str(&text).ok()?;
        manifest
            .contains_key("workspace")
            .then(|| dir.to_path_buf())
    })
}

/// Where the experiment runtime in use lives, when it is a checkout whose edits should rerun
/// the chapters (`serve` watches it); `None` for the built-in copy, which never changes.
pub fn watched_runtime() -> Option<PathBuf> {
    let runtime = runtime::runtime().ok()?;
    (runtime.source == runtime::Source::Checkout).then(|| runtime.root.join("crates"))
}

/// The last results of each chapter from the cache, stale or not, without compiling or running
/// anything (`check` uses them to know the names of values, figures and tables).
pub fn last_results(series: &Series<Parsed>) -> Vec<Option<ChapterRun>> {
    let cache_dir = series.root.join(".attnbook").join("cache");
    series
        .chapters
        .iter()
        .map(|c| {
            if c.doc.experiments.is_empty() {
                None
            } else {
                cache::load_any(&cache_dir, &c.slug)
            }
        })
        .collect()
}

/// Every chapter's run and the problems found.
#[derive(Debug, Default)]
pub struct Runs {
    /// One entry per chapter: `None` for chapters without experiments and for chapters whose
    /// experiments failed (their problems are in `errors`).
    pub runs: Vec<Option<ChapterRun>>,
    /// Compile errors, panics, timeouts: each at the block it concerns.
    pub errors: Vec<Diagnostic>,
}

/// Runs (or loads from cache) the experiments of every chapter.
pub fn run(series: &Series<Parsed>, plan: &LabPlan) -> Runs {
    let mut out = Runs {
        runs: vec![None; series.chapters.len()],
        errors: Vec::new(),
    };
    let with_blocks: Vec<usize> = (0..series.chapters.len())
        .filter(|&i| !series.chapters[i].doc.experiments.is_empty())
        .collect();
    if with_blocks.is_empty() {
        return out;
    }
    let paths = match Paths::new(series) {
        Ok(paths) => paths,
        Err(e) => {
            out.errors.push(Diagnostic::error(e));
            return out;
        }
    };
    note_runtime(&paths);
    prune_run_dir(&paths.work.join("run"), series);
    let toolchain = rustc_version();
    let cpu = cpu_model();
    let lab = &series.config.lab;
    let all: Vec<&Parsed> = with_blocks.iter().map(|&i| &series.chapters[i]).collect();
    // Written even when every chapter is cached: the take-home downloads read the crate's
    // lock file, which must be the one of today's runtime, not of the last build that ran.
    // Written first, since the site's lock file of its dependencies (part of the key) is
    // brought up to date with it.
    let (krate, reseeded) = match write_experiment_crate(&paths, &all, lab) {
        Ok(written) => written,
        Err(errors) => {
            out.errors = errors;
            return out;
        }
    };
    let env_key = cache::with_site_inputs(
        cache::environment_key(
            paths.crates(),
            &paths.workspace_files(),
            &format!("{toolchain}\n{}", result_environment()),
            &cache::generator_identity(),
        ),
        &inputs::fingerprint(&paths.site, lab),
    );
    let cache_dir = paths.work.join("cache");
    let mut stale = Vec::new();
    let mut points: Vec<Vec<PointRun>> = vec![Vec::new(); series.chapters.len()];
    let mut stale_points = Vec::new();
    // The cached runs are read (and their JSON parsed) chapter by chapter in parallel.
    let loaded: Vec<_> = with_blocks
        .par_iter()
        .map(|&i| {
            let c = &series.chapters[i];
            let key = cache::chapter_key(&env_key, &c.slug, c.seed(), &c.doc.experiments);
            let points: Vec<_> = points_of(c)
                .into_iter()
                .map(|point| {
                    let point_key = cache::point_key(&key, &point.param, &point.value);
                    let run = cache::load(&cache_dir, &point.file_name(&c.slug), &point_key)
                        .filter(|_| !plan.rerun);
                    (point, point_key, run)
                })
                .collect();
            let run = cache::load(&cache_dir, &c.slug, &key).filter(|_| !plan.rerun);
            (i, key, points, run)
        })
        .collect();
    for (i, key, loaded_points, run) in loaded {
        for (point, point_key, run) in loaded_points {
            match run {
                Some(mut run) => {
                    run.from_cache = true;
                    points[i].push(PointRun {
                        param: point.param,
                        index: point.index,
                        run,
                    });
                }
                None => stale_points.push((i, point_key, point)),
            }
        }
        match run {
            Some(mut run) => {
                run.from_cache = true;
                out.runs[i] = Some(run);
            }
            None => stale.push((i, key)),
        }
    }
    if stale.is_empty() && stale_points.is_empty() {
        attach_points(&mut out.runs, points);
        if reseeded
            && lab.dependencies.is_empty()
            && let Err(e) = lock::resolve(&paths.work.join("lab"), &paths.target)
        {
            eprintln!("warning: {e}");
        }
        return out;
    }
    let mut stale_slugs: Vec<&str> = stale
        .iter()
        .map(|(i, _)| series.chapters[*i].slug.as_str())
        .collect();
    for (i, _, _) in &stale_points {
        let slug = series.chapters[*i].slug.as_str();
        if !stale_slugs.contains(&slug) {
            stale_slugs.push(slug);
        }
    }
    let built = match build(&paths, &all, krate, &stale_slugs, plan) {
        Ok(built) => built,
        Err(errors) => {
            out.errors = errors;
            return out;
        }
    };
    out.errors.extend(built.errors.iter().cloned());
    // Chapters that did not compile have their errors reported already.
    // Every default run and every grid point is one job; they all run in parallel.
    let runnable: Vec<(usize, String, &Parsed, &Path, Option<PointSpec>)> = stale
        .into_iter()
        .map(|(i, key)| (i, key, None))
        .chain(
            stale_points
                .into_iter()
                .map(|(i, key, p)| (i, key, Some(p))),
        )
        .filter_map(|(i, key, point)| {
            let chapter = &series.chapters[i];
            let executable = built.executable(&chapter.slug)?;
            Some((i, key, chapter, executable, point))
        })
        .collect();
    let jobs: Vec<Job<'_>> = runnable
        .iter()
        .map(|(_, _, c, e, p)| (*c, *e, p.as_ref()))
        .collect();
    reap::become_subreaper();
    let outcomes = run_all(&paths, &built.map, &jobs, plan, lab, &toolchain, &cpu);
    // Nothing may run any more: whatever a chapter started and left behind goes now.
    reap::kill_orphans(&[]);
    for ((i, key, chapter, _, point), outcome) in runnable.into_iter().zip(outcomes) {
        match outcome {
            Ok(mut run) => {
                let name = point
                    .as_ref()
                    .map_or_else(|| chapter.slug.clone(), |p| p.file_name(&chapter.slug));
                if let Err(e) = cache::store(&cache_dir, &name, &key, &mut run) {
                    eprintln!("warning: cannot write the experiment cache for {name}: {e}");
                }
                match point {
                    Some(p) => points[i].push(PointRun {
                        param: p.param,
                        index: p.index,
                        run,
                    }),
                    None => out.runs[i] = Some(run),
                }
            }
            Err(errors) => out.errors.extend(errors),
        }
    }
    attach_points(&mut out.runs, points);
    out
}

/// One run to do: the chapter, its binary, and the grid point (`None`: every default).
type Job<'a> = (&'a Parsed, &'a Path, Option<&'a PointSpec>);

/// Gives each chapter's default run its grid points' runs, in grid order; a chapter whose
/// default run failed keeps none (its failure is reported).
fn attach_points(runs: &mut [Option<ChapterRun>], points: Vec<Vec<PointRun>>) {
    for (run, mut points) in runs.iter_mut().zip(points) {
        if let Some(run) = run {
            points.sort_by(|a, b| (&a.param, a.index).cmp(&(&b.param, b.index)));
            run.points = points;
        }
    }
}

/// Removes from `.attnbook/run/` what no chapter of the series will use again: the results
/// and sandbox directories of chapters that are gone, and results files of the layout before
/// each chapter had a results directory of its own (`run/SLUG.json`).
fn prune_run_dir(run: &Path, series: &Series<Parsed>) {
    let Ok(entries) = std::fs::read_dir(run) else {
        return;
    };
    let known = |name: &str| {
        let slug = name.split_once('~').map_or(name, |(slug, _)| slug);
        series.chapters.iter().any(|c| c.slug == slug)
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let gone = ["results-", "sandbox-"]
            .iter()
            .find_map(|prefix| name.strip_prefix(prefix))
            .is_some_and(|slug| !known(slug));
        if gone && path.is_dir() && !path.is_symlink() {
            let _ = std::fs::remove_dir_all(&path);
        } else if name.ends_with(".json") && path.is_file() {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// The variables that change what the experiments compute, as `NAME=value` lines.
fn result_environment() -> String {
    lab_protocol::RESULT_ENV
        .iter()
        .map(|name| {
            let value = std::env::var_os(name).unwrap_or_default();
            format!("{name}={}\n", value.to_string_lossy())
        })
        .collect()
}

/// One chapter's run, or what went wrong.
type Outcome = Result<ChapterRun, Vec<Diagnostic>>;

/// The compiled experiment crate.
struct Built {
    /// Chapter slug -> binary.
    executables: HashMap<String, PathBuf>,
    /// Generated lines -> Markdown lines.
    map: SourceMap,
    /// Compile errors of the chapters that did not compile.
    errors: Vec<Diagnostic>,
}

impl Built {
    fn executable(&self, slug: &str) -> Option<&Path> {
        self.executables.get(slug).map(PathBuf::as_path)
    }
}

/// Generates the crate for every chapter with blocks and writes it, its lock file started from
/// the runtime's (see [`lock`]) or, for a site with `[lab.dependencies]`, from the site's own
/// lock, which is then brought in line with the crate: one error at the dependency in
/// site.toml when they do not resolve.
fn write_experiment_crate(
    paths: &Paths,
    chapters: &[&Parsed],
    lab: &crate::config::LabConfig,
) -> Result<(GeneratedCrate, bool), Vec<Diagnostic>> {
    let blocks: Vec<ChapterBlocks<'_>> = chapters
        .iter()
        .map(|c| ChapterBlocks {
            slug: &c.slug,
            path: &c.path,
            blocks: &c.doc.experiments,
        })
        .collect();
    let site = &paths.site;
    let dependencies = inputs::dependency_lines(lab, |p| {
        let path = site.join(p);
        std::fs::canonicalize(&path)
            .unwrap_or(path)
            .display()
            .to_string()
    });
    let krate = generate::generate_with(&paths.package, &paths.lab_crate, &dependencies, &blocks);
    let crate_dir = paths.work.join("lab");
    let io_error = |e: std::io::Error| {
        vec![Diagnostic::error(format!(
            "cannot write the experiment crate in {}: {e}",
            crate_dir.display()
        ))]
    };
    write_crate(&crate_dir, &paths.package, &krate.files).map_err(io_error)?;
    let site_lock = (!lab.dependencies.is_empty())
        .then(|| std::fs::read_to_string(site.join(inputs::SITE_LOCK)).ok())
        .flatten()
        .map(|text| inputs::lock_for_crate(&text, &paths.package));
    let reseeded = lock::seed(
        &crate_dir,
        paths.workspace.as_deref(),
        &krate.files[0].1,
        site_lock.as_deref(),
    )
    .map_err(io_error)?;
    if !lab.dependencies.is_empty() {
        if reseeded || site_lock.is_none() {
            lock::resolve_raw(&crate_dir, &paths.target)
                .map_err(|stderr| vec![inputs::resolve_error(lab, &stderr)])?;
        }
        inputs::keep_site_lock(site, &crate_dir, &paths.package).map_err(|e| {
            vec![Diagnostic::error(format!(
                "cannot write {}: {e}",
                site.join(inputs::SITE_LOCK).display()
            ))]
        })?;
    }
    Ok((krate, reseeded))
}

/// Compiles the stale chapters of the written crate `krate`.
fn build(
    paths: &Paths,
    chapters: &[&Parsed],
    krate: GeneratedCrate,
    stale: &[&str],
    plan: &LabPlan,
) -> Result<Built, Vec<Diagnostic>> {
    let crate_dir = paths.work.join("lab");
    let bin_of: HashMap<&str, &str> = chapters
        .iter()
        .zip(&krate.bins)
        .map(|(c, bin)| (c.slug.as_str(), bin.as_str()))
        .collect();
    // (slug, binary) of every stale chapter.
    let pairs: Vec<(&str, &str)> = stale
        .iter()
        .filter_map(|s| bin_of.get_key_value(s).map(|(slug, bin)| (*slug, *bin)))
        .collect();
    let bins: Vec<&str> = pairs.iter().map(|(_, bin)| *bin).collect();
    let message = format!("compiling experiments of {} chapter(s)", stale.len());
    let spinner = spinner(plan.progress, message.clone());
    // Many stale chapters (a cold build, `--rerun`, `verify`) compile as one binary; if it
    // does not compile (a chapter's error, or two chapters whose items clash), each chapter
    // compiles on its own as below, so an error still stops only its chapter.
    let series = (bins.len() >= SERIES_FROM).then(|| {
        (
            generate::series_bin_name(&paths.package),
            generate::series_binary(&pairs),
        )
    });
    let built = std::thread::scope(|scope| {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        if !plan.progress {
            // No terminal: a plain line every `quiet()` while cargo compiles.
            scope.spawn(move || {
                let started = Instant::now();
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(quiet().max(Duration::from_millis(500)))
                {
                    eprintln!("{message}: {} s", started.elapsed().as_secs());
                }
            });
        }
        let together = series.as_ref().and_then(|(name, text)| {
            let file = crate_dir.join("src/bin").join(format!("{name}.rs"));
            write_if_changed(&file, text).ok()?;
            let built = compile::build(&crate_dir, &paths.target, &[name], &krate.map).ok()?;
            let executable = built.executables.get(name)?.clone();
            built.errors.is_empty().then(|| compile::Built {
                executables: pairs
                    .iter()
                    .map(|(_, bin)| (bin.to_string(), executable.clone()))
                    .collect(),
                errors: Vec::new(),
                warnings: built.warnings,
            })
        });
        let built = match together {
            Some(built) => Ok(built),
            None => compile::build(&crate_dir, &paths.target, &bins, &krate.map),
        };
        drop(stop);
        built
    });
    spinner.finish_and_clear();
    let mut built = built?;
    for w in &built.warnings {
        eprintln!(
            "warning: {}{}",
            w.message,
            w.location
                .as_ref()
                .map(|l| format!(" at {l}"))
                .unwrap_or_default()
        );
    }
    let executables = bin_of
        .iter()
        .filter_map(|(slug, bin)| Some((slug.to_string(), built.executables.remove(*bin)?)))
        .collect();
    Ok(Built {
        executables,
        map: krate.map,
        errors: built.errors,
    })
}

/// Stale chapters from which [`build`] compiles them as one binary. Measured on the series
/// (docs/performance.md, "One binary for the stale chapters"): its 11 chapters took 92
/// CPU-seconds as 11 binaries and 51 as one, about 8 per chapter's own binary. Split as a fixed
/// part and a part per chapter (an estimate from those two figures, about 20 and 3), one
/// binary is the cheaper from four chapters on. Below that, each chapter keeps its own binary
/// and cargo's incremental state for it, which is what an edit of one block recompiles (2 s
/// for ch. 1, against 8.7 s for the shared binary).
const SERIES_FROM: usize = 4;

/// Writes files whose contents changed (unchanged files keep their mtime, so cargo skips them)
/// and removes every other file under `src/` (chapters gone, an older layout) except the
/// binary of several chapters, which [`build`] writes when it needs it.
fn write_crate(dir: &Path, package: &str, files: &[(PathBuf, String)]) -> std::io::Result<()> {
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("bin"))?;
    let series = src
        .join("bin")
        .join(format!("{}.rs", generate::series_bin_name(package)));
    for entry in walkdir::WalkDir::new(&src) {
        let entry = entry.map_err(std::io::Error::other)?;
        if entry.file_type().is_file()
            && entry.path() != series
            && !files.iter().any(|(rel, _)| dir.join(rel) == entry.path())
        {
            std::fs::remove_file(entry.path())?;
        }
    }
    for (rel, text) in files {
        write_if_changed(&dir.join(rel), text)?;
    }
    Ok(())
}

/// Writes `text` to `path` unless the file holds it already (its mtime then stays, and cargo
/// does not compile it again).
fn write_if_changed(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text)?;
    }
    Ok(())
}

fn spinner(show: bool, message: String) -> indicatif::ProgressBar {
    let bar = if show {
        indicatif::ProgressBar::new_spinner()
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_message(message);
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// Without a terminal, how long the lab stage stays silent: past it, compiling prints a line
/// at this interval and every chapter that finishes running prints one. 20 s, or
/// `ATTNBOOK_PROGRESS_AFTER` seconds.
fn quiet() -> Duration {
    let secs = std::env::var("ATTNBOOK_PROGRESS_AFTER")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(20);
    Duration::from_secs(secs)
}

/// What every chapter run of one build shares.
struct RunSettings<'a> {
    map: &'a SourceMap,
    /// The site root and the declared data files, copied into each chapter's sandbox.
    site: &'a Path,
    data: &'a [PathBuf],
    results_dir: PathBuf,
    output_cap: usize,
    default_timeout: Duration,
    memory_mb: u64,
    toolchain: &'a str,
    cpu: &'a str,
}

/// Runs `jobs` (chapter, binary), `plan.jobs` at a time; one outcome per job, in order.
fn run_all(
    paths: &Paths,
    map: &SourceMap,
    jobs: &[Job<'_>],
    plan: &LabPlan,
    site: &crate::config::LabConfig,
    toolchain: &str,
    cpu: &str,
) -> Vec<Outcome> {
    let results_dir = paths.work.join("run");
    if let Err(e) = std::fs::create_dir_all(&results_dir) {
        let error = Diagnostic::error(format!("cannot create {}: {e}", results_dir.display()));
        return jobs.iter().map(|_| Err(vec![error.clone()])).collect();
    }
    let bar = if plan.progress {
        indicatif::ProgressBar::new(jobs.len() as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_message("running experiments");
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let running = Instant::now();
    let outcomes: Mutex<Vec<Option<Outcome>>> = Mutex::new(vec![None; jobs.len()]);
    let settings = RunSettings {
        map,
        site: &paths.site,
        data: &site.data_files,
        results_dir,
        output_cap: plan.output_cap,
        default_timeout: site
            .timeout
            .map(Duration::from_secs)
            .unwrap_or(plan.timeout),
        memory_mb: site.memory_mb.unwrap_or(4096),
        toolchain,
        cpu,
    };
    // Chapters that time themselves run last and one at a time, so no other chapter's
    // experiments share the machine while they measure; the others run `plan.jobs` at once.
    let (timed, untimed): (Vec<usize>, Vec<usize>) =
        (0..jobs.len()).partition(|&i| times_itself(jobs[i].0));
    for (order, workers) in [(&untimed, plan.jobs.max(1)), (&timed, 1)] {
        next.store(0, Ordering::SeqCst);
        std::thread::scope(|scope| {
            for _ in 0..workers.min(order.len()) {
                scope.spawn(|| {
                    while let Some(&index) = order.get(next.fetch_add(1, Ordering::SeqCst)) {
                        let (chapter, executable, point) = jobs[index];
                        let started = Instant::now();
                        let outcome = run_chapter(&settings, chapter, executable, point)
                            .map_err(|errors| at_point(errors, point));
                        let finished = done.fetch_add(1, Ordering::SeqCst) + 1;
                        if !plan.progress && running.elapsed() >= quiet() {
                            // No terminal (a CI log): once running takes long, one plain line
                            // per chapter, so a long build is seen to move.
                            eprintln!(
                                "experiments of {} {} in {:.1} s ({}/{})",
                                chapter.slug,
                                if outcome.is_ok() { "ran" } else { "failed" },
                                started.elapsed().as_secs_f64(),
                                finished,
                                jobs.len()
                            );
                        }
                        if let Ok(mut all) = outcomes.lock() {
                            all[index] = Some(outcome);
                        }
                        bar.inc(1);
                    }
                });
            }
        });
    }
    bar.finish_and_clear();
    outcomes
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Err(Vec::new())))
        .collect()
}

/// What a block calls to measure time: `lab.bench`, the wall clock, the thread's CPU clock.
const TIMING_CALLS: [&str; 3] = [".bench(", "Instant::", "thread_cpu_time("];

/// Whether a chapter measures time: a block calls `lab.bench` or reads a clock
/// ([`TIMING_CALLS`]). Such chapters run alone (see [`run_all`]), since a timing taken while another
/// chapter's experiments compete for the cores says little about the code it times.
fn times_itself(chapter: &Parsed) -> bool {
    chapter.doc.experiments.iter().any(|block| {
        block
            .lines
            .iter()
            .any(|line| TIMING_CALLS.iter().any(|call| line.code.contains(call)))
    })
}

/// Most bytes of results JSON read back from one chapter (figures included).
const RESULTS_CAP: u64 = 256 * 1024 * 1024;

/// Distinguishes the processes of one chapter run from every other's.
fn run_token(slug: &str) -> String {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, Ordering::SeqCst);
    let slug = blake3::hash(slug.as_bytes()).to_hex();
    format!("{}-{n}-{}", std::process::id(), &slug[..8])
}

/// A point's failures say which point failed: `... (at d_k = 512)`.
fn at_point(mut errors: Vec<Diagnostic>, point: Option<&PointSpec>) -> Vec<Diagnostic> {
    if let Some(point) = point {
        for d in &mut errors {
            d.message = format!("{} (at {})", d.message, point.text());
        }
    }
    errors
}

fn run_chapter(
    settings: &RunSettings<'_>,
    chapter: &Parsed,
    executable: &Path,
    point: Option<&PointSpec>,
) -> Outcome {
    let run_name = point.map_or_else(|| chapter.slug.clone(), |p| p.file_name(&chapter.slug));
    let RunSettings {
        map,
        site,
        data,
        results_dir,
        output_cap,
        default_timeout,
        memory_mb,
        toolchain,
        cpu,
    } = settings;
    let (output_cap, default_timeout) = (*output_cap, *default_timeout);
    let blocks = &chapter.doc.experiments;
    let limits = process::Limits {
        timeouts: blocks
            .iter()
            .map(|b| {
                b.options
                    .timeout
                    .map_or(default_timeout, Duration::from_secs)
            })
            .collect(),
        output_cap,
        memory: memory_mb * 1024 * 1024,
        sandbox: results_dir.join(format!("sandbox-{run_name}")),
        point: point.map(|p| format!("{}={}", p.param, p.value)),
    };
    let _ = std::fs::remove_dir_all(&limits.sandbox);
    std::fs::create_dir_all(&limits.sandbox)
        .and_then(|()| inputs::copy_data(site, data, &limits.sandbox))
        .map_err(|e| {
            vec![Diagnostic::error(format!(
                "cannot prepare {}: {e}",
                limits.sandbox.display()
            ))]
        })?;
    // A directory of the chapter's own, the only one besides its sandbox that its process may
    // write (Landlock): no other chapter running beside it can replace its results.
    let own_results = results_dir.join(format!("results-{run_name}"));
    let _ = std::fs::remove_dir_all(&own_results);
    std::fs::create_dir_all(&own_results).map_err(|e| {
        vec![Diagnostic::error(format!(
            "cannot create {}: {e}",
            own_results.display()
        ))]
    })?;
    let results_path = own_results.join("results.json");
    let started = Instant::now();
    let finished = process::run(
        executable,
        (&chapter.slug, chapter.seed(), &results_path),
        blocks.len(),
        &run_token(&run_name),
        &limits,
    )
    .map_err(|e| {
        vec![Diagnostic::error(format!(
            "cannot start the experiments of {}: {e}",
            chapter.path.display()
        ))]
    })?;
    let duration_ms = started.elapsed().as_millis() as u64;
    let first_line = chapter.doc.experiments.first().map_or(1, |b| b.line);
    let results = read_results(&results_path, RESULTS_CAP).map_err(|message| {
        vec![
            Diagnostic::error(message)
                .at(Location::at_line(&chapter.path, first_line, 1))
                .with_help("record less: smaller figures, fewer or smaller values and tables"),
        ]
    })?;
    if let Some(problem) = results.as_ref().and_then(|r| false_claim(chapter, r)) {
        let _ = std::fs::remove_file(&results_path);
        return Err(vec![
            Diagnostic::error(format!(
                "the results file of this chapter's experiments {problem}: something else wrote \
                 it, and it is not used"
            ))
            .at(Location::at_line(&chapter.path, first_line, 1))
            .with_help(
                "an experiment must not write into .attnbook/run/ (on a kernel without Landlock \
                 nothing stops it); run the build again",
            ),
        ]);
    }
    if let Some(d) = failure(chapter, map, &finished, results.as_ref()) {
        return Err(vec![d]);
    }
    let mut outputs = finished.blocks;
    outputs.resize(blocks.len(), BlockOutput::default());
    let results = results.unwrap_or_default();
    let meta = RunMeta {
        ran_at: now_rfc3339(),
        toolchain: toolchain.to_string(),
        seed: chapter.seed(),
        duration_ms,
        cpu: cpu.to_string(),
        isa: results.isa.clone(),
    };
    Ok(ChapterRun {
        results,
        blocks: outputs,
        meta,
        from_cache: false,
        digest: String::new(),
        points: Vec::new(),
    })
}

/// What is wrong with `results` as the results of `chapter`'s run, if anything: they must name
/// the chapter and the seed it ran with. (Block indices are not checked: a block may call
/// `lab.begin_block` itself.)
fn false_claim(chapter: &Parsed, results: &ChapterResults) -> Option<String> {
    if results.chapter != chapter.slug {
        return Some(format!("claims to be chapter `{}`'s", results.chapter));
    }
    if results.seed != chapter.seed() {
        return Some(format!(
            "claims the seed {}, not the chapter's {}",
            results.seed,
            chapter.seed()
        ));
    }
    None
}

/// The results file: `None` when missing or malformed (the run's ending says why), an error when
/// it is larger than `cap`. Such a file is not read at all, and of no use, so it is removed
/// however large it is (redteam-3 D21: a 720 MB file stayed in `.attnbook/run/`).
fn read_results(path: &Path, cap: u64) -> Result<Option<ChapterResults>, String> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(None);
    };
    if meta.len() > cap {
        let _ = std::fs::remove_file(path);
        return Err(format!(
            "the experiments recorded {} MiB of values, tables and figures; at most {} MiB are read",
            meta.len() >> 20,
            cap >> 20
        ));
    }
    Ok(std::fs::read_to_string(path)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok()))
}

/// Turns a failed run into a diagnostic at the block (or line) that failed.
fn failure(
    chapter: &Parsed,
    map: &SourceMap,
    finished: &process::Finished,
    results: Option<&ChapterResults>,
) -> Option<Diagnostic> {
    let block_at = |block: usize| {
        let line = chapter.doc.experiments.get(block).map_or(1, |b| b.line);
        Location::at_line(&chapter.path, line, 1)
    };
    let last_block = finished.blocks.len().saturating_sub(1);
    match (&finished.ending, results) {
        (process::Ending::TimedOut { block, after }, _) => Some(
            Diagnostic::error(format!("experiment block {} did not finish within {} s", block + 1, after.as_secs()))
                .at(block_at(*block))
                .with_help("make the block faster, or raise its limit in the fence: ```rust,experiment,timeout=300"),
        ),
        (process::Ending::Exited(0), Some(r)) if r.panic.is_none() => None,
        (_, Some(r)) if r.panic.is_some() => r.panic.as_ref().map(|p| {
            let (location, note) = match map.origin(&p.file, p.line as usize) {
                Some(o) => (Location::at_line(&o.path, o.line, p.column as usize + o.col_shift), None),
                None => (block_at(p.block), Some(format!("panicked at {}:{}:{}", p.file, p.line, p.column))),
            };
            let mut d = Diagnostic::error(format!("experiment block {} panicked: {}", p.block + 1, p.message)).at(location);
            if let Some(note) = note {
                d = d.with_note(note);
            }
            d
        }),
        (process::Ending::Signalled(_), _) if finished.stderr.contains("memory allocation of") => Some(
            Diagnostic::error(format!("experiment block {} ran out of memory", last_block + 1))
                .at(block_at(last_block))
                .with_note(tail(&finished.stderr))
                .with_help("allocate less, or raise the limit with `memory_mb` under [lab] in site.toml"),
        ),
        (process::Ending::Signalled(signal), _) => Some(
            Diagnostic::error(format!("experiment block {} was killed ({signal})", last_block + 1))
                .at(block_at(last_block))
                .with_note(tail(&finished.stderr)),
        ),
        // Exiting in a block (`std::process::exit`) ends the chapter before its results are
        // written: name the block and the code, as for a signal.
        (process::Ending::Exited(code), None) => Some(
            Diagnostic::error(format!(
                "experiment block {} exited with code {code} without reporting results",
                last_block + 1
            ))
            .at(block_at(last_block))
            .with_note(tail(&finished.stderr))
            .with_help("let the block end normally: the chapter's results are written after its last block"),
        ),
        (ending, _) => Some(
            Diagnostic::error(format!("the experiments of this chapter failed ({ending:?}) without reporting results"))
                .at(block_at(0))
                .with_note(tail(&finished.stderr)),
        ),
    }
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(12)..].join("\n")
}

/// True if `[lab.dependencies]` names a crate by path (its sources lie wherever it says).
pub fn has_path_dependency(lab: &crate::config::LabConfig) -> bool {
    inputs::first_path_dependency(lab).is_some()
}

/// `rustc -V` of this build: asked ahead on a thread of its own ([`prefetch_toolchain`]), then
/// kept answered for the rest of the build.
enum Toolchain {
    Asking(std::thread::JoinHandle<String>),
    Answered(String),
}

static PREFETCHED: std::sync::Mutex<Option<Toolchain>> = std::sync::Mutex::new(None);

/// Starts asking `rustc -V` now, for the experiment stage to find answered: through rustup's
/// proxy it takes tens of milliseconds, which a no-change build would otherwise wait for after
/// loading the chapters. Each build asks afresh (a toolchain switched under `serve` is seen).
pub fn prefetch_toolchain() {
    let handle = std::thread::spawn(ask_rustc_version);
    if let Ok(mut slot) = PREFETCHED.lock() {
        *slot = Some(Toolchain::Asking(handle));
    }
}

/// The toolchain this build compiles experiments with (`rustc -V`), asked once per build: the
/// experiment cache is keyed by it, and so is a build that finds nothing changed.
pub fn toolchain() -> String {
    let Ok(mut slot) = PREFETCHED.lock() else {
        return ask_rustc_version();
    };
    let answer = match slot.take() {
        Some(Toolchain::Answered(answer)) => answer,
        Some(Toolchain::Asking(handle)) => handle.join().unwrap_or_else(|_| ask_rustc_version()),
        None => ask_rustc_version(),
    };
    *slot = Some(Toolchain::Answered(answer.clone()));
    answer
}

fn rustc_version() -> String {
    toolchain()
}

fn ask_rustc_version() -> String {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    std::process::Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown rustc".to_string())
}

/// The model name of this machine's processor, as `/proc/cpuinfo` gives it (Linux; the first
/// core's, they agree); the architecture (`x86_64`) where it says nothing.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| model_name(&text))
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// The `model name` of a `/proc/cpuinfo` text, whitespace runs collapsed.
fn model_name(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
        (key.trim() == "model name" && !value.is_empty()).then_some(value)
    })
}

fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_model_comes_from_cpuinfo() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\n\
                       model name\t: Intel(R) Xeon(R)  CPU @ 2.20GHz\nflags\t: fpu\n";
        assert_eq!(
            model_name(cpuinfo).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
        assert_eq!(model_name("processor : 0\nmodel name :\n"), None);
        assert!(!cpu_model().is_empty());
    }

    fn chapter_with(code: &str) -> Parsed {
        let source =
            format!("+++\ntitle = \"t\"\nnumber = 1\n+++\n\n```rust,experiment\n{code}\n```\n");
        let chapter = Chapter::parse(Path::new("content/01-t.md"), source).unwrap();
        Parsed::new(chapter).0
    }

    #[test]
    fn chapters_that_time_themselves_are_told_apart() {
        assert!(times_itself(&chapter_with(
            "let t = lab.bench(\"x\", || 1);"
        )));
        assert!(times_itself(&chapter_with(
            "# let t0 = std::time::Instant::now();"
        )));
        assert!(times_itself(&chapter_with(
            "# let cpu = || thread_cpu_time().as_secs_f64();"
        )));
        assert!(!times_itself(&chapter_with("lab.value(\"x\", 1.0);")));
    }

    /// Redteam-3 D14: results that name another chapter or another seed are not taken.
    #[test]
    fn results_must_be_the_chapters_own() {
        let chapter = chapter_with("lab.value(\"v\", 1.0);");
        let own = ChapterResults {
            chapter: "t".into(),
            seed: chapter.seed(),
            ..ChapterResults::default()
        };
        assert_eq!(false_claim(&chapter, &own), None);
        let other = ChapterResults {
            chapter: "zz".into(),
            ..own.clone()
        };
        assert!(
            false_claim(&chapter, &other)
                .unwrap()
                .contains("chapter `zz`")
        );
        let reseeded = ChapterResults {
            seed: chapter.seed() + 1,
            ..own
        };
        assert!(false_claim(&chapter, &reseeded).unwrap().contains("seed"));
    }

    #[test]
    fn results_beyond_the_cap_are_an_error_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        assert_eq!(read_results(&path, 10), Ok(None), "missing");
        let json = serde_json::to_string(&ChapterResults::default()).unwrap();
        std::fs::write(&path, &json).unwrap();
        assert_eq!(
            read_results(&path, json.len() as u64),
            Ok(Some(ChapterResults::default()))
        );
        let err = read_results(&path, json.len() as u64 - 1).unwrap_err();
        assert!(err.contains("at most 0 MiB are read"), "{err}");
        assert!(!path.exists(), "a refused results file is removed");
        std::fs::write(&path, "{ not json").unwrap();
        assert_eq!(read_results(&path, 1 << 20), Ok(None), "malformed");
    }
}
