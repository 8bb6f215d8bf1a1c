use super::*;

fn parse_text(text: &str) -> Result<AgentDefinition, DefinitionError> {
    parse(Path::new("/p/.qwen/agents/a.md"), text, Level::Project)
}

#[test]
fn reads_every_key() {
    let d = parse_text(
        "---\nname: reviewer\ndescription: Reviews diffs\ntools: [read_file, \"mcp__github__*\"]\n\
         disallowedTools: run_shell_command, edit\nmodel: small\napprovalMode: plan\n\
         runConfig:\n  max_turns: 4\n  max_time_minutes: 0.5\ncolor: blue\nbackground: true\n---\n\nYou review.\n",
    )
    .unwrap();
    assert_eq!(d.name, "reviewer");
    assert_eq!(
        d.tools,
        ToolAllow::Names(vec!["read_file".into(), "mcp__github__*".into()])
    );
    assert_eq!(d.disallowed_tools, vec!["run_shell_command", "edit"]);
    assert_eq!(d.model.as_deref(), Some("small"));
    assert_eq!(d.approval_mode, Some(ApprovalMode::Plan));
    assert_eq!(d.max_turns, Some(4));
    assert_eq!(d.max_time, Some(Duration::from_secs(30)));
    assert!(d.background);
    assert_eq!(d.system_prompt, "You review.");
    assert!(d.allows("mcp__github__list_issues", "", Kind::Other));
    assert!(!d.allows("mcp__gitlab__x", "", Kind::Other));
    assert!(!d.allows("agent", "Agent", Kind::Think));
}

#[test]
fn problems_name_line_and_key() {
    let e = parse_text("---\nname: a\ndescription: d\ntools: 3\n---\nbody").unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (4, "tools"), "{e}");
    assert!(
        e.to_string()
            .starts_with("/p/.qwen/agents/a.md:4: key `tools`: ")
    );
    let e = parse_text("---\ndescription: d\n---\nbody").unwrap_err();
    assert_eq!(e.key, "name");
    let e = parse_text("---\nname: a\ndescription: d\napprovalMode: always\n---\nb").unwrap_err();
    assert_eq!((e.line, e.key.as_str()), (4, "approvalMode"));
    let e = parse_text("---\nname: a\ndescription: d\nrunConfig:\n  max_turns: -1\n---\nb")
        .unwrap_err();
    assert_eq!(e.key, "runConfig.max_turns");
    let e = parse_text("---\nname: a\ndescription: [unclosed\n---\nb").unwrap_err();
    assert!(e.message.starts_with("invalid YAML"), "{e}");
    assert!(e.line >= 3, "{e}");
    let e = parse_text("no front matter").unwrap_err();
    assert_eq!(e.line, 1);
}

#[test]
fn agent_is_granted_only_by_its_exact_name() {
    let d = parse_text("---\nname: a\ndescription: d\ntools: ['*']\n---\nb").unwrap();
    assert_eq!(d.tools, ToolAllow::All);
    assert!(!d.allows("agent", "", Kind::Think));
    let d = parse_text("---\nname: a\ndescription: d\ntools: [agent, read_file]\n---\nb").unwrap();
    assert!(d.allows("agent", "", Kind::Think));
    // The tools that come with `agent` (task_stop, send_message) are held back only
    // by disallowedTools, by name or display name.
    assert!(!d.denies("send_message", "SendMessage"));
    let d = parse_text(
        "---\nname: a\ndescription: d\ntools: [agent]\ndisallowedTools: [SendMessage]\n---\nb",
    )
    .unwrap();
    assert!(d.denies("send_message", "SendMessage"));
    assert!(!d.denies("task_stop", "TaskStop"));
}

#[test]
fn wildcards() {
    assert!(wildcard("mcp__github__*", "mcp__github__x"));
    assert!(wildcard("*_file", "read_file"));
    assert!(wildcard("a*b*c", "aXbYc"));
    assert!(!wildcard("a*b*c", "aXcYb"));
    assert!(!wildcard("read_file", "read_files"));
    assert!(wildcard("*", ""));
}

#[test]
fn modes_only_narrow() {
    use ApprovalMode::*;
    assert_eq!(narrowed_mode(Default, Some(Yolo)), Default);
    assert_eq!(narrowed_mode(Yolo, Some(Plan)), Plan);
    assert_eq!(narrowed_mode(AutoEdit, Some(Default)), Default);
    assert_eq!(narrowed_mode(Plan, Some(AutoEdit)), Plan);
    assert_eq!(narrowed_mode(AutoEdit, None), AutoEdit);
}

/// A definition comes from a cloned repository: an alias bomb is refused by the shared
/// reader's budgets instead of being expanded.
#[test]
fn a_yaml_alias_bomb_is_refused() {
    let mut yaml = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let prev = format!("*a{}", i - 1);
        yaml.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
    }
    let e = parse_text(&format!("---\nname: a\ndescription: d\n{yaml}---\nbody")).unwrap_err();
    assert!(e.message.starts_with("invalid YAML"), "{e}");
}
