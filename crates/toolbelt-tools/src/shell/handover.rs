//! A foreground command that turned out to be a server moves to the background.
//!
//! When the output of a command still running settles on a "ready" line (see
//! [`super::waiting`]), the call hands the running command to the job table instead of
//! killing it at its timeout: the output so far opens the job's log, the pipe the call
//! was reading is copied into that log from then on (the same capped copy a job started
//! with `is_background` gets), and the job is ended with the session like any other.
//! The model gets the output so far, the job id and how to read more or stop it.

use std::time::Instant;

use tokio::net::unix::pipe;
use toolbelt_core::{Consent, Display, ErrorKind, ToolResult};
use toolbelt_process::log::{CappedLog, copy_to_log};

use super::ShellCall;
use super::background::{self, Job, JobStatus};
use super::output::OutputCapture;
use super::process::Owner;

/// What a foreground call hands over: the command, still running.
pub(super) struct StillRunning {
    pub child: tokio::process::Child,
    /// The shell's PID (its group's id).
    pub pid: u32,
    /// The output pipe, unless every writer closed it already.
    pub reader: Option<pipe::Receiver>,
    pub owner: Owner,
    pub capture: OutputCapture,
    /// The line that said it is ready.
    pub ready_line: String,
    pub started: Instant,
}

impl ShellCall {
    /// Whether a command of this call may move to the background: its jobs end with
    /// the session (a job kept past it would need a log writer of its own, which a
    /// running command's pipe cannot get now), and an unasked one does not exceed the
    /// unasked jobs allowed at once.
    pub(super) fn may_move(&self, consent: Consent) -> bool {
        self.jobs.kills_on_exit()
            && (consent == Consent::Approved
                || self.jobs.running_unasked() < background::MAX_UNASKED_JOBS)
    }

    /// Hands `running` to the job table and tells the model where it went.
    pub(super) fn move_to_background(
        self,
        running: StillRunning,
        started_by: &str,
        consent: Consent,
    ) -> ToolResult {
        let id = self.jobs.next_id();
        let log_name = format!("{id}-{}.log", std::process::id());
        let created = self
            .jobs
            .log_dir(&self.env.session_dir, started_by)
            .map(|dir| dir.join(&log_name))
            .and_then(|path| {
                toolbelt_config::store_files::create_dir_all(path.parent().unwrap_or(&path))?;
                Ok((toolbelt_config::store_files::create(&path)?, path))
            });
        let (file, log_path) = match created {
            Ok(created) => created,
            Err(e) => {
                // The command cannot be kept without a log: it ends as a timeout would.
                return ToolResult::err(
                    ErrorKind::ShellExecuteError,
                    format!(
                        "The command looked ready to move to the background (\"{}\"), but its log could not be created: {e}. It was ended.",
                        running.ready_line
                    ),
                );
            }
        };
        self.jobs.remove_with_session(&log_path, consent);
        let mut log = CappedLog::new(file, self.log_cap, Some(self.jobs.log_budget_for(consent)));
        // A log that cannot be written still lets the copy drain the pipe.
        let _ = log.write(&running.capture.kept_bytes());
        let copied = running
            .reader
            .and_then(|r| r.into_blocking_fd().ok())
            .and_then(|fd| copy_to_log(std::io::PipeReader::from(fd), log).ok());
        if consent != Consent::Approved {
            self.jobs.note_unasked(&id);
        }
        let shown_pid = toolbelt_process::isolate::command_pid(running.pid);
        self.jobs.add(
            Job {
                id: id.clone(),
                command: self.command.clone(),
                pid: running.pid,
                pgid: running.pid,
                shown_pid,
                log_path: log_path.clone(),
                status: JobStatus::Running,
                started_by: started_by.to_string(),
            },
            running.child,
            running.owner,
            copied,
        );
        let so_far = running.capture.finish(&self.output_budget());
        let text = format!(
            "Command is still running, and its output settled on a line saying it is ready (\"{}\"), so after {}ms it was moved \
             to the background instead of being ended.\nid: {id}\nCommand: {}\nDirectory: {}\nOutput so far: {}\nPID: {shown_pid}\n\
             Process Group PGID: {shown_pid}\nOutput file: {}\nIts further output goes to the output file: read it with read_file. \
             Stop it with task_stop (id {id}) when it is no longer needed; it is ended when the session ends. Next time, start \
             servers and watchers with is_background: true.",
            running.ready_line,
            running.started.elapsed().as_millis(),
            self.command,
            self.env.roots.display_relative(&self.cwd),
            if so_far.text.is_empty() {
                "(empty)"
            } else {
                &so_far.text
            },
            log_path.display(),
        );
        ToolResult::with_display(
            text,
            Display::markdown(format!(
                "{}\n[moved to the background as {id} (PID {shown_pid}): \"{}\"]",
                so_far.text, running.ready_line
            )),
        )
    }
}
