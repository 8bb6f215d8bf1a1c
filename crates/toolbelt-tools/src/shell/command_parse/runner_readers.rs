//! The readers of [`super::runners::RUNNERS`] whose programs say in their own grammar
//! what they run: shells, builtins that evaluate, interpreters, build tools, and the
//! programs with an option that runs a command (`tar --to-command`, `rsync -e`).
//!
//! Each reader either finds the command (and gives it as a subject of its own), or
//! marks the call unreadable with a reason, or finds that this form runs nothing but
//! the program itself. Where a grammar is only partly read, a form it does not know is
//! unreadable: a deny rule covering too much is the safe mistake.

use super::getopt::may_abbreviate;
use super::runner_options::{MAKE, SSH};
use super::runs::{Call, Runs, is_standard_input, push_inner, script, script_file};
use super::wrapper_options::NO_OPTIONS;
use super::wrapper_options::WATCH;
use crate::shell::read_only::checks::awk_program_is_inert;
use crate::shell::read_only::options;
use crate::shell::read_only::sed::script_is_inert as sed_script_is_inert;

/// `sh -c SCRIPT`, `bash -lc SCRIPT`, `sh file`, `sh` (standard input).
pub(super) fn shell(call: &Call, out: &mut Runs) {
    out.runs_anything = true;
    let (raw, words) = (call.raw, call.words);
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
        (true, Some(text)) => script(&raw[i..=i], text, &words[0], call.depth, out),
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

/// `eval WORDS`: the words joined are a script.
pub(super) fn eval(call: &Call, out: &mut Runs) {
    out.runs_anything = true;
    script(
        &call.raw[1..],
        &call.args().join(" "),
        call.name,
        call.depth,
        out,
    );
}

/// `source FILE`, `. FILE`.
pub(super) fn source(call: &Call, out: &mut Runs) {
    out.runs_anything = true;
    script_file(call.raw.get(1), call.words.get(1), call.name, out);
}

/// `trap ACTION SIGNAL…`: the action is a script run later in this shell. `trap`,
/// `trap -l`, `trap -p` list; `trap - SIG` resets.
pub(super) fn trap(call: &Call, out: &mut Runs) {
    let i = match call.words.get(1).map(String::as_str) {
        Some("-l" | "-p" | "-P") => return,
        Some("--") => 2,
        _ => 1,
    };
    match call.words.get(i).map(String::as_str) {
        None | Some("-") | Some("") => {}
        Some(action) => script(&call.raw[i..=i], action, "trap", call.depth, out),
    }
}

/// `coproc CMD…` runs CMD; `coproc NAME { …; }` and `coproc ( … )` run a compound
/// command, which the grammar does not hand over whole: unreadable.
pub(super) fn coproc(call: &Call, out: &mut Runs) {
    let compound = |w: &String| w.starts_with(['{', '(']) || w == "}";
    if call.args().iter().take(2).any(compound) {
        return out.unread("`coproc` runs a compound command this check does not read".to_string());
    }
    if call.words.len() > 1 {
        match NO_OPTIONS.parse(call.args()) {
            Ok(_) => push_inner(&call.raw[1..], &call.words[1..], call.depth, out),
            Err(e) => out.unread(format!("the options of `coproc` cannot be read ({e})")),
        }
    }
}

/// `alias NAME=VALUE`: the value is a command that runs wherever NAME is used (with
/// `shopt -s expand_aliases`, or in `eval`); judged as that command. `alias` and
/// `alias NAME` print.
pub(super) fn alias(call: &Call, out: &mut Runs) {
    for (at, word) in call.words.iter().enumerate().skip(1) {
        if let Some((_, value)) = word.split_once('=') {
            script(&call.raw[at..=at], value, "alias", call.depth, out);
        }
    }
}

/// `hash -p PATH NAME` makes NAME run PATH: a later command's name no longer says
/// what it runs.
pub(super) fn hash(call: &Call, out: &mut Runs) {
    let gives_a_path = call
        .args()
        .iter()
        .take_while(|a| a.starts_with('-') && *a != "--")
        .any(|a| a.contains('p'));
    if gives_a_path {
        out.unread("`hash -p` makes a name run another program".to_string());
    }
}

/// A program or builtin that runs what no argument shows: commands from standard
/// input (`at`, `ed`), history (`fc`), or arithmetic whose subscripts run commands
/// (`let`).
pub(super) fn always_unread(call: &Call, out: &mut Runs) {
    out.unread(format!(
        "`{}` runs commands this check cannot read (from standard input, history or arithmetic)",
        call.name
    ));
}

/// `mapfile -C CALLBACK`, `compgen -C COMMAND` / `-F FUNCTION`: a command given as an
/// option's value.
pub(super) fn callback(call: &Call, out: &mut Runs) {
    let letters: &[char] = if call.name == "compgen" {
        &['C', 'F']
    } else {
        &['C']
    };
    if call
        .args()
        .iter()
        .any(|a| a.starts_with('-') && a.contains(letters))
    {
        out.unread(format!("`{}` is given a command to call", call.name));
    }
}

/// `enable -f LIBRARY NAME` loads a builtin from a shared library.
pub(super) fn enable(call: &Call, out: &mut Runs) {
    if call
        .args()
        .iter()
        .any(|a| a.starts_with('-') && a.contains('f'))
    {
        out.unread("`enable -f` loads code from a shared library".to_string());
    }
}

/// `sg [-] GROUP [-c] COMMAND`: the command is a string `/bin/sh -c` runs.
pub(super) fn sg(call: &Call, out: &mut Runs) {
    let mut i = 1;
    if call.words.get(i).is_some_and(|a| a == "-") {
        i += 1;
    }
    i += 1; // the group
    if call.words.get(i).is_some_and(|a| a == "-c") {
        i += 1;
    }
    match call.words.get(i) {
        Some(text) => script(&call.raw[i..=i], text, "sg", call.depth, out),
        None if call.words.len() > 1 => {
            out.unread("`sg` without a command starts a shell".to_string());
        }
        None => {}
    }
}

/// `watch [options] COMMAND…`: the words are a script for `sh -c`.
pub(super) fn watch(call: &Call, out: &mut Runs) {
    out.runs_anything = true;
    match WATCH.parse(call.args()) {
        Ok(p) => {
            let start = 1 + p.first_operand.unwrap_or(call.words.len());
            if start < call.words.len() {
                let text = call.words[start..].join(" ");
                script(&call.raw[start..], &text, "watch", call.depth, out);
            }
        }
        Err(e) => out.unreadable = Some(format!("the options of `watch` cannot be read ({e})")),
    }
}

/// `find … -exec CMD … ;` (and `-execdir`, `-ok`, `-okdir`): each CMD.
pub(super) fn find_exec(call: &Call, out: &mut Runs) {
    let (raw, words) = (call.raw, call.words);
    let mut i = 1;
    while i < words.len() {
        if matches!(words[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            out.runs_anything = true;
            let start = i + 1;
            let end = (start..words.len())
                .find(|j| matches!(words[*j].as_str(), ";" | "+"))
                .unwrap_or(words.len());
            if start < end {
                push_inner(&raw[start..end], &words[start..end], call.depth, out);
            }
            i = end;
        }
        i += 1;
    }
}

/// `crontab FILE` (or standard input) installs commands that run later; `crontab -l`
/// lists.
pub(super) fn crontab(call: &Call, out: &mut Runs) {
    if call.args().iter().all(|a| a == "-l") && !call.args().is_empty() {
        return;
    }
    out.unread("`crontab` installs commands that run later".to_string());
}

/// Options of an interpreter that take no code and no file (`python3 -u script.py`).
fn plain_options(name: &str) -> &'static [&'static str] {
    match name {
        n if is_python(n) => &[
            "-u", "-B", "-O", "-OO", "-E", "-s", "-S", "-I", "-q", "-b", "-bb", "-P",
        ],
        "perl" => &["-w", "-W", "-X", "-T", "-t", "-s"],
        "ruby" => &["-w", "-W", "-v", "--verbose"],
        "node" | "nodejs" => &[
            "--test",
            "--no-warnings",
            "--trace-warnings",
            "--enable-source-maps",
        ],
        _ => &[],
    }
}

fn is_python(name: &str) -> bool {
    name.starts_with("python") || name.starts_with("pypy")
}

/// An interpreter (`python3`, `perl`, `node`…): a script file is a program like any
/// other; code in an option (`-c`, `-e`, `-r`), standard input, or any option not known
/// to take neither cannot be read. `-m MODULE` (python) names a module to run.
pub(super) fn interpreter(call: &Call, out: &mut Runs) {
    out.runs_anything = true;
    let args = call.args();
    if matches!(
        args,
        [a] if matches!(a.as_str(), "--version" | "-V" | "--help" | "-h" | "-v")
    ) {
        return;
    }
    let plain = plain_options(call.name);
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if a == "--" {
            i += 1;
            break;
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        if plain.contains(&a.as_str()) {
            i += 1;
            continue;
        }
        if a == "-m" && is_python(call.name) && args.get(i + 1).is_some() {
            call.unread_if_not_literal(i + 2, out);
            return;
        }
        out.unread(format!(
            "`{} {a}` runs code given in its arguments, or this check does not know the option",
            call.name
        ));
        return;
    }
    if args.get(i).is_none() {
        out.unreadable = Some(format!(
            "`{}` reads its program from standard input",
            call.name
        ));
        return;
    }
    script_file(call.raw.get(i + 1), args.get(i), call.name, out);
}

/// `deno` and `bun`: `eval`, `repl`, `x`, `exec`, `-e`/`--eval`, `-p`/`--print` run
/// code given as text or fetched by name; `run FILE` and the other subcommands run the
/// project's files.
pub(super) fn js_runtime(call: &Call, out: &mut Runs) {
    out.runs_anything = true;
    let code = ["eval", "repl", "x", "exec", "-e", "--eval", "-p", "--print"];
    if call.args().is_empty()
        || call
            .args()
            .iter()
            .any(|a| code.contains(&a.as_str()) || is_standard_input(a))
    {
        out.unread(format!(
            "`{}` runs code given as text or fetched by name",
            call.name
        ));
    } else {
        call.unread_if_not_literal(1, out);
    }
}

/// `npm exec`, `npm x`, `pnpm dlx`, `yarn dlx` (and `pnpm exec`, `yarn exec`) run a
/// command or a package fetched by name; other subcommands run the project's scripts.
pub(super) fn package_manager(call: &Call, out: &mut Runs) {
    let sub = call.args().iter().find(|a| !a.starts_with('-'));
    if sub.is_some_and(|s| matches!(s.as_str(), "exec" | "x" | "dlx" | "create" | "init")) {
        out.unread(format!(
            "`{} {}` runs a command or a package fetched by name",
            call.name,
            sub.map_or("", |s| s.as_str())
        ));
    }
}

/// gawk's options; the program text (`-e`/`--source`, or the first operand) must be one
/// that runs no command (`system`, pipes, `getline`: see `awk_program_is_inert`); a
/// program file is a program like any other.
pub(super) fn awk(call: &Call, out: &mut Runs) {
    out.runs_anything = true;
    if call.unread_if_not_literal(1, out) {
        return;
    }
    let parsed = match options::AWK.parse(call.args()) {
        Ok(p) => p,
        Err(e) => {
            return out.unread(format!(
                "the options of `{}` cannot be read ({e})",
                call.name
            ));
        }
    };
    let mut programs = Vec::new();
    let mut file = false;
    for o in &parsed.options {
        if o.is('f', "file") || o.is('i', "include") {
            file = true;
            if o.value.as_deref().is_some_and(is_standard_input) {
                return out.unread(format!(
                    "`{}` reads its program from standard input",
                    call.name
                ));
            }
        }
        if o.is('E', "exec") || o.is('l', "load") {
            return out.unread(format!("`{}` loads code this check cannot read", call.name));
        }
        if o.is('e', "source") {
            programs.extend(o.value.as_deref());
        }
    }
    if programs.is_empty() && !file {
        programs.extend(parsed.operands.first().map(String::as_str));
    }
    if !programs.iter().all(|p| awk_program_is_inert(p)) {
        out.unread(format!(
            "the `{}` program can run commands (`system`, a pipe or `getline`)",
            call.name
        ));
    }
}

/// GNU sed: a script with the `e` command or flag runs a command. A script that
/// writes or runs (sed.rs cannot tell which on every reading) and holds an `e` is taken
/// as running; a script file is a program like any other.
pub(super) fn sed(call: &Call, out: &mut Runs) {
    if call.unread_if_not_literal(1, out) {
        return;
    }
    let parsed = match options::SED.parse(call.args()) {
        Ok(p) => p,
        Err(e) => return out.unread(format!("the options of `sed` cannot be read ({e})")),
    };
    let mut scripts = Vec::new();
    let mut file = false;
    for o in &parsed.options {
        if o.is('f', "file") {
            file = true;
            if o.value.as_deref().is_some_and(is_standard_input) {
                return out.unread("`sed` reads its script from standard input".to_string());
            }
        }
        if o.is('e', "expression") {
            scripts.extend(o.value.as_deref());
        }
    }
    if scripts.is_empty() && !file {
        scripts.extend(parsed.operands.first().map(String::as_str));
    }
    if scripts
        .iter()
        .any(|s| !sed_script_is_inert(s) && s.contains('e'))
    {
        out.unread("the `sed` script can run a command (`e`)".to_string());
    }
}

/// `sqlite3`: dot commands (`.shell`, `.system`, `.once |cmd`) run programs; with no
/// SQL argument it reads standard input.
pub(super) fn sqlite(call: &Call, out: &mut Runs) {
    let args = call.args();
    let operands = args.iter().filter(|a| !a.starts_with('-')).count();
    let dot = args.iter().any(|a| {
        a.trim_start().starts_with('.') && !a.contains('/')
            || a.contains("\n.")
            || a == "-cmd"
            || a == "-init"
    });
    if dot || operands < 2 || call.non_literal_from(1).is_some() {
        out.unread("`sqlite3` can run programs through its dot commands".to_string());
    }
}

/// GNU make: the makefile is a program like any other; a makefile from standard input,
/// `--eval`, or a variable set on the command line (which the recipes run, `SHELL=`
/// among them) cannot be read.
pub(super) fn make(call: &Call, out: &mut Runs) {
    out.runs_anything = true;
    if call.unread_if_not_literal(1, out) {
        return;
    }
    let parsed = match MAKE.parse(call.args()) {
        Ok(p) => p,
        Err(e) => return out.unread(format!("the options of `make` cannot be read ({e})")),
    };
    for o in &parsed.options {
        if o.is('f', "file") && o.value.as_deref().is_some_and(is_standard_input) {
            return out.unread("`make` reads its makefile from standard input".to_string());
        }
        if o.is('E', "eval") {
            return out
                .unread("`make --eval` runs makefile text given in its arguments".to_string());
        }
    }
    if let Some(v) = parsed.operands.iter().find(|a| a.contains('=')) {
        out.unread(format!("`make {v}` sets a variable that the recipes run"));
    }
}

/// `tar` runs programs through `--to-command`, `--use-compress-program`/`-I`,
/// `--checkpoint-action=exec`, `--info-script`/`--new-volume-script`/`-F` and
/// `--rsh-command`.
pub(super) fn tar(call: &Call, out: &mut Runs) {
    const RUNS: &[&str] = &[
        "to-command",
        "use-compress-program",
        "checkpoint-action",
        "info-script",
        "new-volume-script",
        "rsh-command",
    ];
    let args = call.args();
    let runs = args.iter().enumerate().any(|(at, a)| {
        if let Some(long) = a.strip_prefix("--") {
            RUNS.iter().any(|r| may_abbreviate(long, r))
        } else if a.starts_with('-') || at == 0 {
            // `-I PROG`, `-F SCRIPT`, and the old style's first word (`tar cIf`).
            a.contains(['I', 'F'])
        } else {
            false
        }
    });
    if runs || call.non_literal_from(1).is_some() {
        out.unread("`tar` is given a program to run".to_string());
    }
}

/// `rsync -e CMD`/`--rsh=CMD` and `--rsync-path=CMD` run a command.
pub(super) fn rsync(call: &Call, out: &mut Runs) {
    let runs = call.args().iter().any(|a| {
        if let Some(long) = a.strip_prefix("--") {
            ["rsh", "rsync-path"]
                .iter()
                .any(|r| may_abbreviate(long, r))
        } else {
            a.starts_with('-') && a.contains('e')
        }
    });
    if runs || call.non_literal_from(1).is_some() {
        out.unread("`rsync` is given a command to run".to_string());
    }
}

/// `nc -e PROG`, `-c CMD`, `ncat --exec`/`--sh-exec`/`--lua-exec`.
pub(super) fn netcat(call: &Call, out: &mut Runs) {
    let runs = call.args().iter().any(|a| {
        if let Some(long) = a.strip_prefix("--") {
            ["exec", "sh-exec", "lua-exec"]
                .iter()
                .any(|r| may_abbreviate(long, r))
        } else {
            a.starts_with('-') && a.contains(['e', 'c'])
        }
    });
    if runs {
        out.unread(format!("`{}` is given a program to run", call.name));
    }
}

/// `ssh [options] HOST [COMMAND…]`: the remote command is a script (judged as such);
/// `-o …Command=` (`ProxyCommand`, `LocalCommand`…) and `-F FILE` run or name local
/// commands that cannot be read.
pub(super) fn ssh(call: &Call, out: &mut Runs) {
    out.runs_anything = true;
    if call.unread_if_not_literal(1, out) {
        return;
    }
    let parsed = match SSH.parse(call.args()) {
        Ok(p) => p,
        Err(e) => return out.unread(format!("the options of `ssh` cannot be read ({e})")),
    };
    for o in &parsed.options {
        let value = o.value.as_deref().unwrap_or("").to_ascii_lowercase();
        if o.is('F', "") || (o.is('o', "") && value.contains("command")) {
            return out
                .unread("`ssh` is given a local command or a configuration file".to_string());
        }
    }
    if let Some(host) = parsed.first_operand {
        let start = 1 + host + 1;
        if start < call.words.len() {
            let text = call.words[start..].join(" ");
            script(&call.raw[start..], &text, "ssh", call.depth, out);
        }
    }
}

/// `docker`, `podman`, `kubectl`: the subcommands that start a program (`run`, `exec`,
/// `compose`, `build`…) run what their arguments say in a grammar not read here.
pub(super) fn container(call: &Call, out: &mut Runs) {
    const RUNS: &[&str] = &[
        "run",
        "exec",
        "create",
        "start",
        "restart",
        "compose",
        "build",
        "buildx",
        "builder",
        "container",
        "debug",
        "plugin",
        "stack",
        "service",
        "attach",
        "cp",
        "apply",
        "replace",
        "patch",
        "edit",
        "set",
        "image",
        "kube",
        "play",
        "machine",
    ];
    if call.args().iter().any(|a| RUNS.contains(&a.as_str())) || call.non_literal_from(1).is_some()
    {
        out.unread(format!(
            "`{}` starts a program given in its arguments",
            call.name
        ));
    }
}
