//! The texts a command rule is matched against, one set per kind of rule.
//!
//! A rule is written the way a person types a command (`rm -rf *`, `git push *`), but
//! the shell runs the same program under many spellings: `\rm`, `r"m"`, `'rm'`,
//! `/bin/rm`, `./rm`, `env rm`, `sudo rm`. The two kinds of rules need opposite readings:
//!
//! - **Deny and ask rules restrict.** Missing a spelling lets the command through, so
//!   they see every form: as written, with quotes and escapes removed, with a
//!   path-qualified name reduced to its last component (`/tmp/x/rm` is judged as `rm`:
//!   a workspace script called `rm` is refused too, which is the safe mistake). The
//!   command inside a wrapper (`env FOO=1 rm`, `sudo -u x rm`) is a subject of its own
//!   that the shell tool gives; this module knows no shell grammar.
//! - **Allow rules approve.** Reading too much into a command approves something the
//!   person never named, so they see only the forms that run exactly the program named:
//!   as written and unquoted, where a path-qualified name counts as its last component
//!   only in a standard system directory ([`SYSTEM_BIN_DIRS`]). `./ls` and `/tmp/x/ls`
//!   stay themselves: `Bash(ls *)` does not approve a workspace script named `ls`.
//!   A wrapper's command is judged as a subject of its own, so `sudo rm` is approved
//!   only when rules approve both `sudo rm` and `rm`.
//!
//! Unquoted words are re-quoted with single quotes when they hold a space or a shell
//! metacharacter, so removing quotes cannot invent a word boundary
//! (`git "log --output=x"` stays one argument, not `git log --output=x`).

use toolbelt_core::ShellCommand;

/// Directories whose programs are the system's own: `/usr/bin/ls` is `ls` for every
/// rule. A program anywhere else is named by its path for allow rules.
pub const SYSTEM_BIN_DIRS: &[&str] = &["/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin"];

/// Why a command rule is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CommandPurpose {
    /// An allow rule: it approves only the program it names (bare name or system
    /// directory), with no write through a redirection and no environment prefix it does
    /// not spell out.
    Approve,
    /// A `tools.core` shell entry: which programs may run at all. Names are read as for
    /// [`CommandPurpose::Approve`]; redirections and assignments do not change the program,
    /// and an unreadable command (`ShellCommand::unreadable`) is within no limit but `*`.
    Limit,
    /// A deny or ask rule: every spelling of the command counts.
    Restrict,
}

/// The forms an allow rule (or `tools.core`) sees.
pub(super) fn strict(command: &ShellCommand) -> Vec<String> {
    let mut forms = vec![command.text.clone()];
    if let Some(canonical) = canonical(&command.words, NameReading::SystemOnly) {
        push_new(&mut forms, canonical);
    }
    forms
}

/// The forms a deny or ask rule sees. What a wrapper runs (`sudo rm x`) is not read
/// here: the shell tool, which knows the wrappers' grammars, gives it as a subject of
/// its own, and marks what it cannot read (`ShellCommand::unreadable`).
pub(super) fn every(command: &ShellCommand) -> Vec<String> {
    let mut forms = vec![command.text.clone()];
    for reading in [NameReading::SystemOnly, NameReading::LastComponent] {
        if let Some(canonical) = canonical(&command.words, reading) {
            push_new(&mut forms, canonical);
        }
    }
    forms
}

fn push_new(forms: &mut Vec<String>, form: String) {
    if !forms.contains(&form) {
        forms.push(form);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameReading {
    /// `/usr/bin/ls` → `ls`; `./ls` stays `./ls`.
    SystemOnly,
    /// `/anything/ls` → `ls`.
    LastComponent,
}

/// The unquoted words joined by spaces, each re-quoted where needed, with the program
/// name read as `reading` says.
fn canonical(words: &[String], reading: NameReading) -> Option<String> {
    let (name, args) = words.split_first()?;
    let name = program_name(name, reading);
    let mut out = quote(name);
    for arg in args {
        out.push(' ');
        out.push_str(&quote(arg));
    }
    Some(out)
}

/// The name a rule sees for the program `word`.
fn program_name(word: &str, reading: NameReading) -> &str {
    let Some((dir, base)) = word.rsplit_once('/') else {
        return word;
    };
    if base.is_empty() {
        return word;
    }
    match reading {
        NameReading::LastComponent => base,
        NameReading::SystemOnly if is_system_dir(dir) => base,
        NameReading::SystemOnly => word,
    }
}

/// Whether `dir` is one of [`SYSTEM_BIN_DIRS`], allowing repeated or trailing slashes
/// (`//usr//bin/`) but nothing that climbs (`/usr/bin/../../tmp`).
fn is_system_dir(dir: &str) -> bool {
    let parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    if !dir.starts_with('/') || parts.iter().any(|p| *p == "." || *p == "..") {
        return false;
    }
    let normal = format!("/{}", parts.join("/"));
    SYSTEM_BIN_DIRS.contains(&normal.as_str())
}

/// Whether `word` needs no quoting.
fn is_bare_word(word: &str) -> bool {
    !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%^~".contains(&b))
}

fn quote(word: &str) -> String {
    if is_bare_word(word) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(words: &[&str]) -> ShellCommand {
        ShellCommand {
            text: words.join(" "),
            words: words.iter().map(|w| w.to_string()).collect(),
            ..ShellCommand::default()
        }
    }

    #[test]
    fn restricting_forms_see_through_paths_and_quotes() {
        let forms = every(&command(&["/tmp/x/rm", "-rf", "a b"]));
        assert!(forms.contains(&"rm -rf 'a b'".to_string()), "{forms:?}");
        let forms = every(&command(&["sudo", "rm"]));
        assert!(!forms.contains(&"rm".to_string()), "{forms:?}");
    }

    #[test]
    fn approving_forms_keep_paths_outside_system_directories() {
        assert!(strict(&command(&["/usr/bin/ls", "-la"])).contains(&"ls -la".to_string()));
        assert!(strict(&command(&["//usr//bin/ls"])).contains(&"ls".to_string()));
        let forms = strict(&command(&["/usr/bin/../../tmp/ls"]));
        assert!(!forms.contains(&"ls".to_string()), "{forms:?}");
        let forms = strict(&command(&["./ls"]));
        assert_eq!(forms, ["./ls"]);
        let forms = strict(&command(&["git", "log --output=x"]));
        assert_eq!(forms[1], "git 'log --output=x'");
    }
}
