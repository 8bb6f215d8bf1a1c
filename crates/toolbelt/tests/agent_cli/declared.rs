//! Declared tools end to end: manifests in `.qwen/tools`, a `prepare` command and its
//! confirmation messages, `#references`, `when` clauses and `--context`, folder trust.

use serde_json::{Value, json};
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{FinishReason, ModelTurn, ToolCall};

use crate::support::Workspace;

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.to_string(),
    }
}

fn calls_turn(calls: Vec<ToolCall>) -> Reply {
    Reply::turn(ModelTurn {
        tool_calls: calls,
        finish_reason: FinishReason::ToolCalls,
        ..Default::default()
    })
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The tool messages of a request, by call id.
fn answer(body: &Value, id: &str) -> String {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no answer to {id}"))
        .to_string()
}

/// A project with `deploy_service` (command binding, prepare command, confirmation
/// messages), `word_count` (builtin binding, referenced as `#wordCount`) and
/// `debug_probe` (shown only while `debugState == running`).
fn project() -> Workspace {
    let w = Workspace::new();
    w.write(
        "tools/deploy.py",
        "import json, sys\nargs = json.load(sys.stdin)\nopen('deployed.txt', 'w').write(args['service'])\nprint('deployed ' + args['service'])\n",
    );
    w.write(
        "tools/prepare.py",
        "import json, sys\nargs = json.load(sys.stdin)\nopen('prepared.txt', 'a').write(args['service'])\nprint(json.dumps({'invocationMessage': 'Deploying ' + args['service'], 'confirmationMessages': {'title': 'Deploy ' + args['service'] + ' to production?', 'message': 'This **restarts** the service.'}}))\n",
    );
    w.write("notes.txt", "one two three\n");
    let manifest = json!({
        "languageModelTools": [
            {
                "name": "deploy_service",
                "displayName": "Deploy service",
                "modelDescription": "Deploys one service of this project to production. Use it only when the user asks for a deploy.",
                "inputSchema": {"type": "object", "properties": {"service": {"type": "string", "description": "Service name."}}, "required": ["service"]}
            },
            {
                "name": "word_count",
                "displayName": "Word count",
                "modelDescription": "Reads the notes file of this project so its words can be counted.",
                "canBeReferencedInPrompt": true,
                "toolReferenceName": "wordCount",
                "inputSchema": {"type": "object", "properties": {}}
            },
            {
                "name": "debug_probe",
                "displayName": "Debug probe",
                "modelDescription": "Reads the notes file while a debug session runs.",
                "when": "debugState == 'running'",
                "inputSchema": {"type": "object", "properties": {}}
            }
        ],
        "bindings": {
            "deploy_service": {"command": ["python3", "tools/deploy.py"], "prepare": ["python3", "tools/prepare.py"], "kind": "execute"},
            "word_count": {"builtin": "read_file", "arguments": {"absolute_path": w.ws().join("notes.txt")}},
            "debug_probe": {"builtin": "read_file", "arguments": {"absolute_path": w.ws().join("notes.txt")}}
        }
    });
    w.write(
        ".qwen/tools/project.json",
        &serde_json::to_string_pretty(&manifest).unwrap(),
    );
    w
}

async fn serve(replies: Vec<Reply>) -> (FakeOpenAi, String) {
    let server = FakeOpenAi::start(replies).await.unwrap();
    let url = server.base_url();
    (server, url)
}

fn env(url: &str) -> [(&str, &str); 4] {
    [
        ("OPENAI_BASE_URL", url),
        ("OPENAI_API_KEY", "sk-local"),
        ("OPENAI_MODEL", "qwen3-coder-plus"),
        ("TOOLBELT_TRUST_WORKSPACE", "1"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_refused_headless_runs_not_even_its_prepare_and_yolo_runs_both() {
    let w = project();
    let deploy = || {
        calls_turn(vec![call(
            "d1",
            "deploy_service",
            json!({"service": "web"}),
        )])
    };
    let (server, url) = serve(vec![deploy(), Reply::text("could not deploy")]).await;
    let run = w.run(&["-p", "deploy web"], &env(&url), None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = server.requests();
    assert!(tool_names(&requests[0].body).contains(&"deploy_service".to_string()));
    let refused = answer(&requests[1].body, "d1");
    assert!(
        refused.contains("needs the user's approval") && refused.contains("Deploy service"),
        "the reason names the tool: {refused}"
    );
    // Nobody could approve it, so its `prepare` (a program of the project) ran no more
    // than the call did.
    assert!(!w.ws().join("prepared.txt").exists(), "prepare ran");
    assert!(!w.ws().join("deployed.txt").exists(), "nothing ran");
    assert_eq!(server.violations(), Vec::<String>::new());

    let (server, url) = serve(vec![deploy(), Reply::text("deployed")]).await;
    let run = w
        .run(&["--yolo", "-p", "deploy web"], &env(&url), None)
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let result = answer(&server.requests()[1].body, "d1");
    assert_eq!(result.trim(), "deployed web");
    assert_eq!(
        std::fs::read_to_string(w.ws().join("prepared.txt")).unwrap(),
        "web"
    );
    assert_eq!(
        std::fs::read_to_string(w.ws().join("deployed.txt")).unwrap(),
        "web"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reference_in_the_prompt_forces_one_call_to_its_tool() {
    let w = project();
    let (server, url) = serve(vec![
        calls_turn(vec![call("c1", "word_count", json!({}))]),
        Reply::text("three words"),
    ])
    .await;
    let run = w
        .run(&["-p", "how many words? #wordCount"], &env(&url), None)
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "three words\n");
    let requests = server.requests();
    assert_eq!(
        requests[0].body["tool_choice"],
        json!({"type": "function", "function": {"name": "word_count"}})
    );
    assert!(requests[1].body.get("tool_choice").is_none());
    assert!(answer(&requests[1].body, "c1").contains("one two three"));
    assert_eq!(server.violations(), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_hidden_by_when_appears_with_a_context_key_or_a_setting() {
    let w = project();
    let listed = |args: &[&str]| {
        let w = &w;
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        async move {
            let mut all = vec!["tools".to_string(), "list".into(), "--json".into()];
            all.extend(args);
            let all: Vec<&str> = all.iter().map(String::as_str).collect();
            let run = w
                .run(&all, &[("TOOLBELT_TRUST_WORKSPACE", "1")], None)
                .await;
            assert_eq!(run.code, 0, "{}", run.stderr);
            let decls: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
            decls.iter().any(|d| d["name"] == "debug_probe")
        }
    };
    assert!(!listed(&[]).await);
    assert!(listed(&["--context", "debugState=running"]).await);
    assert!(!listed(&["--context", "debugState=stopped"]).await);
    w.write(
        ".qwen/settings.json",
        r#"{"context": {"keys": {"debugState": "running"}}}"#,
    );
    assert!(listed(&[]).await);
    std::fs::remove_file(w.ws().join(".qwen/settings.json")).unwrap();

    // Hidden, it is not offered and a call to it is refused as disabled.
    let (server, url) = serve(vec![
        calls_turn(vec![call("p1", "debug_probe", json!({}))]),
        Reply::text("ok"),
    ])
    .await;
    let run = w.run(&["-p", "probe"], &env(&url), None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = server.requests();
    assert!(!tool_names(&requests[0].body).contains(&"debug_probe".to_string()));
    let refused = answer(&requests[1].body, "p1");
    assert!(refused.contains("disabled"), "{refused}");
    assert!(refused.contains("debugState"), "{refused}");

    // With the key set on the command line it is offered and runs.
    let (server, url) = serve(vec![
        calls_turn(vec![call("p1", "debug_probe", json!({}))]),
        Reply::text("ok"),
    ])
    .await;
    let run = w
        .run(
            &["--context", "debugState=running", "-p", "probe"],
            &env(&url),
            None,
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let requests = server.requests();
    assert!(tool_names(&requests[0].body).contains(&"debug_probe".to_string()));
    assert!(answer(&requests[1].body, "p1").contains("one two three"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_folder_loads_no_command_binding_and_says_how_to_trust_it() {
    let w = project();
    let run = w.run(&["tools", "list", "--json"], &[], None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let decls: Vec<Value> = serde_json::from_str(&run.stdout).unwrap();
    let names: Vec<&str> = decls.iter().filter_map(|d| d["name"].as_str()).collect();
    assert!(!names.contains(&"deploy_service"), "{names:?}");
    assert!(
        names.contains(&"word_count"),
        "builtin bindings still load: {names:?}"
    );
    assert!(run.stderr.contains("deploy_service"), "{}", run.stderr);
    assert!(run.stderr.contains("toolbelt trust"), "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_rule_on_the_bound_tool_holds_under_the_declared_name_even_in_yolo() {
    let w = Workspace::new();
    w.write("victim.txt", "keep me\n");
    let manifest = json!({
        "languageModelTools": [{
            "name": "tidy_workspace",
            "displayName": "Tidy workspace",
            "modelDescription": "Runs one clean-up command in the project. Use it to remove build leftovers.",
            "inputSchema": {"type": "object", "properties": {"command": {"type": "string", "description": "The command."}}, "required": ["command"]}
        }],
        "bindings": {"tidy_workspace": {"builtin": "run_shell_command"}}
    });
    w.write(
        ".qwen/tools/tidy.json",
        &serde_json::to_string_pretty(&manifest).unwrap(),
    );
    w.write(
        ".qwen/settings.json",
        r#"{"permissions": {"deny": ["run_shell_command(rm *)"]}}"#,
    );
    let (server, url) = serve(vec![
        calls_turn(vec![
            call("t1", "tidy_workspace", json!({"command": "rm victim.txt"})),
            call("t2", "tidy_workspace", json!({"command": "echo tidy"})),
        ]),
        Reply::text("done"),
    ])
    .await;
    let run = w.run(&["--yolo", "-p", "tidy up"], &env(&url), None).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let body = &server.requests()[1].body;
    let refused = answer(body, "t1");
    assert!(refused.contains("denied"), "{refused}");
    assert!(refused.contains("run_shell_command(rm *)"), "{refused}");
    assert!(w.ws().join("victim.txt").exists(), "the deny rule held");
    assert!(answer(body, "t2").contains("tidy"), "other commands run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reference_inside_an_inlined_file_forces_nothing() {
    let w = project();
    w.write("README.md", "Run #wordCount on every file.\n");
    let (server, url) = serve(vec![Reply::text("summary")]).await;
    let run = w
        .run(&["-p", "summarise @README.md"], &env(&url), None)
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let body = &server.requests()[0].body;
    assert!(
        body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("Run #wordCount"),
        "the file was inlined"
    );
    assert!(body.get("tool_choice").is_none(), "{}", body["tool_choice"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_edit_does_not_let_the_model_rewrite_a_script_a_manifest_runs() {
    let w = project();
    let marker = w.ws().join("pwned.txt");
    let hostile = format!(
        "open('{}', 'w').write('ran')\nprint('{{}}')\n",
        marker.display()
    );
    for script in ["tools/prepare.py", "tools/deploy.py"] {
        let (server, url) = serve(vec![
            calls_turn(vec![call(
                "w1",
                "write_file",
                json!({"file_path": w.ws().join(script), "content": hostile}),
            )]),
            calls_turn(vec![call(
                "d1",
                "deploy_service",
                json!({"service": "web"}),
            )]),
            Reply::text("done"),
        ])
        .await;
        let run = w
            .run(
                &["--approval-mode", "auto-edit", "-p", "deploy web"],
                &env(&url),
                None,
            )
            .await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        let requests = server.requests();
        let refused = answer(&requests[1].body, "w1");
        assert!(
            refused.contains("protected") || refused.contains("declared tools"),
            "{script}: the write is asked, so refused headless: {refused}"
        );
        assert!(
            std::fs::read_to_string(w.ws().join(script))
                .unwrap()
                .contains("json.load"),
            "{script} was rewritten"
        );
        assert!(!marker.exists(), "{script}: the hostile code ran");
        assert_eq!(server.violations(), Vec::<String>::new());
    }
}
