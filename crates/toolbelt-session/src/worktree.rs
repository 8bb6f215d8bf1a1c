//! A session in a git worktree (issue 45): `--worktree[=NAME]` makes one before the
//! session is assembled, and the session opens in it, so its workspace, the shell's
//! directory, its settings and rules are the worktree's; `--resume ID` finds the
//! worktree of the session it continues in a sidecar file beside the saved session
//! (`<ID>.worktree.json`) and opens there again, and so does `--continue` for the
//! project's latest session. A sidecar whose worktree was removed
//! is reported and the session opens where it was started.
//!
//! The saved sessions stay in the store of the directory the person started in, so
//! `--resume ID` from their checkout finds them. The worktree machinery itself (names,
//! git, guards) is `toolbelt_tools::worktree`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolbelt_agent::subagents::{Isolated, WorktreeIsolation};
use toolbelt_core::{BoxFuture, ToolEnvironment, WorkDirSlot};
use toolbelt_engine::hooks::HookEvent;
use toolbelt_tools::worktree::{self, NameRequest, SessionWorktrees, Worktree};

use crate::options::Warn;
use crate::session::SetupError;

/// What a front end asks of worktrees when it opens a session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorktreeOptions {
    /// `--worktree[=NAME]`: `Some("")` for a generated name, `#N` for a pull request.
    pub create: Option<String>,
    /// `--resume ID`: re-attach to the worktree that session worked in, if it had one.
    pub resume: Option<String>,
    /// `--continue`: re-attach to the worktree of the project's latest session, as
    /// `--resume` with its ID would.
    pub continue_latest: bool,
}

impl WorktreeOptions {
    /// `--worktree`'s value and `--resume`'s.
    pub fn new(create: Option<String>, resume: Option<String>) -> Self {
        WorktreeOptions {
            create,
            resume,
            continue_latest: false,
        }
    }

    /// The ID of the session this run continues: `--resume`'s, or with `--continue`
    /// the newest of the saved sessions of `dir` (the one the agent will load).
    fn continued(&self, dir: &Path) -> Option<String> {
        if let Some(id) = &self.resume {
            return Some(id.clone());
        }
        if !self.continue_latest {
            return None;
        }
        let ids = crate::saved::store(dir).ids().ok()?;
        ids.into_iter().next()
    }
}

/// The sidecar's content: the worktree, and whether the session made it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Sidecar {
    worktree: Worktree,
    made: bool,
}

/// Where a session opens and what it knows of its worktrees.
pub(crate) struct Attached {
    /// The directory to open the session in.
    pub(crate) dir: PathBuf,
    /// The directory the person started in, when a worktree took its place.
    pub(crate) home: Option<PathBuf>,
    /// The session's worktrees (shared with `enter_worktree` and `exit_worktree`).
    pub(crate) state: Arc<SessionWorktrees>,
    /// Said to the model once: where it works.
    pub(crate) reminder: Option<String>,
    /// A worktree made now, to be prepared once the settings are read
    /// ([`Attached::prepare`]) and announced to the hooks when the agent starts.
    pub(crate) fresh: Option<Worktree>,
}

impl Attached {
    /// Links and copies into a worktree made for this session, and pins its hooks
    /// (`toolbelt_tools::worktree::populate`); what was skipped is warned.
    pub(crate) fn prepare(&self, settings: &toolbelt_config::settings::Settings, warn: &Warn) {
        if let Some(w) = &self.fresh {
            let links = &settings.worktree.symlink_directories;
            for skipped in worktree::populate::populate(w, links) {
                warn.say(&format!("worktree {}: {skipped}", w.slug));
            }
        }
    }
}

/// The directory to open the session in: a new worktree, the resumed session's, or
/// `dir` itself.
pub(crate) fn attach(
    dir: &Path,
    options: &WorktreeOptions,
    warn: &Warn,
) -> Result<Attached, SetupError> {
    let continued = options.continued(dir);
    let resumed = match &continued {
        Some(id) => read_sidecar(dir, id, warn),
        None => None,
    };
    let mut fresh = None;
    let (worktree, made) = match (resumed, &options.create) {
        (Some(sidecar), _) => (sidecar.worktree, sidecar.made),
        (None, Some(value)) => {
            let request =
                NameRequest::parse(value).map_err(|e| SetupError(format!("--worktree: {e}")))?;
            match existing_for_resume(dir, continued.is_some(), &request) {
                // Not known to be this session's: its removal is refused.
                Some(found) => (found, false),
                None => {
                    let made = worktree::create(dir, &request)
                        .map_err(|e| SetupError(format!("--worktree: {e}")))?;
                    fresh = Some(made.clone());
                    (made, true)
                }
            }
        }
        (None, None) => {
            return Ok(Attached {
                dir: dir.to_path_buf(),
                home: None,
                state: Arc::new(SessionWorktrees::default()),
                reminder: None,
                fresh: None,
            });
        }
    };
    let reminder = format!(
        "You are working in the git worktree {} (branch {}), a checkout of its own: the user's checkout at {} is \
         not changed by anything you do here. Commit your work on this branch.",
        worktree.path.display(),
        worktree.branch,
        worktree.repo.display()
    );
    Ok(Attached {
        dir: worktree::same_place(&worktree, dir),
        home: Some(dir.to_path_buf()),
        state: Arc::new(SessionWorktrees::new(Some(worktree), made)),
        reminder: Some(reminder),
        fresh,
    })
}

/// `--resume ID --worktree=NAME` (or `--continue --worktree=NAME`) without a sidecar:
/// the existing worktree NAME, which the resumed session goes on in (Qwen Code's way to
/// re-attach by hand).
fn existing_for_resume(dir: &Path, resuming: bool, request: &NameRequest) -> Option<Worktree> {
    match request {
        NameRequest::Named(name) if resuming => worktree::find(dir, name).ok(),
        _ => None,
    }
}

/// The sidecar of session `id` in the store of `dir`, when it names a worktree that
/// still exists; a removed one is said and forgotten.
fn read_sidecar(dir: &Path, id: &str, warn: &Warn) -> Option<Sidecar> {
    let file = sidecar_path(dir, id)?;
    let text = std::fs::read_to_string(&file).ok()?;
    let sidecar: Sidecar = match serde_json::from_str(&text) {
        Ok(s) => s,
        Err(e) => {
            warn.say(&format!(
                "{}: not a worktree record ({e}); ignored",
                file.display()
            ));
            return None;
        }
    };
    let known = worktree::list(&sidecar.worktree.repo)
        .map(|all| all.iter().any(|w| w.path == sidecar.worktree.path))
        .unwrap_or(false);
    if !known {
        warn.say(&format!(
            "the worktree {} of session {id} was removed; the session continues in {}",
            sidecar.worktree.path.display(),
            dir.display()
        ));
        return None;
    }
    Some(sidecar)
}

/// `<sessions of dir>/<id>.worktree.json`; `None` for an ID that is not a plain name
/// (it becomes a file name).
fn sidecar_path(dir: &Path, id: &str) -> Option<PathBuf> {
    let plain = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    plain.then(|| crate::paths::sessions_dir(dir).join(format!("{id}.worktree.json")))
}

/// Records the worktree session `id` works in beside its saved conversation in `store`
/// (a failure is a warning: the session runs, only its resume will not re-attach).
pub(crate) fn write_sidecar(store: &Path, id: &str, state: &SessionWorktrees, warn: &Warn) {
    let Some(worktree) = state.started_in() else {
        return;
    };
    let sidecar = Sidecar {
        worktree: worktree.clone(),
        made: state.made(&worktree.path),
    };
    let file = store.join(format!("{id}.worktree.json"));
    let written = serde_json::to_vec_pretty(&sidecar)
        .map_err(|e| e.to_string())
        .and_then(|bytes| {
            toolbelt_config::store_files::create_dir_all(store).map_err(|e| e.to_string())?;
            toolbelt_config::store_files::write_atomic(&file, &bytes).map_err(|e| e.to_string())
        });
    if let Err(e) = written {
        warn.say(&format!("cannot write {}: {e}", file.display()));
    }
}

/// Whether `dir` is in a git repository, judged without running git (a `.git` in it or
/// above): the worktree tools are offered only there.
pub(crate) fn in_repository(dir: &Path) -> bool {
    dir.ancestors().any(|a| a.join(".git").exists())
}

/// The start-up sweep of stale sub-agent worktrees (`toolbelt_tools::worktree::removal`),
/// run only when the repository around `dir` has a sub-agent worktree folder at all, so
/// a session without any starts no git.
pub(crate) fn sweep(dir: &Path) {
    let Some(repo) = dir.ancestors().find(|a| a.join(".git").exists()) else {
        return;
    };
    let folder = repo.join(worktree::WORKTREES_DIR);
    let any_agent = std::fs::read_dir(&folder).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_str().is_some_and(worktree::is_agent_slug))
    });
    if any_agent {
        for gone in worktree::removal::sweep_stale(repo, worktree::removal::STALE_AFTER) {
            tracing::info!(
                "removed the stale sub-agent worktree {}",
                gone.path.display()
            );
        }
    }
}

/// What `toolbelt worktree` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// List the worktrees.
    List,
    /// Remove one and its branch, after the guards (the person asking is its owner).
    Remove {
        /// Its name.
        name: String,
        /// Also with uncommitted changes.
        discard_changes: bool,
    },
}

/// `toolbelt worktree list` and `toolbelt worktree remove NAME` in the repository around
/// `dir`: 0 done, 1 refused or failed, 2 no repository or no such worktree.
pub fn command(dir: &Path, action: Action) -> crate::CommandOutput {
    let out = |stdout: String, stderr: String, code: u8| crate::CommandOutput {
        stdout,
        stderr,
        code,
    };
    match action {
        Action::List => match worktree::list(dir) {
            Ok(all) if all.is_empty() => out(String::new(), "no worktrees\n".into(), 0),
            Ok(all) => {
                let lines: String = all.iter().map(listing_line).collect();
                out(lines, String::new(), 0)
            }
            Err(e) => out(String::new(), format!("toolbelt: {e}\n"), 2),
        },
        Action::Remove {
            name,
            discard_changes,
        } => {
            let found = match worktree::find(dir, &name) {
                Ok(w) => w,
                Err(e) => return out(String::new(), format!("toolbelt: {e}\n"), 2),
            };
            match worktree::removal::remove_guarded(&found, true, discard_changes) {
                Ok(_) => out(
                    format!(
                        "removed {} and its branch {}\n",
                        found.path.display(),
                        found.branch
                    ),
                    String::new(),
                    0,
                ),
                Err(why) => out(String::new(), format!("toolbelt: {why}\n"), 1),
            }
        }
    }
}

/// `NAME  BRANCH  PATH  (N commits of its own, M uncommitted files)`.
fn listing_line(w: &Worktree) -> String {
    let held = match worktree::removal::changes(w) {
        Ok(c) => format!(
            "{} commit(s) of its own, {} uncommitted file(s)",
            c.unique_commits, c.uncommitted
        ),
        Err(e) => format!("cannot tell what it holds: {e}"),
    };
    format!("{}\t{}\t{}\t{held}\n", w.slug, w.branch, w.path.display())
}

/// Sub-agents' worktrees (`isolation: worktree`): `.qwen/worktrees/agent-<7 hex>` from
/// the session directory's branch, with the built-in tools over a workspace rooted in
/// it (the session's path rules, readable places and protected configuration kept).
struct SubagentWorktrees {
    /// The session's environment.
    env: Arc<ToolEnvironment>,
    /// The session's directory.
    dir: PathBuf,
    /// The session's worktrees, whose hooks are told.
    state: Arc<SessionWorktrees>,
}

impl WorktreeIsolation for SubagentWorktrees {
    fn create(&self) -> BoxFuture<'_, Result<Isolated, toolbelt_core::EmbedderError>> {
        Box::pin(async move {
            let (dir, links) = (
                self.dir.clone(),
                self.env.settings.worktree.symlink_directories.clone(),
            );
            let made = tokio::task::spawn_blocking(move || make_for_subagent(&dir, &links))
                .await
                .map_err(|e| format!("cannot make its worktree: {e}"))??;
            let mut env = (*self.env).clone();
            let relocation = relocation(&self.dir, &made);
            env.roots = self
                .env
                .roots
                .rerooted(&relocation.from, &relocation.to)
                .map_err(|e| format!("cannot use its worktree: {e}"))?;
            // Its own: the clone would share the session's.
            env.work_dir = WorkDirSlot::default();
            let env = Arc::new(env);
            self.state.announce(HookEvent::WorktreeCreate, &made).await;
            let state = self.state.clone();
            let cwd = made.path.clone();
            let finish = Box::new(move || {
                Box::pin(finish_subagent(made, state)) as BoxFuture<'static, Option<String>>
            });
            Ok(Isolated {
                tools: toolbelt_tools::builtin_tools(&env),
                env,
                cwd,
                relocation,
                withheld: WORKTREE_TOOLS.iter().map(|n| n.to_string()).collect(),
                finish,
            })
        })
    }
}

/// From the top of the checkout the session works in (a worktree of its own too, for a
/// `--worktree` session) to the sub-agent's worktree, both resolved as rules are.
fn relocation(dir: &Path, made: &Worktree) -> toolbelt_core::Relocation {
    let top = dir
        .ancestors()
        .find(|a| a.join(".git").exists())
        .unwrap_or(&made.repo);
    let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    toolbelt_core::Relocation {
        from: real(top),
        to: real(&made.path),
    }
}

/// The tools that move the session between worktrees.
const WORKTREE_TOOLS: [&str; 2] = [
    toolbelt_tools::EnterWorktree::NAME,
    toolbelt_tools::ExitWorktree::NAME,
];

/// The sub-agents' worktrees of a session in `dir`; `None` outside a repository.
pub(crate) fn isolation(
    env: &Arc<ToolEnvironment>,
    dir: &Path,
    state: &Arc<SessionWorktrees>,
) -> Option<Arc<dyn WorktreeIsolation>> {
    in_repository(dir).then(|| {
        Arc::new(SubagentWorktrees {
            env: env.clone(),
            dir: dir.to_path_buf(),
            state: state.clone(),
        }) as Arc<dyn WorktreeIsolation>
    })
}

/// Makes a sub-agent's worktree and prepares it.
fn make_for_subagent(dir: &Path, links: &[String]) -> Result<Worktree, String> {
    let slug = worktree::name::generate("agent-", 7);
    let made = worktree::create(dir, &NameRequest::Named(slug))
        .map_err(|e| format!("cannot make its worktree: {e}"))?;
    for skipped in worktree::populate::populate(&made, links) {
        tracing::warn!("sub-agent worktree {}: {skipped}", made.slug);
    }
    Ok(made)
}

/// At a sub-agent's end: its worktree removed when it holds no change (and the hooks
/// told), else the line naming it for the result.
async fn finish_subagent(made: Worktree, state: Arc<SessionWorktrees>) -> Option<String> {
    let check = made.clone();
    let removed =
        tokio::task::spawn_blocking(move || worktree::removal::remove_if_unchanged(&check)).await;
    let (path, branch) = (made.path.display(), &made.branch);
    match removed {
        Ok(Ok(true)) => {
            state.announce(HookEvent::WorktreeRemove, &made).await;
            None
        }
        Ok(Ok(false)) => Some(format!("[worktree preserved: {path} (branch {branch})]")),
        Ok(Err(e)) => Some(format!("[worktree kept: {path} (branch {branch}): {e}]")),
        Err(e) => Some(format!("[worktree kept: {path} (branch {branch}): {e}]")),
    }
}
