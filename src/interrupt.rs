//! Ctrl-C, SIGTERM, SIGHUP: stop cleanly, lose nothing.
//!
//! The output directory is only swapped in at the very end of a build, so an interrupted build
//! never damages `public/`. What an interrupt could leave behind is a half-written staging
//! directory and running experiments; both register here while they exist, and the handler
//! removes the directories and kills every experiment process group, and every process the
//! experiments started that was adopted by this one, before exiting with status 130. The same
//! happens on SIGTERM (CI cancelling a job, `timeout`) and SIGHUP (a closed terminal).

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

static STAGING: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
static GROUPS: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());
static CRITICAL: Mutex<()> = Mutex::new(());
/// Set by the handler first thing: the process is about to exit with 130.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Runs `f` with interrupts deferred until it returns.
pub fn critical<T>(f: impl FnOnce() -> T) -> T {
    let _guard = CRITICAL.lock();
    f()
}

/// Installs the handler (once, from `main`). `kill` receives the registered process groups
/// and must kill them and whatever they started (the experiment stage provides it:
/// `lab::kill_everything`), so that this module, below every stage, knows nothing of how.
pub fn install(kill: fn(&[u32])) {
    let _ = ctrlc::set_handler(move || {
        INTERRUPTED.store(true, Ordering::SeqCst);
        let _critical = CRITICAL.lock();
        // Whatever goes wrong in the clean-up (a closed standard error: the parent that read
        // it was killed first), the process exits: [`wait_if_interrupted`] holds the main
        // thread until it does, so a handler that died would hang the command for good.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let groups: Vec<u32> = GROUPS
                .lock()
                .map(|groups| groups.iter().copied().collect())
                .unwrap_or_default();
            kill(&groups);
            if let Ok(dirs) = STAGING.lock() {
                for dir in dirs.iter() {
                    let _ = std::fs::remove_dir_all(dir);
                }
            }
            let _ = writeln!(
                std::io::stderr(),
                "\ninterrupted: nothing was written, the previous output is untouched"
            );
        }));
        std::process::exit(130);
    });
}

/// Removes its entry when dropped.
#[must_use = "the registration ends when the guard is dropped"]
pub struct Registered {
    entry: Entry,
}

enum Entry {
    Dir(PathBuf),
    Group(u32),
}

/// Called at the one exit point: once an interrupt is being handled, the handler exits the
/// process (status 130) after cleaning up, so the command must not finish first with the
/// errors the interrupt caused (killed experiments) and another status.
pub fn wait_if_interrupted() {
    while INTERRUPTED.load(Ordering::SeqCst) {
        std::thread::park_timeout(std::time::Duration::from_millis(100));
    }
}

/// Registers a staging directory to delete on interrupt.
pub fn staging_dir(path: PathBuf) -> Registered {
    if let Ok(mut dirs) = STAGING.lock() {
        dirs.insert(path.clone());
    }
    Registered {
        entry: Entry::Dir(path),
    }
}

/// Registers a process group (an experiment process and what it started) to kill on interrupt.
pub fn process_group(group: u32) -> Registered {
    if let Ok(mut groups) = GROUPS.lock() {
        groups.insert(group);
    }
    Registered {
        entry: Entry::Group(group),
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        match &self.entry {
            Entry::Dir(path) => {
                if let Ok(mut dirs) = STAGING.lock() {
                    dirs.remove(path);
                }
            }
            Entry::Group(group) => {
                if let Ok(mut groups) = GROUPS.lock() {
                    groups.remove(group);
                }
            }
        }
    }
}
