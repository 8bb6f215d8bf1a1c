//! The cost of confinement per command: `ls` run through `run_shell_command` unasked
//! (read-only sandbox: Landlock ruleset built in the parent, applied with the seccomp
//! filter in the child) and approved (unconfined), interleaved in one run so machine load
//! falls on both alike. Same tool, same spawn path; only the sandbox differs.
//!
//! The read-only sandbox hides the person's credentials and toolbelt's store, so the
//! environment has the real home and `~/.toolbelt` (only listed, never changed): the
//! ruleset around them is built once and kept. A last phase measures the rebuild: a
//! scratch home whose listing changes before every call, so its rules are built anew.
//!
//! Usage: cargo run --release -p toolbelt-tools --example sandbox_bench [-- RUNS]

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolbelt_config::settings::Settings;
use toolbelt_core::{ExecContext, Tool, ToolEnvironment, WorkspaceRoots};
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
    let mut env = ToolEnvironment::new(
        roots.clone(),
        Arc::new(Settings::default()),
        dir.path().join("session"),
    );
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    env.toolbelt_home = home.as_ref().map(|h| h.join(".toolbelt"));
    env.user_home = home;
    let env = Arc::new(env);
    let tool = RunShellCommand::new(env.clone());
    // `sandbox_bench RUNS unasked|approved`: that kind only, for a profiler.
    if let Some(kind) = std::env::args().nth(2) {
        let sandboxed = match kind.as_str() {
            "unasked" => true,
            "approved" => false,
            other => return Err(format!("unknown kind {other:?}: unasked or approved").into()),
        };
        for _ in 0..runs {
            let call = tool.build(json!({"command": "ls"}))?;
            let mut ctx = ExecContext::new(env.clone());
            if !sandboxed {
                ctx = ctx.approved();
            }
            call.execute(ctx).await;
        }
        return Ok(());
    }
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
    rebuilt(dir.path(), roots, runs, median(unconfined)).await
}

/// Confined calls whose rules must be built again each time: the hidden home's listing
/// changes before every call.
async fn rebuilt(
    scratch: &std::path::Path,
    roots: WorkspaceRoots,
    runs: usize,
    unconfined: Duration,
) -> Result<(), Box<dyn std::error::Error>> {
    let home = scratch.join("home");
    for name in [
        ".ssh",
        ".aws",
        ".config/gcloud",
        ".cargo",
        ".toolbelt/sessions",
    ] {
        std::fs::create_dir_all(home.join(name))?;
    }
    for i in 0..30 {
        std::fs::write(home.join(format!("f{i}")), "x")?;
    }
    let mut env = ToolEnvironment::new(roots, Arc::new(Settings::default()), scratch.join("s2"));
    env.user_home = Some(home.clone());
    env.toolbelt_home = Some(home.join(".toolbelt"));
    let env = Arc::new(env);
    let tool = RunShellCommand::new(env.clone());
    let mut took = Vec::with_capacity(runs);
    for i in 0..runs {
        std::fs::write(home.join(format!("churn{}", i % 2)), "x")?;
        std::fs::remove_file(home.join(format!("churn{}", (i + 1) % 2))).ok();
        let call = tool.build(json!({"command": "ls"}))?;
        let started = Instant::now();
        call.execute(ExecContext::new(env.clone())).await;
        took.push(started.elapsed());
    }
    let m = median(took);
    println!(
        "confined ls, rules rebuilt every call: median {:.3} ms ({:+.3} ms over unconfined)",
        m.as_secs_f64() * 1e3,
        (m.as_secs_f64() - unconfined.as_secs_f64()) * 1e3
    );
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
