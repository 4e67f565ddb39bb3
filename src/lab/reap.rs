//! Finding and killing everything an experiment started.
//!
//! Each chapter runs in its own process group, so one `killpg` reaches the chapter process and
//! every descendant that stayed in the group. A descendant that left the group (`setsid`, a
//! double-forking daemon) is still found: on Linux the generator is a *child subreaper*, so such
//! a process is re-parented to the generator when its parent dies instead of escaping to init,
//! and every process of a chapter carries the chapter's run token in its environment
//! (`ATTNBOOK_RUN`). [`kill_tree`] kills the group, then keeps killing and reaping the
//! generator's adopted children that carry the token (or belong to the group) until none is
//! left. [`kill_orphans`] does the same without asking for a token, for when no experiment may
//! be running any more (the end of the lab stage, an interrupt).

use std::process::{Child, Command};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Descriptors of the chapter processes running now (also their process groups): the
/// reaper must leave them to their `Child` handles.
static RUNNING: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Whether `pid` is a chapter process that its own `Child` handle waits for.
fn is_running_chapter(pid: u32) -> bool {
    RUNNING.lock().is_ok_and(|running| running.contains(&pid))
}

/// Spawns a chapter process and registers it under the lock, so the reaper never sees it
/// unregistered.
pub(super) fn spawn_registered(command: &mut Command) -> std::io::Result<Child> {
    let mut running = RUNNING
        .lock()
        .map_err(|_| std::io::Error::other("poisoned"))?;
    let child = command.spawn()?;
    running.push(child.id());
    Ok(child)
}

/// Hands a chapter process that its `Child` handle has waited for over to the reaper.
pub(super) fn unregister(pid: u32) {
    if let Ok(mut running) = RUNNING.lock() {
        running.retain(|&p| p != pid);
    }
}

/// The environment variable that marks every process of one chapter run.
pub(super) const RUN_TOKEN_ENV: &str = "ATTNBOOK_RUN";

/// Makes this process adopt the orphaned descendants of its children (Linux; elsewhere the
/// process group is the only net).
pub(super) fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only sets a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Kills process group `group` (the chapter process is its leader) and every adopted
/// descendant that carries `token`, reaping them, until none is left or `patience` runs out.
/// The chapter process itself must already have been waited for.
pub(super) fn kill_tree(group: u32, token: &str, patience: Duration) {
    let started = Instant::now();
    loop {
        let group_gone = !signal_group(group, libc::SIGKILL);
        let adopted: Vec<u32> = adopted_children()
            .into_iter()
            .filter(|c| c.group == group || has_token(c.pid, token))
            .map(|c| c.pid)
            .collect();
        for &pid in &adopted {
            kill_and_reap(pid);
        }
        if (group_gone && adopted.is_empty()) || started.elapsed() > patience {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Kills and reaps every adopted child, whatever it carries (their descendants are adopted in
/// turn and go in the next round). Only for when no experiment may run any more.
pub fn kill_orphans(except: &[u32]) {
    let started = Instant::now();
    loop {
        let adopted: Vec<u32> = adopted_children()
            .into_iter()
            .map(|c| c.pid)
            .filter(|pid| !except.contains(pid))
            .collect();
        if adopted.is_empty() || started.elapsed() > Duration::from_secs(2) {
            return;
        }
        for pid in adopted {
            kill_and_reap(pid);
        }
    }
}

/// Sends `signal` to a process group; false when the group no longer exists.
pub fn signal_group(group: u32, signal: libc::c_int) -> bool {
    let Ok(group) = libc::pid_t::try_from(group) else {
        return false;
    };
    // SAFETY: sending a signal has no memory-safety preconditions.
    unsafe { libc::kill(-group, signal) == 0 }
}

fn kill_and_reap(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: `pid` is our own child (its parent is this process), so it cannot be reaped and
    // reused behind our back: nobody else waits for it. Signals and waitpid on it are sound.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
    }
}

struct Process {
    pid: u32,
    group: u32,
}

/// This process's children other than those `std::process::Child` handles wait for: read from
/// `/proc` (no children are listed where it is missing).
fn adopted_children() -> Vec<Process> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (ppid, group) = parent_and_group(&stat)?;
            (ppid == me).then_some(Process { pid, group })
        })
        .filter(|p| !is_running_chapter(p.pid))
        .collect()
}

/// `ppid` and `pgrp` from a `/proc/PID/stat` line: fields 4 and 5, counted after the command
/// name, which is in parentheses and may itself contain spaces and parentheses.
fn parent_and_group(stat: &str) -> Option<(u32, u32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let _state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    Some((ppid, group))
}

fn has_token(pid: u32, token: &str) -> bool {
    let wanted = format!("{RUN_TOKEN_ENV}={token}");
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|env| env.split(|&b| b == 0).any(|var| var == wanted.as_bytes()))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        assert_eq!(parent_and_group("42 (sleep) S 7 42 42 0 -1"), Some((7, 42)));
        assert_eq!(parent_and_group("42 (a) b (c) R 9 10 10 0"), Some((9, 10)));
        assert_eq!(parent_and_group("garbage"), None);
    }
}
