//! Splitting a shell command into the simple commands it runs, with a real parser.
//!
//! The permission rules and the read-only check both judge *simple commands*
//! (`git commit -m "x"`), never the whole line: `ls && rm -rf ~` must not pass as `ls`.
//! Splitting by hand on `&&`, `;` and `|` gets quoting, escapes, heredocs and nested
//! substitutions wrong, so this module uses a real bash grammar.
//!
//! Why tree-sitter-bash: it is the grammar Qwen Code itself uses for the same job (through
//! WASM there, natively here), so root commands and read-only answers agree with the
//! reference; it is maintained by the tree-sitter organisation and covers bash rather than
//! only POSIX sh; and it never gives up: a command with a syntax error still yields a tree
//! (with `ERROR` nodes), so we can still find the commands in it and simply treat the call
//! as needing confirmation. The alternatives considered were `brush-parser` (pure Rust and
//! well kept, but it pulls `insta` and `cached` into normal dependencies and rejects
//! incomplete input outright) and `yash-syntax` (POSIX only, async API).
//!
//! What comes out ([`ParsedCommand`]): every simple command in source order, including the
//! ones inside `$(…)`, `` `…` ``, `<(…)`, subshells, loops and function bodies, each with
//! its leading `VAR=x` assignments removed; whether any command substitution or process
//! substitution occurs; whether output is redirected to a file; whether the text had a
//! syntax error; and whether it ends in a bare `&`.
//!
//! Hostile lines cost bounded work. tree-sitter's error recovery is quadratic on some
//! inputs (`a|a|a|…` sixteen thousand long takes seconds), and a command nested in
//! itself (`$(a $(a $(…)))`) holds its inner commands' text, so listing every command
//! is quadratic in memory. So a line with more pipes than [`MAX_PIPES`] is not parsed
//! (recovery over a long pipeline is the quadratic step tree-sitter cannot interrupt),
//! a parse has a processor-time budget ([`PARSE_BUDGET`]), and the walk a budget of text
//! it may take ([`text_budget`]). A line past any is *unanalysed*
//! ([`ParsedCommand::unanalysed`]): it is judged whole, as written; every deny and ask
//! rule covers it and no allow rule does (but one allowing every command); it never runs
//! unasked. The tree is walked with a stack of its own, so nesting depth cannot overflow
//! the thread's.

use std::cell::RefCell;
use std::time::Duration;

use tree_sitter::{Node, Parser};

pub(crate) mod getopt;
mod runner_options;
mod runner_readers;
mod runners;
pub(crate) mod runs;
mod runs_git;
pub(crate) mod word;
mod wrapper_options;

/// One simple command: a name and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SimpleCommand {
    /// The words as written (quotes kept), joined by single spaces, without leading
    /// assignments. This is what permission rules are matched against.
    pub text: String,
    /// The words with quotes and escapes removed, for the read-only check.
    pub words: Vec<String>,
    /// Leading `VAR=x` assignments, as written. Any of them makes the command need
    /// confirmation (`LD_PRELOAD=`, `LESSOPEN=`, `GIT_EXTERNAL_DIFF=` change what runs).
    pub assignments: Vec<String>,
    /// The words as written (quotes kept), one per word of [`SimpleCommand::words`]: what
    /// [`word::shape`] judges (is the word a literal, a pattern, an expansion?).
    pub raw: Vec<String>,
}

impl SimpleCommand {
    /// The command's name without a directory (`/usr/bin/git` → `git`).
    #[cfg(test)]
    pub(crate) fn root(&self) -> &str {
        let first = self.words.first().map(String::as_str).unwrap_or("");
        first.rsplit('/').next().unwrap_or(first)
    }
}

/// What a command line does, as far as permissions care.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ParsedCommand {
    pub commands: Vec<SimpleCommand>,
    /// `$(…)`, backticks, `<(…)` or `>(…)` somewhere: what runs is only known at run time.
    pub has_substitution: bool,
    /// Output redirected to a file (`>`, `>>`, `&>`, `>|`, `<>`), other than `/dev/null`
    /// or another file descriptor.
    pub writes_to_file: bool,
    /// The parser had to recover from a syntax error.
    pub syntax_error: bool,
    /// The line ends in a bare `&` (the last command is sent to the background).
    pub ends_in_background: bool,
    /// A redirection opens a network connection (`< /dev/tcp/host/port`, any operator,
    /// `/dev/udp` too) or a place only known at run time (`< $f`).
    pub redirects_to_network: bool,
    /// Something is evaluated as code when the line is expanded, beyond the commands
    /// listed: arithmetic (`$((…))`, `((…))`, `for ((…))`, array subscripts, `${x:y}`)
    /// and indirect expansion (`${!x}`) evaluate a variable's value, and a value such as
    /// `a[$(id)]` runs a command there.
    pub evaluates_code: bool,
    /// A variable that names a program (`PAGER`, `GIT_CONFIG_PARAMETERS`, `LD_PRELOAD`,
    /// see `runners.rs`) is assigned somewhere on the line: what its commands run is not
    /// what their words say, so every one of them is unreadable.
    pub program_variable: Option<String>,
    /// Why the line was not analysed (it took more than its budget, see the module
    /// documentation); then [`ParsedCommand::commands`] is the whole line alone and
    /// [`ParsedCommand::syntax_error`] is set.
    pub unanalysed: Option<&'static str>,
}

impl ParsedCommand {
    /// The distinct root commands, in order of appearance.
    #[cfg(test)]
    pub(crate) fn roots(&self) -> Vec<String> {
        let mut roots: Vec<String> = Vec::new();
        for c in &self.commands {
            let root = c.root();
            if !root.is_empty() && !roots.iter().any(|r| r == root) {
                roots.push(root.to_string());
            }
        }
        roots
    }

    /// The simple commands as the permission rules see them. A redirection to a file or
    /// a line that did not parse marks every command as writing: the split cannot tell
    /// which command a group's redirection belongs to, and an allow rule must not approve
    /// a write it cannot see.
    pub(crate) fn rule_subjects(&self) -> Vec<toolbelt_core::ShellCommand> {
        let writes = self.writes_to_file || self.syntax_error || self.redirects_to_network;
        let subject = |c: &SimpleCommand, unreadable: Option<String>| toolbelt_core::ShellCommand {
            text: c.text.clone(),
            words: c.words.clone(),
            assignments: c.assignments.clone(),
            writes,
            unreadable,
        };
        let mut subjects = Vec::new();
        let assigned = self
            .program_variable
            .as_ref()
            .map(|name| format!("the line sets `{name}`, which names a program that commands run"));
        if let Some(why) = self.unanalysed {
            let why = format!("the command line is too complex to analyse: {why}");
            return self
                .commands
                .iter()
                .map(|c| subject(c, Some(why.clone())))
                .collect();
        }
        for c in &self.commands {
            // What a wrapper or a script given as text runs is judged too (`sudo rm x`
            // also as `rm x`); what cannot be read makes the command unreadable.
            let found = runs::runs(c);
            subjects.push(subject(c, found.unreadable.or_else(|| assigned.clone())));
            subjects.extend(
                found
                    .inner
                    .iter()
                    .map(|inner| subject(inner, assigned.clone())),
            );
        }
        subjects
    }
}

thread_local! {
    // A parser is cheap but not free to set up; one per thread is reused.
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Processor time (of the calling thread, so a busy machine does not shorten it) one
/// parse may take. A real command line of 100 KiB parses in a few milliseconds.
const PARSE_BUDGET: Duration = Duration::from_millis(250);

/// The most `|` a line may hold and still be parsed. tree-sitter nests a pipeline to
/// the right, so its stages stay on the parse stack until it ends, and recovering from a
/// syntax error over that stack costs time and memory quadratic in its depth, in one
/// step the budget cannot interrupt (`a|a|…|` 32,000 stages long took 50 s and 8 GiB).
/// 512 stages cost at most a few milliseconds.
const MAX_PIPES: usize = 512;

/// The `|` of `command` that are not half of a `||`, counted wherever they are (a
/// quoted one too: telling needs the parse this guards).
fn pipes(command: &str) -> usize {
    let bytes = command.as_bytes();
    (0..bytes.len())
        .filter(|&i| {
            bytes[i] == b'|' && bytes.get(i + 1) != Some(&b'|') && (i == 0 || bytes[i - 1] != b'|')
        })
        .count()
}

/// Bytes of command text the walk may take from a line of `len` bytes: each byte is
/// taken once per command it is nested in, and real lines nest a few deep.
fn text_budget(len: usize) -> usize {
    len.saturating_mul(16).saturating_add(64 * 1024)
}

/// Parses `command`. Never fails: text the grammar cannot make sense of is reported
/// through [`ParsedCommand::syntax_error`], and the whole line is then added as one more
/// command so that rules judge it as written.
pub(crate) fn parse(command: &str) -> ParsedCommand {
    let mut parsed = ParsedCommand::default();
    let tree = if pipes(command) > MAX_PIPES {
        Err("it has more than 512 pipes")
    } else {
        parse_tree(command)
    };
    match tree {
        Ok(tree) => {
            let root = tree.root_node();
            let src = command.as_bytes();
            parsed.syntax_error = root.has_error();
            parsed.ends_in_background = ends_in_background(root);
            if let Err(why) = walk(root, src, text_budget(src.len()), &mut parsed) {
                parsed = unanalysed(why);
            }
        }
        Err(why) => parsed = unanalysed(why),
    }
    // After a syntax error the split cannot be trusted: the whole line is judged too,
    // so a rule must cover it as written.
    if parsed.syntax_error && !command.trim().is_empty() {
        let text = command.split_whitespace().collect::<Vec<_>>().join(" ");
        if !parsed.commands.iter().any(|c| c.text == text) {
            let words = text.split(' ').map(unquote).collect();
            let raw = text.split(' ').map(str::to_string).collect();
            parsed.commands.push(SimpleCommand {
                text,
                words,
                assignments: Vec::new(),
                raw,
            });
        }
    }
    parsed
}

fn unanalysed(why: &'static str) -> ParsedCommand {
    ParsedCommand {
        syntax_error: true,
        unanalysed: Some(why),
        ..ParsedCommand::default()
    }
}

/// The tree of `command`, or why there is none: the parse ran past [`PARSE_BUDGET`].
fn parse_tree(command: &str) -> Result<tree_sitter::Tree, &'static str> {
    let thread_time = || rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    let start = thread_time();
    let budget = rustix::time::Timespec::try_from(PARSE_BUDGET).unwrap_or(start);
    let over = |now: rustix::time::Timespec| {
        let spent = (now.tv_sec - start.tv_sec) as i128 * 1_000_000_000
            + (now.tv_nsec - start.tv_nsec) as i128;
        spent > budget.tv_sec as i128 * 1_000_000_000 + budget.tv_nsec as i128
    };
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .map_err(|_| "the bash grammar could not be loaded")?;
            *slot = Some(parser);
        }
        let Some(parser) = slot.as_mut() else {
            return Err("the bash grammar could not be loaded");
        };
        let src = command.as_bytes();
        let mut read = |at: usize, _| src.get(at..).unwrap_or_default();
        let mut progress = |_: &tree_sitter::ParseState| over(thread_time());
        let options = tree_sitter::ParseOptions::new().progress_callback(&mut progress);
        let tree = parser.parse_with_options(&mut read, None, Some(options));
        if tree.is_none() {
            // A cancelled parse is kept for resuming; the next line starts afresh.
            parser.reset();
        }
        tree.ok_or("parsing it took more than its processor-time budget")
    })
}

fn text<'a>(node: Node, src: &'a [u8]) -> &'a str {
    node.utf8_text(src).unwrap_or("")
}

/// Visits every node of the tree, each before its children and the children in order;
/// past `budget` bytes of text taken (see [`text_budget`]) it stops with the reason.
/// Iterative: a command nested ten thousand deep (`( ( ( … ) ) )`) is a deep tree, and a
/// recursive walk would overflow the stack.
fn walk(
    root: Node,
    src: &[u8],
    budget: usize,
    out: &mut ParsedCommand,
) -> Result<(), &'static str> {
    let mut taken = 0usize;
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        if takes_text(node.kind()) {
            taken = taken.saturating_add(node.end_byte() - node.start_byte());
            if taken > budget {
                return Err("its commands nest so deep that listing them would take too much text");
            }
        }
        visit(node, src, out);
        let first = pending.len();
        pending.extend(children(node));
        pending[first..].reverse();
    }
    Ok(())
}

/// The nodes whose text [`visit`] reads or copies.
fn takes_text(kind: &str) -> bool {
    matches!(
        kind,
        "command"
            | "declaration_command"
            | "unset_command"
            | "test_command"
            | "file_redirect"
            | "expansion"
            | "variable_assignment"
    )
}

fn visit(node: Node, src: &[u8], out: &mut ParsedCommand) {
    match node.kind() {
        "command" => out.commands.push(simple_command(node, src)),
        "declaration_command" | "unset_command" | "test_command" => {
            // `export A=b`, `declare -x`, `unset x`, `[[ … ]]`: builtins with a grammar
            // of their own; their words are the node's children.
            let words: Vec<Node> = children(node)
                .into_iter()
                .filter(|c| c.kind() != "comment")
                .collect();
            out.commands.push(from_words(&words, Vec::new(), src));
        }
        "command_substitution" | "process_substitution" => out.has_substitution = true,
        "file_redirect" => {
            out.writes_to_file |= redirect_writes(node, src);
            out.redirects_to_network |= redirect_reaches_network(node, src);
        }
        "variable_assignment" if out.program_variable.is_none() => {
            let assignment = text(node, src);
            out.program_variable = runners::program_variable(assignment).map(str::to_string);
        }
        "arithmetic_expansion" | "subscript" | "c_style_for_statement" => {
            out.evaluates_code = true;
        }
        "compound_statement" if children(node).first().is_some_and(|c| c.kind() == "((") => {
            out.evaluates_code = true;
        }
        "expansion" if expansion_evaluates(text(node, src)) => out.evaluates_code = true,
        "ERROR" => out.syntax_error = true,
        _ => {}
    }
    if node.is_missing() {
        out.syntax_error = true;
    }
}

fn children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.children(&mut cursor).collect()
}

/// A `command` node: assignments and redirections are skipped; the name and the
/// arguments are the words.
fn simple_command(node: Node, src: &[u8]) -> SimpleCommand {
    let all = children(node);
    let assignments = all
        .iter()
        .take_while(|c| c.kind() == "variable_assignment" || is_redirect(c.kind()))
        .filter(|c| c.kind() == "variable_assignment")
        .map(|c| text(*c, src).trim().to_string())
        .collect();
    let words: Vec<Node> = all
        .into_iter()
        .skip_while(|c| c.kind() == "variable_assignment" || is_redirect(c.kind()))
        .filter(|c| !is_redirect(c.kind()) && c.kind() != "comment")
        .collect();
    from_words(&words, assignments, src)
}

fn from_words(words: &[Node], assignments: Vec<String>, src: &[u8]) -> SimpleCommand {
    let raw: Vec<&str> = words.iter().map(|w| text(*w, src)).collect();
    SimpleCommand {
        text: raw
            .iter()
            .map(|w| w.trim())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
        words: raw.iter().map(|w| unquote(w.trim())).collect(),
        assignments,
        raw: raw.iter().map(|w| w.trim().to_string()).collect(),
    }
}

fn is_redirect(kind: &str) -> bool {
    matches!(
        kind,
        "file_redirect" | "heredoc_redirect" | "herestring_redirect"
    )
}

/// Whether a redirection writes to a file. Duplicating a descriptor (`2>&1`, `>&2`) and
/// writing to `/dev/null` change nothing on disk.
fn redirect_writes(node: Node, src: &[u8]) -> bool {
    let parts = children(node);
    let Some(op) = parts
        .iter()
        .find(|c| !c.is_named())
        .map(|c| text(*c, src).to_string())
    else {
        return false;
    };
    let destination = node
        .child_by_field_name("destination")
        .map(|d| unquote(text(d, src)))
        .unwrap_or_default();
    let is_fd = !destination.is_empty()
        && (destination.bytes().all(|b| b.is_ascii_digit()) || destination == "-");
    match op.as_str() {
        ">&" | "<&" | ">&-" | "<&-" if is_fd => false,
        ">" | ">>" | "&>" | "&>>" | ">|" | ">&" | "<>" => destination != "/dev/null",
        _ => false,
    }
}

/// Whether a redirection (input or output, any operator) goes to `/dev/tcp/…` or
/// `/dev/udp/…`, which bash opens as a socket, or to a destination that is not a literal
/// (`< $f`), which might be one.
fn redirect_reaches_network(node: Node, src: &[u8]) -> bool {
    let Some(destination) = node.child_by_field_name("destination") else {
        return false;
    };
    let raw = text(destination, src);
    if word::shape(raw) != word::WordShape::Literal {
        return true;
    }
    let path = unquote(raw);
    ["/dev/tcp/", "/dev/udp/"]
        .iter()
        .any(|p| path.starts_with(p))
}

/// Whether a `${…}` expansion evaluates its operand as arithmetic or as a name: an
/// array subscript (`${a[i]}`), an offset or length (`${x:i}`, `${x:i:n}`), or an
/// indirection (`${!x}`).
fn expansion_evaluates(expansion: &str) -> bool {
    let inner = expansion
        .strip_prefix("${")
        .and_then(|e| e.strip_suffix('}'))
        .unwrap_or(expansion);
    if inner.starts_with('!') || inner.contains('[') {
        return true;
    }
    inner
        .split_once(':')
        .is_some_and(|(_, rest)| !rest.starts_with(['-', '=', '?', '+']))
}

/// A bare `&` as the last token of the line (not `&&`, not a quoted or escaped `&`).
fn ends_in_background(root: Node) -> bool {
    let mut last = None;
    for child in children(root) {
        if child.kind() != "comment" {
            last = Some(child);
        }
    }
    last.is_some_and(|n| n.kind() == "&")
}

/// Removes quotes and escapes the way the shell would for a literal word: `'a b'`,
/// `"a\"b"`, `a\ b`, `$'x'`. Expansions (`$x`) are left as written.
pub(crate) fn unquote(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut chars = word.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next()
                    && next != '\n'
                {
                    out.push(next);
                }
            }
            '\'' => {
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    out.push(c);
                }
            }
            '$' if chars.peek() == Some(&'\'') => {
                chars.next();
                word::ansi_c(&mut chars, &mut out);
            }
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.peek() {
                            Some('"' | '\\' | '$' | '`') => {
                                if let Some(next) = chars.next() {
                                    out.push(next);
                                }
                            }
                            Some('\n') => {
                                chars.next();
                            }
                            _ => out.push('\\'),
                        },
                        other => out.push(other),
                    }
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod spelling_tests;

#[cfg(test)]
mod runner_tests;

#[cfg(test)]
mod runner_scheduler_tests;
