//! The text of a permission rule (`Tool(specifier)`): its length limit and how it splits
//! into a tool name and a specifier. Settings check their rules' form with it before the
//! rules are ever parsed, so it lives below them; matching is the engine's.

/// Whether `text` is a rule at all: a tool name and an optional, balanced specifier,
/// at most [`MAX_RULE_BYTES`] long.
pub fn is_well_formed_rule(text: &str) -> bool {
    split_rule(text).is_some()
}

/// The longest rule: matching a command against a pattern costs their lengths
/// multiplied, and a cloned repository's deny rules apply before it is trusted, so a
/// rule of megabytes would slow every shell call of the session to a halt.
pub const MAX_RULE_BYTES: usize = 4096;

/// The name and the specifier (`None` when absent, empty or `*`) of a rule's text;
/// `None` when it is not a rule.
pub fn split_rule(text: &str) -> Option<(&str, Option<String>)> {
    let trimmed = text.trim();
    if trimmed.len() > MAX_RULE_BYTES {
        return None;
    }
    let (name, specifier) = match trimmed.find('(') {
        None if trimmed.contains(')') => return None,
        None => (trimmed, None),
        Some(open) => {
            let inner = trimmed[open + 1..].strip_suffix(')')?;
            if !balanced(inner) {
                return None;
            }
            let inner = inner.trim();
            let inner = inner
                .strip_suffix(":*")
                .map(|p| format!("{p} *"))
                .unwrap_or_else(|| inner.to_string());
            (trimmed[..open].trim(), Some(inner))
        }
    };
    if name.is_empty() {
        return None;
    }
    Some((name, specifier.filter(|s| !s.is_empty() && s != "*")))
}

/// Whether every `)` of a specifier closes an earlier `(` and every `(` is closed:
/// `Bash(curl *))` is a typo, not a rule for the command `curl *)`.
fn balanced(specifier: &str) -> bool {
    let mut depth = 0usize;
    for c in specifier.chars() {
        match c {
            '(' => depth += 1,
            ')' => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => {}
        }
    }
    depth == 0
}
