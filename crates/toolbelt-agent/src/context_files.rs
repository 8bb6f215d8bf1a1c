//! Context (memory) files: `QWEN.md` and `AGENTS.md` (or the names in
//! `context.fileName`), global first (`~/.qwen/`), then every directory from the git root
//! down to the working directory, so the nearest file is read last and weighs most.
//!
//! A file that cannot be read is skipped with a warning: context is a help, not a
//! requirement. The total is capped so a huge file cannot crowd out the conversation.
//!
//! The project's files (from the git root down) are read through
//! [`toolbelt_config::project_file::read_in_project`]: a cloned repository's `QWEN.md`
//! that links to `~/.ssh/id_rsa` (or anywhere else outside the git root) is skipped
//! with a warning rather than sent to the model. The global file is the person's own.
//!
//! Which names are looked for where is the settings' decision
//! ([`Settings::context_file_names`]): `~/.qwen` only with the person's own names (or the
//! defaults), so a project naming `.env` or `oauth_creds.json` reads those files of the
//! project at most, never the person's.

use std::path::{Path, PathBuf};

use toolbelt_config::settings::ContextFileNamesByPlace;
use toolbelt_config::settings::Settings;
use toolbelt_config::{project_file, project_file::ProjectFileError};
/// Most bytes of context files put in the prompt.
pub const MAX_CONTEXT_BYTES: usize = 200 * 1024;

/// One file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    /// Where it was found.
    pub path: PathBuf,
    /// Its contents.
    pub text: String,
}

/// The file names from `context.fileName` (a string or a list), or the defaults, by
/// where each may be read.
pub fn file_names(settings: &Settings) -> ContextFileNamesByPlace {
    settings.context_file_names()
}

/// The project of `cwd` for context files: the nearest directory holding `.git`, or
/// `cwd` itself.
fn project_root(cwd: &Path) -> &Path {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd)
}

/// The directories searched, in reading order.
pub fn search_dirs(home: Option<&Path>, cwd: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(home) = home {
        dirs.push(home.join(".qwen"));
    }
    let git_root = project_root(cwd);
    let mut chain: Vec<PathBuf> = cwd
        .ancestors()
        .take_while(|d| d.starts_with(git_root))
        .map(Path::to_path_buf)
        .collect();
    chain.reverse();
    for d in chain {
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

/// Reads the context files for `cwd`: `names.own` in `~/.qwen`, `names.project` in the
/// project's folders.
pub fn load(names: &ContextFileNamesByPlace, home: Option<&Path>, cwd: &Path) -> Vec<ContextFile> {
    let mut files = Vec::new();
    let mut total = 0;
    let global = home.map(|h| h.join(".qwen"));
    let project = project_root(cwd);
    for dir in search_dirs(home, cwd) {
        let in_global = global.as_deref() == Some(dir.as_path());
        let names = if in_global {
            &names.own[..]
        } else {
            names.for_project_dir(&dir)
        };
        for name in names {
            let path = dir.join(name);
            // Only an entry that is not there is skipped silently: a link that leads
            // out, a FIFO or a directory is worth a warning.
            if std::fs::symlink_metadata(&path).is_err() {
                continue;
            }
            let read = if in_global {
                project_file::read_own(&path, MAX_CONTEXT_BYTES as u64)
            } else {
                project_file::read_in_project(&path, project, MAX_CONTEXT_BYTES as u64)
            };
            let text = read.and_then(|bytes| {
                String::from_utf8(bytes)
                    .map_err(|_| ProjectFileError::Io("it is not UTF-8 text".into()))
            });
            match text {
                Ok(text) if text.trim().is_empty() => {}
                Ok(text) => {
                    if total + text.len() > MAX_CONTEXT_BYTES {
                        tracing::warn!(
                            "context file {} skipped: context files are capped at {MAX_CONTEXT_BYTES} bytes",
                            path.display()
                        );
                        continue;
                    }
                    total += text.len();
                    files.push(ContextFile { path, text });
                }
                Err(e) => tracing::warn!("context file {} skipped: {e}", path.display()),
            }
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_then_git_root_down_to_the_working_directory() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let sub = repo.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(repo.path().join(".git")).unwrap();
        std::fs::create_dir_all(home.path().join(".qwen")).unwrap();
        std::fs::write(home.path().join(".qwen/QWEN.md"), "global").unwrap();
        std::fs::write(repo.path().join("AGENTS.md"), "root agents").unwrap();
        std::fs::write(repo.path().join("a/QWEN.md"), "middle").unwrap();
        std::fs::write(sub.join("QWEN.md"), "   \n").unwrap();
        let names = file_names(&Settings::default());
        let texts: Vec<String> = load(&names, Some(home.path()), &sub)
            .into_iter()
            .map(|f| f.text)
            .collect();
        assert_eq!(texts, ["global", "root agents", "middle"]);
    }

    #[test]
    fn project_files_that_lead_out_of_the_project_are_skipped() {
        let home = tempfile::tempdir().unwrap();
        let secrets = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let sub = repo.path().join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(repo.path().join(".git")).unwrap();
        std::fs::create_dir_all(home.path().join(".qwen")).unwrap();
        std::fs::write(secrets.path().join("id_rsa"), "PRIVATE KEY").unwrap();
        std::fs::write(secrets.path().join("mine.md"), "the person's own").unwrap();
        // The person's global file may link anywhere: it is theirs.
        std::os::unix::fs::symlink(
            secrets.path().join("mine.md"),
            home.path().join(".qwen/QWEN.md"),
        )
        .unwrap();
        // A cloned repository's may not, directly, through a linked folder or `..`.
        std::os::unix::fs::symlink(secrets.path().join("id_rsa"), repo.path().join("QWEN.md"))
            .unwrap();
        std::os::unix::fs::symlink(secrets.path(), repo.path().join("keys")).unwrap();
        std::os::unix::fs::symlink("../keys/id_rsa", sub.join("QWEN.md")).unwrap();
        // Endless or blocking files are skipped, not read.
        std::os::unix::fs::symlink("/dev/zero", repo.path().join("AGENTS.md")).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(sub.join("AGENTS.md"))
            .status()
            .unwrap();
        assert!(status.success());
        let names = file_names(&Settings::default());
        let texts: Vec<String> = load(&names, Some(home.path()), &sub)
            .into_iter()
            .map(|f| f.text)
            .collect();
        assert_eq!(texts, ["the person's own"]);
        // A link that stays inside the project is read.
        std::fs::remove_file(sub.join("QWEN.md")).unwrap();
        std::fs::write(repo.path().join("shared.md"), "shared").unwrap();
        std::os::unix::fs::symlink("../shared.md", sub.join("QWEN.md")).unwrap();
        let texts: Vec<String> = load(&names, Some(home.path()), &sub)
            .into_iter()
            .map(|f| f.text)
            .collect();
        assert_eq!(texts, ["the person's own", "shared"]);
    }

    /// Issue 41: a cloned repository's settings naming `.env` and `oauth_creds.json`
    /// read those names in the project at most, trusted or not; the person's own files
    /// in `~/.qwen` are read only under the person's names.
    #[test]
    fn a_projects_names_never_read_the_persons_files() {
        use toolbelt_config::{settings::SettingsPaths, settings::WorkspaceTrust};
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let qwen = home.path().join(".qwen");
        std::fs::create_dir_all(&qwen).unwrap();
        std::fs::create_dir_all(repo.path().join(".git")).unwrap();
        std::fs::create_dir_all(repo.path().join(".qwen")).unwrap();
        std::fs::write(qwen.join("QWEN.md"), "global").unwrap();
        std::fs::write(qwen.join(".env"), "OPENAI_API_KEY=sk-secret").unwrap();
        std::fs::write(qwen.join("oauth_creds.json"), "{\"refresh\": \"tok\"}").unwrap();
        std::fs::write(qwen.join("settings.json"), "{}").unwrap();
        std::fs::write(
            repo.path().join(".qwen/settings.json"),
            r#"{"context": {"fileName": ["QWEN.md", ".env", "oauth_creds.json", "settings.json"]}}"#,
        )
        .unwrap();
        std::fs::write(repo.path().join(".env"), "PROJECT=1").unwrap();
        for trust in [
            WorkspaceTrust::FromFolders {
                project: repo.path().to_path_buf(),
                trusted_folders: None,
            },
            WorkspaceTrust::Trusted,
        ] {
            let paths = SettingsPaths {
                user: Some(qwen.join("settings.json")),
                workspace: Some(repo.path().join(".qwen/settings.json")),
                system: None,
                trust,
                claude_hooks: Vec::new(),
            };
            let settings = Settings::load(&paths).unwrap();
            let files = load(&file_names(&settings), Some(home.path()), repo.path());
            let texts: Vec<&str> = files.iter().map(|f| f.text.as_str()).collect();
            assert_eq!(texts, ["global", "PROJECT=1"], "{:?}", paths.trust);
        }
    }

    /// A git root above the project's settings (a home directory kept in git) is the
    /// person's folder: the project's names are not looked for there.
    #[test]
    fn a_projects_names_are_not_looked_for_above_its_folder() {
        use toolbelt_config::{settings::SettingsPaths, settings::WorkspaceTrust};
        let home = tempfile::tempdir().unwrap();
        let clone = home.path().join("clone");
        std::fs::create_dir_all(home.path().join(".git")).unwrap();
        std::fs::create_dir_all(clone.join(".qwen")).unwrap();
        std::fs::write(home.path().join(".env"), "HOME_SECRET=1").unwrap();
        std::fs::write(home.path().join("AGENTS.md"), "dotfiles agents").unwrap();
        std::fs::write(clone.join(".env"), "CLONE=1").unwrap();
        std::fs::write(
            clone.join(".qwen/settings.json"),
            r#"{"context": {"fileName": [".env", "AGENTS.md"]}}"#,
        )
        .unwrap();
        let settings = Settings::load(&SettingsPaths {
            user: None,
            workspace: Some(clone.join(".qwen/settings.json")),
            system: None,
            trust: WorkspaceTrust::Trusted,
            claude_hooks: Vec::new(),
        })
        .unwrap();
        let files = load(&file_names(&settings), Some(home.path()), &clone);
        let texts: Vec<&str> = files.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(texts, ["dotfiles agents", "CLONE=1"]);
    }

    #[test]
    fn settings_may_name_other_files() {
        let s = Settings::from_value(serde_json::json!({"context": {"fileName": "CLAUDE.md"}}))
            .unwrap();
        assert_eq!(file_names(&s).project, ["CLAUDE.md"]);
        let s =
            Settings::from_value(serde_json::json!({"context": {"fileName": ["A.md", "B.md"]}}))
                .unwrap();
        assert_eq!(file_names(&s).own, ["A.md", "B.md"]);
    }
}
