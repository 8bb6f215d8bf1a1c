//! `read_many_files`: the content of several files at once, for the model to read
//! together (and for `@path` in prompts).
//!
//! `paths` holds files, directories and globs, absolute or relative to the first
//! workspace directory; `include` adds more globs, `exclude` removes matches, and the
//! default excludes (dependency and build directories, archives, office files) apply
//! unless `useDefaultExcludes` is false. Directories are walked with the ignore rules,
//! recursively unless `recursive` is false.
//!
//! Each file is preceded by `--- <path> ---`. Images, audio and PDF files go back as
//! inline data, but only when asked for by name or extension (`logo.png`, `*.pdf`):
//! a directory full of screenshots should not eat the context. Text shares one budget,
//! the output policy's: files are streamed until it is spent, and the files that did
//! not fit are named so the model can read them separately.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::GlobSet;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, Display, ErrorKind, ExecContext, Invocation, Kind, Part,
    PermissionSubject, Tool, ToolEnvironment, ToolError, ToolResult,
};

use crate::file_type::{self, FileType};
use crate::listed_name::{escaped, escaped_relative};
use crate::pattern::GlobOptions;
use crate::read_file::{MAX_INLINE, sniff};
use crate::walk::{self, IgnoreRules};

mod output;
use output::{Output, Report};

/// Directories never entered unless `useDefaultExcludes` is false: dependencies, VCS
/// data, editor state and build output.
pub(crate) const DEFAULT_EXCLUDED_DIRS: &[&str] = &[
    "node_modules",
    ".git",
    ".vscode",
    ".idea",
    "dist",
    "build",
    "coverage",
    "__pycache__",
    ".venv",
];
/// File names left out unless `useDefaultExcludes` is false: compiled and archive
/// files, office documents, secrets.
pub(crate) const DEFAULT_EXCLUDED_FILES: &[&str] = &[
    "*.pyc",
    "*.pyo",
    "*.bin",
    "*.exe",
    "*.dll",
    "*.so",
    "*.dylib",
    "*.class",
    "*.jar",
    "*.war",
    "*.zip",
    "*.tar",
    "*.gz",
    "*.bz2",
    "*.rar",
    "*.7z",
    "*.doc",
    "*.docx",
    "*.xls",
    "*.xlsx",
    "*.ppt",
    "*.pptx",
    "*.odt",
    "*.ods",
    "*.odp",
    ".DS_Store",
    ".env",
];
/// Most files one call gathers, before the budget.
const MAX_FILES: usize = 1_000;
const END_MARKER: &str = "--- End of content ---";

/// The `read_many_files` tool: several files, by path or glob, in one result.
pub struct ReadManyFiles {
    env: Arc<ToolEnvironment>,
    schema: Value,
}

impl ReadManyFiles {
    /// The tool over a session's environment.
    pub fn new(env: Arc<ToolEnvironment>) -> Self {
        let schema = crate::params::schema_for::<Params>();
        ReadManyFiles { env, schema }
    }
}

#[derive(Debug, Deserialize, Default, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct FilteringOptions {
    #[schemars(description = "Leave out files ignored by .gitignore. Default true.")]
    respect_git_ignore: Option<bool>,
    #[schemars(description = "Leave out files ignored by .qwenignore. Default true.")]
    respect_qwen_ignore: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(
        length(min = 1),
        description = "Files, directories or glob patterns (such as 'src/**/*.rs'), absolute or relative to the first workspace directory."
    )]
    paths: Vec<String>,
    #[serde(default)]
    #[schemars(description = "More glob patterns to include, such as ['**/*.md'].")]
    include: Vec<String>,
    #[serde(default)]
    #[schemars(description = "Glob patterns of files to leave out, such as ['**/*.test.ts'].")]
    exclude: Vec<String>,
    #[schemars(description = "Walk directories recursively. Default true.")]
    recursive: Option<bool>,
    #[schemars(
        description = "Leave out dependency and build directories, archives and binaries (node_modules, dist, *.zip, ...). Default true."
    )]
    use_default_excludes: Option<bool>,
    #[serde(default, rename = "file_filtering_options")]
    #[schemars(
        description = "Which ignore files to honour when expanding directories and globs; both are honoured by default."
    )]
    file_filtering_options: FilteringOptions,
}

/// The tool's name.
pub(crate) const NAME: &str = "read_many_files";
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
    make: crate::builtin::Make::Env(|env| {
        Some(std::sync::Arc::new(ReadManyFiles::new(env.clone())))
    }),
};

impl Tool for ReadManyFiles {
    fn name(&self) -> &str {
        NAME
    }
    fn display_name(&self) -> &str {
        "ReadManyFiles"
    }
    fn description(&self) -> &str {
        "Reads several text files at once: files, directories and glob patterns ('src/**/*.ts'), each file's \
         content preceded by '--- <path> ---'. Files ignored by .gitignore or .qwenignore, dependency and build \
         directories and binary files are skipped; images, audio and PDF files are only included when named or \
         matched by their extension. The total output is capped (25,000 characters by default); files that do not \
         fit are listed so they can be read separately with read_file."
    }
    fn rule_aliases(&self) -> &[&'static str] {
        RULE_ALIASES
    }
    fn hook_aliases(&self) -> &[&'static str] {
        &[]
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
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        let Some(primary) = self.env.roots.primary() else {
            return Err(ToolError::invalid_params(
                "there is no workspace directory.",
            ));
        };
        let default_excludes = params.use_default_excludes.unwrap_or(true);
        let user: Vec<&str> = params.exclude.iter().map(String::as_str).collect();
        let exclude = glob_set(&user)?;
        let excluded_names = glob_set(if default_excludes {
            DEFAULT_EXCLUDED_FILES
        } else {
            &[]
        })?;
        let mut requests = Vec::new();
        for given in params.paths.iter().chain(&params.include) {
            requests.push(Request::parse(given.trim(), primary, &self.env)?);
        }
        let rules = IgnoreRules::from_settings(&self.env.settings).with(
            params.file_filtering_options.respect_git_ignore,
            params.file_filtering_options.respect_qwen_ignore,
        );
        Ok(Box::new(ReadManyCall {
            env: self.env.clone(),
            requests,
            exclude,
            excluded_names,
            default_excludes,
            recursive: params.recursive.unwrap_or(true),
            rules,
            withheld: walk::Withheld::new(&self.env.roots),
        }))
    }
}

fn glob_set(patterns: &[&str]) -> Result<GlobSet, ToolError> {
    crate::pattern::globs(patterns, "exclude pattern", GlobOptions::PATHS)
}

/// One entry of `paths` or `include`.
enum Request {
    /// An existing file or directory, resolved inside the workspace.
    Path { given: String, path: PathBuf },
    /// A glob: walk `base`, keep files whose path relative to it matches.
    Glob {
        given: String,
        base: PathBuf,
        matcher: GlobSet,
    },
    /// A path that does not exist, reported in the result.
    Missing { given: String },
}

impl Request {
    fn parse(given: &str, primary: &Path, env: &ToolEnvironment) -> Result<Request, ToolError> {
        if given.is_empty() || given.contains('\0') {
            return Err(ToolError::invalid_params(format!(
                "invalid path {given:?}: paths must be non-empty and contain no NUL byte."
            )));
        }
        let absolute = if Path::new(given).is_absolute() {
            given.to_string()
        } else {
            format!("{}/{}", primary.display(), given.trim_start_matches("./"))
        };
        let is_glob = given.contains(['*', '?', '[', '{']);
        if !is_glob {
            let path = env.roots.resolve_readable(&absolute)?;
            return Ok(if path.exists() {
                Request::Path {
                    given: given.to_string(),
                    path,
                }
            } else {
                Request::Missing {
                    given: given.to_string(),
                }
            });
        }
        // The pattern's literal directories are resolved like a path: `../*` is
        // outside the workspace, and so is a link out of it (`link/*`).
        let (base, rest) = walk::glob_start(&env.roots, primary, &absolute)?;
        let matcher = crate::pattern::glob(&rest, "glob", GlobOptions::PATHS)?;
        Ok(Request::Glob {
            given: given.to_string(),
            base,
            matcher,
        })
    }

    fn given(&self) -> &str {
        match self {
            Request::Path { given, .. }
            | Request::Glob { given, .. }
            | Request::Missing { given } => given,
        }
    }
}

struct ReadManyCall {
    env: Arc<ToolEnvironment>,
    requests: Vec<Request>,
    /// The call's `exclude`, matched on paths relative to their workspace directory.
    exclude: GlobSet,
    /// The default file-name excludes (empty when turned off).
    excluded_names: GlobSet,
    default_excludes: bool,
    recursive: bool,
    rules: IgnoreRules,
    /// What the permission rules kept out of this call's walks.
    withheld: walk::Withheld,
}

/// A file to read and whether it was asked for by name (media files must be).
struct Candidate {
    path: PathBuf,
    named: bool,
}

impl ReadManyCall {
    /// The files the requests name, sorted and without duplicates.
    fn collect(&self, report: &mut Report) -> Vec<Candidate> {
        let mut files: std::collections::BTreeMap<PathBuf, bool> = Default::default();
        for request in &self.requests {
            match request {
                Request::Missing { given } => report.missing.push(given.clone()),
                Request::Path { path, .. } if path.is_file() => {
                    files.insert(path.clone(), true);
                }
                Request::Path { path, given } if path.is_dir() => {
                    for file in self.walk(path, |_| true) {
                        files.entry(file).or_insert(false);
                    }
                    let _ = given;
                }
                Request::Path { given, .. } => report.skipped.push((
                    given.clone(),
                    "not a regular file or directory (a FIFO, socket or device)".into(),
                )),
                Request::Glob {
                    given,
                    base,
                    matcher,
                } => {
                    let named_ext = given.to_ascii_lowercase();
                    for file in self.walk(base, |p| {
                        p.strip_prefix(base).is_ok_and(|r| matcher.is_match(r))
                    }) {
                        // Media is "named" when the pattern spells its extension.
                        let named = file
                            .extension()
                            .map(|e| format!(".{}", e.to_string_lossy().to_ascii_lowercase()))
                            .is_some_and(|ext| named_ext.contains(&ext));
                        let slot = files.entry(file).or_insert(false);
                        *slot |= named;
                    }
                }
            }
            if files.len() >= MAX_FILES {
                break;
            }
        }
        files
            .into_iter()
            .take(MAX_FILES)
            .map(|(path, named)| Candidate { path, named })
            .collect()
    }

    /// Regular files under `base` that the ignore rules and excludes keep.
    fn walk(&self, base: &Path, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
        let mut builder = walk::walker(base, self.rules, &self.withheld);
        if !self.recursive {
            builder.max_depth(Some(1));
        }
        if self.default_excludes {
            builder.filter_entry(|e| {
                !(e.file_type().is_some_and(|t| t.is_dir())
                    && DEFAULT_EXCLUDED_DIRS.iter().any(|d| e.file_name() == *d))
            });
        }
        builder
            .build()
            .flatten()
            .filter(walk::is_regular_file)
            .map(ignore::DirEntry::into_path)
            .filter(|p| keep(p) && !self.is_excluded(p))
            .take(MAX_FILES)
            .collect()
    }

    fn is_excluded(&self, path: &Path) -> bool {
        let rel = self
            .env
            .roots
            .root_of(path)
            .and_then(|root| path.strip_prefix(root).ok())
            .unwrap_or(path);
        self.exclude.is_match(rel)
            || path
                .file_name()
                .is_some_and(|n| self.exclude.is_match(n) || self.excluded_names.is_match(n))
    }

    fn read(&self, cancel: &CancellationToken) -> ToolResult {
        let mut report = Report::default();
        let files = self.collect(&mut report);
        report.withheld = self.withheld.note();
        let policy = &self.env.output;
        // Room is kept for the separators and the closing notes.
        let mut out = Output {
            chars_left: policy.max_chars.saturating_sub(policy.max_chars / 10),
            lines_left: policy.max_lines.saturating_sub(policy.max_lines / 10),
            text: String::new(),
            media: Vec::new(),
            report,
        };
        for file in files {
            let shown = escaped(&file.path);
            if cancel.is_cancelled() {
                out.report.did_not_fit.push(shown);
                continue;
            }
            let head = match sniff(&file.path) {
                Ok(head) => head,
                Err(e) => {
                    out.report.skipped.push((shown, e.to_string()));
                    continue;
                }
            };
            match file_type::detect(&file.path, &head) {
                FileType::Binary => out.report.skipped.push((shown, "binary file".into())),
                FileType::Media(mime) if !file.named => out.report.skipped.push((
                    shown,
                    format!("{mime}: name it or its extension explicitly to include it"),
                )),
                FileType::Media(mime) => out.add_media(&file.path, shown, mime),
                FileType::Text(encoding) => out.add_text(&file.path, shown, encoding),
            }
        }
        let Output {
            mut text,
            media,
            report,
            ..
        } = out;
        text.push_str(END_MARKER);
        let notes = report.notes();
        if !notes.is_empty() {
            text.push_str("\n\n");
            text.push_str(&notes);
        }
        let display = if report.read.is_empty() {
            format!("No files were read.\n{notes}")
        } else {
            let names: Vec<String> = report
                .read
                .iter()
                .map(|p| format!("- {}", escaped_relative(&self.env.roots, p)))
                .collect();
            format!(
                "Read {} file(s):\n{}\n{notes}",
                report.read.len(),
                names.join("\n")
            )
        };
        let mut llm_content = vec![Part::text(text)];
        llm_content.extend(media);
        ToolResult {
            llm_content,
            return_display: Display::markdown(display.trim_end().to_string()),
            error: cancel
                .is_cancelled()
                .then(|| ToolError::new(ErrorKind::Cancelled, "Reading the files was cancelled.")),
        }
    }
}

impl Invocation for ReadManyCall {
    fn describe(&self) -> String {
        let given: Vec<&str> = self.requests.iter().map(Request::given).collect();
        format!("Read {}", given.join(", "))
    }

    fn locations(&self) -> Vec<PathBuf> {
        self.paths()
    }

    fn permission_subject(&self) -> PermissionSubject {
        PermissionSubject::Paths(self.paths())
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let cancel = ctx.cancel.clone();
            match tokio::task::spawn_blocking(move || self.read(&cancel)).await {
                Ok(result) => result,
                Err(e) => ToolResult::err(
                    ErrorKind::ExecutionFailed,
                    format!("read_many_files failed: {e}"),
                ),
            }
        })
    }
}

impl ReadManyCall {
    fn paths(&self) -> Vec<PathBuf> {
        self.requests
            .iter()
            .filter_map(|r| match r {
                Request::Path { path, .. } => Some(path.clone()),
                Request::Glob { base, .. } => Some(base.clone()),
                Request::Missing { .. } => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
