//! The cost of confinement per command: `ls` run through `run_shell_command` unasked
//! (read-only sandbox: Landlock ruleset built in the parent, applied with the seccomp
//! filter in the child) and approved (unconfined), interleaved in one run so machine load
//! falls on both alike. Same tool, same spawn path; only the sandbox differs.
//!
//! Usage: cargo run --release -p toolbelt-tools --example sandbox_bench [-- RUNS]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolbelt_core::{ExecContext, Settings, Tool, ToolEnvironment, WorkspaceRoots};
use toolbelt_tools::{RunShellCommand, SandboxSupport};

/// CPU time of this process and its reaped children so far (`/proc/self/stat`: utime,
/// stime, cutime, cstime), in clock ticks (10 ms): wall time on a loaded machine is
/// mostly waiting for a core, CPU time is what the work costs.
fn cpu_ticks() -> Result<u64, Box<dyn std::error::Error>> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    let after_name = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14-17 of the whole line are 12-15 after the name and state.
    let mut total = 0;
    for f in &fields[11..15] {
        total += f.parse::<u64>()?;
    }
    Ok(total)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn mean(v: &[Duration]) -> Duration {
    v.iter().sum::<Duration>() / v.len().max(1) as u32
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(500);
    if let Err(why) = SandboxSupport::detect().can_confine() {
        return Err(format!("this machine cannot confine: {why}").into());
    }
    let dir = tempfile::tempdir()?;
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws)?;
    for i in 0..20 {
        std::fs::write(ws.join(format!("file{i}.txt")), "x")?;
    }
    let roots = WorkspaceRoots::new([&ws])?;
    let env = Arc::new(ToolEnvironment::new(
        roots,
        Arc::new(Settings::default()),
        dir.path().join("session"),
    ));
    let tool = RunShellCommand::new(env.clone());
    let mut confined = Vec::with_capacity(runs);
    let mut unconfined = Vec::with_capacity(runs);
    // Warm-up: the first confined call detects support and compiles the BPF program.
    for i in 0..(runs + 20) {
        for sandboxed in [i % 2 == 0, i % 2 != 0] {
            let call = tool.build(json!({"command": "ls"}))?;
            let mut ctx = ExecContext::new(env.clone());
            if !sandboxed {
                ctx = ctx.approved();
            }
            let started = Instant::now();
            let result = call.execute(ctx).await;
            let took = started.elapsed();
            if !result.llm_text().contains("file7.txt") {
                return Err(format!("ls failed: {}", result.llm_text()).into());
            }
            if i >= 20 {
                if sandboxed {
                    confined.push(took);
                } else {
                    unconfined.push(took);
                }
            }
        }
    }
    // CPU per command: each kind in a phase of its own.
    let mut cpu = Vec::new();
    for sandboxed in [false, true] {
        let before = cpu_ticks()?;
        for _ in 0..runs {
            let call = tool.build(json!({"command": "ls"}))?;
            let mut ctx = ExecContext::new(env.clone());
            if !sandboxed {
                ctx = ctx.approved();
            }
            call.execute(ctx).await;
        }
        // Ticks are 10 ms: per command in microseconds.
        cpu.push((cpu_ticks()? - before) as f64 * 10_000.0 / runs as f64);
    }
    report(runs, &confined, &unconfined, &cpu);
    Ok(())
}

/// Prints the measurements: wall time of each kind, CPU per command, and the difference.
fn report(runs: usize, confined: &[Duration], unconfined: &[Duration], cpu: &[f64]) {
    let (mc, mu) = (median(confined.to_vec()), median(unconfined.to_vec()));
    println!("runs: {runs} each, interleaved");
    println!(
        "unconfined (approved) ls: median {:.3} ms, mean {:.3} ms",
        mu.as_secs_f64() * 1e3,
        mean(unconfined).as_secs_f64() * 1e3
    );
    println!(
        "confined (unasked) ls:    median {:.3} ms, mean {:.3} ms",
        mc.as_secs_f64() * 1e3,
        mean(confined).as_secs_f64() * 1e3
    );
    println!(
        "CPU per command (toolbelt and the command): unconfined {:.0} us, confined {:.0} us ({:+.0} us)",
        cpu[0],
        cpu[1],
        cpu[1] - cpu[0]
    );
    println!(
        "cost of confinement (wall): median {:+.3} ms, mean {:+.3} ms per command",
        (mc.as_secs_f64() - mu.as_secs_f64()) * 1e3,
        (mean(confined).as_secs_f64() - mean(unconfined).as_secs_f64()) * 1e3
    );
}
