//! The argument checks of the read-only programs whose arguments can make them write or
//! run something. Each reads the arguments as the program does (its option table and
//! `getopt.rs` where it is a GNU program) and says whether they only read.

use super::options;
use super::sed;
use crate::shell::command_parse::getopt::{OptionTable, Parsed, may_abbreviate};

/// A check of the arguments (the words after the program name).
pub(super) type Check = fn(&[String]) -> bool;

/// The check of `name`; `None` when the program only reads whatever its arguments say.
/// A program with a check gets only plain literal arguments (see `read_only.rs`): an
/// expansion could become any option.
pub(super) fn check_of(name: &str) -> Option<Check> {
    Some(match name {
        "git" => super::git::git_is_read_only,
        "find" => find_is_read_only,
        "sed" => sed_is_read_only,
        "awk" | "gawk" | "mawk" => awk_is_read_only,
        // `env CMD` runs CMD; `env` alone prints the environment.
        "env" => <[String]>::is_empty,
        "sort" => sort_is_read_only,
        "tree" => tree_is_read_only,
        "rg" => rg_is_read_only,
        "date" => date_is_read_only,
        "hostname" => hostname_is_read_only,
        "uniq" => uniq_is_read_only,
        "less" | "more" => less_is_read_only,
        "file" => file_is_read_only,
        "test" | "[" | "[[" => test_is_read_only,
        "printf" => printf_is_read_only,
        _ => return None,
    })
}

/// The arguments read through `table`; `None` when the program would reject them.
fn parse(table: &OptionTable, args: &[String]) -> Option<Parsed> {
    table.parse(args).ok()
}

fn find_is_read_only(args: &[String]) -> bool {
    !args.iter().any(|a| {
        matches!(
            a.as_str(),
            "-delete" | "-exec" | "-execdir" | "-ok" | "-okdir" | "-fls"
        ) || a.starts_with("-fprint")
    })
}

fn sort_is_read_only(args: &[String]) -> bool {
    parse(&options::SORT, args).is_some_and(|p| {
        !p.options
            .iter()
            .any(|o| o.is('o', "output") || o.is('\0', "compress-program"))
    })
}

/// `uniq IN OUT` writes OUT.
fn uniq_is_read_only(args: &[String]) -> bool {
    parse(&options::UNIQ, args).is_some_and(|p| p.operands.len() <= 1)
}

/// `date -s` and `date MMDDhhmm` set the clock; `+FORMAT` only prints.
fn date_is_read_only(args: &[String]) -> bool {
    parse(&options::DATE, args).is_some_and(|p| {
        !p.options.iter().any(|o| o.is('s', "set")) && p.operands.iter().all(|a| a.starts_with('+'))
    })
}

/// `hostname NAME`, `-F FILE` and `-b` set the host name.
fn hostname_is_read_only(args: &[String]) -> bool {
    parse(&options::HOSTNAME, args).is_some_and(|p| {
        p.operands.is_empty()
            && !p
                .options
                .iter()
                .any(|o| o.is('F', "file") || o.is('b', "boot"))
    })
}

/// `file -C` compiles a magic file (writing `NAME.mgc`); `-p` sets access times back.
fn file_is_read_only(args: &[String]) -> bool {
    parse(&options::FILE, args).is_some_and(|p| {
        !p.options
            .iter()
            .any(|o| o.is('C', "compile") || o.is('p', "preserve-date"))
    })
}

/// `-o FILE` writes the listing; `-R` (with `-H`) writes `00Tree.html` into every
/// directory. tree reads its options by hand, so clusters are judged letter by letter.
fn tree_is_read_only(args: &[String]) -> bool {
    !args.iter().any(|a| {
        if let Some(long) = a.strip_prefix("--") {
            may_abbreviate(long, "output")
        } else {
            a.starts_with('-') && (a.contains('o') || a.contains('R'))
        }
    })
}

/// `--pre` runs a program on every file, `--hostname-bin` runs one for hyperlinks.
fn rg_is_read_only(args: &[String]) -> bool {
    !args.iter().any(|a| {
        a.strip_prefix("--").is_some_and(|long| {
            ["pre", "hostname-bin"]
                .iter()
                .any(|f| may_abbreviate(long, f))
        })
    })
}

/// `less +cmd` runs a less command (`+!cmd` a shell); log and lesskey files write or
/// redefine what less runs. less takes unique prefixes of its long options, in any
/// case, and short options in clusters (`-iO log`).
fn less_is_read_only(args: &[String]) -> bool {
    const FORBIDDEN: &[&str] = &["log-file", "lesskey-file", "lesskey-src", "lesskey-content"];
    !args.iter().any(|a| {
        if a.starts_with('+') {
            return true;
        }
        if let Some(long) = a.strip_prefix("--") {
            let long = long.to_ascii_lowercase();
            return long.starts_with("lesskey")
                || FORBIDDEN.iter().any(|f| may_abbreviate(&long, f));
        }
        a.starts_with('-') && a.contains(['o', 'O', 'k'])
    })
}

/// `-i`/`--in-place` edits the files; `-f`/`--file` is a script this check cannot read;
/// every script (`-e`, `--expression`, or the first operand) is parsed (`sed.rs`).
fn sed_is_read_only(args: &[String]) -> bool {
    let Some(parsed) = parse(&options::SED, args) else {
        return false;
    };
    let mut scripts = Vec::new();
    for o in &parsed.options {
        if o.is('i', "in-place") || o.is('f', "file") {
            return false;
        }
        if o.is('e', "expression") {
            scripts.extend(o.value.as_deref());
        }
    }
    if scripts.is_empty() {
        scripts.extend(parsed.operands.first().map(String::as_str));
    }
    scripts.iter().all(|s| sed::script_is_inert(s))
}

/// gawk's options (mawk's `-W` is refused), with the program text (`-e`/`--source`, or
/// the first operand) judged by [`awk_program_is_inert`]. A program file (`-f`), an
/// include, an extension, a dump, profile or pretty-print file (which gawk writes) or
/// the debugger make the command ask.
fn awk_is_read_only(args: &[String]) -> bool {
    let Some(parsed) = parse(&options::AWK, args) else {
        return false;
    };
    let mut programs = Vec::new();
    for o in &parsed.options {
        let forbidden = [
            ('f', "file"),
            ('E', "exec"),
            ('i', "include"),
            ('l', "load"),
            ('d', "dump-variables"),
            ('D', "debug"),
            ('o', "pretty-print"),
            ('p', "profile"),
            ('W', ""),
        ];
        if forbidden.iter().any(|(s, l)| o.is(*s, l)) {
            return false;
        }
        if o.is('e', "source") {
            programs.extend(o.value.as_deref());
        }
    }
    if programs.is_empty() {
        programs.extend(parsed.operands.first().map(String::as_str));
    }
    programs.iter().all(|p| awk_program_is_inert(p))
}

/// An awk program that cannot run a command, write a file, open a network special file
/// or load code: no `system`, `getline`, `close` or `fflush` anywhere, and no `>`, `|`
/// or `@` (redirections, pipes, coprocesses, `@include`). Deliberately a plain scan of
/// the text, strings and regular expressions included: telling a comparison from a
/// redirection, or a regular expression from a division, is where a cleverer reading
/// would be fooled.
pub(crate) fn awk_program_is_inert(program: &str) -> bool {
    !["system", "getline", "close", "fflush", "/inet"]
        .iter()
        .any(|w| program.contains(w))
        && !program.contains(['>', '|', '@'])
}

/// `test`, `[` and `[[` evaluate some operands as code: `-v 'a[$(id)]'` and an array
/// subscript expand it, and the arithmetic operators of `[[` (`-eq`, `-lt`, …) evaluate
/// a variable's value (`x='a[$(id)]'; [[ x -eq 1 ]]`). Only operands without `$`, `` ` ``
/// or `[`, and in `[[` only integers beside an arithmetic operator, are inert.
fn test_is_read_only(args: &[String]) -> bool {
    const ARITHMETIC: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];
    let tokens: Vec<&str> = args.iter().flat_map(|a| a.split_whitespace()).collect();
    let inner = match tokens.last() {
        Some(&"]") | Some(&"]]") => &tokens[..tokens.len() - 1],
        _ => &tokens[..],
    };
    if inner.iter().any(|t| t.contains(['$', '`', '[', ']'])) {
        return false;
    }
    if !inner.iter().any(|t| ARITHMETIC.contains(t)) {
        return true;
    }
    inner.iter().all(|t| {
        ARITHMETIC.contains(t)
            || matches!(*t, "!" | "&&" | "||" | "(" | ")" | "-a" | "-o")
            || t.trim_start_matches(['-', '+'])
                .bytes()
                .all(|b| b.is_ascii_digit())
    })
}

/// `printf -v NAME` assigns a shell variable; a NAME with a subscript (`a[$(id)]`) is
/// evaluated as code.
fn printf_is_read_only(args: &[String]) -> bool {
    let name = match args.first().map(String::as_str) {
        Some("-v") => args.get(1).map(String::as_str),
        Some(a) if a.starts_with("-v") => Some(&a[2..]),
        _ => return true,
    };
    name.is_some_and(|n| {
        n.bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}
