//! `grep_search` (`search_file_content`, `grep`): search file content with a regular
//! expression, in process, with the crates ripgrep is made of.
//!
//! The `ignore` crate walks in parallel and prunes ignored directories; each thread
//! keeps one `grep-searcher` (its buffers reused from file to file) and streams every
//! file through it, so memory is bounded by the buffers and the capped result, never
//! by file size. Binary files (a NUL byte) are skipped as ripgrep does.
//!
//! The regex is compiled by `grep-regex`, the engine that searches; a bad one is an
//! error that quotes the engine's message (Qwen Code checked JavaScript syntax and then
//! ran Rust's). Matching is case-insensitive unless `case_sensitive` is set.
//!
//! A result never pretends to be complete when it is not (Qwen Code issue #7783): when
//! the match cap, the time limit or a cancel stops the search, or files cannot be read,
//! the text says so, and how to narrow the search.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use globset::GlobSet;
use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::{ParallelVisitor, ParallelVisitorBuilder, WalkState};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ErrorKind, ExecContext, Invocation, Kind, MAX_SAFE_INTEGER,
    PermissionSubject, Tool, ToolEnvironment, ToolError, ToolResult,
};

use crate::listed_name::{escaped, escaped_relative};
use crate::pattern::GlobOptions;
use crate::walk::{self, IgnoreRules};

/// How long one search may run before it stops and says so.
pub(crate) const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(30);
/// Characters kept of one matching line.
pub(crate) const MAX_LINE_CHARS: usize = 400;
/// Unreadable files named in the result.
const MAX_NAMED_FAILURES: usize = 5;

/// The `grep_search` tool: lines matching a regular expression.
pub struct GrepSearch {
    env: Arc<ToolEnvironment>,
    schema: Value,
    time_limit: Duration,
}

impl GrepSearch {
    /// The tool over a session's environment.
    pub fn new(env: Arc<ToolEnvironment>) -> Self {
        let schema = crate::params::schema_for::<Params>();
        GrepSearch {
            env,
            schema,
            time_limit: DEFAULT_TIME_LIMIT,
        }
    }

    /// The same tool with another time limit (tests use zero).
    pub fn with_time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = limit;
        self
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(
        description = "Regular expression (Rust regex syntax, as ripgrep) to search for, such as 'fn\\s+main' or 'TODO|FIXME'. Case-insensitive unless case_sensitive is true."
    )]
    pattern: String,
    #[schemars(
        description = "Absolute path of a directory or a single file to search. Default: every workspace directory."
    )]
    path: Option<String>,
    #[schemars(
        description = "Only search files matching this glob, such as '*.rs', '*.{ts,tsx}' or 'src/**/*.py'. A glob without '/' matches file names."
    )]
    glob: Option<String>,
    #[schemars(
        range(min = 1, max = MAX_SAFE_INTEGER),
        description = "Most matching lines to return. Default and maximum: the output limit (1000 lines)."
    )]
    limit: Option<usize>,
    #[serde(default)]
    #[schemars(description = "Match letter case exactly. Default false.")]
    case_sensitive: bool,
}

/// The tool's name.
pub(crate) const NAME: &str = "grep_search";
/// What permission rules may call it besides its name (see `crate::rule_vocabulary`).
pub(crate) const RULE_ALIASES: &[&str] = &["Read", "Grep", "search_file_content"];
/// What it does to the paths it is given, for path rules.
pub(crate) const PATH_OPERATION: Option<toolbelt_core::PathOperation> =
    Some(toolbelt_core::PathOperation::Read);

/// The tool as a built-in (see [`crate::builtin`]): its rule words and how a session
/// makes it.
pub(crate) const BUILTIN: crate::builtin::Builtin = crate::builtin::Builtin {
    name: NAME,
    rule_aliases: RULE_ALIASES,
    path_operation: PATH_OPERATION,
    make: crate::builtin::Make::Env(|env| Some(std::sync::Arc::new(GrepSearch::new(env.clone())))),
};

impl Tool for GrepSearch {
    fn name(&self) -> &str {
        NAME
    }
    fn display_name(&self) -> &str {
        "SearchText"
    }
    fn description(&self) -> &str {
        "Searches file content for a regular expression (ripgrep's engine and syntax) in every workspace directory, \
         a given directory, or a single file. Case-insensitive by default. Returns matching lines as \
         path:line:text, grouped by file; files ignored by .gitignore or .qwenignore and binary files are skipped. \
         Use 'glob' to limit the files (such as '*.py') and 'limit' to cap the lines. When the result is incomplete \
         (too many matches, the time limit, unreadable files) it says so. To find files by name use glob."
    }
    fn rule_aliases(&self) -> &[&'static str] {
        RULE_ALIASES
    }
    fn hook_aliases(&self) -> &[&'static str] {
        &["Grep", "search_file_content"]
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
        &["search_file_content", "grep"]
    }
    fn parameter_aliases(&self) -> &[(&'static str, &'static str)] {
        &[("include", "glob"), ("dir_path", "path")]
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        if params.pattern.is_empty() {
            return Err(ToolError::invalid_params("pattern must not be empty."));
        }
        let matcher = crate::pattern::regex(&params.pattern, !params.case_sensitive)?;
        let glob = match params.glob.as_deref().map(str::trim) {
            Some(g) if !g.is_empty() => Some(FileFilter::new(g)?),
            _ => None,
        };
        let (targets, place) = match params.path.as_deref().map(str::trim) {
            Some(p) if !p.is_empty() => {
                let target = self.env.roots.resolve_readable(p)?;
                let place = format!("path \"{}\"", target.display());
                (vec![target], place)
            }
            _ => (
                self.env.roots.roots().to_vec(),
                "the workspace directories".to_string(),
            ),
        };
        let cap = params
            .limit
            .unwrap_or(usize::MAX)
            .min(self.env.output.max_lines.saturating_sub(12).max(1));
        Ok(Box::new(GrepCall {
            env: self.env.clone(),
            pattern: params.pattern,
            glob,
            targets,
            place,
            matcher,
            rules: IgnoreRules::from_settings(&self.env.settings),
            cap,
            max_chars: self.env.output.max_chars,
            time_limit: self.time_limit,
        }))
    }
}

/// The `glob` filter: on file names when it has no `/`, else on the path relative to
/// the searched directory (ripgrep's `-g` rule).
struct FileFilter {
    text: String,
    matcher: GlobSet,
    on_name: bool,
}

impl FileFilter {
    fn new(glob: &str) -> Result<FileFilter, ToolError> {
        let on_name = !glob.contains('/');
        let relative = glob.trim_start_matches("./");
        // Matched below the searched directory, so '..' could never match: say so
        // rather than find nothing.
        if relative.split('/').any(|part| part == "..") {
            return Err(ToolError::invalid_params(format!(
                "the glob filter {} cannot contain '..': it is matched on paths below the searched directory; give that directory in 'path' instead.",
                crate::pattern::quote(glob)
            )));
        }
        let matcher = crate::pattern::glob(
            relative,
            "glob filter",
            GlobOptions {
                case_insensitive: false,
                literal_separator: !on_name,
                backslash_escape: true,
            },
        )?;
        Ok(FileFilter {
            text: glob.to_string(),
            matcher,
            on_name,
        })
    }

    fn accepts(&self, path: &Path, base: &Path) -> bool {
        if self.on_name {
            path.file_name().is_some_and(|n| self.matcher.is_match(n))
        } else {
            path.strip_prefix(base)
                .is_ok_and(|rel| self.matcher.is_match(rel))
        }
    }
}

struct GrepCall {
    env: Arc<ToolEnvironment>,
    pattern: String,
    glob: Option<FileFilter>,
    targets: Vec<PathBuf>,
    /// Where the search looks, for the result text.
    place: String,
    matcher: RegexMatcher,
    rules: IgnoreRules,
    cap: usize,
    max_chars: usize,
    time_limit: Duration,
}

/// The matches of one file, kept together so the output is grouped per file.
struct FileHits {
    path: PathBuf,
    lines: Vec<(u64, String)>,
}

/// Why a search stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Cap,
    Time,
    Cancel,
}

/// State shared by the searching threads.
struct Progress<'a> {
    cap: usize,
    max_chars: usize,
    deadline: Instant,
    cancel: &'a CancellationToken,
    matches: AtomicUsize,
    chars: AtomicUsize,
    files_searched: AtomicUsize,
    stopped: AtomicBool,
    stop: Mutex<Option<Stop>>,
    hits: Mutex<Vec<FileHits>>,
    failures: Mutex<(usize, Vec<String>)>,
}

impl Progress<'_> {
    fn halt(&self, why: Stop) {
        if !self.stopped.swap(true, Ordering::Relaxed)
            && let Ok(mut stop) = self.stop.lock()
        {
            *stop = Some(why);
        }
    }

    /// Whether the search must stop now (checked per file and per match).
    fn must_stop(&self) -> bool {
        if self.stopped.load(Ordering::Relaxed) {
            return true;
        }
        if self.cancel.is_cancelled() {
            self.halt(Stop::Cancel);
            return true;
        }
        if Instant::now() >= self.deadline {
            self.halt(Stop::Time);
            return true;
        }
        false
    }

    fn fail(&self, what: String) {
        if let Ok(mut f) = self.failures.lock() {
            f.0 += 1;
            if f.1.len() < MAX_NAMED_FAILURES {
                f.1.push(what);
            }
        }
    }

    /// Searches one file with this thread's searcher.
    fn search_file(&self, searcher: &mut Searcher, matcher: &RegexMatcher, path: &Path) {
        if self.must_stop() {
            return;
        }
        self.files_searched.fetch_add(1, Ordering::Relaxed);
        let mut sink = FileSink {
            progress: self,
            prefix_len: path.as_os_str().len() + 8,
            lines: Vec::new(),
            binary: false,
        };
        if let Err(e) = searcher.search_path(matcher, path, &mut sink) {
            self.fail(format!("{}: {e}", escaped(path)));
            return;
        }
        if !sink.lines.is_empty()
            && !sink.binary
            && let Ok(mut hits) = self.hits.lock()
        {
            hits.push(FileHits {
                path: path.to_path_buf(),
                lines: sink.lines,
            });
        }
    }
}

struct FileSink<'p, 'a> {
    progress: &'p Progress<'a>,
    /// What a line costs besides its text (`path:line:`), for the character budget.
    prefix_len: usize,
    lines: Vec<(u64, String)>,
    binary: bool,
}

impl Sink for FileSink<'_, '_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        let p = self.progress;
        if p.must_stop() {
            return Ok(false);
        }
        let first = mat.line_number().unwrap_or(0);
        for (i, line) in mat.lines().enumerate() {
            if p.matches.fetch_add(1, Ordering::Relaxed) >= p.cap {
                p.halt(Stop::Cap);
                return Ok(false);
            }
            let text = cut_line(line);
            if p.chars
                .fetch_add(text.len() + self.prefix_len, Ordering::Relaxed)
                > p.max_chars
            {
                p.halt(Stop::Cap);
                return Ok(false);
            }
            self.lines.push((first + i as u64, text));
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, std::io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// One matching line for the output: no line terminator, at most [`MAX_LINE_CHARS`].
fn cut_line(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let text = String::from_utf8_lossy(line);
    if text.chars().count() <= MAX_LINE_CHARS {
        return text.into_owned();
    }
    let head: String = text.chars().take(MAX_LINE_CHARS).collect();
    format!("{head}... [line cut]")
}

/// The most memory the search of one file may take for its line buffer: a file that is
/// one line of gigabytes (a data blob, a minified bundle gone wrong) is reported as not
/// searched, not read into memory whole.
pub(crate) const MAX_LINE_BUFFER: usize = 64 * 1024 * 1024;

fn searcher() -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .heap_limit(Some(MAX_LINE_BUFFER))
        .build()
}

struct Visitors<'s> {
    progress: &'s Progress<'s>,
    matcher: &'s RegexMatcher,
    glob: Option<&'s FileFilter>,
    base: &'s Path,
}

struct Visitor<'s> {
    progress: &'s Progress<'s>,
    matcher: &'s RegexMatcher,
    glob: Option<&'s FileFilter>,
    base: &'s Path,
    searcher: Searcher,
}

impl<'s> ParallelVisitorBuilder<'s> for Visitors<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            progress: self.progress,
            matcher: self.matcher,
            glob: self.glob,
            base: self.base,
            searcher: searcher(),
        })
    }
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> WalkState {
        if self.progress.must_stop() {
            return WalkState::Quit;
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                self.progress.fail(e.to_string());
                return WalkState::Continue;
            }
        };
        if !walk::is_regular_file(&entry) {
            return WalkState::Continue;
        }
        if self
            .glob
            .is_some_and(|g| !g.accepts(entry.path(), self.base))
        {
            return WalkState::Continue;
        }
        self.progress
            .search_file(&mut self.searcher, self.matcher, entry.path());
        WalkState::Continue
    }
}

impl GrepCall {
    fn search(&self, cancel: &CancellationToken) -> ToolResult {
        let progress = Progress {
            cap: self.cap,
            max_chars: self.max_chars,
            deadline: Instant::now() + self.time_limit,
            cancel,
            matches: AtomicUsize::new(0),
            chars: AtomicUsize::new(0),
            files_searched: AtomicUsize::new(0),
            stopped: AtomicBool::new(false),
            stop: Mutex::new(None),
            hits: Mutex::new(Vec::new()),
            failures: Mutex::new((0, Vec::new())),
        };
        let withheld = walk::Withheld::new(&self.env.roots);
        for (i, target) in self.targets.iter().enumerate() {
            if self.targets[..i].iter().any(|t| target.starts_with(t)) {
                continue;
            }
            let meta = match std::fs::metadata(target) {
                Ok(meta) => meta,
                Err(e) => {
                    let kind = if e.kind() == std::io::ErrorKind::NotFound {
                        ErrorKind::SearchPathNotFound
                    } else {
                        ErrorKind::GrepExecutionError
                    };
                    return ToolResult::err(
                        kind,
                        format!("Cannot search {}: {e}", target.display()),
                    );
                }
            };
            if meta.is_file() {
                // A file named explicitly is searched even if a glob or ignore file
                // would skip it, as ripgrep does.
                progress.search_file(&mut searcher(), &self.matcher, target);
            } else if meta.is_dir() {
                walk::walker(target, self.rules, &withheld)
                    .threads(walk::threads_for(target))
                    .build_parallel()
                    .visit(&mut Visitors {
                        progress: &progress,
                        matcher: &self.matcher,
                        glob: self.glob.as_ref(),
                        base: target,
                    });
            } else {
                return ToolResult::err(
                    ErrorKind::GrepExecutionError,
                    format!(
                        "{} is not a regular file or directory (a FIFO, socket or device); it cannot be searched.",
                        target.display()
                    ),
                );
            }
        }
        self.render(progress, &withheld)
    }

    fn render(&self, progress: Progress<'_>, withheld: &walk::Withheld) -> ToolResult {
        let stop = progress.stop.lock().ok().and_then(|s| *s);
        let files_searched = progress.files_searched.load(Ordering::Relaxed);
        let (failed, named) = progress.failures.into_inner().unwrap_or_default();
        let mut hits = progress.hits.into_inner().unwrap_or_default();
        hits.sort_by(|a, b| a.path.cmp(&b.path));
        let count: usize = hits.iter().map(|h| h.lines.len()).sum();

        let place = &self.place;
        let filter = self
            .glob
            .as_ref()
            .map(|g| format!(" (filter: \"{}\")", g.text))
            .unwrap_or_default();
        let mut text = if count == 0 {
            format!(
                "No matches found for pattern \"{}\" in {place}{filter}.",
                self.pattern
            )
        } else {
            let mut t = format!(
                "Found {count} match{} for pattern \"{}\" in {place}{filter}:\n---\n",
                if count == 1 { "" } else { "es" },
                self.pattern
            );
            for file in &hits {
                let shown = escaped_relative(&self.env.roots, &file.path);
                for (line, content) in &file.lines {
                    t.push_str(&format!("{shown}:{line}:{content}\n"));
                }
            }
            t
        };
        let mut notes = Vec::new();
        match stop {
            Some(Stop::Cap) => notes.push(format!(
                "The results are incomplete: the search stopped at {count} matching lines (the limit is {} lines and {} characters), so there are more. Use a more specific pattern, a path or a glob.",
                self.cap, self.max_chars
            )),
            Some(Stop::Time) => notes.push(format!(
                "The results are incomplete: the search hit its time limit of {:.0?} after {files_searched} files. Search a smaller path or use a glob.",
                self.time_limit
            )),
            Some(Stop::Cancel) => notes.push(format!(
                "The search was cancelled after {files_searched} files; the results are incomplete."
            )),
            None => {}
        }
        if failed > 0 {
            notes.push(format!(
                "The results may be incomplete: {failed} file(s) or directories could not be read: {}{}.",
                named.join("; "),
                if failed > named.len() { "; ..." } else { "" }
            ));
        }
        notes.extend(withheld.note());
        if !notes.is_empty() {
            if count > 0 {
                text.push_str("---\n");
            } else {
                text.push('\n');
            }
            text.push_str(&notes.join("\n"));
        }
        let mut result = ToolResult::text(text.trim_end().to_string());
        if stop == Some(Stop::Cancel) {
            result.error = Some(ToolError::new(
                ErrorKind::Cancelled,
                "The search was cancelled.",
            ));
        }
        result
    }
}

impl Invocation for GrepCall {
    fn describe(&self) -> String {
        let within: Vec<String> = self
            .targets
            .iter()
            .map(|t| self.env.roots.display_relative(t))
            .collect();
        let filter = self
            .glob
            .as_ref()
            .map(|g| format!(" ({})", g.text))
            .unwrap_or_default();
        format!("Search '{}' in {}{filter}", self.pattern, within.join(", "))
    }

    fn locations(&self) -> Vec<PathBuf> {
        self.targets.clone()
    }

    fn permission_subject(&self) -> PermissionSubject {
        PermissionSubject::Paths(self.targets.clone())
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let cancel = ctx.cancel.clone();
            match tokio::task::spawn_blocking(move || self.search(&cancel)).await {
                Ok(result) => result,
                Err(e) => ToolResult::err(
                    ErrorKind::GrepExecutionError,
                    format!("grep_search failed: {e}"),
                ),
            }
        })
    }
}

#[cfg(test)]
mod tests;
