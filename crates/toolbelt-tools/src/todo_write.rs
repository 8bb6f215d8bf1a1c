//! `todo_write`: the session's task list, replaced whole on each call.
//!
//! The list is checked (ids unique and non-empty, content non-empty, at most one task in
//! progress), kept in `<session dir>/todos.json`, shown as a checklist, and returned to
//! the model with a reminder of what comes next. The headless output carries the last
//! list (`todos` in `-o json` and on `tool_result` lines of `stream-json`).

use std::collections::HashSet;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, Display, ExecContext, Invocation, Kind, TodoItem, TodoStatus,
    Tool, ToolEnvironment, ToolError, ToolFacts, ToolResult,
};

/// The `todo_write` tool: the session's task list.
pub struct TodoWrite {
    env: Arc<ToolEnvironment>,
    schema: Value,
}

impl TodoWrite {
    /// The tool over a session's environment.
    pub fn new(env: Arc<ToolEnvironment>) -> Self {
        let schema = crate::params::schema_for::<Params>();
        TodoWrite { env, schema }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub(crate) struct Params {
    #[schemars(
        description = "The whole updated task list (it replaces the previous one; an empty list clears it)."
    )]
    todos: Vec<TodoParam>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
struct TodoParam {
    #[schemars(description = "A short id, unique in the list.")]
    id: String,
    #[schemars(description = "What the task is, in a few words.")]
    content: String,
    #[schemars(description = "pending, in_progress (at most one task) or completed.")]
    status: StatusParam,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum StatusParam {
    Pending,
    InProgress,
    Completed,
}

impl From<TodoParam> for TodoItem {
    fn from(todo: TodoParam) -> TodoItem {
        let status = match todo.status {
            StatusParam::Pending => TodoStatus::Pending,
            StatusParam::InProgress => TodoStatus::InProgress,
            StatusParam::Completed => TodoStatus::Completed,
        };
        TodoItem {
            id: todo.id,
            content: todo.content,
            status,
        }
    }
}

/// The tool's name.
pub(crate) const NAME: &str = "todo_write";
/// What permission rules may call it besides its name (see `crate::rule_vocabulary`).
pub(crate) const RULE_ALIASES: &[&str] = &["TodoWrite"];

/// The tool as a built-in (see [`crate::builtin`]): its rule words and how a session
/// makes it.
pub(crate) const BUILTIN: crate::builtin::Builtin = crate::builtin::Builtin {
    name: NAME,
    rule_aliases: RULE_ALIASES,
    path_operation: None,
    make: crate::builtin::Make::Env(|env| Some(std::sync::Arc::new(TodoWrite::new(env.clone())))),
};

impl Tool for TodoWrite {
    fn name(&self) -> &str {
        NAME
    }
    fn display_name(&self) -> &str {
        "TodoWrite"
    }
    fn description(&self) -> &str {
        "Keeps the task list of this session: send the whole updated list each time (it replaces the previous one). \
         Use it for work of three steps or more: plan the steps, mark one in_progress before starting it and completed as soon as it is done. \
         At most one task may be in_progress. Skip it for a single simple step."
    }
    fn rule_aliases(&self) -> &[&'static str] {
        RULE_ALIASES
    }
    fn kind(&self) -> Kind {
        Kind::Think
    }
    /// The same list written again is the same list.
    fn facts(&self) -> ToolFacts {
        ToolFacts {
            idempotent: true,
            ..ToolFacts::default()
        }
    }
    fn parameter_schema(&self) -> &Value {
        &self.schema
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        let params: Params = crate::parse_params(args)?;
        let todos: Vec<TodoItem> = params.todos.into_iter().map(TodoItem::from).collect();
        check(&todos)?;
        Ok(Box::new(TodoCall {
            todos,
            file: self.env.session_dir.join("todos.json"),
        }))
    }
}

fn check(todos: &[TodoItem]) -> Result<(), ToolError> {
    let mut ids = HashSet::new();
    for (i, todo) in todos.iter().enumerate() {
        if todo.id.trim().is_empty() {
            return Err(ToolError::invalid_params(format!(
                "todos[{i}] has an empty id; give every task a short unique id"
            )));
        }
        if todo.content.trim().is_empty() {
            return Err(ToolError::invalid_params(format!(
                "todos[{i}] (id \"{}\") has empty content",
                todo.id
            )));
        }
        if !ids.insert(todo.id.as_str()) {
            return Err(ToolError::invalid_params(format!(
                "the id \"{}\" is used by more than one task; ids must be unique",
                todo.id
            )));
        }
    }
    let in_progress: Vec<&str> = todos
        .iter()
        .filter(|t| t.status == TodoStatus::InProgress)
        .map(|t| t.id.as_str())
        .collect();
    if in_progress.len() > 1 {
        return Err(ToolError::invalid_params(format!(
            "{} tasks are in_progress ({}); at most one may be. Mark the others pending or completed.",
            in_progress.len(),
            in_progress.join(", ")
        )));
    }
    Ok(())
}

struct TodoCall {
    todos: Vec<TodoItem>,
    file: std::path::PathBuf,
}

impl TodoCall {
    fn reminder(&self) -> String {
        if self.todos.is_empty() {
            return "The task list is now empty.".to_string();
        }
        self.todos
            .iter()
            .find(|t| t.status == TodoStatus::InProgress)
            .map(|t| format!("Next: continue \"{}\" (in progress).", t.content))
            .or_else(|| {
                self.todos
                    .iter()
                    .find(|t| t.status == TodoStatus::Pending)
                    .map(|t| format!("Next: mark \"{}\" in_progress and start it.", t.content))
            })
            .unwrap_or_else(|| "All tasks are completed.".to_string())
    }
}

impl Invocation for TodoCall {
    fn describe(&self) -> String {
        let done = self
            .todos
            .iter()
            .filter(|t| t.status == TodoStatus::Completed)
            .count();
        format!("Update the task list ({done}/{} done)", self.todos.len())
    }

    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async { None })
    }

    fn execute(self: Box<Self>, _ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move {
            let list = serde_json::to_string(&self.todos).unwrap_or_else(|_| "[]".into());
            // The file is a convenience for people and tools outside the session; the
            // list itself travels in the result.
            if let Some(dir) = self.file.parent()
                && let Err(e) = toolbelt_config::store_files::create_dir_all(dir).and_then(|()| {
                    toolbelt_config::store_files::write(
                        &self.file,
                        format!("{{\"todos\":{list}}}\n").as_bytes(),
                    )
                })
            {
                tracing::warn!("cannot save the task list to {}: {e}", self.file.display());
            }
            let text = format!(
                "The task list was updated. Do not mention this to the user; keep working on the tasks.\n\
                 <system-reminder>The current task list: {list}. {}</system-reminder>",
                self.reminder()
            );
            ToolResult::with_display(text, Display::TodoList { todos: self.todos })
        })
    }
}

#[cfg(test)]
mod tests;
