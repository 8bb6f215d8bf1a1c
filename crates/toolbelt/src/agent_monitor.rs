//! `monitor` in the agent sessions (issue 33): the tool over the shell's job table, its
//! events as the agent loop's [`TurnEvents`], and the end of a run saying which monitors
//! it ended. The machinery is `toolbelt_tools::monitor`; this module only assembles it.

use std::sync::Arc;

use toolbelt_agent::TurnEvents;
use toolbelt_core::{BoxFuture, Origin, ToolEnvironment, ToolRegistry};
use toolbelt_tools::{JobTable, Monitor, MonitorTable};

/// A session's monitors as a source of events between turns.
pub struct MonitorEvents(pub Arc<MonitorTable>);

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
pub fn install(
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

/// Ends the monitors still running when a run is over (it hit its turn limit, was
/// interrupted or failed) and says which, on standard error.
pub async fn end(table: &MonitorTable) {
    for (id, command) in table.stop_all().await {
        eprintln!("toolbelt: monitor {id} (`{command}`) was still running and has been ended");
    }
}
