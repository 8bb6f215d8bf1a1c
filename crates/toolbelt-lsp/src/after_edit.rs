//! Diagnostics after edits: `edit`, `write_file` and `notebook_edit` wrapped so that, when
//! a configured language server covers the changed file, the result tells the model about
//! the errors the change introduced, in the same turn.
//!
//! The first such edit starts the server if it does not run yet (the configuration is
//! the same trusted one the `lsp` tool uses, so the edit starts nothing the `lsp` tool
//! would not; a server that failed to start is not tried again by edits). The edit
//! waits at most `lsp.diagnosticsWaitMs` (default 3000) for the start and the answer;
//! a check still going then goes on in the background, and its errors come with the
//! result of the next checked edit. `lsp.diagnosticsAfterEdit: false` in the settings
//! turns it off. "Introduced" compares messages, not positions
//! (an edit moves the lines below it): an error whose message was already published for
//! the file before the edit is not repeated. A file the server had not seen before has
//! every error it reports counted as new.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ExecContext, Invocation, Kind, Part, PermissionSubject, Tool,
    ToolEnvironment, ToolError, ToolResult,
};

use crate::client::LspClient;
use crate::format::{Locations, diagnostic, severity};
use crate::servers::Servers;

/// At most this many new errors are listed.
const MAX_LISTED: usize = 10;

/// How long to wait for diagnostics after an edit (`lsp.diagnosticsWaitMs`, default 3 s),
/// or `None` when the settings turn the check off (`lsp.diagnosticsAfterEdit: false`).
pub fn wait_after_edit(env: &ToolEnvironment) -> Option<Duration> {
    let lsp = &env.settings.lsp;
    let ms = lsp.diagnostics_wait_ms.map_or(3000, |m| m.0);
    lsp.diagnostics_after_edit
        .then(|| Duration::from_millis(ms))
}

/// `inner` with its changes checked by the running servers.
pub struct CheckedEdits {
    inner: Arc<dyn Tool>,
    env: Arc<ToolEnvironment>,
    servers: Arc<Servers>,
    wait: Duration,
}

impl CheckedEdits {
    /// Wraps `inner`: after a change to a file a running server covers, waits up to `wait` for its diagnostics.
    pub fn new(
        inner: Arc<dyn Tool>,
        env: Arc<ToolEnvironment>,
        servers: Arc<Servers>,
        wait: Duration,
    ) -> Self {
        CheckedEdits {
            inner,
            env,
            servers,
            wait,
        }
    }
}

impl Tool for CheckedEdits {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn display_name(&self) -> &str {
        self.inner.display_name()
    }
    fn description(&self) -> &str {
        self.inner.description()
    }
    fn kind(&self) -> Kind {
        self.inner.kind()
    }
    fn parameter_schema(&self) -> &Value {
        self.inner.parameter_schema()
    }
    fn aliases(&self) -> &[&'static str] {
        self.inner.aliases()
    }
    fn parameter_aliases(&self) -> &[(&'static str, &'static str)] {
        self.inner.parameter_aliases()
    }
    fn needs_confirmation(&self) -> bool {
        self.inner.needs_confirmation()
    }
    fn can_update_output(&self) -> bool {
        self.inner.can_update_output()
    }
    fn when_clause(&self) -> Option<&toolbelt_config::when::Expr> {
        self.inner.when_clause()
    }
    fn reference_name(&self) -> Option<&str> {
        self.inner.reference_name()
    }
    fn rule_target(&self) -> Option<&str> {
        self.inner.rule_target()
    }
    fn hint_for_unknown_name(&self, name: &str) -> Option<String> {
        self.inner.hint_for_unknown_name(name)
    }
    fn rule_aliases(&self) -> &[&'static str] {
        self.inner.rule_aliases()
    }
    fn hook_aliases(&self) -> &[&'static str] {
        self.inner.hook_aliases()
    }
    fn path_operation(&self) -> Option<toolbelt_core::PathOperation> {
        self.inner.path_operation()
    }
    fn keeps_legacy_name(&self) -> bool {
        self.inner.keeps_legacy_name()
    }
    fn ends_plan_mode(&self) -> bool {
        self.inner.ends_plan_mode()
    }
    fn facts(&self) -> toolbelt_core::ToolFacts {
        self.inner.facts()
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let inner = self.inner.build(args)?;
        Ok(Box::new(CheckedCall {
            inner,
            env: self.env.clone(),
            servers: self.servers.clone(),
            wait: self.wait,
        }))
    }
}

struct CheckedCall {
    inner: Box<dyn Invocation>,
    env: Arc<ToolEnvironment>,
    servers: Arc<Servers>,
    wait: Duration,
}

impl Invocation for CheckedCall {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn locations(&self) -> Vec<PathBuf> {
        self.inner.locations()
    }
    fn permission_subject(&self) -> PermissionSubject {
        self.inner.permission_subject()
    }
    fn prepare<'a>(&'a mut self, cancel: &'a CancellationToken) -> BoxFuture<'a, ()> {
        self.inner.prepare(cancel)
    }
    fn turn_grant(&self) -> Option<toolbelt_core::TurnGrant> {
        self.inner.turn_grant()
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        self.inner.confirmation()
    }
    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        let CheckedCall {
            inner,
            env,
            servers,
            wait,
        } = *self;
        let files = inner.locations();
        Box::pin(async move {
            let mut result = inner.execute(ctx).await;
            if result.is_error() {
                return result;
            }
            for file in &files {
                if let Some(found) = checked_in_time(&env, &servers, file, wait).await {
                    result.llm_content.push(Part::text(found.note(false)));
                }
            }
            // Checks of earlier edits that took longer than the wait; a file checked
            // again just now is reported by its newer check.
            for found in servers.take_late() {
                if !files.contains(&found.file) {
                    result.llm_content.push(Part::text(found.note(true)));
                }
            }
            result
        })
    }
}

/// The new errors of one checked file.
pub(crate) struct Found {
    server: String,
    file: PathBuf,
    shown: String,
    count: usize,
    lines: Vec<String>,
}

impl Found {
    fn note(&self, late: bool) -> String {
        let after = if late {
            format!("an earlier change to {}", self.shown)
        } else {
            "this change".to_string()
        };
        format!(
            "The language server `{}` reports {} new error(s) after {after}:\n{}",
            self.server,
            self.count,
            self.lines.join("\n")
        )
    }
}

/// Checks `file` in a task of its own and waits at most `wait` for it. A server that
/// covers the file and does not run yet is started by this check (in that task); a
/// check still going when `wait` is over goes on, and what it finds comes with the
/// next checked edit's result ([`Servers::push_late`]).
async fn checked_in_time(
    env: &Arc<ToolEnvironment>,
    servers: &Arc<Servers>,
    file: &Path,
    wait: Duration,
) -> Option<Found> {
    let (config, language) = servers.for_file(file)?;
    let config = config.clone();
    // The longest a check may go on in the background: a start, then the analysis.
    let limit = wait.max(config.startup_timeout) + config.startup_timeout;
    let check = {
        let (env, servers, file) = (env.clone(), servers.clone(), file.to_path_buf());
        tokio::spawn(async move {
            let client = servers.client_for_edit(&config).await?;
            new_errors(&env, &client, &file, &language, limit).await
        })
    };
    let mut check = check;
    match tokio::time::timeout(wait, &mut check).await {
        Ok(found) => found.ok().flatten(),
        Err(_) => {
            let servers = servers.clone();
            tokio::spawn(async move {
                if let Ok(Some(found)) = check.await {
                    servers.push_late(found);
                }
            });
            None
        }
    }
}

/// The errors the server reports for `file` after the change that it did not report
/// before; `None` when there are none or the server does not answer within `limit`.
async fn new_errors(
    env: &ToolEnvironment,
    client: &LspClient,
    file: &Path,
    language: &str,
    limit: Duration,
) -> Option<Found> {
    let before: Vec<String> = client
        .published_for_path(file)
        .unwrap_or_default()
        .iter()
        .filter(|d| severity(d) == "error")
        .map(|d| d.message.clone())
        .collect();
    let text = crate::operations::read_document(file.to_path_buf())
        .await
        .ok()?;
    let uri = client.sync_document(file, language, &text).await.ok()?;
    let after = client.diagnostics_for(&uri, limit).await?;
    let mut already = before;
    let new: Vec<_> = after
        .iter()
        .filter(|d| severity(d) == "error")
        .filter(|d| match already.iter().position(|m| m == &d.message) {
            Some(i) => {
                already.swap_remove(i);
                false
            }
            None => true,
        })
        .collect();
    if new.is_empty() {
        return None;
    }
    let mut fmt = Locations::new(&env.roots);
    let mut lines: Vec<String> = new
        .iter()
        .take(MAX_LISTED)
        .map(|d| diagnostic(&mut fmt, &uri, d))
        .collect();
    if new.len() > MAX_LISTED {
        lines.push(format!("… {} more", new.len() - MAX_LISTED));
    }
    Some(Found {
        server: client.name().to_string(),
        file: file.to_path_buf(),
        shown: env.roots.display_relative(file),
        count: new.len(),
        lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolbelt_config::settings::Settings;
    use toolbelt_core::PathOperation;
    use toolbelt_core::WorkspaceRoots;

    /// A tool that says everything the `Tool` trait lets a tool say about itself.
    struct Says(Value);

    impl Tool for Says {
        fn name(&self) -> &str {
            "says"
        }
        fn display_name(&self) -> &str {
            "Says"
        }
        fn description(&self) -> &str {
            "A tool for the test."
        }
        fn kind(&self) -> Kind {
            Kind::Edit
        }
        fn parameter_schema(&self) -> &Value {
            &self.0
        }
        fn rule_aliases(&self) -> &[&'static str] {
            &["Edit"]
        }
        fn path_operation(&self) -> Option<PathOperation> {
            Some(PathOperation::Edit)
        }
        fn keeps_legacy_name(&self) -> bool {
            true
        }
        fn ends_plan_mode(&self) -> bool {
            true
        }
        fn build(&self, _: Value) -> Result<Box<dyn Invocation>, ToolError> {
            Err(ToolError::invalid_params("not for running"))
        }
    }

    #[test]
    fn the_wait_after_edits_comes_from_the_typed_settings() {
        let dir = tempfile::tempdir().unwrap();
        let wait = |lsp: Value| {
            let settings = Settings::from_value(serde_json::json!({ "lsp": lsp })).unwrap();
            let roots = WorkspaceRoots::new(&[dir.path().to_path_buf()]).unwrap();
            let env = ToolEnvironment::new(roots, Arc::new(settings), dir.path().join("s"));
            wait_after_edit(&env)
        };
        assert_eq!(
            wait(serde_json::json!({})),
            Some(Duration::from_millis(3000))
        );
        assert_eq!(
            wait(serde_json::json!({"diagnosticsWaitMs": 500})),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            wait(serde_json::json!({"diagnosticsAfterEdit": false, "diagnosticsWaitMs": 500})),
            None
        );
    }

    #[test]
    fn a_checked_tool_says_what_the_tool_it_wraps_says() {
        let dir = tempfile::tempdir().unwrap();
        let roots = WorkspaceRoots::new(&[dir.path().to_path_buf()]).unwrap();
        let env = Arc::new(ToolEnvironment::new(
            roots,
            Arc::new(Settings::default()),
            dir.path().join("session"),
        ));
        let servers = Arc::new(Servers::new(Vec::new(), dir.path().to_path_buf()));
        let inner: Arc<dyn Tool> = Arc::new(Says(serde_json::json!({"type": "object"})));
        let checked = CheckedEdits::new(inner, env, servers, Duration::ZERO);
        assert_eq!(checked.rule_aliases(), &["Edit"]);
        assert_eq!(checked.path_operation(), Some(PathOperation::Edit));
        assert!(checked.keeps_legacy_name());
        assert!(checked.ends_plan_mode());
    }
}
