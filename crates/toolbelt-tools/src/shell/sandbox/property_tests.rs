//! The property behind the read-only sandbox: whatever the classifier lets run unasked
//! changes nothing, reaches no listener, reads no secret or terminal, leaves
//! toolbelt's limits, priority and scheduling as they were and leaves no process.
//!
//! Commands come from a grammar of shell forms over the programs of the read-only allow
//! list: options (GNU abbreviations, short clusters, the ones that write or run
//! programs), sed and awk scripts, `find -exec`/`-delete`, redirections (to files and
//! from `/dev/tcp`), expansions, pipes and lists. Each command the tool's own
//! confirmation lets run unasked (the classifier, through its public functions) runs
//! through the real tool in a scratch directory of a temporary workspace, with a
//! sentinel tree outside it; then every file of both trees must be as it was (content,
//! type, mode, owner, times, link target, no new entry), a loopback listener must have
//! accepted nothing, and no process naming the temporary directory may be alive. The
//! world also holds secrets (a credential in the home, a file in toolbelt's store, one
//! under a `Read` deny rule; `@SECRET`, `@STORE`, `@DENIED`) and a pty with a typed line
//! waiting (`@TTY`): no result may show a secret or the typed line; and this process's
//! limits, nice value,
//! scheduling policy and CPUs (`@PARENT` is its pid) must not have changed.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::json;
use toolbelt_config::settings::Settings;
use toolbelt_core::{ExecContext, Tool, ToolEnvironment, WorkspaceRoots};

use super::property_grammar::command_line;
use crate::shell::RunShellCommand;

/// Everything about a tree that a command could change.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let m = path.symlink_metadata().unwrap();
            let content = if m.is_file() {
                format!("{:?}", std::fs::read(&path).unwrap())
            } else if m.is_symlink() {
                format!("-> {:?}", std::fs::read_link(&path).unwrap())
            } else {
                String::new()
            };
            // Access times change on reads; everything else must not.
            out.insert(
                path.clone(),
                format!(
                    "mode {:o} owner {}:{} mtime {}.{} ctime {}.{} {content}",
                    m.mode(),
                    m.uid(),
                    m.gid(),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ctime(),
                    m.ctime_nsec()
                ),
            );
            if m.is_dir() {
                stack.push(path);
            }
        }
    }
    out
}

/// Live processes whose command line names `marker` (the temporary directory).
fn survivors(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().to_string();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(format!("{pid}: {}", String::from_utf8_lossy(&cmdline)));
        }
    }
    found
}

/// What a command must never show: the contents of the world's secrets.
const SECRETS: &[&str] = &["SECRET-CREDENTIAL", "SECRET-STORE", "SECRET-DENIED"];

struct World {
    dir: tempfile::TempDir,
    tool: RunShellCommand,
    env: Arc<ToolEnvironment>,
    listener: TcpListener,
    /// A pty's two ends, kept open so the line typed into it waits at the terminal for
    /// a reader (only `tty`, its path, is used).
    _master: std::fs::File,
    _terminal: std::fs::File,
    tty: PathBuf,
}

/// A pty with a typed line waiting: its master, its terminal (opened here, not as a
/// controlling terminal) and the terminal's path.
fn pty_with_a_line() -> (std::fs::File, std::fs::File, PathBuf) {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    use std::io::Write;
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let tty = PathBuf::from(
        ptsname(&master, Vec::new())
            .unwrap()
            .to_string_lossy()
            .into_owned(),
    );
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(&tty)
        .unwrap();
    let mut master = std::fs::File::from(master);
    master.write_all(b"the person's typed line\n").unwrap();
    (master, terminal, tty)
}

/// What a confined command must not change about this process: its limits, nice value,
/// scheduling policy and the CPUs it may run on.
fn own_state() -> String {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap();
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let cpus = status.lines().find(|l| l.starts_with("Cpus_allowed_list"));
    // After the name: state is 0, nice 16, rt_priority 37, policy 38.
    format!(
        "{limits}nice {} rt {} policy {} {cpus:?}",
        fields[16], fields[37], fields[38]
    )
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let scratch = ws.join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    std::fs::write(scratch.join("in.txt"), "a,b\nb a\na\n").unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&scratch)
        .status()
        .unwrap();
    assert!(git.success());
    let sentinel = dir.path().join("sentinel");
    std::fs::create_dir_all(sentinel.join("sub")).unwrap();
    std::fs::write(sentinel.join("file"), "a\nsentinel\n").unwrap();
    std::fs::write(sentinel.join("sub/deep"), "deep").unwrap();
    std::fs::write(sentinel.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(
        sentinel.join("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::os::unix::fs::symlink(sentinel.join("file"), sentinel.join("link")).unwrap();
    let root = dir.path().canonicalize().unwrap();
    for (file, text) in [
        ("home/.ssh/id_rsa", "SECRET-CREDENTIAL"),
        ("store/sessions/other/chat.jsonl", "SECRET-STORE"),
        ("denied/plan.txt", "SECRET-DENIED"),
    ] {
        std::fs::create_dir_all(root.join(file).parent().unwrap()).unwrap();
        std::fs::write(root.join(file), format!("{text}\n")).unwrap();
    }
    let mut rules = toolbelt_engine::rules::PermissionRules::new(&crate::rule_vocabulary())
        .with_base(&ws, Some(root.join("home")));
    rules.add(
        toolbelt_engine::rules::RuleList::Deny,
        &format!("Read(/{}/denied/**)", root.display()),
    );
    let roots = WorkspaceRoots::new([&ws])
        .unwrap()
        .with_path_policy(rules.path_policy());
    let mut env = ToolEnvironment::new(
        roots,
        Arc::new(Settings::default()),
        dir.path().join("session"),
    );
    env.user_home = Some(root.join("home"));
    env.toolbelt_home = Some(root.join("store"));
    let env = Arc::new(env);
    let (master, terminal, tty) = pty_with_a_line();
    let tool = RunShellCommand::new(env.clone());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    World {
        dir,
        tool,
        env,
        listener,
        _master: master,
        _terminal: terminal,
        tty,
    }
}

impl World {
    fn expand(&self, line: &str, n: u32) -> String {
        let root = self.dir.path();
        let root = root.canonicalize().unwrap();
        line.replace("@OUT", &format!("{}/sentinel/out{n}", root.display()))
            .replace("@SECRET", &format!("{}/home/.ssh/id_rsa", root.display()))
            .replace("@STORE_DIR", &format!("{}/store", root.display()))
            .replace(
                "@STORE",
                &format!("{}/store/sessions/other/chat.jsonl", root.display()),
            )
            .replace("@DENIED", &format!("{}/denied/plan.txt", root.display()))
            .replace("@HOME", &format!("{}/home", root.display()))
            .replace("@TTY", &self.tty.to_string_lossy())
            .replace("@PARENT", &std::process::id().to_string())
            .replace("@FILE", &format!("{}/sentinel/file", root.display()))
            .replace("@DIR", &format!("{}/sentinel", root.display()))
            .replace("@IN", "in.txt")
            .replace(
                "@PORT",
                &self.listener.local_addr().unwrap().port().to_string(),
            )
    }

    /// Runs `line` if it would run unasked; `Ok(false)` when the classifier asks.
    async fn check(&self, line: &str) -> Result<bool, TestCaseError> {
        let scratch = self.dir.path().join("ws/scratch");
        let call = match self.tool.build(json!({
            "command": line,
            "directory": scratch.to_str().unwrap(),
            "timeout": 10_000,
        })) {
            Ok(call) => call,
            Err(_) => return Ok(false),
        };
        if call.confirmation().await.is_some() {
            return Ok(false);
        }
        let before = snapshot(self.dir.path());
        let state = own_state();
        let result = call.execute(ExecContext::new(self.env.clone())).await;
        let text = result.llm_text();
        for secret in SECRETS {
            prop_assert!(!text.contains(secret), "`{line}` read {secret}\n{text}");
        }
        // The waiting line is never in a result. (Whether the terminal's queues stay as
        // they were is not asserted here: in about one run in ten of this test binary
        // both were emptied at once, a flush rather than a read, during harmless lines,
        // by something concurrent in this process not pinned down, and a line written to
        // the master reaches the queues asynchronously. The reach tests check reading,
        // typing into and taking a terminal deterministically.)
        prop_assert!(
            !text.contains("typed line"),
            "`{}` read the terminal\n{}",
            line,
            text
        );
        prop_assert_eq!(
            own_state(),
            state,
            "`{}` changed toolbelt's limits, priority or scheduling",
            line
        );
        // The session directory is the tool's own (logs of spilled output).
        let session = self.dir.path().join("session");
        let changed: Vec<_> = {
            let after = snapshot(self.dir.path());
            let keys: std::collections::BTreeSet<_> =
                before.keys().chain(after.keys()).cloned().collect();
            keys.into_iter()
                .filter(|k| !k.starts_with(&session) && before.get(k) != after.get(k))
                .collect()
        };
        prop_assert!(
            changed.is_empty(),
            "`{line}` changed {changed:?}\n{}",
            result.llm_text()
        );
        let connected = self.listener.accept().is_ok();
        prop_assert!(!connected, "`{line}` reached the listener");
        let alive = survivors(&self.dir.path().to_string_lossy());
        prop_assert!(alive.is_empty(), "`{line}` left {alive:?}");
        Ok(true)
    }
}

#[test]
fn what_runs_unasked_changes_nothing_reaches_nothing_and_leaves_nothing() {
    let _terminals = super::TERMINAL_TESTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let w = world();
    let n = std::cell::Cell::new(0u32);
    let ran = std::cell::Cell::new(0u32);
    let config = Config {
        cases: 600,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let outcome = runner.run(&command_line(), |line| {
        n.set(n.get() + 1);
        let line = w.expand(&line, n.get());
        if rt.block_on(w.check(&line))? {
            ran.set(ran.get() + 1);
        }
        Ok(())
    });
    if let Err(e) = outcome {
        panic!("{e}");
    }
    // The grammar must give the sandbox something to do, not only questions.
    let (ran, n) = (ran.get(), n.get());
    assert!(
        ran >= 30,
        "only {ran} of {n} generated commands ran unasked"
    );
    eprintln!("{ran} of {n} generated commands ran unasked, confined");
}
