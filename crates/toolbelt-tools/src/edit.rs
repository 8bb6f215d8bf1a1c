//! `edit`: replace text in a file.
//!
//! `old_string` is found exactly first, then tolerantly ([`matcher`]); the match is
//! replaced with `new_string` taken literally (`$1` and `$&` are text, not references).
//! One occurrence is expected unless `replace_all` is set or `expected_replacements`
//! (older transcripts) gives the count. An empty `old_string` creates a new file. Every
//! failure says what to do next: no match shows the closest region with line numbers,
//! several matches give their count and lines.
//!
//! The write is the one `write_file` uses ([`file_change::write_with`]): read-only files
//! refused, atomic where the owner allows (in place otherwise), parent directories
//! created, line ending, byte-order mark, owner, mode and attributes kept; a streamed
//! edit goes through it too, copying the old file into the new one. The change is computed once for the
//! confirmation and applied as shown, unless the file changed in between.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, Display, ErrorKind, ExecContext, FileDiff, Invocation, Kind,
    PermissionSubject, Tool, ToolEnvironment, ToolError, ToolFacts, ToolResult,
};

use crate::atomic_write;
use crate::diff::file_diff;
use crate::file_change::{self, FileChange, FileStamp, Opened, Shown, WritePolicy};
use crate::text_file::{LineEnding, TextFile};

pub(crate) mod matcher;
pub(crate) mod stream;
use matcher::Strategy;

/// Lines of context in the snippet of the edited file returned to the model.
const SNIPPET_CONTEXT: usize = 4;
/// A changed region longer than this is not echoed back.
const SNIPPET_MAX_LINES: usize = 60;
/// Line numbers listed when several occurrences match.
const MAX_LISTED_LINES: usize = 20;

/// The `edit` tool: replaces text in one file, or creates a file.
pub struct Edit {
    env: Arc<ToolEnvironment>,
    schema: Value,
    streaming: Streaming,
}

/// When a file is edited by streaming it ([`stream`]) instead of reading it whole.
#[derive(Debug, Clone, Copy)]
pub struct Streaming {
    /// Files larger than this are streamed: the size above which a [`FileDiff`] no
    /// longer carries the whole texts, so nothing needs them in memory.
    pub above: u64,
    /// Bytes read at a time.
    pub chunk: usize,
    /// Counts the edits written by splicing (the streamed path), so tests can tell
    /// that the streamed path really ran rather than falling back.
    #[cfg(test)]
    pub spliced: Option<&'static std::sync::atomic::AtomicUsize>,
}

impl Default for Streaming {
    fn default() -> Self {
        Streaming {
            above: FileDiff::CONTENT_LIMIT as u64,
            chunk: stream::CHUNK,
            #[cfg(test)]
            spliced: None,
        }
    }
}

impl Edit {
    /// The tool over a session's environment.
    pub fn new(env: Arc<ToolEnvironment>) -> Self {
        Self::with_streaming(env, Streaming::default())
    }

    /// An edit tool that streams files above other limits (tests use tiny ones).
    pub fn with_streaming(env: Arc<ToolEnvironment>, streaming: Streaming) -> Self {
        let schema = crate::params::schema_for::<Params>();
        Edit {
            env,
            schema,
            streaming,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(description = "Absolute path of the file to change.")]
    file_path: String,
    #[schemars(
        description = "The exact text to replace, copied from the file with its indentation, and enough surrounding lines to match only once. Empty to create a new file."
    )]
    old_string: String,
    #[schemars(
        description = "The text that replaces old_string, exactly as it should appear (taken literally)."
    )]
    new_string: String,
    #[serde(default)]
    #[schemars(
        description = "Replace every occurrence of old_string instead of requiring exactly one. Default false."
    )]
    replace_all: bool,
    #[schemars(
        range(min = 1),
        description = "Older form of replace_all: the number of occurrences expected; the edit fails if the count differs."
    )]
    expected_replacements: Option<usize>,
}

/// The tool's name.
pub(crate) const NAME: &str = "edit";
/// What permission rules may call it besides its name (see `crate::rule_vocabulary`).
pub(crate) const RULE_ALIASES: &[&str] = &["Edit", "replace"];
/// What it does to the paths it is given, for path rules.
pub(crate) const PATH_OPERATION: Option<toolbelt_core::PathOperation> =
    Some(toolbelt_core::PathOperation::Edit);

/// The tool as a built-in (see [`crate::builtin`]): its rule words and how a session
/// makes it.
pub(crate) const BUILTIN: crate::builtin::Builtin = crate::builtin::Builtin {
    name: NAME,
    rule_aliases: RULE_ALIASES,
    path_operation: PATH_OPERATION,
    make: crate::builtin::Make::Env(|env| Some(std::sync::Arc::new(Edit::new(env.clone())))),
};

impl Tool for Edit {
    fn name(&self) -> &str {
        NAME
    }
    fn display_name(&self) -> &str {
        "Edit"
    }
    fn description(&self) -> &str {
        "Replaces text in a file. old_string must match exactly one place in the file (include a few lines of \
         context), unless replace_all is true. Matching is exact first; if that fails, Unicode quotes, dashes and \
         spaces are treated as their ASCII forms and trailing whitespace is ignored, but indentation must match. \
         new_string is used literally. An empty old_string creates a new file. When nothing matches, the error shows \
         the closest lines of the file with line numbers. Line endings and the byte-order mark of the file are kept. \
         Read the file first (read_file) so old_string is copied from its current content."
    }
    fn keeps_legacy_name(&self) -> bool {
        true
    }
    fn rule_aliases(&self) -> &[&'static str] {
        RULE_ALIASES
    }
    fn path_operation(&self) -> Option<toolbelt_core::PathOperation> {
        PATH_OPERATION
    }
    fn kind(&self) -> Kind {
        Kind::Edit
    }
    /// A language server checks the file it changed.
    fn facts(&self) -> ToolFacts {
        ToolFacts {
            edits_named_files: true,
            ..ToolFacts::default()
        }
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn aliases(&self) -> &[&'static str] {
        &["replace"]
    }
    fn parameter_aliases(&self) -> &[(&'static str, &'static str)] {
        &[("absolute_path", "file_path"), ("path", "file_path")]
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        let path = file_change::resolve_target(&self.env.roots, &params.file_path, "edit")?;
        Ok(Box::new(EditCall {
            display_path: self.env.roots.display_relative(&path),
            path,
            params,
            streaming: self.streaming,
            policy: WritePolicy::from_settings(&self.env.settings),
            shown: Shown::default(),
        }))
    }
}

struct EditCall {
    path: PathBuf,
    display_path: String,
    params: Params,
    streaming: Streaming,
    policy: WritePolicy,
    shown: Shown<Plan>,
}

#[derive(Debug)]
struct Plan {
    stamp: Option<FileStamp>,
    write: NewFile,
    diff: FileDiff,
    created: bool,
    occurrences: usize,
    strategy: Strategy,
    /// The lines around the first change, for the model.
    snippet: Option<String>,
}

/// How the new file is written.
#[derive(Debug)]
enum NewFile {
    /// These bytes.
    Bytes(Vec<u8>),
    /// The old file with ranges replaced, copied from disk as it is written.
    Spliced(stream::Found),
}

impl EditCall {
    fn plan(&self) -> Result<Plan, ToolError> {
        let p = &self.params;
        match file_change::open_current(&self.path, self.policy)? {
            Opened::Missing if p.old_string.is_empty() => Ok(Plan {
                stamp: None,
                write: NewFile::Bytes(p.new_string.clone().into_bytes()),
                snippet: snippet(&p.new_string, 1, 0..p.new_string.len(), None),
                diff: file_diff(&self.path, &self.display_path, None, &p.new_string),
                created: true,
                occurrences: 1,
                strategy: Strategy::Exact,
            }),
            Opened::Missing => Err(ToolError::new(
                ErrorKind::FileNotFound,
                format!(
                    "File not found: {}. To create a new file, call edit with an empty old_string (or use write_file).",
                    self.path.display()
                ),
            )),
            Opened::File { .. } if p.old_string.is_empty() => Err(ToolError::new(
                ErrorKind::AttemptToCreateExistingFile,
                format!(
                    "old_string is empty, which creates a new file, but {} already exists. Give the text to replace in old_string, or use write_file to replace the whole file.",
                    self.path.display()
                ),
            )),
            Opened::File { file, stamp } => {
                if stamp.size() > self.streaming.above
                    && let Some(plan) = self.plan_streamed(&file, stamp)?
                {
                    return Ok(plan);
                }
                let bytes = file_change::read_all(file, stamp.size(), &self.path)?;
                let file = TextFile::decode(bytes).ok_or_else(|| {
                    ToolError::new(
                        ErrorKind::ReadContentFailure,
                        format!(
                            "{} is not UTF-8 text; edit only changes UTF-8 text files.",
                            self.path.display()
                        ),
                    )
                })?;
                self.plan_change(file, stamp)
            }
        }
    }

    /// The plan of an exact edit of a large file, found by streaming it; `None` when
    /// the in-memory path must decide (see [`stream`]).
    fn plan_streamed(
        &self,
        file: &std::fs::File,
        stamp: FileStamp,
    ) -> Result<Option<Plan>, ToolError> {
        let p = &self.params;
        let request = stream::Request {
            old: &p.old_string,
            new: &p.new_string,
        };
        let read_error = |e: std::io::Error| file_change::io_error(&self.path, "read", &e);
        let found = match stream::scan(file, stamp.size(), &request, self.streaming.chunk)
            .map_err(read_error)?
        {
            stream::Scan::Found(found) => found,
            stream::Scan::Fallback(why) => {
                tracing::debug!(path = %self.path.display(), why, "edit: reading the whole file");
                return Ok(None);
            }
        };
        let count = found.occurrences();
        let expected = p
            .expected_replacements
            .unwrap_or(if p.replace_all { count } else { 1 });
        if count != expected {
            let lines: Vec<usize> = found
                .lines
                .iter()
                .take(MAX_LISTED_LINES)
                .map(|l| l + 1)
                .collect();
            return Err(self.count_mismatch(&lines, count, expected));
        }
        let Some(shown) = found.render(file, &self.display_path).map_err(read_error)? else {
            return Ok(None);
        };
        let diff = FileDiff {
            file_name: self.display_path.clone(),
            file_path: self.path.clone(),
            diff: shown.diff,
            is_new_file: false,
            original_content: None,
            new_content: None,
            added_lines: shown.added,
            removed_lines: shown.removed,
        };
        Ok(Some(Plan {
            stamp: Some(stamp),
            snippet: snippet(
                &shown.first_window,
                shown.first_window_line,
                shown.first_change,
                Some(shown.new_total_lines),
            ),
            write: NewFile::Spliced(found),
            diff,
            created: false,
            occurrences: count,
            strategy: Strategy::Exact,
        }))
    }

    fn plan_change(&self, file: TextFile, stamp: FileStamp) -> Result<Plan, ToolError> {
        let p = &self.params;
        let crlf = file.format.line_ending == LineEnding::Crlf;
        let unify = |s: &str| {
            if crlf {
                s.replace("\r\n", "\n")
            } else {
                s.to_string()
            }
        };
        let (old, mut new) = (unify(&p.old_string), unify(&p.new_string));
        if old == new {
            return Err(ToolError::new(
                ErrorKind::EditNoChange,
                "old_string and new_string are identical, so the edit would change nothing. No edits made.",
            ));
        }
        let text = file.text;
        let found = matcher::find(&text, &old);
        let count = found.ranges.len();
        if count == 0 {
            return Err(self.no_occurrence(&text, &old));
        }
        let expected = p
            .expected_replacements
            .unwrap_or(if p.replace_all { count } else { 1 });
        if count != expected {
            let starts = found.ranges.iter().take(MAX_LISTED_LINES).map(|r| r.start);
            return Err(self.count_mismatch(
                &matcher::line_numbers(&text, starts),
                count,
                expected,
            ));
        }
        if found.dropped_final_newline {
            new = new.strip_suffix('\n').map(str::to_string).unwrap_or(new);
        }
        let mut ranges = found.ranges;
        if new.is_empty() {
            // Deleting whole lines removes their newline too, so no blank line is left
            // (unless the next occurrence starts right there).
            for i in 0..ranges.len() {
                let r = ranges[i].clone();
                let at_line_start = r.start == 0 || text.as_bytes()[r.start - 1] == b'\n';
                let ends_line = text[r.clone()].ends_with('\n');
                let fits = ranges.get(i + 1).is_none_or(|n| n.start > r.end);
                if at_line_start && !ends_line && fits && text.as_bytes().get(r.end) == Some(&b'\n')
                {
                    ranges[i].end += 1;
                }
            }
        }
        let mut out = String::with_capacity(text.len() + count * new.len());
        let mut last = 0;
        let mut first_change = 0..0;
        for (i, r) in ranges.iter().enumerate() {
            out.push_str(&text[last..r.start]);
            if i == 0 {
                first_change = out.len()..out.len() + new.len();
            }
            out.push_str(&new);
            last = r.end;
        }
        out.push_str(&text[last..]);
        // Unchanged when every match already reads as new_string (a tolerant match of
        // text equal to it); checked on the matches, not by comparing whole files.
        if ranges.iter().all(|r| text[r.clone()] == *new) {
            return Err(ToolError::new(
                ErrorKind::EditNoChange,
                format!(
                    "The edit would leave {} unchanged (old_string matched text that new_string already equals). No edits made.",
                    self.path.display()
                ),
            ));
        }
        let diff = file_diff(&self.path, &self.display_path, Some(&text), &out);
        Ok(Plan {
            stamp: Some(stamp),
            snippet: snippet(&out, 1, first_change, None),
            write: NewFile::Bytes(file.format.encode_owned(out)),
            diff,
            created: false,
            occurrences: count,
            strategy: found.strategy,
        })
    }

    fn no_occurrence(&self, text: &str, old: &str) -> ToolError {
        let mut message = format!(
            "Failed to edit, 0 occurrences found for old_string in {}. No edits made. The text was not found, \
             even ignoring trailing whitespace and Unicode quotes, dashes and spaces.",
            self.path.display()
        );
        match matcher::closest_region(text, old) {
            Some(region) => {
                let lines: Vec<&str> = text.lines().collect();
                let from = region.start.saturating_sub(2);
                let to = (region.end + 2).min(lines.len());
                let width = to.to_string().len();
                message.push_str(&format!(
                    " The closest match is at lines {}-{}:\n",
                    region.start + 1,
                    region.end.max(region.start + 1)
                ));
                for (n, line) in lines[from..to].iter().enumerate() {
                    message.push_str(&format!("{:>width$}| {line}\n", from + n + 1));
                }
                message.push_str(
                    "Copy old_string from these lines exactly (without the line numbers and '| '), check indentation, and retry.",
                );
            }
            None => message.push_str(
                " No similar text was found either; read the file with read_file to see its current content.",
            ),
        }
        ToolError::new(ErrorKind::EditNoOccurrenceFound, message)
    }

    /// `lines`: 1-based lines of the first occurrences.
    fn count_mismatch(&self, lines: &[usize], count: usize, expected: usize) -> ToolError {
        let mut listed: Vec<String> = lines.iter().map(usize::to_string).collect();
        if count > lines.len() {
            listed.push("...".into());
        }
        let advice = if self.params.expected_replacements.is_some() {
            format!("expected_replacements is {expected}")
        } else {
            "replace_all is not set".to_string()
        };
        ToolError::new(
            ErrorKind::EditExpectedOccurrenceMismatch,
            format!(
                "Found {count} occurrences of old_string in {} (at lines {}), but {advice}. No edits made. \
                 Include more surrounding lines in old_string so it matches exactly one place, or set replace_all to true to replace all {count}.",
                self.path.display(),
                listed.join(", ")
            ),
        )
    }

    fn write_plan(&self, plan: Plan) -> Result<ToolResult, ToolError> {
        let replaced = match &plan.write {
            NewFile::Bytes(bytes) => file_change::write_file(&self.path, bytes, self.policy)?,
            NewFile::Spliced(found) => {
                let replaced = self.write_spliced(found, plan.stamp)?;
                #[cfg(test)]
                if let Some(count) = self.streaming.spliced {
                    count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                replaced
            }
        };
        let mut text = if plan.created {
            format!(
                "Created new file: {} with provided content.",
                self.path.display()
            )
        } else if plan.occurrences > 1 {
            format!(
                "The file: {} has been updated ({} occurrences replaced).",
                self.path.display(),
                plan.occurrences
            )
        } else {
            format!("The file: {} has been updated.", self.path.display())
        };
        if plan.strategy == Strategy::Tolerant {
            text.push_str(" old_string matched after ignoring trailing whitespace or Unicode look-alike characters; the text on disk was replaced.");
        }
        text.push_str(&file_change::how_written(replaced));
        if let Some(snippet) = &plan.snippet {
            text.push_str(snippet);
        }
        Ok(ToolResult::with_display(text, Display::FileDiff(plan.diff)))
    }

    /// Writes a streamed plan: the file is opened again, must still be the one that
    /// was scanned, and is copied into the new file around the replacements (on the
    /// in-place path into a staging file first: the old bytes are the source).
    fn write_spliced(
        &self,
        found: &stream::Found,
        stamp: Option<FileStamp>,
    ) -> Result<atomic_write::Replaced, ToolError> {
        let Opened::File { file, stamp: now } = file_change::open_current(&self.path, self.policy)?
        else {
            return Err(file_change::changed_since_confirmation(&self.path));
        };
        if Some(now) != stamp {
            return Err(file_change::changed_since_confirmation(&self.path));
        }
        file_change::write_with(&self.path, self.policy, |out| {
            found.write_into(&file, out)?;
            // A write to the old file during the copy would be lost by the rename.
            if file_change::stamp_now(&self.path).ok().flatten() != stamp {
                return Err(std::io::Error::other(stream::Changed));
            }
            Ok(())
        })
    }
}

/// The changed lines with a few around them, so the model sees the result without
/// reading the file again. `text` is a region of the new file that starts at 1-based
/// line `first_line` and holds the change (`change`, a byte range of it) with
/// [`SNIPPET_CONTEXT`] lines around it where the file has them; `total` is the new
/// file's line count (counted from `text` when it is the whole file).
fn snippet(
    text: &str,
    first_line: usize,
    change: std::ops::Range<usize>,
    total: Option<usize>,
) -> Option<String> {
    let bytes = text.as_bytes();
    let changed = crate::text_file::count_newlines(&bytes[change.clone()]) + 1;
    if changed > SNIPPET_MAX_LINES {
        return None;
    }
    let total = total
        .unwrap_or_else(|| {
            crate::text_file::count_newlines(bytes)
                + usize::from(!text.is_empty() && !text.ends_with('\n'))
        })
        .max(1);
    // 0-based line of the change within `text`.
    let at = crate::text_file::count_newlines(&bytes[..change.start]);
    let skip = at.saturating_sub(SNIPPET_CONTEXT);
    let from = first_line + skip;
    let to = (first_line + at + changed - 1 + SNIPPET_CONTEXT).min(total);
    let body: Vec<&str> = text.lines().skip(skip).take(to + 1 - from).collect();
    Some(format!(
        "\nShowing lines {from}-{to} of {total} from the edited file:\n\n---\n\n{}",
        body.join("\n")
    ))
}

impl Invocation for EditCall {
    fn describe(&self) -> String {
        let short: String = self.params.old_string.chars().take(30).collect();
        let short = short.split('\n').next().unwrap_or("").to_string();
        if self.params.old_string.is_empty() {
            format!("Create {}", self.display_path)
        } else {
            format!("Edit {}: {short}...", self.display_path)
        }
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
            file_change::run_change(&ctx, "edit", &path, move || self.apply_shown()).await
        })
    }
}

impl FileChange for EditCall {
    type Plan = Plan;

    fn path(&self) -> &Path {
        &self.path
    }
    fn plan(&self) -> Result<Plan, ToolError> {
        EditCall::plan(self)
    }
    fn question(&self, plan: &Plan) -> ConfirmationDetails {
        ConfirmationDetails::edit(
            format!("Confirm Edit: {}", self.display_path),
            plan.diff.clone(),
        )
    }
    fn apply(&self, plan: Plan) -> Result<ToolResult, ToolError> {
        self.write_plan(plan)
    }
    fn shown(&self) -> &Shown<Plan> {
        &self.shown
    }
    fn planned_from(plan: &Plan) -> Option<FileStamp> {
        plan.stamp
    }
}

#[cfg(test)]
mod tests;
