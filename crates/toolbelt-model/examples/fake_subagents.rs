//! A loopback OpenAI-compatible server for the sub-agent benchmark (`bench/subagents.sh`):
//! the parent's first answer starts AGENTS sub-agents at once (`agent` calls), each
//! sub-agent makes CALLS `read_file` calls, one per turn, then answers; the parent then
//! answers. Each sub-agent's conversation is routed by the marker in its prompt.
//!
//! ```text
//! fake_subagents AGENTS CALLS FILE [--delay-ms N] [--port-file PATH] [--report PATH]
//! ```
//!
//! `FILE` is the absolute path the sub-agents read; `--delay-ms` holds every answer
//! that long (a model's thinking time). `--report` is rewritten after every request
//! with the request count and the violations found. Runs until killed.

use std::time::Duration;

use serde_json::json;
use toolbelt_model::fake_server::{FakeOpenAi, Reply};
use toolbelt_model::{ModelTurn, ToolCall};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let (Some(agents), Some(calls), Some(file)) = (
        args.first().and_then(|a| a.parse::<usize>().ok()),
        args.get(1).and_then(|a| a.parse::<usize>().ok()),
        args.get(2),
    ) else {
        eprintln!(
            "usage: fake_subagents AGENTS CALLS FILE [--delay-ms N] [--port-file PATH] [--report PATH]"
        );
        std::process::exit(2);
    };
    let delay = Duration::from_millis(
        value("--delay-ms")
            .and_then(|d| d.parse().ok())
            .unwrap_or(0),
    );
    let starts: Vec<ToolCall> = (0..agents)
        .map(|i| {
            call(
                format!("agent{i}"),
                "agent",
                json!({"description": "read the file", "prompt": format!("BENCH-AGENT-{i}: read the file {calls} times"), "subagent_type": "general-purpose"}),
            )
        })
        .collect();
    let parent = vec![
        reply(
            delay,
            ModelTurn {
                tool_calls: starts,
                ..Default::default()
            },
        ),
        reply(
            delay,
            ModelTurn {
                text: "All sub-agents are done.".into(),
                ..Default::default()
            },
        ),
    ];
    let server = match FakeOpenAi::start(parent).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fake_subagents: cannot listen: {e}");
            std::process::exit(1);
        }
    };
    for i in 0..agents {
        // A trailing `:` so BENCH-AGENT-1 is not found in BENCH-AGENT-10's prompt.
        server.add_route(
            &format!("BENCH-AGENT-{i}:"),
            agent_script(i, calls, file, delay),
        );
    }
    println!("{}", server.base_url());
    if let Some(port_file) = value("--port-file") {
        let _ = std::fs::write(port_file, server.base_url());
    }
    report_until_killed(&server, value("--report")).await;
}

/// One answer, held `delay`, streamed.
fn reply(delay: Duration, turn: ModelTurn) -> Reply {
    Reply::Delayed {
        delay,
        then: Box::new(Reply::Stream { turn, piece: 256 }),
    }
}

fn call(id: String, name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        id,
        name: name.to_string(),
        arguments: arguments.to_string(),
    }
}

/// Sub-agent `i`: `calls` `read_file` calls of `file`, one per turn, then its answer.
fn agent_script(i: usize, calls: usize, file: &str, delay: Duration) -> Vec<Reply> {
    let mut script: Vec<Reply> = (0..calls)
        .map(|c| {
            reply(
                delay,
                ModelTurn {
                    tool_calls: vec![call(
                        format!("a{i}c{c}"),
                        "read_file",
                        json!({"absolute_path": file}),
                    )],
                    ..Default::default()
                },
            )
        })
        .collect();
    script.push(reply(
        delay,
        ModelTurn {
            text: format!("Agent {i} read the file {calls} times."),
            ..Default::default()
        },
    ));
    script
}

/// Rewrites `report` (when given) with the request count and the violations after every
/// request, forever.
async fn report_until_killed(server: &FakeOpenAi, report: Option<String>) {
    let mut seen = usize::MAX;
    loop {
        let n = server.request_count();
        if n != seen {
            seen = n;
            if let Some(path) = &report {
                let v = json!({"requests": n, "violations": server.violations()});
                let _ = std::fs::write(path, v.to_string());
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
