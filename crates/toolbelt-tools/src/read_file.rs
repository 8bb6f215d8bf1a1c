//! `read_file`: one file's content for the model.
//!
//! Text is streamed line by line from `offset` (0-based) for `limit` lines, within the
//! output policy's line and character budgets, and prefixed with a paging notice when
//! anything was left out. Images, audio, video and PDF go back as inline data with their
//! MIME type; other binary files are named, not dumped. Directories, FIFOs and devices
//! are refused before they are opened (opening a FIFO would block). A Jupyter notebook
//! is shown as its cells with their outputs, images attached ([`notebook`]).
//!
//! Size: a whole-file read is refused over [`MAX_WHOLE_READ`]; with `offset`/`limit` a
//! file of any size can be paged through, since only the requested lines are kept.
//! Inline data is capped at [`MAX_INLINE`]. Lines are not numbered, as in Qwen Code, so
//! the text can be copied into `edit` as it is.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, Display, ErrorKind, ExecContext, Invocation, Kind,
    MAX_SAFE_INTEGER, Part, PermissionSubject, Tool, ToolEnvironment, ToolError, ToolResult,
};

use crate::file_type::{self, FileType, SNIFF_LEN, TextEncoding};

mod notebook;

/// Largest file read whole without `offset` or `limit`.
pub(crate) const MAX_WHOLE_READ: u64 = 20 * 1024 * 1024;
/// Largest file returned as inline data (providers cap requests near 10 MB of base64).
pub(crate) const MAX_INLINE: u64 = 7 * 1024 * 1024;
/// Marker appended to a line cut by the character budget.
/// Files up to this size are read on the calling task, in one read: from the page
/// cache that takes a few microseconds, less than handing the work to a blocking
/// thread and waking the task again (measured in `bench/mcp_serve.sh`, where the hop
/// was a third of the server's CPU per call). Larger files, and anything that is not a
/// regular file, go to a blocking thread so a slow read cannot stall other calls. The
/// price, written down: a small file on a filesystem that hangs (a dead network mount,
/// a FUSE server that never answers) stalls the task's thread too, which for
/// `toolbelt mcp serve` over stdio is the whole server.
pub(crate) const READ_ON_TASK: u64 = 64 * 1024;

const CUT_MARKER: &str = "... [truncated]";

/// The `read_file` tool: one file's content.
pub struct ReadFile {
    env: Arc<ToolEnvironment>,
    schema: Value,
}

impl ReadFile {
    /// The tool over a session's environment.
    pub fn new(env: Arc<ToolEnvironment>) -> Self {
        let schema = crate::params::schema_for::<Params>();
        ReadFile { env, schema }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(
        description = "Absolute path of the file to read (for example /home/me/project/src/main.rs). Relative paths are refused."
    )]
    absolute_path: String,
    #[schemars(
        range(min = 0, max = MAX_SAFE_INTEGER),
        description = "0-based line number to start reading from. Use with 'limit' to page through large files."
    )]
    offset: Option<u64>,
    #[schemars(
        range(min = 1, max = MAX_SAFE_INTEGER),
        description = "Maximum number of lines to read. Defaults to the output limit (1000 lines)."
    )]
    limit: Option<u64>,
}

/// The tool's name.
pub(crate) const NAME: &str = "read_file";
/// What permission rules may call it besides its name (see `crate::rule_vocabulary`).
pub(crate) const RULE_ALIASES: &[&str] = &["Read"];
/// What it does to the paths it is given, for path rules.
pub(crate) const PATH_OPERATION: Option<toolbelt_core::PathOperation> =
    Some(toolbelt_core::PathOperation::Read);

/// The tool as a built-in (see [`crate::builtin`]): its rule words and how a session
/// makes it.
pub(crate) const BUILTIN: crate::builtin::Builtin = crate::builtin::Builtin {
    name: NAME,
    rule_aliases: RULE_ALIASES,
    path_operation: PATH_OPERATION,
    make: crate::builtin::Make::Env(|env| Some(std::sync::Arc::new(ReadFile::new(env.clone())))),
};

impl Tool for ReadFile {
    fn name(&self) -> &str {
        NAME
    }
    fn display_name(&self) -> &str {
        "ReadFile"
    }
    fn description(&self) -> &str {
        "Reads one file from the local filesystem. Text comes back as it is on disk, without line numbers; \
         a file longer than the output limit (1000 lines or 25,000 characters) comes back in part, with a notice \
         saying which lines are shown and how to read the rest with 'offset' and 'limit'. Images (PNG, JPEG, GIF, \
         WEBP, ...), audio, video and PDF files come back as data the model can see. A Jupyter notebook (.ipynb) \
         comes back as its cells, each under a header with its index, type and id, followed by its outputs; its \
         images are attached. Other binary files are named, not shown. To read several files at once use read_many_files; to find text use grep_search."
    }
    fn rule_aliases(&self) -> &[&'static str] {
        RULE_ALIASES
    }
    fn path_operation(&self) -> Option<toolbelt_core::PathOperation> {
        PATH_OPERATION
    }
    fn kind(&self) -> Kind {
        Kind::Read
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn parameter_aliases(&self) -> &[(&'static str, &'static str)] {
        &[("file_path", "absolute_path"), ("path", "absolute_path")]
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        let path = self
            .env
            .roots
            .resolve_readable(params.absolute_path.trim())?;
        Ok(Box::new(ReadFileCall {
            env: self.env.clone(),
            display_path: self.env.roots.display_relative(&path),
            path,
            offset: params.offset.unwrap_or(0),
            limit: params.limit,
        }))
    }
}

struct ReadFileCall {
    env: Arc<ToolEnvironment>,
    path: PathBuf,
    display_path: String,
    offset: u64,
    limit: Option<u64>,
}

impl Invocation for ReadFileCall {
    fn describe(&self) -> String {
        // The schema bounds both at 2^53-1; saturating keeps a caller that skipped the
        // schema from wrapping to "line 0".
        let first = self.offset.saturating_add(1);
        match self.limit {
            Some(limit) => format!(
                "Read {} lines {first}-{}",
                self.display_path,
                self.offset.saturating_add(limit)
            ),
            None if self.offset > 0 => {
                format!("Read {} from line {first}", self.display_path)
            }
            None => format!("Read {}", self.display_path),
        }
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
            let cancel = ctx.cancel.clone();
            if cancel.is_cancelled() {
                return ToolResult::err(ErrorKind::Cancelled, "The read was cancelled.");
            }
            // In an editor, its text of the file (unsaved changes included) is read.
            let buffer = crate::editor_buffers::text(&self.env, &self.path, &cancel).await;
            if let Ok(meta) = std::fs::metadata(&self.path)
                && meta.is_file()
                && meta.len() <= READ_ON_TASK
            {
                return self.read_with(Ok(meta), buffer.as_deref());
            }
            let work = tokio::task::spawn_blocking(move || {
                self.read_with(std::fs::metadata(&self.path), buffer.as_deref())
            });
            tokio::select! {
                biased;
                _ = cancel.cancelled() => ToolResult::err(ErrorKind::Cancelled, "The read was cancelled."),
                joined = work => joined.unwrap_or_else(|e| ToolResult::err(ErrorKind::ExecutionFailed, format!("read_file failed: {e}"))),
            }
        })
    }
}

impl ReadFileCall {
    /// Reads the file; `buffer` is the editor's text of it, used in place of a text
    /// file's content on disk.
    fn read_with(
        &self,
        meta: std::io::Result<std::fs::Metadata>,
        buffer: Option<&str>,
    ) -> ToolResult {
        match self.try_read(meta, buffer) {
            Ok(result) => result,
            Err(e) => ToolResult::error(e),
        }
    }

    fn try_read(
        &self,
        meta: std::io::Result<std::fs::Metadata>,
        buffer: Option<&str>,
    ) -> Result<ToolResult, ToolError> {
        let meta = meta.map_err(|e| self.io_error(&e))?;
        if meta.is_dir() {
            return Err(ToolError::new(
                ErrorKind::TargetIsDirectory,
                format!(
                    "{} is a directory, not a file; use list_directory to see what it holds.",
                    self.path.display()
                ),
            ));
        }
        if !meta.is_file() {
            return Err(ToolError::new(
                ErrorKind::ReadContentFailure,
                format!(
                    "{} is not a regular file (a FIFO, socket or device); only regular files can be read.",
                    self.path.display()
                ),
            ));
        }
        // The path was a regular file a moment ago; if something else has taken its
        // place since (a FIFO would block an open without O_NONBLOCK, and a small read
        // runs on the server's only thread), what was opened is checked again.
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&self.path)
            .map_err(|e| self.io_error(&e))?;
        let meta = file.metadata().map_err(|e| self.io_error(&e))?;
        if !meta.is_file() {
            return Err(ToolError::new(
                ErrorKind::ReadContentFailure,
                format!(
                    "{} stopped being a regular file while it was being read; only regular files can be read.",
                    self.path.display()
                ),
            ));
        }
        let size = meta.len();
        // A small file is read whole now, so the text below comes from this one read
        // (one byte more than the limit tells a file that grew since the stat: that one
        // is read again from the file, as a large one).
        let first_read = if size <= READ_ON_TASK {
            READ_ON_TASK + 1
        } else {
            SNIFF_LEN as u64
        };
        let mut head = Vec::with_capacity(first_read.min(size + 1) as usize);
        (&mut file)
            .take(first_read)
            .read_to_end(&mut head)
            .map_err(|e| self.io_error(&e))?;
        let whole = head.len() as u64 <= READ_ON_TASK && size <= READ_ON_TASK;
        let sniffed = &head[..head.len().min(SNIFF_LEN)];
        match file_type::detect(&self.path, sniffed) {
            FileType::Binary => Ok(ToolResult::text(format!(
                "Cannot display content of binary file: {}",
                self.display_path
            ))),
            FileType::Media(mime) => self.read_media(mime, size),
            FileType::Text(encoding) => {
                let paging = self.offset > 0 || self.limit.is_some();
                if size > MAX_WHOLE_READ && !paging {
                    return Err(ToolError::new(
                        ErrorKind::FileTooLarge,
                        format!(
                            "{} is {} bytes, over the {MAX_WHOLE_READ}-byte limit for a whole read; read part of it with 'offset' and 'limit', or find what you need with grep_search.",
                            self.display_path, size
                        ),
                    ));
                }
                drop(file);
                if is_notebook(&self.path) && size <= MAX_WHOLE_READ {
                    return self.read_notebook(encoding);
                }
                if let Some(text) = buffer {
                    let utf8 = TextEncoding::Utf8 { bom: false };
                    return self.read_text(utf8, Some(text.as_bytes()));
                }
                self.read_text(encoding, whole.then_some(head.as_slice()))
            }
        }
    }

    fn read_media(&self, mime: String, size: u64) -> Result<ToolResult, ToolError> {
        if size > MAX_INLINE {
            return Err(ToolError::new(
                ErrorKind::FileTooLarge,
                format!(
                    "{} ({mime}) is {size} bytes, over the {MAX_INLINE}-byte limit for media sent to the model.",
                    self.display_path
                ),
            ));
        }
        let data = std::fs::read(&self.path).map_err(|e| self.io_error(&e))?;
        let summary = format!("Read {} ({mime}, {} bytes)", self.display_path, data.len());
        Ok(ToolResult {
            llm_content: vec![Part::InlineData {
                mime_type: mime,
                data,
                display_name: Some(self.display_path.clone()),
            }],
            return_display: Display::markdown(summary),
            error: None,
        })
    }

    /// A notebook as cells ([`notebook`]), paged like text; invalid notebook JSON is
    /// read as text, with a note.
    fn read_notebook(&self, encoding: TextEncoding) -> Result<ToolResult, ToolError> {
        let bytes = std::fs::read(&self.path).map_err(|e| self.io_error(&e))?;
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
        let parsed = serde_json::from_slice::<Value>(bytes).map_err(|e| e.to_string());
        let rendered = parsed.and_then(|nb| {
            notebook::render(&nb, &self.display_path, MAX_INLINE)
                .ok_or_else(|| "it has no \"cells\" list".to_string())
        });
        let rendered = match rendered {
            Ok(rendered) => rendered,
            Err(why) => {
                let mut result = self.read_text(encoding, None)?;
                if let Some(Part::Text { text }) = result.llm_content.first_mut() {
                    *text = format!(
                        "[{} is not a valid Jupyter notebook ({why}); showing it as text.]\n{text}",
                        self.display_path
                    );
                }
                return Ok(result);
            }
        };
        let policy = &self.env.output;
        let max_lines = self
            .limit
            .map(|l| l.min(usize::MAX as u64) as usize)
            .unwrap_or(policy.max_lines);
        let lines = collect_slice_lines(
            rendered.text.as_bytes(),
            self.offset,
            max_lines,
            policy.max_chars,
        );
        let shown = self.offset..self.offset.saturating_add(lines.kept as u64);
        let mut result = self.render(lines);
        if result.is_error() {
            return Ok(result);
        }
        let images: Vec<Part> = rendered
            .images
            .into_iter()
            .filter(|(line, _)| shown.contains(&(*line as u64)))
            .map(|(_, part)| part)
            .collect();
        result.return_display = Display::markdown(format!(
            "Read notebook {} ({} image(s) attached)",
            self.display_path,
            images.len()
        ));
        result.llm_content.extend(images);
        Ok(result)
    }

    /// The text, from `bytes` when the whole file was already read, else from the file.
    fn read_text(
        &self,
        encoding: TextEncoding,
        bytes: Option<&[u8]>,
    ) -> Result<ToolResult, ToolError> {
        let policy = &self.env.output;
        let max_lines = self
            .limit
            .map(|l| l.min(usize::MAX as u64) as usize)
            .unwrap_or(policy.max_lines);
        let lines = match encoding {
            TextEncoding::Utf8 { .. } => match bytes {
                Some(bytes) => Ok(collect_slice_lines(
                    bytes,
                    self.offset,
                    max_lines,
                    policy.max_chars,
                )),
                None => {
                    let file = std::fs::File::open(&self.path).map_err(|e| self.io_error(&e))?;
                    collect_lines(
                        BufReader::new(file),
                        self.offset,
                        max_lines,
                        policy.max_chars,
                    )
                }
            },
            TextEncoding::Utf16Le | TextEncoding::Utf16Be => {
                let bytes = match bytes {
                    Some(bytes) => bytes.to_vec(),
                    // Paging a UTF-16 file decodes it whole: bounded like an edit's.
                    None => {
                        let limit = crate::file_change::MAX_HELD;
                        let mut bytes = Vec::new();
                        std::fs::File::open(&self.path)
                            .and_then(|f| f.take(limit + 1).read_to_end(&mut bytes))
                            .map_err(|e| self.io_error(&e))?;
                        if bytes.len() as u64 > limit {
                            return Err(ToolError::new(
                                ErrorKind::FileTooLarge,
                                format!(
                                    "{} is UTF-16 and over {limit} bytes (64 MiB), too large to page through; convert it to UTF-8 (iconv -f UTF-16 -t UTF-8) or search it with grep_search.",
                                    self.display_path
                                ),
                            ));
                        }
                        bytes
                    }
                };
                let codec = if encoding == TextEncoding::Utf16Le {
                    encoding_rs::UTF_16LE
                } else {
                    encoding_rs::UTF_16BE
                };
                let (text, _, _) = codec.decode(&bytes);
                Ok(collect_slice_lines(
                    text.as_bytes(),
                    self.offset,
                    max_lines,
                    policy.max_chars,
                ))
            }
        }
        .map_err(|e| self.io_error(&e))?;
        Ok(self.render(lines))
    }

    fn render(&self, lines: Lines) -> ToolResult {
        if lines.total == 0 {
            return ToolResult::text(String::new());
        }
        if self.offset >= lines.total {
            return ToolResult::err(
                ErrorKind::InvalidToolParams,
                format!(
                    "offset {} is past the end of {}, which has {} lines.",
                    self.offset, self.display_path, lines.total
                ),
            );
        }
        let first = self.offset.saturating_add(1);
        let last = self.offset.saturating_add(lines.kept as u64);
        let partial = first > 1 || last < lines.total || lines.cut;
        let body = lines.body;
        let text = if partial {
            let mut notice = format!(
                "Showing lines {first}-{last} of {} total lines.",
                lines.total
            );
            if last < lines.total {
                notice.push_str(&format!(
                    " To read more, call read_file again with offset: {last}."
                ));
            }
            if lines.cut {
                notice.push_str(" A line longer than the character limit was cut.");
            }
            format!("{notice}\n\n---\n\n{body}")
        } else {
            body
        };
        ToolResult::text(text)
    }

    fn io_error(&self, e: &std::io::Error) -> ToolError {
        let kind = ErrorKind::from_io(e, ErrorKind::ReadContentFailure);
        let what = match kind {
            ErrorKind::FileNotFound => "no such file".to_string(),
            _ => e.to_string(),
        };
        ToolError::new(kind, format!("Cannot read {}: {what}", self.path.display()))
    }
}

struct Lines {
    /// The kept lines, joined with `\n`.
    body: String,
    /// How many lines `body` holds.
    kept: usize,
    /// Lines in the whole file.
    total: u64,
    /// Whether the character budget cut a line.
    cut: bool,
}

/// Keeps lines `offset..offset+max_lines` within `max_chars`, counting the rest of the
/// file's lines without keeping them. Trailing whitespace (and `\r`) is trimmed from each
/// line, a byte-order mark dropped, invalid UTF-8 replaced.
struct LineCollector {
    lines: Lines,
    offset: u64,
    max_lines: usize,
    max_chars: usize,
    chars: usize,
    full: bool,
}

impl LineCollector {
    fn new(offset: u64, max_lines: usize, max_chars: usize) -> Self {
        LineCollector {
            lines: Lines {
                body: String::new(),
                kept: 0,
                total: 0,
                cut: false,
            },
            offset,
            max_lines,
            max_chars,
            chars: 0,
            full: false,
        }
    }

    /// One line as read, with or without its `\n`.
    fn push(&mut self, raw: &[u8]) {
        let lines = &mut self.lines;
        lines.total += 1;
        if self.full || lines.total <= self.offset {
            return;
        }
        let raw = if lines.total == 1 {
            raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw)
        } else {
            raw
        };
        let line = String::from_utf8_lossy(raw);
        let line = line.trim_end();
        let len = line.chars().count();
        if lines.kept > 0 {
            lines.body.push('\n');
        }
        lines.kept += 1;
        if self.chars + len > self.max_chars {
            let room = self.max_chars.saturating_sub(self.chars);
            lines.body.extend(line.chars().take(room));
            lines.body.push_str(CUT_MARKER);
            lines.cut = true;
            self.full = true;
            return;
        }
        self.chars += len + 1;
        lines.body.push_str(line);
        if lines.kept >= self.max_lines {
            self.full = true;
        }
    }

    fn finish(self) -> Lines {
        self.lines
    }
}

/// [`LineCollector`] over a reader, one line at a time.
fn collect_lines(
    mut reader: impl BufRead,
    offset: u64,
    max_lines: usize,
    max_chars: usize,
) -> std::io::Result<Lines> {
    let mut collector = LineCollector::new(offset, max_lines, max_chars);
    // A line longer than this many bytes holds more than `max_chars` characters, so
    // the collector cuts it anyway: the rest is read past, not kept (a file that is one
    // line of gigabytes costs this much memory, not its size).
    let keep = max_chars.saturating_mul(4).saturating_add(4);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if read_line_capped(&mut reader, &mut buf, keep)? == 0 {
            return Ok(collector.finish());
        }
        collector.push(&buf);
    }
}

/// Reads one line (with its `\n`) like `read_until`, keeping at most `keep` bytes of it
/// in `buf`; returns the bytes the line had, 0 at the end.
pub(crate) fn read_line_capped(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    keep: usize,
) -> std::io::Result<usize> {
    let mut read = 0;
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(read);
        }
        let (used, ended) = match memchr::memchr(b'\n', available) {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        let room = keep.saturating_sub(buf.len()).min(used);
        buf.extend_from_slice(&available[..room]);
        reader.consume(used);
        read += used;
        if ended {
            return Ok(read);
        }
    }
}

/// [`LineCollector`] over bytes already in memory: the lines are borrowed, not copied,
/// and once the budget is spent the rest are only counted.
fn collect_slice_lines(bytes: &[u8], offset: u64, max_lines: usize, max_chars: usize) -> Lines {
    let mut collector = LineCollector::new(offset, max_lines, max_chars);
    collector.lines.body.reserve(bytes.len().min(max_chars));
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', bytes) {
        if collector.full {
            // Every remaining line only counts.
            let rest = &bytes[start..];
            let newlines = memchr::memchr_iter(b'\n', rest).count() as u64;
            let unterminated = u64::from(!rest.is_empty() && !rest.ends_with(b"\n"));
            collector.lines.total += newlines + unterminated;
            return collector.finish();
        }
        collector.push(&bytes[start..=end]);
        start = end + 1;
    }
    if start < bytes.len() {
        collector.push(&bytes[start..]);
    }
    collector.finish()
}

/// Whether the path names a Jupyter notebook (`.ipynb`).
fn is_notebook(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("ipynb"))
}

/// For tests and other tools: the first bytes of a file.
pub(crate) fn sniff(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(SNIFF_LEN);
    std::fs::File::open(path)?
        .take(SNIFF_LEN as u64)
        .read_to_end(&mut head)?;
    Ok(head)
}

#[cfg(test)]
mod tests;
