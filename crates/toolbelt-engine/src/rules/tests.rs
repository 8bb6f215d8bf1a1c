use super::*;
use serde_json::json;

/// The words of the built-in tools as the tools crate declares them (core's own tests
/// may name tools; core's code may not).
pub(crate) fn vocabulary() -> RuleVocabulary {
    let mut v = RuleVocabulary::default();
    let read = Some(PathOperation::Read);
    let edit = Some(PathOperation::Edit);
    for (name, aliases, op) in [
        ("read_file", &["Read"][..], read),
        ("read_many_files", &["Read"], read),
        (
            "grep_search",
            &["Read", "Grep", "search_file_content"],
            read,
        ),
        ("glob", &["Read", "Glob"], read),
        ("list_directory", &["Read", "LS", "ls"], read),
        ("edit", &["Edit", "replace"], edit),
        ("write_file", &["Edit", "Write"], edit),
        ("notebook_edit", &["NotebookEdit"], edit),
        ("run_shell_command", &["Bash", "Shell"], None),
        ("web_fetch", &["WebFetch"], None),
        ("web_search", &["WebSearch"], None),
        ("todo_write", &["TodoWrite"], None),
        ("skill", &["Skill"], None),
        ("agent", &["Task"], None),
    ] {
        v.add(name, aliases, op);
    }
    v.add_command_runner("run_shell_command");
    v
}

/// No rules, parsed with the test vocabulary, anchored nowhere (what the rules' old
/// `Default` was, which the tests were written against).
pub(crate) fn empty_rules() -> PermissionRules {
    let mut rules = PermissionRules::new(&vocabulary());
    rules.base = RuleBase::default();
    rules
}

/// `Rule::parse` with the test vocabulary.
fn parse(text: &str) -> Option<Rule> {
    Rule::parse(text, &vocabulary())
}

/// `PermissionRules::from_settings` with the test vocabulary.
fn from_settings(settings: &Settings) -> PermissionRules {
    PermissionRules::from_settings(settings, &vocabulary())
}

#[test]
fn parses_names_aliases_and_specifiers() {
    let r = parse("Bash(git:*)").unwrap();
    assert_eq!(r.tools, ["run_shell_command"]);
    assert_eq!(r.specifier.as_deref(), Some("git *"));
    assert_eq!(
        parse("Read").unwrap().tools,
        [
            "read_file",
            "read_many_files",
            "grep_search",
            "glob",
            "list_directory"
        ]
    );
    assert_eq!(
        parse("edit(*)").unwrap().specifier,
        None,
        "(*) is the whole tool"
    );
    assert!(parse("Bash(git").is_none());
    assert!(parse("Bash)").is_none());
    assert!(parse("").is_none());
}

/// Every alias, as a bare deny rule, against every built-in tool: the verdict of each
/// pair, not only how many tools an alias expands to.
#[test]
fn alias_table_verdicts() {
    const TOOLS: &[&str] = &[
        "run_shell_command",
        "read_file",
        "read_many_files",
        "grep_search",
        "glob",
        "list_directory",
        "edit",
        "write_file",
        "web_fetch",
        "web_search",
        "agent",
    ];
    let table: &[(&str, &[&str])] = &[
        ("Bash", &["run_shell_command"]),
        ("Shell", &["run_shell_command"]),
        (
            "Read",
            &[
                "read_file",
                "read_many_files",
                "grep_search",
                "glob",
                "list_directory",
            ],
        ),
        ("Edit", &["edit", "write_file"]),
        ("Write", &["write_file"]),
        ("Grep", &["grep_search"]),
        ("Glob", &["glob"]),
        ("LS", &["list_directory"]),
        ("replace", &["edit"]),
        ("search_file_content", &["grep_search"]),
        ("ls", &["list_directory"]),
        ("read_file", &["read_file"]),
    ];
    for (alias, denied) in table {
        let mut rules = empty_rules();
        rules.add(RuleList::Deny, alias);
        for tool in TOOLS {
            let want = if denied.contains(tool) {
                Decision::Deny
            } else {
                Decision::Default
            };
            let verdict = rules.verdict(tool, &PermissionSubject::None);
            assert_eq!(verdict.decision, want, "deny {alias} on {tool}");
            if want == Decision::Deny {
                assert_eq!(verdict.rule.as_deref(), Some(*alias));
            }
        }
    }
}

#[test]
fn deny_beats_ask_beats_allow() {
    let s = Settings::from_value(json!({"permissions": {
        "allow": ["read_file", "glob", "edit"], "ask": ["glob", "edit"], "deny": ["edit"]
    }}))
    .unwrap();
    let rules = from_settings(&s);
    let none = PermissionSubject::None;
    assert_eq!(rules.evaluate("read_file", &none), Decision::Allow);
    assert_eq!(rules.evaluate("glob", &none), Decision::Ask);
    assert_eq!(rules.evaluate("edit", &none), Decision::Deny);
    assert_eq!(rules.evaluate("write_file", &none), Decision::Default);
}

#[test]
fn legacy_lists_feed_allow_and_deny() {
    let s =
        Settings::from_value(json!({"tools": {"allowed": ["Edit"], "exclude": ["write_file"]}}))
            .unwrap();
    let rules = from_settings(&s);
    assert_eq!(
        rules.evaluate("edit", &PermissionSubject::None),
        Decision::Allow
    );
    assert_eq!(
        rules.evaluate("write_file", &PermissionSubject::None),
        Decision::Deny
    );
}

#[test]
fn literal_and_domain_specifiers() {
    let mut rules = empty_rules();
    rules.add(RuleList::Allow, "agent(reviewer)");
    rules.add(RuleList::Deny, "web_fetch(domain:evil.example)");
    assert_eq!(
        rules.evaluate("agent", &PermissionSubject::Literal("reviewer".into())),
        Decision::Allow
    );
    assert_eq!(
        rules.evaluate("agent", &PermissionSubject::Literal("other".into())),
        Decision::Default
    );
    assert_eq!(
        rules.evaluate(
            "web_fetch",
            &PermissionSubject::Domain("evil.example".into())
        ),
        Decision::Deny
    );
}

#[test]
fn invalid_entries_are_kept_for_a_warning() {
    let mut rules = empty_rules();
    rules.add(RuleList::Allow, "Bash(oops");
    assert_eq!(rules.invalid, ["Bash(oops"]);
}

fn commands(parts: &[&str]) -> PermissionSubject {
    PermissionSubject::Commands(parts.iter().map(|s| ShellCommand::from_text(s)).collect())
}

#[test]
fn compound_commands_take_the_strictest_part_and_name_the_rule() {
    let s = Settings::from_value(json!({"permissions": {
        "allow": ["Bash(git *)", "Bash(ls)"], "deny": ["run_shell_command(rm *)"]
    }}))
    .unwrap();
    let rules = from_settings(&s);
    let tool = "run_shell_command";
    assert_eq!(
        rules.evaluate(tool, &commands(&["git status", "ls -la"])),
        Decision::Allow
    );
    assert_eq!(
        rules.evaluate(tool, &commands(&["git status", "make"])),
        Decision::Default
    );
    let v = rules.verdict(tool, &commands(&["git status", "rm -rf x"]));
    assert_eq!(v.decision, Decision::Deny);
    assert_eq!(v.rule.as_deref(), Some("run_shell_command(rm *)"));
    assert_eq!(
        rules.evaluate(tool, &commands(&["FOO=1 rm -f y"])),
        Decision::Deny
    );
}

#[test]
fn tools_exclude_entries_with_a_command_are_deny_rules() {
    let s = Settings::from_value(json!({"excludeTools": ["run_shell_command(rm)"]})).unwrap();
    let rules = from_settings(&s);
    let tool = "run_shell_command";
    let v = rules.verdict(tool, &commands(&["ls", "rm -rf build"]));
    assert_eq!(v.decision, Decision::Deny);
    assert_eq!(v.rule.as_deref(), Some("run_shell_command(rm)"));
    assert_eq!(
        rules.evaluate(tool, &commands(&["rmdir x"])),
        Decision::Default
    );
}

#[test]
fn tools_core_shell_entries_restrict_the_shell() {
    let s = Settings::from_value(json!({"tools": {
        "core": ["read_file", "run_shell_command(git)", "run_shell_command(ls)"]
    }}))
    .unwrap();
    let rules = from_settings(&s);
    let tool = "run_shell_command";
    assert_eq!(
        rules.evaluate(tool, &commands(&["git log"])),
        Decision::Default
    );
    let v = rules.verdict(tool, &commands(&["ls", "curl x"]));
    assert_eq!(v.decision, Decision::Deny);
    assert!(v.rule.unwrap().starts_with("tools.core"));
    // git running code it was given may run anything: outside the limit (issue 41).
    let code = PermissionSubject::Commands(vec![ShellCommand {
        unreadable: Some("`git -c` sets configuration".into()),
        ..ShellCommand::from_text("git -c alias.x=!curl x")
    }]);
    assert_eq!(rules.evaluate(tool, &code), Decision::Deny);
    let open = Settings::from_value(json!({"tools": {
        "core": ["run_shell_command", "run_shell_command(git)"]
    }}))
    .unwrap();
    let rules = from_settings(&open);
    assert_eq!(
        rules.evaluate(tool, &commands(&["curl x"])),
        Decision::Default
    );
}

#[test]
fn path_rules_use_the_base() {
    let mut rules = empty_rules().with_base("/proj", Some("/home/me".into()));
    rules.add(RuleList::Deny, "Read(~/.ssh/**)");
    rules.add(RuleList::Allow, "read_file(/src/**)");
    let path = |p: &str| PermissionSubject::Paths(vec![p.into()]);
    assert_eq!(
        rules.evaluate("read_file", &path("/home/me/.ssh/id")),
        Decision::Deny
    );
    assert_eq!(
        rules.evaluate("read_file", &path("/proj/src/a.rs")),
        Decision::Allow
    );
    assert_eq!(
        rules.evaluate("read_file", &path("/proj/b.rs")),
        Decision::Default
    );
}

#[test]
fn path_rules_name_operations_not_tools() {
    let mut rules = empty_rules().with_base("/proj", None);
    rules.add(RuleList::Deny, "read_file(//secret/**)");
    rules.add(RuleList::Deny, "edit(/locked.txt)");
    rules.add(RuleList::Allow, "Read(/src/**)");
    let path = |p: &str| PermissionSubject::Paths(vec![p.into()]);
    for tool in [
        "read_file",
        "read_many_files",
        "grep_search",
        "glob",
        "list_directory",
    ] {
        let v = rules.verdict(tool, &path("/secret/key"));
        assert_eq!(v.decision, Decision::Deny, "{tool}");
        assert_eq!(v.rule.as_deref(), Some("read_file(//secret/**)"));
        assert_eq!(
            rules.evaluate(tool, &path("/proj/src/a.rs")),
            Decision::Allow
        );
    }
    for tool in ["edit", "write_file", "notebook_edit"] {
        assert_eq!(
            rules.evaluate(tool, &path("/proj/locked.txt")),
            Decision::Deny,
            "{tool}"
        );
        assert_eq!(
            rules.evaluate(tool, &path("/secret/key")),
            Decision::Deny,
            "{tool}: an edit reads the file too"
        );
        assert_eq!(
            rules.evaluate(tool, &path("/proj/src/a.rs")),
            Decision::Default,
            "{tool}: allowing reads does not allow edits"
        );
    }
    assert_eq!(
        rules.evaluate("read_file", &path("/proj/locked.txt")),
        Decision::Default,
        "an edit rule does not forbid reading"
    );
    // Other tools keep their own names: a file rule says nothing about MCP tools.
    assert_eq!(
        rules.evaluate("mcp__x__read", &path("/secret/key")),
        Decision::Default
    );
    // A bare rule names one tool, not the operation.
    let mut bare = empty_rules();
    bare.add(RuleList::Deny, "read_file");
    assert_eq!(bare.evaluate("glob", &path("/x")), Decision::Default);
    assert_eq!(bare.evaluate("read_file", &path("/x")), Decision::Deny);
}

#[test]
fn unknown_tools_are_named_and_aliases_are_not_unknown() {
    let mut rules = empty_rules();
    for (list, text) in [
        (RuleList::Deny, "raed_file(//x)"),
        (RuleList::Allow, "Read(//x)"),
        (RuleList::Allow, "Bash(git *)"),
        (RuleList::Ask, "glob"),
        (RuleList::Ask, "raed_file"),
        (RuleList::Deny, "mcp__gone__tool"),
    ] {
        rules.add(list, text);
    }
    let known = |name: &str| name == "glob" || name == "read_file";
    assert_eq!(rules.unknown_tools(known), ["raed_file", "mcp__gone__tool"]);
}

#[test]
fn a_server_wide_mcp_rule_covers_every_tool_of_that_server_only() {
    let mut rules = empty_rules();
    rules.add(RuleList::Allow, "mcp__github");
    let none = PermissionSubject::None;
    assert_eq!(
        rules.evaluate("mcp__github__create_issue", &none),
        Decision::Allow
    );
    assert_eq!(rules.evaluate("mcp__github__x", &none), Decision::Allow);
    // Not another server whose alias starts the same way.
    assert_eq!(rules.evaluate("mcp__githubx__y", &none), Decision::Default);
    assert_eq!(rules.evaluate("github__x", &none), Decision::Default);
    // A tool-level rule stays tool-level.
    let mut one = empty_rules();
    one.add(RuleList::Deny, "mcp__github__delete_repo");
    assert_eq!(
        one.evaluate("mcp__github__delete_repo", &none),
        Decision::Deny
    );
    assert_eq!(one.evaluate("mcp__github__other", &none), Decision::Default);
    assert!(is_mcp_server_rule("mcp__github"));
    assert!(!is_mcp_server_rule("mcp__github__x"));
    assert!(!is_mcp_server_rule("mcp__"));
    // Named servers are not reported as unknown tools.
    assert!(rules.unknown_tools(|_| false).is_empty());
}

#[test]
fn an_unreadable_shell_command_is_covered_by_every_deny_and_ask_rule_only() {
    let unreadable = PermissionSubject::Commands(vec![ShellCommand {
        unreadable: Some("its program name `$x` is an expansion".into()),
        ..ShellCommand::from_text("$x v")
    }]);
    for (list, want) in [
        (RuleList::Deny, Decision::Deny),
        (RuleList::Ask, Decision::Ask),
        (RuleList::Allow, Decision::Default),
    ] {
        let mut rules = empty_rules();
        rules.add(list, "run_shell_command(rm)");
        assert_eq!(rules.evaluate("run_shell_command", &unreadable), want);
    }
    let mut rules = empty_rules();
    rules.add(RuleList::Deny, "run_shell_command(rm)");
    let note = rules.unreadable_note(&unreadable).unwrap_or_default();
    assert!(
        note.contains("`$x v`") && note.contains("expansion"),
        "{note}"
    );
    let permissions = crate::scheduler::Permissions::from_rules(rules);
    let text = permissions
        .deny_explanation("run_shell_command", &unreadable)
        .unwrap_or_default();
    assert!(
        text.contains("run_shell_command(rm)") && text.contains("expansion"),
        "{text}"
    );
    // An allow rule for the outer program does not approve what it runs (issue 41);
    // only a rule allowing every command does.
    let git = PermissionSubject::Commands(vec![ShellCommand {
        unreadable: Some("`git -c` sets configuration".into()),
        ..ShellCommand::from_text("git -c alias.x=!rm x")
    }]);
    for (rule, want) in [
        ("Bash(git *)", Decision::Default),
        ("Bash(git -c *)", Decision::Default),
        ("Bash(*)", Decision::Allow),
        ("run_shell_command", Decision::Allow),
    ] {
        let mut rules = empty_rules();
        rules.add(RuleList::Allow, rule);
        assert_eq!(rules.evaluate("run_shell_command", &git), want, "{rule}");
    }
    // A rule for another tool does not cover it.
    let mut rules = empty_rules();
    rules.add(RuleList::Deny, "read_file");
    assert_eq!(
        rules.evaluate("run_shell_command", &unreadable),
        Decision::Default
    );
}

#[test]
fn a_specifier_with_unbalanced_parentheses_is_no_rule() {
    for text in ["Bash(curl *))", "Bash(a(b)", "Bash(rm", "rm)"] {
        assert!(parse(text).is_none(), "{text}");
    }
    assert!(parse("Bash(echo (a))").is_some());
}
