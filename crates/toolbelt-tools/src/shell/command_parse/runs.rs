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
//!
//! Which programs run others, and how each says what, is the one table of
//! `runners.rs`; this module follows it (through nested wrappers and scripts, up to
//! [`MAX_DEPTH`]).

use super::runners::{Bare, Runner, Wrapper, runner};
use super::word::{self, WordShape};
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

impl Runs {
    /// Marks what runs as unreadable, and as able to run anything.
    pub(super) fn unread(&mut self, why: String) {
        self.runs_anything = true;
        self.unreadable = Some(why);
    }
}

/// One simple command being followed: its program name (without a directory), its
/// words as written and unquoted, and how deep in wrappers it is.
pub(super) struct Call<'a> {
    pub name: &'a str,
    pub raw: &'a [String],
    pub words: &'a [String],
    pub depth: usize,
}

impl Call<'_> {
    /// The arguments, unquoted (the words after the name).
    pub(super) fn args(&self) -> &[String] {
        &self.words[1..]
    }

    /// Whether word `at` is a literal (or absent).
    pub(super) fn is_literal(&self, at: usize) -> bool {
        self.raw
            .get(at)
            .is_none_or(|r| word::shape(r) == WordShape::Literal)
    }

    /// The first argument (from `from`, an index into the words) that is not a literal,
    /// as written: such a word may split into options (`$x`) or become file names that
    /// look like options (`*`).
    pub(super) fn non_literal_from(&self, from: usize) -> Option<&String> {
        self.raw
            .iter()
            .skip(from)
            .find(|r| word::shape(r) != WordShape::Literal)
    }

    /// Marks the call unreadable when a word from `from` on is not a literal; `true`
    /// when it did.
    pub(super) fn unread_if_not_literal(&self, from: usize, out: &mut Runs) -> bool {
        match self.non_literal_from(from) {
            Some(r) => {
                out.unread(format!(
                    "`{}` is given `{r}`, which is {}, and could become an option that runs a command",
                    self.name,
                    word::shape(r).describe()
                ));
                true
            }
            None => false,
        }
    }
}

/// What `command` runs.
pub(crate) fn runs(command: &SimpleCommand) -> Runs {
    let mut out = Runs::default();
    if let Some(name) = command
        .assignments
        .iter()
        .find_map(|a| super::runners::program_variable(a))
    {
        out.unread(format!(
            "it is run with `{name}` set, which names a program it runs"
        ));
    }
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
    let call = Call {
        name,
        raw,
        words,
        depth,
    };
    match runner(name) {
        None => {}
        Some(Runner::Wrapper(w)) => {
            out.runs_anything = true;
            wrapped(w, &call, out);
        }
        Some(Runner::Unread) if words.len() > 1 => out.unread(format!(
            "`{name}` runs a command given in its arguments, which this check does not read"
        )),
        Some(Runner::Unread) => out.runs_anything = true,
        Some(Runner::Reads(read)) => read(&call, out),
    }
}

/// A command given as text (`eval`'s words, `sh -c`'s script): its own commands.
pub(super) fn script(raw: &[String], text: &str, by: &str, depth: usize, out: &mut Runs) {
    out.runs_anything = true;
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

/// The script file a shell, `source` or an interpreter runs: unreadable when it is
/// standard input or a descriptor (`/dev/stdin`, `/dev/fd/0`, `-`), or not a literal
/// name.
pub(super) fn script_file(raw: Option<&String>, word: Option<&String>, by: &str, out: &mut Runs) {
    let (Some(raw), Some(word)) = (raw, word) else {
        return;
    };
    if word::shape(raw) != WordShape::Literal {
        out.unreadable = Some(format!(
            "the script `{by}` runs is `{raw}`, which is {}",
            word::shape(raw).describe()
        ));
    } else if is_standard_input(word) {
        out.unreadable = Some(format!("`{by}` reads its commands from `{word}`"));
    }
}

/// `-`, `/dev/stdin`, a descriptor or a socket: a file name whose content no rule sees.
pub(super) fn is_standard_input(word: &str) -> bool {
    word == "-"
        || [
            "/dev/stdin",
            "/dev/fd/",
            "/proc/self/fd/",
            "/dev/tcp/",
            "/dev/udp/",
        ]
        .iter()
        .any(|p| word.starts_with(p))
}

/// `words` (with `raw`) run as a command of their own.
pub(super) fn push_inner(raw: &[String], words: &[String], depth: usize, out: &mut Runs) {
    out.runs_anything = true;
    out.inner.push(SimpleCommand {
        text: raw.join(" "),
        words: words.to_vec(),
        assignments: Vec::new(),
        raw: raw.to_vec(),
    });
    follow(raw, words, depth + 1, out);
}

fn wrapped(w: &Wrapper, call: &Call, out: &mut Runs) {
    let (name, raw, words) = (call.name, call.raw, call.words);
    // `setarch ARCH …`: the operands before the options (`setarch --list` has none).
    let skip = if words.get(1).is_some_and(|a| !a.starts_with('-')) {
        w.operands_first
    } else {
        0
    };
    let options_at = (1 + skip).min(words.len());
    let parsed = match w.table.parse(&words[options_at..]) {
        Ok(p) => p,
        Err(e) => {
            out.unreadable = Some(format!("the options of `{name}` cannot be read ({e})"));
            return;
        }
    };
    // `xargs -I R CMD`: R in CMD's name is replaced by what arrives on standard input.
    let mut replaced: Option<String> = None;
    for o in &parsed.options {
        if name == "xargs" && (o.is('I', "") || o.is('i', "replace")) {
            replaced = Some(o.value.clone().unwrap_or_else(|| "{}".to_string()));
        }
        if let Some((s, l)) = w.unreadable_options.iter().find(|(s, l)| o.is(*s, l)) {
            let spelled = if *s == '\0' {
                format!("--{l}`")
            } else {
                format!("-{s}` (`--{l}`)")
            };
            out.unreadable = Some(format!(
                "`{name} {spelled} splits a string into the command it runs, or names a second program to run"
            ));
            return;
        }
        if o.short.is_some_and(|s| w.runs_nothing.contains(&s)) {
            return;
        }
    }
    let Some(at) = parsed.first_operand else {
        if w.bare == Bare::Shell {
            out.unreadable = Some(format!(
                "`{name}` without a command starts a shell that reads standard input"
            ));
        }
        return;
    };
    let mut start = options_at + at + w.operands_before;
    // `env -` is `env -i`.
    if w.assignments && words.get(start).is_some_and(|a| a == "-") {
        start += 1;
    }
    while w.assignments && words.get(start).is_some_and(|a| is_assignment(a)) {
        if let Some(var) = super::runners::program_variable(&words[start]) {
            out.unreadable = Some(format!(
                "`{name} {var}=…` sets a variable that names a program the command runs"
            ));
            return;
        }
        start += 1;
    }
    // A word before the command that is not a literal may split into more options or
    // operands (`timeout $t v` with t='5 rm'): the command cannot be told.
    if let Some(r) = raw[1.min(raw.len())..start.min(raw.len())]
        .iter()
        .find(|r| word::shape(r) != WordShape::Literal)
    {
        out.unreadable = Some(format!(
            "`{name}` is given `{r}`, which is {}, so the command it runs cannot be told",
            word::shape(r).describe()
        ));
        return;
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
        push_inner(&raw[start..], &words[start..], call.depth, out);
    } else if w.bare == Bare::Shell {
        out.unreadable = Some(format!(
            "`{name}` without a command starts a shell that reads standard input"
        ));
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
        Some((dir, base))
            if toolbelt_engine::rules::SYSTEM_BIN_DIRS.contains(&dir) && !base.is_empty() =>
        {
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
