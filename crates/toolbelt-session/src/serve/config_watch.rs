//! Following the files that define a workspace's tools while `toolbelt mcp serve` runs.
//!
//! A server lives for days inside an editor, so a person who edits
//! `.qwen/settings.json` (a deny rule, a declared tool, `tools.discoveryCommand`), adds a
//! manifest under `.qwen/tools/` or a skill, changes `.lsp.json`, or trusts the folder,
//! expects the server to follow without a restart. [`ConfigWatch`] watches those places with inotify (the
//! `notify` crate) and, once they have been quiet for [`QUIET`], makes the changes
//! counter of [`toolbelt_mcp::serve::Workspaces`] grow: every connection opens its tools
//! again (the discovery command runs again then, so its output is read anew too) and
//! tells its client if the offered tools changed; the new rules apply from the next call.
//!
//! What is watched, for each workspace opened ([`tool_sources`]): the system, user and
//! workspace settings files and the trusted-folders file; the manifest folders
//! (`.qwen/tools/` of the project and of the home directory) and each `tools.manifests`
//! entry; the skill folders (`.qwen/skills`, `.agents/skills`, `~/.qwen/skills`, and
//! each skill's folder in them, 128 at most); the `.lsp.json` of the project and of the
//! home (`lsp.servers` is in the settings files); and whether the project has a `.git`
//! (the `gitRepository` key of `when` clauses). Not watched: what a discovery command
//! reads besides the settings (it runs again at every other change, a new set of roots,
//! or a restart), the inside of `.git` (every `git status` writes there), and `.git`
//! folders above the project.
//!
//! A file is watched through its folder (an editor's atomic save replaces the file, and
//! a watch on the file would follow the old inode); a place that does not exist yet is
//! watched through its nearest existing ancestor, and the watches are set again after
//! each change, so `mkdir .qwen` followed by a new settings file is seen. Events on
//! other files in a watched folder (the home directory, `/etc`) are dropped by
//! [`Sources::concerns`] without a reload. The watches are never removed: a server opens
//! a handful of workspaces in its life, each a few watches.
//!
//! A discovery command that itself wrote into a watched place (a manifest folder) would
//! open the tools again after each run, at most once per [`QUIET`] + `PAUSE`; the
//! settings files and manifests are the person's, and no discovery command should.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::{mpsc, watch};
use toolbelt_config::trust::TrustedFolders;
use toolbelt_config::{settings::Settings, settings::SettingsPaths};

/// How long the watched places must be quiet before the tools are opened again: an
/// editor's save is several events, a `git clone` of a project with `.qwen/` hundreds.
pub(crate) const QUIET: Duration = Duration::from_millis(200);

/// The longest a change waits for its burst to end.
const LONGEST_WAIT: Duration = Duration::from_secs(2);

/// The shortest time between two reopenings for file changes.
const PAUSE: Duration = Duration::from_millis(500);

/// One place whose change may change the tools.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Source {
    /// A file or a folder.
    pub(crate) path: PathBuf,
    /// How deep a change inside it counts: 0, only its own appearance and removal
    /// (`.git`, a file); 1, its entries (a manifest folder); 2, its entries' entries
    /// (a skills folder: `<name>/SKILL.md`).
    pub(crate) depth: usize,
    /// The project folder a project's own place must stay in: a `.qwen/skills` that
    /// is a link to `/` is not watched (nor read by the loaders).
    pub(crate) within: Option<PathBuf>,
}

impl Source {
    fn at(path: PathBuf, depth: usize) -> Self {
        Source {
            path,
            depth,
            within: None,
        }
    }

    fn within(mut self, project: &Path) -> Self {
        self.within = Some(project.to_path_buf());
        self
    }
}

/// At most this many sub-folders of one source are watched (the skills reader reads
/// at most 128 of a folder): a hostile project must not spend the user's inotify
/// watches, which other programs share, or the server's time.
const MAX_SUBFOLDERS: usize = 128;

/// The places that define the tools of a workspace whose primary folder is `primary`,
/// read with `settings`.
pub(crate) fn tool_sources(primary: &Path, settings: &Settings) -> Vec<Source> {
    let standard = SettingsPaths::standard(primary);
    let mut sources: Vec<Source> = [standard.system, standard.user, standard.workspace]
        .into_iter()
        .flatten()
        .chain(TrustedFolders::user_file())
        .map(|file| Source::at(file, 0))
        .collect();
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let project = primary
        .canonicalize()
        .unwrap_or_else(|_| primary.to_path_buf());
    for dir in [".qwen/tools", ".qwen/skills", ".agents/skills"] {
        let depth = if dir.ends_with("tools") { 1 } else { 2 };
        sources.push(Source::at(primary.join(dir), depth).within(&project));
    }
    // The language servers (a change ends the old ones: see `keep_language_servers`).
    sources.push(Source::at(primary.join(".lsp.json"), 0).within(&project));
    if let Some(home) = &home {
        sources.push(Source::at(home.join(".qwen/tools"), 1));
        sources.push(Source::at(home.join(".qwen/skills"), 2));
        sources.push(Source::at(home.join(".qwen/.lsp.json"), 0));
    }
    // An entry is a manifest file or a folder of them.
    sources.extend(
        settings
            .tools
            .manifests
            .iter()
            .map(|entry| Source::at(primary.join(entry), 1)),
    );
    sources.push(Source::at(primary.join(".git"), 0));
    sources
}

/// Every source of the workspaces opened so far.
#[derive(Default)]
struct Sources {
    all: HashSet<Source>,
}

impl Sources {
    /// Whether a change at `path` may change the tools: it is a source, inside one no
    /// deeper than its depth, or a folder on the way to one (`.qwen` created or removed).
    fn concerns(&self, path: &Path) -> bool {
        self.all.iter().any(|source| {
            source.path.starts_with(path)
                || path
                    .strip_prefix(&source.path)
                    .is_ok_and(|inside| inside.components().count() <= source.depth)
        })
    }
}

/// The watches of a serving process (see the module documentation).
pub(crate) struct ConfigWatch {
    watcher: Mutex<RecommendedWatcher>,
    sources: Mutex<Sources>,
    /// The folders watched (each without its sub-folders).
    watched: Mutex<HashSet<PathBuf>>,
}

impl ConfigWatch {
    /// Starts watching nothing yet; `changes` grows after each quiet change of a source
    /// [`ConfigWatch::add`] names. `None` (with the reason) when the system has no
    /// watches to give: the server then follows no file changes.
    pub(crate) fn start(changes: watch::Sender<u64>) -> Result<Arc<ConfigWatch>, String> {
        let (events, mut received) = mpsc::unbounded_channel::<Vec<PathBuf>>();
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if let Ok(event) = event
                && changes_something(&event.kind)
            {
                let _ = events.send(event.paths);
            }
        })
        .map_err(|e| format!("cannot watch the settings files: {e}"))?;
        let watch = Arc::new(ConfigWatch {
            watcher: Mutex::new(watcher),
            sources: Mutex::default(),
            watched: Mutex::default(),
        });
        let weak = Arc::downgrade(&watch);
        tokio::spawn(async move {
            while let Some(paths) = received.recv().await {
                let Some(watch) = weak.upgrade() else { break };
                if !watch.concerns(&paths) {
                    continue;
                }
                // Wait for the burst to end (or for LONGEST_WAIT: a folder written to
                // without end must not hold the change back forever), then take it as
                // one change.
                let deadline = tokio::time::Instant::now() + LONGEST_WAIT;
                while let Ok(Ok(Some(_))) =
                    tokio::time::timeout_at(deadline, tokio::time::timeout(QUIET, received.recv()))
                        .await
                {}
                watch.rearm();
                tracing::info!("a file that defines the tools changed; opening them again");
                changes.send_modify(|generation| *generation += 1);
                // Each change may run a discovery command: at most one per PAUSE.
                drop(watch);
                tokio::time::sleep(PAUSE).await;
            }
        });
        Ok(watch)
    }

    /// Watches `sources` too (those already watched are skipped).
    pub(crate) fn add(&self, sources: Vec<Source>) {
        if let Ok(mut all) = self.sources.lock() {
            all.all.extend(sources.iter().cloned());
        }
        for source in &sources {
            self.arm(source);
        }
    }

    fn concerns(&self, paths: &[PathBuf]) -> bool {
        self.sources
            .lock()
            .is_ok_and(|sources| paths.iter().any(|p| sources.concerns(p)))
    }

    /// Sets the watches again: a source that did not exist may now.
    fn rearm(&self) {
        let sources: Vec<Source> = match self.sources.lock() {
            Ok(sources) => sources.all.iter().cloned().collect(),
            Err(_) => return,
        };
        for source in &sources {
            self.arm(source);
        }
    }

    /// Watches `source`: a folder whose entries count, and for depth 2 its
    /// sub-folders; a file, or a folder whose presence alone counts, through its
    /// parent; what does not exist, through its nearest existing ancestor.
    fn arm(&self, source: &Source) {
        if let Some(project) = &source.within
            && source
                .path
                .canonicalize()
                .is_ok_and(|real| !real.starts_with(project))
        {
            return;
        }
        if source.depth > 0 && source.path.is_dir() {
            self.watch_folder(&source.path);
            if source.depth > 1
                && let Ok(entries) = std::fs::read_dir(&source.path)
            {
                // Real sub-folders only: a link may lead anywhere.
                entries
                    .filter_map(Result::ok)
                    .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
                    .take(MAX_SUBFOLDERS)
                    .for_each(|entry| self.watch_folder(&entry.path()));
            }
            return;
        }
        let mut ancestor = source.path.parent();
        while let Some(dir) = ancestor
            && !dir.is_dir()
        {
            ancestor = dir.parent();
        }
        if let Some(dir) = ancestor {
            self.watch_folder(dir);
        }
    }

    /// One inotify watch on `dir` (its entries, not theirs), once.
    fn watch_folder(&self, dir: &Path) {
        let Ok(mut watched) = self.watched.lock() else {
            return;
        };
        if watched.contains(dir) {
            return;
        }
        let armed = match self.watcher.lock() {
            Ok(mut watcher) => watcher.watch(dir, RecursiveMode::NonRecursive),
            Err(_) => return,
        };
        match armed {
            Ok(()) => {
                watched.insert(dir.to_path_buf());
            }
            Err(e) => tracing::warn!("cannot watch {}: {e}", dir.display()),
        }
    }
}

/// Events that may change what a file says (not reads, not opens).
fn changes_something(kind: &EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode};
    match kind {
        EventKind::Create(_) | EventKind::Modify(_) | EventKind::Remove(_) => true,
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) | EventKind::Any | EventKind::Other => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(list: &[(&str, usize)]) -> Sources {
        Sources {
            all: list
                .iter()
                .map(|(p, depth)| Source::at(PathBuf::from(p), *depth))
                .collect(),
        }
    }

    #[test]
    fn a_change_concerns_a_source_what_is_inside_it_and_the_folders_on_the_way() {
        let s = sources(&[
            ("/p/.qwen/settings.json", 0),
            ("/p/.qwen/tools", 1),
            ("/p/.qwen/skills", 2),
            ("/p/.git", 0),
        ]);
        for yes in [
            "/p/.qwen/settings.json",
            "/p/.qwen/skills/review/SKILL.md",
            "/p/.qwen/skills/review",
            "/p/.qwen/tools/notes.json",
            "/p/.qwen",
            "/p/.git",
        ] {
            assert!(s.concerns(Path::new(yes)), "{yes}");
        }
        for no in [
            "/p/README.md",
            "/p/.qwen/settings.json.swp",
            "/p/.qwen/cache.json",
            "/p/.git/index",
            "/p/.gitignore",
            "/p/.qwen/skills/review/scripts/run.sh",
            "/p/.qwen/tools/sub/x.json",
        ] {
            assert!(!s.concerns(Path::new(no)), "{no}");
        }
    }

    #[tokio::test]
    async fn a_projects_folder_that_leads_outside_it_is_not_watched() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(project.join(".qwen")).unwrap();
        std::fs::create_dir_all(outside.join("deep")).unwrap();
        std::fs::create_dir_all(project.join(".agents/skills/real")).unwrap();
        std::os::unix::fs::symlink(&outside, project.join(".qwen/skills")).unwrap();
        std::os::unix::fs::symlink(&outside, project.join(".agents/skills/link")).unwrap();
        let (changes, _) = watch::channel(0);
        let config = ConfigWatch::start(changes).unwrap();
        config.add(tool_sources(&project, &Settings::default()));
        let watched = config.watched.lock().unwrap().clone();
        let project = project.canonicalize().unwrap();
        assert!(
            watched.contains(&project.join(".agents/skills/real")),
            "{watched:?}"
        );
        assert!(
            watched
                .iter()
                .all(|w| !w.starts_with(outside.canonicalize().unwrap())
                    && !w.starts_with(project.join(".qwen/skills"))
                    && !w.ends_with("link")),
            "{watched:?}"
        );
    }
}
