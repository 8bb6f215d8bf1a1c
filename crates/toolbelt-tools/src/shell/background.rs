//! Background jobs: commands started with `is_background: true`.
//!
//! A job runs detached from the call that started it, in its own process group, with its
//! output going straight to a log file under the session directory (which the model may
//! read). The table records each job's id, PID, process group, log file, status and exit
//! code, so "is it still running?" has an answer other than "the log is empty" (Qwen Code
//! users saw models start duplicates of a job whose output was merely buffered).
//!
//! The table belongs to the shell tool and is shared by its calls. When it is dropped
//! (the session ends), jobs still running are ended, unless
//! `tools.shell.killBackgroundOnExit` is `false` (then the binary's last sweep spares
//! them too, see `toolbelt_process::end_descendants_blocking`).
//!
//! Ending a job ends what its [`Owner`] finds: the shell while it runs, its group while
//! the group is provably the job's, and every process carrying the job's marker (what it
//! started with `setsid` or `nohup` and left behind when its shell exited). Each is
//! signalled by its own identity, never by a group id: once a job's shell has been
//! reaped its group id may be reused by an unrelated process.
//!
//! In `toolbelt mcp serve` one table serves every connection of a workspace, and a
//! connection's jobs are its own: `task_stop` finds only the jobs of the caller's
//! connection ([`JobTable::stop_for`]; call ids are `mcp-<connection>-<n>`), and their
//! logs go to a folder of the connection's own ([`JobTable::log_dir`]) with an
//! unguessable name, under a folder no tool may list (the workspace roots read only its
//! entries) and, for a user other than root, no `ls` either (mode `0300`), removed
//! when the connection ends.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use toolbelt_core::Consent;
use toolbelt_process::log::{LogBudget, SESSION_LOG_BUDGET, UNASKED_LOG_BUDGET};

use super::process::{self, Owner};

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    /// Still running.
    Running,
    /// Exited on its own, with this code (or ended by this signal).
    Exited {
        /// The exit code, when it exited.
        code: Option<i32>,
        /// The signal that ended it, when one did.
        signal: Option<i32>,
    },
    /// Ended by [`JobTable::stop`] or at the end of the session.
    Stopped,
}

/// One background job, as the model and a display see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The id the model uses (`task_stop`).
    pub id: String,
    /// The command line as given.
    pub command: String,
    /// The process id of the job's shell.
    pub pid: u32,
    /// Process group id (equal to the PID: the job leads its group).
    pub pgid: u32,
    /// The id the job's own processes know its shell by: its id in the PID namespace
    /// approved commands share, where it runs in one; else `pid`. What the model is told.
    pub shown_pid: u32,
    /// Where its output goes.
    pub log_path: PathBuf,
    /// Where it stands, as of the last look.
    pub status: JobStatus,
    /// The id of the call that started it (empty outside a scheduler): `toolbelt mcp
    /// serve` ends a connection's jobs by the prefix of its call ids.
    pub started_by: String,
}

/// A job and a channel that announces its status changes.
#[derive(Clone)]
struct Entry {
    job: Arc<Mutex<Job>>,
    status: tokio::sync::watch::Sender<JobStatus>,
    /// Set once the shell has been waited for (reaped).
    reaped: tokio::sync::watch::Sender<bool>,
    /// Set by `stop` before it signals the group, so the exit it causes is recorded
    /// as stopped, not as an exit by SIGTERM, whichever side notices first.
    stopping: Arc<std::sync::atomic::AtomicBool>,
    /// Finds the job's processes, also those that left its group.
    owner: Arc<Owner>,
}

impl Entry {
    fn snapshot(&self) -> Option<Job> {
        self.job.lock().ok().map(|j| j.clone())
    }

    /// Records a final status unless one was recorded already.
    fn settle(&self, status: JobStatus) {
        if let Ok(mut job) = self.job.lock()
            && job.status == JobStatus::Running
        {
            job.status = status;
            self.status.send_replace(status);
        }
    }
}

/// The jobs of one session.
pub struct JobTable {
    jobs: Mutex<Vec<Entry>>,
    next_id: AtomicU64,
    kill_on_drop: bool,
    /// Each connection's own log folder (see the module's documentation).
    private_logs: Mutex<HashMap<String, PathBuf>>,
    /// What all its commands' logs may still write (a session's budget: the table lives
    /// as long as the session's shell, and across a server's reopenings of it).
    log_budget: Arc<LogBudget>,
    /// The part of it the logs of unasked commands may take.
    unasked_log_budget: Arc<LogBudget>,
    /// Logs of unasked commands, removed when the table goes (the session ends).
    unasked_logs: Mutex<Vec<PathBuf>>,
    /// The ids of the jobs nobody approved (see [`MAX_UNASKED_JOBS`]).
    unasked_jobs: Mutex<Vec<String>>,
}

/// How many jobs started without the person's approval may run at once. Each is
/// confined and limited in CPU time, but their number was not: twelve `md5sum
/// /dev/zero` jobs ran unasked. Past this number a further one asks (what the person
/// approves runs as approved), so the model learns to stop jobs it no longer needs.
pub(crate) const MAX_UNASKED_JOBS: usize = 4;

/// The connection a call id names: `mcp-3-` of `mcp-3-17`, as `toolbelt mcp serve`
/// numbers its calls; empty for any other id (one session, one owner).
pub(crate) fn connection_of(call_id: &str) -> &str {
    let Some(rest) = call_id.strip_prefix("mcp-") else {
        return "";
    };
    match rest.split_once('-') {
        Some((connection, n))
            if !connection.is_empty()
                && connection.bytes().all(|b| b.is_ascii_digit())
                && n.bytes().all(|b| b.is_ascii_digit()) =>
        {
            &call_id[..4 + connection.len() + 1]
        }
        _ => "",
    }
}

/// The folder that holds the connections' log folders: beside the session folder (which
/// tools may list), `<session>.connections`, whose entries only are readable (see
/// `WorkspaceRoots::add_readable_below`).
pub fn connection_logs_dir(session_dir: &Path) -> PathBuf {
    let mut name = session_dir.file_name().unwrap_or_default().to_os_string();
    name.push(".connections");
    session_dir.with_file_name(name)
}

/// How long a job's end waits for its log's copy once its shell exited.
const LOG_DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

impl JobTable {
    /// An empty table. Without `kill_on_drop` its jobs outlive the session
    /// (`tools.shell.killBackgroundOnExit` off).
    pub fn new(kill_on_drop: bool) -> Self {
        let log_budget = LogBudget::new(SESSION_LOG_BUDGET);
        JobTable {
            jobs: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            kill_on_drop,
            private_logs: Mutex::default(),
            unasked_log_budget: LogBudget::within(&log_budget, UNASKED_LOG_BUDGET),
            log_budget,
            unasked_logs: Mutex::default(),
            unasked_jobs: Mutex::default(),
        }
    }

    /// Records that the job `id` was started without the person's approval.
    pub(crate) fn note_unasked(&self, id: &str) {
        if let Ok(mut ids) = self.unasked_jobs.lock() {
            ids.push(id.to_string());
        }
    }

    /// How many jobs started without approval are still running.
    pub(crate) fn running_unasked(&self) -> usize {
        let ids = match self.unasked_jobs.lock() {
            Ok(ids) => ids.clone(),
            Err(_) => return 0,
        };
        ids.iter()
            .filter(|id| {
                self.get(id)
                    .is_some_and(|job| job.status == JobStatus::Running)
            })
            .count()
    }

    /// The same table with a log budget of `bytes`, half of it for unasked commands (a
    /// test's small one).
    #[cfg(test)]
    pub(crate) fn with_log_budget(mut self, bytes: u64) -> Self {
        self.log_budget = LogBudget::new(bytes);
        self.unasked_log_budget = LogBudget::within(&self.log_budget, bytes / 2);
        self
    }

    /// What the log of a command that runs with `consent` may still write: the
    /// session's budget, shared by this table's commands (its jobs' and the foreground
    /// calls'), and for a command nobody approved the unasked commands' part of it.
    pub(crate) fn log_budget_for(&self, consent: Consent) -> Arc<LogBudget> {
        if consent == Consent::Approved {
            self.log_budget.clone()
        } else {
            self.unasked_log_budget.clone()
        }
    }

    /// Records the log at `path` of a command that runs with `consent`: an unasked
    /// command's log is removed when the session ends (nobody asked for it to stay;
    /// a kept job's log is never recorded here).
    pub(crate) fn remove_with_session(&self, path: &Path, consent: Consent) {
        if consent != Consent::Approved
            && let Ok(mut logs) = self.unasked_logs.lock()
        {
            logs.push(path.to_path_buf());
            // The binary may end without dropping the table.
            toolbelt_process::log::remove_at_exit(path);
        }
    }

    /// Whether its jobs end with the session (`tools.shell.killBackgroundOnExit`).
    pub(crate) fn kills_on_exit(&self) -> bool {
        self.kill_on_drop
    }

    /// A fresh job id (`bg_1`, `bg_2`, …).
    pub fn next_id(&self) -> String {
        format!("bg_{}", self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Records a started job and watches it: when the child exits, its status and exit
    /// code are recorded (and the child reaped). `owner` is the one the job's shell was
    /// spawned with. `log_copied`, when the log is written through a copy, completes when
    /// the copy is done: the job reads as ended only then (for at most [`LOG_DRAIN`]
    /// after its shell exited: a process it left running may hold the pipe open).
    pub(crate) fn add(
        &self,
        job: Job,
        mut child: tokio::process::Child,
        owner: Owner,
        log_copied: Option<tokio::sync::oneshot::Receiver<()>>,
    ) -> Job {
        if !self.kill_on_drop {
            owner.keep_on_exit();
        }
        let entry = Entry {
            job: Arc::new(Mutex::new(job.clone())),
            status: tokio::sync::watch::channel(JobStatus::Running).0,
            reaped: tokio::sync::watch::channel(false).0,
            stopping: Arc::default(),
            owner: Arc::new(owner),
        };
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.push(entry.clone());
        }
        tokio::spawn(async move {
            use std::os::unix::process::ExitStatusExt;
            let status = child.wait().await;
            if let Some(copied) = log_copied {
                let _ = tokio::time::timeout(LOG_DRAIN, copied).await;
            }
            entry.settle(match status {
                _ if entry.stopping.load(Ordering::SeqCst) => JobStatus::Stopped,
                Ok(s) => JobStatus::Exited {
                    code: s.code(),
                    signal: s.signal(),
                },
                Err(_) => JobStatus::Exited {
                    code: None,
                    signal: None,
                },
            });
            entry.reaped.send_replace(true);
        });
        job
    }

    /// Every job, oldest first.
    pub fn jobs(&self) -> Vec<Job> {
        self.entries().iter().filter_map(Entry::snapshot).collect()
    }

    /// The job `id`, as it stands now.
    pub fn get(&self, id: &str) -> Option<Job> {
        self.jobs().into_iter().find(|j| j.id == id)
    }

    /// Waits until the job is no longer running and returns it; `None` when there is no
    /// such job.
    pub async fn wait(&self, id: &str) -> Option<Job> {
        let entry = self.entry(id)?;
        let mut rx = entry.status.subscribe();
        let _ = rx.wait_for(|s| *s != JobStatus::Running).await;
        entry.snapshot()
    }

    /// Ends a job: its shell if it still runs, and every process it started, also one
    /// it left behind after its shell exited. `None` when there is no such job.
    pub async fn stop(&self, id: &str) -> Option<Job> {
        let entry = self.entry(id)?;
        let job = entry.snapshot()?;
        let running = job.status == JobStatus::Running;
        if running {
            entry.stopping.store(true, Ordering::SeqCst);
        }
        entry.owner.kill(process::KILL_GRACE, true).await;
        if running {
            entry.settle(JobStatus::Stopped);
            // The watcher reaps the shell; wait for it so no zombie of ours remains
            // (bounded: a watcher on a stopped runtime never answers).
            let mut reaped = entry.reaped.subscribe();
            let _ = tokio::time::timeout(process::KILL_GRACE, reaped.wait_for(|r| *r)).await;
        }
        entry.snapshot()
    }

    /// Stops every job whose call id starts with `prefix` and that was not stopped
    /// already: a running one, and one whose shell exited but may have left processes
    /// behind (`nohup server &`); returns their ids.
    pub async fn stop_started_by(&self, prefix: &str) -> Vec<String> {
        let ids: Vec<String> = self
            .jobs()
            .into_iter()
            .filter(|j| j.status != JobStatus::Stopped && j.started_by.starts_with(prefix))
            .map(|j| j.id)
            .collect();
        for id in &ids {
            self.stop(id).await;
        }
        ids
    }

    /// [`JobTable::stop`] for a call `caller` made: a job another connection started is
    /// not found (as if it did not exist: its id says nothing to this caller).
    pub async fn stop_for(&self, id: &str, caller: &str) -> Option<Job> {
        let job = self.get(id)?;
        if connection_of(&job.started_by) != connection_of(caller) {
            return None;
        }
        self.stop(id).await
    }

    /// Where the logs of jobs that call `started_by` starts go: `<session>/background`,
    /// or for a connection of `toolbelt mcp serve` its own folder (created once, mode
    /// `0700`, an unguessable name under an unlistable folder).
    pub fn log_dir(&self, session_dir: &Path, started_by: &str) -> std::io::Result<PathBuf> {
        let connection = connection_of(started_by);
        if connection.is_empty() {
            return Ok(session_dir.join("background"));
        }
        let mut logs = self
            .private_logs
            .lock()
            .map_err(|_| std::io::Error::other("the job table is poisoned"))?;
        if let Some(dir) = logs.get(connection) {
            return Ok(dir.clone());
        }
        let parent = connection_logs_dir(session_dir);
        toolbelt_config::store_files::create_dir_all(&parent)?;
        std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o300))?;
        let dir = parent.join(uuid::Uuid::new_v4().simple().to_string());
        toolbelt_config::store_files::create_dir(&dir)?;
        logs.insert(connection.to_string(), dir.clone());
        Ok(dir)
    }

    /// The log folder of the connection `started_by` belongs to, if it has one already
    /// (the read-only sandbox keeps it readable for that connection's commands).
    pub(crate) fn connection_log_dir(&self, started_by: &str) -> Option<PathBuf> {
        let connection = connection_of(started_by);
        if connection.is_empty() {
            return None;
        }
        self.private_logs.lock().ok()?.get(connection).cloned()
    }

    /// Removes the log folder of the connection whose calls begin with `prefix` (it
    /// ended; its jobs were stopped).
    pub fn remove_logs_of(&self, prefix: &str) {
        let dir = self
            .private_logs
            .lock()
            .ok()
            .and_then(|mut logs| logs.remove(prefix));
        if let Some(dir) = dir
            && let Err(e) = std::fs::remove_dir_all(&dir)
        {
            tracing::warn!("cannot remove {}: {e}", dir.display());
        }
    }

    fn remove_unasked_logs(&self) {
        for log in self
            .unasked_logs
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default()
        {
            let _ = std::fs::remove_file(log);
        }
    }

    fn entry(&self, id: &str) -> Option<Entry> {
        self.entries()
            .into_iter()
            .find(|e| e.snapshot().is_some_and(|j| j.id == id))
    }

    fn entries(&self) -> Vec<Entry> {
        self.jobs.lock().map(|j| j.clone()).unwrap_or_default()
    }
}

impl Drop for JobTable {
    fn drop(&mut self) {
        // The unlistable folder becomes an ordinary one again, so what cleans the
        // session folder can (no connection of this table is left to hide from).
        if let Some(dir) = self.private_logs.lock().ok().and_then(|logs| {
            logs.values()
                .next()
                .and_then(|d| d.parent())
                .map(Path::to_path_buf)
        }) {
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        }
        if !self.kill_on_drop {
            self.remove_unasked_logs();
            return;
        }
        // A job whose shell exited may have left processes (in its group or not): every
        // job's owner is asked, and all are ended at once, each process by identity.
        let entries = self.entries();
        let owners: Vec<&Owner> = entries.iter().map(|e| e.owner.as_ref()).collect();
        for entry in &entries {
            entry.stopping.store(true, Ordering::SeqCst);
        }
        toolbelt_process::kill_all_blocking(&owners, process::KILL_GRACE, true);
        for entry in entries {
            entry.settle(JobStatus::Stopped);
        }
        // Last, once nothing writes them any more.
        self.remove_unasked_logs();
    }
}
