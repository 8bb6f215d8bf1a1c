//! A minimal MCP load client over stdio: plain JSON-RPC lines, no SDK. Spawns a server,
//! initializes it, then measures `tools/call` throughput of one tool in two phases:
//! sequential (each call waits for its answer) and with K requests in flight (replies
//! matched by id). Every counted reply must be a result with `isError` not true whose
//! text content contains the expected marker, so a wrong answer is an error, not a call.
//! Reports the server's peak RSS (`VmHWM`) and current RSS (`VmRSS`) read from
//! /proc/<pid>/status just before its stdin is closed. Used by `bench/mcp_serve.sh`.
//!
//! Usage:
//!   mcp_load --tool NAME --args JSON --expect MARKER [-n CALLS] [--in-flight K]
//!            [--warmup W] [--label LABEL] [--stderr inherit|null] [--timeout SECS]
//!            -- COMMAND [ARGS...]
//!
//! Output: one JSON line per phase on stdout (`sequential`, `in_flight`, `memory`), and
//! one human-readable summary line on stderr.

use std::collections::HashSet;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{Mutex, Semaphore};

type Error = Box<dyn std::error::Error + Send + Sync>;
type Res<T> = Result<T, Error>;

const USAGE: &str = "usage: mcp_load --tool NAME --args JSON --expect MARKER [-n CALLS] \
[--in-flight K] [--warmup W] [--label LABEL] [--stderr inherit|null] [--timeout SECS] \
-- COMMAND [ARGS...]";

struct Options {
    tool: String,
    args: Value,
    expect: String,
    calls: usize,
    in_flight: usize,
    warmup: usize,
    label: String,
    inherit_stderr: bool,
    timeout: Duration,
    command: Vec<String>,
}

fn parse_options() -> Res<Options> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let split = argv
        .iter()
        .position(|a| a == "--")
        .ok_or("missing `-- COMMAND`")?;
    let command = argv[split + 1..].to_vec();
    if command.is_empty() {
        return Err("missing server command after `--`".into());
    }
    let mut o = Options {
        tool: String::new(),
        args: json!({}),
        expect: String::new(),
        calls: 2000,
        in_flight: 64,
        warmup: 50,
        label: String::new(),
        inherit_stderr: false,
        timeout: Duration::from_secs(30),
        command,
    };
    let mut it = argv[..split].iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--tool" => o.tool = value()?,
            "--args" => {
                o.args = serde_json::from_str(&value()?).map_err(|e| format!("--args: {e}"))?
            }
            "--expect" => o.expect = value()?,
            "-n" | "--calls" => o.calls = value()?.parse().map_err(|e| format!("-n: {e}"))?,
            "--in-flight" => {
                o.in_flight = value()?.parse().map_err(|e| format!("--in-flight: {e}"))?
            }
            "--warmup" => o.warmup = value()?.parse().map_err(|e| format!("--warmup: {e}"))?,
            "--label" => o.label = value()?,
            "--stderr" => {
                o.inherit_stderr = match value()?.as_str() {
                    "inherit" => true,
                    "null" => false,
                    other => return Err(format!("--stderr: {other}: inherit or null").into()),
                }
            }
            "--timeout" => {
                let secs: f64 = value()?.parse().map_err(|e| format!("--timeout: {e}"))?;
                o.timeout = Duration::from_secs_f64(secs);
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    if o.tool.is_empty() {
        return Err("--tool is required".into());
    }
    if o.expect.is_empty() {
        return Err("--expect is required (a string every correct answer contains)".into());
    }
    if o.in_flight == 0 {
        return Err("--in-flight must be at least 1".into());
    }
    if o.label.is_empty() {
        o.label = o.command.join(" ");
    }
    Ok(o)
}

/// The server's stdout, read one JSON-RPC message (one line) at a time.
struct Lines {
    reader: BufReader<ChildStdout>,
    buf: Vec<u8>,
    timeout: Duration,
}

impl Lines {
    async fn next(&mut self) -> Res<Value> {
        loop {
            self.buf.clear();
            let n =
                tokio::time::timeout(self.timeout, self.reader.read_until(b'\n', &mut self.buf))
                    .await
                    .map_err(|_| {
                        format!("no message from the server within {:?}", self.timeout)
                    })??;
            if n == 0 {
                return Err("the server closed its stdout".into());
            }
            let line = self.buf.trim_ascii();
            if line.is_empty() {
                continue;
            }
            return serde_json::from_slice(line).map_err(|e| {
                let start = String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
                format!("not JSON from the server ({e}): {start}").into()
            });
        }
    }
}

async fn send(stdin: &Mutex<ChildStdin>, message: &Value) -> Res<()> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    let mut w = stdin.lock().await;
    w.write_all(&line).await?;
    w.flush().await?;
    Ok(())
}

/// A message from the server that is not an answer to us: a notification is skipped, a
/// request is refused (method not found) so the server does not wait for it.
async fn answer_server_message(stdin: &Mutex<ChildStdin>, message: &Value) -> Res<()> {
    if message.get("method").is_some()
        && let Some(id) = message.get("id")
    {
        let refusal = json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": -32601, "message": "method not found"}});
        send(stdin, &refusal).await?;
    }
    Ok(())
}

/// The id of an answer (a message with `result` or `error` and a numeric id).
fn answer_id(message: &Value) -> Option<u64> {
    if message.get("method").is_some() {
        return None;
    }
    message.get("id").and_then(Value::as_u64)
}

/// At most the first `chars` characters of `text`.
fn prefix(text: &str, chars: usize) -> &str {
    let end = text
        .char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i);
    &text[..end]
}

/// Checks that an answer to `tools/call` is a result, not an error, and that its text
/// content contains the marker.
fn check_call_result(message: &Value, expect: &str) -> Res<()> {
    if let Some(error) = message.get("error") {
        return Err(format!("JSON-RPC error: {error}").into());
    }
    let result = message.get("result").ok_or("answer without result")?;
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text = serde_json::to_string(result.get("content").unwrap_or(&Value::Null))?;
        return Err(format!("tool error: {}", prefix(&text, 300)).into());
    }
    let found = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .any(|t| t.contains(expect));
    if !found {
        let text = serde_json::to_string(result)?;
        return Err(format!("answer lacks the marker {expect:?}: {}", prefix(&text, 300)).into());
    }
    Ok(())
}

struct Client {
    stdin: Arc<Mutex<ChildStdin>>,
    lines: Lines,
    next_id: u64,
    expect: String,
}

impl Client {
    fn request(&mut self, method: &str, params: Value) -> (u64, Value) {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        (id, message)
    }

    /// Sends a request and waits for its answer, skipping anything else.
    async fn call(&mut self, method: &str, params: Value) -> Res<Value> {
        let (id, message) = self.request(method, params);
        send(&self.stdin, &message).await?;
        loop {
            let reply = self.lines.next().await?;
            match answer_id(&reply) {
                Some(got) if got == id => return Ok(reply),
                _ => answer_server_message(&self.stdin, &reply).await?,
            }
        }
    }

    /// `calls` sequential tools/call requests; returns each call's latency.
    async fn sequential(&mut self, tool: &str, args: &Value, calls: usize) -> Res<Vec<Duration>> {
        let params = json!({"name": tool, "arguments": args});
        let mut latencies = Vec::with_capacity(calls);
        for _ in 0..calls {
            let start = Instant::now();
            let reply = self.call("tools/call", params.clone()).await?;
            latencies.push(start.elapsed());
            check_call_result(&reply, &self.expect)?;
        }
        Ok(latencies)
    }

    /// `calls` tools/call requests with up to `in_flight` outstanding at any time: a
    /// writer task sends a request whenever a permit is free, this task reads answers
    /// and frees one permit per answer.
    async fn concurrent(
        &mut self,
        tool: &str,
        args: &Value,
        calls: usize,
        in_flight: usize,
    ) -> Res<()> {
        let first = self.next_id + 1;
        self.next_id += calls as u64;
        let permits = Arc::new(Semaphore::new(in_flight));
        let writer = {
            let permits = permits.clone();
            let stdin = self.stdin.clone();
            let params = json!({"name": tool, "arguments": args});
            tokio::spawn(async move {
                for id in first..first + calls as u64 {
                    permits.acquire().await?.forget();
                    let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                        "params": params});
                    send(&stdin, &message).await?;
                }
                Ok::<(), Error>(())
            })
        };
        let mut answered: HashSet<u64> = HashSet::with_capacity(calls);
        let result = async {
            while answered.len() < calls {
                let reply = self.lines.next().await?;
                match answer_id(&reply) {
                    Some(id) if (first..first + calls as u64).contains(&id) => {
                        if !answered.insert(id) {
                            return Err(format!("two answers to request {id}").into());
                        }
                        check_call_result(&reply, &self.expect)?;
                        permits.add_permits(1);
                    }
                    _ => answer_server_message(&self.stdin, &reply).await?,
                }
            }
            Ok::<(), Error>(())
        }
        .await;
        if result.is_err() {
            writer.abort();
            return result;
        }
        writer.await??;
        Ok(())
    }
}

/// `VmHWM` and `VmRSS` of a process in KiB.
fn memory_kib(pid: u32) -> Res<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> Res<u64> {
        let line = status
            .lines()
            .find(|l| l.starts_with(name))
            .ok_or_else(|| format!("no {name} in /proc/{pid}/status"))?;
        let kib = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .map_err(|e| format!("{name}: {e}"))?;
        Ok(kib)
    };
    Ok((field("VmHWM:")?, field("VmRSS:")?))
}

/// CPU time (user + system) a process has used so far, in milliseconds, from
/// /proc/<pid>/stat (fields 14 and 15, in USER_HZ ticks, 100 per second on Linux).
fn cpu_ms(pid: u32) -> Res<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name (field 2) may hold spaces: count from after its `)`.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or("bad /proc/<pid>/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| -> Res<f64> {
        let v: u64 = fields
            .get(i)
            .ok_or("short /proc/<pid>/stat")?
            .parse()
            .map_err(|e| format!("/proc/<pid>/stat: {e}"))?;
        Ok(v as f64 * 10.0)
    };
    // After `)`: state is field 3, so utime (14) and stime (15) are at 11 and 12.
    Ok(tick(11)? + tick(12)?)
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)].as_secs_f64() * 1e6
}

async fn run(o: Options, child: &mut Child) -> Res<()> {
    let pid = child.id().ok_or("the server exited at once")?;
    let mut client = connect(&o, child)?;
    let (init_ms, server) = initialize(&mut client).await?;
    client.sequential(&o.tool, &o.args, o.warmup).await?;
    let seq = sequential_phase(&o, &mut client, pid).await?;
    println!(
        "{}",
        json!({"label": o.label, "phase": "sequential", "calls": o.calls, "in_flight": 1,
            "seconds": seq.seconds, "calls_per_sec": seq.rate,
            "p50_us": seq.p50_us, "p99_us": seq.p99_us,
            "server_cpu_us_per_call": seq.cpu_us, "initialize_ms": init_ms, "server": server})
    );
    let cpu_mid = cpu_ms(pid)?;
    let start = Instant::now();
    client
        .concurrent(&o.tool, &o.args, o.calls, o.in_flight)
        .await?;
    let par_secs = start.elapsed().as_secs_f64();
    let par_rate = o.calls as f64 / par_secs;
    let par_cpu_us = (cpu_ms(pid)? - cpu_mid) * 1e3 / o.calls as f64;
    println!(
        "{}",
        json!({"label": o.label, "phase": "in_flight", "calls": o.calls,
            "in_flight": o.in_flight, "seconds": par_secs, "calls_per_sec": par_rate,
            "server_cpu_us_per_call": par_cpu_us})
    );
    let (hwm, rss) = memory_kib(pid)?;
    println!(
        "{}",
        json!({"label": o.label, "phase": "memory", "pid": pid, "vm_hwm_kib": hwm,
            "vm_rss_kib": rss})
    );
    eprintln!(
        "{}: {:.0} calls/s sequential (p50 {:.0} us, p99 {:.0} us, server CPU {:.0} us/call), \
         {:.0} calls/s with {} in flight (server CPU {:.0} us/call), {} calls each; peak RSS \
         {:.1} MiB (now {:.1} MiB); initialize {:.1} ms",
        o.label,
        seq.rate,
        seq.p50_us,
        seq.p99_us,
        seq.cpu_us,
        par_rate,
        o.in_flight,
        par_cpu_us,
        o.calls,
        hwm as f64 / 1024.0,
        rss as f64 / 1024.0,
        init_ms
    );
    Ok(())
}

/// A client on the server's pipes.
fn connect(o: &Options, child: &mut Child) -> Res<Client> {
    let stdin = child.stdin.take().ok_or("no stdin pipe")?;
    let stdout = child.stdout.take().ok_or("no stdout pipe")?;
    Ok(Client {
        stdin: Arc::new(Mutex::new(stdin)),
        lines: Lines {
            reader: BufReader::with_capacity(1 << 20, stdout),
            buf: Vec::with_capacity(1 << 16),
            timeout: o.timeout,
        },
        next_id: 0,
        expect: o.expect.clone(),
    })
}

/// The handshake: how long `initialize` took (ms) and the server's `serverInfo`.
async fn initialize(client: &mut Client) -> Res<(f64, Value)> {
    let started = Instant::now();
    let init = client
        .call(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "mcp_load", "version": "0.1.0"}}),
        )
        .await?;
    if let Some(error) = init.get("error") {
        return Err(format!("initialize failed: {error}").into());
    }
    let init_ms = started.elapsed().as_secs_f64() * 1e3;
    let server = init
        .pointer("/result/serverInfo")
        .cloned()
        .unwrap_or(Value::Null);
    send(
        &client.stdin,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await?;
    Ok((init_ms, server))
}

/// What the sequential phase measured.
struct Sequential {
    seconds: f64,
    rate: f64,
    p50_us: f64,
    p99_us: f64,
    cpu_us: f64,
}

/// `o.calls` calls one after the other.
async fn sequential_phase(o: &Options, client: &mut Client, pid: u32) -> Res<Sequential> {
    let cpu_start = cpu_ms(pid)?;
    let start = Instant::now();
    let mut latencies = client.sequential(&o.tool, &o.args, o.calls).await?;
    let seconds = start.elapsed().as_secs_f64();
    latencies.sort_unstable();
    Ok(Sequential {
        seconds,
        rate: o.calls as f64 / seconds,
        p50_us: percentile(&latencies, 0.5),
        p99_us: percentile(&latencies, 0.99),
        cpu_us: (cpu_ms(pid)? - cpu_start) * 1e3 / o.calls as f64,
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let options = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("mcp_load: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let mut command = Command::new(&options.command[0]);
    command
        .args(&options.command[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(if options.inherit_stderr {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("mcp_load: cannot start {}: {e}", options.command[0]);
            std::process::exit(2);
        }
    };
    let label = options.label.clone();
    let outcome = run(options, &mut child).await;
    // `run` has dropped its stdin handle: the server sees EOF and should exit.
    let exited = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
    if !matches!(exited, Ok(Ok(_))) {
        let _ = child.kill().await;
    }
    if let Err(e) = outcome {
        eprintln!("mcp_load: {label}: {e}");
        std::process::exit(1);
    }
}
