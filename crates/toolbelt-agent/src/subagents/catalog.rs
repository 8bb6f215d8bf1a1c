//! The sub-agents a session offers: project `.qwen/agents/*.md` over user
//! `~/.qwen/agents/*.md` over the built-ins, as Qwen Code orders them.
//!
//! A file that does not parse is a warning (file, line, key) and the others load; a
//! name defined twice at one level keeps the first file in name order, with a warning.
//! A project file is read through [`toolbelt_config::project_file::read_in_project`]: one
//! that leads out of the project (a link, a linked `agents` folder) is a warning and is
//! not read.

use std::path::{Path, PathBuf};

use toolbelt_config::project_file;

use super::definition::{self, AgentDefinition, DefinitionError, Level, ToolAllow};

/// The largest definition file read (a system prompt, not a book).
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// Every definition, highest level first per name, and what could not be loaded.
#[derive(Debug, Clone, Default)]
pub struct AgentCatalog {
    /// The definitions in effect, sorted by name.
    agents: Vec<AgentDefinition>,
    /// Definitions hidden by a higher level of the same name.
    shadowed: Vec<AgentDefinition>,
    /// Definitions that could not be loaded or were hidden, for the person.
    pub warnings: Vec<String>,
}

/// Where to look.
#[derive(Debug, Clone)]
pub struct AgentDirs {
    /// `<project>/.qwen/agents`.
    pub project: Option<PathBuf>,
    /// `~/.qwen/agents`.
    pub user: Option<PathBuf>,
}

impl AgentDirs {
    /// The standard folders for a project at `project` and a home at `home`. When the
    /// project is the home directory, its folder is the user's (read once).
    pub fn standard(project: &Path, home: Option<&Path>) -> Self {
        let user = home.map(|h| h.join(".qwen").join("agents"));
        let project = project.join(".qwen").join("agents");
        let same = user
            .as_ref()
            .is_some_and(|u| same_dir(u, &project) || *u == project);
        AgentDirs {
            project: (!same).then_some(project),
            user,
        }
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

impl AgentCatalog {
    /// Loads the built-ins and the files of `dirs`.
    pub fn load(dirs: &AgentDirs) -> Self {
        let mut catalog = AgentCatalog::default();
        let mut all = builtins();
        for (dir, level) in [(&dirs.user, Level::User), (&dirs.project, Level::Project)] {
            if let Some(dir) = dir {
                // `<project>/.qwen/agents`: its files must stay in `<project>`.
                let boundary = match level {
                    Level::Project => dir.parent().and_then(Path::parent),
                    _ => None,
                };
                all.extend(catalog.load_dir(dir, level, boundary));
            }
        }
        // Highest level first; within a level, file order.
        all.sort_by(|a, b| a.name.cmp(&b.name).then(b.level.cmp(&a.level)));
        for d in all {
            if catalog
                .agents
                .last()
                .is_some_and(|last| last.name == d.name)
            {
                catalog.shadowed.push(d);
            } else {
                catalog.agents.push(d);
            }
        }
        catalog
    }

    /// Only the built-ins.
    pub fn builtin_only() -> Self {
        AgentCatalog {
            agents: builtins(),
            ..Default::default()
        }
    }

    fn load_dir(
        &mut self,
        dir: &Path,
        level: Level,
        boundary: Option<&Path>,
    ) -> Vec<AgentDefinition> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(e) => {
                self.warnings
                    .push(format!("{}: cannot read the folder: {e}", dir.display()));
                return Vec::new();
            }
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        files.sort();
        let mut loaded: Vec<AgentDefinition> = Vec::new();
        for path in files {
            match read_definition(&path, level, boundary) {
                Ok(d) => {
                    if let Some(first) = loaded.iter().find(|l| l.name == d.name) {
                        self.warnings.push(format!(
                            "{}:1: key `name`: \"{}\" is already defined by {}; this file is ignored",
                            path.display(),
                            d.name,
                            first.path.as_deref().unwrap_or(Path::new("?")).display()
                        ));
                    } else {
                        loaded.push(d);
                    }
                }
                Err(e) => self.warnings.push(e.to_string()),
            }
        }
        loaded
    }

    /// The definitions in effect, by name.
    pub fn agents(&self) -> &[AgentDefinition] {
        &self.agents
    }

    /// Definitions a higher level hides.
    pub fn shadowed(&self) -> &[AgentDefinition] {
        &self.shadowed
    }

    /// The definition named `name`.
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// The names of every definition, in catalog order.
    pub fn names(&self) -> Vec<String> {
        self.agents.iter().map(|a| a.name.clone()).collect()
    }
}

fn read_definition(
    path: &Path,
    level: Level,
    boundary: Option<&Path>,
) -> Result<AgentDefinition, DefinitionError> {
    let fail = |message: String| DefinitionError {
        path: path.to_path_buf(),
        line: 1,
        key: String::new(),
        message,
    };
    // Only regular files (a FIFO would block), not huge ones, and in the project only
    // what stays in it.
    let bytes = match boundary {
        Some(project) => project_file::read_in_project(path, project, MAX_FILE_BYTES),
        None => project_file::read_own(path, MAX_FILE_BYTES),
    }
    .map_err(|e| fail(e.to_string()))?;
    let text = String::from_utf8(bytes).map_err(|_| fail("not UTF-8 text".into()))?;
    definition::parse(path, &text, level)
}

/// `general-purpose` (every tool but `agent`) and `Explore` (read-only tools).
pub(super) fn builtins() -> Vec<AgentDefinition> {
    let builtin = |name: &str, description: &str, tools, prompt: &str| AgentDefinition {
        name: name.to_string(),
        description: description.to_string(),
        tools,
        disallowed_tools: Vec::new(),
        model: None,
        approval_mode: None,
        max_turns: None,
        max_time: None,
        color: None,
        background: false,
        isolated: false,
        system_prompt: prompt.to_string(),
        level: Level::BuiltIn,
        path: None,
    };
    vec![
        builtin(
            "Explore",
            "Fast read-only agent for exploring a codebase: finds files by pattern, searches code for keywords, reads and answers questions about how things work. It cannot change anything.",
            ToolAllow::ReadOnly,
            "You are a read-only exploration agent. Search and read the workspace to answer the task you are given. You cannot change files or run commands. Be thorough but quick: search broadly first, then read what matters. End with a concise report of what you found, with file paths and line numbers.",
        ),
        builtin(
            "general-purpose",
            "General-purpose agent for researching complex questions, searching for code and carrying out multi-step tasks on its own.",
            ToolAllow::All,
            "You are a general-purpose sub-agent. Carry out the task you are given with the tools you have, on your own, without asking questions. When you are done, answer with a concise report of what you did and found: the parent agent sees only that final answer.",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    const DEFINITION: &str = "---\nname: NAME\ndescription: d\n---\nprompt\n";

    #[test]
    fn project_definitions_that_lead_out_of_the_project_are_not_read() {
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let agents = project.path().join(".qwen/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(
            agents.join("inside.md"),
            DEFINITION.replace("NAME", "inside"),
        )
        .unwrap();
        std::fs::write(
            outside.path().join("out.md"),
            DEFINITION.replace("NAME", "outside"),
        )
        .unwrap();
        symlink(outside.path().join("out.md"), agents.join("out.md")).unwrap();
        symlink("/dev/zero", agents.join("zero.md")).unwrap();
        // A FIFO inside would block a plain read forever.
        let status = std::process::Command::new("mkfifo")
            .arg(agents.join("fifo.md"))
            .status()
            .unwrap();
        assert!(status.success());
        let catalog = AgentCatalog::load(&AgentDirs::standard(project.path(), None));
        let names = catalog.names();
        assert!(names.contains(&"inside".to_string()), "{names:?}");
        assert!(!names.contains(&"outside".to_string()), "{names:?}");
        let warnings = catalog.warnings.join("\n");
        assert!(warnings.contains("leads outside the project"), "{warnings}");
        assert!(warnings.contains("not a regular file"), "{warnings}");

        // A linked `agents` folder leads out as a whole.
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(project.path().join(".qwen")).unwrap();
        symlink(outside.path(), project.path().join(".qwen/agents")).unwrap();
        let catalog = AgentCatalog::load(&AgentDirs::standard(project.path(), None));
        assert!(!catalog.names().contains(&"outside".to_string()));
    }

    #[test]
    fn user_definitions_may_link_anywhere() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let dotfiles = tempfile::tempdir().unwrap();
        let agents = home.path().join(".qwen/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(
            dotfiles.path().join("mine.md"),
            DEFINITION.replace("NAME", "mine"),
        )
        .unwrap();
        symlink(dotfiles.path().join("mine.md"), agents.join("mine.md")).unwrap();
        let catalog = AgentCatalog::load(&AgentDirs::standard(project.path(), Some(home.path())));
        assert!(catalog.names().contains(&"mine".to_string()));
    }
}
