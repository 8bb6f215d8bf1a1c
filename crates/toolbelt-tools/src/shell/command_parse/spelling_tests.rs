//! Deny rules by spelling (issue 27): with `run_shell_command(rm)` denied, no way of
//! writing or wrapping `rm` runs it; and the "always allow" root of a command names
//! only that program, or nothing when a rule would approve everything.

use toolbelt_core::PermissionSubject;
use toolbelt_engine::{rules::Decision, rules::PermissionRules, rules::RuleList};

use super::parse;
use super::runs::rule_root;

fn decide(list: RuleList, rule: &str, line: &str) -> Decision {
    let mut rules = PermissionRules::new(&crate::rule_vocabulary());
    rules.add(list, rule);
    rules.evaluate(
        "run_shell_command",
        &PermissionSubject::Commands(parse(line).rule_subjects()),
    )
}

/// Lines that run `rm` (or may: their program cannot be read).
const RUNS_RM: &[&str] = &[
    "env -S 'rm v'",
    "env --split-string='rm v'",
    "env --split='rm v'",
    "env -iS'rm v'",
    "env -u X -S 'rm v'",
    "$'\\x72m' v",
    "$'\\162m' v",
    "$'\\u0072m' v",
    "/usr/bin/[r]m v",
    "/usr/bin/r? v",
    "/bin/r* v",
    "{rm,x} v",
    "x=rm; $x v",
    "$x v",
    "${x} v",
    "\"$x\" v",
    "$(echo rm) v",
    "`echo rm` v",
    "\"r\"m v",
    "r''m v",
    "\\rm v",
    "'rm' v",
    "command rm v",
    "command -p rm v",
    "exec rm v",
    "exec -a x rm v",
    "builtin rm v",
    "nice rm v",
    "nice -n 5 rm v",
    "nice --adj=5 rm v",
    "nohup rm v",
    "timeout 5 rm v",
    "timeout -s KILL 5 rm v",
    "timeout --sig=KILL 5 rm v",
    "xargs rm",
    "xargs -0 -n1 rm",
    "xargs -I{} {} v",
    "sudo rm v",
    "sudo -u root rm v",
    "sudo -iu root rm v",
    "sudo --user=root rm v",
    "doas rm v",
    "stdbuf -oL rm v",
    "setsid rm v",
    "env rm v",
    "env A=1 rm v",
    "env -- rm v",
    "env -i A=1 /bin/rm v",
    "sudo env nice timeout 1 command rm v",
    "eval 'rm v'",
    "eval rm v",
    "eval \"$cmd\"",
    "sh -c 'rm v'",
    "bash -lc 'rm v'",
    "bash -c \"$x\"",
    "sh -c 'echo; rm v'",
    "echo rm v | sh",
    "echo rm v | bash -s",
    "find . -exec rm {} ;",
    "find . -execdir rm {} +",
    "find . -name x -ok rm {} ;",
    "sh -c 'sudo rm v'",
    "env --frobnicate rm v",
    "env - rm v",
    "env -i - A=1 rm v",
    "command -- rm v",
    "exec -- rm v",
    "sudo -- rm v",
    "nice -- rm v",
    "/bin//rm v",
    "~/bin/rm v",
    "r\\m v",
    "watch rm v",
    "watch -n 1 'rm v'",
    "strace rm v",
    "flock /tmp/l rm v",
    "su -c 'rm v'",
    "bash /dev/stdin <<< 'rm v'",
    "bash <(echo rm v)",
    "source /dev/stdin <<< 'rm v'",
    ". <(echo rm v)",
    "sh - <<< 'rm v'",
];

#[test]
fn a_denied_program_does_not_run_under_any_spelling() {
    let mut failures = Vec::new();
    for line in RUNS_RM {
        for rule in ["run_shell_command(rm)", "Bash(rm *)"] {
            let got = decide(RuleList::Deny, rule, line);
            if got != Decision::Deny {
                failures.push(format!("{rule} on {line:?}: got {got:?}"));
            }
        }
        let got = decide(RuleList::Ask, "Bash(rm *)", line);
        if got != Decision::Ask {
            failures.push(format!("ask rule on {line:?}: got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn readable_commands_are_not_caught_by_a_rule_for_another_program() {
    for line in [
        "ls v",
        "echo rm v",
        "grep -r rm .",
        "command -v rm",
        "env",
        "xargs",
        "sudo -l",
        "timeout 5 ls",
        "sh -c 'ls'",
        "bash build.sh",
        "source env.sh",
        "watch ls",
        "find . -name rm",
        "git rm --cached x",
        "cat $file",
    ] {
        assert_eq!(
            decide(RuleList::Deny, "run_shell_command(rm)", line),
            Decision::Default,
            "{line}"
        );
    }
}

#[test]
fn a_wrapper_allowed_by_name_still_answers_for_what_it_runs() {
    assert_eq!(
        decide(RuleList::Allow, "Bash(timeout *)", "timeout 5 ls"),
        Decision::Default,
        "ls is not allowed by a rule for timeout"
    );
    let mut rules = PermissionRules::new(&crate::rule_vocabulary());
    rules.add(RuleList::Allow, "Bash(timeout *)");
    rules.add(RuleList::Allow, "Bash(ls *)");
    let subject = PermissionSubject::Commands(parse("timeout 5 ls -la").rule_subjects());
    assert_eq!(
        rules.evaluate("run_shell_command", &subject),
        Decision::Allow
    );
}

#[test]
fn the_reason_a_command_is_unreadable_is_named() {
    let subjects = parse("x=rm; $x v").rule_subjects();
    let why = subjects
        .iter()
        .find_map(|s| s.unreadable.clone())
        .unwrap_or_default();
    assert!(why.contains("`$x`") && why.contains("expansion"), "{why}");
    let subjects = parse("env -S 'rm v'").rule_subjects();
    let why = subjects[0].unreadable.clone().unwrap_or_default();
    assert!(why.contains("splits a string"), "{why}");
}

#[test]
fn always_allow_roots_name_only_the_program() {
    for (line, want) in [
        ("git status", Some("git")),
        ("/usr/bin/git status", Some("git")),
        ("/ws/bin/git status", Some("/ws/bin/git")),
        ("./git status", Some("./git")),
        ("\\git status", Some("git")),
        ("npm test", Some("npm")),
        ("eval ls", None),
        ("xargs ls", None),
        ("env A=1 ls", None),
        ("env", None),
        ("bash -c ls", None),
        ("sh -c ls", None),
        ("sh script.sh", None),
        ("sudo ls", None),
        ("exec ls", None),
        ("command ls", None),
        ("nohup ls", None),
        ("timeout 5 ls", None),
        ("nice ls", None),
        ("find . -exec ls ;", None),
        ("python3 -c 1", None),
        ("node -e 1", None),
        ("awk 1", None),
        ("$x a", None),
        ("/usr/bin/[g]it status", None),
        ("FOO=1 git status", None),
        ("git -c alias.x='!ls' x", None),
        ("git submodule foreach ls", None),
        ("setpriv ls", None),
        ("sed -n '1e ls' f", None),
        ("git log", Some("git")),
    ] {
        let parsed = parse(line);
        let got = parsed.commands.first().and_then(rule_root);
        assert_eq!(got.as_deref(), want, "{line}");
    }
}
