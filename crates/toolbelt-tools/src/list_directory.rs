//! `list_directory` (`ls`): the entries of one directory.
//!
//! Directories first, then files, each group in alphabetical order, directories marked
//! `[DIR]`. Entries hidden by `.gitignore` or `.qwenignore` are left out and counted,
//! so the model knows they exist without their names filling the context; so are
//! entries matching the call's own `ignore` globs (matched on names). A cap keeps a
//! huge directory from flooding the output; the number left out is given.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::GlobSet;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ErrorKind, ExecContext, Invocation, Kind, PermissionSubject,
    Tool, ToolEnvironment, ToolError, ToolResult,
};

use crate::listed_name::escaped_os;
use crate::pattern::GlobOptions;
use crate::walk::{self, IgnoreRules};

/// Most entries listed, before the output policy's line budget.
pub(crate) const MAX_ENTRIES: usize = 500;

/// The `list_directory` tool: the entries of one directory.
pub struct ListDirectory {
    env: Arc<ToolEnvironment>,
    schema: Value,
}

impl ListDirectory {
    /// The tool over a session's environment.
    pub fn new(env: Arc<ToolEnvironment>) -> Self {
        let schema = crate::params::schema_for::<Params>();
        ListDirectory { env, schema }
    }
}

#[derive(Debug, Deserialize, Default, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct FilteringOptions {
    #[schemars(description = "Leave out entries ignored by .gitignore. Default true.")]
    respect_git_ignore: Option<bool>,
    #[schemars(description = "Leave out entries ignored by .qwenignore. Default true.")]
    respect_qwen_ignore: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(description = "Absolute path of the directory to list.")]
    path: String,
    #[serde(default)]
    #[schemars(
        description = "Glob patterns of entry names to leave out, such as [\"*.log\", \"tmp*\"]."
    )]
    ignore: Vec<String>,
    #[serde(default)]
    #[schemars(description = "Which ignore files to honour; both are honoured by default.")]
    file_filtering_options: FilteringOptions,
}

/// The tool's name.
pub(crate) const NAME: &str = "list_directory";
/// What permission rules may call it besides its name (see `crate::rule_vocabulary`).
pub(crate) const RULE_ALIASES: &[&str] = &["Read", "LS", "ls"];
/// What it does to the paths it is given, for path rules.
pub(crate) const PATH_OPERATION: Option<toolbelt_core::PathOperation> =
    Some(toolbelt_core::PathOperation::Read);

/// The tool as a built-in (see [`crate::builtin`]): its rule words and how a session
/// makes it.
pub(crate) const BUILTIN: crate::builtin::Builtin = crate::builtin::Builtin {
    name: NAME,
    rule_aliases: RULE_ALIASES,
    path_operation: PATH_OPERATION,
    make: crate::builtin::Make::Env(|env| {
        Some(std::sync::Arc::new(ListDirectory::new(env.clone())))
    }),
};

impl Tool for ListDirectory {
    fn name(&self) -> &str {
        NAME
    }
    fn display_name(&self) -> &str {
        "ReadFolder"
    }
    fn description(&self) -> &str {
        "Lists the files and subdirectories directly inside a directory: directories first (marked [DIR]), then \
         files, alphabetically. Entries ignored by .gitignore or .qwenignore are left out and counted. To find \
         files by name across subdirectories use glob; to search their content use grep_search."
    }
    fn rule_aliases(&self) -> &[&'static str] {
        RULE_ALIASES
    }
    fn hook_aliases(&self) -> &[&'static str] {
        &["LS", "ls"]
    }
    fn path_operation(&self) -> Option<toolbelt_core::PathOperation> {
        PATH_OPERATION
    }
    fn kind(&self) -> Kind {
        Kind::Search
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn aliases(&self) -> &[&'static str] {
        &["ls"]
    }
    fn parameter_aliases(&self) -> &[(&'static str, &'static str)] {
        &[("dir_path", "path"), ("absolute_path", "path")]
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        let path = self.env.roots.resolve_readable(params.path.trim())?;
        let ignore = name_globs(&params.ignore)?;
        let rules = IgnoreRules::from_settings(&self.env.settings).with(
            params.file_filtering_options.respect_git_ignore,
            params.file_filtering_options.respect_qwen_ignore,
        );
        let cap = MAX_ENTRIES.min(self.env.output.max_lines.saturating_sub(8).max(1));
        Ok(Box::new(ListCall {
            withheld: walk::Withheld::new(&self.env.roots),
            display_path: self.env.roots.display_relative(&path),
            path,
            ignore,
            rules,
            cap,
        }))
    }
}

/// Globs matched against entry names.
fn name_globs(patterns: &[String]) -> Result<GlobSet, ToolError> {
    let patterns: Vec<&str> = patterns.iter().map(String::as_str).collect();
    crate::pattern::globs(&patterns, "ignore pattern", GlobOptions::PATHS)
}

struct ListCall {
    path: PathBuf,
    display_path: String,
    ignore: GlobSet,
    rules: IgnoreRules,
    cap: usize,
    /// What the permission rules keep from this listing.
    withheld: walk::Withheld,
}

/// How many entries each kind of rule left out.
#[derive(Default)]
struct Hidden {
    git: usize,
    qwen: usize,
    pattern: usize,
}

impl Hidden {
    /// `\n(2 git-ignored, 1 qwen-ignored not shown)`, or nothing.
    fn note(&self) -> String {
        let mut hidden = Vec::new();
        if self.git > 0 {
            hidden.push(format!("{} git-ignored", self.git));
        }
        if self.qwen > 0 {
            hidden.push(format!("{} qwen-ignored", self.qwen));
        }
        if self.pattern > 0 {
            hidden.push(format!("{} matching the ignore patterns", self.pattern));
        }
        if hidden.is_empty() {
            return String::new();
        }
        format!("\n({} not shown)", hidden.join(", "))
    }
}

struct Entry {
    /// The name as on disk; escaped only when written ([`escaped_os`]).
    name: OsString,
    is_dir: bool,
}

impl ListCall {
    fn list(&self) -> Result<ToolResult, ToolError> {
        let meta = std::fs::metadata(&self.path).map_err(|e| {
            let kind = ErrorKind::from_io(&e, ErrorKind::LsExecutionError);
            ToolError::new(kind, format!("Cannot list {}: {e}", self.path.display()))
        })?;
        if !meta.is_dir() {
            return Err(ToolError::new(
                ErrorKind::PathIsNotADirectory,
                format!(
                    "{} is not a directory; use read_file to read a file.",
                    self.path.display()
                ),
            ));
        }
        let all = std::fs::read_dir(&self.path).map_err(|e| {
            ToolError::new(
                ErrorKind::from_io(&e, ErrorKind::LsExecutionError),
                format!("Cannot list {}: {e}", self.path.display()),
            )
        })?;
        // What the ignore files keep: with every rule, and with git rules only, so the
        // two kinds of hidden entries can be counted apart.
        let kept = children(&self.path, self.rules);
        let kept_git = children(
            &self.path,
            IgnoreRules {
                respect_qwen_ignore: false,
                ..self.rules
            },
        );
        let mut hidden = Hidden::default();
        let mut entries = Vec::new();
        for entry in all.flatten() {
            if let Some(entry) = self.shown_entry(&entry, &kept, &kept_git, &mut hidden) {
                entries.push(entry);
            }
        }
        entries.sort_by(|a, b| b.is_dir.cmp(&a.is_dir).then_with(|| a.name.cmp(&b.name)));
        let mut text = self.listing(&entries);
        text.push_str(&hidden.note());
        if let Some(note) = self.withheld.note() {
            text.push_str(&format!("\n{note}"));
        }
        Ok(ToolResult::text(text.trim_end().to_string()))
    }

    /// The entry as listed, or `None` when it is left out (counted in `hidden`).
    fn shown_entry(
        &self,
        entry: &std::fs::DirEntry,
        kept: &HashSet<OsString>,
        kept_git: &HashSet<OsString>,
        hidden: &mut Hidden,
    ) -> Option<Entry> {
        let name = entry.file_name();
        // Before the ignore checks: `children` did not see a withheld name either.
        if self.withheld.withholds(&entry.path()) {
            return None;
        }
        // The walker never enters `.git`; it counts as git-ignored unless the git
        // rules are off, when it is listed like any directory.
        let shown_anyway = name == ".git" && !self.rules.respect_git_ignore;
        if !shown_anyway && !kept_git.contains(&name) {
            hidden.git += 1;
            return None;
        }
        if !shown_anyway && !kept.contains(&name) {
            hidden.qwen += 1;
            return None;
        }
        if self.ignore.is_match(Path::new(&name)) {
            hidden.pattern += 1;
            return None;
        }
        // Follows links for the type, as `ls -L`: a link to a directory lists as one.
        let is_dir = std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
        Some(Entry { name, is_dir })
    }

    /// The listing of `entries` (sorted), capped.
    fn listing(&self, entries: &[Entry]) -> String {
        let total = entries.len();
        if total == 0 {
            return format!("Directory {} is empty.", self.path.display());
        }
        let mut t = format!("Listed {total} item(s) in {}:\n---\n", self.path.display());
        for e in entries.iter().take(self.cap) {
            if e.is_dir {
                t.push_str("[DIR] ");
            }
            t.push_str(&escaped_os(&e.name));
            t.push('\n');
        }
        if total > self.cap {
            t.push_str(&format!(
                "---\n[{} more items not shown; the list is capped at {}. Use glob with a pattern to find specific entries.]\n",
                total - self.cap,
                self.cap
            ));
        }
        t
    }
}

/// The names directly inside `dir` that the ignore rules keep.
fn children(dir: &Path, rules: IgnoreRules) -> HashSet<OsString> {
    // The caller checks the permission rules itself, name by name, and counts them.
    walk::walker(dir, rules, &walk::Withheld::default())
        .max_depth(Some(1))
        .build()
        .flatten()
        .filter(|e| e.depth() == 1)
        .map(|e| e.file_name().to_os_string())
        .collect()
}

impl Invocation for ListCall {
    fn describe(&self) -> String {
        format!("List {}", self.display_path)
    }

    fn locations(&self) -> Vec<PathBuf> {
        vec![self.path.clone()]
    }

    fn permission_subject(&self) -> PermissionSubject {
        PermissionSubject::Paths(vec![self.path.clone()])
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let work = tokio::task::spawn_blocking(move || self.list());
            tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => ToolResult::err(ErrorKind::Cancelled, "The listing was cancelled."),
                joined = work => match joined {
                    Ok(Ok(r)) => r,
                    Ok(Err(e)) => ToolResult::error(e),
                    Err(e) => ToolResult::err(ErrorKind::LsExecutionError, format!("list_directory failed: {e}")),
                },
            }
        })
    }
}

#[cfg(test)]
mod tests;
