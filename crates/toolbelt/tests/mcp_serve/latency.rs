//! Latency of sequential calls over Streamable HTTP with a keep-alive client.
//!
//! Every call took 44 ms while the accepted sockets had Nagle's algorithm on: the SSE
//! answer leaves in several writes, and each waited for the client's delayed ACK. The
//! bound is generous (a debug build on a busy machine) but far below that stall.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::http::{message, start_http};
use crate::support::*;

const CALLS: usize = 30;
const P50_BOUND: Duration = Duration::from_millis(15);

/// One JSON-RPC request on the keep-alive client; the answer and the session header.
async fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
) -> (Value, Option<String>) {
    let mut request = client
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .header("MCP-Protocol-Version", "2025-06-18")
        .body(body.to_string());
    if let Some(id) = session {
        request = request.header("Mcp-Session-Id", id);
    }
    let response = bounded(request.send()).await.unwrap();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_string());
    let body = bounded(response.text()).await.unwrap();
    let answer = if body.trim().is_empty() {
        Value::Null
    } else {
        message(&body)
    };
    (answer, session)
}

#[tokio::test]
async fn sequential_http_calls_on_one_connection_do_not_stall() {
    let ws = Ws::new();
    let file = ws.ws().join("a.txt");
    ws.write(&file, "quick\n");
    let (_server, url) = start_http(&ws, &[], &[]).await;
    let client = toolbelt_netguard::client_builder()
        .build()
        .expect("an HTTP client");
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "latency", "version": "1"}}});
    let (_, session) = post(&client, &url, None, &init).await;
    let session = session.expect("a session id");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(&client, &url, Some(&session), &initialized).await;

    let mut latencies = Vec::with_capacity(CALLS);
    for id in 1..=CALLS {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"absolute_path": file}}});
        let started = Instant::now();
        let (answer, _) = post(&client, &url, Some(&session), &call).await;
        latencies.push(started.elapsed());
        assert_eq!(answer["id"], id, "{answer}");
        assert!(answer.to_string().contains("quick"), "{answer}");
    }
    latencies.sort_unstable();
    let p50 = latencies[CALLS / 2];
    assert!(
        p50 < P50_BOUND,
        "p50 {p50:?} over {CALLS} sequential calls (bound {P50_BOUND:?}); all: {latencies:?}"
    );
}
