//! The reference server `server-everything` over Streamable HTTP (issue 46: the client's
//! resources, templates, prompts with arguments, elicitation, sampling and a slow tool
//! are tested over stdio and HTTP). The server runs through
//! `tests/fixtures/everything_http.mjs`, which puts it on a free loopback port and
//! prints that port.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::{Project, stderr, stdout};

/// server-everything listening on HTTP; ended when dropped.
struct HttpEverything {
    child: Child,
    url: String,
}

impl Drop for HttpEverything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl HttpEverything {
    fn start(script: &Path) -> HttpEverything {
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/everything_http.mjs");
        let mut child = Command::new("node")
            .arg(fixture)
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        // The port line, read on a thread of its own so a server that never prints it
        // fails the test instead of holding it.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(port) = line.strip_prefix("PORT=") {
                    let _ = tx.send(port.trim().to_string());
                }
            }
        });
        let port = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("server-everything printed no port");
        HttpEverything {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

/// A project whose server `everything` is server-everything over HTTP, trusted (its
/// tools run without asking), with `extra` merged into the server's settings.
fn http_project(server: &HttpEverything, extra: &Value) -> Project {
    let mut entry = json!({"httpUrl": server.url, "trust": true});
    if let (Some(entry), Some(extra)) = (entry.as_object_mut(), extra.as_object()) {
        entry.extend(extra.clone());
    }
    Project::new(json!({"mcpServers": {"everything": entry}}))
}

fn everything() -> Option<PathBuf> {
    super::resources::everything_or_skip()
}

#[test]
fn over_http_mcp_list_counts_tools_resources_templates_and_prompts() {
    let Some(script) = everything() else {
        return;
    };
    let server = HttpEverything::start(&script);
    let project = http_project(&server, &json!({}));
    let out = project.run(&["mcp", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(listed[0]["transport"], "http", "{listed}");
    assert_eq!(listed[0]["status"], "connected", "{listed}");
    let counts = &listed[0]["counts"];
    assert!(counts["tools"].as_u64().unwrap() > 5, "{counts}");
    assert!(counts["resources"].as_u64().unwrap() > 0, "{counts}");
    assert_eq!(counts["resourceTemplates"], 2, "{counts}");
    assert!(counts["prompts"].as_u64().unwrap() >= 2, "{counts}");
}

#[test]
fn over_http_template_resources_read_as_text_and_blob() {
    let Some(script) = everything() else {
        return;
    };
    let server = HttpEverything::start(&script);
    let project = http_project(&server, &json!({}));
    let out = project.run(&["tools", "call", "list_mcp_resources", "{}"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("- demo://resource/dynamic/text/{resourceId}"),
        "{}",
        stdout(&out)
    );
    let read = |uri: &str| -> String {
        let args = json!({"server": "everything", "uri": uri}).to_string();
        let out = project.run(&["tools", "call", "read_mcp_resource", &args, "--json"]);
        assert!(out.status.success(), "{uri}: {}", stderr(&out));
        let result: Value = serde_json::from_str(&stdout(&out)).unwrap();
        result["llm_content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let text = read("demo://resource/dynamic/text/3");
    assert!(
        text.starts_with("Resource 3: This is a plaintext resource"),
        "{text}"
    );
    let blob = read("demo://resource/dynamic/blob/4");
    assert!(
        blob.starts_with("Resource 4: This is a base64 blob"),
        "{blob}"
    );
}

#[test]
fn over_http_a_prompt_with_arguments_runs_as_a_slash_command() {
    use toolbelt_model::fake_server::{FakeOpenAi, Reply};
    let Some(script) = everything() else {
        return;
    };
    let server = HttpEverything::start(&script);
    let project = http_project(&server, &json!({}));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let model = runtime.block_on(FakeOpenAi::start(Vec::new())).unwrap();
    model.set_fallback(Reply::text("sunny"));
    let url = model.base_url();
    let out = project.run(&[
        "--openai-base-url",
        &url,
        "-m",
        "m",
        "-p",
        "/everything:args-prompt city=Oslo state=Viken",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = model.requests();
    let first = requests[0].body.to_string();
    assert!(first.contains("What's weather in Oslo, Viken?"), "{first}");
}

/// `trigger-elicitation-request` and `trigger-sampling-request` over HTTP, headless: the
/// form is declined and the sampling refused, each with its reason (as over stdio).
#[test]
fn over_http_a_headless_run_declines_an_elicitation_and_refuses_sampling() {
    let Some(script) = everything() else {
        return;
    };
    let server = HttpEverything::start(&script);
    let project = http_project(&server, &json!({}));
    let out = project.run(&[
        "tools",
        "call",
        "mcp__everything__trigger-elicitation-request",
        "{}",
    ]);
    assert!(
        stdout(&out).contains("User declined"),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    let out = project.run(&[
        "tools",
        "call",
        "mcp__everything__trigger-sampling-request",
        r#"{"prompt": "hello", "maxTokens": 50}"#,
    ]);
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        all.contains("refused the sampling request of MCP server \"everything\""),
        "{all}"
    );
}

/// A tool that takes seconds (server-everything's long-running operation, 2 s in 4
/// steps with progress) answers whole, over stdio and over HTTP.
#[test]
fn a_slow_tool_answers_over_stdio_and_http() {
    let Some(script) = everything() else {
        return;
    };
    let call = |project: &Project| -> Output {
        project.run(&[
            "tools",
            "call",
            "mcp__everything__trigger-long-running-operation",
            r#"{"duration": 2, "steps": 4}"#,
        ])
    };
    let stdio = Project::new(json!({"mcpServers": {
        "everything": {"command": "node", "args": [&script], "trust": true}
    }}));
    let server = HttpEverything::start(&script);
    let http = http_project(&server, &json!({}));
    for (transport, project) in [("stdio", &stdio), ("http", &http)] {
        let started = std::time::Instant::now();
        let out = call(project);
        assert!(out.status.success(), "{transport}: {}", stderr(&out));
        assert!(
            stdout(&out)
                .contains("Long running operation completed. Duration: 2 seconds, Steps: 4."),
            "{transport}: {}",
            stdout(&out)
        );
        assert!(
            started.elapsed() >= Duration::from_secs(2),
            "{transport}: answered early"
        );
    }
}
