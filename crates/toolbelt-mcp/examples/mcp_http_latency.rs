//! Sequential `tools/call` latency over Streamable HTTP with one keep-alive connection:
//! plain JSON-RPC over HTTP POST (no SDK), each call waiting for its answer (an SSE
//! stream or a JSON body, whichever the server sends). Every answer must be a result
//! whose text contains the marker. Used by `bench/mcp_http.sh`.
//!
//! Usage: mcp_http_latency --url URL --tool NAME --args JSON --expect MARKER
//!        [-n CALLS] [--warmup W] [--label LABEL]
//!
//! Output: one JSON line (`label`, `calls`, `p50_us`, `p99_us`, `calls_per_sec`).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

struct Options {
    url: String,
    tool: String,
    args: Value,
    expect: String,
    calls: usize,
    warmup: usize,
    label: String,
}

fn parse_options() -> Res<Options> {
    let mut o = Options {
        url: String::new(),
        tool: String::new(),
        args: json!({}),
        expect: String::new(),
        calls: 1000,
        warmup: 50,
        label: String::new(),
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--url" => o.url = value.clone(),
            "--tool" => o.tool = value.clone(),
            "--args" => o.args = serde_json::from_str(value)?,
            "--expect" => o.expect = value.clone(),
            "-n" => o.calls = value.parse()?,
            "--warmup" => o.warmup = value.parse()?,
            "--label" => o.label = value.clone(),
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    if o.url.is_empty() || o.tool.is_empty() || o.expect.is_empty() {
        return Err("--url, --tool and --expect are required".into());
    }
    if o.label.is_empty() {
        o.label = o.url.clone();
    }
    Ok(o)
}

struct Client {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
    protocol: String,
}

impl Client {
    /// Posts one message; the JSON-RPC answer with `id` (from JSON or an SSE stream).
    async fn post(&mut self, message: &Value) -> Res<Option<Value>> {
        let mut request = self
            .http
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("MCP-Protocol-Version", &self.protocol)
            .body(message.to_string());
        if let Some(id) = &self.session {
            request = request.header("Mcp-Session-Id", id);
        }
        let response = request.send().await?;
        if let Some(id) = response.headers().get("mcp-session-id") {
            self.session = Some(id.to_str()?.to_string());
        }
        let status = response.status();
        let body = response.text().await?;
        if !status.is_success() {
            return Err(format!("HTTP {status}: {body}").into());
        }
        if let Ok(value) = serde_json::from_str::<Value>(&body) {
            return Ok(Some(value));
        }
        Ok(body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("id") == message.get("id") && v.get("method").is_none()))
    }
}

fn check(answer: Option<Value>, expect: &str) -> Res<()> {
    let answer = answer.ok_or("no answer")?;
    let text = answer.pointer("/result/content").map(Value::to_string);
    if answer.pointer("/result/isError") == Some(&Value::Bool(true))
        || !text.is_some_and(|t| t.contains(expect))
    {
        return Err(format!("unexpected answer: {answer}").into());
    }
    Ok(())
}

fn percentile_us(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len().saturating_sub(1)) as f64 * p).round() as usize;
    sorted.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e6)
}

async fn run(o: Options) -> Res<()> {
    let mut client = Client {
        http: toolbelt_netguard::client_builder().build()?,
        url: o.url.clone(),
        session: None,
        protocol: "2025-06-18".into(),
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "mcp_http_latency", "version": "0.1.0"}}});
    client.post(&init).await?.ok_or("no answer to initialize")?;
    client
        .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await?;
    let params = json!({"name": o.tool, "arguments": o.args});
    let mut latencies = Vec::with_capacity(o.calls);
    for id in 1..=o.warmup + o.calls {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        let started = Instant::now();
        let answer = client.post(&call).await?;
        if id > o.warmup {
            latencies.push(started.elapsed());
        }
        check(answer, &o.expect)?;
    }
    let total: Duration = latencies.iter().sum();
    latencies.sort_unstable();
    println!(
        "{}",
        json!({"label": o.label, "phase": "http_sequential", "calls": o.calls,
            "p50_us": percentile_us(&latencies, 0.5), "p99_us": percentile_us(&latencies, 0.99),
            "calls_per_sec": o.calls as f64 / total.as_secs_f64()})
    );
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let outcome = match parse_options() {
        Ok(o) => run(o).await,
        Err(e) => Err(e),
    };
    if let Err(e) = outcome {
        eprintln!("mcp_http_latency: {e}");
        std::process::exit(1);
    }
}
