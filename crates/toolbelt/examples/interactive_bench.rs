//! Benchmarks of the interactive terminal (issue 14), driving the release binary in a
//! pseudo-terminal exactly as the tests do. Run with `bash bench/interactive.sh`.
//!
//! 1. start to the first drawn frame (the status line on screen);
//! 2. keystroke-to-echo latency, idle;
//! 3. a model streaming 10,000 tokens at 5,000 tokens/s while keys are typed: echo
//!    latency under load, and whether every key arrived;
//! 4. peak RSS of a 200-call session (`--model-replay`, 200 `read_file` calls);
//! 5. CPU used while idle.

// A benchmark: a failed unwrap is a failed run, with its location.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/agent_cli/pty.rs"]
#[allow(dead_code)]
mod pty;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use pty::{Pty, keys};

const READY: &str = "mode (shift+tab";

fn bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/release/examples/interactive_bench -> target/release/toolbelt
    exe.parent().unwrap().parent().unwrap().join("toolbelt")
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// utime + stime of a process, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

fn peak_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib / 1024.0
}

struct Dirs {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    state: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(tmp.path().join("home")).unwrap();
    std::fs::write(ws.join("README.md"), "# bench\n\nA small file.\n").unwrap();
    std::fs::write(ws.join("src/app.py"), "print('hello')\n".repeat(50)).unwrap();
    let state = tmp.path().to_path_buf();
    Dirs {
        ws: ws.canonicalize().unwrap(),
        state,
        _tmp: tmp,
    }
}

fn spawn(d: &Dirs, args: &[&str]) -> Pty {
    Pty::spawn(&bin(), &d.ws, &d.state, args, &[])
}

fn quit(p: Pty) {
    p.send("\x15"); // Ctrl-U: Ctrl-D quits on an empty line only
    p.send(keys::CTRL_D);
    p.wait_exit();
}

/// Types `text` one key at a time, each after the previous one is on screen; the
/// latency of each, in ms.
fn echo_latencies(p: &Pty, text: &str) -> Vec<f64> {
    let mut typed = String::new();
    let mut out = Vec::new();
    for c in text.chars() {
        typed.push(c);
        if c == ' ' {
            // The screen's text drops trailing blanks: a space shows with the next key.
            p.send(" ");
            continue;
        }
        let want = format!("› {typed}");
        let t = Instant::now();
        p.send(&c.to_string());
        p.wait_until("the typed key", |s| s.contains(&want));
        out.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    out
}

/// A loopback OpenAI-compatible server that streams `tokens` one-word deltas at `rate`
/// per second (in batches every 5 ms), then ends the answer.
fn streaming_server(tokens: usize, rate: usize) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            // Read the request: headers, then Content-Length bytes.
            let mut buf = Vec::new();
            let mut chunk = [0u8; 65536];
            let body_start = loop {
                let n = stream.read(&mut chunk).unwrap();
                buf.extend_from_slice(&chunk[..n]);
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break i + 4;
                }
            };
            let head = String::from_utf8_lossy(&buf[..body_start]).to_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or(0);
            while buf.len() < body_start + len {
                let n = stream.read(&mut chunk).unwrap();
                buf.extend_from_slice(&chunk[..n]);
            }
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")
                .unwrap();
            let per_batch = (rate / 200).max(1);
            let started = Instant::now();
            let mut sent = 0;
            while sent < tokens {
                let mut out = String::new();
                for _ in 0..per_batch.min(tokens - sent) {
                    let word = if sent % 12 == 11 {
                        "word.\n\n"
                    } else {
                        "word "
                    };
                    let word = if sent + 1 == tokens { "THE-END" } else { word };
                    out.push_str(&format!(
                        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":{}}}}}]}}\n\n",
                        serde_json::to_string(word).unwrap()
                    ));
                    sent += 1;
                }
                if stream.write_all(out.as_bytes()).is_err() {
                    break;
                }
                let due = started + Duration::from_secs_f64(sent as f64 / rate as f64);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
            }
            let _ = stream.write_all(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
        }
    });
    format!("http://{addr}/v1")
}

/// `interactive_bench capture`: a short session for docs/interactive.md, screen printed twice
/// (at the confirmation, and at the end).
fn capture() {
    use toolbelt_model::fake_server::{FakeOpenAi, Reply};
    use toolbelt_model::{FinishReason, ModelTurn, ToolCall};
    let rt = tokio::runtime::Runtime::new().unwrap();
    let d = dirs();
    std::fs::write(
        d.ws.join("src/lib.rs"),
        "pub fn old() -> u32 {\n    41\n}\n",
    )
    .unwrap();
    let edit = ToolCall {
        id: "e1".into(),
        name: "edit".into(),
        arguments: serde_json::json!({"file_path": d.ws.join("src/lib.rs"),
            "old_string": "pub fn old() -> u32 {\n    41", "new_string": "pub fn answer() -> u32 {\n    42"})
        .to_string(),
    };
    let server = rt
        .block_on(FakeOpenAi::start(vec![
            Reply::turn(ModelTurn {
                text: "I'll rename the function and fix its value.".into(),
                tool_calls: vec![edit],
                finish_reason: FinishReason::ToolCalls,
                ..Default::default()
            }),
            Reply::text("Done: `old` is now **`answer`** and returns 42.\n\n```rust\npub fn answer() -> u32 {\n    42\n}\n```\n"),
        ]))
        .unwrap();
    let url = server.base_url();
    let p = spawn(&d, &["--openai-base-url", &url, "-m", "qwen3-coder"]);
    p.wait_for(READY);
    p.line("rename old to answer and make it return 42");
    println!("{}", p.wait_for("1. Allow once"));
    p.send(keys::ENTER);
    println!(
        "{}",
        p.wait_until("the answer", |s| s.contains("returns 42.")
            && !s.contains("working"))
    );
    quit(p);
}

/// A model server nobody listens on: the UI starts without one.
const OFFLINE: [&str; 4] = ["--openai-base-url", "http://127.0.0.1:9/v1", "-m", "bench"];

fn main() {
    assert!(bin().exists(), "build the release binary first");
    if std::env::args().nth(1).as_deref() == Some("capture") {
        return capture();
    }
    first_frame();
    echo_and_idle();
    streaming();
    long_session();
}

/// Start to the first frame.
fn first_frame() {
    let offline = OFFLINE;
    let mut starts = Vec::new();
    for _ in 0..20 {
        let d = dirs();
        let t = Instant::now();
        let p = spawn(&d, &offline);
        p.wait_for(READY);
        starts.push(t.elapsed().as_secs_f64() * 1000.0);
        quit(p);
    }
    println!(
        "first frame: median {:.1} ms, p90 {:.1} ms, max {:.1} ms (20 runs)",
        percentile(&mut starts.clone(), 0.5),
        percentile(&mut starts.clone(), 0.9),
        percentile(&mut starts, 1.0)
    );
}

/// Echo latency and idle CPU.
fn echo_and_idle() {
    let offline = OFFLINE;
    let d = dirs();
    let p = spawn(&d, &offline);
    p.wait_for(READY);
    let pid = p.pid();
    let before = cpu_seconds(pid);
    let idle = Duration::from_secs(5);
    std::thread::sleep(idle);
    let idle_cpu = cpu_seconds(pid) - before;
    let mut lat = echo_latencies(
        &p,
        &"the quick brown fox jumps over the lazy dog ".repeat(2),
    );
    println!(
        "keystroke to echo (idle): median {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} keys, spaces not timed)",
        percentile(&mut lat.clone(), 0.5),
        percentile(&mut lat.clone(), 0.99),
        percentile(&mut lat, 1.0),
        lat.len()
    );
    println!(
        "idle CPU: {:.1} ms over {} s ({:.2}% of a core)",
        idle_cpu * 1000.0,
        idle.as_secs(),
        idle_cpu / idle.as_secs_f64() * 100.0
    );
    quit(p);
}

/// Streaming at 5,000 tokens/s while typing.
fn streaming() {
    let tokens = 10_000;
    let url = streaming_server(tokens, 5_000);
    let d = dirs();
    let p = spawn(&d, &["--openai-base-url", &url, "-m", "bench"]);
    p.wait_for(READY);
    let pid = p.pid();
    p.line("stream please");
    p.wait_for("word word");
    let cpu0 = cpu_seconds(pid);
    let t = Instant::now();
    let typed = "KEYSTROKES TYPED WHILE THE ANSWER STREAMS";
    let mut lat = echo_latencies(&p, typed);
    p.wait_for("THE-END");
    let stream_time = t.elapsed();
    let cpu = cpu_seconds(pid) - cpu0;
    let screen = p.wait_for(&format!("› {typed}"));
    assert!(screen.contains(typed));
    println!(
        "streaming {tokens} tokens at 5,000/s: all {} typed keys arrived; echo under load median {:.2} ms, p99 {:.2} ms, max {:.2} ms; toolbelt CPU {:.0} ms over {:.2} s ({:.0}% of a core)",
        typed.len(),
        percentile(&mut lat.clone(), 0.5),
        percentile(&mut lat.clone(), 0.99),
        percentile(&mut lat, 1.0),
        cpu * 1000.0,
        stream_time.as_secs_f64(),
        cpu / stream_time.as_secs_f64() * 100.0
    );
    quit(p);
}

/// A 200-call session.
fn long_session() {
    let d = dirs();
    let script = d.state.join("calls200.jsonl");
    let mut text = String::new();
    for i in 0..200 {
        let target = if i % 2 == 1 {
            "src/app.py"
        } else {
            "README.md"
        };
        text.push_str(
            &serde_json::json!({"tool_calls": [{"id": format!("call_{}", i + 1), "name": "read_file",
                "arguments": {"absolute_path": format!("${{WORKSPACE}}/{target}")}}]})
            .to_string(),
        );
        text.push('\n');
    }
    text.push_str("{\"text\": \"Read 200 times.\"}\n");
    std::fs::write(&script, text).unwrap();
    let script = script.to_string_lossy().into_owned();
    let t = Instant::now();
    let p = spawn(
        &d,
        &[
            "--model-replay",
            &script,
            "--yolo",
            "--max-session-turns",
            "300",
            "-i",
            "read a lot",
        ],
    );
    p.wait_for("Read 200 times.");
    let took = t.elapsed();
    let rss = peak_rss_mib(p.pid());
    println!(
        "200-call session: {:.2} s to the answer, peak RSS {rss:.1} MiB",
        took.as_secs_f64()
    );
    quit(p);
}
