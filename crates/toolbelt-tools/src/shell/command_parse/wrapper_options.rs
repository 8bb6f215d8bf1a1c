//! The option tables of the wrappers and runners of `runners.rs` (coreutils 9, sudo 1.9,
//! findutils 4.9, util-linux, procps): with them a wrapper's own options, abbreviated or
//! clustered, are told apart from the command it runs.

use super::getopt::{Arg, OptionTable};

use Arg::{None as N, Optional as O, Required as R};

pub(super) const NOTHING: OptionTable = OptionTable {
    short: &[],
    long: &[("help", N, None), ("version", N, None)],
    stop_at_operand: true,
};

pub(super) const ENV: OptionTable = OptionTable {
    short: &[
        ('0', N),
        ('C', R),
        ('i', N),
        ('S', R),
        ('u', R),
        ('v', N),
        ('a', R),
    ],
    long: &[
        ("argv0", R, Some('a')),
        ("block-signal", O, None),
        ("chdir", R, Some('C')),
        ("debug", N, Some('v')),
        ("default-signal", O, None),
        ("help", N, None),
        ("ignore-environment", N, Some('i')),
        ("ignore-signal", O, None),
        ("list-signal-handling", N, None),
        ("null", N, Some('0')),
        ("split-string", R, Some('S')),
        ("unset", R, Some('u')),
        ("version", N, None),
    ],
    stop_at_operand: true,
};

pub(super) const WATCH: OptionTable = OptionTable {
    short: &[
        ('b', N),
        ('c', N),
        ('C', N),
        ('d', O),
        ('e', N),
        ('g', N),
        ('h', N),
        ('n', R),
        ('p', N),
        ('q', R),
        ('r', N),
        ('t', N),
        ('v', N),
        ('w', N),
        ('x', N),
    ],
    long: &[
        ("beep", N, Some('b')),
        ("chgexit", N, Some('g')),
        ("color", N, Some('c')),
        ("differences", O, Some('d')),
        ("equexit", R, Some('q')),
        ("errexit", N, Some('e')),
        ("exec", N, Some('x')),
        ("help", N, Some('h')),
        ("interval", R, Some('n')),
        ("no-color", N, Some('C')),
        ("no-linewrap", N, Some('w')),
        ("no-rerun", N, Some('r')),
        ("no-title", N, Some('t')),
        ("no-wrap", N, None),
        ("precise", N, Some('p')),
        ("version", N, Some('v')),
    ],
    stop_at_operand: true,
};

pub(super) const COMMAND: OptionTable = OptionTable {
    short: &[('p', N), ('v', N), ('V', N)],
    long: &[],
    stop_at_operand: true,
};

pub(super) const EXEC: OptionTable = OptionTable {
    short: &[('a', R), ('c', N), ('l', N)],
    long: &[],
    stop_at_operand: true,
};

pub(super) const NICE: OptionTable = OptionTable {
    short: &[('n', R)],
    long: &[
        ("adjustment", R, Some('n')),
        ("help", N, None),
        ("version", N, None),
    ],
    stop_at_operand: true,
};

pub(super) const STDBUF: OptionTable = OptionTable {
    short: &[('i', R), ('o', R), ('e', R)],
    long: &[
        ("error", R, Some('e')),
        ("help", N, None),
        ("input", R, Some('i')),
        ("output", R, Some('o')),
        ("version", N, None),
    ],
    stop_at_operand: true,
};

pub(super) const IONICE: OptionTable = OptionTable {
    short: &[
        ('c', R),
        ('n', R),
        ('p', N),
        ('P', N),
        ('u', N),
        ('t', N),
        ('h', N),
        ('V', N),
    ],
    long: &[
        ("class", R, Some('c')),
        ("classdata", R, Some('n')),
        ("help", N, Some('h')),
        ("ignore", N, Some('t')),
        ("pgid", N, Some('P')),
        ("pid", N, Some('p')),
        ("uid", N, Some('u')),
        ("version", N, Some('V')),
    ],
    stop_at_operand: true,
};

pub(super) const TIMEOUT: OptionTable = OptionTable {
    short: &[('k', R), ('s', R), ('v', N), ('f', N), ('p', N)],
    long: &[
        ("foreground", N, Some('f')),
        ("help", N, None),
        ("kill-after", R, Some('k')),
        ("preserve-status", N, Some('p')),
        ("signal", R, Some('s')),
        ("verbose", N, Some('v')),
        ("version", N, None),
    ],
    stop_at_operand: true,
};

pub(super) const SUDO: OptionTable = OptionTable {
    short: &[
        ('A', N),
        ('b', N),
        ('B', N),
        ('C', R),
        ('D', R),
        ('E', N),
        ('e', N),
        ('g', R),
        ('H', N),
        ('h', O),
        ('i', N),
        ('K', N),
        ('k', N),
        ('l', N),
        ('N', N),
        ('n', N),
        ('P', N),
        ('p', R),
        ('R', R),
        ('r', R),
        ('S', N),
        ('s', N),
        ('T', R),
        ('t', R),
        ('U', R),
        ('u', R),
        ('V', N),
        ('v', N),
    ],
    long: &[
        ("askpass", N, Some('A')),
        ("background", N, Some('b')),
        ("bell", N, Some('B')),
        ("chdir", R, Some('D')),
        ("chroot", R, Some('R')),
        ("close-from", R, Some('C')),
        ("command-timeout", R, Some('T')),
        ("edit", N, Some('e')),
        ("group", R, Some('g')),
        ("help", N, None),
        ("host", R, None),
        ("list", N, Some('l')),
        ("login", N, Some('i')),
        ("non-interactive", N, Some('n')),
        ("other-user", R, Some('U')),
        ("preserve-env", O, None),
        ("preserve-groups", N, Some('P')),
        ("prompt", R, Some('p')),
        ("remove-timestamp", N, Some('K')),
        ("reset-timestamp", N, Some('k')),
        ("role", R, Some('r')),
        ("set-home", N, Some('H')),
        ("shell", N, Some('s')),
        ("stdin", N, Some('S')),
        ("type", R, Some('t')),
        ("user", R, Some('u')),
        ("validate", N, Some('v')),
        ("version", N, Some('V')),
    ],
    stop_at_operand: true,
};

pub(super) const XARGS: OptionTable = OptionTable {
    short: &[
        ('0', N),
        ('a', R),
        ('d', R),
        ('E', R),
        ('e', O),
        ('i', O),
        ('I', R),
        ('l', O),
        ('L', R),
        ('n', R),
        ('o', N),
        ('p', N),
        ('P', R),
        ('r', N),
        ('s', R),
        ('t', N),
        ('x', N),
    ],
    long: &[
        ("arg-file", R, Some('a')),
        ("delimiter", R, Some('d')),
        ("eof", O, Some('e')),
        ("exit", N, Some('x')),
        ("help", N, None),
        ("interactive", N, Some('p')),
        ("max-args", R, Some('n')),
        ("max-chars", R, Some('s')),
        ("max-lines", O, Some('l')),
        ("max-procs", R, Some('P')),
        ("no-run-if-empty", N, Some('r')),
        ("null", N, Some('0')),
        ("open-tty", N, Some('o')),
        ("process-slot-var", R, None),
        ("replace", O, Some('i')),
        ("show-limits", N, None),
        ("verbose", N, Some('t')),
        ("version", N, None),
    ],
    stop_at_operand: true,
};

/// `coproc CMD`: no options of its own.
pub(super) const NO_OPTIONS: OptionTable = OptionTable {
    short: &[],
    long: &[],
    stop_at_operand: true,
};

pub(super) const SETSID: OptionTable = OptionTable {
    short: &[('c', N), ('f', N), ('w', N), ('h', N), ('V', N)],
    long: &[
        ("ctty", N, Some('c')),
        ("fork", N, Some('f')),
        ("help", N, Some('h')),
        ("version", N, Some('V')),
        ("wait", N, Some('w')),
    ],
    stop_at_operand: true,
};

/// GNU `time` (the program, not the shell keyword).
pub(super) const TIME: OptionTable = OptionTable {
    short: &[
        ('a', N),
        ('f', R),
        ('o', R),
        ('p', N),
        ('q', N),
        ('v', N),
        ('V', N),
    ],
    long: &[
        ("append", N, Some('a')),
        ("format", R, Some('f')),
        ("help", N, None),
        ("output", R, Some('o')),
        ("portability", N, Some('p')),
        ("quiet", N, Some('q')),
        ("verbose", N, Some('v')),
        ("version", N, Some('V')),
    ],
    stop_at_operand: true,
};

pub(super) const TASKSET: OptionTable = OptionTable {
    short: &[('a', N), ('c', N), ('p', N), ('h', N), ('V', N)],
    long: &[
        ("all-tasks", N, Some('a')),
        ("cpu-list", N, Some('c')),
        ("help", N, Some('h')),
        ("pid", N, Some('p')),
        ("version", N, Some('V')),
    ],
    stop_at_operand: true,
};

pub(super) const CHRT: OptionTable = OptionTable {
    short: &[
        ('a', N),
        ('b', N),
        ('d', N),
        ('e', N),
        ('f', N),
        ('i', N),
        ('m', N),
        ('o', N),
        ('p', N),
        ('r', N),
        ('R', N),
        ('v', N),
        ('h', N),
        ('V', N),
        ('T', R),
        ('P', R),
        ('D', R),
    ],
    long: &[
        ("all-tasks", N, Some('a')),
        ("batch", N, Some('b')),
        ("deadline", N, Some('d')),
        ("ext", N, Some('e')),
        ("fifo", N, Some('f')),
        ("help", N, Some('h')),
        ("idle", N, Some('i')),
        ("max", N, Some('m')),
        ("other", N, Some('o')),
        ("pid", N, Some('p')),
        ("reset-on-fork", N, Some('R')),
        ("rr", N, Some('r')),
        ("sched-deadline", R, Some('D')),
        ("sched-period", R, Some('P')),
        ("sched-runtime", R, Some('T')),
        ("verbose", N, Some('v')),
        ("version", N, Some('V')),
    ],
    stop_at_operand: true,
};

/// util-linux `setpriv`: `-d` dumps the state and runs nothing.
pub(super) const SETPRIV: OptionTable = OptionTable {
    short: &[('d', N), ('h', N), ('V', N)],
    long: &[
        ("ambient-caps", R, None),
        ("apparmor-profile", R, None),
        ("bounding-set", R, None),
        ("clear-groups", N, None),
        ("dump", N, Some('d')),
        ("egid", R, None),
        ("euid", R, None),
        ("groups", R, None),
        ("help", N, Some('h')),
        ("inh-caps", R, None),
        ("init-groups", N, None),
        ("keep-groups", N, None),
        ("landlock-access", R, None),
        ("landlock-rule", R, None),
        ("nnp", N, None),
        ("no-new-privs", N, None),
        ("pdeathsig", R, None),
        ("regid", R, None),
        ("reset-env", N, None),
        ("reuid", R, None),
        ("rgid", R, None),
        ("ruid", R, None),
        ("securebits", R, None),
        ("selinux-label", R, None),
        ("version", N, Some('V')),
    ],
    stop_at_operand: true,
};

/// util-linux `prlimit`: each resource option takes an optional attached limit; `-p PID`
/// changes another process and runs nothing.
pub(super) const PRLIMIT: OptionTable = OptionTable {
    short: &[
        ('c', O),
        ('d', O),
        ('e', O),
        ('f', O),
        ('i', O),
        ('l', O),
        ('m', O),
        ('n', O),
        ('q', O),
        ('r', O),
        ('s', O),
        ('t', O),
        ('u', O),
        ('v', O),
        ('x', O),
        ('y', O),
        ('p', R),
        ('o', R),
        ('h', N),
        ('V', N),
    ],
    long: &[
        ("as", O, Some('v')),
        ("core", O, Some('c')),
        ("cpu", O, Some('t')),
        ("data", O, Some('d')),
        ("fsize", O, Some('f')),
        ("help", N, Some('h')),
        ("locks", O, Some('x')),
        ("memlock", O, Some('l')),
        ("msgqueue", O, Some('q')),
        ("nice", O, Some('e')),
        ("nofile", O, Some('n')),
        ("noheadings", N, None),
        ("nproc", O, Some('u')),
        ("output", R, Some('o')),
        ("pid", R, Some('p')),
        ("raw", N, None),
        ("rss", O, Some('m')),
        ("rtprio", O, Some('r')),
        ("rttime", O, Some('y')),
        ("sigpending", O, Some('i')),
        ("stack", O, Some('s')),
        ("verbose", N, None),
        ("version", N, Some('V')),
    ],
    stop_at_operand: true,
};

/// `fakeroot` (a shell script reading its options by hand, as these).
pub(super) const FAKEROOT: OptionTable = OptionTable {
    short: &[
        ('l', R),
        ('s', R),
        ('i', R),
        ('u', N),
        ('b', R),
        ('h', N),
        ('v', N),
    ],
    long: &[
        ("faked", R, None),
        ("help", N, Some('h')),
        ("lib", R, Some('l')),
        ("unknown-is-real", N, Some('u')),
        ("version", N, Some('v')),
    ],
    stop_at_operand: true,
};

/// util-linux `setarch` (and its names `linux32`, `linux64`, `i386`, `x86_64`…).
pub(super) const SETARCH: OptionTable = OptionTable {
    short: &[
        ('3', N),
        ('B', N),
        ('F', N),
        ('h', N),
        ('I', N),
        ('L', N),
        ('R', N),
        ('S', N),
        ('T', N),
        ('v', N),
        ('V', N),
        ('X', N),
        ('Z', N),
    ],
    long: &[
        ("32bit", N, Some('B')),
        ("3gb", N, Some('3')),
        ("4gb", N, None),
        ("addr-compat-layout", N, Some('L')),
        ("addr-no-randomize", N, Some('R')),
        ("fdpic-funcptrs", N, Some('F')),
        ("help", N, Some('h')),
        ("list", N, None),
        ("mmap-page-zero", N, Some('Z')),
        ("read-implies-exec", N, Some('X')),
        ("short-inode", N, Some('I')),
        ("sticky-timeouts", N, Some('T')),
        ("uname-2.6", N, None),
        ("verbose", N, Some('v')),
        ("version", N, Some('V')),
        ("whole-seconds", N, Some('S')),
    ],
    stop_at_operand: true,
};

/// OpenSSH's `ssh-agent`: `-k` kills the running agent and runs nothing.
pub(super) const SSH_AGENT: OptionTable = OptionTable {
    short: &[
        ('a', R),
        ('c', N),
        ('D', N),
        ('d', N),
        ('E', R),
        ('k', N),
        ('O', R),
        ('P', R),
        ('s', N),
        ('t', R),
    ],
    long: &[],
    stop_at_operand: true,
};

/// `dbus-run-session`: `--dbus-daemon=BINARY` runs a second program.
pub(super) const DBUS_RUN_SESSION: OptionTable = OptionTable {
    short: &[],
    long: &[
        ("config-file", R, None),
        ("dbus-daemon", R, None),
        ("help", N, None),
        ("version", N, None),
    ],
    stop_at_operand: true,
};

/// The dynamic loader run as a program (`ld.so PROGRAM`).
pub(super) const LD_SO: OptionTable = OptionTable {
    short: &[],
    long: &[
        ("argv0", R, None),
        ("audit", R, None),
        ("glibc-hwcaps-mask", R, None),
        ("glibc-hwcaps-prepend", R, None),
        ("help", N, None),
        ("inhibit-cache", N, None),
        ("inhibit-rpath", R, None),
        ("library-path", R, None),
        ("list", N, None),
        ("list-diagnostics", N, None),
        ("list-tunables", N, None),
        ("preload", R, None),
        ("verify", N, None),
        ("version", N, None),
    ],
    stop_at_operand: true,
};
