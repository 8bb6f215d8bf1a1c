//! The servers of one workspace: started on first use, one per configured language,
//! shared by every call (and every sub-agent, and every `mcp serve` connection) that
//! holds the same [`Servers`], restarted after a crash when the configuration allows it,
//! and ended together. Once ended ([`Servers::shutdown`], when `mcp serve` takes a new
//! configuration), they start no more: a call still holding them is told to call again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::after_edit::Found;
use crate::client::LspClient;
use crate::config::ServerConfig;
use crate::error::LspError;

/// The state of one configured server, for `lsp list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Configured; starts on the first call that needs it.
    NotStarted,
    /// Started and answered `initialize`.
    Running,
    /// It stopped or never started; why.
    Failed(String),
}

#[derive(Default)]
struct Slot {
    client: Option<Arc<LspClient>>,
    restarts: u32,
    failure: Option<String>,
}

/// The language servers of a workspace root.
pub struct Servers {
    configs: Vec<ServerConfig>,
    root: PathBuf,
    slots: tokio::sync::Mutex<HashMap<String, Slot>>,
    /// Set by [`Servers::shutdown`].
    ended: AtomicBool,
    /// What checks of edits found after their edit's result was given
    /// (`after_edit.rs`), for the next checked edit's result.
    late: std::sync::Mutex<Vec<Found>>,
}

impl Servers {
    /// The servers of `configs`, none started yet; `root` is the session's primary root.
    pub fn new(configs: Vec<ServerConfig>, root: PathBuf) -> Self {
        Servers {
            configs,
            root,
            slots: tokio::sync::Mutex::default(),
            ended: AtomicBool::new(false),
            late: std::sync::Mutex::default(),
        }
    }

    /// Whether these are the servers of `configs` on `root`, still usable: a session
    /// opened again with the same configuration keeps them (and their warm state).
    pub fn matches(&self, configs: &[ServerConfig], root: &Path) -> bool {
        !self.ended.load(Ordering::Acquire) && self.configs == configs && self.root == root
    }

    /// The configured servers.
    pub fn configs(&self) -> &[ServerConfig] {
        &self.configs
    }

    /// The workspace root the servers work on (unless one names its own folder).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The server named `name`.
    pub fn by_name(&self, name: &str) -> Option<&ServerConfig> {
        self.configs.iter().find(|c| c.name == name)
    }

    /// The first server that covers `path`'s extension, with the file's language id.
    pub fn for_file(&self, path: &Path) -> Option<(&ServerConfig, String)> {
        self.configs
            .iter()
            .find_map(|c| c.language_of(path).map(|l| (c, l.to_string())))
    }

    /// The running client of `config`, started now if it is not running. A server that
    /// died is started again only with `restartOnCrash`, at most `maxRestarts` times; a
    /// server that failed to start is tried again on the next call.
    pub async fn client(&self, config: &ServerConfig) -> Result<Arc<LspClient>, LspError> {
        let mut slots = self.slots.lock().await;
        if self.ended.load(Ordering::Acquire) {
            return Err(LspError::Stopped(config.name.clone()));
        }
        let slot = slots.entry(config.name.clone()).or_default();
        if let Some(client) = &slot.client {
            let Some(why) = client.dead() else {
                return Ok(client.clone());
            };
            if !config.restart_on_crash {
                return Err(LspError::NotRestarted {
                    why,
                    config: config.source.clone(),
                });
            }
            if slot.restarts >= config.max_restarts {
                return Err(LspError::RestartsUsed {
                    why,
                    restarts: slot.restarts,
                });
            }
            slot.restarts += 1;
            tracing::warn!(
                "{why}; restarting it ({} of {})",
                slot.restarts,
                config.max_restarts
            );
        }
        slot.client = None;
        let root = config.workspace_folder.as_deref().unwrap_or(&self.root);
        match LspClient::start(config, root).await {
            Ok(client) => {
                slot.failure = None;
                slot.client = Some(client.clone());
                Ok(client)
            }
            Err(e) => {
                slot.failure = Some(e.to_string());
                Err(e)
            }
        }
    }

    /// The client of `config` for checking an edit: started now if it does not run, but
    /// not tried again after it failed to start or stopped for good (each edit would pay
    /// for a start that fails again; the `lsp` tool still tries).
    pub(crate) async fn client_for_edit(&self, config: &ServerConfig) -> Option<Arc<LspClient>> {
        {
            let slots = self.slots.lock().await;
            if let Some(slot) = slots.get(&config.name)
                && slot.client.is_none()
                && slot.failure.is_some()
            {
                return None;
            }
        }
        self.client(config).await.ok()
    }

    /// Keeps what a check found after its edit's result was given.
    pub(crate) fn push_late(&self, found: Found) {
        self.late
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(found);
    }

    /// Takes what checks found late (see [`Servers::push_late`]).
    pub(crate) fn take_late(&self) -> Vec<Found> {
        std::mem::take(
            &mut *self
                .late
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// The client of server `name` if it runs now (never starts it).
    pub async fn running_client(&self, name: &str) -> Option<Arc<LspClient>> {
        let slots = self.slots.lock().await;
        let client = slots.get(name)?.client.clone()?;
        client.dead().is_none().then_some(client)
    }

    /// The clients running now.
    pub async fn running(&self) -> Vec<Arc<LspClient>> {
        let slots = self.slots.lock().await;
        slots
            .values()
            .filter_map(|s| s.client.clone())
            .filter(|c| c.dead().is_none())
            .collect()
    }

    /// The state of each configured server, in configuration order.
    pub async fn states(&self) -> Vec<(&ServerConfig, ServerState)> {
        let slots = self.slots.lock().await;
        self.configs
            .iter()
            .map(|c| {
                let state = match slots.get(&c.name) {
                    None => ServerState::NotStarted,
                    Some(s) => match (&s.client, &s.failure) {
                        (Some(client), _) => match client.dead() {
                            None => ServerState::Running,
                            Some(why) => ServerState::Failed(why),
                        },
                        (None, Some(why)) => ServerState::Failed(why.clone()),
                        (None, None) => ServerState::NotStarted,
                    },
                };
                (c, state)
            })
            .collect()
    }

    /// Ends every server in order (shutdown, exit, group kill); none starts again.
    pub async fn shutdown(&self) {
        let clients: Vec<_> = {
            let mut slots = self.slots.lock().await;
            self.ended.store(true, Ordering::Release);
            slots.values_mut().filter_map(|s| s.client.take()).collect()
        };
        for client in clients {
            client.shutdown().await;
        }
    }
}
