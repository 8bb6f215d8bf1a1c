//! `#name` references in a prompt (VS Code's tool references): `#toolReferenceName`
//! brings a tool into the request, `#set` every tool of a tool set.
//!
//! A reference is `#` at the start of the text or after whitespace or an opening
//! bracket, followed by `[A-Za-z0-9_-]+`. The text is left as it is (the model reads
//! the reference too); a name that is neither a tool's reference name nor a tool set is
//! plain text (`#123` in "fix #123" stays an issue number).

use toolbelt_engine::registry::ToolRegistry;

/// The reference names in `text`, in order of first appearance, without duplicates.
pub(crate) fn reference_names(text: &str) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices('#') {
        let starts_word = i == 0
            || matches!(
                bytes[i - 1],
                b' ' | b'\t' | b'\n' | b'\r' | b'(' | b'[' | b'{'
            );
        if !starts_word {
            continue;
        }
        let rest = &text[i + 1..];
        let len = rest
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
            .count();
        let name = &rest[..len];
        if !name.is_empty() && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The registered tools the references in `text` stand for, in order, without
/// duplicates.
pub(crate) fn referenced_tools(text: &str, registry: &ToolRegistry) -> Vec<String> {
    let mut tools: Vec<String> = Vec::new();
    for name in reference_names(text) {
        for tool in registry.resolve_reference(name) {
            if !tools.contains(&tool) {
                tools.push(tool);
            }
        }
    }
    tools
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_start_a_word_and_stop_at_the_first_other_character() {
        assert_eq!(
            reference_names("use #countTabs, then (#set-a) and #countTabs again"),
            ["countTabs", "set-a"]
        );
        assert_eq!(reference_names("#first\n#second."), ["first", "second"]);
        assert!(reference_names("a#b c# # ## heading").is_empty());
        assert_eq!(reference_names("é#x #ü #y"), ["y"]);
    }
}
