//! What no well-behaved client sends: raw lines on stdin. Every request gets a JSON-RPC
//! answer or is ignored as the protocol allows, the server never dies, and the next
//! good request is answered.

use std::collections::HashMap;
use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support::*;

struct Raw {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    answers: HashMap<i64, Value>,
}

impl Raw {
    fn start(ws: &Ws) -> Raw {
        Raw::start_with(ws, &[])
    }

    fn start_with(ws: &Ws, args: &[&str]) -> Raw {
        let mut cmd = ws.command(args);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Raw {
            child,
            stdin,
            lines,
            answers: HashMap::new(),
        }
    }

    async fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// The answer to request `id` (other messages are kept for later).
    async fn answer(&mut self, id: i64) -> Value {
        bounded(async {
            loop {
                if let Some(answer) = self.answers.remove(&id) {
                    return answer;
                }
                let line = self
                    .lines
                    .next_line()
                    .await
                    .unwrap()
                    .expect("server exited");
                let message: Value = serde_json::from_str(&line).expect("stdout is only JSON-RPC");
                if let Some(n) = message["id"].as_i64() {
                    self.answers.insert(n, message);
                }
            }
        })
        .await
    }
}

fn request(id: i64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

#[tokio::test]
async fn bad_input_gets_json_rpc_errors_and_the_next_request_is_answered() {
    let ws = Ws::new();
    let file = ws.ws().join("a.txt");
    ws.write(&file, "still served\n");
    let mut raw = Raw::start(&ws);

    raw.send(&request(1, "tools/list", json!({}))).await;
    let early = raw.answer(1).await;
    assert!(
        early["error"]["code"].is_i64(),
        "a request before initialize: {early}"
    );

    raw.send(&request(
        2,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}),
    ))
    .await;
    assert_eq!(
        raw.answer(2).await["result"]["serverInfo"]["name"],
        "toolbelt"
    );
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;

    // Lines that are not JSON are ignored (as every official SDK does: answering them
    // could start an error storm with a peer that echoes); a few kinds, and bytes from
    // a fixed pseudo-random sequence.
    for garbage in ["not json", "{", "]", "\u{0}\u{1}", "{\"jsonrpc\":"] {
        raw.send(garbage).await;
    }
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..50 {
        let line: String = (0..64)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                char::from(b' ' + (seed % 94) as u8)
            })
            .collect();
        raw.send(&line).await;
    }
    // Well-formed JSON that is no message.
    raw.send("[1, 2, 3]").await;
    raw.send(r#"{"jsonrpc":"2.0"}"#).await;

    raw.send(&request(3, "no/such/method", json!({}))).await;
    let unknown = raw.answer(3).await;
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no/such/method")
    );

    raw.send(&request(4, "tools/call", json!({"name": 5})))
        .await;
    let wrong = raw.answer(4).await;
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");

    raw.send(&request(
        5,
        "tools/call",
        json!({"name": "read_file", "arguments": "x"}),
    ))
    .await;
    assert_eq!(raw.answer(5).await["error"]["code"], -32602);

    raw.send(&request(6, "logging/setLevel", json!({"level": "loud"})))
        .await;
    assert!(raw.answer(6).await["error"]["code"].is_i64());

    // A message above the line limit (16 MiB) is skipped, not buffered for ever, and
    // answered with an error naming the limit.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"read_file","arguments":{{"absolute_path":"{}"}}}}}}"#,
        "x".repeat(17 * 1024 * 1024)
    );
    raw.send(&huge).await;

    raw.send(&request(
        8,
        "tools/call",
        json!({"name": "read_file", "arguments": {"absolute_path": file}}),
    ))
    .await;
    let good = raw.answer(8).await;
    assert_eq!(
        good["result"]["content"][0]["text"], "still served",
        "{good}"
    );
    let refused = &raw.answers[&7];
    assert_eq!(
        refused["error"]["code"], -32600,
        "the oversized request was not run"
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("16 MiB")),
        "{refused}"
    );
    assert!(
        raw.child.try_wait().unwrap().is_none(),
        "the server is alive"
    );
}

/// The server's CPU time so far (user + system), from /proc, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

#[tokio::test]
async fn busy_polling_answers_calls_and_stops_when_the_client_goes_quiet() {
    let ws = Ws::new();
    let file = ws.ws().join("a.txt");
    ws.write(&file, "polled\n");
    for args in [&["--busy-poll-us", "2000"][..], &["--busy-poll-us", "0"]] {
        let mut raw = Raw::start_with(&ws, args);
        let init = json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}});
        raw.send(&request(1, "initialize", init)).await;
        assert!(raw.answer(1).await["result"].is_object(), "{args:?}");
        raw.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        for id in 2..102 {
            let call = json!({"name": "read_file", "arguments": {"absolute_path": file}});
            raw.send(&request(id, "tools/call", call)).await;
            let answer = raw.answer(id).await;
            assert_eq!(answer["result"]["content"][0]["text"], "polled", "{args:?}");
        }
        // Quiet client: a server that kept spinning would use the whole half second.
        let pid = raw.child.id().unwrap();
        let before = cpu_ticks(pid);
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let used = cpu_ticks(pid) - before;
        assert!(used <= 10, "{args:?}: {used} ticks of CPU while idle");
    }
    // The window is bounded.
    let out = ws
        .command(&["--busy-poll-us", "100001"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// A client that sends its requests and closes its end at once still gets every answer:
/// the output written by the server's writer task is drained before it exits.
#[tokio::test]
async fn every_answer_is_written_when_the_client_closes_its_input_at_once() {
    let ws = Ws::new();
    let file = ws.ws().join("a.txt");
    ws.write(&file, "last words\n");
    let mut cmd = ws.command(&[]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}});
    let mut lines = vec![
        request(1, "initialize", init),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
    ];
    for id in 2..42 {
        let call = json!({"name": "read_file", "arguments": {"absolute_path": file}});
        lines.push(request(id, "tools/call", call));
    }
    stdin
        .write_all((lines.join("\n") + "\n").as_bytes())
        .await
        .unwrap();
    drop(stdin);
    let out = bounded(child.wait_with_output()).await.unwrap();
    let answers: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut ids: Vec<i64> = answers.iter().filter_map(|a| a["id"].as_i64()).collect();
    ids.sort();
    assert_eq!(ids, (1..42).collect::<Vec<_>>());
    for answer in answers.iter().filter(|a| a["id"].as_i64() > Some(1)) {
        assert_eq!(
            answer["result"]["content"][0]["text"], "last words",
            "{answer}"
        );
    }
}
