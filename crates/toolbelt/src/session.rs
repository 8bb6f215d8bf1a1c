//! Assembling a session: settings, workspace roots, the tool environment and the
//! registry. Shared by every subcommand so they all see the same tools.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolbelt_core::{Settings, SettingsPaths, ToolEnvironment, ToolRegistry, WorkspaceRoots};

use crate::cli::GlobalArgs;

pub struct Session {
    pub env: Arc<ToolEnvironment>,
    pub registry: ToolRegistry,
}

/// Why a session could not be assembled: always the person's configuration.
#[derive(Debug)]
pub struct SetupError(pub String);

impl Session {
    pub fn load(global: &GlobalArgs) -> Result<Session, SetupError> {
        let cwd = std::env::current_dir()
            .map_err(|e| SetupError(format!("cannot read the current directory: {e}")))?;
        let settings = Settings::load(&SettingsPaths::standard(&cwd))
            .map_err(|e| SetupError(e.to_string()))?;
        let mut dirs: Vec<PathBuf> = vec![cwd.clone()];
        dirs.extend(global.include_directories.iter().map(|d| absolute(&cwd, d)));
        dirs.extend(
            settings
                .context
                .include_directories
                .iter()
                .map(|d| absolute(&cwd, Path::new(d))),
        );
        let mut roots = WorkspaceRoots::new(&dirs).map_err(|e| SetupError(e.to_string()))?;
        let session_dir = session_dir(&cwd);
        // Spilled output and job logs must be readable by the model; failing to create
        // the directory only costs that.
        if let Err(e) = roots.add_readable(&session_dir) {
            tracing::warn!("cannot create {}: {e}", session_dir.display());
        }
        let env = Arc::new(ToolEnvironment::new(roots, Arc::new(settings), session_dir));
        let mut registry = ToolRegistry::new();
        toolbelt_tools::register_builtins(&mut registry, &env);
        registry.apply_settings(&env.settings);
        for warning in registry.warnings() {
            tracing::warn!("{warning}");
        }
        Ok(Session { env, registry })
    }
}

fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

/// `$TOOLBELT_HOME/tmp/<project>` (default `~/.toolbelt`), or the system temp directory
/// when there is no home.
fn session_dir(project: &Path) -> PathBuf {
    let base = std::env::var_os("TOOLBELT_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".toolbelt")))
        .unwrap_or_else(|| std::env::temp_dir().join("toolbelt"));
    let name: String = project
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    base.join("tmp").join(name.trim_matches('-'))
}
