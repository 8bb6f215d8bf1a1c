//! Running declared tools: real child processes (`sh`, `python3`) written into a
//! temporary workspace.

use std::path::Path;
use std::sync::Arc;
use toolbelt_engine::scheduler::CallRules;

use serde_json::{Value, json};
use toolbelt_config::settings::Settings;
use toolbelt_core::{
    BoxFuture, ConfirmationDetails, ErrorKind, ExecContext, Invocation, Kind, Part, Tool,
    ToolError, ToolResult,
};
use toolbelt_engine::{registry::Origin, registry::ToolRegistry};

use super::tests::{builtins, load, setup, write_json};
use super::*;
use crate::test_support::{Fixture, err_kind};

/// Writes an executable script into the workspace and returns its path.
fn script(f: &Fixture, name: &str, body: &str) -> String {
    let path = f.write(name, body);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// One tool `t` with `binding` (and `schema`), registered over the built-ins.
fn registry_with(f: &Fixture, binding: Value, schema: Option<Value>) -> ToolRegistry {
    let mut entry =
        json!({"name": "t", "displayName": "Thing", "modelDescription": "Does a thing."});
    if let Some(schema) = schema {
        entry["inputSchema"] = schema;
    }
    write_json(
        &f.ws().join(".qwen/tools/t.json"),
        &json!({"languageModelTools": [entry], "bindings": {"t": binding}}),
    );
    let mut registry = builtins(f);
    let warnings = register_declared(&mut registry, load(f));
    assert!(warnings.is_empty(), "{warnings:?}");
    registry
}

/// What the scheduler does with one call: build, prepare, describe, confirm, execute.
async fn call(
    f: &Fixture,
    registry: &ToolRegistry,
    args: Value,
) -> (String, Option<ConfirmationDetails>, ToolResult) {
    let (_, mut invocation) = registry.build("t", args).unwrap();
    invocation.prepare(&Default::default()).await;
    let described = invocation.describe();
    let confirmation = invocation.confirmation().await;
    let result = invocation.execute(ExecContext::new(f.env.clone())).await;
    (described, confirmation, result)
}

fn info(details: Option<ConfirmationDetails>) -> (String, String) {
    match details {
        Some(ConfirmationDetails::Info {
            title,
            prompt,
            urls,
        }) => {
            assert!(urls.is_empty());
            (title, prompt)
        }
        other => panic!("expected an Info confirmation, got {other:?}"),
    }
}

#[tokio::test]
async fn a_command_gets_the_input_on_stdin_in_the_project_root_with_the_manifest_dir() {
    let f = setup(Settings::default());
    let registry = registry_with(
        &f,
        json!({"command": ["sh", "-c", "echo \"cwd=$(pwd) dir=$TOOLBELT_MANIFEST_DIR\"; cat"]}),
        None,
    );
    let (described, confirmation, result) = call(&f, &registry, json!({"n": 1})).await;
    assert!(result.error.is_none(), "{result:?}");
    let text = result.llm_text();
    assert!(
        text.contains(&format!("cwd={}", f.ws().display())),
        "{text}"
    );
    assert!(
        text.contains(&format!("dir={}", f.ws().join(".qwen/tools").display())),
        "{text}"
    );
    assert!(text.contains("{\"n\":1}"), "{text}");
    assert_eq!(described, "Thing {\"n\":1}");
    assert_eq!(
        info(confirmation),
        ("Confirm Thing".to_string(), "Thing {\"n\":1}".to_string())
    );
    assert_eq!(registry.get("t").unwrap().tool.kind(), Kind::Other);
}

#[tokio::test]
async fn a_relative_program_path_resolves_against_the_manifest_folder() {
    let f = setup(Settings::default());
    script(
        &f,
        ".qwen/tools/bin/hello.sh",
        "#!/bin/sh\necho hello from script\n",
    );
    let registry = registry_with(
        &f,
        json!({"command": ["./bin/hello.sh"], "kind": "read"}),
        None,
    );
    assert_eq!(registry.get("t").unwrap().tool.kind(), Kind::Read);
    let (_, _, result) = call(&f, &registry, json!({})).await;
    assert_eq!(result.llm_text().trim(), "hello from script");
}

#[tokio::test]
async fn content_parts_become_text_images_json_and_notes() {
    let f = setup(Settings::default());
    let png: &[u8] = b"\x89PNG\r\n\x1a\nfake";
    use base64::Engine;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let out = json!({"content": [
        {"type": "text", "value": "first"},
        {"type": "data", "mimeType": "image/png", "data": b64(png)},
        {"type": "data", "mimeType": "application/json", "data": b64(br#"{"k":1}"#)},
        {"type": "data", "mimeType": "application/vnd.x+json", "data": b64(b"[2]")},
        {"type": "data", "mimeType": "text/csv", "data": b64(b"a,b")},
        {"type": "data", "mimeType": "application/zip", "data": b64(b"PK12345")},
        {"type": "prompt-tsx", "value": {"node": 1}},
        {"type": "text", "value": "last"}
    ]});
    let out_file = f.write("out.json", out.to_string());
    let registry = registry_with(
        &f,
        json!({"command": ["python3", "-c", "import sys; sys.stdout.write(open(sys.argv[1]).read())", out_file]}),
        None,
    );
    let (_, _, result) = call(&f, &registry, json!({})).await;
    assert!(result.error.is_none(), "{result:?}");
    assert_eq!(
        result.llm_content,
        vec![
            Part::text("first"),
            Part::InlineData {
                mime_type: "image/png".into(),
                data: png.to_vec(),
                display_name: None
            },
            Part::text(r#"{"k":1}"#),
            Part::text("[2]"),
            Part::text("a,b"),
            Part::text("[a application/zip data part of 7 bytes, not shown]"),
            Part::text("last"),
        ]
    );
}

#[tokio::test]
async fn empty_output_is_cancelled_and_a_non_zero_exit_carries_code_and_stderr() {
    let f = setup(Settings::default());
    let registry = registry_with(&f, json!({"command": ["sh", "-c", "echo '  '"]}), None);
    let (_, _, result) = call(&f, &registry, json!({})).await;
    assert_eq!(err_kind(&result), Some(ErrorKind::Cancelled));
    assert!(
        result.llm_text().contains("returned nothing"),
        "{}",
        result.llm_text()
    );

    let f = setup(Settings::default());
    let registry = registry_with(
        &f,
        json!({"command": ["sh", "-c", "echo partial; echo broken pipe >&2; exit 3"]}),
        None,
    );
    let (_, _, result) = call(&f, &registry, json!({})).await;
    assert_eq!(err_kind(&result), Some(ErrorKind::ExecutionFailed));
    let text = result.llm_text();
    for part in [
        "exited with code 3",
        "Stdout: partial",
        "Stderr: broken pipe",
        "Exit Code: 3",
    ] {
        assert!(text.contains(part), "{part} not in {text}");
    }
}

#[tokio::test]
async fn cancelling_a_call_kills_the_command() {
    let f = setup(Settings::default());
    let fifo = f.ws().join("started");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let registry = registry_with(
        &f,
        json!({"command": ["sh", "-c", "echo $$ > \"$1\"; exec sleep 1000", "sh", fifo.display().to_string()]}),
        None,
    );
    let (_, invocation) = registry.build("t", json!({})).unwrap();
    let ctx = ExecContext::new(f.env.clone());
    let cancel = ctx.cancel.clone();
    let running = tokio::spawn(invocation.execute(ctx));
    // Opening the FIFO for reading blocks until the command has written its pid.
    let pid: u32 = tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo).unwrap())
        .await
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    cancel.cancel();
    let result = running.await.unwrap();
    assert_eq!(err_kind(&result), Some(ErrorKind::Cancelled));
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "process {pid} survived the cancel"
    );
}

#[tokio::test]
async fn prepare_messages_are_used_in_describe_and_confirmation() {
    let f = setup(Settings::default());
    let prepare = script(
        &f,
        "prepare.py",
        "#!/usr/bin/env python3\nimport json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({\"invocationMessage\": \"Counting \" + args[\"path\"], \"confirmationMessages\": {\"title\": \"Count words?\", \"message\": \"Count the words of **\" + args[\"path\"] + \"**\"}}))\n",
    );
    let registry = registry_with(
        &f,
        json!({
            "command": ["sh", "-c", "echo counted"],
            "prepare": [prepare],
            "invocationMessage": "static ${input.path}",
            "confirmationMessages": {"title": "static title", "message": "static message"}
        }),
        Some(json!({"type": "object", "properties": {"path": {"type": "string"}}})),
    );
    let (described, confirmation, result) = call(&f, &registry, json!({"path": "a.txt"})).await;
    assert_eq!(described, "Counting a.txt");
    assert_eq!(
        info(confirmation),
        (
            "Count words?".to_string(),
            "Count the words of **a.txt**".to_string()
        )
    );
    assert_eq!(result.llm_text().trim(), "counted");
}

#[tokio::test]
async fn a_failing_or_slow_prepare_falls_back_to_the_templates_then_the_generic_question() {
    for prepare in [
        json!(["sh", "-c", "exit 1"]),
        json!(["sh", "-c", "echo not json"]),
        json!(["sh", "-c", "exec sleep 30"]),
    ] {
        let mut settings = Settings::default();
        settings.tools.prepare_timeout = Some(toolbelt_config::settings::Millis(300));
        let f = setup(settings);
        let registry = registry_with(
            &f,
            json!({
                "command": ["sh", "-c", "echo ok"],
                "prepare": prepare,
                "invocationMessage": "Doing ${input.what}",
                "confirmationMessages": {"title": "Do ${input.what}?", "message": "About to do *${input.what}*"}
            }),
            None,
        );
        let (described, confirmation, _) = call(&f, &registry, json!({"what": "it"})).await;
        assert_eq!(described, "Doing it", "{prepare}");
        assert_eq!(
            info(confirmation),
            ("Do it?".to_string(), "About to do *it*".to_string()),
            "{prepare}"
        );

        let f = setup({
            let mut s = Settings::default();
            s.tools.prepare_timeout = Some(toolbelt_config::settings::Millis(300));
            s
        });
        let registry = registry_with(
            &f,
            json!({"command": ["sh", "-c", "echo ok"], "prepare": prepare}),
            None,
        );
        let (described, confirmation, _) = call(&f, &registry, json!({"what": "it"})).await;
        assert_eq!(described, "Thing {\"what\":\"it\"}");
        assert_eq!(
            info(confirmation),
            (
                "Confirm Thing".to_string(),
                "Thing {\"what\":\"it\"}".to_string()
            )
        );
    }
}

#[tokio::test]
async fn templates_neutralise_hostile_input() {
    let f = setup(Settings::default());
    let registry = registry_with(
        &f,
        json!({
            "command": ["sh", "-c", "echo ok"],
            "invocationMessage": "Open ${input.name}",
            "confirmationMessages": {"title": "Open ${input.name}?", "message": "Open **${input.name}**"}
        }),
        None,
    );
    let hostile = format!("[Approve](http://x)\n# Heading\u{1b}[2J{}", "y".repeat(500));
    let (described, confirmation, _) = call(&f, &registry, json!({"name": hostile})).await;
    let (title, prompt) = info(confirmation);
    assert!(
        !described.contains('\n') && !described.contains('\u{1b}'),
        "{described}"
    );
    assert!(
        described.chars().count() <= "Open ".len() + 200,
        "{described}"
    );
    assert!(!title.contains('\n'), "{title}");
    assert!(
        prompt.starts_with("Open **\\[Approve\\]\\(http://x\\)\\# Heading\\[2J"),
        "{prompt}"
    );
    assert!(prompt.ends_with("y**"), "{prompt}");
}

#[tokio::test]
async fn tools_allowed_skips_the_question_for_command_bindings() {
    let mut settings = Settings::default();
    settings.tools.allowed = vec!["t".into()];
    let f = setup(settings);
    let registry = registry_with(&f, json!({"command": ["sh", "-c", "echo ok"]}), None);
    assert!(!registry.get("t").unwrap().tool.needs_confirmation());
    let (_, confirmation, _) = call(&f, &registry, json!({})).await;
    assert_eq!(confirmation, None);
}

#[tokio::test]
async fn a_builtin_binding_merges_fixed_arguments_over_the_models() {
    let f = setup(Settings::default());
    f.write("docs/a.md", "alpha");
    f.write("docs/b.md", "beta");
    let registry = registry_with(
        &f,
        json!({"builtin": "list_directory", "arguments": {"path": f.path("docs")}}),
        Some(json!({"type": "object", "properties": {"path": {"type": "string"}}})),
    );
    assert_eq!(registry.get("t").unwrap().tool.kind(), Kind::Search);
    // The model's own path loses to the fixed one.
    let (described, confirmation, result) = call(
        &f,
        &registry,
        json!({"path": f.outside().display().to_string()}),
    )
    .await;
    assert!(result.error.is_none(), "{result:?}");
    let text = result.llm_text();
    assert!(text.contains("a.md") && text.contains("b.md"), "{text}");
    assert!(described.starts_with("Thing "), "{described}");
    assert_eq!(confirmation, None);
}

#[tokio::test]
async fn a_builtin_binding_keeps_the_workspace_boundary_for_fixed_and_model_arguments() {
    let f = setup(Settings::default());
    let secret = f.outside().join("secret.txt");
    std::fs::write(&secret, "top secret").unwrap();
    let registry = registry_with(
        &f,
        json!({"builtin": "read_file", "arguments": {"absolute_path": secret.display().to_string()}}),
        None,
    );
    let (_, result) = match registry.build("t", json!({})) {
        Ok((_, call)) => ((), call.execute(ExecContext::new(f.env.clone())).await),
        Err(e) => ((), ToolResult::error(e)),
    };
    assert_eq!(
        err_kind(&result),
        Some(ErrorKind::PathNotInWorkspace),
        "{result:?}"
    );
    assert!(!result.llm_text().contains("top secret"));

    let f = setup(Settings::default());
    let registry = registry_with(
        &f,
        json!({"builtin": "read_file"}),
        Some(json!({"type": "object", "properties": {"absolute_path": {"type": "string"}}})),
    );
    let secret = f.outside().join("secret.txt");
    std::fs::write(&secret, "top secret").unwrap();
    let error = registry
        .build("t", json!({"absolute_path": secret.display().to_string()}))
        .err()
        .map(|e| e.kind);
    assert_eq!(error, Some(ErrorKind::PathNotInWorkspace));
}

#[tokio::test]
async fn a_delegate_shows_the_targets_question_under_the_declared_title() {
    let f = setup(Settings::default());
    let registry = registry_with(
        &f,
        json!({
            "builtin": "write_file",
            "confirmationMessages": {"title": "Save the note ${input.file_path}?"}
        }),
        Some(
            json!({"type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}}}),
        ),
    );
    let path = f.path("note.txt");
    let (_, confirmation, result) =
        call(&f, &registry, json!({"file_path": path, "content": "hi\n"})).await;
    match confirmation {
        Some(ConfirmationDetails::Edit { title, diff, .. }) => {
            assert_eq!(title, format!("Save the note {path}?"));
            assert!(diff.contains("+hi"), "{diff}");
        }
        other => panic!("expected the edit question, got {other:?}"),
    }
    assert!(result.error.is_none(), "{result:?}");
    assert_eq!(f.read("note.txt"), b"hi\n");
}

/// A stand-in for an MCP server's tool.
struct EchoTool(Value);

impl Tool for EchoTool {
    fn name(&self) -> &str {
        "mcp__srv__echo"
    }
    fn display_name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Echoes."
    }
    fn kind(&self) -> Kind {
        Kind::Other
    }
    fn parameter_schema(&self) -> &Value {
        &self.0
    }
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError> {
        Ok(Box::new(EchoCall(args)))
    }
}

struct EchoCall(Value);

impl Invocation for EchoCall {
    fn describe(&self) -> String {
        "echo".into()
    }
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>> {
        Box::pin(async {
            Some(ConfirmationDetails::Mcp {
                title: "Call echo".into(),
                server: "srv".into(),
                tool: "echo".into(),
                tool_display_name: "echo".into(),
            })
        })
    }
    fn execute(self: Box<Self>, _ctx: ExecContext) -> BoxFuture<'static, ToolResult> {
        Box::pin(async move { ToolResult::text(format!("echo {}", self.0)) })
    }
}

#[tokio::test]
async fn an_mcp_binding_delegates_to_that_servers_tool() {
    let f = setup(Settings::default());
    write_json(
        &f.ws().join(".qwen/tools/t.json"),
        &json!({
            "languageModelTools": [{"name": "t", "displayName": "Thing", "modelDescription": "d"}],
            "bindings": {"t": {"mcp": "srv/echo"}}
        }),
    );
    let mut registry = builtins(&f);
    registry.register(
        Arc::new(EchoTool(json!({"type": "object"}))),
        Origin::Mcp {
            server: "srv".into(),
        },
    );
    let warnings = register_declared(&mut registry, load(&f));
    assert!(warnings.is_empty(), "{warnings:?}");
    let (_, confirmation, result) = call(&f, &registry, json!({"x": 1})).await;
    assert_eq!(
        confirmation.map(|c| c.title().to_string()).as_deref(),
        Some("Call echo")
    );
    assert_eq!(result.llm_text(), "echo {\"x\":1}");
}

/// Copies `from` into `to`, keeping the executable bits.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[tokio::test]
async fn the_example_in_examples_declared_loads_and_runs() {
    let f = setup(Settings::default());
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/declared");
    copy_tree(&example, &f.ws());
    let mut registry = builtins(&f);
    let warnings = register_declared(&mut registry, load(&f));
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(
        registry.resolve_reference("notes"),
        vec!["find_notes", "word_count"]
    );

    let (_, mut count) = registry
        .build("word_count", json!({"path": "notes/todo.md"}))
        .unwrap();
    count.prepare(&Default::default()).await;
    assert_eq!(
        count.describe(),
        "Counting the words of notes/todo.md (46 bytes)"
    );
    assert_eq!(
        info(count.confirmation().await).0,
        "Count the words of notes/todo.md?"
    );
    let result = count.execute(ExecContext::new(f.env.clone())).await;
    assert!(result.error.is_none(), "{result:?}");
    assert_eq!(
        result.llm_content,
        vec![
            Part::text("notes/todo.md: 4 lines, 11 words, 46 characters"),
            Part::text(r#"{"lines": 4, "words": 11, "chars": 46}"#),
        ]
    );

    let (_, find) = registry.build("find_notes", json!({})).unwrap();
    assert_eq!(find.confirmation().await, None);
    let text = find
        .execute(ExecContext::new(f.env.clone()))
        .await
        .llm_text();
    assert!(
        text.contains("todo.md") && text.contains("ideas.md"),
        "{text}"
    );
}

#[tokio::test]
async fn a_cancelled_prepare_ends_its_command_and_keeps_the_templates() {
    let f = setup(Settings::default());
    let registry = registry_with(
        &f,
        json!({
            "command": ["sh", "-c", "echo ok"],
            "prepare": ["sh", "-c", "exec sleep 1000"],
            "invocationMessage": "Static"
        }),
        None,
    );
    let (_, mut invocation) = registry.build("t", json!({})).unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    cancel.cancel();
    // With the default 5 s limit, only the cancel can end this promptly; the test's own
    // timeout is a backstop, far above what the cancel takes.
    tokio::time::timeout(
        std::time::Duration::from_secs(4),
        invocation.prepare(&cancel),
    )
    .await
    .expect("prepare did not honour the cancel");
    assert_eq!(invocation.describe(), "Static");
}

/// A declared tool's `prepare` is a command of its own: a call that a deny rule or plan
/// mode refuses must not run it (it ran before the refusal once).
#[tokio::test]
async fn a_refused_call_runs_no_prepare_command() {
    use toolbelt_config::ApprovalMode;
    use toolbelt_engine::rules::RuleList;
    use toolbelt_engine::{
        scheduler::Permissions, scheduler::Scheduler, scheduler::SchedulerConfig,
        scheduler::ToolCallRequest, scheduler::TurnInfo,
    };
    let f = setup(Settings::default());
    let marker = f.ws().join("prepared");
    let registry = registry_with(
        &f,
        json!({
            "command": ["sh", "-c", "echo ran"],
            "prepare": ["sh", "-c", format!("touch '{}'", marker.display())],
        }),
        None,
    );
    let mut denied = Permissions::new(&crate::rule_vocabulary());
    denied.add(RuleList::Deny, "t");
    let refusing = [
        SchedulerConfig::new(CallRules::new(denied, ApprovalMode::Yolo, None, None)),
        SchedulerConfig::new(CallRules::new(
            Permissions::new(&toolbelt_engine::rules::RuleVocabulary::default()),
            ApprovalMode::Plan,
            None,
            None,
        )),
    ];
    for config in refusing {
        let mode = config.rules().mode();
        let scheduler = Scheduler::new(f.env.clone(), config);
        let call = ToolCallRequest::new("1", "t", &json!({}));
        let done = scheduler
            .run(
                &registry,
                vec![call],
                TurnInfo::default(),
                &Default::default(),
            )
            .await;
        let error = done[0].result.error.as_ref().expect("refused");
        assert_eq!(error.kind, ErrorKind::ExecutionDenied, "{mode}");
        assert!(!marker.exists(), "{mode}: the prepare command ran");
    }
    // Allowed, the same call runs its prepare command and then itself.
    let scheduler = Scheduler::new(
        f.env.clone(),
        SchedulerConfig::new(CallRules::new(
            Permissions::new(&toolbelt_engine::rules::RuleVocabulary::default()),
            ApprovalMode::Yolo,
            None,
            None,
        )),
    );
    let call = ToolCallRequest::new("1", "t", &json!({}));
    let done = scheduler
        .run(
            &registry,
            vec![call],
            TurnInfo::default(),
            &Default::default(),
        )
        .await;
    assert_eq!(done[0].result.llm_text().trim(), "ran");
    assert!(marker.exists());
}
