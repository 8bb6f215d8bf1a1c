//! The option tables of the wrappers `runs.rs` looks through (coreutils 9, sudo 1.9,
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
