#![allow(clippy::too_many_lines)]
//! `toolbelt tools call run_shell_command` through the real binary, with standard input
//! not a terminal (headless): what needs confirmation is refused, read-only commands
//! run, and the permission rules of the settings decide first.

// A test binary: helpers outside `#[test]` functions may panic on broken fixtures.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs the binary in `project` with a private home, so no settings of the machine or
/// the person running the tests leak in.
fn toolbelt(project: &Path, home: &Path, args: &[&str]) -> Output {
    toolbelt_with(project, home, args, &[])
}

/// [`toolbelt`] with variables added to its environment.
fn toolbelt_with(project: &Path, home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(args)
        .env_remove("TOOLBELT_LOG")
        .envs(env.iter().copied())
        .current_dir(project)
        .env("HOME", home)
        .env("TOOLBELT_HOME", home.join(".toolbelt"))
        // These tests are about what workspace settings do; `cli_trust.rs` covers a
        // folder that is not trusted.
        .env("TOOLBELT_TRUST_WORKSPACE", "1")
        .env(
            "TOOLBELT_SYSTEM_SETTINGS_PATH",
            home.join("no-system-settings.json"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

struct Project {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    home: std::path::PathBuf,
}

fn project(settings: Option<&str>) -> Project {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proj");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(root.join("present.txt"), "x").unwrap();
    if let Some(settings) = settings {
        std::fs::create_dir_all(root.join(".qwen")).unwrap();
        std::fs::write(root.join(".qwen/settings.json"), settings).unwrap();
    }
    Project {
        _dir: dir,
        root,
        home,
    }
}

impl Project {
    fn shell(&self, command: &str, extra: &[&str]) -> Output {
        let args = serde_json::json!({ "command": command }).to_string();
        let mut all = vec!["tools", "call", "run_shell_command", args.as_str()];
        all.extend_from_slice(extra);
        toolbelt(&self.root, &self.home, &all)
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn headless_touch_is_refused_and_ls_runs() {
    let p = project(None);
    let out = p.shell("touch x", &[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    // Said to the person who called, not in the words the model gets.
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("needs approval") && stderr.contains("Pass --yes"),
        "{stderr}"
    );
    for model_words in ["Do not retry", "the user", "tell the user"] {
        assert!(!stderr.contains(model_words), "{model_words}: {stderr}");
    }
    assert!(!p.root.join("x").exists(), "the refused command ran");

    let out = p.shell("ls", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("present.txt"));
}

#[test]
fn yes_approves_the_call() {
    let p = project(None);
    let out = p.shell("touch x && echo made", &["--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(p.root.join("x").exists());
}

#[test]
fn substitution_always_needs_confirmation() {
    let p = project(None);
    let out = p.shell("echo $(touch y)", &[]);
    assert_eq!(out.status.code(), Some(3));
    assert!(!p.root.join("y").exists());
}

#[test]
fn an_allow_rule_runs_without_a_question() {
    let p = project(Some(r#"{"permissions": {"allow": ["Bash(touch *)"]}}"#));
    let out = p.shell("touch x", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(p.root.join("x").exists());
    // Only the covered part is allowed: the rest still needs a person.
    let out = p.shell("touch y && rm present.txt", &[]);
    assert_eq!(out.status.code(), Some(3));
    assert!(p.root.join("present.txt").exists());
}

#[test]
fn a_deny_rule_refuses_and_names_itself() {
    let p = project(Some(
        r#"{"permissions": {"deny": ["run_shell_command(ls *)"], "allow": ["Bash"]}}"#,
    ));
    let out = p.shell("echo ok && ls -la", &["--yes"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("\"run_shell_command(ls *)\""),
        "{}",
        text(&out.stderr)
    );
    let out = p.shell("echo ok", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn an_ask_rule_asks_even_for_read_only_commands() {
    let p = project(Some(r#"{"permissions": {"ask": ["Bash(cat *)"]}}"#));
    let out = p.shell("cat present.txt", &[]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stderr).contains("`Bash(cat *)`"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_failing_command_is_a_result_not_a_refusal() {
    let p = project(None);
    let out = p.shell("ls does-not-exist", &["--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let llm = result["llm_content"][0]["text"].as_str().unwrap();
    assert!(llm.contains("Exit Code: 2"), "{llm}");
}

#[test]
fn a_denied_program_does_not_run_under_another_spelling_even_when_approved() {
    let p = project(Some(
        r#"{"permissions": {"deny": ["run_shell_command(rm)"]}}"#,
    ));
    for command in [
        "env -S 'rm present.txt'",
        "env --split-string='rm present.txt'",
        "$'\\x72m' present.txt",
        "/usr/bin/[r]m present.txt",
        "x=rm; $x present.txt",
        "\"r\"m present.txt",
        "\\rm present.txt",
        "command rm present.txt",
        "exec rm present.txt",
        "builtin rm present.txt 2>/dev/null; rm present.txt",
        "nice -n 1 rm present.txt",
        "nohup rm present.txt",
        "timeout 5 rm present.txt",
        "echo present.txt | xargs rm",
        "eval 'rm present.txt'",
        "sh -c 'rm present.txt'",
        "echo 'rm present.txt' | sh",
        "find . -name present.txt -exec rm {} ;",
    ] {
        let out = p.shell(command, &["--yes"]);
        assert!(p.root.join("present.txt").exists(), "{command} ran rm");
        assert_eq!(
            out.status.code(),
            Some(3),
            "{command}: {}",
            text(&out.stderr)
        );
    }
    let out = p.shell("x=rm; $x present.txt", &["--yes"]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("run_shell_command(rm)") && stderr.contains("`$x`"),
        "the refusal names the rule and why it applies: {stderr}"
    );
}

#[test]
fn a_deny_rule_that_does_not_parse_stops_the_program() {
    let p = project(Some(
        r#"{"permissions": {"deny": ["run_shell_command(rm"]}}"#,
    ));
    let out = p.shell("rm present.txt", &["--yes"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(p.root.join("present.txt").exists());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("run_shell_command(rm") && stderr.contains(".qwen/settings.json"),
        "{stderr}"
    );
}

#[test]
fn a_read_only_command_runs_confined_and_an_approved_one_does_not() {
    // `cat` is read-only whatever the classifier becomes; the kernel shows the filter.
    let p = project(None);
    let out = p.shell("cat /proc/self/status", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status = text(&out.stdout);
    assert!(status.contains("NoNewPrivs:\t1"), "{status}");
    assert!(status.contains("Seccomp:\t2"), "{status}");
    // An ask rule makes it ask; --yes approves it, and approved means unconfined.
    let p = project(Some(r#"{"permissions": {"ask": ["Bash(cat *)"]}}"#));
    let out = p.shell("cat /proc/self/status", &["--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Seccomp:\t0"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn sandbox_verify_passes_on_this_machine() {
    let p = project(None);
    // A credential for the credential check to try.
    std::fs::create_dir_all(p.home.join(".ssh")).unwrap();
    std::fs::write(p.home.join(".ssh/id_ed25519"), "PRIVATE").unwrap();
    let out = toolbelt(&p.root, &p.home, &["sandbox", "--verify"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("Landlock: ABI "), "{stdout}");
    for check in [
        "pass  write outside the workspace",
        "pass  chmod of a file the user owns",
        "pass  TCP connect to a loopback listener",
        "pass  signal to toolbelt",
        "pass  read another terminal (a pty opened here)",
        "pass  change toolbelt's limits (prlimit)",
        "pass  change toolbelt's priority (setpriority)",
        "pass  lock a file opened for reading (flock)",
        "pass  run without a memory limit (address space)",
        "pass  run without a CPU time limit",
        "pass  read toolbelt's store",
        "pass  read a credential file",
    ] {
        assert!(stdout.contains(check), "{check}: {stdout}");
    }
    // Where the host allows them, these are refused too (skipped otherwise, saying why).
    for check in [
        "type into a terminal (TIOCSTI)",
        "create a namespace (unshare -U)",
    ] {
        assert!(
            stdout.contains(&format!("pass  {check}"))
                || stdout.contains(&format!("skip  {check}")),
            "{check}: {stdout}"
        );
    }
    assert!(!stdout.contains("FAIL"), "{stdout}");
    assert!(
        !p.home
            .join(".toolbelt")
            .read_dir()
            .unwrap()
            .flatten()
            .any(|e| e
                .file_name()
                .to_string_lossy()
                .starts_with("sandbox-verify"))
    );
}

#[test]
fn sandbox_runs_one_command_confined() {
    let p = project(None);
    let target = p.home.join("written");
    let target_arg = target.to_str().unwrap();
    let out = toolbelt(&p.root, &p.home, &["sandbox", "--", "touch", target_arg]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(!target.exists(), "{stdout}");
    assert!(
        stdout.contains(&format!("It tried to write {target_arg}")),
        "{stdout}"
    );
    // The person's own command: no advice meant for a model.
    for model_words in ["ask the user", "the user's approval", "retrying it"] {
        assert!(!stdout.contains(model_words), "{model_words}: {stdout}");
    }
}

/// Issue 40: a command of the model's, unasked (`printenv` is read-only) or approved,
/// gets no variable whose name looks like a secret from toolbelt's environment, unless
/// `tools.shell.environment.passthrough` names it.
#[test]
fn commands_get_no_secrets_from_the_environment_unless_passed_through() {
    let p = project(Some(
        r#"{"tools": {"shell": {"environment": {"passthrough": ["my_*_token"]}}}}"#,
    ));
    let env = [
        ("OPENAI_API_KEY", "sk-secret-openai"),
        ("FOO_TOKEN", "secret-foo"),
        ("MY_CI_TOKEN", "passed-through"),
        ("PLAIN_SETTING", "plain-value"),
    ];
    let args = serde_json::json!({ "command": "printenv" }).to_string();
    for extra in [&[][..], &["--yes"][..]] {
        let mut all = vec!["tools", "call", "run_shell_command", args.as_str()];
        all.extend_from_slice(extra);
        let out = toolbelt_with(&p.root, &p.home, &all, &env);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{extra:?}: {}",
            text(&out.stderr)
        );
        assert!(stdout.contains("PLAIN_SETTING=plain-value"), "{stdout}");
        assert!(stdout.contains("MY_CI_TOKEN=passed-through"), "{stdout}");
        assert!(!stdout.contains("sk-secret-openai"), "{extra:?}: {stdout}");
        assert!(!stdout.contains("secret-foo"), "{extra:?}: {stdout}");
    }
}

/// Issue 40: the log of a command that ran unasked goes when its session ends; the log of
/// an approved one stays.
#[test]
fn an_unasked_commands_log_is_removed_with_the_session() {
    let p = project(None);
    let logged = |command: &str, extra: &[&str]| {
        let out = p.shell(command, extra);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let rest = stdout
            .split("saved in ")
            .nth(1)
            .unwrap_or_else(|| panic!("{stdout}"));
        std::path::PathBuf::from(&rest[..rest.find([' ', ';']).unwrap()])
    };
    let unasked = logged("seq 1 400000", &[]);
    assert!(!unasked.exists(), "{} stayed", unasked.display());
    let approved = logged("seq 1 400000 && touch made", &["--yes"]);
    assert!(approved.exists(), "{} went", approved.display());
}

/// An unasked command is sealed in a PID namespace of its own: it does not start the
/// holder of the namespace approved commands share (a fork, an `exec` of `cat` and its
/// end, for nothing: issue 49). An approved command does.
#[test]
fn an_unasked_command_starts_no_holder_of_the_shared_namespace() {
    let p = project(None);
    // Whether the run of `command` started the holder (its debug line says so).
    let holder_started = |command: &str, extra: &[&str]| {
        let args = serde_json::json!({ "command": command }).to_string();
        let mut all = vec!["tools", "call", "run_shell_command", args.as_str()];
        all.extend_from_slice(extra);
        let env = [
            ("TOOLBELT_LOG", "toolbelt_process=debug"),
            ("PLAIN_SETTING", "seen"),
        ];
        let out = toolbelt_with(&p.root, &p.home, &all, &env);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains("seen"), "{}", text(&out.stdout));
        text(&out.stderr).contains("started the holder of approved commands' PID namespace")
    };
    // `printenv` is read-only: it runs unasked, sealed.
    assert!(
        !holder_started("printenv PLAIN_SETTING", &[]),
        "an unasked command started the holder"
    );
    // `tee` writes: it runs approved, in the shared namespace.
    if toolbelt_process::isolate::processes_granted().is_ok() {
        assert!(
            holder_started("printenv PLAIN_SETTING | tee seen.txt", &["--yes"]),
            "an approved command started no holder"
        );
    }
}

/// toolbelt's end does not wait for the holder of the shared namespace (issue 49: the
/// teardown of its relay, a fork of toolbelt, cost most of a millisecond at every end):
/// the holder ends by itself when toolbelt does, its input pipe closed, as after a
/// SIGKILL. What an approved command left in the namespace is still ended.
#[test]
fn the_holder_of_the_shared_namespace_ends_with_toolbelt_and_takes_what_it_holds() {
    if let Err(why) = toolbelt_process::isolate::processes_granted() {
        // CI runs as root, where the namespace is always granted: a skip there is a failure.
        let ci_root = std::env::var_os("CI").is_some() && rustix::process::geteuid().is_root();
        assert!(!ci_root, "CI runs as root, where {why:?} must not happen");
        eprintln!("skipped: {why}");
        return;
    }
    let p = project(None);
    let token = format!("tb-left-{}", std::process::id());
    // A daemon of its own session, named by `token` (`sh -c` keeps its `$0`).
    let script = format!("setsid sh -c 'sleep 1000; :' {token} >/dev/null 2>&1 & echo started=$!");
    let args = serde_json::json!({ "command": script }).to_string();
    let all = ["tools", "call", "run_shell_command", args.as_str(), "--yes"];
    let out = toolbelt_with(
        &p.root,
        &p.home,
        &all,
        &[("TOOLBELT_LOG", "toolbelt_process=debug")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("started="),
        "{}",
        text(&out.stdout)
    );
    let stderr = text(&out.stderr);
    let holder: u32 = stderr
        .split("PID namespace (pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    let named = |token: &str| {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .any(|e| {
                std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| c.windows(token.len()).any(|w| w == token.as_bytes()))
            })
    };
    let alive = |pid: u32| toolbelt_process::procfs::stat(pid).is_some_and(|p| p.is_alive());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while alive(holder) || named(&token) {
        assert!(
            std::time::Instant::now() < deadline,
            "after toolbelt ended: holder {holder} alive {}, daemon left {}",
            alive(holder),
            named(&token)
        );
        std::thread::yield_now();
    }
}
