//! Confines an experiment process before any block runs: it may read anything, but write only
//! inside its working directory (the sandbox the generator gives it), the directory of its
//! results file, and `/dev/null`. Uses Landlock (Linux 5.13+) through the `landlock` crate, in
//! best-effort mode: on an older kernel the process runs unconfined and says so.

use std::path::Path;

use landlock::{
    ABI, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, path_beneath_rules,
};

/// How far the confinement went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Confinement {
    /// Writes outside the allowed directories fail.
    Enforced,
    /// Some restrictions apply (older kernel ABI).
    Partial,
    /// The kernel has no Landlock: nothing is restricted.
    Unavailable,
}

/// Restricts writes of this process (and its children) to `sandbox`, `results_dir` and
/// `/dev/null`.
pub(crate) fn confine(sandbox: &Path, results_dir: &Path) -> Result<Confinement, String> {
    let abi = ABI::V5;
    let writes = AccessFs::from_write(abi);
    let status = Ruleset::default()
        .handle_access(writes)
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules([sandbox, results_dir], writes)))
        .and_then(|r| r.add_rules(path_beneath_rules(["/dev/null"], writes)))
        .and_then(|r| r.restrict_self())
        .map_err(|e| format!("cannot confine the experiment: {e}"))?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => Confinement::Enforced,
        RulesetStatus::PartiallyEnforced => Confinement::Partial,
        RulesetStatus::NotEnforced => Confinement::Unavailable,
    })
}
