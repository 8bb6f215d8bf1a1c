//! Diagnostics after edits: `edit`, `write_file` and `notebook_edit` wrapped so that, when
//! a running language server covers the changed file, the result tells the model about
//! the errors the change introduced, in the same turn.
//!
//! Only a server that already runs is asked (the edit never waits for a server to
//! start), for at most `lsp.diagnosticsWaitMs` (default 3000); `lsp.diagnosticsAfterEdit:
//! false` in the settings turns it off. "Introduced" compares messages, not positions
//! (an edit moves the lines below it): an error whose message was already published for
//! the file before the edit is not repeated. A file the server had not seen before has
//! every error it reports counted as new.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ExecContext, Invocation, Kind, Part, PermissionSubject, Tool,
    ToolEnvironment, ToolError, ToolResult,
};

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
    fn when_clause(&self) -> Option<&toolbelt_core::when::Expr> {
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
    fn path_operation(&self) -> Option<toolbelt_core::rules::PathOperation> {
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
    fn turn_grant(&self) -> Option<toolbelt_core::scheduler::TurnGrant> {
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
            for file in files {
                if let Some(note) = new_errors(&env, &servers, &file, wait).await {
                    result.llm_content.push(Part::text(note));
                }
            }
            result
        })
    }
}

/// The errors the running server of `file` reports after the change that it did not
/// report before, as a note for the model; `None` when there are none or no running
/// server covers the file.
async fn new_errors(
    env: &ToolEnvironment,
    servers: &Servers,
    file: &std::path::Path,
    wait: Duration,
) -> Option<String> {
    let (config, language) = servers.for_file(file)?;
    let client = servers.running_client(&config.name).await?;
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
    let uri = client.sync_document(file, &language, &text).await.ok()?;
    let after = client.diagnostics_for(&uri, wait).await?;
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
    Some(format!(
        "The language server `{}` reports {} new error(s) after this change:\n{}",
        config.name,
        new.len(),
        lines.join("\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolbelt_core::rules::PathOperation;
    use toolbelt_core::{Settings, WorkspaceRoots};

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
