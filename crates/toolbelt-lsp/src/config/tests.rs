use super::*;

fn parse_ok(text: &str) -> Vec<ServerConfig> {
    parse(text, Path::new("/p/.lsp.json"), Path::new("/p")).expect("parses")
}

fn parse_err(text: &str) -> String {
    parse(text, Path::new("/p/.lsp.json"), Path::new("/p"))
        .expect_err("is refused")
        .to_string()
}

#[test]
fn reads_qwen_code_layout_with_defaults() {
    let servers = parse_ok(
        r#"{"python": {"command": "pyright-langserver", "args": ["--stdio"],
            "extensionToLanguage": {".py": "python", "PYI": "python"},
            "workspaceFolder": "sub", "restartOnCrash": true, "startupTimeout": 2000}}"#,
    );
    let s = &servers[0];
    assert_eq!(s.name, "python");
    assert_eq!(s.args, ["--stdio"]);
    assert_eq!(s.language_of(Path::new("a/b.PY")), Some("python"));
    assert_eq!(s.language_of(Path::new("a/b.pyi")), Some("python"));
    assert_eq!(s.language_of(Path::new("a/b.rs")), None);
    assert_eq!(s.workspace_folder.as_deref(), Some(Path::new("/p/sub")));
    assert_eq!(s.startup_timeout, Duration::from_millis(2000));
    assert_eq!(s.shutdown_timeout, Duration::from_millis(5000));
    assert!(s.restart_on_crash);
    assert_eq!(s.max_restarts, 3);
}

#[test]
fn a_bad_value_names_the_file_and_the_key() {
    let e = parse_err(
        r#"{"python": {"command": "x", "extensionToLanguage": {".py": "python"}, "startupTimeout": "soon"}}"#,
    );
    assert!(
        e.starts_with("/p/.lsp.json: `python.startupTimeout`"),
        "{e}"
    );
    let e = parse_err(r#"{"go": {"args": []}}"#);
    assert!(e.contains("`go`") && e.contains("command"), "{e}");
    let e = parse_err(
        r#"{"go": {"command": "gopls", "extensionToLanguage": {".go": "go"}, "transport": "tcp"}}"#,
    );
    assert!(e.contains("`go.transport`"), "{e}");
    let e = parse_err(
        r#"{"go": {"command": "gopls", "extensionToLanguage": {".go": "go"}, "workspaceFolder": "../.."}}"#,
    );
    assert!(
        e.contains("`go.workspaceFolder` (../..) is outside the project"),
        "{e}"
    );
    let e = parse_err(
        r#"{"go": {"command": "gopls", "extensionToLanguage": {".go": "go"}, "workspaceFolder": "/etc"}}"#,
    );
    assert!(e.contains("outside the project"), "{e}");
    let e = parse_err(r#"{"go": {"command": "gopls"}}"#);
    assert!(e.contains("`go.extensionToLanguage`"), "{e}");
}

#[test]
fn the_project_file_is_read_only_in_a_trusted_folder() {
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join(".lsp.json"),
        r#"{"python": {"command": "evil", "extensionToLanguage": {".py": "python"}}}"#,
    )
    .unwrap();
    std::fs::create_dir(home.path().join(".qwen")).unwrap();
    std::fs::write(
        home.path().join(".qwen/.lsp.json"),
        r#"{"python": {"command": "good", "extensionToLanguage": {".py": "python"}},
            "c": {"command": "clangd", "extensionToLanguage": {".c": "c"}}}"#,
    )
    .unwrap();
    let untrusted = LspConfig::load(Some(project.path()), Some(home.path()), false);
    let commands: Vec<&str> = untrusted
        .servers
        .iter()
        .map(|s| s.command.as_str())
        .collect();
    assert_eq!(commands, ["good", "clangd"]);
    assert!(untrusted.ignored_untrusted.is_some());
    let trusted = LspConfig::load(Some(project.path()), Some(home.path()), true);
    let commands: Vec<&str> = trusted.servers.iter().map(|s| s.command.as_str()).collect();
    assert_eq!(
        commands,
        ["evil", "clangd"],
        "the project's server wins by name"
    );
}

#[test]
fn a_bad_entry_does_not_drop_the_good_ones() {
    let (servers, errors) = parse_entries(
        r#"{"c": {"command": "clangd", "extensionToLanguage": {".c": "c"}}, "bad": {"command": 3}}"#,
        Path::new("/p/.lsp.json"),
        Path::new("/p"),
    );
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].name, "c");
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].to_string().contains("`bad.command`"),
        "{}",
        errors[0]
    );
}
