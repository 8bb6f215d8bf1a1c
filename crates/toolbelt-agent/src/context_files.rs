//! Context (memory) files: `QWEN.md` and `AGENTS.md` (or the names in
//! `context.fileName`), global first (`~/.qwen/`), then every directory from the git root
//! down to the working directory, so the nearest file is read last and weighs most.
//!
//! A file that cannot be read is skipped with a warning: context is a help, not a
//! requirement. The total is capped so a huge file cannot crowd out the conversation.

use std::path::{Path, PathBuf};

use toolbelt_core::Settings;

/// Names read when settings name none.
pub const DEFAULT_NAMES: [&str; 2] = ["QWEN.md", "AGENTS.md"];
/// Most bytes of context files put in the prompt.
pub const MAX_CONTEXT_BYTES: usize = 200 * 1024;

/// One file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub path: PathBuf,
    pub text: String,
}

/// The file names from `context.fileName` (a string or a list), or the defaults.
pub fn file_names(settings: &Settings) -> Vec<String> {
    match &settings.context.file_name {
        Some(names) if !names.0.is_empty() => names.0.clone(),
        _ => DEFAULT_NAMES.iter().map(|s| s.to_string()).collect(),
    }
}

/// The directories searched, in reading order.
pub fn search_dirs(home: Option<&Path>, cwd: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(home) = home {
        dirs.push(home.join(".qwen"));
    }
    let git_root = cwd
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd);
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

/// Reads the context files for `cwd`.
pub fn load(names: &[String], home: Option<&Path>, cwd: &Path) -> Vec<ContextFile> {
    let mut files = Vec::new();
    let mut total = 0;
    for dir in search_dirs(home, cwd) {
        for name in names {
            let path = dir.join(name);
            if !path.is_file() {
                continue;
            }
            match std::fs::read_to_string(&path) {
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
                Err(e) => tracing::warn!("cannot read context file {}: {e}", path.display()),
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
    fn settings_may_name_other_files() {
        let s = Settings::from_value(serde_json::json!({"context": {"fileName": "CLAUDE.md"}}))
            .unwrap();
        assert_eq!(file_names(&s), ["CLAUDE.md"]);
        let s =
            Settings::from_value(serde_json::json!({"context": {"fileName": ["A.md", "B.md"]}}))
                .unwrap();
        assert_eq!(file_names(&s), ["A.md", "B.md"]);
    }
}
