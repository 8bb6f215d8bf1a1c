//! `toolbelt __crash HOW COMMAND`, in debug builds only: runs `COMMAND` with `sh -c` the
//! way a call runs (its own process group, an owner marker), waits for it, then dies
//! the way `HOW` says: `panic` (a panic unwinding out of `main`), `overflow` (a stack
//! overflow: the runtime's guard page handler aborts) or `abort`. The tests of "nothing
//! outlives toolbelt" use it for the endings no signal from outside produces.
//!
//! Why a hidden subcommand and not a real path: toolbelt has no known panic or overflow
//! to provoke (each one found is a bug to fix), and an environment variable read by the
//! normal commands would be a switch any caller could flip. This one does not exist in
//! a release build, and in a debug build it only lets the person who runs toolbelt end
//! it, which `kill` already does.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

/// The hidden first argument.
pub const CRASH_ARG: &str = "__crash";

/// Runs the command, then crashes; a bad use exits 2.
pub fn run(args: &[OsString]) -> ! {
    let (Some(how), Some(command)) = (
        args.first().and_then(|a| a.to_str()),
        args.get(1).and_then(|a| a.to_str()),
    ) else {
        std::process::exit(2)
    };
    let owner = toolbelt_process::Owner::new();
    let (key, value) = owner.env();
    let status = std::process::Command::new("sh")
        .args(["-c", command])
        .env(key, value)
        .process_group(0)
        .status();
    if status.is_err() {
        std::process::exit(2);
    }
    match how {
        "panic" => panic!("toolbelt __crash panic"),
        "overflow" => {
            let depth = overflow(0);
            std::process::exit(i32::from(depth == 0))
        }
        "abort" => std::process::abort(),
        _ => std::process::exit(2),
    }
}

/// Recurses until the stack runs out (the frame is kept by `black_box`).
fn overflow(depth: u64) -> u64 {
    let frame = [depth; 512];
    if std::hint::black_box(depth) == u64::MAX {
        return 0;
    }
    overflow(std::hint::black_box(depth + 1)) + std::hint::black_box(&frame)[1]
}
