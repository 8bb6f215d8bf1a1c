//! The one table of programs that run other programs ([`RUNNERS`]), and how each says
//! what it runs.
//!
//! A deny rule names a program, and a program that runs another (a wrapper, a shell,
//! an interpreter, a build tool, git, a shell builtin that evaluates) is a way round it.
//! So every such program is an entry here, with one of three readings:
//!
//! - [`Runner::Wrapper`]: its options (parsed with its own table, `wrapper_options.rs`)
//!   and a fixed number of operands come before the command it runs; the command is
//!   peeled off and judged as a subject of its own (`setpriv rm v` is judged as `rm v`).
//! - [`Runner::Unread`]: it runs a command in a grammar not read here whenever it has
//!   arguments: what it runs is unreadable (every deny and ask rule covers it).
//! - [`Runner::Reads`]: a reader of its own arguments (`runner_readers.rs`,
//!   `runs_git.rs`) says which forms run a readable command, which run code that cannot
//!   be read (unreadable), and which run nothing but the program itself (`git status`).
//!
//! Whatever the reading, a form that runs another program gets no "always" rule (its
//! rule would approve everything), and a form that cannot be read is approved by no
//! allow rule but one allowing every command (`rules/specifier.rs`). A program missing
//! here is judged by its name alone; `spelling_tests.rs` checks every entry.

use super::getopt::OptionTable;
use super::runner_readers as read;
use super::runs::{Call, Runs};
use super::wrapper_options::*;

/// How a program of [`RUNNERS`] says what it runs.
pub(super) enum Runner {
    /// Options, then [`Wrapper::operands_before`] operands, then the command.
    Wrapper(Wrapper),
    /// Runs a command given in its arguments in a grammar not read here.
    Unread,
    /// Reads its own arguments.
    Reads(fn(&Call, &mut Runs)),
}

/// What a wrapper does when no command follows its options.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Bare {
    /// Nothing runs (`env` prints, `nice` prints its niceness).
    Nothing,
    /// A shell starts and reads its commands from standard input (`fakeroot`, `linux64`).
    Shell,
}

/// A wrapper's grammar.
pub(super) struct Wrapper {
    pub table: OptionTable,
    /// Operands before the options (`setarch ARCH [options] CMD`).
    pub operands_first: usize,
    /// Operands between the options and the command (`timeout DURATION CMD`).
    pub operands_before: usize,
    /// Options after which what runs cannot be read: a string the wrapper splits into
    /// the command (`env -S`), or a second program it runs (`dbus-run-session
    /// --dbus-daemon`).
    pub unreadable_options: &'static [(char, &'static str)],
    /// Options after which nothing runs (`command -v rm` prints where rm is).
    pub runs_nothing: &'static [char],
    /// `NAME=value` operands are the environment, not the command (`env`).
    pub assignments: bool,
    pub bare: Bare,
}

const fn plain(table: OptionTable) -> Wrapper {
    Wrapper {
        table,
        operands_first: 0,
        operands_before: 0,
        unreadable_options: &[],
        runs_nothing: &[],
        assignments: false,
        bare: Bare::Nothing,
    }
}

const fn after(operands: usize, table: OptionTable) -> Wrapper {
    Wrapper {
        operands_before: operands,
        ..plain(table)
    }
}

const fn shell_when_bare(wrapper: Wrapper) -> Wrapper {
    Wrapper {
        bare: Bare::Shell,
        ..wrapper
    }
}

const SETARCH_WRAPPER: Wrapper = shell_when_bare(plain(SETARCH));

use Runner::{Reads, Unread};

/// Every program known to run another program. Names are matched on the last path
/// component (`/usr/bin/sudo` is `sudo`); `python3.12` is `python3`.
pub(super) const RUNNERS: &[(&str, Runner)] = &[
    // Wrappers whose command is their argv tail.
    (
        "env",
        Runner::Wrapper(Wrapper {
            unreadable_options: &[('S', "split-string")],
            assignments: true,
            ..plain(ENV)
        }),
    ),
    (
        "command",
        Runner::Wrapper(Wrapper {
            runs_nothing: &['v', 'V'],
            ..plain(COMMAND)
        }),
    ),
    (
        "builtin",
        Runner::Wrapper(Wrapper {
            runs_nothing: &['v', 'V'],
            ..plain(COMMAND)
        }),
    ),
    ("exec", Runner::Wrapper(plain(EXEC))),
    ("coproc", Reads(read::coproc)),
    ("nice", Runner::Wrapper(plain(NICE))),
    ("nohup", Runner::Wrapper(plain(NOTHING))),
    ("chronic", Runner::Wrapper(plain(NOTHING))),
    ("setsid", Runner::Wrapper(plain(SETSID))),
    ("time", Runner::Wrapper(plain(TIME))),
    ("stdbuf", Runner::Wrapper(plain(STDBUF))),
    ("ionice", Runner::Wrapper(plain(IONICE))),
    ("timeout", Runner::Wrapper(after(1, TIMEOUT))),
    (
        "taskset",
        Runner::Wrapper(Wrapper {
            runs_nothing: &['p'],
            ..after(1, TASKSET)
        }),
    ),
    (
        "chrt",
        Runner::Wrapper(Wrapper {
            runs_nothing: &['p', 'm'],
            ..after(1, CHRT)
        }),
    ),
    ("sudo", Runner::Wrapper(plain(SUDO))),
    ("doas", Runner::Wrapper(plain(SUDO))),
    ("xargs", Runner::Wrapper(plain(XARGS))),
    (
        "setpriv",
        Runner::Wrapper(Wrapper {
            runs_nothing: &['d'],
            ..plain(SETPRIV)
        }),
    ),
    (
        "prlimit",
        Runner::Wrapper(Wrapper {
            runs_nothing: &['p'],
            ..plain(PRLIMIT)
        }),
    ),
    (
        "fakeroot",
        Runner::Wrapper(shell_when_bare(plain(FAKEROOT))),
    ),
    (
        "setarch",
        Runner::Wrapper(Wrapper {
            operands_first: 1,
            ..SETARCH_WRAPPER
        }),
    ),
    ("linux32", Runner::Wrapper(SETARCH_WRAPPER)),
    ("linux64", Runner::Wrapper(SETARCH_WRAPPER)),
    ("i386", Runner::Wrapper(SETARCH_WRAPPER)),
    ("x86_64", Runner::Wrapper(SETARCH_WRAPPER)),
    ("uname26", Runner::Wrapper(SETARCH_WRAPPER)),
    (
        "ssh-agent",
        Runner::Wrapper(Wrapper {
            runs_nothing: &['k'],
            ..plain(SSH_AGENT)
        }),
    ),
    (
        "dbus-run-session",
        Runner::Wrapper(Wrapper {
            unreadable_options: &[('\0', "dbus-daemon")],
            ..plain(DBUS_RUN_SESSION)
        }),
    ),
    ("busybox", Runner::Wrapper(plain(NOTHING))),
    ("toybox", Runner::Wrapper(plain(NOTHING))),
    ("ld.so", Runner::Wrapper(plain(LD_SO))),
    ("ld-linux.so.2", Runner::Wrapper(plain(LD_SO))),
    ("ld-linux-x86-64.so.2", Runner::Wrapper(plain(LD_SO))),
    ("ld-linux-aarch64.so.1", Runner::Wrapper(plain(LD_SO))),
    // Wrappers and runners whose command is in a grammar not read here.
    ("chroot", Unread),
    ("flock", Unread),
    ("gdb", Unread),
    ("ltrace", Unread),
    ("nsenter", Unread),
    ("parallel", Unread),
    ("runuser", Unread),
    ("script", Unread),
    ("strace", Unread),
    ("su", Unread),
    ("unshare", Unread),
    ("valgrind", Unread),
    ("firejail", Unread),
    ("bwrap", Unread),
    ("systemd-run", Unread),
    ("systemd-inhibit", Unread),
    ("pkexec", Unread),
    ("catchsegv", Unread),
    ("numactl", Unread),
    ("cgexec", Unread),
    ("xvfb-run", Unread),
    ("dbus-launch", Unread),
    ("entr", Unread),
    ("faketime", Unread),
    ("eatmydata", Unread),
    ("unbuffer", Unread),
    ("rlwrap", Unread),
    ("torsocks", Unread),
    ("proxychains", Unread),
    ("proxychains4", Unread),
    ("tmux", Unread),
    ("screen", Unread),
    ("expect", Unread),
    ("socat", Unread),
    ("npx", Unread),
    ("bunx", Unread),
    ("pnpx", Unread),
    ("vim", Unread),
    ("vi", Unread),
    ("nvim", Unread),
    ("ex", Unread),
    ("emacs", Unread),
    // Shells and builtins that evaluate text.
    ("sh", Reads(read::shell)),
    ("bash", Reads(read::shell)),
    ("dash", Reads(read::shell)),
    ("zsh", Reads(read::shell)),
    ("ksh", Reads(read::shell)),
    ("mksh", Reads(read::shell)),
    ("yash", Reads(read::shell)),
    ("fish", Reads(read::shell)),
    ("csh", Reads(read::shell)),
    ("tcsh", Reads(read::shell)),
    ("eval", Reads(read::eval)),
    ("source", Reads(read::source)),
    (".", Reads(read::source)),
    ("trap", Reads(read::trap)),
    ("alias", Reads(read::alias)),
    ("hash", Reads(read::hash)),
    ("fc", Reads(read::always_unread)),
    ("let", Reads(read::always_unread)),
    ("mapfile", Reads(read::callback)),
    ("readarray", Reads(read::callback)),
    ("compgen", Reads(read::callback)),
    ("enable", Reads(read::enable)),
    ("sg", Reads(read::sg)),
    ("watch", Reads(read::watch)),
    ("find", Reads(read::find_exec)),
    ("at", Reads(read::always_unread)),
    ("batch", Reads(read::always_unread)),
    ("ed", Reads(read::always_unread)),
    ("crontab", Reads(read::crontab)),
    // Interpreters: a script file is a program like any other; code given as text or
    // on standard input cannot be read.
    ("python", Reads(read::interpreter)),
    ("python2", Reads(read::interpreter)),
    ("python3", Reads(read::interpreter)),
    ("pypy", Reads(read::interpreter)),
    ("pypy3", Reads(read::interpreter)),
    ("perl", Reads(read::interpreter)),
    ("ruby", Reads(read::interpreter)),
    ("node", Reads(read::interpreter)),
    ("nodejs", Reads(read::interpreter)),
    ("php", Reads(read::interpreter)),
    ("lua", Reads(read::interpreter)),
    ("luajit", Reads(read::interpreter)),
    ("tclsh", Reads(read::interpreter)),
    ("Rscript", Reads(read::interpreter)),
    ("julia", Reads(read::interpreter)),
    ("pwsh", Reads(read::interpreter)),
    ("deno", Reads(read::js_runtime)),
    ("bun", Reads(read::js_runtime)),
    ("awk", Reads(read::awk)),
    ("gawk", Reads(read::awk)),
    ("mawk", Reads(read::awk)),
    ("nawk", Reads(read::awk)),
    ("sed", Reads(read::sed)),
    ("sqlite3", Reads(read::sqlite)),
    // Build tools, package runners and programs with an option that runs a command.
    ("make", Reads(read::make)),
    ("gmake", Reads(read::make)),
    ("npm", Reads(read::package_manager)),
    ("pnpm", Reads(read::package_manager)),
    ("yarn", Reads(read::package_manager)),
    ("tar", Reads(read::tar)),
    ("rsync", Reads(read::rsync)),
    ("nc", Reads(read::netcat)),
    ("ncat", Reads(read::netcat)),
    ("netcat", Reads(read::netcat)),
    ("ssh", Reads(read::ssh)),
    ("docker", Reads(read::container)),
    ("podman", Reads(read::container)),
    ("kubectl", Reads(read::container)),
    ("git", Reads(super::runs_git::git)),
];

/// The entry of `name` (a program name without its directory).
pub(super) fn runner(name: &str) -> Option<&'static Runner> {
    let find = |name: &str| RUNNERS.iter().find(|(n, _)| *n == name).map(|(_, r)| r);
    find(name).or_else(|| find(unversioned(name)))
}

/// `python3.12` → `python3`, `perl5.36` → `perl5`… then `perl`: a version suffix does
/// not make another program.
fn unversioned(name: &str) -> &str {
    let trimmed = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    if trimmed.len() == name.len() || trimmed.is_empty() {
        return name;
    }
    let with_major = &name[..name[trimmed.len()..]
        .find('.')
        .map_or(name.len(), |dot| trimmed.len() + dot)];
    if RUNNERS.iter().any(|(n, _)| *n == with_major) {
        with_major
    } else {
        trimmed
    }
}

/// Environment variables that name a program, code or where programs come from: set by
/// an assignment (`PAGER=x git log`, `export EDITOR=x; git commit`, `env
/// GIT_CONFIG_PARAMETERS=… git x`), they make a command run what no word of it names.
const PROGRAM_VARIABLES: &[&str] = &[
    "PATH",
    "BASH_ENV",
    "ENV",
    "PAGER",
    "MANPAGER",
    "EDITOR",
    "VISUAL",
    "SHELL",
    "PROMPT_COMMAND",
    "LESSOPEN",
    "LESSCLOSE",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "NODE_OPTIONS",
    "RUBYOPT",
    "RUBYLIB",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "MAKEFLAGS",
    "MFLAGS",
    "BROWSER",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_ASKPASS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "GIT_EXEC_PATH",
    "GIT_PROXY_COMMAND",
    "GIT_DIR",
    "GIT_TEMPLATE_DIR",
];

/// Prefixes of such variables (`LD_PRELOAD`, `GIT_CONFIG_PARAMETERS`,
/// `GIT_CONFIG_KEY_0`, exported functions).
const PROGRAM_VARIABLE_PREFIXES: &[&str] = &["LD_", "GIT_CONFIG", "BASH_FUNC_"];

/// The variable `assignment` (`NAME=value`, `NAME+=value`, `NAME[i]=value`) sets, if it
/// is one that names a program.
pub(super) fn program_variable(assignment: &str) -> Option<&str> {
    let name = assignment.split(['=', '+', '[']).next()?;
    (PROGRAM_VARIABLES.contains(&name)
        || PROGRAM_VARIABLE_PREFIXES
            .iter()
            .any(|p| name.starts_with(p)))
    .then_some(name)
}
