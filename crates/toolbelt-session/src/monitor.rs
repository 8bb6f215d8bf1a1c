//! `monitor` in the agent sessions (issue 33): the tool over the shell's job table and
//! its events as the agent loop's [`TurnEvents`]. The machinery is
//! `toolbelt_tools::monitor`; this module only assembles it. A front end ends the
//! monitors still running when a run is over with `MonitorTable::stop_all` and says
//! which.

use std::sync::Arc;

use toolbelt_agent::TurnEvents;
use toolbelt_core::{BoxFuture, ToolEnvironment};
use toolbelt_engine::{registry::Origin, registry::ToolRegistry};
use toolbelt_tools::{JobTable, Monitor, MonitorTable};

/// A session's monitors as a source of events between turns.
pub(crate) struct MonitorEvents(pub(crate) Arc<MonitorTable>);

impl TurnEvents for MonitorEvents {
    fn take(&self) -> Option<String> {
        self.0.take()
    }
    fn waiting(&self) -> bool {
        self.0.waiting()
    }
    fn running(&self) -> bool {
        !self.0.running().is_empty()
    }
    fn watch(&self) -> BoxFuture<'static, ()> {
        // Subscribed now, so a change after this call wakes the future.
        let mut seen = self.0.subscribe();
        Box::pin(async move {
            let _ = seen.changed().await;
        })
    }
}

/// Registers `monitor`, whose jobs are the shell's (`task_stop` and the session's end
/// reach them); returns its table.
pub(crate) fn install(
    registry: &mut ToolRegistry,
    env: &Arc<ToolEnvironment>,
    jobs: &Arc<JobTable>,
) -> Arc<MonitorTable> {
    let table = MonitorTable::new(jobs);
    registry.register(
        Arc::new(Monitor::new(env.clone(), jobs.clone(), table.clone())),
        Origin::BuiltIn,
    );
    table
}
