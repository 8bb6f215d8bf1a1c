//! What a project's manifests may do before the person trusts the folder, and what a
//! project's settings may name as manifests after.
//!
//! In an untrusted folder the workspace manifests' tools are shown, but:
//! - a tool bound to a command is not loaded, and a `prepare` command is dropped: both
//!   would run the project's code;
//! - every call of the others asks ([`super::tool`]: even when the tool they run would
//!   not, as `read_file` or a read-only shell command does not), so a `read_secret` bound
//!   to `run_shell_command` with `cat ~/.ssh/id_rsa` as fixed arguments never runs
//!   unasked, and the listing's CONFIRM column says so;
//! - a tool whose `when` clause reads `env.*` or `config.*` is not loaded: whether it is
//!   offered would tell the project, a clause per character, what the person's
//!   environment and settings hold.

use std::path::Path;

use toolbelt_config::settings::NamedBy;
use toolbelt_core::ToolEnvironment;

use super::binding::Target;
use super::manifest::{Scope, ToolEntry};

/// Context keys a project's `when` clause may not read before trust: their values are
/// the person's (environment variables, settings that may hold `$VAR` values).
const PRIVATE_KEY_PREFIXES: [&str; 2] = ["env.", "config."];

/// Why a `tools.manifests` entry is not read: a project's settings wrote it (see
/// `toolbelt_config::settings::NamedBy`) and it leads out of the project. `None` when it
/// may be read (the person's own entries may name anything).
pub(super) fn outside_the_naming_project(
    env: &ToolEnvironment,
    project: Option<&Path>,
    entry: &str,
    path: &Path,
) -> Option<String> {
    if env.settings.named_by(&["tools", "manifests"]) == NamedBy::Person {
        return None;
    }
    let inside = project.is_some_and(|project| {
        match (project.canonicalize(), path.canonicalize()) {
            (Ok(project), Ok(path)) => path.starts_with(project),
            // Not there (yet): judged by its words, `..` and absolute paths are out.
            _ => {
                !Path::new(entry).is_absolute()
                    && !Path::new(entry)
                        .components()
                        .any(|c| c == std::path::Component::ParentDir)
            }
        }
    });
    (!inside).then(|| {
        format!(
            "tools.manifests entry \"{entry}\": the project's settings wrote it, and it leads outside the project ({}); a project's settings name manifests inside it only, so nothing was loaded from it",
            path.display()
        )
    })
}

/// Drops what would run project code, or read the person's values through `when`,
/// from the workspace manifests of an untrusted folder; the rest load and ask at every
/// call (the tool sees its scope and the folder's trust, see [`super::tool`]).
pub(super) fn apply_untrusted(
    project: &Path,
    tools: &mut Vec<ToolEntry>,
    warnings: &mut Vec<String>,
) {
    let mut skipped = Vec::new();
    let mut probing = Vec::new();
    let mut unprepared = Vec::new();
    tools.retain_mut(|tool| {
        if tool.scope != Scope::Workspace {
            return true;
        }
        if matches!(tool.binding.target, Target::Command { .. }) {
            skipped.push(tool.name.clone());
            return false;
        }
        let reads_private = tool.when.as_ref().is_some_and(|w| {
            w.keys()
                .iter()
                .any(|k| PRIVATE_KEY_PREFIXES.iter().any(|p| k.starts_with(p)))
        });
        if reads_private {
            probing.push(tool.name.clone());
            return false;
        }
        if tool.binding.prepare.take().is_some() {
            unprepared.push(tool.name.clone());
        }
        true
    });
    let mut what = Vec::new();
    if !skipped.is_empty() {
        what.push(format!(
            "these tools bound to a command were not loaded: {}",
            skipped.join(", ")
        ));
    }
    if !probing.is_empty() {
        what.push(format!(
            "these tools whose `when` clause reads env.* or config.* were not loaded: {}",
            probing.join(", ")
        ));
    }
    if !unprepared.is_empty() {
        what.push(format!(
            "these tools load without their prepare command: {}",
            unprepared.join(", ")
        ));
    }
    if what.is_empty() {
        return;
    }
    warnings.push(format!(
        "{}: this folder is not trusted, so the commands of the tool manifests inside it (.qwen/tools, and tools.manifests entries there) do not run, and each call of their other tools asks; {}. To use them, trust the folder with `toolbelt trust {}` (or, for one run, pass --trust-workspace or set TOOLBELT_TRUST_WORKSPACE=1).",
        project.display(),
        what.join("; "),
        project.display()
    ));
}
