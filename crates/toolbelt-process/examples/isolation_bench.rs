//! The cost of isolating a child: `/bin/true` started through [`GroupCommand`] and waited
//! for, with each [`Isolation`] level, interleaved in one run so the machine's load falls
//! on all alike. The baseline is a plain `std` spawn in a process group (`posix_spawn`, as
//! before the isolation step); `SessionOnly` adds a `pre_exec` step (so a `fork`), `setsid`
//! and `close_range`; `Processes` adds the PID and mount namespaces, the relay and
//! the init; `Sealed` adds the network namespace (and a user namespace when unprivileged).
//!
//! Usage: cargo run --release -p toolbelt-process --example isolation_bench [-- RUNS]

use std::process::Stdio;
use std::time::{Duration, Instant};

use toolbelt_process::{GroupCommand, Isolation, Owner};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// CPU time of this process and its reaped children so far: wall time on a loaded
/// machine is mostly waiting for a core, CPU time is what the work costs.
fn cpu() -> Duration {
    let mut total = Duration::ZERO;
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        let mut u = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // Safety: getrusage fills the struct it is given.
        #[allow(unsafe_code)]
        let u = unsafe {
            libc::getrusage(who, u.as_mut_ptr());
            u.assume_init()
        };
        for t in [u.ru_utime, u.ru_stime] {
            total += Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        }
    }
    total
}

/// `None`: a plain `std` spawn in a new process group, as `GroupCommand` was before it
/// had a `pre_exec` step (the standard library then uses `posix_spawn`, a `vfork`).
fn once(
    owner: &Owner,
    isolation: Option<Isolation>,
) -> Result<(Duration, Duration), std::io::Error> {
    let cpu_start = cpu();
    let start = Instant::now();
    let status = match isolation {
        Some(isolation) => {
            let mut command = GroupCommand::new("/bin/true", owner);
            command.isolation(isolation).stdout(Stdio::null());
            command.spawn_std()?.wait()?
        }
        None => {
            use std::os::unix::process::CommandExt;
            std::process::Command::new("/bin/true")
                .process_group(0)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()?
                .wait()?
        }
    };
    if !status.success() {
        return Err(std::io::Error::other(format!("/bin/true: {status}")));
    }
    Ok((start.elapsed(), cpu() - cpu_start))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(300);
    let support = toolbelt_process::isolate::support();
    println!(
        "processes: {:?}\nsealed: {:?}",
        support.processes, support.sealed
    );
    let owner = Owner::new();
    let levels = [
        ("posix_spawn, process group", None),
        ("session only", Some(Isolation::SessionOnly)),
        (
            "shared PID namespace (approved)",
            Some(Isolation::Processes),
        ),
        ("sealed (+ network namespace)", Some(Isolation::Sealed)),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); levels.len()];
    let mut cpus: Vec<Duration> = vec![Duration::ZERO; levels.len()];
    for _ in 0..10 {
        for (_, level) in levels {
            once(&owner, level)?;
        }
    }
    for _ in 0..runs {
        for (i, (_, level)) in levels.iter().enumerate() {
            let (wall, cpu) = once(&owner, *level)?;
            times[i].push(wall);
            cpus[i] += cpu;
        }
    }
    let base = median(times[0].clone());
    println!(
        "{runs} runs each, interleaved; median spawn-to-exit of /bin/true, and mean CPU time \
         (toolbelt and every process of the command):"
    );
    let base_cpu = cpus[0].as_secs_f64() / runs as f64;
    for (i, (name, _)) in levels.iter().enumerate() {
        let m = median(times[i].clone());
        let extra = m.as_secs_f64() - base.as_secs_f64();
        let c = cpus[i].as_secs_f64() / runs as f64;
        println!(
            "  {name:30} wall {:7.3} ms (+{:.3})   CPU {:7.3} ms (+{:.3})",
            m.as_secs_f64() * 1e3,
            extra * 1e3,
            c * 1e3,
            (c - base_cpu) * 1e3
        );
    }
    Ok(())
}
