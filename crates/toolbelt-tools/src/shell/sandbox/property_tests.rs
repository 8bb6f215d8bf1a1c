//! The property behind the read-only sandbox: whatever the classifier lets run unasked
//! changes nothing, reaches no listener, reads no secret, touches no terminal, leaves
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
//! waiting (`@TTY`): no result may show a secret, the line must still wait and nothing
//! may have been written to the terminal; and this process's limits, nice value,
//! scheduling policy and CPUs (`@PARENT` is its pid) must not have changed.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::json;
use toolbelt_core::{ExecContext, Settings, Tool, ToolEnvironment, WorkspaceRoots};

use crate::shell::RunShellCommand;

/// Programs of the allow list with options and operands worth trying. `@OUT` is a new
/// path outside the workspace, `@FILE` and `@DIR` existing ones outside it, `@IN` a
/// file in the scratch directory, `@PORT` the listener's port; the secrets, the pty
/// and `@PARENT` as in the module's documentation.
const PROGRAMS: &[(&str, &[&str], &[&str])] = &[
    (
        "sed",
        &[
            "-n",
            "-E",
            "-i",
            "--in-place",
            "--in-pl=.bak",
            "--i",
            "-ni",
            "-s",
            "-z",
            "-e 's/a/b/w @OUT'",
            "-e 's|a|b|w @OUT'",
            "'1w @OUT'",
            "'/a/w @OUT'",
            "'s/a/b/'",
            "'p'",
            "'1e touch @OUT'",
            "'s/a/touch @OUT/e'",
            "'W @OUT'",
            "'s,a,b,gw @OUT'",
            "--expression='w @OUT'",
            "-f @FILE",
            "'r @FILE'",
            "'$!N'",
            "'\\%a%w @OUT'",
        ],
        &["@IN", "@FILE", "@SECRET"],
    ),
    (
        "sort",
        &[
            "-o @OUT",
            "--output=@OUT",
            "--outp=@OUT",
            "--o=@OUT",
            "-uo @OUT",
            "-ro@OUT",
            "-r",
            "-n",
            "-T @DIR",
            "--compress-program=touch",
            "--compress-prog=sh",
            "-k1",
            "--files0-from=@FILE",
        ],
        &["@IN", "@FILE"],
    ),
    (
        "find",
        &[
            "-name '*'",
            "-delete",
            "-exec touch @OUT \\;",
            "-execdir rm {} +",
            "-fprint @OUT",
            "-fls @OUT",
            "-fprintf @OUT x",
            "-ok rm {} \\;",
            "-newer @FILE",
            "-type f",
            "-maxdepth 1",
            "-fprint0 @OUT",
            "-exec chmod 777 {} +",
        ],
        &["@DIR", ".", "@FILE"],
    ),
    (
        "awk",
        &[
            "'BEGIN{print 1 > \"@OUT\"}'",
            "'{print | \"sh\"}'",
            "'BEGIN{system(\"touch @OUT\")}'",
            "'{print $1}'",
            "-v x=1",
            "'BEGIN{printf \"x\" >> \"@OUT\"}'",
            "'BEGIN { \"touch @OUT\" | getline }'",
            "'BEGIN{print > \"/dev/tcp/127.0.0.1/@PORT\"}'",
            "--dump-variables=@OUT",
            "-d@OUT",
            "-o@OUT",
        ],
        &["@IN", "@FILE"],
    ),
    (
        "git",
        &[
            "status",
            "status --short",
            "log --oneline -1",
            "diff --output=@OUT",
            "diff --outp=@OUT",
            "log --output=@OUT",
            "show --out=@OUT",
            "grep -O'touch @OUT' a",
            "grep --open-files-in-pager=touch a",
            "-c core.pager='touch @OUT' log",
            "branch x",
            "tag t",
            "config a.b c",
            "config --file @OUT a.b c",
            "remote show http://127.0.0.1:@PORT/r",
            "ls-remote http://127.0.0.1:@PORT/r",
            "diff --ext-diff",
            "log -p",
            "rev-parse HEAD",
            "blame @IN",
        ],
        &[],
    ),
    (
        "rg",
        &[
            "--pre=touch",
            "--pre touch",
            "--pr=sh",
            "-z",
            "--search-zip",
            "-uu",
            "--files",
        ],
        &["a", "@DIR", "@IN"],
    ),
    (
        "tree",
        &["-o @OUT", "-fo @OUT", "-a", "-L 1"],
        &["@DIR", "."],
    ),
    (
        "grep",
        &[
            "-r",
            "-f @FILE",
            "--exclude-from=@FILE",
            "-l",
            "-c",
            "-o",
            "-f @SECRET",
        ],
        &["a", "@DIR", "@IN", "@HOME", "@STORE_DIR", "@TTY"],
    ),
    (
        "env",
        &[
            "touch @OUT",
            "-S 'touch @OUT'",
            "--split-string='touch @OUT'",
            "-i",
            "-u X",
            "ls",
        ],
        &[],
    ),
    (
        "printf",
        &["-v x a", "'%s' a", "-v 'a[$(touch @OUT)]' x"],
        &[],
    ),
    (
        "test",
        &["-f @FILE", "-v 'a[$(touch @OUT)]'", "-d @DIR"],
        &[],
    ),
    ("[", &["-f @FILE ]", "-v 'a[$(touch @OUT)]' ]"], &[]),
    ("uniq", &["-c", "-d"], &["@IN", "@IN @OUT"]),
    ("file", &["-C -m @OUT", "-b", "-z"], &["@FILE", "@IN"]),
    (
        "tail",
        &["-n 1", "-c 3", "--lines=2"],
        &["@IN", "@FILE", "@STORE"],
    ),
    (
        "head",
        &["-n 1", "-c3", "--byt=2"],
        &["@IN", "@FILE", "@TTY", "@DENIED"],
    ),
    (
        "cat",
        &["-n", "-A", "-"],
        &["@IN", "@FILE", "@SECRET", "@STORE", "@DENIED", "@TTY"],
    ),
    (
        "ls",
        &["-la", "-R", "--col=always", "-1t"],
        &["@DIR", ".", "@FILE"],
    ),
    (
        "jq",
        &[
            "-n",
            ".",
            "-r",
            "--rawfile x @FILE",
            "--rawfile x @SECRET",
            "'input_filename'",
        ],
        &["@IN"],
    ),
    ("cd", &[], &["@DIR", "..", "-"]),
    (
        "diff",
        &["-u", "-r", "--from-file=@FILE"],
        &["@IN @FILE", "@DIR .", "@IN @DENIED", "@IN @SECRET"],
    ),
    ("stat", &["-c %a", "-L"], &["@FILE", "@DIR"]),
    ("md5sum", &["-c", "-b"], &["@FILE", "@IN"]),
    ("base64", &["-d", "-w0"], &["@IN", "@SECRET"]),
    ("date", &["-f @SECRET", "-f @STORE", "-r @FILE"], &[]),
    ("prlimit", &["--pid @PARENT", "--pid @PARENT --cpu=1"], &[]),
    ("renice", &["-n 19 -p @PARENT"], &[]),
    ("taskset", &["-p 1 @PARENT", "-p @PARENT"], &[]),
    ("stty", &["-a", "sane"], &["< @TTY", "-F @TTY"]),
    ("tr", &["a b", "-d a"], &[]),
    ("cut", &["-c1", "-d, -f1"], &["@IN"]),
    ("wc", &["-l", "-c", "--files0-from=@FILE"], &["@IN"]),
    ("du", &["-sh", "-a"], &["@DIR"]),
    (
        "echo",
        &["-n", "-e"],
        &["a", "$HOME", "~", "{a,b}", "$'\\x41'", "\"$PWD\""],
    ),
    ("less", &["-F", "+G"], &["@FILE"]),
    ("readlink", &["-f"], &["@FILE", "@DIR/link"]),
];

const REDIRECTIONS: &[&str] = &[
    "",
    "",
    "",
    "> @OUT",
    ">> @OUT",
    "2> @OUT",
    "&> @OUT",
    ">| @OUT",
    "< @IN",
    "< /dev/tcp/127.0.0.1/@PORT",
    "< @TTY",
    "> @TTY",
    "<> @OUT",
    "> /dev/null",
    "2>&1",
];

const JOINERS: &[&str] = &[" | ", " && ", " ; ", " || ", " |& "];

fn simple_command() -> impl Strategy<Value = String> {
    (0..PROGRAMS.len())
        .prop_flat_map(|i| {
            let (name, options, operands) = PROGRAMS[i];
            let opts = if options.is_empty() {
                Just(Vec::new()).boxed()
            } else {
                proptest::collection::vec(proptest::sample::select(options), 0..3).boxed()
            };
            let ops = if operands.is_empty() {
                Just(Vec::new()).boxed()
            } else {
                proptest::collection::vec(proptest::sample::select(operands), 0..2).boxed()
            };
            (
                Just(name),
                opts,
                ops,
                proptest::sample::select(REDIRECTIONS),
            )
        })
        .prop_map(|(name, opts, ops, redirect)| {
            let mut words = vec![name.to_string()];
            words.extend(opts.iter().map(|o| o.to_string()));
            words.extend(ops.iter().map(|o| o.to_string()));
            if !redirect.is_empty() {
                words.push(redirect.to_string());
            }
            words.join(" ")
        })
}

fn command_line() -> impl Strategy<Value = String> {
    (
        simple_command(),
        proptest::collection::vec((proptest::sample::select(JOINERS), simple_command()), 0..3),
    )
        .prop_map(|(first, rest)| {
            let mut line = first;
            for (joiner, next) in rest {
                line.push_str(joiner);
                line.push_str(&next);
            }
            line
        })
}

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
    /// A pty's two ends: a line typed into it waits at `terminal` for a reader.
    master: std::fs::File,
    terminal: std::fs::File,
    tty: PathBuf,
}

/// A pty with a typed line waiting: its master, its terminal (opened here, not as a
/// controlling terminal) and the terminal's path.
fn pty_with_a_line() -> (std::fs::File, std::fs::File, PathBuf) {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    use std::io::Write;
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
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

/// Bytes waiting to be read at each end of the pty.
fn pending(w: &World) -> (u64, u64) {
    (
        rustix::io::ioctl_fionread(&w.terminal).unwrap(),
        rustix::io::ioctl_fionread(&w.master).unwrap(),
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
    let mut rules = toolbelt_core::PermissionRules::new(&crate::rule_vocabulary())
        .with_base(&ws, Some(root.join("home")));
    rules.add(
        toolbelt_core::RuleList::Deny,
        &format!("Read(/{}/denied/**)", root.display()),
    );
    let roots = WorkspaceRoots::new([&ws])
        .unwrap()
        .with_path_policy(toolbelt_core::rules::PathPolicy::new(&rules));
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
        master,
        terminal,
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
        let (state, tty) = (own_state(), pending(self));
        let result = call.execute(ExecContext::new(self.env.clone())).await;
        let text = result.llm_text();
        for secret in SECRETS {
            prop_assert!(!text.contains(secret), "`{line}` read {secret}\n{text}");
        }
        prop_assert_eq!(
            pending(self),
            tty,
            "`{}` touched the terminal\n{}",
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
