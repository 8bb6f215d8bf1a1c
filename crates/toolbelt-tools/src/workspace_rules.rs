//! "Allow always for this workspace": the permission rule an approval stands for, and
//! writing it into the project's `.qwen/settings.json` `permissions.allow`.
//!
//! The rule is written in the syntax [`toolbelt_engine::rules`] reads back
//! (`run_shell_command(git *)`, `edit`, `web_fetch(domain:example.com)`, `mcp__github`),
//! and every rule made here is parsed again before it is offered, so a root command or
//! host that would widen it (`*`, parentheses, spaces) gives no rule at all.
//!
//! The file is edited as JSONC through a concrete syntax tree (`jsonc-parser`), so the
//! person's comments, order and indentation stay as they were; it is first read with the
//! settings loader's own parser ([`toolbelt_config::settings::parse_settings_text`]): a
//! file the loader would refuse is refused here too, untouched, instead of being
//! "repaired". The new text replaces the old through the shared atomic write
//! (`atomic_write.rs`).
//!
//! A repository is not trusted to point the write elsewhere: `.qwen` or
//! `.qwen/settings.json` being a symbolic link (or the file having other hard links, or
//! not being a regular file) is refused, and the file is opened with `O_NOFOLLOW`.
//! Note that in a folder the person has not trusted the loader ignores the workspace's
//! `permissions.allow` (see `settings/untrusted.rs`); the rule is still written and
//! applies once the folder is trusted.

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstRootNode};
use serde_json::Value;
use toolbelt_core::ConfirmationDetails;
use toolbelt_engine::rules::RuleVocabulary;
use toolbelt_engine::scheduler::ApprovalRequest;
use toolbelt_engine::{rules::Rule, rules::is_mcp_server_rule};

/// The workspace settings file, relative to the project root.
pub const WORKSPACE_SETTINGS: &str = ".qwen/settings.json";

/// What [`allow_in_workspace`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowOutcome {
    /// The settings file.
    pub path: PathBuf,
    /// Rules written now, in order.
    pub added: Vec<String>,
    /// Rules the file already had (same tools and specifier), not written twice.
    pub already_present: Vec<String>,
}

/// Why the rule was not written. The file is untouched in every case.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceRulesError {
    /// `.qwen` or the settings file is a symbolic link.
    #[error("{path} is a symbolic link; not writing through it")]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// The path exists but is not what it should be (a directory for `.qwen`, a regular
    /// file with no other hard link for the settings).
    #[error("{path} {what}; not writing to it")]
    Unexpected {
        /// The path.
        path: PathBuf,
        /// What is wrong, as a phrase.
        what: &'static str,
    },
    /// The file is not JSONC the settings loader reads, or its `permissions.allow` is
    /// not a list.
    #[error("{path} is not valid settings ({reason}); fix it first, it was left as it is")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        reason: String,
    },
    /// A rule that does not parse back to itself.
    #[error("'{0}' is not a permission rule")]
    BadRule(String),
    /// Reading, creating or replacing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The rules "allow always for this workspace" writes for `request`; empty when nothing
/// may be remembered (`may_always_allow` is false, a plan, a shell call without root
/// commands, a value that would make a wider rule than it says).
///
/// - shell: `run_shell_command(<root> *)` for each root command still needing approval
///   (the same scope as "allow for this session" for the shell);
/// - file changes and other tools: the registered tool name (`edit`, `write_file`);
/// - `web_fetch`: `web_fetch(domain:<host>)` of the URL;
/// - MCP: `mcp__<server>` (every tool of the server) when `server_wide`, else the tool's
///   registered name (`mcp__<server>__<tool>`).
///
/// `vocabulary` is the session's (every alias its rules read): a rule is written only
/// when, read back with it, it names exactly the tool asked about.
pub fn rules_for(
    request: &ApprovalRequest,
    server_wide: bool,
    vocabulary: &RuleVocabulary,
) -> Vec<String> {
    if !request.may_always_allow {
        return Vec::new();
    }
    let tool = request.tool.as_str();
    let candidates: Vec<String> = match &request.details {
        ConfirmationDetails::Plan { .. } => Vec::new(),
        ConfirmationDetails::Exec { root_commands, .. } => {
            if root_commands.is_empty()
                || !root_commands
                    .iter()
                    .all(|r| plain_word(r) && nameable_program(r))
            {
                Vec::new()
            } else {
                root_commands
                    .iter()
                    .map(|r| format!("{tool}({r} *)"))
                    .collect()
            }
        }
        ConfirmationDetails::Mcp { server, .. } => {
            let server_rule = format!(
                "mcp__{}",
                toolbelt_engine::registry::sanitize_tool_name(server)
            );
            if server_wide
                && is_mcp_server_rule(&server_rule)
                && tool
                    .strip_prefix(server_rule.as_str())
                    .is_some_and(|rest| rest.starts_with("__"))
            {
                return vec![server_rule];
            }
            vec![tool.to_string()]
        }
        ConfirmationDetails::Info { urls, .. } if tool == "web_fetch" => {
            let hosts: Vec<String> = urls
                .iter()
                .filter_map(|u| url::Url::parse(u).ok())
                .filter_map(|u| u.host_str().map(str::to_ascii_lowercase))
                .collect();
            match hosts.first() {
                Some(host) if hosts.iter().all(|h| h == host) && plain_word(host) => {
                    vec![format!("{tool}(domain:{host})")]
                }
                _ => Vec::new(),
            }
        }
        _ => vec![tool.to_string()],
    };
    // Each rule must name exactly this tool when read back: a tool whose name is an
    // alias (`Edit`, `Bash`) would otherwise approve more than was asked.
    candidates
        .into_iter()
        .filter(|text| {
            Rule::parse(text, vocabulary).is_some_and(|r| {
                r.tools == [tool] || (is_mcp_server_rule(&r.tools[0]) && r.tools.len() == 1)
            })
        })
        .collect()
}

/// Whether `run_shell_command(<root> *)` approves only the program `root`: not a
/// wrapper, shell, `eval` or interpreter (which run whatever they are given, so their
/// rule would approve everything), and a name the shell tool would itself remember
/// (`command_parse::runs::rule_root`), so a path stays a path.
fn nameable_program(root: &str) -> bool {
    let parsed = crate::shell::command_parse::parse(root);
    parsed.commands.len() == 1
        && crate::shell::command_parse::runs::rule_root(&parsed.commands[0]).as_deref()
            == Some(root)
}

/// A root command or host that stays one literal word inside a rule.
fn plain_word(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '+' | '/' | '@' | ':')
        })
}

/// Adds `rules` to `<project>/.qwen/settings.json` `permissions.allow`, creating the
/// directory and the file when missing, skipping rules the list already holds, keeping
/// the rest of the file as written (comments included), and replacing the file
/// atomically. Refuses, leaving everything as it was, when the file is not valid
/// settings JSONC or when `.qwen` or the file is a link (see the module notes).
pub fn allow_in_workspace(
    project: &Path,
    rules: &[String],
) -> Result<AllowOutcome, WorkspaceRulesError> {
    for rule in rules {
        if !Rule::is_well_formed(rule) {
            return Err(WorkspaceRulesError::BadRule(rule.clone()));
        }
    }
    let dir = project.join(".qwen");
    let path = project.join(WORKSPACE_SETTINGS);
    ensure_settings_dir(&dir)?;
    let original = read_settings(&path)?;
    let text = original.strip_prefix('\u{feff}').unwrap_or(&original);
    let invalid = |reason: &str| WorkspaceRulesError::Invalid {
        path: path.clone(),
        reason: reason.to_string(),
    };
    let existing = allowed_now(text).map_err(|reason| invalid(&reason))?;
    let mut outcome = AllowOutcome {
        path: path.clone(),
        added: Vec::new(),
        already_present: Vec::new(),
    };
    for rule in rules {
        let present = existing
            .iter()
            .chain(&outcome.added)
            .any(|e| same_rule(e, rule));
        if present {
            outcome.already_present.push(rule.clone());
        } else {
            outcome.added.push(rule.clone());
        }
    }
    if outcome.added.is_empty() {
        return Ok(outcome);
    }
    let mut updated = with_rules(text, &outcome.added).map_err(|reason| invalid(&reason))?;
    if original.starts_with('\u{feff}') {
        updated.insert(0, '\u{feff}');
    }
    crate::atomic_write::replace_with(&path, |f| f.write_all(updated.as_bytes())).map_err(
        |source| WorkspaceRulesError::Io {
            path: path.clone(),
            source,
        },
    )?;
    Ok(outcome)
}

/// `.qwen`, created when missing; a link or anything but a directory is refused.
fn ensure_settings_dir(dir: &Path) -> Result<(), WorkspaceRulesError> {
    let io = |source| WorkspaceRulesError::Io {
        path: dir.to_path_buf(),
        source,
    };
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => Err(WorkspaceRulesError::Symlink {
            path: dir.to_path_buf(),
        }),
        Ok(meta) if !meta.is_dir() => Err(WorkspaceRulesError::Unexpected {
            path: dir.to_path_buf(),
            what: "is not a directory",
        }),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir(dir).map_err(io),
        Err(e) => Err(io(e)),
    }
}

/// The rules `permissions.allow` of the settings `text` holds; `Err` says why the text
/// is no settings file this can edit.
fn allowed_now(text: &str) -> Result<Vec<String>, String> {
    let value = toolbelt_config::settings::parse_settings_text(text.as_bytes())
        .map_err(|e| e.to_string())?;
    let Value::Object(root) = &value else {
        return Err("the top level is not an object".into());
    };
    match root.get("permissions") {
        None => Ok(Vec::new()),
        Some(Value::Object(p)) => match p.get("allow") {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => Ok(items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()),
            Some(_) => Err("`permissions.allow` is not a list".into()),
        },
        Some(_) => Err("`permissions` is not an object".into()),
    }
}

/// The settings `text` with `added` appended to `permissions.allow` through its syntax
/// tree (comments and layout kept), ending with a line break. What is returned reads
/// back as settings with the new rules; anything else is a bug here, and an `Err`.
fn with_rules(text: &str, added: &[String]) -> Result<String, String> {
    let cst = CstRootNode::parse(text, &ParseOptions::default()).map_err(|e| e.to_string())?;
    let object = cst.object_value_or_set();
    let permissions = object
        .object_value_or_create("permissions")
        .ok_or("`permissions` is not an object")?;
    let allow = permissions
        .array_value_or_create("allow")
        .ok_or("`permissions.allow` is not a list")?;
    for rule in added {
        allow.append(CstInputValue::String(rule.clone()));
    }
    let mut updated = cst.to_string();
    if !updated.ends_with('\n') {
        updated.push('\n');
    }
    let check = toolbelt_config::settings::parse_settings_text(updated.as_bytes())
        .map_err(|e| format!("the edited text did not parse: {e}"))?;
    let written: Vec<&str> = check
        .pointer("/permissions/allow")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !added.iter().all(|r| written.contains(&r.as_str())) {
        return Err("the edited text lost the new rules".into());
    }
    Ok(updated)
}

/// The file's text ("" when it does not exist), refusing links and anything but a
/// regular file with one name.
fn read_settings(path: &Path) -> Result<String, WorkspaceRulesError> {
    let io = |source| WorkspaceRulesError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(e) => return Err(io(e)),
    };
    let unexpected = |what| WorkspaceRulesError::Unexpected {
        path: path.to_path_buf(),
        what,
    };
    if meta.file_type().is_symlink() {
        return Err(WorkspaceRulesError::Symlink {
            path: path.to_path_buf(),
        });
    }
    if !meta.is_file() {
        return Err(unexpected("is not a regular file"));
    }
    if meta.nlink() > 1 {
        return Err(unexpected("has other hard links"));
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(io)?;
    String::from_utf8(bytes).map_err(|_| WorkspaceRulesError::Invalid {
        path: path.to_path_buf(),
        reason: "the file is not UTF-8".to_string(),
    })
}

/// Whether two rule texts say the same (same tools, same specifier): `Bash(git *)` and
/// `run_shell_command(git *)` are one rule.
fn same_rule(a: &str, b: &str) -> bool {
    let vocabulary = crate::rule_vocabulary();
    match (Rule::parse(a, &vocabulary), Rule::parse(b, &vocabulary)) {
        (Some(a), Some(b)) => a.tools == b.tools && a.specifier == b.specifier,
        _ => a.trim() == b.trim(),
    }
}

#[cfg(test)]
mod tests;
