//! The sub-agents a session offers: project `.qwen/agents/*.md` over user
//! `~/.qwen/agents/*.md` over the built-ins, as Qwen Code orders them.
//!
//! A file that does not parse is a warning (file, line, key) and the others load; a
//! name defined twice at one level keeps the first file in name order, with a warning.

use std::path::{Path, PathBuf};

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
                all.extend(catalog.load_dir(dir, level));
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

    fn load_dir(&mut self, dir: &Path, level: Level) -> Vec<AgentDefinition> {
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
            match read_definition(&path, level) {
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

    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.agents.iter().find(|a| a.name == name)
    }

    pub fn names(&self) -> Vec<String> {
        self.agents.iter().map(|a| a.name.clone()).collect()
    }
}

fn read_definition(path: &Path, level: Level) -> Result<AgentDefinition, DefinitionError> {
    let fail = |message: String| DefinitionError {
        path: path.to_path_buf(),
        line: 1,
        key: String::new(),
        message,
    };
    // Only regular files (a FIFO would block), and not huge ones.
    let meta = std::fs::metadata(path).map_err(|e| fail(format!("cannot read: {e}")))?;
    if !meta.is_file() {
        return Err(fail("not a regular file".into()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(fail(format!(
            "larger than {} KiB; not read",
            MAX_FILE_BYTES / 1024
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| fail(format!("cannot read: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|_| fail("not UTF-8 text".into()))?;
    definition::parse(path, &text, level)
}

/// `general-purpose` (every tool but `agent`) and `Explore` (read-only tools).
pub fn builtins() -> Vec<AgentDefinition> {
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
