//! Worktree names: what a person or a model may ask for, and the names toolbelt makes.
//!
//! A name becomes both a directory under `.qwen/worktrees/` and a branch
//! `worktree-<name>`, so it is checked before either exists: letters, digits, `.`, `_`,
//! `-`, at most 64 (Qwen Code's rule), and what git's ref rules or a path would read
//! differently (`..`, a leading `.` or `-`, a trailing `.` or `.lock`) refused. No `/`
//! can pass, so a name is always one path component below `.qwen/worktrees`.

use super::WorktreeError;

/// Longest name.
pub const MAX_NAME: usize = 64;

/// What a `--worktree` value or an `enter_worktree` name asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameRequest {
    /// Make a name (`<adjective>-<noun>-<6 hex>`).
    Generated,
    /// This name, checked.
    Named(String),
    /// A pull request of `origin` (`#N` or a URL ending `/pull/N`): `pr-<N>`.
    PullRequest(u64),
}

impl NameRequest {
    /// Reads a `--worktree` value: empty for a generated name, `#N` or a pull request URL,
    /// or a name.
    pub fn parse(value: &str) -> Result<NameRequest, WorktreeError> {
        let value = value.trim();
        if value.is_empty() {
            return Ok(NameRequest::Generated);
        }
        let number = value.strip_prefix('#').or_else(|| {
            let (_, tail) = value.rsplit_once("/pull/")?;
            Some(tail.trim_end_matches('/'))
        });
        if let Some(number) = number {
            return match number.parse::<u64>() {
                Ok(n) if n > 0 => Ok(NameRequest::PullRequest(n)),
                _ => Err(WorktreeError::BadName(format!(
                    "{value:?}: a pull request is `#N` with N a number above 0"
                ))),
            };
        }
        check(value)?;
        Ok(NameRequest::Named(value.to_string()))
    }

    /// The name itself (a generated one is made now).
    pub fn slug(&self) -> String {
        match self {
            NameRequest::Generated => generate("", 6),
            NameRequest::Named(name) => name.clone(),
            NameRequest::PullRequest(n) => format!("pr-{n}"),
        }
    }
}

/// Checks a name; the error says what is allowed.
pub fn check(name: &str) -> Result<(), WorktreeError> {
    let bad = |why: &str| {
        Err(WorktreeError::BadName(format!(
            "{name:?}: {why} (a worktree name has letters, digits, `.`, `_` and `-`, at most {MAX_NAME})"
        )))
    };
    if name.is_empty() {
        return bad("the name is empty");
    }
    if name.chars().count() > MAX_NAME {
        return bad("the name is too long");
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return bad(&format!("{c:?} is not allowed"));
    }
    if name.contains("..") || name.starts_with(['.', '-']) || name.ends_with('.') {
        return bad("a name may not start with `.` or `-`, end with `.`, or hold `..`");
    }
    if name.to_ascii_lowercase().ends_with(".lock") {
        return bad("a name may not end with `.lock`");
    }
    Ok(())
}

const ADJECTIVES: &[&str] = &[
    "amber", "brisk", "calm", "deft", "eager", "fleet", "gentle", "hardy", "keen", "lucid",
    "mellow", "nimble", "quiet", "rapid", "steady", "tidy", "vivid", "witty",
];
const NOUNS: &[&str] = &[
    "badger", "cedar", "delta", "falcon", "harbor", "island", "juniper", "lantern", "meadow",
    "otter", "pebble", "quarry", "river", "spruce", "thicket", "valley", "willow", "zephyr",
];

/// `<prefix><adjective>-<noun>-<hex>` with `hex_digits` random hex digits; with a prefix
/// (`agent-`) only the prefix and the digits.
pub fn generate(prefix: &str, hex_digits: usize) -> String {
    let random = uuid::Uuid::new_v4();
    let bytes = random.as_bytes();
    let hex: String = random
        .simple()
        .to_string()
        .chars()
        .take(hex_digits)
        .collect();
    if !prefix.is_empty() {
        return format!("{prefix}{hex}");
    }
    let adjective = ADJECTIVES[usize::from(bytes[14]) % ADJECTIVES.len()];
    let noun = NOUNS[usize::from(bytes[15]) % NOUNS.len()];
    format!("{adjective}-{noun}-{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_leave_the_worktrees_folder_or_confuse_git_are_refused() {
        for bad in [
            "", "..", ".", "../x", "a/b", "/abs", "a\\b", "-b", ".hidden", "a..b", "x.", "x.lock",
            "a b", "é", "a\0b",
        ] {
            assert!(check(bad).is_err(), "{bad:?} passed");
        }
        assert!(check(&"a".repeat(65)).is_err());
        for good in ["feat", "feat-1.2_x", &"a".repeat(64), "A9"] {
            assert!(check(good).is_ok(), "{good:?} refused");
        }
    }

    #[test]
    fn a_value_is_a_generated_name_a_pull_request_or_a_checked_name() {
        assert_eq!(NameRequest::parse("").unwrap(), NameRequest::Generated);
        assert_eq!(
            NameRequest::parse("#12").unwrap(),
            NameRequest::PullRequest(12)
        );
        assert_eq!(
            NameRequest::parse("https://github.com/o/r/pull/7").unwrap(),
            NameRequest::PullRequest(7)
        );
        assert!(NameRequest::parse("#x").is_err());
        assert!(NameRequest::parse("#0").is_err());
        assert!(NameRequest::parse("../up").is_err());
        assert_eq!(NameRequest::PullRequest(3).slug(), "pr-3");
        let made = NameRequest::Generated.slug();
        assert!(check(&made).is_ok(), "{made}");
        assert_eq!(made.split('-').count(), 3, "{made}");
        let agent = generate("agent-", 7);
        assert!(super::super::is_agent_slug(&agent), "{agent}");
    }
}
