//! Programs that run other programs (issue 41): every entry of the one table
//! (`runners.rs`) has a line that runs `rm` through it, which a deny rule for `rm`
//! refuses, an allow rule for the outer program does not approve, and "always" offers
//! no rule for; and a property test draws such lines with options. The lines of the
//! issue run for real in `runner_scheduler_tests.rs`.

use std::collections::BTreeSet;

use proptest::prelude::*;
use toolbelt_core::PermissionSubject;
use toolbelt_engine::{rules::Decision, rules::PermissionRules, rules::RuleList};

use super::parse;
use super::runners::RUNNERS;
use super::runs::rule_root;

/// For each entry of the table, a line that runs `rm v` through it (or runs code that
/// cannot be read).
const THROUGH_EACH: &[(&str, &str)] = &[
    ("env", "env A=1 rm v"),
    ("command", "command rm v"),
    ("builtin", "builtin rm v"),
    ("exec", "exec rm v"),
    ("coproc", "coproc rm v"),
    ("nice", "nice -n 1 rm v"),
    ("nohup", "nohup rm v"),
    ("chronic", "chronic rm v"),
    ("setsid", "setsid -f rm v"),
    ("time", "time -p rm v"),
    ("stdbuf", "stdbuf -oL rm v"),
    ("ionice", "ionice -c 3 rm v"),
    ("timeout", "timeout 5 rm v"),
    ("taskset", "taskset -c 0 rm v"),
    ("chrt", "chrt -o 0 rm v"),
    ("sudo", "sudo -u root rm v"),
    ("doas", "doas rm v"),
    ("xargs", "xargs -0 rm"),
    ("setpriv", "setpriv --reuid=1000 rm v"),
    ("prlimit", "prlimit --nofile=10 rm v"),
    ("fakeroot", "fakeroot -- rm v"),
    ("setarch", "setarch x86_64 -R rm v"),
    ("linux32", "linux32 rm v"),
    ("linux64", "linux64 rm v"),
    ("i386", "i386 rm v"),
    ("x86_64", "x86_64 rm v"),
    ("uname26", "uname26 rm v"),
    ("ssh-agent", "ssh-agent -s rm v"),
    ("dbus-run-session", "dbus-run-session -- rm v"),
    ("busybox", "busybox rm v"),
    ("toybox", "toybox rm v"),
    ("ld.so", "ld.so /bin/rm v"),
    ("ld-linux.so.2", "/lib/ld-linux.so.2 /bin/rm v"),
    (
        "ld-linux-x86-64.so.2",
        "/lib64/ld-linux-x86-64.so.2 /bin/rm v",
    ),
    (
        "ld-linux-aarch64.so.1",
        "/lib/ld-linux-aarch64.so.1 --argv0 x /bin/rm v",
    ),
    ("chroot", "chroot / rm v"),
    ("flock", "flock /tmp/l rm v"),
    ("gdb", "gdb -batch -ex 'shell rm v'"),
    ("ltrace", "ltrace rm v"),
    ("nsenter", "nsenter -t 1 rm v"),
    ("parallel", "parallel rm ::: v"),
    ("runuser", "runuser -u root rm v"),
    ("script", "script -c 'rm v'"),
    ("strace", "strace -f rm v"),
    ("su", "su -c 'rm v'"),
    ("unshare", "unshare -r rm v"),
    ("valgrind", "valgrind rm v"),
    ("firejail", "firejail rm v"),
    ("bwrap", "bwrap --bind / / rm v"),
    ("systemd-run", "systemd-run --user rm v"),
    ("systemd-inhibit", "systemd-inhibit rm v"),
    ("pkexec", "pkexec rm v"),
    ("catchsegv", "catchsegv rm v"),
    ("numactl", "numactl -N 0 rm v"),
    ("cgexec", "cgexec -g cpu:x rm v"),
    ("xvfb-run", "xvfb-run rm v"),
    ("dbus-launch", "dbus-launch rm v"),
    ("entr", "entr rm v"),
    ("faketime", "faketime 'now' rm v"),
    ("eatmydata", "eatmydata rm v"),
    ("unbuffer", "unbuffer rm v"),
    ("rlwrap", "rlwrap rm v"),
    ("torsocks", "torsocks rm v"),
    ("proxychains", "proxychains rm v"),
    ("proxychains4", "proxychains4 rm v"),
    ("tmux", "tmux new -d 'rm v'"),
    ("screen", "screen -dm rm v"),
    ("expect", "expect -c 'spawn rm v'"),
    ("socat", "socat - EXEC:'rm v'"),
    ("npx", "npx rimraf v"),
    ("bunx", "bunx rimraf v"),
    ("pnpx", "pnpx rimraf v"),
    ("vim", "vim -c '!rm v' -c q"),
    ("vi", "vi -c '!rm v'"),
    ("nvim", "nvim --headless -c '!rm v'"),
    ("ex", "ex -c '!rm v'"),
    ("emacs", "emacs --batch --eval '(delete-file \"v\")'"),
    ("sh", "sh -c 'rm v'"),
    ("bash", "bash -c 'rm v'"),
    ("dash", "dash -c 'rm v'"),
    ("zsh", "zsh -c 'rm v'"),
    ("ksh", "ksh -c 'rm v'"),
    ("mksh", "mksh -c 'rm v'"),
    ("yash", "yash -c 'rm v'"),
    ("fish", "fish -c 'rm v'"),
    ("csh", "csh -c 'rm v'"),
    ("tcsh", "tcsh -c 'rm v'"),
    ("eval", "eval 'rm v'"),
    ("source", "source /dev/stdin <<< 'rm v'"),
    (".", ". /dev/stdin <<< 'rm v'"),
    ("trap", "trap 'rm v' EXIT"),
    ("alias", "shopt -s expand_aliases; alias d=rm; eval 'd v'"),
    ("hash", "hash -p /bin/rm del; del v"),
    ("fc", "fc -s"),
    ("let", "let 'a[$(rm v)]=1'"),
    ("mapfile", "mapfile -C 'rm v' -c 1 a < f"),
    ("readarray", "readarray -C 'rm v' -c 1 a < f"),
    ("compgen", "compgen -C 'rm v' x"),
    ("enable", "enable -f ./evil.so rm"),
    ("sg", "sg root -c 'rm v'"),
    ("watch", "watch -n 1 'rm v'"),
    ("find", "find . -exec rm v ;"),
    ("at", "at now <<< 'rm v'"),
    ("batch", "batch <<< 'rm v'"),
    ("ed", "ed f <<< '!rm v'"),
    ("crontab", "crontab f"),
    ("python", "python -c 'import os; os.remove(\"v\")'"),
    ("python2", "python2 - <<< 'import os'"),
    ("python3", "python3 -c 'import os; os.remove(\"v\")'"),
    ("pypy", "pypy -c 1"),
    ("pypy3", "pypy3"),
    ("perl", "perl -e 'unlink q(v)'"),
    ("ruby", "ruby -e 'File.delete(\"v\")'"),
    ("node", "node -e 'require(\"fs\").rmSync(\"v\")'"),
    ("nodejs", "nodejs -p 1"),
    ("php", "php -r 'unlink(\"v\");'"),
    ("lua", "lua -e 'os.remove(\"v\")'"),
    ("luajit", "luajit -e 'os.remove(\"v\")'"),
    ("tclsh", "tclsh /dev/stdin <<< 'file delete v'"),
    ("Rscript", "Rscript -e 'file.remove(\"v\")'"),
    ("julia", "julia -e 'rm(\"v\")'"),
    ("pwsh", "pwsh -c 'rm v'"),
    ("deno", "deno eval 'Deno.removeSync(\"v\")'"),
    ("bun", "bun -e 'require(\"fs\").rmSync(\"v\")'"),
    ("awk", "awk 'BEGIN{system(\"rm v\")}'"),
    ("gawk", "gawk -e 'BEGIN{system(\"rm v\")}'"),
    ("mawk", "mawk 'BEGIN{print \"rm v\" | \"sh\"}'"),
    ("nawk", "nawk 'BEGIN{system(\"rm v\")}'"),
    ("sed", "sed -n '1e rm v' f"),
    ("sqlite3", "sqlite3 db '.shell rm v'"),
    ("make", "make -f /dev/stdin <<< 'x:; rm v'"),
    ("gmake", "gmake SHELL=/bin/rm x"),
    ("npm", "npm exec -- rimraf v"),
    ("pnpm", "pnpm dlx rimraf v"),
    ("yarn", "yarn dlx rimraf v"),
    (
        "tar",
        "tar -cf /dev/null --checkpoint=1 --checkpoint-action=exec='rm v' .",
    ),
    ("rsync", "rsync -e 'rm v' a host:b"),
    ("nc", "nc -e /bin/rm host 1"),
    ("ncat", "ncat --sh-exec 'rm v' host 1"),
    ("netcat", "netcat -c 'rm v' host 1"),
    ("ssh", "ssh host rm v"),
    ("docker", "docker run --rm img rm v"),
    ("podman", "podman exec c rm v"),
    ("kubectl", "kubectl exec pod -- rm v"),
    ("git", "git -c alias.x='!rm v' x"),
];

/// More lines of the issue and variants: each runs `rm v`, or code that cannot be read.
const MORE: &[&str] = &[
    "setpriv rm v",
    "prlimit rm v",
    "fakeroot rm v",
    "setarch x86_64 rm v",
    "chrt --rr 5 rm v",
    "ssh-agent rm v",
    "dbus-run-session --dbus-daemon=/tmp/d ls",
    "sg root 'rm v'",
    "sg - root -c 'rm v'",
    "trap -- 'rm v' EXIT",
    "coproc rm v; wait",
    "alias d='rm v'",
    "sed 's/x/rm v/e' f",
    "sed --expression='1e rm v' f",
    "make --eval='x:; rm v' x",
    "make SHELL=/bin/rm x",
    "git -c core.fsmonitor='rm v' status",
    "git -c diff.external=/bin/rm diff",
    "git --config-env=alias.x=X x",
    "git --exec-path=/tmp/x status",
    "git --git-dir=/tmp/evil/.git status",
    "git submodule foreach 'rm v'",
    "git submodule --quiet foreach --recursive rm v",
    "git rebase -x 'rm v' HEAD~1",
    "git rebase --exec='rm v' main",
    "git rebase -ix 'rm v' main",
    "git bisect run rm v",
    "git difftool -x 'rm v'",
    "git clone --upload-pack='rm v' a b",
    "git clone -u 'rm v' a b",
    "git fetch --upload-pack='rm v' origin",
    "git grep -O'rm v' x",
    "git config alias.x '!rm v'",
    "git config --local core.fsmonitor 'rm v'",
    "git $x",
    "/usr/bin/git -c alias.x='!rm v' x",
    "timeout $t v",
    "python3 $f",
    "python3.12 -c 1",
    "perl -Mstrict -e 1",
    "node",
    "awk -f /dev/stdin f",
    "ssh -o ProxyCommand='rm v' host",
    "ssh -oLocalCommand='rm v' host",
    "docker compose up",
    "tar -xf a.tar --to-command='rm v'",
    "tar -I 'rm v' -xf a.tar",
    "rsync --rsh='rm v' a host:b",
    "time rm v",
    "coproc c { rm v; }",
    "coproc { rm v; }",
    "coproc ( rm v )",
    "sudo git -c alias.x='!rm v' x",
    "xargs git -c alias.x='!rm v' x",
    "nohup sed -n '1e rm v' f",
    "PAGER='rm v' git log",
    "GIT_CONFIG_PARAMETERS=\"'alias.x=!rm v'\" git x",
    "export GIT_EXTERNAL_DIFF=/bin/rm; git diff",
    "EDITOR='rm v'; git commit",
    "declare -x GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x; git x",
    "env GIT_SSH_COMMAND='rm v' git fetch",
    "LD_PRELOAD=./x.so ls",
    "PATH=.:$PATH; ls",
];

/// Lines through programs of the table that run nothing the rules cannot see.
const RUNS_ONLY_ITSELF: &[&str] = &[
    "git status",
    "git log --oneline -5",
    "git commit -m 'x y'",
    "git config user.name",
    "git config --get core.hooksPath",
    "git -C sub status",
    "git --no-pager diff",
    "git add *.rs",
    "python3 script.py",
    "python3 -m pytest -q",
    "make test",
    "make -j4 all",
    "sed -i 's/a/b/' f",
    "awk '{print $1}' f",
    "chrt -p 1",
    "taskset -p 1",
    "ssh-agent -k",
    "prlimit -p 1",
    "tar -xf a.tar",
    "docker ps",
    "npm test",
    "trap - EXIT",
    "hash",
    "alias",
    "sqlite3 db 'select 1'",
];

fn decide(rules: &[(RuleList, &str)], line: &str) -> Decision {
    let mut all = PermissionRules::new(&crate::rule_vocabulary());
    for (list, rule) in rules {
        all.add(*list, rule);
    }
    all.evaluate(
        "run_shell_command",
        &PermissionSubject::Commands(parse(line).rule_subjects()),
    )
}

/// The rule "always" would write for the outer program, by the name of the table.
pub(super) fn outer_rule(name: &str) -> String {
    format!("Bash({name} *)")
}

/// What is wrong with `line` through `outer` (empty when nothing is).
fn problems(outer: &str, line: &str) -> Vec<String> {
    let mut wrong = Vec::new();
    for (list, want) in [
        (RuleList::Deny, Decision::Deny),
        (RuleList::Ask, Decision::Ask),
    ] {
        let got = decide(&[(list, "Bash(rm *)")], line);
        if got != want {
            wrong.push(format!("{line:?}: {list:?} Bash(rm *) gave {got:?}"));
        }
    }
    let got = decide(&[(RuleList::Allow, &outer_rule(outer))], line);
    if got == Decision::Allow {
        wrong.push(format!("{line:?}: approved by {}", outer_rule(outer)));
    }
    // As the shell tool's question: a line setting a program variable offers no rule.
    let parsed = parse(line);
    let root = |c: &&super::SimpleCommand| {
        c.root() == outer || c.words.first().is_some_and(|w| w == outer)
    };
    if parsed.program_variable.is_none()
        && let Some(c) = parsed.commands.iter().find(root)
        && let Some(rule) = rule_root(c)
    {
        wrong.push(format!("{line:?}: \"always\" would remember {rule}"));
    }
    wrong
}

#[test]
fn every_program_that_runs_another_is_judged_by_what_it_runs() {
    let listed: BTreeSet<&str> = THROUGH_EACH.iter().map(|(n, _)| *n).collect();
    let table: BTreeSet<&str> = RUNNERS.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        table.difference(&listed).collect::<Vec<_>>(),
        Vec::<&&str>::new(),
        "entries of the table without a line here"
    );
    assert_eq!(table.len(), RUNNERS.len(), "a name is twice in the table");
    let mut wrong = Vec::new();
    for (outer, line) in THROUGH_EACH {
        wrong.extend(problems(outer, line));
    }
    for line in MORE {
        let outer = parse(line).commands[0].root().to_string();
        wrong.extend(problems(&outer, line));
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

#[test]
fn forms_that_run_only_the_program_keep_their_allow_rule_and_escape_a_deny_for_another() {
    let mut wrong = Vec::new();
    for line in RUNS_ONLY_ITSELF {
        let outer = parse(line).commands[0].root().to_string();
        let got = decide(&[(RuleList::Deny, "Bash(rm *)")], line);
        if got != Decision::Default {
            wrong.push(format!("{line:?}: deny rm gave {got:?}"));
        }
        if decide(&[(RuleList::Allow, &outer_rule(&outer))], line) != Decision::Allow {
            wrong.push(format!("{line:?}: not approved by {}", outer_rule(&outer)));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
    // git's own forms keep their "always" rule; its code forms have none.
    assert_eq!(
        rule_root(&parse("git status").commands[0]).as_deref(),
        Some("git")
    );
}

/// Forms of the table's programs that run `{}` (the inner command): the program, what
/// comes first, options drawn from its own (any number, any order), and the rest.
fn runner_form() -> impl Strategy<Value = (String, String)> {
    type Form = (&'static str, &'static str, Vec<&'static str>, &'static str);
    let forms: Vec<Form> = vec![
        (
            "setpriv",
            "",
            vec!["--nnp", "--reuid=1", "--clear-groups", "--reset-env"],
            "{}",
        ),
        (
            "prlimit",
            "",
            vec!["--nofile=9", "-n9", "--cpu=1", "--as=100000"],
            "{}",
        ),
        ("fakeroot", "", vec!["-u", "-l lib.so", "--faked x"], "{}"),
        (
            "setarch",
            "x86_64",
            vec!["-R", "--addr-no-randomize", "-3", "--verbose"],
            "{}",
        ),
        ("linux64", "", vec!["-R", "--verbose", "-B"], "{}"),
        ("chrt", "", vec!["-o", "--rr", "-f", "-b", "-R"], "0 {}"),
        ("taskset", "", vec!["-c", "-a"], "1 {}"),
        ("ssh-agent", "", vec!["-s", "-c", "-t 5", "-a sock"], "{}"),
        (
            "dbus-run-session",
            "",
            vec!["--config-file=x", "--config-file x"],
            "{}",
        ),
        (
            "sudo",
            "",
            vec!["-u root", "-E", "--preserve-env", "-n", "-iu x"],
            "{}",
        ),
        ("env", "", vec!["-i", "-u X", "--chdir=/"], "A=1 {}"),
        (
            "timeout",
            "",
            vec!["-s KILL", "--kill-after=1", "-v", "--foreground"],
            "5 {}",
        ),
        ("nice", "", vec!["-n 5", "--adjustment=1"], "{}"),
        ("stdbuf", "", vec!["-oL", "-i0", "--error=L"], "{}"),
        ("ionice", "", vec!["-c 3", "-n 7", "-t"], "{}"),
        ("setsid", "", vec!["-f", "-w", "--fork"], "{}"),
        ("xargs", "", vec!["-0", "-n1", "-P 2", "-r"], "{}"),
        ("sg", "root", vec![], "-c '{}'"),
        ("trap", "", vec![], "-- '{}' EXIT"),
        ("eval", "", vec![], "'{}'"),
        ("coproc", "", vec![], "{}"),
        ("bash", "", vec!["-c", "-lc", "--norc", "-e"], "-c '{}'"),
        (
            "git",
            "",
            vec![
                "-c alias.x='!{}' x",
                "-c core.fsmonitor='{}' status",
                "-c diff.external='{}' diff",
                "submodule foreach '{}'",
                "rebase -x '{}' main",
                "-C sub -c alias.y='!{}' y",
                "bisect run {}",
            ],
            "",
        ),
        (
            "awk",
            "",
            vec!["-F:", "-v x=1", "--posix"],
            "'BEGIN{system(\"{}\")}'",
        ),
        ("sed", "", vec!["-n", "-E", "--posix", "-i"], "'1e {}' f"),
        ("make", "", vec!["-s", "-k", "-j2"], "-f /dev/stdin x"),
        ("make", "", vec!["-s", "-k", "-j2"], "--eval='x:;{}' x"),
        ("make", "", vec!["-s", "-k", "-j2"], "SHELL='{}' x"),
        (
            "python3",
            "",
            vec!["-u", "-B", "-I"],
            "-c 'import os; os.system(\"{}\")'",
        ),
        ("perl", "", vec!["-w", "-Mstrict"], "-e 'system(q({}))'"),
        (
            "find",
            ".",
            vec!["-name x", "-type f", "-maxdepth 1"],
            "-exec {} ;",
        ),
        ("hash", "", vec![], "-p /bin/{} del"),
    ];
    let inner = prop::sample::select(vec!["rm v", "rm -rf v", "/bin/rm v", "r\\m v", "'rm' v"]);
    (prop::sample::select(forms), inner).prop_flat_map(|((outer, first, options, tail), inner)| {
        let program = inner.to_string();
        let options = if options.is_empty() {
            vec![""]
        } else {
            options
        };
        // git's options hold the command: at least one is drawn.
        let least = usize::from(outer == "git");
        prop::collection::vec(prop::sample::select(options), least..3).prop_map(move |chosen| {
            let body = chosen.join(" ").replace("{}", &program);
            let tail = tail.replace("{}", &program);
            (outer.to_string(), format!("{outer} {first} {body} {tail}"))
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// No drawn line through a program that runs another is approved by an allow rule
    /// for the outer program, escapes a deny or ask rule for `rm`, or gets an "always"
    /// rule.
    #[test]
    fn an_allow_rule_for_the_outer_program_never_approves_what_it_runs((outer, line) in runner_form()) {
        let wrong = problems(&outer, &line);
        prop_assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
    }
}
