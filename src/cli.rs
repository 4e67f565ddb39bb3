//! The command line: clap derive, turned into a typed plan for each command.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

use crate::lab::LabPlan;
use crate::serve::ServePlan;
use crate::site::{BuildPlan, InitPlan, NewPlan, VerifyPlan};

/// attnbook: builds an executable, verified article series on attention mechanisms.
///
/// Every command works on the site in the current directory (site.toml, content/, optional
/// templates/ and static/), or on --root DIR.
#[derive(Debug, Parser)]
#[command(name = "attnbook", version, about, long_about = None)]
pub struct Cli {
    /// The site directory.
    #[arg(long, global = true, default_value = ".")]
    pub root: PathBuf,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build the site into the output directory (replaced only by a complete build).
    Build(BuildArgs),
    /// Rerun every experiment and check every quoted number and pinned output.
    ///
    /// Exit status: 0 clean, 1 drift, 2 error.
    Verify(VerifyArgs),
    /// Build, serve the site on 127.0.0.1, rebuild on every change and reload open pages.
    Serve(ServeArgs),
    /// Check links, anchors, quotes and math without running experiments (exit 1 on problems).
    Check,
    /// Scaffold a new chapter `content/NN-SLUG.md` with the next number.
    New(NewArgs),
    /// Create a new site in DIR (default: --root): site.toml, a first chapter, .gitignore and
    /// a GitHub Pages workflow. It builds with --strict and verifies as it stands.
    Init(InitArgs),
}

/// Flags of `init`.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The directory of the new site (created if missing; default: --root, `.`).
    pub dir: Option<PathBuf>,
    /// The language of the site and its first chapter.
    #[arg(long, default_value = "zh-CN", value_parser = clap::builder::PossibleValuesParser::new(crate::site::INIT_LANGUAGES))]
    pub language: String,
    /// Write into a non-empty directory (files of the same names are replaced).
    #[arg(long)]
    pub force: bool,
}

/// Flags of `serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Port to listen on.
    #[arg(long, default_value_t = 1111)]
    pub port: u16,
    /// Address to bind (the default serves only this machine).
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: std::net::IpAddr,
    /// Output directory (relative to the site root).
    #[arg(long, default_value = "public")]
    pub out: PathBuf,
    /// Replace a non-empty output directory that no attnbook build made (its files are lost).
    ///
    /// The site root, a directory containing it, a file, and anything inside the site's
    /// content/, static/, templates/ or .attnbook/ are refused even with --force.
    #[arg(long)]
    pub force: bool,
    /// Build chapters marked `draft = true` too.
    #[arg(long)]
    pub drafts: bool,
    /// Print the wall time of every stage of every rebuild.
    #[arg(long)]
    pub timings: bool,
}

/// Flags of `new`.
#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// The chapter's slug: lowercase ASCII words joined by `-` (it becomes the URL).
    pub slug: String,
    /// The chapter's title (defaults to the slug).
    #[arg(long)]
    pub title: Option<String>,
}

/// Flags of `build`.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// Output directory (relative to the site root).
    #[arg(long, default_value = "public")]
    pub out: PathBuf,
    /// Replace a non-empty output directory that no attnbook build made (its files are lost).
    ///
    /// The site root, a directory containing it, a file, and anything inside the site's
    /// content/, static/, templates/ or .attnbook/ are refused even with --force.
    #[arg(long)]
    pub force: bool,
    /// Override `base_url` from site.toml (e.g. the GitHub Pages URL).
    #[arg(long, value_parser = parse_base_url)]
    pub base_url: Option<String>,
    /// Override `repository` from site.toml: the git URL the take-home downloads pin
    /// (the Pages workflow passes the repository it runs in).
    #[arg(long, value_parser = parse_repository)]
    pub repository: Option<String>,
    /// Build chapters marked `draft = true` too.
    #[arg(long)]
    pub drafts: bool,
    /// Treat warnings (drifted quotes) as failures.
    #[arg(long)]
    pub strict: bool,
    /// Print the wall time of every build stage.
    #[arg(long)]
    pub timings: bool,
    /// Experiment flags.
    #[command(flatten)]
    pub lab: LabArgs,
}

/// Flags of `verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Rewrite drifted quoted numbers and pinned outputs in the Markdown (a bound or band quote
    /// gets the rerun number; its `>=x`, `<=x` or `lo..hi` is never rewritten).
    #[arg(long)]
    pub fix: bool,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Only these chapters (slugs), rerunning them and the chapters their quotes read; all
    /// when none are given.
    pub chapters: Vec<String>,
    /// Experiment flags.
    #[command(flatten)]
    pub lab: LabArgs,
}

/// Experiment flags shared by `build` and `verify`.
#[derive(Debug, clap::Args)]
pub struct LabArgs {
    /// Ignore cached experiment results: compile and run everything again.
    #[arg(long)]
    pub rerun: bool,
    /// Chapters whose experiments run at once (default: number of CPUs).
    #[arg(long)]
    pub jobs: Option<usize>,
}

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Lines for people.
    Text,
    /// JSON for CI tools.
    Json,
}

/// `--base-url` is checked like `base_url` in site.toml, before anything is built: clap names
/// the flag in the message and exits with status 2.
fn parse_base_url(url: &str) -> Result<String, String> {
    crate::config::check_base_url(url)
        .map(|()| url.to_string())
        .map_err(|bad| format!("the URL {}; {}", bad.problem, bad.help))
}

/// `--repository` is checked like `repository` in site.toml.
fn parse_repository(url: &str) -> Result<String, String> {
    crate::config::check_repository(url)
        .map(|()| url.to_string())
        .map_err(|problem| format!("the URL {problem}"))
}

impl LabArgs {
    fn plan(&self) -> LabPlan {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        LabPlan {
            rerun: self.rerun,
            jobs: self.jobs.unwrap_or(cpus).max(1),
            timeout: Duration::from_secs(120),
            output_cap: 256 * 1024,
            progress: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        }
    }
}

/// A command turned into what to do.
#[derive(Debug)]
pub enum Plan {
    /// Build the site.
    Build(BuildPlan),
    /// Verify the quotes.
    Verify(VerifyPlan),
    /// Serve with live reload.
    Serve(ServePlan),
    /// Check without running experiments.
    Check(PathBuf),
    /// Scaffold a chapter.
    New(NewPlan),
    /// Create a site.
    Init(InitPlan),
}

impl Cli {
    /// Resolves paths and defaults into a plan.
    pub fn into_plan(self) -> Plan {
        let root = self.root;
        match self.command {
            Command::Build(args) => Plan::Build(BuildPlan {
                out: root.join(&args.out),
                base_url: args.base_url,
                repository: args.repository,
                drafts: args.drafts,
                strict: args.strict,
                timings: args.timings,
                recycle_output: true,
                force: args.force,
                lab: args.lab.plan(),
                root,
            }),
            Command::Serve(args) => Plan::Serve(ServePlan {
                build: BuildPlan {
                    out: root.join(&args.out),
                    base_url: Some("/".to_string()),
                    repository: None,
                    drafts: args.drafts,
                    strict: false,
                    timings: args.timings,
                    recycle_output: true,
                    force: args.force,
                    lab: LabArgs {
                        rerun: false,
                        jobs: None,
                    }
                    .plan(),
                    root,
                },
                addr: std::net::SocketAddr::new(args.bind, args.port),
            }),
            Command::Check => Plan::Check(root),
            Command::Init(args) => Plan::Init(InitPlan {
                dir: args.dir.map_or(root, |dir| dir),
                language: args.language,
                force: args.force,
            }),
            Command::New(args) => Plan::New(NewPlan {
                title: args.title.unwrap_or_else(|| args.slug.clone()),
                slug: args.slug,
                root,
            }),
            Command::Verify(args) => Plan::Verify(VerifyPlan {
                fix: args.fix,
                chapters: args.chapters,
                json: args.format == Format::Json,
                lab: args.lab.plan(),
                root,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn build_flags_become_a_plan() {
        let cli = Cli::parse_from([
            "attnbook", "--root", "site", "build", "--strict", "--jobs", "3", "--out", "o",
        ]);
        let Plan::Build(plan) = cli.into_plan() else {
            panic!("not a build")
        };
        assert!(plan.strict && !plan.drafts);
        assert_eq!(plan.lab.jobs, 3);
        assert_eq!(plan.out, PathBuf::from("site/o"));
        assert!(!plan.force);
    }

    #[test]
    fn force_reaches_the_build_plan_of_build_and_serve() {
        let build = Cli::parse_from(["attnbook", "build", "--force"]).into_plan();
        assert!(matches!(build, Plan::Build(plan) if plan.force));
        let serve = Cli::parse_from(["attnbook", "serve", "--force"]).into_plan();
        assert!(matches!(serve, Plan::Serve(plan) if plan.build.force));
    }

    #[test]
    fn a_bad_base_url_flag_is_a_usage_error_naming_the_flag() {
        for url in [
            "user.github.io/repo/",
            "https://a.b/repo/?q=1#top",
            "https:///x",
        ] {
            let error = Cli::try_parse_from(["attnbook", "build", "--base-url", url]).unwrap_err();
            assert_eq!(error.exit_code(), 2, "{url}");
            let message = error.to_string();
            assert!(message.contains("--base-url"), "{message}");
        }
        let cli = Cli::parse_from(["attnbook", "build", "--base-url", "https://a.b/repo/"]);
        let Plan::Build(plan) = cli.into_plan() else {
            panic!("not a build")
        };
        assert_eq!(plan.base_url.as_deref(), Some("https://a.b/repo/"));
    }

    /// The Pages workflow's `--repository`: checked like site.toml's, then in the plan.
    #[test]
    fn the_repository_flag_is_checked_and_reaches_the_plan() {
        let error =
            Cli::try_parse_from(["attnbook", "build", "--repository", "https://e.org/a\"b"])
                .unwrap_err();
        assert_eq!(error.exit_code(), 2);
        assert!(error.to_string().contains("--repository"), "{error}");
        let cli = Cli::parse_from([
            "attnbook",
            "build",
            "--repository",
            "https://github.com/me/fork",
        ]);
        let Plan::Build(plan) = cli.into_plan() else {
            panic!("not a build")
        };
        assert_eq!(
            plan.repository.as_deref(),
            Some("https://github.com/me/fork")
        );
    }
}
