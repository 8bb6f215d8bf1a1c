//! File checkpoints in a session (issue 34): the project's [`History`] when the
//! settings allow it (`general.checkpointing`), its retention in the background
//! (`general.cleanupPeriodDays`), and `toolbelt restore` as a function of plain data
//! ([`Session::restore_command`]). The interactive commands (`/restore`, `/rewind`,
//! `/diff`) are in `kit/undo.rs`; the machinery is `toolbelt-history`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use toolbelt_core::ToolEnvironment;
use toolbelt_engine::checkpoint::Checkpoints;
use toolbelt_history::{History, HistoryConfig, HistoryError, Store, render};

use crate::paths::{absolute, history_dir, toolbelt_home};
use crate::session::Session;

/// Files larger than this are left out unless `general.checkpointing.maxFileSize` says
/// otherwise.
pub(crate) const DEFAULT_MAX_FILE_SIZE: u64 = 10 * 1024 * 1024;
/// More files than this and checkpoints stop, unless `general.checkpointing.maxFiles`
/// says otherwise.
pub(crate) const DEFAULT_MAX_FILES: u64 = 100_000;
/// A workspace of fewer files and folders than this is walked at each checkpoint rather
/// than watched with inotify: closing an inotify instance that held watches waits for a
/// kernel grace period (up to about 20 ms, at the end of every session), while walking
/// such a tree costs about 0.3 ms (5 files) to 1.5 ms (100), twice per shell call
/// (`HistoryConfig::watch_min_files`; `checkpoint_bench`, BENCHMARKS.md).
pub(crate) const WATCH_MIN_FILES: usize = 100;
/// Days a checkpoint is kept unless `general.cleanupPeriodDays` says otherwise.
pub(crate) const DEFAULT_CLEANUP_DAYS: u32 = 30;

/// The history of `project` for session `session` (not started: nothing is read yet).
fn history(env: &ToolEnvironment, project: &Path, session: &str, watch: bool) -> History {
    let c = &env.settings.general.checkpointing;
    let home = toolbelt_home();
    let home = home.canonicalize().unwrap_or(home);
    History::open(HistoryConfig {
        store_dir: history_dir(project),
        roots: env.roots.clone(),
        settings: env.settings.clone(),
        session: session.to_string(),
        size_cap: c.max_file_size.unwrap_or(DEFAULT_MAX_FILE_SIZE),
        max_files: usize::try_from(c.max_files.unwrap_or(DEFAULT_MAX_FILES)).unwrap_or(usize::MAX),
        exclude: vec![home],
        watch,
        watch_min_files: WATCH_MIN_FILES,
        work_dir: env.work_dir.clone(),
    })
}

/// The session's checkpoints when the settings keep them (and the same as the call
/// path's `Checkpoints`): the first picture of the workspace and the retention sweep
/// start in the background.
pub(crate) fn open(
    env: &ToolEnvironment,
    project: &Path,
    session: &str,
) -> (Option<History>, Option<Arc<dyn Checkpoints>>) {
    let general = &env.settings.general;
    if !general.checkpointing.enabled {
        return (None, None);
    }
    let history = history(env, project, session, true);
    history.start();
    let days = u64::from(general.cleanup_period_days.unwrap_or(DEFAULT_CLEANUP_DAYS));
    let store = history.store().dir().to_path_buf();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    // A thread only when there may be work: not for a fresh store, nor on the same day.
    if history.store().may_sweep(now) {
        let _ = std::thread::Builder::new()
            .name("toolbelt-history-sweep".into())
            .spawn(move || {
                if let Err(e) = Store::open(store).sweep(days, now, false) {
                    tracing::debug!("checkpoint retention: {e}");
                }
            });
    }
    let checkpoints = Arc::new(history.clone()) as Arc<dyn Checkpoints>;
    (Some(history), Some(checkpoints))
}

/// The checkpoints of a front end without a session of the agent's (`toolbelt tools
/// call`, `toolbelt mcp serve`): a session of its own in the project's history, opened
/// on the first call a checkpoint covers, so reads cost nothing. No retention sweep
/// (agent sessions do that); a watcher only when asked (not for one call).
struct OnFirstChange {
    env: Arc<ToolEnvironment>,
    project: PathBuf,
    session: String,
    watch: bool,
    history: tokio::sync::OnceCell<Option<History>>,
}

impl OnFirstChange {
    async fn history(&self) -> Option<&History> {
        self.history
            .get_or_init(|| async {
                if !self.env.settings.general.checkpointing.enabled {
                    return None;
                }
                let history = history(&self.env, &self.project, &self.session, self.watch);
                history.start();
                Some(history)
            })
            .await
            .as_ref()
    }
}

impl Checkpoints for OnFirstChange {
    fn before_call<'a>(
        &'a self,
        call: &'a toolbelt_engine::checkpoint::CheckpointCall,
    ) -> toolbelt_core::BoxFuture<'a, Result<(), toolbelt_engine::checkpoint::CheckpointError>>
    {
        Box::pin(async move {
            if !History::covers(call) {
                return Ok(());
            }
            match self.history().await {
                Some(history) => history.before_call(call).await,
                None => Ok(()),
            }
        })
    }

    fn after_call<'a>(
        &'a self,
        call: &'a toolbelt_engine::checkpoint::CheckpointCall,
    ) -> toolbelt_core::BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Some(Some(history)) = self.history.get() {
                history.after_call(call).await;
            }
        })
    }

    fn begin_turn(&self, _turn: toolbelt_engine::checkpoint::TurnStart) {}
}

impl Session {
    /// The scheduler of a one-call front end (`toolbelt tools call`): the settings'
    /// rules, in the settings' approval mode (the mode its `when` clauses are judged
    /// in), the session's hooks, and file checkpoints taken before a call that may
    /// change files (so `toolbelt restore` undoes it like an agent's), opened on that
    /// call only. The front end says who is asked, where events go and, when nobody
    /// can be asked, why.
    pub fn one_call_scheduler(
        &self,
        approver: Option<Arc<dyn toolbelt_engine::scheduler::Approver>>,
        events: tokio::sync::mpsc::UnboundedSender<toolbelt_engine::scheduler::SchedulerEvent>,
        nobody_to_ask: toolbelt_engine::scheduler::NobodyToAsk,
    ) -> toolbelt_engine::scheduler::Scheduler {
        use toolbelt_engine::{
            scheduler::CallRules, scheduler::Permissions, scheduler::Scheduler,
            scheduler::SchedulerConfig,
        };
        let rules = CallRules::new(
            Permissions::from_rules(self.rules.clone()),
            self.settings_mode(),
            self.hooks(),
            Some(self.lazy_checkpoints("tools-call", false)),
        );
        let config = SchedulerConfig::new(rules)
            .approver(approver)
            .events(events)
            .nobody_to_ask(nobody_to_ask);
        Scheduler::new(self.env.clone(), config)
    }

    /// File checkpoints under a session of their own (`<prefix>-<uuid>`), opened on the
    /// first call that may change files; with a watcher (`watch`) for a long-lived
    /// front end.
    pub(crate) fn lazy_checkpoints(&self, prefix: &str, watch: bool) -> Arc<dyn Checkpoints> {
        Arc::new(OnFirstChange {
            env: self.env.clone(),
            project: self.project(),
            session: format!("{prefix}-{}", uuid::Uuid::new_v4()),
            watch,
            history: tokio::sync::OnceCell::new(),
        })
    }
}

/// `toolbelt restore` as data.
#[derive(Debug, Clone, Default)]
pub struct RestoreRequest {
    /// List the checkpoints (also when there is no ID).
    pub list: bool,
    /// The checkpoint (its ID or a unique start of it).
    pub id: Option<String>,
    /// Restore without asking.
    pub yes: bool,
    /// Also overwrite files changed outside toolbelt since.
    pub force: bool,
    /// Only these paths (relative to the session's directory, or absolute).
    pub paths: Vec<PathBuf>,
}

/// What a command prints and its exit code.
#[derive(Debug, Clone, Default)]
pub struct CommandOutput {
    /// For standard output.
    pub stdout: String,
    /// For standard error.
    pub stderr: String,
    /// 0 done, 1 some paths could not be restored, 2 usage (no such checkpoint, a path
    /// outside the workspace), 3 refused (not confirmed), 4 the checkpoint store cannot be
    /// read or written (damaged, or the disk's error).
    pub code: u8,
}

impl CommandOutput {
    fn usage(message: String) -> Self {
        CommandOutput {
            stderr: format!("toolbelt: {message}\n"),
            code: 2,
            ..CommandOutput::default()
        }
    }

    /// A history that could not list or plan: the store's own failure is 4, what the
    /// person asked for (an unknown ID, a path outside) 2.
    fn failed(e: &HistoryError) -> Self {
        let mut out = CommandOutput::usage(e.to_string());
        if matches!(e, HistoryError::Store(_)) {
            out.code = 4;
        }
        out
    }
}

impl Session {
    /// `toolbelt restore`: the list of checkpoints (newest first), or one restored after
    /// its diff is shown and `ask` (a person at a terminal; `None`: nobody) or `--yes`
    /// agrees.
    pub fn restore_command(
        &self,
        request: &RestoreRequest,
        ask: Option<&dyn Fn(&str) -> bool>,
    ) -> CommandOutput {
        let history = history(&self.env, &self.project(), "restore", false);
        let Some(id) = request.id.as_deref().filter(|_| !request.list) else {
            return match history.list() {
                Ok((listed, damaged)) => CommandOutput {
                    stdout: render::list_text(&listed, &damaged),
                    ..CommandOutput::default()
                },
                Err(e) => CommandOutput::failed(&e),
            };
        };
        let only: Vec<PathBuf> = request
            .paths
            .iter()
            .map(|p| absolute(&self.dir, p))
            .collect();
        // A path outside the workspace is the plan's error, so a usage error here.
        let plan = match history.plan(id, &only) {
            Ok(plan) => plan,
            Err(e) => return CommandOutput::failed(&e),
        };
        let mut out = CommandOutput {
            stdout: render::plan_text(&history, &plan),
            ..CommandOutput::default()
        };
        if plan.is_empty() {
            return out;
        }
        let question = format!("Restore checkpoint {}?", plan.target.id);
        let agreed = request.yes || ask.is_some_and(|ask| ask(&question));
        if !agreed {
            let _ = writeln!(
                out.stderr,
                "toolbelt: nothing was restored: {}",
                if ask.is_some() {
                    "not confirmed"
                } else {
                    "no terminal to ask; pass --yes to restore"
                }
            );
            out.code = 3;
            return out;
        }
        match history.apply(&plan, request.force) {
            Ok(applied) => {
                out.stdout
                    .push_str(&render::applied_text(&applied, "toolbelt restore"));
                if !applied.failed.is_empty() {
                    out.code = 1;
                }
            }
            Err(e) => {
                let _ = writeln!(out.stderr, "toolbelt: nothing was restored: {e}");
                out.code = if matches!(e, HistoryError::Store(_)) {
                    4
                } else {
                    1
                };
            }
        }
        out
    }
}
