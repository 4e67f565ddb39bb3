//! "Take the experiments home": each chapter's experiment blocks as a standalone Cargo project.
//!
//! With `repository` in site.toml, every chapter that has experiments gets
//! `<slug>/<slug>-experiments.tar.gz` beside its page: `Cargo.toml`, the build's `Cargo.lock`
//! and `src/main.rs` holding the chapter's blocks in order (hidden `# ` lines included, since
//! they are needed to compile). The project depends on `lab` by `git = repository,
//! rev = commit`, the commit that holds the `lab` crate this build linked, so a reader who runs
//! `cargo run --release` gets the very numbers of the page, bit for bit, in `results.json`.
//!
//! The commit is `HEAD` of the git repository that holds the `lab` crate (for the series, this
//! repository). When it cannot be pinned (no git, not a repository, uncommitted changes beside
//! the `lab` crate) no download is offered: a project pinned to a commit that does not hold
//! the code that ran would promise numbers it cannot give. The build says why and goes on.
//!
//! Building the project, reading the lock and packing the archive are pure functions over
//! text; only [`downloads`] and [`pin`] touch the disk and git.

use rayon::prelude::*;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::Paths;
use crate::content::Series;
use crate::markdown::Parsed;

use super::Ran;

/// One chapter's take-home archive.
pub struct Download {
    /// Index of the chapter in the series.
    pub chapter: usize,
    /// The archive's file name, to be written beside the chapter page.
    pub file_name: String,
    /// The `.tar.gz` bytes.
    pub bytes: Vec<u8>,
}

/// Where the take-home projects get `lab` from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pin {
    /// The git URL (`repository` of site.toml).
    pub repository: String,
    /// The full commit hash.
    pub commit: String,
    /// The commit's time (seconds since the epoch), stamped on the archive's files so that the
    /// same sources give the same bytes.
    pub time: u64,
}

/// The name of a chapter's archive.
fn archive_name(slug: &str) -> String {
    format!("{slug}-experiments.tar.gz")
}

/// What [`downloads`] offers: the archives, and a warning for each chapter (or the whole site)
/// that goes without one, saying why.
#[derive(Default)]
pub struct Downloads {
    /// The archives.
    pub archives: Vec<Download>,
    /// Why some or all chapters get none (`path:line:col: ` first when there is a place).
    pub warnings: Vec<String>,
    /// What the archives were pinned to, as asked of git: a later build that finds nothing
    /// else changed asks again ([`PinQuery::still_answered`]).
    pub pin: Option<PinQuery>,
}

/// A pin of the downloads to a commit: what was asked, and git's answer (or why there is none).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PinQuery {
    repository: String,
    lab_crate: PathBuf,
    workspace: Option<PathBuf>,
    answer: String,
}

impl PinQuery {
    fn new(args: &PinArgs, answer: &Result<Pin, String>) -> PinQuery {
        PinQuery {
            repository: args.0.clone(),
            lab_crate: args.1.clone(),
            workspace: args.2.clone(),
            answer: format!("{answer:?}"),
        }
    }

    /// True if git gives the same answer now (the same commit, still nothing uncommitted).
    pub fn still_answered(&self) -> bool {
        let now = pin(&self.repository, &self.lab_crate, self.workspace.as_deref());
        format!("{now:?}") == self.answer
    }
}

/// Every chapter's archive; none without `repository`. A chapter whose blocks name a site file
/// that `[lab] data` does not declare goes without one, and so does every chapter when they
/// cannot be pinned to a commit or the experiments depend on a path crate; the warnings say
/// why (the build goes on without them).
pub fn downloads<C: AsRef<Ran> + Sync>(series: &Series<C>) -> Downloads {
    let mut out = Downloads::default();
    let Some(repository) = &series.config.repository else {
        return out;
    };
    let lab = &series.config.lab;
    let run_dir = series.root.join(".attnbook").join("run");
    // Chapter by chapter in parallel (each looks up every string literal of its blocks).
    let checked: Vec<(usize, &Ran, Vec<super::inputs::UndeclaredRead>)> = series
        .chapters
        .par_iter()
        .map(AsRef::as_ref)
        .enumerate()
        .filter(|(_, c)| c.run.is_some() && !c.doc.experiments.is_empty())
        .map(|(i, c)| {
            let sandbox = run_dir.join(format!("sandbox-{}", c.slug));
            let reads = super::inputs::undeclared_reads(
                &series.root,
                &sandbox,
                &lab.data_files,
                &c.path,
                &c.doc.experiments,
            );
            (i, c, reads)
        })
        .collect();
    let mut chapters: Vec<(usize, &Ran)> = Vec::new();
    for (i, c, reads) in checked {
        out.warnings.extend(reads.iter().map(|read| {
            format!(
                "{}: warning: no experiment download for this chapter: it reads `{}`, a \
                 site file that `[lab] data` in site.toml does not declare (declare it, and \
                 read it at that path relative to the site root)",
                read.at,
                read.file.display()
            )
        }));
        if reads.is_empty() {
            chapters.push((i, c));
        }
    }
    if chapters.is_empty() {
        return out;
    }
    match archives(series, repository, &chapters, &mut out.pin) {
        Ok(archives) => out.archives = archives,
        Err(why) => out
            .warnings
            .push(format!("warning: no experiment downloads: {why}")),
    }
    out
}

/// The archives of `chapters`, or why none can be offered.
fn archives<C>(
    series: &Series<C>,
    repository: &str,
    chapters: &[(usize, &Ran)],
    asked: &mut Option<PinQuery>,
) -> Result<Vec<Download>, String> {
    let lab = &series.config.lab;
    if let Some((name, at)) = super::inputs::first_path_dependency(lab) {
        return Err(format!(
            "the experiments depend on the path crate `{name}`{}, which a download cannot \
             carry; depend on it through a registry or a git repository to offer them",
            at.map(|l| format!(" ({l})")).unwrap_or_default()
        ));
    }
    let paths = Paths::new(series)?;
    if paths
        .runtime
        .is_some_and(|r| r.source == super::runtime::Source::BuiltIn)
    {
        return Err(format!(
            "the experiments linked attnbook's built-in runtime (attnbook {}, sources {}), \
             which no commit of `repository` is known to hold; build with attnbook run from a \
             clean checkout of that repository to offer them",
            env!("CARGO_PKG_VERSION"),
            &paths.runtime.map(|r| r.hash.as_str()).unwrap_or_default()[..16]
        ));
    }
    let args: PinArgs = (
        repository.to_string(),
        paths.lab_crate.clone(),
        paths.workspace.clone(),
    );
    let pinned = pin_prefetched(&args.0, &args.1, args.2.as_deref());
    *asked = Some(PinQuery::new(&args, &pinned));
    let pin = pinned?;
    let lock_path = paths.work.join("lab").join("Cargo.lock");
    let build_lock = std::fs::read_to_string(&lock_path).map_err(|e| {
        format!(
            "cannot read the experiments' lock file {}: {e}",
            lock_path.display()
        )
    })?;
    let mut data = Vec::new();
    for rel in &lab.data_files {
        let bytes = std::fs::read(series.root.join(rel))
            .map_err(|e| format!("cannot read the data file {}: {e}", rel.display()))?;
        data.push((rel.clone(), bytes));
    }
    let inputs = Inputs {
        pin: &pin,
        build_lock: &build_lock,
        build_package: &paths.package,
        dependencies: &super::inputs::dependency_lines(lab, str::to_string),
        data: &data,
    };
    let page_root = series.config.base_url_slash();
    let store = paths.work.join("cache").join("archives");
    let packed: Vec<Result<(Download, std::ffi::OsString), String>> = chapters
        .par_iter()
        .map(|&(index, chapter)| {
            let page = format!("{page_root}{}/", chapter.slug);
            let project = project(chapter, &page, &inputs)?;
            let (bytes, file) = archive_kept(&store, &project, pin.time)
                .map_err(|e| format!("cannot pack the experiments of {}: {e}", chapter.slug))?;
            let download = Download {
                chapter: index,
                file_name: archive_name(&chapter.slug),
                bytes,
            };
            Ok((download, file))
        })
        .collect();
    // The first problem in series order, as a pass chapter by chapter would have stopped at.
    let packed: Vec<(Download, std::ffi::OsString)> =
        packed.into_iter().collect::<Result<_, _>>()?;
    let kept: Vec<std::ffi::OsString> = packed.iter().map(|(_, file)| file.clone()).collect();
    prune_archives(&store, &kept);
    Ok(packed.into_iter().map(|(download, _)| download).collect())
}

/// [`archive`], kept in `store` under a hash of everything it packs (the project's name, its
/// files and the time stamp), so an unchanged chapter's archive is not compressed again. A
/// stored archive carries the BLAKE3 of its bytes in front of them; one that does not match
/// is packed again. Returns the bytes and the stored file's name.
fn archive_kept(
    store: &Path,
    project: &Project,
    time: u64,
) -> std::io::Result<(Vec<u8>, std::ffi::OsString)> {
    let mut key = blake3::Hasher::new();
    key.update(b"attnbook take-home archive 1\0");
    key.update(project.name.as_bytes());
    key.update(&time.to_le_bytes());
    for (path, bytes) in &project.files {
        let path = path.to_string_lossy();
        key.update(&(path.len() as u64).to_le_bytes());
        key.update(path.as_bytes());
        key.update(&(bytes.len() as u64).to_le_bytes());
        key.update(bytes);
    }
    let name = std::ffi::OsString::from(format!("{}.tar.gz", key.finalize().to_hex()));
    let file = store.join(&name);
    if let Ok(stored) = std::fs::read(&file)
        && stored.len() >= 32
        && blake3::hash(&stored[32..]).as_bytes()[..] == stored[..32]
    {
        return Ok((stored[32..].to_vec(), name));
    }
    let bytes = archive(project, time)?;
    // The store is an optimisation: failing to write it costs the next build a compression.
    let _ = std::fs::create_dir_all(store).and_then(|()| {
        let mut tmp = tempfile::NamedTempFile::new_in(store)?;
        tmp.write_all(blake3::hash(&bytes).as_bytes())?;
        tmp.write_all(&bytes)?;
        tmp.persist(&file).map(drop).map_err(|e| e.error)
    });
    Ok((bytes, name))
}

/// Removes the stored archives this build did not use.
fn prune_archives(store: &Path, kept: &[std::ffi::OsString]) {
    let Ok(entries) = std::fs::read_dir(store) else {
        return;
    };
    for entry in entries.flatten() {
        if !kept.contains(&entry.file_name()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// What every take-home project of one build shares.
struct Inputs<'a> {
    pin: &'a Pin,
    /// The lock file of the build's experiment crate, whose root package is `build_package`.
    build_lock: &'a str,
    build_package: &'a str,
    /// `[dependencies]` lines of the site's `[lab.dependencies]` (no path dependency).
    dependencies: &'a str,
    /// The declared data files: `(site-relative path, bytes)`.
    data: &'a [(PathBuf, Vec<u8>)],
}

/// What a pin is asked for: the repository, the `lab` crate and the workspace root.
type PinArgs = (String, PathBuf, Option<PathBuf>);

/// A pin being asked on its thread, with what it was asked for.
type PinJob = (PinArgs, std::thread::JoinHandle<Result<Pin, String>>);

/// A pin asked ahead ([`prefetch_pin`]).
static PREFETCHED_PIN: std::sync::Mutex<Option<PinJob>> = std::sync::Mutex::new(None);

/// Starts pinning the downloads now, on a thread of its own, for [`downloads`] to find
/// answered: its two git commands take about ten milliseconds, which a no-change build would
/// otherwise wait for after binding the quotes. Nothing the build writes is under the paths
/// `git status` looks at (the runtime crates and the workspace's manifest and lock), so the
/// answer is the one asked later; each build asks afresh.
pub fn prefetch_pin<C>(series: &Series<C>) {
    let Some(repository) = &series.config.repository else {
        return;
    };
    if super::inputs::first_path_dependency(&series.config.lab).is_some() {
        return;
    }
    let Ok(paths) = Paths::new(series) else {
        return;
    };
    let args: PinArgs = (
        repository.clone(),
        paths.lab_crate.clone(),
        paths.workspace.clone(),
    );
    let (repository, lab_crate, workspace) = args.clone();
    let handle = std::thread::spawn(move || pin(&repository, &lab_crate, workspace.as_deref()));
    if let Ok(mut slot) = PREFETCHED_PIN.lock() {
        *slot = Some((args, handle));
    }
}

/// [`pin`], answered by [`prefetch_pin`] when it was asked the same.
fn pin_prefetched(
    repository: &str,
    lab_crate: &Path,
    workspace: Option<&Path>,
) -> Result<Pin, String> {
    let prefetched = PREFETCHED_PIN.lock().ok().and_then(|mut slot| slot.take());
    if let Some(((r, l, w), handle)) = prefetched
        && r == repository
        && l == lab_crate
        && w.as_deref() == workspace
        && let Ok(pinned) = handle.join()
    {
        return pinned;
    }
    pin(repository, lab_crate, workspace)
}

/// Pins `repository` to `HEAD` of the git repository holding `lab_crate`, provided nothing
/// the experiment crate is built from has uncommitted changes: the crate's parent directory
/// (`crates/` with `attention` and `lab-protocol`) and the `workspace` root's `Cargo.toml`
/// (whose `[workspace.dependencies]` they inherit) and `Cargo.lock`.
fn pin(repository: &str, lab_crate: &Path, workspace: Option<&Path>) -> Result<Pin, String> {
    let head = git(
        lab_crate,
        &["show", "--no-patch", "--format=%H %ct", "HEAD"],
    )?;
    let (commit, time) = head.split_once(' ').unwrap_or((&head, "0"));
    let crates = lab_crate.parent().unwrap_or(lab_crate);
    let mut paths = vec![crates.to_path_buf()];
    if let Some(root) = workspace {
        paths.extend([root.join("Cargo.toml"), root.join("Cargo.lock")]);
    }
    let mut args: Vec<String> = ["status", "--porcelain", "--"].map(String::from).to_vec();
    args.extend(paths.iter().map(|p| p.to_string_lossy().into_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let changes = git(crates, &args)?;
    if let Some(first) = changes.lines().next() {
        return Err(format!(
            "{} has uncommitted changes (`{}`{}); commit them so the downloads can pin the code that ran",
            workspace.unwrap_or(crates).display(),
            first.trim(),
            if changes.lines().count() > 1 {
                ", ..."
            } else {
                ""
            }
        ));
    }
    Ok(Pin {
        repository: repository.to_string(),
        commit: commit.to_string(),
        time: time.parse().unwrap_or(0),
    })
}

/// Runs git in `dir`; its trimmed standard output, or what went wrong.
fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git to pin the downloads to a commit: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`git {}` failed in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// A take-home project: its directory name and `(relative path, bytes)` of each file.
struct Project {
    /// The directory the archive unpacks into (also the package name).
    pub name: String,
    /// The files, in archive order.
    pub files: Vec<(PathBuf, Vec<u8>)>,
}

/// The project of one chapter: its program, manifest and lock, and the site's data files at
/// their site-relative paths (the program runs in the project's directory, as the chapter ran
/// in a directory holding them).
fn project(chapter: &Parsed, page: &str, inputs: &Inputs<'_>) -> Result<Project, String> {
    let pin = inputs.pin;
    let name = package_name(&chapter.slug);
    let source = format!("git+{}?rev={}#{}", pin.repository, pin.commit, pin.commit);
    let lock = take_home_lock(inputs.build_lock, inputs.build_package, &name, &source)?;
    let title = one_line(&chapter.front.title);
    let mut files = vec![
        (
            PathBuf::from("Cargo.toml"),
            manifest(&name, &title, page, pin, inputs.dependencies).into_bytes(),
        ),
        (PathBuf::from("Cargo.lock"), lock.into_bytes()),
        (
            PathBuf::from("src/main.rs"),
            program(chapter, &title, page, pin).into_bytes(),
        ),
    ];
    files.extend(inputs.data.iter().cloned());
    Ok(Project { files, name })
}

/// A valid Cargo package name for any slug (ASCII letters, digits and `-`, never starting
/// with a digit).
fn package_name(slug: &str) -> String {
    let clean: String = super::generate::ascii_slug(slug, '-').collect();
    format!("attnbook-{}-experiments", clean.trim_matches('-'))
}

/// A title for a one-line comment: control characters (a TOML escape can put a newline in
/// the title) would end the comment.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn manifest(name: &str, title: &str, page: &str, pin: &Pin, dependencies: &str) -> String {
    let dependencies = if dependencies.is_empty() {
        String::new()
    } else {
        format!("# The crates of the site's [lab.dependencies].\n{dependencies}")
    };
    format!(
        "# The experiments of \"{title}\" ({page}), generated by attnbook.\n\
         # `cargo run --release` runs them with the seed of the site's build and writes results.json.\n\
         [package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [dependencies]\n\
         # The experiment runtime (and through it the attention core) at the commit the site was built from.\n\
         lab = {{ git = {repository}, rev = {commit} }}\n{dependencies}\n\
         # Not part of any enclosing workspace.\n[workspace]\n\n[profile.release]\ndebug = false\n",
        repository = toml_string(&pin.repository),
        commit = toml_string(&pin.commit),
    )
}

/// `text` as a TOML basic string, escaped as TOML (not Rust) escapes.
fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

fn program(chapter: &Parsed, title: &str, page: &str, pin: &Pin) -> String {
    let mut text = format!(
        "//! The experiments of \"{title}\" ({place}), {page}\n\
         //!\n\
         //! Generated by attnbook from {path}\n\
         //! at {repository} commit {commit}.\n\
         //!\n\
         //! The chapter's experiment blocks in order, in one function, as the site ran them\n\
         //! (lines the page hides are here too, since the blocks need them). `cargo run --release`\n\
         //! prints what each block prints and writes every recorded value, table and figure to\n\
         //! results.json, with the seed of the site's build: the numbers are those of the page.\n\n\
         #![allow(unused, clippy::all)]\n\
         use lab::prelude::*;\n\n\
         fn run(lab: &mut lab::Lab) {{\n",
        // An appendix page has no number (redteam-3 D22: not "chapter 0").
        place = if chapter.is_appendix() {
            "appendix".to_string()
        } else {
            format!("chapter {}", chapter.front.number)
        },
        path = chapter.path.display(),
        repository = pin.repository,
        commit = pin.commit,
    );
    for block in &chapter.doc.experiments {
        text.push_str(&format!(
            "    // Block {} ({}:{})\n    lab.begin_block({});\n",
            block.index + 1,
            chapter.path.display(),
            block.line,
            block.index
        ));
        // The parameter of a `param="..."` block, at its default (PARAM_ENV picks another).
        if let Some(p) = &block.options.param {
            text.push_str(&format!(
                "    lab.declare_param({:?}, {:?}_f64);\n",
                p.name,
                p.value(p.default)
            ));
        }
        // Unindented, as written: a line may continue a multi-line string literal.
        for line in &block.lines {
            text.push_str(&line.code);
            text.push('\n');
        }
    }
    text.push_str(&format!(
        "}}\n\nfn main() {{\n    lab::run_standalone({slug:?}, {seed}, \"results.json\", run)\n}}\n",
        slug = chapter.slug,
        seed = chapter.seed(),
    ));
    text
}

/// The build's lock file made the project's: its root package renamed, and the packages it
/// took from paths (`lab`, `attention`, `lab-protocol`: the ones without a `source`) taken
/// from `source` instead. Everything else, registry versions and checksums, stays as built, so
/// `cargo build --locked` resolves exactly what the site compiled.
fn take_home_lock(
    build_lock: &str,
    build_package: &str,
    package: &str,
    source: &str,
) -> Result<String, String> {
    let (header, rest) = build_lock
        .split_once("[[package]]")
        .ok_or("the experiments' lock file lists no package")?;
    let mut blocks: Vec<String> = Vec::new();
    let mut found_root = false;
    for block in rest.split("\n[[package]]") {
        let block = block.trim_matches('\n');
        let name = lock_field(block, "name").ok_or("a package of the lock file has no name")?;
        let edited = if name == build_package {
            found_root = true;
            block.replacen(
                &format!("name = \"{name}\""),
                &format!("name = \"{package}\""),
                1,
            )
        } else if lock_field(block, "source").is_none() {
            let version = lock_field(block, "version").ok_or("a package has no version")?;
            let line = format!("version = \"{version}\"");
            block.replacen(
                &line,
                &format!("{line}\nsource = {}", toml_string(source)),
                1,
            )
        } else {
            block.to_string()
        };
        blocks.push(edited);
    }
    if !found_root {
        return Err(format!(
            "the experiments' lock file has no package `{build_package}`; build again"
        ));
    }
    // Cargo orders packages by name (then version and source, already in order).
    blocks.sort_by(|a, b| lock_field(a, "name").cmp(&lock_field(b, "name")));
    let body: Vec<String> = blocks
        .iter()
        .map(|b| format!("[[package]]\n{b}\n"))
        .collect();
    Ok(format!("{header}{}", body.join("\n")))
}

/// The value of `key = "value"` on a line of a lock file's package block.
fn lock_field<'a>(block: &'a str, key: &str) -> Option<&'a str> {
    block.lines().find_map(|line| {
        line.strip_prefix(key)?
            .trim_start()
            .strip_prefix("= \"")?
            .strip_suffix('"')
    })
}

/// The project as a `.tar.gz` unpacking into `project.name/`; every file stamped with `time`
/// and mode 0644, so the same project always packs to the same bytes.
fn archive(project: &Project, time: u64) -> std::io::Result<Vec<u8>> {
    let gzip = flate2::GzBuilder::new()
        .mtime(u32::try_from(time).unwrap_or(0))
        .write(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gzip);
    for (path, bytes) in &project.files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(time);
        tar.append_data(
            &mut header,
            Path::new(&project.name).join(path),
            bytes.as_slice(),
        )?;
    }
    let mut gzip = tar.into_inner()?;
    gzip.flush()?;
    gzip.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "git+file:///repo?rev=abc#abc";

    /// A build lock as cargo writes it: the generated root package, the path packages and
    /// registry packages (one name in two versions).
    const BUILD_LOCK: &str = "# This file is automatically @generated by Cargo.\n\
        # It is not intended for manual editing.\nversion = 4\n\n\
        [[package]]\nname = \"attention\"\nversion = \"0.1.0\"\ndependencies = [\n \"ndarray\",\n]\n\n\
        [[package]]\nname = \"attnbook-lab-0123456789\"\nversion = \"0.0.0\"\ndependencies = [\n \"lab\",\n]\n\n\
        [[package]]\nname = \"lab\"\nversion = \"0.1.0\"\ndependencies = [\n \"attention\",\n]\n\n\
        [[package]]\nname = \"ndarray\"\nversion = \"0.17.1\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"00\"\n\n\
        [[package]]\nname = \"rand\"\nversion = \"0.8.5\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"01\"\n\n\
        [[package]]\nname = \"rand\"\nversion = \"0.10.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"02\"\n";

    #[test]
    fn the_lock_takes_path_packages_from_git_and_renames_the_root() {
        let lock =
            take_home_lock(BUILD_LOCK, "attnbook-lab-0123456789", "zz-home", SOURCE).unwrap();
        let expected = BUILD_LOCK
            .replace(
                "[[package]]\nname = \"attnbook-lab-0123456789\"\nversion = \"0.0.0\"\ndependencies = [\n \"lab\",\n]\n\n",
                "",
            )
            .replace(
                "version = \"0.1.0\"\n",
                &format!("version = \"0.1.0\"\nsource = \"{SOURCE}\"\n"),
            )
            + "\n[[package]]\nname = \"zz-home\"\nversion = \"0.0.0\"\ndependencies = [\n \"lab\",\n]\n";
        assert_eq!(
            lock, expected,
            "sorted by name, versions of one name kept in order"
        );
    }

    #[test]
    fn a_lock_without_the_build_package_is_refused() {
        let err = take_home_lock(BUILD_LOCK, "attnbook-lab-other", "p", SOURCE).unwrap_err();
        assert!(err.contains("no package `attnbook-lab-other`"), "{err}");
        assert!(take_home_lock("version = 4\n", "p", "q", SOURCE).is_err());
    }

    #[test]
    fn package_names_are_valid_for_any_slug() {
        assert_eq!(package_name("luong"), "attnbook-luong-experiments");
        for slug in ["01-why", "注意力", "A_b c"] {
            let name = package_name(slug);
            assert!(name.starts_with("attnbook-"), "{name}");
            assert!(
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
                "{name}"
            );
        }
    }

    fn chapter() -> Parsed {
        let source = "+++\ntitle = \"带回家\\n的实验\"\nnumber = 3\nseed = 42\n+++\n\n\
            ```rust,experiment\n# let n = 2;\nlet s = \"a\n  b\";\n```\n\n\
            ```rust,experiment,hide\nlab.value(\"n\", n as f64);\n```\n";
        let chapter =
            crate::content::Chapter::parse(Path::new("content/03-home.md"), source.to_string())
                .unwrap();
        Parsed::new(chapter).0
    }

    fn pin() -> Pin {
        Pin {
            repository: "https://github.com/attnbook/attnbook".into(),
            commit: "c0ffee".into(),
            time: 1_700_000_000,
        }
    }

    #[test]
    fn the_program_holds_every_block_in_order_hidden_lines_included() {
        let page = "https://example.org/home/";
        let chapter = chapter();
        let text = program(&chapter, &one_line(&chapter.front.title), page, &pin());
        let at = |needle: &str| {
            text.find(needle)
                .unwrap_or_else(|| panic!("{needle}:\n{text}"))
        };
        assert!(at("\"带回家 的实验\" (chapter 3), https://example.org/home/") < at("fn run"));
        assert!(at("// Block 1 (content/03-home.md:7)") < at("let n = 2;"));
        assert!(at("let s = \"a\n  b\";") < at("// Block 2 (content/03-home.md:13)"));
        assert!(at("lab.begin_block(1);") < at("lab.value(\"n\", n as f64);"));
        assert!(text.contains("lab::run_standalone(\"home\", 42, \"results.json\", run)"));
        assert!(text.contains("//! at https://github.com/attnbook/attnbook commit c0ffee.\n"));
    }

    /// Redteam-3 D22: an appendix page's program names it as an appendix, not "chapter 0".
    #[test]
    fn an_appendix_program_is_not_chapter_zero() {
        let source = "+++\ntitle = \"附\"\n+++\n\n```rust,experiment\nlet n = 1;\n```\n";
        let page = crate::content::Chapter::parse(
            Path::new("content/appendix/notes.md"),
            source.to_string(),
        )
        .unwrap();
        let page = Parsed::new(page).0;
        let text = program(&page, "附", "https://example.org/notes/", &pin());
        assert!(
            text.contains("\"附\" (appendix), https://example.org/notes/"),
            "{text}"
        );
        assert!(!text.contains("chapter 0"), "{text}");
    }

    #[test]
    fn the_manifest_pins_lab_to_the_commit() {
        let text = manifest(
            "attnbook-home-experiments",
            "t",
            "https://e.org/home/",
            &pin(),
            "nalgebra = \"0.33\"\n",
        );
        let parsed: toml::Table = toml::from_str(&text).unwrap();
        let lab = &parsed["dependencies"]["lab"];
        assert_eq!(
            lab["git"].as_str(),
            Some("https://github.com/attnbook/attnbook")
        );
        assert_eq!(lab["rev"].as_str(), Some("c0ffee"));
        assert_eq!(
            parsed["dependencies"]["nalgebra"].as_str(),
            Some("0.33"),
            "the site's own dependencies"
        );
        assert_eq!(
            parsed["package"]["name"].as_str(),
            Some("attnbook-home-experiments")
        );
    }

    /// Redteam-3 D9: whatever the repository string, the manifest and the lock are valid TOML
    /// holding it unchanged (site.toml refuses such URLs; the files never depend on that).
    #[test]
    fn the_repository_is_escaped_as_toml_in_manifest_and_lock() {
        for repository in [
            "https://e.org/a/b\"c",
            "https://e.org/a/b\\c",
            "https://e.org/a\u{ad}\u{200b}\u{301}'",
        ] {
            let pin = Pin {
                repository: repository.into(),
                ..pin()
            };
            let text = manifest("p", "t", "https://e.org/", &pin, "");
            let parsed: toml::Table =
                toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(
                parsed["dependencies"]["lab"]["git"].as_str(),
                Some(repository)
            );
            let source = format!("git+{repository}?rev=c0ffee#c0ffee");
            let lock = take_home_lock(BUILD_LOCK, "attnbook-lab-0123456789", "p", &source).unwrap();
            let parsed: toml::Table =
                toml::from_str(&lock).unwrap_or_else(|e| panic!("{e}\n{lock}"));
            let lab = parsed["package"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["name"].as_str() == Some("lab"))
                .unwrap();
            assert_eq!(lab["source"].as_str(), Some(source.as_str()));
        }
    }

    /// Redteam-3 D7: the pin sees the workspace root's `Cargo.toml` (whose
    /// `[workspace.dependencies]` the runtime inherits) and `Cargo.lock`, not only `crates/`.
    #[test]
    fn an_uncommitted_workspace_manifest_withdraws_the_pin() {
        let repo = tempfile::tempdir().unwrap();
        let root = repo.path();
        for (file, text) in [
            (
                "Cargo.toml",
                "[workspace]\n[workspace.dependencies]\nndarray = \"0.17\"\n",
            ),
            ("Cargo.lock", "version = 4\n"),
            ("crates/lab/Cargo.toml", "[package]\nname = \"lab\"\n"),
        ] {
            std::fs::create_dir_all(root.join(file).parent().unwrap()).unwrap();
            std::fs::write(root.join(file), text).unwrap();
        }
        let git = |args: &[&str]| {
            let status = Command::new("git")
                .arg("-C")
                .arg(root)
                .args(["-c", "user.name=t", "-c", "user.email=t@e.org"])
                .args(args)
                .stdout(Stdio::null())
                .status()
                .unwrap();
            assert!(status.success(), "git {args:?}");
        };
        git(&["init", "-q"]);
        git(&["add", "."]);
        git(&["commit", "-qm", "runtime"]);
        let lab = root.join("crates/lab");
        let url = "https://e.org/r";
        assert!(super::pin(url, &lab, Some(root)).is_ok());
        for file in ["Cargo.toml", "Cargo.lock"] {
            let before = std::fs::read_to_string(root.join(file)).unwrap();
            std::fs::write(root.join(file), format!("{before}# edited\n")).unwrap();
            let err = super::pin(url, &lab, Some(root)).unwrap_err();
            assert!(err.contains("uncommitted changes"), "{file}: {err}");
            assert!(err.contains(file), "{file}: {err}");
            std::fs::write(root.join(file), before).unwrap();
        }
        assert!(super::pin(url, &lab, Some(root)).is_ok(), "clean again");
    }

    #[test]
    fn the_archive_is_the_same_bytes_every_time_and_unpacks_into_the_project() {
        let project = Project {
            name: "p".into(),
            files: vec![
                (PathBuf::from("Cargo.toml"), b"[package]\n".to_vec()),
                (PathBuf::from("src/main.rs"), b"fn main() {}\n".to_vec()),
            ],
        };
        let bytes = archive(&project, 1_700_000_000).unwrap();
        assert_eq!(bytes, archive(&project, 1_700_000_000).unwrap());
        let mut unpacked = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
        let entries: Vec<(String, u64, u32)> = unpacked
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let header = e.header();
                let path = e.path().unwrap().display().to_string();
                (path, header.mtime().unwrap(), header.mode().unwrap())
            })
            .collect();
        assert_eq!(
            entries,
            [
                ("p/Cargo.toml".to_string(), 1_700_000_000, 0o644),
                ("p/src/main.rs".to_string(), 1_700_000_000, 0o644)
            ]
        );
    }

    /// A kept archive is the archive's bytes; a change of any input packs a new one; a damaged
    /// stored file is packed again, never served; pruning keeps only what was used.
    #[test]
    fn kept_archives_are_the_archives_and_follow_their_inputs() {
        let store = tempfile::tempdir().unwrap();
        let mut project = Project {
            name: "p".into(),
            files: vec![(PathBuf::from("src/main.rs"), b"fn main() {}\n".to_vec())],
        };
        let (first, name) = archive_kept(store.path(), &project, 7).unwrap();
        assert_eq!(first, archive(&project, 7).unwrap());
        assert!(store.path().join(&name).is_file());
        assert_eq!(
            archive_kept(store.path(), &project, 7).unwrap(),
            (first.clone(), name.clone())
        );

        let (_, other_time) = archive_kept(store.path(), &project, 8).unwrap();
        assert_ne!(other_time, name);
        project.files[0].1 = b"fn main() { }\n".to_vec();
        let (edited, edited_name) = archive_kept(store.path(), &project, 7).unwrap();
        assert_ne!(edited_name, name);
        assert_eq!(edited, archive(&project, 7).unwrap());

        // Damage the stored archive: the next call packs it again.
        let file = store.path().join(&edited_name);
        let mut stored = std::fs::read(&file).unwrap();
        let last = stored.len() - 1;
        stored[last] ^= 0xff;
        std::fs::write(&file, &stored).unwrap();
        assert_eq!(archive_kept(store.path(), &project, 7).unwrap().0, edited);

        prune_archives(store.path(), std::slice::from_ref(&edited_name));
        let left: Vec<_> = std::fs::read_dir(store.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, [edited_name]);
    }
}
