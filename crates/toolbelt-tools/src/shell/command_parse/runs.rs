//! What a simple command runs besides itself, as the permission rules need to know it.
//!
//! A deny rule names a program (`run_shell_command(rm)`), and the shell offers many ways
//! to run a program without writing its name first: a wrapper (`sudo rm`, `env -u X rm`,
//! `timeout 5 rm`, `xargs rm`, `find -exec rm`), a shell or `eval` given the command as
//! text (`sh -c 'rm x'`, `eval 'rm x'`), or a name only the running shell knows (`$x`,
//! `/usr/bin/[r]m`, `{rm,}`). The shell tool reads all of these here, so the rules
//! engine (which knows no shell syntax) only compares texts:
//!
//! - a wrapper whose command can be read gives that command as one more subject, judged
//!   by every rule like the outer one (`sudo -u x rm y` is judged as `rm y` too);
//! - a program name that is not a literal, or a wrapper whose command cannot be read
//!   (`env -S 'rm x'`, `bash` reading its script from standard input, `sh -c "$x"`),
//!   makes the command *unreadable*, with a reason: every deny and ask rule of the shell
//!   then covers it (fail closed, see `toolbelt_core::ShellCommand::unreadable`);
//! - a command that can run any program it is given (the wrappers, shells, `eval`,
//!   interpreters) gets no "always allow" rule: `run_shell_command(sudo *)` would
//!   approve everything.

use super::getopt::OptionTable;
use super::word::{self, WordShape};
use super::wrapper_options::*;
use super::{SimpleCommand, parse};

/// How deep wrappers and nested scripts are followed; deeper is unreadable.
const MAX_DEPTH: usize = 6;

/// What [`runs`] found for one simple command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Runs {
    /// The commands run through a wrapper or a script given as text, in order.
    pub inner: Vec<SimpleCommand>,
    /// Why what runs cannot be read, for messages.
    pub unreadable: Option<String>,
    /// The command can run any program it is told to (no "always allow" rule for it).
    pub runs_anything: bool,
}

/// Programs that run what their arguments (or input) say, with no wrapper grammar of
/// their own here: an "always" rule for them approves everything.
const RUNS_ANYTHING: &[&str] = &[
    "awk", "bun", "busybox", "deno", "gawk", "lua", "mawk", "node", "nodejs", "perl", "php",
    "python", "python2", "python3", "ruby", "ssh", "docker", "podman", "kubectl", "make",
];

/// Programs that run a command given in their arguments, in a grammar not read here: what
/// they run cannot be read, so every deny and ask rule covers them (and they get no
/// "always" rule).
const UNREAD_WRAPPERS: &[&str] = &[
    "chroot",
    "flock",
    "gdb",
    "ltrace",
    "nsenter",
    "parallel",
    "runuser",
    "script",
    "strace",
    "su",
    "unshare",
    "valgrind",
    "firejail",
    "bwrap",
    "systemd-run",
    "pkexec",
    "catchsegv",
];

/// Shells: with `-c` their script is the next operand; without a script operand (or
/// with `-s`) they read commands from standard input, which no rule can see.
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "yash", "fish", "csh", "tcsh",
];

/// What `command` runs.
pub(crate) fn runs(command: &SimpleCommand) -> Runs {
    let mut out = Runs::default();
    follow(&command.raw, &command.words, 0, &mut out);
    out
}

fn follow(raw: &[String], words: &[String], depth: usize, out: &mut Runs) {
    let (Some(name_raw), Some(name_word)) = (raw.first(), words.first()) else {
        return;
    };
    if depth > MAX_DEPTH {
        out.unreadable = Some("its commands are nested too deeply to follow".to_string());
        return;
    }
    let shape = word::shape(name_raw);
    if shape != WordShape::Literal {
        out.unreadable = Some(format!(
            "its program name `{name_raw}` is {}",
            shape.describe()
        ));
        return;
    }
    let name = name_word.rsplit('/').next().unwrap_or(name_word);
    if RUNS_ANYTHING.contains(&name) {
        out.runs_anything = true;
    }
    if UNREAD_WRAPPERS.contains(&name) && words.len() > 1 {
        out.runs_anything = true;
        out.unreadable = Some(format!(
            "`{name}` runs a command given in its arguments, which this check does not read"
        ));
        return;
    }
    if name == "source" || name == "." {
        out.runs_anything = true;
        script_file(raw.get(1), words.get(1), name, out);
    } else if name == "watch" {
        out.runs_anything = true;
        match WATCH.parse(&words[1..]) {
            Ok(p) => {
                let start = 1 + p.first_operand.unwrap_or(words.len());
                if start < words.len() {
                    let text = words[start..].join(" ");
                    script(&raw[start..], &text, name, depth, out);
                }
            }
            Err(e) => {
                out.unreadable = Some(format!("the options of `watch` cannot be read ({e})"));
            }
        }
    } else if name == "eval" {
        out.runs_anything = true;
        let text = words[1..].join(" ");
        script(&raw[1..], &text, name, depth, out);
    } else if SHELLS.contains(&name) {
        out.runs_anything = true;
        shell(raw, words, depth, out);
    } else if name == "find" {
        find_exec(raw, words, depth, out);
    } else if let Some(wrapper) = wrapper(name) {
        out.runs_anything = true;
        wrapped(&wrapper, raw, words, depth, out);
    }
}

/// A command given as text (`eval`'s words, `sh -c`'s script): its own commands.
fn script(raw: &[String], text: &str, by: &str, depth: usize, out: &mut Runs) {
    if let Some(r) = raw.iter().find(|r| word::shape(r) != WordShape::Literal) {
        out.unreadable = Some(format!(
            "the command `{by}` runs is given by `{r}`, which is {}",
            word::shape(r).describe()
        ));
        return;
    }
    let parsed = parse(text);
    if parsed.syntax_error {
        out.unreadable = Some(format!("the command `{by}` runs does not parse"));
    }
    for inner in parsed.commands {
        follow(&inner.raw, &inner.words, depth + 1, out);
        out.inner.push(inner);
    }
}

/// `sh -c SCRIPT`, `bash -lc SCRIPT`, `sh file`, `sh` (standard input).
fn shell(raw: &[String], words: &[String], depth: usize, out: &mut Runs) {
    let mut with_c = false;
    let mut i = 1;
    while let Some(arg) = words.get(i) {
        if arg == "--" || arg == "-" {
            i += 1;
            break;
        }
        let Some(letters) = arg.strip_prefix('-').or_else(|| arg.strip_prefix('+')) else {
            break;
        };
        if letters.starts_with('-') {
            // `--norc`, `--login`: no value. `--rcfile F` / `--init-file F` take one.
            i += if matches!(letters, "-rcfile" | "-init-file") {
                2
            } else {
                1
            };
            continue;
        }
        if letters.contains('s') {
            out.unreadable = Some(format!(
                "`{}` reads its commands from standard input",
                words[0]
            ));
            return;
        }
        with_c |= letters.contains('c');
        // `-o OPTION` and `-O OPTION` take the next word.
        i += if letters.ends_with(['o', 'O']) { 2 } else { 1 };
    }
    match (with_c, words.get(i)) {
        (true, Some(text)) => script(&raw[i..=i], text, &words[0], depth, out),
        (true, None) => {}
        // A script file is a program like any other, unless it is standard input again
        // (`bash /dev/stdin <<< 'rm x'`) or only known at run time (`bash <(…)`).
        (false, Some(_)) => script_file(raw.get(i), words.get(i), &words[0], out),
        (false, None) => {
            out.unreadable = Some(format!(
                "`{}` reads its commands from standard input",
                words[0]
            ));
        }
    }
}

/// The script file a shell or `source` runs: unreadable when it is standard input or a
/// descriptor (`/dev/stdin`, `/dev/fd/0`, `-`), or not a literal name.
fn script_file(raw: Option<&String>, word: Option<&String>, by: &str, out: &mut Runs) {
    let (Some(raw), Some(word)) = (raw, word) else {
        return;
    };
    if word::shape(raw) != WordShape::Literal {
        out.unreadable = Some(format!(
            "the script `{by}` runs is `{raw}`, which is {}",
            word::shape(raw).describe()
        ));
    } else if word == "-"
        || [
            "/dev/stdin",
            "/dev/fd/",
            "/proc/self/fd/",
            "/dev/tcp/",
            "/dev/udp/",
        ]
        .iter()
        .any(|p| word.starts_with(p))
    {
        out.unreadable = Some(format!("`{by}` reads its commands from `{word}`"));
    }
}

/// `find … -exec CMD … ;` (and `-execdir`, `-ok`, `-okdir`): each CMD.
fn find_exec(raw: &[String], words: &[String], depth: usize, out: &mut Runs) {
    let mut i = 1;
    while i < words.len() {
        if matches!(words[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            out.runs_anything = true;
            let start = i + 1;
            let end = (start..words.len())
                .find(|j| matches!(words[*j].as_str(), ";" | "+"))
                .unwrap_or(words.len());
            if start < end {
                push_inner(&raw[start..end], &words[start..end], depth, out);
            }
            i = end;
        }
        i += 1;
    }
}

fn push_inner(raw: &[String], words: &[String], depth: usize, out: &mut Runs) {
    out.inner.push(SimpleCommand {
        text: raw.join(" "),
        words: words.to_vec(),
        assignments: Vec::new(),
        raw: raw.to_vec(),
    });
    follow(raw, words, depth + 1, out);
}

/// A wrapper's grammar: its options, how many operands come before the command it runs,
/// and which options make the command unreadable.
struct Wrapper {
    table: OptionTable,
    operands_before: usize,
    /// Options after which the command is a string the wrapper splits itself.
    splits: &'static [(char, &'static str)],
    /// Options after which nothing runs (`command -v rm` prints where rm is).
    runs_nothing: &'static [char],
    /// `NAME=value` operands are the environment, not the command (`env`).
    assignments: bool,
}

fn wrapper(name: &str) -> Option<Wrapper> {
    let plain = |table| Wrapper {
        table,
        operands_before: 0,
        splits: &[],
        runs_nothing: &[],
        assignments: false,
    };
    Some(match name {
        "env" => Wrapper {
            splits: &[('S', "split-string")],
            assignments: true,
            ..plain(ENV)
        },
        "command" | "builtin" => Wrapper {
            runs_nothing: &['v', 'V'],
            ..plain(COMMAND)
        },
        "exec" => plain(EXEC),
        "nice" => plain(NICE),
        "nohup" | "setsid" | "chronic" | "time" => plain(NOTHING),
        "stdbuf" => plain(STDBUF),
        "ionice" => plain(IONICE),
        "timeout" => Wrapper {
            operands_before: 1,
            ..plain(TIMEOUT)
        },
        "sudo" | "doas" => plain(SUDO),
        "xargs" => plain(XARGS),
        "taskset" => Wrapper {
            operands_before: 1,
            ..plain(NOTHING)
        },
        _ => return None,
    })
}

fn wrapped(w: &Wrapper, raw: &[String], words: &[String], depth: usize, out: &mut Runs) {
    let name = &words[0];
    let parsed = match w.table.parse(&words[1..]) {
        Ok(p) => p,
        Err(e) => {
            out.unreadable = Some(format!("the options of `{name}` cannot be read ({e})"));
            return;
        }
    };
    // `xargs -I R CMD`: R in CMD's name is replaced by what arrives on standard input.
    let mut replaced: Option<String> = None;
    for o in &parsed.options {
        if name.ends_with("xargs") && (o.is('I', "") || o.is('i', "replace")) {
            replaced = Some(o.value.clone().unwrap_or_else(|| "{}".to_string()));
        }
        if let Some((s, l)) = w.splits.iter().find(|(s, l)| o.is(*s, l)) {
            out.unreadable = Some(format!(
                "`{name} -{s}` (`--{l}`) splits a string into the command it runs"
            ));
            return;
        }
        if o.short.is_some_and(|s| w.runs_nothing.contains(&s)) {
            return;
        }
    }
    let Some(first) = parsed.first_operand else {
        return; // nothing runs (`env` prints, `xargs` alone runs echo)
    };
    let mut start = 1 + first + w.operands_before;
    // `env -` is `env -i`.
    if w.assignments && words.get(start).is_some_and(|a| a == "-") {
        start += 1;
    }
    while w.assignments && words.get(start).is_some_and(|a| is_assignment(a)) {
        start += 1;
    }
    if let (Some(r), Some(program)) = (&replaced, words.get(start))
        && program.contains(r.as_str())
    {
        out.unreadable = Some(format!(
            "the program `{name}` runs is named by its input (`{r}`)"
        ));
        return;
    }
    if start < words.len() {
        push_inner(&raw[start..], &words[start..], depth, out);
    }
}

/// The program name an "always allow" answer may remember for `command` (its rule is
/// `run_shell_command(<name> *)`): the bare name, or the name of a program in a system
/// directory; a program named by any other path keeps its path (approving
/// `/ws/bin/git status` must not approve the system `git`). `None` when no such rule
/// may be formed: an environment prefix, a name that is not a literal, or a program
/// that runs whatever it is given (wrappers, shells, `eval`, interpreters,
/// `find -exec`), for which the rule would approve everything.
pub(crate) fn rule_root(command: &SimpleCommand) -> Option<String> {
    if !command.assignments.is_empty() {
        return None;
    }
    let found = runs(command);
    if found.runs_anything || found.unreadable.is_some() {
        return None;
    }
    let word = command.words.first()?;
    if word.is_empty() {
        return None;
    }
    Some(match word.rsplit_once('/') {
        Some((dir, base)) if toolbelt_core::SYSTEM_BIN_DIRS.contains(&dir) && !base.is_empty() => {
            base.to_string()
        }
        _ => word.clone(),
    })
}

/// `NAME=value` with a valid shell variable name.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        name.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}
