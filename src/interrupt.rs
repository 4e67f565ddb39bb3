//! Ctrl-C: stop cleanly, lose nothing.
//!
//! The output directory is only swapped in at the very end of a build, so an interrupted build
//! never damages `public/`. What an interrupt could leave behind is a half-written staging
//! directory and running experiment processes; both register here while they exist, and the
//! handler removes and kills them before exiting with status 130.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Mutex;

static STAGING: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
static CHILDREN: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());
static CRITICAL: Mutex<()> = Mutex::new(());

/// Runs `f` with interrupts deferred until it returns.
pub fn critical<T>(f: impl FnOnce() -> T) -> T {
    let _guard = CRITICAL.lock();
    f()
}

/// Installs the handler (once, from `main`).
pub fn install() {
    let _ = ctrlc::set_handler(|| {
        let _critical = CRITICAL.lock();
        if let Ok(children) = CHILDREN.lock() {
            for &pid in children.iter() {
                kill(pid);
            }
        }
        if let Ok(dirs) = STAGING.lock() {
            for dir in dirs.iter() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
        eprintln!("\ninterrupted: nothing was written, the previous output is untouched");
        std::process::exit(130);
    });
}

#[cfg(unix)]
fn kill(pid: u32) {
    // SAFETY: sending a signal has no memory-safety preconditions.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
    }
}

#[cfg(not(unix))]
fn kill(_pid: u32) {}

/// Removes its entry when dropped.
#[must_use = "the registration ends when the guard is dropped"]
pub struct Registered {
    entry: Entry,
}

enum Entry {
    Dir(PathBuf),
    Child(u32),
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

/// Registers a child process to kill on interrupt.
pub fn child(pid: u32) -> Registered {
    if let Ok(mut children) = CHILDREN.lock() {
        children.insert(pid);
    }
    Registered {
        entry: Entry::Child(pid),
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
            Entry::Child(pid) => {
                if let Ok(mut children) = CHILDREN.lock() {
                    children.remove(pid);
                }
            }
        }
    }
}
