//! Matcher semantics, as Qwen Code's "Matcher Syntax" and Claude Code's files use them.

use super::*;

fn check(matcher: &str, target: &str, aliases: &[&str]) -> bool {
    let aliases: Vec<String> = aliases.iter().map(|a| a.to_string()).collect();
    Matcher::parse(matcher).unwrap().matches(target, &aliases)
}

#[test]
fn empty_star_and_dot_star_match_everything() {
    for m in ["", "*", ".*", "  ", " * "] {
        assert!(check(m, "anything", &[]), "{m:?}");
        assert!(Matcher::parse(m).unwrap().matches_all());
    }
    assert!(check("read_file | *", "write_file", &[]));
}

#[test]
fn exact_names_and_aliases_match_and_aliases_only_exactly() {
    assert!(check(
        "run_shell_command",
        "run_shell_command",
        &["Bash", "Shell"]
    ));
    assert!(check("Bash", "run_shell_command", &["Bash", "Shell"]));
    assert!(!check("Bash", "monitor", &[]));
    assert!(check("Edit|Write", "edit", &["Edit"]));
    assert!(check("Edit|Write", "write_file", &["Write", "WriteFile"]));
    assert!(!check("Edit|Write", "read_file", &["Read", "ReadFile"]));
    // An alias is compared exactly, never as a regular expression.
    assert!(!check("Writ", "write_file", &["Write"]));
    assert!(!check("^Write$", "write_file", &["Write"]));
}

#[test]
fn an_entry_is_an_unanchored_regular_expression_on_the_runtime_name() {
    assert!(check("read", "read_file", &[]));
    assert!(check("edit", "notebook_edit", &[]));
    assert!(check("write_.*", "write_file", &[]));
    assert!(check("^run_shell_command$", "run_shell_command", &[]));
    assert!(!check("^run_shell_command$", "run_shell_command_x", &[]));
    assert!(check("(write_file|edit)", "edit", &[]));
}

#[test]
fn mcp_matchers_match_toolbelts_mcp_tool_names() {
    assert!(check(
        "mcp__memory__.*",
        "mcp__memory__create_entities",
        &[]
    ));
    assert!(!check("mcp__memory__.*", "mcp__github__search", &[]));
    assert!(check("mcp__.*__search", "mcp__github__search", &[]));
    assert!(check("mcp__github__search", "mcp__github__search", &[]));
}

#[test]
fn lists_split_only_on_top_level_unescaped_pipes() {
    // `\|`, `[ |]` and `( | )` are part of the expression.
    assert!(check(r"notes\|todo\.md", "notes|todo.md", &[]));
    assert!(!check(r"notes\|todo\.md", "notes", &[]));
    assert!(check("foo[ |]bar", "foo|bar", &[]));
    assert!(check("foo[ |]bar", "foo bar", &[]));
    assert!(check("a(b | c)", "ab ", &[]));
    assert!(!check("a(b | c)", "ab", &[]));
    // Spaces around list entries are ignored; an escaped one is kept.
    assert!(check("permission_prompt | idle_prompt", "idle_prompt", &[]));
    assert!(check(r"\.env\ |\.pem", "x.env ", &[]));
    assert!(!check(r"\.env\ |\.pem", "x.env", &[]));
}

#[test]
fn stray_pipes_never_match_everything_unless_the_expression_says_so() {
    assert!(!check("read_(file|edit)|", "write_file", &[]));
    assert!(check("read_(file|edit)|", "read_edit", &[]));
    assert!(!check("|", "anything", &[]));
    assert!(!check("||", "anything", &[]));
    // Written as a regular expression, a trailing `|` matches the empty string.
    assert!(check("^write_file|", "read_file", &[]));
}

#[test]
fn look_around_works_and_only_anchored_exclusions_exclude() {
    assert!(!check("^(?!write_file).*$", "write_file", &[]));
    assert!(check("^(?!write_file).*$", "read_file", &[]));
    assert!(check("(?!write_file).*", "write_file", &[]));
}

#[test]
fn bad_and_huge_expressions_are_errors_that_quote_the_matcher() {
    let err = Matcher::parse("read_(file").unwrap_err();
    assert!(err.contains("\"read_(file\""), "{err}");
    assert!(err.contains("not a valid regular expression"), "{err}");
    assert!(Matcher::parse(&"a".repeat(5000)).is_err());
    // Compiles to more than the size limit.
    assert!(Matcher::parse("(?:a{1000}){1000}").is_err());
}

#[test]
fn unicode_spaces_at_an_entrys_edge_do_not_break_trimming() {
    assert!(check("a\u{3000}|b", "a", &[]));
    assert!(check("\u{3000}", "x", &[]));
}
