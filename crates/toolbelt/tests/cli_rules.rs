#![allow(clippy::too_many_lines)]
//! Permission rules as a user meets them through the real binary: a denial exits 3
//! whatever its form, path rules hold for every file tool, and a rule naming no tool
//! is a warning.

// Test fixtures outside #[test] functions may panic on a broken test setup.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// A project and a home of its own; the rules go in the user settings
/// (`~/.qwen/settings.json`), which are the person's own in every folder.
struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
}

fn project(settings: &str) -> Project {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(home.join(".qwen")).unwrap();
    std::fs::write(home.join(".qwen/settings.json"), settings).unwrap();
    let root = root.canonicalize().unwrap();
    for name in ["public.txt", "secret.txt"] {
        std::fs::write(root.join(name), format!("needle in {name}\n")).unwrap();
    }
    Project {
        _dir: dir,
        root,
        home,
    }
}

impl Project {
    fn call(&self, tool: &str, args: serde_json::Value) -> Output {
        Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .args(["tools", "call", tool, &args.to_string()])
            .current_dir(&self.root)
            .env("HOME", &self.home)
            .env(
                "TOOLBELT_SYSTEM_SETTINGS_PATH",
                self.home.join("no-system-settings.json"),
            )
            .env_remove("TOOLBELT_HOME")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    fn path(&self, name: &str) -> String {
        self.root.join(name).to_str().unwrap().to_string()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_bare_deny_of_a_tool_is_a_refusal_exit_3() {
    let p = project(r#"{"permissions": {"deny": ["read_file"]}}"#);
    let out = p.call(
        "read_file",
        serde_json::json!({"absolute_path": p.path("public.txt")}),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("refused"), "{err}");
    assert!(err.contains("permissions.deny"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_read_rule_holds_for_every_tool_that_reads() {
    let p = project(r#"{"permissions": {"deny": ["read_file(/secret.txt)"]}}"#);
    for (tool, args) in [
        ("glob", serde_json::json!({"pattern": "*.txt"})),
        ("grep_search", serde_json::json!({"pattern": "needle"})),
        ("read_many_files", serde_json::json!({"paths": ["*.txt"]})),
        ("list_directory", serde_json::json!({"path": p.path("")})),
    ] {
        let out = p.call(tool, args);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{tool}: {}", text(&out.stderr));
        assert!(stdout.contains("public.txt"), "{tool}: {stdout}");
        assert!(!stdout.contains("secret"), "{tool} leaked it: {stdout}");
        assert!(
            stdout.contains("1 path(s) were left out"),
            "{tool}: {stdout}"
        );
    }
    // Named directly, by any reading tool: refused, exit 3, the rule named.
    for (tool, args) in [
        (
            "read_file",
            serde_json::json!({"absolute_path": p.path("secret.txt")}),
        ),
        (
            "read_many_files",
            serde_json::json!({"paths": ["secret.txt"]}),
        ),
        (
            "grep_search",
            serde_json::json!({"pattern": "x", "path": p.path("secret.txt")}),
        ),
    ] {
        let out = p.call(tool, args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{tool}: {err}");
        assert!(err.contains("`read_file(/secret.txt)`"), "{tool}: {err}");
        assert!(!text(&out.stdout).contains("needle"), "{tool}");
    }
}

#[test]
fn an_edit_rule_holds_for_write_file() {
    let p = project(r#"{"permissions": {"deny": ["Edit(/public.txt)"]}}"#);
    let out = p.call(
        "write_file",
        serde_json::json!({"file_path": p.path("public.txt"), "content": "gone"}),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("`Edit(/public.txt)`"), "{err}");
    assert_eq!(
        std::fs::read_to_string(p.root.join("public.txt")).unwrap(),
        "needle in public.txt\n"
    );
}

#[test]
fn a_rule_naming_no_tool_is_a_warning_with_the_closest_name() {
    let p = project(
        r#"{"permissions": {
            "deny": ["raed_file(/secret.txt)", "Grep(//etc/**)"],
            "allow": ["Read(/public.txt)", "Bash(git *)", "glob"]
        }}"#,
    );
    let out = p.call(
        "read_file",
        serde_json::json!({"absolute_path": p.path("public.txt")}),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].contains("`raed_file`"), "{err}");
    assert!(warnings[0].contains("`read_file`"), "{err}");
}

/// An HTML page on 127.0.0.1 that counts the connections it gets.
fn page_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/doc.html", listener.local_addr().unwrap());
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = hits.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let body =
                "<html><body><h1>Hello from loopback</h1><script>evil()</script></body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, hits)
}

#[test]
fn web_fetch_rules_name_the_domain_and_the_guard_still_holds() {
    use std::sync::atomic::Ordering::SeqCst;
    let (url, hits) = page_server();
    let args = serde_json::json!({"url": url, "prompt": "the heading"});
    let open = r#""tools": {"webFetch": {"allowHosts": ["127.0.0.1"]}}"#;

    // An allow rule on the domain runs it without a question.
    let p = project(&format!(
        r#"{{{open}, "permissions": {{"allow": ["WebFetch(domain:127.0.0.1)"]}}}}"#
    ));
    let out = p.call("web_fetch", args.clone());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let page = text(&out.stdout);
    assert!(page.contains("# Hello from loopback"), "{page}");
    assert!(!page.contains("evil()"), "{page}");
    assert_eq!(hits.load(SeqCst), 1);

    // Without a rule it asks, and with no one to ask it is refused before connecting.
    let p = project(&format!("{{{open}}}"));
    let out = p.call("web_fetch", args.clone());
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    // A deny rule wins over the allow rule.
    let p = project(&format!(
        r#"{{{open}, "permissions": {{"allow": ["WebFetch(domain:127.0.0.1)"], "deny": ["web_fetch(domain:127.0.0.1)"]}}}}"#
    ));
    let out = p.call("web_fetch", args.clone());
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert_eq!(hits.load(SeqCst), 1);

    // An allow rule approves the call, not the address: the guard refuses a literal
    // loopback address when the call is built (exit 2, like any bad argument).
    let p = project(r#"{"permissions": {"allow": ["WebFetch(domain:127.0.0.1)"]}}"#);
    let out = p.call("web_fetch", args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("tools.webFetch.allowHosts"), "{err}");
    assert_eq!(hits.load(SeqCst), 1, "no connection was made");
}

#[test]
fn lint_reports_a_badly_declared_tool_and_exits_1() {
    // A discovered tool (user settings, so trusted) that is not verb_noun, with an
    // undescribed parameter and a schema that requires what it does not define.
    let decls = r#"[{"name": "weather", "description": "x", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}}]"#;
    let p = project(
        &serde_json::json!({
            "tools": {"discoveryCommand": format!("echo '{decls}'")}
        })
        .to_string(),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(["tools", "lint", "--json"])
        .current_dir(&p.root)
        .env("HOME", &p.home)
        .env("TOOLBELT_SYSTEM_SETTINGS_PATH", p.home.join("none.json"))
        .env_remove("TOOLBELT_HOME")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let findings: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let rules: Vec<(&str, &str)> = findings
        .iter()
        .map(|f| (f["rule"].as_str().unwrap(), f["severity"].as_str().unwrap()))
        .collect();
    for expected in [
        ("schema-required", "error"),
        ("name-verb-noun", "warning"),
        ("parameter-description", "warning"),
    ] {
        assert!(rules.contains(&expected), "{expected:?} in {rules:?}");
    }
    assert!(
        findings.iter().all(|f| f["tool"] != "read_file"),
        "built-ins are clean"
    );
}

#[test]
fn lint_counts_a_manifest_entry_skipped_at_load_as_an_error() {
    // A user manifest (trusted) with one good tool, one with an invalid name and one
    // without a binding: the two skipped entries are errors naming file and entry.
    let p = project("{}");
    let tools = p.home.join(".qwen/tools");
    std::fs::create_dir_all(&tools).unwrap();
    let manifest = serde_json::json!({
        "languageModelTools": [
            {"name": "list_notes", "displayName": "List", "modelDescription": "Lists notes."},
            {"name": "bad name!", "displayName": "Bad", "modelDescription": "x"},
            {"name": "no_binding", "displayName": "None", "modelDescription": "y"}
        ],
        "bindings": {
            "list_notes": {"builtin": "glob", "arguments": {"pattern": "*.md"}},
            "bad name!": {"builtin": "glob", "arguments": {"pattern": "*.md"}}
        }
    });
    std::fs::write(tools.join("notes.json"), manifest.to_string()).unwrap();
    let lint = |json: bool| {
        let mut args = vec!["tools", "lint"];
        if json {
            args.push("--json");
        }
        Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .args(&args)
            .current_dir(&p.root)
            .env("HOME", &p.home)
            .env("TOOLBELT_SYSTEM_SETTINGS_PATH", p.home.join("none.json"))
            .env_remove("TOOLBELT_HOME")
            .output()
            .unwrap()
    };
    let out = lint(true);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let findings: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let skipped: Vec<&serde_json::Value> = findings
        .iter()
        .filter(|f| f["rule"] == "not-loaded")
        .collect();
    assert_eq!(skipped.len(), 2, "{findings:#?}");
    for f in &skipped {
        assert_eq!(f["severity"], "error");
        assert!(f["tool"].as_str().unwrap().ends_with("notes.json"), "{f}");
    }
    assert!(
        skipped
            .iter()
            .any(|f| f["message"].as_str().unwrap().contains("bad name!"))
    );
    assert!(
        skipped
            .iter()
            .any(|f| f["message"].as_str().unwrap().contains("no_binding"))
    );
    let out = lint(false);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("2 errors"), "{stdout}");
}

/// A user manifest (trusted) declaring `list_notes`, bound to the built-in `glob`, with
/// `when` (if given) as its clause.
fn declare_list_notes(p: &Project, when: Option<&str>) {
    let tools = p.home.join(".qwen/tools");
    std::fs::create_dir_all(&tools).unwrap();
    let mut tool = serde_json::json!({
        "name": "list_notes", "displayName": "List notes", "modelDescription": "Lists the notes."
    });
    if let Some(clause) = when {
        tool["when"] = clause.into();
    }
    let manifest = serde_json::json!({
        "languageModelTools": [tool],
        "bindings": {"list_notes": {"builtin": "glob", "arguments": {"pattern": "*.txt"}}}
    });
    std::fs::write(tools.join("notes.json"), manifest.to_string()).unwrap();
}

#[test]
fn tools_call_refuses_a_tool_whose_when_clause_is_false() {
    let p = project("{}");
    declare_list_notes(&p, Some("approvalMode == 'yolo'"));
    let out = p.call("list_notes", serde_json::json!({}));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("refused"), "{err}");
    assert!(err.contains("is disabled"), "{err}");
    assert!(err.contains("approvalMode == 'yolo'"), "{err}");
    assert!(out.stdout.is_empty(), "it ran: {}", text(&out.stdout));

    // The same tool with a clause that holds runs.
    declare_list_notes(&p, Some("approvalMode != 'yolo'"));
    let out = p.call("list_notes", serde_json::json!({}));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("public.txt"));
}

#[test]
fn tools_call_holds_a_deny_rule_on_a_built_in_against_a_declared_tool_bound_to_it() {
    // A deny rule with a specifier keeps the shell registered (a bare deny would remove
    // it, and the declared tool with it): the declared tool runs an `echo`, which asks
    // nothing, so only the shell's rule can stop it.
    let p = project(r#"{"permissions": {"deny": ["Bash(echo:*)"]}}"#);
    let tools = p.home.join(".qwen/tools");
    std::fs::create_dir_all(&tools).unwrap();
    let manifest = serde_json::json!({
        "languageModelTools": [{
            "name": "say_hello", "displayName": "Say hello", "modelDescription": "Says hello."
        }],
        "bindings": {"say_hello": {
            "builtin": "run_shell_command", "arguments": {"command": "echo ran-it"}
        }}
    });
    std::fs::write(tools.join("hello.json"), manifest.to_string()).unwrap();
    let out = p.call("say_hello", serde_json::json!({}));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("refused"), "{err}");
    assert!(err.contains("Bash(echo:*)"), "the rule is named: {err}");
    assert!(!text(&out.stdout).contains("ran-it"), "it ran: {err}");

    // Without the rule the same call runs: the refusal above was the rule's.
    std::fs::write(p.home.join(".qwen/settings.json"), "{}").unwrap();
    let out = p.call("say_hello", serde_json::json!({}));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("ran-it"));
}
