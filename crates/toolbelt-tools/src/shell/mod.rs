//! `run_shell_command`: runs a command with `bash -c`, the most powerful tool and the most
//! dangerous one. It must never hang the agent, never leave processes behind, never blow
//! up memory and never run what the rules forbid.
//!
//! # Brief overview
//!
//! - [`command_parse`] splits the command into simple commands with a real bash parser;
//!   the invocation offers them as its [`PermissionSubject`] (the rules engine in the
//!   core judges each) and as root commands in its `exec` confirmation.
//! - [`read_only`] decides which lines need no confirmation at all.
//! - [`process`] starts the command in its own process group (stdin closed, pager off)
//!   and ends the whole group on timeout or cancellation.
//! - [`output`] keeps a bounded head and tail of the output and spills the whole stream to
//!   a log file under the session directory.
//! - [`background`] holds the jobs started with `is_background: true`.
//! - [`waiting`] recognises a command that waits for input it cannot get (ended early,
//!   with a note saying what it waited for) and one that settled on a "ready" line, which
//!   [`handover`] moves to the background instead of letting it run to its timeout.
//! - [`sandbox`] confines a command the person did not approve (it ran unasked because
//!   [`read_only`] judged it read-only) in a read-only kernel sandbox, and an approved
//!   one to the workspace when `tools.sandbox` is `"landlock"`. Where the kernel cannot
//!   confine, read-only commands ask like any other.
//!
//! The result follows Qwen Code's shape (Command, Directory, Output, Error, Exit Code,
//! Signal, Background PIDs, Process Group PGID), so prompts tuned for it carry over. A
//! non-zero exit is a normal result the model reads; only failing to start is an error.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, Consent, Display, ErrorKind, ExecContext, Invocation, Kind,
    PermissionSubject, Tool, ToolEnvironment, ToolError, ToolResult,
};

pub(crate) mod background;
pub(crate) mod command_parse;
pub(crate) mod environment;
mod foreground;
mod handover;
pub(crate) mod output;
pub(crate) mod process;
pub(crate) mod read_only;
pub(crate) mod sandbox;
pub(crate) mod waiting;

use background::{Job, JobStatus, JobTable};
use command_parse::ParsedCommand;
use process::OutputTarget;
use sandbox::{PreparedSandbox, SandboxSupport};

/// The longest command: Linux passes one argument of at most 32 pages (131,072 bytes
/// with its NUL, `MAX_ARG_STRLEN`), and the command is `bash -c`'s argument. Checked
/// when the call is built, so a longer one is a clear error before anything is asked.
const MAX_COMMAND_BYTES: usize = 128 * 1024 - 1;

/// Default foreground timeout (Qwen Code's).
pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Longest timeout a call may ask for.
pub(crate) const MAX_TIMEOUT_MS: u64 = 600_000;
/// How long output is still read after the shell exits, for processes it left in the
/// background that still hold the pipe.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(200);
/// How often live output is sent to a listener.
const LIVE_INTERVAL: Duration = Duration::from_millis(100);

/// How long the repository's configuration may take to list before the call asks.
const GIT_CONFIG_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether the git repository around `cwd` configures nothing that git would run (see
/// [`read_only::git_config_is_inert`]). No repository, or no `git`, is inert: the command
/// will fail on its own. A listing that fails otherwise or takes too long is not.
async fn repository_config_is_inert(cwd: &std::path::Path) -> bool {
    let mut command = tokio::process::Command::new("git");
    command
        .args(["config", "--list", "--show-scope", "-z"])
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let output = match tokio::time::timeout(GIT_CONFIG_TIMEOUT, command.output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => return e.kind() == std::io::ErrorKind::NotFound,
        Err(_) => return false,
    };
    if !output.status.success() {
        // Outside a repository `git config --list` still lists the person's own
        // configuration and succeeds; a failure means a configuration git cannot read.
        return false;
    }
    read_only::git_config_is_inert(&output.stdout)
}

/// Where a command runs when the call names no directory: the session's worktree while
/// it works in one (`enter_worktree`), the first workspace root otherwise.
fn default_dir(env: &ToolEnvironment) -> Option<PathBuf> {
    env.work_dir
        .get()
        .or_else(|| env.roots.primary().map(PathBuf::from))
}

/// The `run_shell_command` tool: a bash command, in the foreground or as a background job.
pub struct RunShellCommand {
    env: Arc<ToolEnvironment>,
    schema: Value,
    jobs: Arc<JobTable>,
    /// What the kernel can enforce; `None` detects it (once per process).
    support: Option<SandboxSupport>,
    /// Bytes a command's log holds at most ([`toolbelt_process::log`]).
    log_cap: u64,
}

impl RunShellCommand {
    /// The tool over a session's environment, with a job table of its own.
    pub fn new(env: Arc<ToolEnvironment>) -> Self {
        let kill_on_exit = env.settings.tools.shell.kill_background_on_exit;
        let schema = crate::params::schema_for::<Params>();
        RunShellCommand {
            env,
            schema,
            jobs: Arc::new(JobTable::new(kill_on_exit)),
            support: None,
            log_cap: toolbelt_process::log::LOG_CAP,
        }
    }

    /// The same tool with logs of at most `bytes` each and `budget` together (a test's
    /// small limits; unasked commands' logs get half of it).
    #[cfg(test)]
    pub(crate) fn with_log_limits(mut self, bytes: u64, budget: u64) -> Self {
        self.log_cap = bytes;
        let keep = self.jobs.kills_on_exit();
        self.jobs = Arc::new(JobTable::new(keep).with_log_budget(budget));
        self
    }

    /// The same tool judging sandbox support by `support` instead of the kernel's (a
    /// test simulates a kernel without Landlock).
    pub fn with_sandbox_support(mut self, support: SandboxSupport) -> Self {
        self.support = Some(support);
        self
    }

    /// The background jobs started by this tool's calls.
    pub fn jobs(&self) -> &Arc<JobTable> {
        &self.jobs
    }

    /// The same tool keeping the jobs of an earlier shell of the workspace: a server that
    /// opens a workspace's tools again (its settings changed) must not end the commands
    /// running in the background, as dropping their table would.
    pub fn with_jobs(mut self, jobs: Arc<JobTable>) -> Self {
        self.jobs = jobs;
        self
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(
        description = "Exact bash command to run, as `bash -c <command>`. Compound commands (&&, ||, ;, |) are allowed; each part is checked against the permission rules."
    )]
    command: String,
    #[schemars(
        description = "Brief description of what the command does, shown to the person approving it."
    )]
    description: Option<String>,
    #[schemars(
        description = "Absolute path of the directory to run in; must be inside the workspace. Defaults to the first workspace directory."
    )]
    directory: Option<String>,
    #[schemars(
        description = "Run detached (servers, watchers, long builds): returns at once with a job id, the PID and a log file to read with read_file. Do not add a trailing '&'."
    )]
    is_background: Option<bool>,
    #[schemars(
        range(min = 1, max = MAX_TIMEOUT_MS),
        description = "Timeout in milliseconds for a foreground command (default 120000, at most 600000). On timeout the whole process group is killed."
    )]
    timeout: Option<u64>,
}

/// The tool's name.
pub(crate) const NAME: &str = "run_shell_command";
/// What permission rules may call it besides its name (see `crate::rule_vocabulary`).
pub(crate) const RULE_ALIASES: &[&str] = &["Bash", "Shell"];

/// The tool as a built-in (see [`crate::builtin`]): its rule words and how a session
/// makes it.
pub(crate) const BUILTIN: crate::builtin::Builtin = crate::builtin::Builtin {
    name: NAME,
    rule_aliases: RULE_ALIASES,
    path_operation: None,
    make: crate::builtin::Make::Shell,
};

impl Tool for RunShellCommand {
    fn name(&self) -> &str {
        NAME
    }
    fn display_name(&self) -> &str {
        "Shell"
    }
    fn description(&self) -> &str {
        "Runs a bash command (`bash -c <command>`) and returns its output. The command runs in its own process group \
         with no terminal and an empty, closed standard input: it cannot prompt, so pass answers up front (git commit -m, \
         --yes, -y; git runs with GIT_EDITOR=true, so it never opens an editor). A command whose output stops on a prompt \
         is ended after a few seconds with a note saying what it waited for. Pagers are off; it runs in the given directory or \
         the first workspace directory. Standard output and standard error come back interleaved, with ANSI colours \
         removed; long output is cut to its head and tail and the full output saved to a file whose path is given. \
         The result gives Command, Directory, Output, Error, Exit Code, Signal, Background PIDs and Process Group PGID; \
         a non-zero exit code is reported, not treated as a failure. Foreground commands time out after 'timeout' ms \
         (default 120000); use is_background for servers and watchers (a foreground one whose output settles on a line \
         such as 'listening on' or 'ready' is moved to the background, with a job id). Prefer read_file, grep_search, glob and \
         list_directory over cat, grep, find and ls."
    }
    fn rule_aliases(&self) -> &[&'static str] {
        RULE_ALIASES
    }
    fn kind(&self) -> Kind {
        Kind::Execute
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn can_update_output(&self) -> bool {
        true
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        let command = params.command.trim().to_string();
        if command.is_empty() {
            return Err(ToolError::invalid_params("The command is empty."));
        }
        if command.len() > MAX_COMMAND_BYTES {
            return Err(ToolError::invalid_params(format!(
                "The command is {} bytes; the kernel passes at most {MAX_COMMAND_BYTES} bytes as one argument to the shell. Write the script to a file with write_file and run that file.",
                command.len()
            )));
        }
        let parsed = command_parse::parse(&command);
        if parsed.commands.is_empty() {
            return Err(ToolError::invalid_params(format!(
                "Could not identify a command to run in '{command}'."
            )));
        }
        let background = params.is_background.unwrap_or(false);
        if background && parsed.ends_in_background {
            return Err(ToolError::invalid_params(
                "Remove the trailing '&': is_background already runs the command in the background, and a bare '&' would detach it from the job table.",
            ));
        }
        let timeout_ms = params.timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
        if timeout_ms == 0 || timeout_ms > MAX_TIMEOUT_MS {
            return Err(ToolError::invalid_params(format!(
                "timeout must be between 1 and {MAX_TIMEOUT_MS} milliseconds, not {timeout_ms}."
            )));
        }
        let cwd = match params.directory.as_deref().map(str::trim) {
            Some(dir) if !dir.is_empty() => {
                let real = self.env.roots.resolve(dir)?;
                if !real.is_dir() {
                    return Err(ToolError::new(
                        ErrorKind::PathIsNotADirectory,
                        format!("The directory '{dir}' does not exist or is not a directory."),
                    ));
                }
                real
            }
            _ => default_dir(&self.env).ok_or_else(|| {
                ToolError::invalid_params("There is no workspace directory to run in.")
            })?,
        };
        Ok(Box::new(ShellCall {
            env: self.env.clone(),
            jobs: self.jobs.clone(),
            command,
            description: params.description.filter(|d| !d.trim().is_empty()),
            parsed,
            cwd,
            background,
            timeout: Duration::from_millis(timeout_ms),
            support: self.support.clone(),
            log_cap: self.log_cap,
        }))
    }
}

struct ShellCall {
    env: Arc<ToolEnvironment>,
    jobs: Arc<JobTable>,
    command: String,
    description: Option<String>,
    parsed: ParsedCommand,
    cwd: PathBuf,
    background: bool,
    timeout: Duration,
    support: Option<SandboxSupport>,
    log_cap: u64,
}

impl Invocation for ShellCall {
    fn describe(&self) -> String {
        let mut text = self.command.clone();
        if self.directory_given() {
            text.push_str(&format!(
                " [in {}]",
                self.env.roots.display_relative(&self.cwd)
            ));
        }
        if let Some(d) = &self.description {
            text.push_str(&format!(" ({})", d.replace('\n', " ")));
        }
        if self.background {
            text.push_str(" [background]");
        }
        text
    }

    fn locations(&self) -> Vec<PathBuf> {
        vec![self.cwd.clone()]
    }

    fn permission_subject(&self) -> PermissionSubject {
        PermissionSubject::Commands(self.parsed.rule_subjects())
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async move {
            let line_read_only = read_only::is_line_read_only(&self.parsed);
            let inert = line_read_only
                && (!read_only::uses_git(&self.parsed)
                    || repository_config_is_inert(&self.cwd).await);
            // A command that runs unasked runs confined; where it cannot be, it asks.
            // Whether it can be matters only where a part could go unasked: a read-only
            // line, or a read-only part whose approval it spares (below, `vouch`). Else
            // the answer changes nothing here, and finding it out (once per process: a
            // Landlock probe on a thread of its own, a seccomp program compiled) is left
            // to the first command it matters for (issue 49: a third of a millisecond
            // before the session's first command).
            let matters = line_read_only
                || (!self.parsed.writes_to_file
                    && self.parsed.commands.iter().any(read_only::is_read_only));
            let unconfinable = if matters {
                self.unasked_confinement().err()
            } else {
                None
            };
            let crowded =
                self.background && self.jobs.running_unasked() >= background::MAX_UNASKED_JOBS;
            if inert && unconfinable.is_none() && !crowded {
                return None;
            }
            let title = match unconfinable.as_ref().filter(|_| inert) {
                Some(why) => format!(
                    "Confirm Shell Command (read-only, but it cannot run unasked: this system cannot confine it, {why}; tools.shell.allowUnsandboxed: true runs such commands unconfined)"
                ),
                None if inert && crowded => format!(
                    "Confirm Shell Command (read-only, but {} background jobs started without approval are still running; stop one with task_stop to start another unasked)",
                    background::MAX_UNASKED_JOBS
                ),
                None => "Confirm Shell Command".to_string(),
            };
            // Only the parts that are not read-only need approval; with a substitution
            // (or a parse error), or no sandbox for the read-only parts, nothing can be
            // vouched for, so every root is shown.
            let vouch = !self.parsed.has_substitution
                && !self.parsed.syntax_error
                && unconfinable.is_none();
            let mut roots: Vec<String> = Vec::new();
            // One command no rule may name (a wrapper, `eval`, a path only known at run
            // time, a line too complex to analyse) leaves the whole question without
            // "always".
            let mut nameless =
                self.parsed.unanalysed.is_some() || self.parsed.program_variable.is_some();
            for c in &self.parsed.commands {
                // A read-only line that still asks does so because of the repository's
                // git configuration: its git commands are the ones to show.
                let needs = if line_read_only && vouch {
                    c.words
                        .first()
                        .is_some_and(|w| w.rsplit('/').next() == Some("git"))
                } else {
                    !vouch || !read_only::is_read_only(c) || self.parsed.writes_to_file
                };
                match command_parse::runs::rule_root(c) {
                    Some(root) if needs && !roots.contains(&root) => roots.push(root),
                    None if needs => nameless = true,
                    _ => {}
                }
            }
            if nameless {
                roots.clear();
            }
            // It runs approved, if at all: in the shared namespace, whose holder starts
            // now, beside the approval and the checkpoint.
            if self.process_namespace() && !self.keeps_past_end() {
                toolbelt_process::isolate::start_shared_early();
            }
            Some(ConfirmationDetails::Exec {
                title,
                command: self.command.clone(),
                root_commands: roots,
            })
        })
    }

    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let sandbox = match self.prepare_sandbox(ctx.consent, &ctx.call_id) {
                Ok(s) => s,
                Err(e) => return ToolResult::err(ErrorKind::ExecutionDenied, e.0),
            };
            if self.background {
                self.run_background(sandbox, ctx.call_id.clone(), ctx.consent)
            } else {
                self.run_foreground(ctx, sandbox).await
            }
        })
    }
}

impl ShellCall {
    fn directory_given(&self) -> bool {
        default_dir(&self.env).as_deref() != Some(self.cwd.as_path())
    }

    fn support(&self) -> SandboxSupport {
        self.support.clone().unwrap_or_else(SandboxSupport::detect)
    }

    /// `Ok` when a command may run unasked: it can be confined, or the person chose to
    /// run such commands unconfined.
    fn unasked_confinement(&self) -> Result<(), String> {
        if self.env.settings.tools.shell.allow_unsandboxed {
            return Ok(());
        }
        self.support().can_confine().map_err(|e| e.to_string())
    }

    /// The sandbox for a call that came to run with `consent`: read-only when nobody
    /// approved it; for an approved one, the workspace sandbox when `tools.sandbox` asks
    /// for it (`Ok(None)`: unconfined). An error when a sandbox is needed and missing and
    /// `tools.shell.allowUnsandboxed` does not allow running without it.
    fn prepare_sandbox(
        &self,
        consent: Consent,
        call_id: &str,
    ) -> Result<Option<PreparedSandbox>, sandbox::SandboxUnavailable> {
        let allow = self.env.settings.tools.shell.allow_unsandboxed;
        if consent != Consent::Approved {
            let own_logs = self.jobs.connection_log_dir(call_id);
            let hidden = sandbox::Hidden::of_session(&self.env, own_logs);
            let limits = sandbox::Limits::new(&self.env.settings.tools.shell.limits);
            return match PreparedSandbox::read_only(&self.support(), &hidden, limits) {
                Ok(s) => Ok(Some(s)),
                Err(_) if allow => Ok(None),
                Err(e) => Err(e),
            };
        }
        let wanted =
            self.env.settings.tools.sandbox == toolbelt_config::settings::Sandbox::Landlock;
        if !wanted {
            return Ok(None);
        }
        match PreparedSandbox::workspace(self.env.roots.roots()) {
            Ok(s) => Ok(Some(s)),
            Err(_) if allow => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// What of toolbelt's environment the command gets (`tools.shell.environment`).
    fn environment(&self) -> environment::EnvironmentPolicy {
        environment::EnvironmentPolicy::new(&self.env.settings.tools.shell.environment.passthrough)
    }

    /// Whether this command, if it runs, outlives toolbelt (a background job the
    /// settings keep past its end): it then stays outside the shared namespace.
    fn keeps_past_end(&self) -> bool {
        self.background && !self.jobs.kills_on_exit()
    }

    /// Whether approved commands join the shared PID namespace
    /// (`tools.shell.processNamespace`).
    fn process_namespace(&self) -> bool {
        self.env.settings.tools.shell.process_namespace
    }

    fn log_path(&self, dir: &str, name: &str) -> PathBuf {
        self.env.session_dir.join(dir).join(name)
    }

    fn run_background(
        self,
        sandbox: Option<PreparedSandbox>,
        started_by: String,
        consent: Consent,
    ) -> ToolResult {
        let id = self.jobs.next_id();
        let log_name = log_name(&id, consent);
        let file = self
            .jobs
            .log_dir(&self.env.session_dir, &started_by)
            .map(|dir| dir.join(&log_name))
            .and_then(|path| {
                toolbelt_config::store_files::create_dir_all(path.parent().unwrap_or(&path))?;
                Ok((toolbelt_config::store_files::create(&path)?, path))
            });
        let log_path = match &file {
            Ok((_, path)) => path.clone(),
            Err(_) => self.log_path("background", &log_name),
        };
        let file = match file.map(|(f, _)| f) {
            Ok(f) => f,
            Err(e) => {
                return ToolResult::err(
                    ErrorKind::ShellExecuteError,
                    format!(
                        "Could not create the job's log file {}: {e}",
                        log_path.display()
                    ),
                );
            }
        };
        let owner = process::Owner::new();
        // Through a capped copy while toolbelt outlives the job; a kept job's log through
        // a writer of its own, which caps it after toolbelt is gone too (its cap is taken
        // from the session's budget now, all of it).
        let budget = self.jobs.log_budget_for(consent);
        let target = if self.jobs.kills_on_exit() {
            self.jobs.remove_with_session(&log_path, consent);
            OutputTarget::CappedFile {
                file,
                cap: self.log_cap,
                budget,
            }
        } else {
            OutputTarget::KeptFile {
                file,
                cap: budget.take(self.log_cap),
            }
        };
        let env = self.environment();
        let running = match process::spawn(
            &self.command,
            &self.cwd,
            target,
            sandbox,
            &env,
            &owner,
            self.process_namespace(),
        ) {
            Ok(r) => r,
            Err(e) => return self.spawn_error(&e),
        };
        if consent != Consent::Approved {
            self.jobs.note_unasked(&id);
        }
        let job = self.jobs.add(
            Job {
                id: id.clone(),
                command: self.command.clone(),
                pid: running.pid,
                pgid: running.pid,
                shown_pid: toolbelt_process::isolate::command_pid(running.pid),
                log_path: log_path.clone(),
                status: JobStatus::Running,
                started_by,
            },
            running.child,
            owner,
            running.log_copied,
        );
        self.started(&id, &job, &log_path)
    }

    /// What the model and a display are told of a job that started.
    fn started(&self, id: &str, job: &Job, log_path: &Path) -> ToolResult {
        let text = format!(
            "Background command started.\nid: {id}\nCommand: {}\nDirectory: {}\nPID: {}\nProcess Group PGID: {}\nOutput file: {}\n\
             The job keeps running after this call; its standard output and standard error go to the output file, \
             which you can read with read_file. It is ended when the session ends.",
            self.command,
            self.env.roots.display_relative(&self.cwd),
            job.shown_pid,
            job.shown_pid,
            log_path.display()
        );
        ToolResult::with_display(
            text,
            Display::markdown(format!(
                "Started `{}` in the background as {id} (PID {}).",
                self.command, job.shown_pid
            )),
        )
    }

    fn spawn_error(&self, e: &std::io::Error) -> ToolResult {
        ToolResult::err(
            ErrorKind::ShellExecuteError,
            format!("Could not start the command `{}`: {e}", self.command),
        )
    }
}

/// A command log's file name: `<stem>-<pid>.log`, or `<stem>.unasked-<pid>.log` for a
/// command nobody approved, whose log goes with the session ([`sweep_unasked_logs`]
/// finds those of a toolbelt that could not remove them).
fn log_name(stem: &str, consent: Consent) -> String {
    let pid = std::process::id();
    if consent == Consent::Approved {
        format!("{stem}-{pid}.log")
    } else {
        format!("{stem}.unasked-{pid}.log")
    }
}

/// Removes the logs of unasked commands that a toolbelt which ended without cleaning up
/// (SIGKILL, a crash) left in `session_dir`: those whose toolbelt (the pid in the name)
/// no longer runs, or whose pid now names a program that is no toolbelt. Logs of approved commands
/// stay, as they do after every session. Returns how many it removed.
pub fn sweep_unasked_logs(session_dir: &Path) -> usize {
    let me = std::fs::read_link("/proc/self/exe").ok();
    let mut removed = 0;
    for dir in ["shell", "background"] {
        let Ok(entries) = std::fs::read_dir(session_dir.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".log")?.rsplit_once(".unasked-"))
                .and_then(|(_, pid)| pid.parse::<u32>().ok())
            else {
                continue;
            };
            // Another toolbelt build (an installed one beside a `cargo run`) on the same
            // project is still using its logs: only a pid that is gone, or now names a
            // program that is no toolbelt, frees them.
            let running = std::fs::read_link(format!("/proc/{pid}/exe")).ok();
            let a_toolbelt = running.as_ref().is_some_and(|exe| {
                Some(exe) == me.as_ref() || exe.to_string_lossy().contains("toolbelt")
            });
            if !a_toolbelt {
                removed += usize::from(std::fs::remove_file(entry.path()).is_ok());
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests;
