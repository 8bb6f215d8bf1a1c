//! Skills in the Agent Skills format (Qwen Code, Claude Code, Codex): a folder with a
//! `SKILL.md` whose front matter has `name`, `description` and optionally
//! `allowed-tools`, and whose body holds the instructions. Other files of the folder
//! (references, scripts, templates) are read by the model when the instructions say so.
//!
//! # Brief overview
//!
//! [`Skills::load`] reads three folders, in this order of precedence:
//!
//! 1. project `.qwen/skills/<name>/SKILL.md`,
//! 2. project `.agents/skills/<name>/SKILL.md` (the folder several agents share),
//! 3. user `~/.qwen/skills/<name>/SKILL.md`.
//!
//! When two folders define the same name the earlier one wins (project over user, and
//! `.qwen` over `.agents`: the folder named for this agent is the more specific one);
//! the hidden one is listed in [`Skills::shadowed`]. The [`SkillTool`] (`skill.rs`)
//! offers them to the model.
//!
//! A repository may be hostile, and its skills are as untrusted as it is:
//!
//! - a broken `SKILL.md` is a warning naming the file, line and key; the others load;
//! - in the project, a skills folder, skill folder or `SKILL.md` that resolves (through
//!   symbolic links) outside the project is skipped with a warning;
//! - `SKILL.md` must be a regular file (a FIFO would hang the start) of at most
//!   [`MAX_SKILL_FILE_BYTES`]; at most [`MAX_SKILLS_PER_FOLDER`] folders are read;
//! - names are `[A-Za-z0-9_-]{1,64}` (no control characters, nothing to break the XML
//!   list of the tool description); descriptions are one line of at most
//!   [`MAX_DESCRIPTION_CHARS`], control characters turned into spaces;
//! - `allowed-tools` are permission rules; in an untrusted folder the project's skills
//!   load without them (a repository cannot approve calls, as its settings cannot), with
//!   a warning. User skills grant in every folder.
//!
//! Everything is read once, when the session is assembled: a skill file the model
//! writes during the session changes nothing until the next session, so a model cannot
//! grant itself tools by writing a skill.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::listed_name::escaped;
use read::read_skill;

mod read;
pub(crate) mod tool;
#[cfg(test)]
pub(crate) use tool::Params as SkillParams;

pub use tool::SkillTool;

/// Largest `SKILL.md` read (256 KiB); the format recommends a few hundred lines.
pub const MAX_SKILL_FILE_BYTES: u64 = 256 * 1024;

/// Most skill folders read from one skills folder.
pub const MAX_SKILLS_PER_FOLDER: usize = 128;

/// Longest description kept (the Agent Skills limit); a longer one is cut with a warning.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// Longest skill name (the Agent Skills limit).
pub const MAX_NAME_CHARS: usize = 64;

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SkillFolder {
    /// The project's `.qwen/skills`.
    #[serde(rename = ".qwen/skills")]
    ProjectQwen,
    /// The project's `.agents/skills`.
    #[serde(rename = ".agents/skills")]
    ProjectAgents,
    /// The user's `~/.qwen/skills`.
    #[serde(rename = "~/.qwen/skills")]
    User,
    /// A Claude Code plugin's `skills` folder (the host application's, as the user's).
    #[serde(rename = "plugin")]
    Plugin,
}

impl SkillFolder {
    /// `project` or `user`.
    pub fn level(self) -> &'static str {
        match self {
            SkillFolder::ProjectQwen | SkillFolder::ProjectAgents => "project",
            SkillFolder::User => "user",
            SkillFolder::Plugin => "plugin",
        }
    }

    /// The folder as a person writes it (`.qwen/skills`, `~/.qwen/skills`).
    pub fn as_str(self) -> &'static str {
        match self {
            SkillFolder::ProjectQwen => ".qwen/skills",
            SkillFolder::ProjectAgents => ".agents/skills",
            SkillFolder::User => "~/.qwen/skills",
            SkillFolder::Plugin => "a plugin's skills",
        }
    }

    fn is_project(self) -> bool {
        matches!(self, SkillFolder::ProjectQwen | SkillFolder::ProjectAgents)
    }
}

/// One loaded skill.
#[derive(Debug, Clone, Serialize)]
pub struct Skill {
    /// The name the model calls it by.
    pub name: String,
    /// When to use it, one line.
    pub description: String,
    /// Where it was found.
    pub folder: SkillFolder,
    /// `SKILL.md`, resolved.
    pub file: PathBuf,
    /// The skill's folder, resolved: its other files are under it.
    pub dir: PathBuf,
    /// The valid `allowed-tools` entries, as written (permission rules).
    pub allowed_tools: Vec<String>,
    /// Whether calling the skill grants `allowed_tools` for the rest of the turn: false
    /// for a project skill in an untrusted folder.
    pub grants: bool,
    /// The instructions (the Markdown after the front matter).
    #[serde(skip)]
    pub body: String,
    /// Problems that did not stop it from loading (also in [`Skills::warnings`]).
    pub warnings: Vec<String>,
}

/// A skill hidden by one of the same name in a folder of higher precedence.
#[derive(Debug, Clone, Serialize)]
pub struct Shadowed {
    /// The name both define.
    pub name: String,
    /// Where the hidden one is.
    pub folder: SkillFolder,
    /// The hidden `SKILL.md`.
    pub file: PathBuf,
    /// The `SKILL.md` that wins.
    pub by: PathBuf,
}

/// The skills of a session.
#[derive(Debug, Default)]
pub struct Skills {
    /// By name, in name order.
    skills: Vec<Arc<Skill>>,
    shadowed: Vec<Shadowed>,
    warnings: Vec<String>,
}

impl Skills {
    /// Reads the skills of a session whose project folder is `project` (the primary
    /// workspace directory) and whose home is `home`. `project_trusted` is false when
    /// the folder is not trusted: project skills then grant no tools.
    pub fn load(project: Option<&Path>, home: Option<&Path>, project_trusted: bool) -> Skills {
        let mut skills = Skills::default();
        let project_real = project.and_then(|p| p.canonicalize().ok());
        let user_root = home.map(|h| h.join(".qwen/skills"));
        let user_real = user_root.as_ref().and_then(|r| r.canonicalize().ok());
        let mut folders: Vec<(SkillFolder, PathBuf)> = Vec::new();
        if let Some(project) = &project_real {
            folders.push((SkillFolder::ProjectQwen, project.join(".qwen/skills")));
            folders.push((SkillFolder::ProjectAgents, project.join(".agents/skills")));
        }
        if let Some(root) = user_root {
            folders.push((SkillFolder::User, root));
        }
        let mut by_name: HashMap<String, usize> = HashMap::new();
        for (folder, root) in folders {
            // In the home directory the project's `.qwen/skills` is the user's: read it
            // once, as the person's own.
            if folder == SkillFolder::ProjectQwen
                && user_real.is_some()
                && root.canonicalize().ok() == user_real
            {
                continue;
            }
            let boundary = folder
                .is_project()
                .then_some(project_real.as_deref())
                .flatten();
            skills.add_folder(folder, &root, boundary, project_trusted, &mut by_name);
        }
        skills.skills.sort_by(|a, b| a.name.cmp(&b.name));
        skills
    }

    /// These skills and those of the skill folders of Claude Code plugins
    /// (`<plugin>/skills`, the host application's, trusted as the user's), read after
    /// the others: a plugin's skill of a name already loaded is shadowed by it.
    pub fn with_plugins(mut self, folders: &[PathBuf]) -> Skills {
        if folders.is_empty() {
            return self;
        }
        let mut by_name: HashMap<String, usize> = (self.skills.iter().enumerate())
            .map(|(i, skill)| (skill.name.clone(), i))
            .collect();
        for root in folders {
            self.add_folder(SkillFolder::Plugin, root, None, true, &mut by_name);
        }
        self.skills.sort_by(|a, b| a.name.cmp(&b.name));
        self
    }

    /// Reads one folder of skills: a new name is added (`by_name` finds it), one
    /// already loaded from another folder is shadowed, one loaded from the same folder
    /// is a warning.
    fn add_folder(
        &mut self,
        folder: SkillFolder,
        root: &Path,
        boundary: Option<&Path>,
        project_trusted: bool,
        by_name: &mut HashMap<String, usize>,
    ) {
        for loaded in self.read_folder(folder, root, boundary, project_trusted) {
            match by_name.get(&loaded.name) {
                Some(&i) => {
                    let winner = &self.skills[i];
                    if winner.folder == loaded.folder {
                        self.warnings.push(format!(
                            "{}: skill \"{}\" is also defined by {}; this one is ignored",
                            escaped(&loaded.file),
                            loaded.name,
                            escaped(&winner.file)
                        ));
                    } else {
                        self.shadowed.push(Shadowed {
                            name: loaded.name.clone(),
                            folder: loaded.folder,
                            file: loaded.file.clone(),
                            by: winner.file.clone(),
                        });
                    }
                }
                None => {
                    by_name.insert(loaded.name.clone(), self.skills.len());
                    self.skills.push(Arc::new(loaded));
                }
            }
        }
    }

    /// The skills of the session, in name order.
    pub fn all(&self) -> &[Arc<Skill>] {
        &self.skills
    }

    /// Whether no skill loaded.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The skill called exactly `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Skill>> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The skill `name` stands for, also when the case or `-`/`_` differ (models write
    /// `pdf_tools` for `pdf-tools`, since tool names use `_`).
    pub fn find_loosely(&self, name: &str) -> Option<&Arc<Skill>> {
        let loose = |s: &str| s.to_ascii_lowercase().replace('_', "-");
        let wanted = loose(name);
        self.get(name)
            .or_else(|| self.skills.iter().find(|s| loose(&s.name) == wanted))
    }

    /// Skills hidden by one of the same name in a folder of higher precedence.
    pub fn shadowed(&self) -> &[Shadowed] {
        &self.shadowed
    }

    /// One line per problem, naming the file (and line and key where there is one).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The folders of user skills, which the model must be able to read (they are
    /// outside the workspace): the session adds them as readable directories. Project
    /// skills are inside the workspace already.
    pub fn readable_dirs(&self) -> impl Iterator<Item = &Path> {
        self.skills
            .iter()
            .filter(|s| !s.folder.is_project())
            .map(|s| s.dir.as_path())
    }

    /// Reads the skill folders under `root`. `boundary`: the resolved project folder
    /// that every path must stay in (project skills); `None` for user skills.
    fn read_folder(
        &mut self,
        folder: SkillFolder,
        root: &Path,
        boundary: Option<&Path>,
        project_trusted: bool,
    ) -> Vec<Skill> {
        let Ok(root_real) = root.canonicalize() else {
            return Vec::new();
        };
        if let Some(project) = boundary
            && !root_real.starts_with(project)
        {
            self.warnings.push(format!(
                "{}: the skills folder leads outside the project (to {}); its skills are not loaded",
                escaped(root),
                escaped(&root_real)
            ));
            return Vec::new();
        }
        let entries = match std::fs::read_dir(&root_real) {
            Ok(entries) => entries,
            Err(e) => {
                self.warnings
                    .push(format!("{}: cannot read the folder: {e}", escaped(root)));
                return Vec::new();
            }
        };
        let mut dirs: Vec<PathBuf> = Vec::new();
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            let path = entry.path();
            if name.to_string_lossy().starts_with('.') || !path.is_dir() {
                continue;
            }
            // A folder name that would need quoting (control characters, invisible
            // direction marks, bytes that are not UTF-8) names no skill and would carry
            // escape sequences into every warning and listing.
            if escaped(Path::new(&name)) != name.to_string_lossy() {
                self.warnings.push(format!(
                    "{}: the folder name is not plain text; the folder is skipped",
                    escaped(&path)
                ));
                continue;
            }
            dirs.push(path);
        }
        dirs.sort();
        if dirs.len() > MAX_SKILLS_PER_FOLDER {
            self.warnings.push(format!(
                "{}: {} skill folders; only the first {MAX_SKILLS_PER_FOLDER} (by name) are read",
                escaped(root),
                dirs.len()
            ));
            dirs.truncate(MAX_SKILLS_PER_FOLDER);
        }
        let mut loaded = Vec::new();
        for dir in dirs {
            match read_skill(folder, &dir, boundary, project_trusted) {
                Ok(Some(skill)) => {
                    self.warnings.extend(skill.warnings.iter().cloned());
                    loaded.push(skill);
                }
                Ok(None) => {}
                Err(warning) => self.warnings.push(warning),
            }
        }
        loaded
    }
}

#[cfg(test)]
mod tests;
