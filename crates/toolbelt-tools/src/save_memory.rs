//! `save_memory`: one fact appended to a context file, for every later session.
//!
//! The fact becomes a bullet under `## Qwen Added Memories` of the global file
//! (`~/.qwen/QWEN.md`, the default) or the project's (`QWEN.md` in the primary workspace
//! directory); the first name of `context.fileName` replaces `QWEN.md` when set. The
//! section is created once, facts are one line (newlines folded), and nothing else in
//! the file changes. The write is atomic (the shared write path).
//!
//! Unlike Qwen Code's tool, a call asks first (an edit-style diff of the file): what is
//! saved is read into the system prompt of every later session, so a page or file the
//! model read must not be able to plant instructions there unseen.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, Display, ErrorKind, ExecContext, Invocation, Kind,
    PermissionSubject, Tool, ToolEnvironment, ToolError, ToolFacts, ToolResult,
};

use crate::diff::file_diff;
use crate::file_change::{self, Current, FileChange, FileStamp, Shown, WritePolicy};

/// The heading the facts go under (Qwen Code's, so its files and ours agree).
pub(crate) const MEMORY_SECTION: &str = "## Qwen Added Memories";

/// The `save_memory` tool: adds a fact to the global or the project `QWEN.md`.
pub struct SaveMemory {
    env: Arc<ToolEnvironment>,
    home: Option<PathBuf>,
    schema: Value,
}

impl SaveMemory {
    /// The global file lives under the environment's [`ToolEnvironment::user_home`];
    /// without one, `scope: "global"` is refused.
    pub fn new(env: Arc<ToolEnvironment>) -> Self {
        let home = env.user_home.clone();
        SaveMemory::with_home(env, home)
    }

    /// With the global file under `home` instead of the environment's.
    pub fn with_home(env: Arc<ToolEnvironment>, home: Option<PathBuf>) -> Self {
        let schema = crate::params::schema_for::<Params>();
        SaveMemory { env, home, schema }
    }

    /// The memory file's name: the first context file name for that place (a
    /// project's names for its own folder only, the person's for `~/.qwen`; see
    /// [`toolbelt_config::settings::Settings::context_file_names`]).
    fn file_name(&self, project: bool) -> String {
        let names = self.env.settings.context_file_names();
        let names = if project { names.project } else { names.own };
        names
            .into_iter()
            .next()
            // A Markdown file only: the person's own settings may name any file, and a
            // memory must not become a write to `~/.qwen/settings.json`.
            .filter(|n| {
                !n.trim().is_empty()
                    && !n.contains('/')
                    && std::path::Path::new(n)
                        .extension()
                        .is_some_and(|e| e.eq_ignore_ascii_case("md"))
            })
            .unwrap_or_else(|| "QWEN.md".to_string())
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(
        description = "The fact to remember, as one short self-contained sentence (\"The user prefers tabs in Go files\")."
    )]
    fact: String,
    #[serde(default)]
    #[schemars(
        description = "'global' (default): every project of this user (~/.qwen/QWEN.md). 'project': this project only (QWEN.md at its root)."
    )]
    #[schemars(with = "Option<Scope>")]
    scope: Option<String>,
}

/// The memory files a fact can go to, as the schema offers them. The call reads the
/// scope as a string: anything but `project` is the global file (the schema refuses
/// other values before the call is built).
#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)] // only its schema is used
enum Scope {
    Global,
    Project,
}

/// The tool as a built-in (see [`crate::builtin`]): its rule words and how a session
/// makes it.
pub(crate) const BUILTIN: crate::builtin::Builtin = crate::builtin::Builtin {
    name: "save_memory",
    rule_aliases: &[],
    path_operation: None,
    make: crate::builtin::Make::Env(|env| Some(std::sync::Arc::new(SaveMemory::new(env.clone())))),
};

impl Tool for SaveMemory {
    fn name(&self) -> &str {
        "save_memory"
    }
    fn display_name(&self) -> &str {
        "SaveMemory"
    }
    fn description(&self) -> &str {
        "Remembers one fact for later sessions: it is added to the user's context file and read at every start. \
         Use it when the user asks you to remember something, or states a lasting preference about their work. \
         Not for session notes or anything private the user did not ask to keep. The user approves each fact."
    }
    fn kind(&self) -> Kind {
        Kind::Think
    }
    /// A thinking tool that writes the memory file: checkpointed.
    fn facts(&self) -> ToolFacts {
        ToolFacts {
            writes_files: true,
            ..ToolFacts::default()
        }
    }
    fn needs_confirmation(&self) -> bool {
        true
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        let fact = one_line(&params.fact);
        if fact.is_empty() {
            return Err(ToolError::invalid_params(
                "fact is empty: write the fact to remember",
            ));
        }
        let project = params.scope.as_deref() == Some("project");
        let name = self.file_name(project);
        let path = match project {
            // Through the workspace boundary like any edit: a `QWEN.md` that is a
            // symbolic link out of the workspace is refused, as are path rules on it.
            true => {
                let root = self.env.roots.primary().ok_or_else(|| {
                    ToolError::invalid_params("this session has no project directory")
                })?;
                let given = root.join(&name);
                file_change::resolve_target(&self.env.roots, &given.to_string_lossy(), "save")?
            }
            false => self
                .home
                .as_ref()
                .map(|home| home.join(".qwen").join(&name))
                .ok_or_else(|| {
                    ToolError::new(
                        ErrorKind::MemoryToolExecutionError,
                        "this session has no home directory, so there is no global memory file; use scope 'project'",
                    )
                })?,
        };
        Ok(Box::new(SaveMemoryCall {
            display_path: path.display().to_string(),
            in_workspace: project,
            path,
            fact,
            policy: WritePolicy::from_settings(&self.env.settings),
            shown: Shown::default(),
        }))
    }
}

/// The fact on one line: line breaks folded into spaces, leading list markers dropped.
fn one_line(fact: &str) -> String {
    let joined = fact.split_whitespace().collect::<Vec<_>>().join(" ");
    joined
        .trim_start_matches(['-', '*', ' '])
        .trim()
        .to_string()
}

/// `text` with `- fact` appended to the memory section, which is created (after a blank
/// line) when missing. Everything else is kept byte for byte.
pub(crate) fn with_fact(text: &str, fact: &str) -> String {
    let bullet = format!("- {fact}\n");
    let heading = text
        .match_indices(MEMORY_SECTION)
        .find(|(at, _)| *at == 0 || text.as_bytes()[at - 1] == b'\n')
        .map(|(at, _)| at);
    let Some(at) = heading else {
        let mut out = text.to_string();
        if !out.is_empty() {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            if !out.ends_with("\n\n") {
                out.push('\n');
            }
        }
        out.push_str(MEMORY_SECTION);
        out.push('\n');
        out.push_str(&bullet);
        return out;
    };
    // The section runs to the next `## ` heading or the end. The fact goes after its
    // last non-blank line, or first in an empty section; blank lines stay where they were.
    let body_start = match text[at..].find('\n') {
        Some(n) => at + n + 1,
        None => return format!("{text}\n{bullet}"),
    };
    let end = text[body_start..]
        .find("\n## ")
        .map_or(text.len(), |n| body_start + n + 1);
    let content_len = text[body_start..end].trim_end().len();
    let (insert_at, insert) = if content_len == 0 {
        (body_start, bullet)
    } else {
        (body_start + content_len, format!("\n- {fact}"))
    };
    format!("{}{insert}{}", &text[..insert_at], &text[insert_at..])
}

struct SaveMemoryCall {
    path: PathBuf,
    /// The project's file: approving edits (auto-edit mode) approves it; the global
    /// file is outside the workspace and always asks.
    in_workspace: bool,
    display_path: String,
    fact: String,
    policy: WritePolicy,
    shown: Shown<Memory>,
}

impl SaveMemoryCall {
    fn current(&self) -> Result<Option<String>, ToolError> {
        match file_change::read_current(&self.path, self.policy)? {
            Current::Missing => Ok(None),
            Current::File { bytes, .. } => String::from_utf8(bytes).map(Some).map_err(|_| {
                ToolError::new(
                    ErrorKind::MemoryToolExecutionError,
                    format!(
                        "{} is not UTF-8 text; it was left alone",
                        self.path.display()
                    ),
                )
            }),
        }
    }

    fn save(&self) -> Result<ToolResult, ToolError> {
        // Calls of one turn may run side by side (the tool only adds to a file); one at a
        // time, so no fact is lost between a read and a write.
        static SAVING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one_at_a_time = SAVING
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let Memory { before, after } = self.plan()?;
        file_change::write_file(&self.path, after.as_bytes(), self.policy)?;
        let diff = file_diff(&self.path, &self.display_path, before.as_deref(), &after);
        Ok(ToolResult::with_display(
            format!(
                "Okay, I've remembered that: \"{}\" (saved in {}).",
                self.fact,
                self.path.display()
            ),
            Display::FileDiff(diff),
        ))
    }
}

/// The memory file before and after the fact is added.
struct Memory {
    before: Option<String>,
    after: String,
}

impl FileChange for SaveMemoryCall {
    type Plan = Memory;

    fn path(&self) -> &Path {
        &self.path
    }
    fn plan(&self) -> Result<Memory, ToolError> {
        let before = self.current()?;
        let after = with_fact(before.as_deref().unwrap_or(""), &self.fact);
        Ok(Memory { before, after })
    }
    fn question(&self, plan: &Memory) -> ConfirmationDetails {
        let diff = file_diff(
            &self.path,
            &self.display_path,
            plan.before.as_deref(),
            &plan.after,
        );
        let title = format!("Remember this in {}?", self.display_path);
        if self.in_workspace {
            return ConfirmationDetails::edit(title, diff);
        }
        // Not an edit of the workspace, so auto-edit mode does not approve it.
        ConfirmationDetails::Info {
            title,
            prompt: diff.diff,
            urls: Vec::new(),
        }
    }
    /// The fact is added to the file as it is when the call runs, not to the version
    /// shown: what was approved is the fact, and other calls of the turn may add theirs
    /// first.
    fn apply(&self, _shown: Memory) -> Result<ToolResult, ToolError> {
        self.save()
    }
    fn shown(&self) -> &Shown<Memory> {
        &self.shown
    }
    fn still_current(&self, _plan: &Memory) -> Result<(), ToolError> {
        Ok(())
    }
    fn planned_from(_plan: &Memory) -> Option<FileStamp> {
        None
    }
}

impl Invocation for SaveMemoryCall {
    fn describe(&self) -> String {
        format!("Remember in {}: {}", self.display_path, self.fact)
    }

    fn locations(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }

    fn permission_subject(&self) -> PermissionSubject {
        PermissionSubject::Paths(vec![self.path.clone()])
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async move { self.confirm() })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let path = self.path.clone();
            file_change::run_change(&ctx, "save", &path, move || self.apply_shown()).await
        })
    }
}

#[cfg(test)]
mod tests;
