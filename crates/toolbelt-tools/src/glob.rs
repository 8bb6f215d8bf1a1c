//! `glob`: find files by name pattern.
//!
//! Patterns are `globset` globs matched against the path relative to the search
//! directory, case-insensitively unless `case_sensitive` is set; `*` stays within one
//! directory and `**` crosses them, as in every shell. The walk starts at the
//! pattern's literal leading directories (`src/app/**/*.rs` walks only `src/app`) and
//! prunes ignored directories as it goes, in parallel.
//!
//! Order: files modified in the last 24 hours first, newest first, so what the person
//! is working on comes up; then the rest alphabetically. Only the first [`MAX_FILES`]
//! are kept while walking (a bounded heap), so memory does not grow with the tree; the
//! number left out is given.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use globset::GlobSet;
use ignore::{ParallelVisitor, ParallelVisitorBuilder, WalkState};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ErrorKind, ExecContext, Invocation, Kind, PermissionSubject,
    Tool, ToolEnvironment, ToolError, ToolResult,
};

use crate::listed_name::escaped;
use crate::pattern::GlobOptions;
use crate::walk::{self, IgnoreRules};

/// Most paths returned.
pub(crate) const MAX_FILES: usize = 100;
/// Files modified more recently than this come first.
pub(crate) const RECENT: Duration = Duration::from_secs(24 * 60 * 60);

/// The `glob` tool: file paths matching a pattern, newest first.
pub struct Glob {
    env: Arc<ToolEnvironment>,
    schema: Value,
}

impl Glob {
    /// The tool over a session's environment.
    pub fn new(env: Arc<ToolEnvironment>) -> Self {
        let schema = crate::params::schema_for::<Params>();
        Glob { env, schema }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(
        description = "Glob pattern such as '**/*.rs', 'src/**/*.{ts,tsx}' or 'docs/*.md', relative to the search directory. '*' matches within one directory, '**' across directories."
    )]
    pattern: String,
    #[schemars(
        description = "Absolute path of the directory to search. Default: every workspace directory."
    )]
    path: Option<String>,
    #[serde(default)]
    #[schemars(description = "Match letter case exactly. Default false.")]
    case_sensitive: bool,
    #[schemars(description = "Leave out files ignored by .gitignore. Default true.")]
    respect_git_ignore: Option<bool>,
    #[schemars(description = "Leave out files ignored by .qwenignore. Default true.")]
    respect_qwen_ignore: Option<bool>,
}

/// The tool's name.
pub(crate) const NAME: &str = "glob";
/// What permission rules may call it besides its name (see `crate::rule_vocabulary`).
pub(crate) const RULE_ALIASES: &[&str] = &["Read", "Glob"];
/// What it does to the paths it is given, for path rules.
pub(crate) const PATH_OPERATION: Option<toolbelt_core::PathOperation> =
    Some(toolbelt_core::PathOperation::Read);

/// The tool as a built-in (see [`crate::builtin`]): its rule words and how a session
/// makes it.
pub(crate) const BUILTIN: crate::builtin::Builtin = crate::builtin::Builtin {
    name: NAME,
    rule_aliases: RULE_ALIASES,
    path_operation: PATH_OPERATION,
    make: crate::builtin::Make::Env(|env| Some(std::sync::Arc::new(Glob::new(env.clone())))),
};

impl Tool for Glob {
    fn name(&self) -> &str {
        NAME
    }
    fn display_name(&self) -> &str {
        "FindFiles"
    }
    fn description(&self) -> &str {
        "Finds files whose path matches a glob pattern (such as '**/*.rs' or 'src/**/test_*.py'), searching every \
         workspace directory or the given path. Returns absolute paths: files changed in the last 24 hours first \
         (newest first), then the rest alphabetically; at most 100, with the number left out. Files ignored by \
         .gitignore or .qwenignore are skipped. Case-insensitive unless case_sensitive is true. To search file \
         content use grep_search."
    }
    fn keeps_legacy_name(&self) -> bool {
        true
    }
    fn rule_aliases(&self) -> &[&'static str] {
        RULE_ALIASES
    }
    fn hook_aliases(&self) -> &[&'static str] {
        &["Glob"]
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
    fn parameter_aliases(&self) -> &[(&'static str, &'static str)] {
        &[("dir_path", "path")]
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        let pattern = params.pattern.trim();
        if pattern.is_empty() {
            return Err(ToolError::invalid_params("pattern must not be empty."));
        }
        let bases = match params.path.as_deref().map(str::trim) {
            Some(path) if !path.is_empty() => vec![search_dir(&self.env, path)?],
            _ => self.env.roots.roots().to_vec(),
        };
        let pattern = pattern.trim_start_matches("./").to_string();
        // Where each walk starts: the pattern's literal directories, resolved inside
        // the workspace (a link out of it is an error, not a way out).
        let mut starts = Vec::new();
        let mut rest = String::new();
        for base in &bases {
            let (start, below) = walk::glob_start(&self.env.roots, base, &pattern)?;
            if !starts.contains(&start) {
                starts.push(start);
            }
            rest = below;
            if pattern.starts_with('/') {
                break;
            }
        }
        let bases = if pattern.starts_with('/') {
            starts.clone()
        } else {
            bases
        };
        let matcher = crate::pattern::glob(
            &rest,
            "glob pattern",
            GlobOptions {
                case_insensitive: !params.case_sensitive,
                ..GlobOptions::PATHS
            },
        )?;
        let rules = IgnoreRules::from_settings(&self.env.settings)
            .with(params.respect_git_ignore, params.respect_qwen_ignore);
        Ok(Box::new(GlobCall {
            env: self.env.clone(),
            pattern,
            starts,
            bases,
            matcher,
            rules,
            cap: MAX_FILES.min(self.env.output.max_lines.saturating_sub(8).max(1)),
        }))
    }
}

/// A `path` argument: inside the workspace and an existing directory.
fn search_dir(env: &ToolEnvironment, given: &str) -> Result<PathBuf, ToolError> {
    let dir = env.roots.resolve_readable(given)?;
    match std::fs::metadata(&dir) {
        Ok(meta) if meta.is_dir() => Ok(dir),
        Ok(_) => Err(ToolError::new(
            ErrorKind::PathIsNotADirectory,
            format!("{given} is not a directory; give the directory to search in 'path'."),
        )),
        Err(e) => Err(ToolError::new(
            ErrorKind::SearchPathNotFound,
            format!("Cannot search {given}: {e}"),
        )),
    }
}

struct GlobCall {
    env: Arc<ToolEnvironment>,
    pattern: String,
    /// Where the walks start: the pattern's literal leading directories below each
    /// base, resolved (real paths inside the workspace).
    starts: Vec<PathBuf>,
    /// The directories searched, as the result names them.
    bases: Vec<PathBuf>,
    matcher: GlobSet,
    rules: IgnoreRules,
    cap: usize,
}

/// One matching file, ordered so that the *smallest* hit is shown first.
#[derive(Debug, PartialEq, Eq)]
struct Hit {
    recent: Option<std::cmp::Reverse<SystemTime>>,
    path: PathBuf,
}

impl Ord for Hit {
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.recent, &other.recent) {
            (Some(a), Some(b)) => a.cmp(b).then_with(|| self.path.cmp(&other.path)),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => self.path.cmp(&other.path),
        }
    }
}

impl PartialOrd for Hit {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The best `cap` hits seen so far and how many there were in all.
#[derive(Default)]
struct Best {
    heap: BinaryHeap<Hit>,
    total: usize,
}

impl Best {
    fn push(&mut self, hit: Hit, cap: usize) {
        self.total += 1;
        if self.heap.len() < cap {
            self.heap.push(hit);
        } else if self.heap.peek().is_some_and(|worst| hit < *worst) {
            self.heap.pop();
            self.heap.push(hit);
        }
    }
}

/// What every walking thread shares.
#[derive(Clone, Copy)]
struct Shared<'s> {
    start: &'s Path,
    matcher: &'s GlobSet,
    recent_since: SystemTime,
    cap: usize,
    best: &'s Mutex<Best>,
    stop: &'s AtomicBool,
    cancel: &'s CancellationToken,
}

struct Visitors<'s>(Shared<'s>);

/// One walking thread: it keeps its own best hits and merges them when the walk ends,
/// so threads do not contend on a lock per file.
struct Visitor<'s> {
    shared: Shared<'s>,
    local: Best,
}

impl<'s> ParallelVisitorBuilder<'s> for Visitors<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            shared: self.0,
            local: Best::default(),
        })
    }
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> WalkState {
        let s = &self.shared;
        if s.stop.load(AtomicOrdering::Relaxed) {
            return WalkState::Quit;
        }
        if s.cancel.is_cancelled() {
            s.stop.store(true, AtomicOrdering::Relaxed);
            return WalkState::Quit;
        }
        let Ok(entry) = entry else {
            return WalkState::Continue;
        };
        if !walk::is_regular_file(&entry) {
            return WalkState::Continue;
        }
        let Ok(rel) = entry.path().strip_prefix(s.start) else {
            return WalkState::Continue;
        };
        if s.matcher.is_match(rel) {
            let modified = entry.metadata().ok().and_then(|m| m.modified().ok());
            let recent = modified
                .filter(|m| *m >= s.recent_since)
                .map(std::cmp::Reverse);
            self.local.push(
                Hit {
                    recent,
                    path: entry.into_path(),
                },
                s.cap,
            );
        }
        WalkState::Continue
    }
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let local = std::mem::take(&mut self.local);
        if let Ok(mut best) = self.shared.best.lock() {
            let total = best.total + local.total;
            for hit in local.heap {
                best.push(hit, self.shared.cap);
            }
            // `push` counted the moved hits again; the true total is the sum.
            best.total = total;
        }
    }
}

impl GlobCall {
    fn walk(&self, cancel: &CancellationToken) -> ToolResult {
        let best = Mutex::new(Best::default());
        let stop = AtomicBool::new(false);
        let recent_since = SystemTime::now()
            .checked_sub(RECENT)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let withheld = walk::Withheld::new(&self.env.roots);
        for (i, start) in self.starts.iter().enumerate() {
            // A start nested in another is already walked with it.
            if self.starts[..i].iter().any(|s| start.starts_with(s)) {
                continue;
            }
            if !start.is_dir() {
                continue;
            }
            let shared = Shared {
                start,
                matcher: &self.matcher,
                recent_since,
                cap: self.cap,
                best: &best,
                stop: &stop,
                cancel,
            };
            walk::walker(start, self.rules, &withheld)
                .threads(walk::threads_for(start))
                .build_parallel()
                .visit(&mut Visitors(shared));
        }
        if cancel.is_cancelled() {
            return ToolResult::err(ErrorKind::Cancelled, "The file search was cancelled.");
        }
        let best = best.into_inner().unwrap_or_default();
        self.render(best, &withheld)
    }

    fn render(&self, best: Best, withheld: &walk::Withheld) -> ToolResult {
        let within: Vec<String> = self.bases.iter().map(|b| b.display().to_string()).collect();
        let within = within.join(", ");
        if best.total == 0 {
            let mut text = format!(
                "No files found matching pattern \"{}\" within {within}.",
                self.pattern
            );
            if self.rules.respect_git_ignore || self.rules.respect_qwen_ignore {
                text.push_str(" Files ignored by .gitignore or .qwenignore were not searched; set respect_git_ignore (or respect_qwen_ignore) to false to include them.");
            }
            if let Some(note) = withheld.note() {
                text.push(' ');
                text.push_str(&note);
            }
            return ToolResult::text(text);
        }
        let hits = best.heap.into_sorted_vec();
        let mut text = format!(
            "Found {} file(s) matching \"{}\" within {within}, sorted by modification time (newest first):\n---\n",
            best.total, self.pattern
        );
        for hit in &hits {
            text.push_str(&escaped(&hit.path));
            text.push('\n');
        }
        if best.total > hits.len() {
            text.push_str(&format!(
                "---\n[{} more file(s) not shown; at most {} are listed. Use a more specific pattern or path.]",
                best.total - hits.len(),
                self.cap
            ));
        }
        if let Some(note) = withheld.note() {
            text.push_str(&format!("---\n{note}"));
        }
        ToolResult::text(text.trim_end().to_string())
    }
}

impl Invocation for GlobCall {
    fn describe(&self) -> String {
        let within: Vec<String> = self
            .bases
            .iter()
            .map(|b| self.env.roots.display_relative(b))
            .collect();
        format!(
            "Find files matching '{}' in {}",
            self.pattern,
            within.join(", ")
        )
    }

    fn locations(&self) -> Vec<PathBuf> {
        self.starts.clone()
    }

    fn permission_subject(&self) -> PermissionSubject {
        PermissionSubject::Paths(self.starts.clone())
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let cancel = ctx.cancel.clone();
            match tokio::task::spawn_blocking(move || self.walk(&cancel)).await {
                Ok(result) => result,
                Err(e) => {
                    ToolResult::err(ErrorKind::GlobExecutionError, format!("glob failed: {e}"))
                }
            }
        })
    }
}

#[cfg(test)]
mod tests;
