//! `write_file`: replace a file's whole content, or create it.
//!
//! The confirmation shows a unified diff against the file as it is now. The write goes
//! through [`file_change::write_with`]: a read-only file is refused, the write is atomic
//! ([`crate::atomic_write`]) unless the file's owner or attributes force an in-place
//! write (the result says so), parent directories are created, and an existing file
//! keeps its owner, group, mode (minus setuid/setgid), extended attributes, its line
//! ending (CRLF stays CRLF) and its UTF-8 byte-order mark: the model writes `\n` and
//! never sees either.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, Display, ExecContext, FileDiff, Invocation, Kind,
    PermissionSubject, Tool, ToolEnvironment, ToolError, ToolFacts, ToolResult,
};

use crate::diff::file_diff;
use crate::file_change::{self, Current, FileChange, FileStamp, Shown, WritePolicy};
use crate::text_file::{LineEnding, TextFormat};

/// The `write_file` tool: writes a whole file.
pub struct WriteFile {
    env: Arc<ToolEnvironment>,
    schema: Value,
}

impl WriteFile {
    /// The tool over a session's environment.
    pub fn new(env: Arc<ToolEnvironment>) -> Self {
        let schema = crate::params::schema_for::<Params>();
        WriteFile { env, schema }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(
        description = "Absolute path of the file to write (for example /home/me/project/src/lib.rs). Missing parent directories are created."
    )]
    file_path: String,
    #[schemars(description = "The whole new content of the file.")]
    content: String,
}

/// The tool's name.
pub(crate) const NAME: &str = "write_file";
/// What permission rules may call it besides its name (see `crate::rule_vocabulary`).
pub(crate) const RULE_ALIASES: &[&str] = &["Edit", "Write"];
/// What it does to the paths it is given, for path rules.
pub(crate) const PATH_OPERATION: Option<toolbelt_core::PathOperation> =
    Some(toolbelt_core::PathOperation::Edit);

/// The tool as a built-in (see [`crate::builtin`]): its rule words and how a session
/// makes it.
pub(crate) const BUILTIN: crate::builtin::Builtin = crate::builtin::Builtin {
    name: NAME,
    rule_aliases: RULE_ALIASES,
    path_operation: PATH_OPERATION,
    make: crate::builtin::Make::Env(|env| Some(std::sync::Arc::new(WriteFile::new(env.clone())))),
};

impl Tool for WriteFile {
    fn name(&self) -> &str {
        NAME
    }
    fn display_name(&self) -> &str {
        "WriteFile"
    }
    fn description(&self) -> &str {
        "Writes content to a file, replacing what it held, or creates the file (and missing parent directories). \
         The person sees a diff and approves it first. An existing file keeps its line endings (CRLF stays CRLF), \
         its UTF-8 byte-order mark, its owner and its permissions; the write is atomic where the file's owner allows. \
         A file without write permission is refused. \
         To change part of a file prefer edit, which sends only the changed text."
    }
    fn rule_aliases(&self) -> &[&'static str] {
        RULE_ALIASES
    }
    fn hook_aliases(&self) -> &[&'static str] {
        &["Write"]
    }
    fn path_operation(&self) -> Option<toolbelt_core::PathOperation> {
        PATH_OPERATION
    }
    fn kind(&self) -> Kind {
        Kind::Edit
    }
    /// Writing the same content again leaves the same file; a language server checks it.
    fn facts(&self) -> ToolFacts {
        ToolFacts {
            idempotent: true,
            edits_named_files: true,
            ..ToolFacts::default()
        }
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn parameter_aliases(&self) -> &[(&'static str, &'static str)] {
        &[("absolute_path", "file_path"), ("path", "file_path")]
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        let path = file_change::resolve_target(&self.env.roots, &params.file_path, "write")?;
        Ok(Box::new(WriteFileCall {
            display_path: self.env.roots.display_relative(&path),
            path,
            content: params.content,
            policy: WritePolicy::from_settings(&self.env.settings),
            shown: Shown::default(),
        }))
    }
}

struct WriteFileCall {
    path: PathBuf,
    display_path: String,
    content: String,
    policy: WritePolicy,
    shown: Shown<Proposed>,
}

#[derive(Debug)]
struct Proposed {
    stamp: Option<FileStamp>,
    bytes: Vec<u8>,
    diff: FileDiff,
}

impl WriteFileCall {
    fn propose(&self) -> Result<Proposed, ToolError> {
        let current = file_change::read_current(&self.path, self.policy)?;
        let (format, original) = match &current {
            Current::Missing => (TextFormat::NEW, None),
            Current::File { bytes, .. } => {
                let format = TextFormat::detect(bytes);
                let mut text = file_change::lossy(bytes);
                if format.bom {
                    text.drain(..'\u{FEFF}'.len_utf8());
                }
                if format.line_ending == LineEnding::Crlf {
                    text = text.replace("\r\n", "\n");
                }
                (format, Some(text))
            }
        };
        let shown = if format.line_ending == LineEnding::Crlf {
            self.content.replace("\r\n", "\n")
        } else {
            self.content.clone()
        };
        let bytes = format.encode(&shown);
        let diff = file_diff(&self.path, &self.display_path, original.as_deref(), &shown);
        Ok(Proposed {
            stamp: current.stamp(),
            bytes,
            diff,
        })
    }

    fn write(&self, proposed: Proposed) -> Result<ToolResult, ToolError> {
        let replaced = file_change::write_file(&self.path, &proposed.bytes, self.policy)?;
        let text = if proposed.stamp.is_some() {
            format!(
                "Successfully overwrote file: {}.{}",
                self.path.display(),
                file_change::how_written(replaced)
            )
        } else {
            format!(
                "Successfully created and wrote to new file: {}.",
                self.path.display()
            )
        };
        Ok(ToolResult::with_display(
            text,
            Display::FileDiff(proposed.diff),
        ))
    }
}

impl Invocation for WriteFileCall {
    fn describe(&self) -> String {
        format!("Write to {}", self.display_path)
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
            file_change::run_change(&ctx, "write", &path, move || self.apply_shown()).await
        })
    }
}

impl FileChange for WriteFileCall {
    type Plan = Proposed;

    fn path(&self) -> &Path {
        &self.path
    }
    fn plan(&self) -> Result<Proposed, ToolError> {
        self.propose()
    }
    fn question(&self, plan: &Proposed) -> ConfirmationDetails {
        ConfirmationDetails::edit(
            format!("Confirm Write: {}", self.display_path),
            plan.diff.clone(),
        )
    }
    fn apply(&self, plan: Proposed) -> Result<ToolResult, ToolError> {
        self.write(plan)
    }
    fn shown(&self) -> &Shown<Proposed> {
        &self.shown
    }
    fn planned_from(plan: &Proposed) -> Option<FileStamp> {
        plan.stamp
    }
}

#[cfg(test)]
mod tests;
