//! A `command` hook: a shell string (`bash -c`, or `sh -c` with `"shell": "sh"`), or a
//! program with `args` and no shell; the input JSON on standard input; the project
//! folder as working directory and as `QWEN_PROJECT_DIR`, `CLAUDE_PROJECT_DIR` and
//! `GEMINI_PROJECT_DIR`; the hook's `env` added.
//!
//! It runs through `toolbelt_process::run`, the same spawning and ending as the
//! discovered and declared tools and the shell tool's `GroupCommand`: its own process
//! group, the owner marker, the guardian. At its time limit, on cancellation, or when its
//! output passes the cap, the whole group is ended, and what it started outside the group
//! (`setsid`, `nohup ... &`) too; when it exits, what it left running is ended. A hook
//! never outlives its call.

use std::ffi::OsString;
use std::path::Path;

use tokio_util::sync::CancellationToken;
use toolbelt_process::run::{RunEnd, RunSpec, run as run_to_end, signal_name};

use super::{OUTPUT_CAP, show_duration};
use crate::config::CommandHook;
use crate::output::{Answer, classify_stdout, stderr_tail};

/// The variables that name the project folder (Qwen Code's, Claude Code's, Gemini
/// CLI's).
pub(crate) const PROJECT_DIR_VARS: [&str; 3] = [
    "QWEN_PROJECT_DIR",
    "CLAUDE_PROJECT_DIR",
    "GEMINI_PROJECT_DIR",
];

/// Runs the hook to its end.
pub(crate) async fn run(
    hook: &CommandHook,
    input: Vec<u8>,
    project_dir: &Path,
    cancel: CancellationToken,
) -> Answer {
    let argv: Vec<String> = match &hook.args {
        Some(args) => std::iter::once(hook.command.clone())
            .chain(args.iter().cloned())
            .collect(),
        None => vec![hook.shell.to_string(), "-c".into(), hook.command.clone()],
    };
    let mut env: Vec<(String, OsString)> = PROJECT_DIR_VARS
        .iter()
        .map(|name| (name.to_string(), project_dir.as_os_str().to_owned()))
        .collect();
    env.extend(hook.env.iter().map(|(k, v)| (k.clone(), OsString::from(v))));
    let output = run_to_end(RunSpec {
        argv: &argv,
        cwd: project_dir,
        stdin: Some(input),
        timeout: hook.timeout,
        output_cap: OUTPUT_CAP,
        cancel,
        env,
    })
    .await;
    let stderr = output.stderr_text();
    match output.end {
        RunEnd::Exited(0) => classify_stdout(&output.stdout_text()),
        RunEnd::Exited(2) => Answer::Blocked(stderr),
        RunEnd::Exited(code) => Answer::Failed(format!("exit code {code}{}", stderr_tail(&stderr))),
        RunEnd::Signaled(signal) => Answer::Failed(format!(
            "killed by {}{}",
            signal_name(signal),
            stderr_tail(&stderr)
        )),
        RunEnd::TimedOut(limit) => Answer::Failed(format!(
            "it did not finish within {}; it and everything it started were ended",
            show_duration(limit)
        )),
        RunEnd::Cancelled => {
            Answer::Failed("cancelled; it and everything it started were ended".to_string())
        }
        RunEnd::OutputTooLarge(cap) => Answer::Malformed(format!(
            "its output passed {} MiB and was cut; it was ended",
            cap >> 20
        )),
        RunEnd::SpawnFailed(why) => Answer::Failed(why),
    }
}
