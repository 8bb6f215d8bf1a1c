use super::*;
use toolbelt_config::settings::Settings;

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
    assert!(e.contains("`go.command` is missing"), "{e}");
    let e = parse_err(
        r#"{"go": {"command": "gopls", "extensionToLanguage": {".go": "go"}, "transport": "pipe"}}"#,
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
    let none = Settings::default();
    let untrusted = LspConfig::load(Some(project.path()), Some(home.path()), false, &none);
    let commands: Vec<&str> = untrusted
        .servers
        .iter()
        .filter_map(|s| s.command.as_deref())
        .collect();
    assert_eq!(commands, ["good", "clangd"]);
    assert!(untrusted.ignored_untrusted.is_some());
    let trusted = LspConfig::load(Some(project.path()), Some(home.path()), true, &none);
    let commands: Vec<&str> = trusted
        .servers
        .iter()
        .filter_map(|s| s.command.as_deref())
        .collect();
    assert_eq!(
        commands,
        ["evil", "clangd"],
        "the project's server wins by name"
    );
}

#[test]
fn a_bad_entry_does_not_drop_the_good_ones() {
    let origin = Origin {
        file: Path::new("/p/.lsp.json"),
        owner: ConfigOwner::Project,
        base: Path::new("/p"),
        prefix: "",
    };
    let (servers, errors) = parse_entries(
        r#"{"c": {"command": "clangd", "extensionToLanguage": {".c": "c"}}, "bad": {"command": 3}}"#,
        &origin,
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

#[test]
fn socket_servers_name_where_they_listen() {
    let servers = parse_ok(
        r#"{"a": {"transport": "tcp", "socket": {"host": "127.0.0.1", "port": 9999},
                  "extensionToLanguage": {".a": "a"}},
            "b": {"transport": "tcp", "socket": {"port": 7000}, "command": "b-ls",
                  "args": ["--listen", "7000"], "extensionToLanguage": {".b": "b"}},
            "c": {"transport": "socket", "socket": {"path": "run/c.sock"},
                  "extensionToLanguage": {".c": "c"}},
            "d": {"transport": "tcp", "socket": {"host": "localhost", "port": 1},
                  "extensionToLanguage": {".d": "d"}},
            "e": {"transport": "TCP", "socket": {"host": "[::1]", "port": 2},
                  "extensionToLanguage": {".e": "e"}}}"#,
    );
    let transports: Vec<&Transport> = servers.iter().map(|s| &s.transport).collect();
    assert_eq!(
        transports,
        [
            &Transport::Tcp {
                host: "127.0.0.1".into(),
                port: 9999
            },
            &Transport::Tcp {
                host: "127.0.0.1".into(),
                port: 7000
            },
            &Transport::Unix(PathBuf::from("/p/run/c.sock")),
            &Transport::Tcp {
                host: "localhost".into(),
                port: 1
            },
            &Transport::Tcp {
                host: "[::1]".into(),
                port: 2
            },
        ]
    );
    assert_eq!(servers[0].command, None);
    assert_eq!(servers[0].describe(), "connects to 127.0.0.1:9999");
    assert_eq!(
        servers[1].describe(),
        "b-ls --listen 7000, then connects to 127.0.0.1:7000"
    );

    for (text, says) in [
        (
            r#"{"a": {"transport": "tcp", "extensionToLanguage": {".a": "a"}}}"#,
            "`a.socket.port` is missing",
        ),
        (
            r#"{"a": {"transport": "socket", "socket": {"port": 1}, "extensionToLanguage": {".a": "a"}}}"#,
            "`a.socket` names a host or port",
        ),
        (
            r#"{"a": {"transport": "tcp", "socket": {"path": "x", "port": 1}, "extensionToLanguage": {".a": "a"}}}"#,
            "`a.socket.path` is for",
        ),
        (
            r#"{"a": {"command": "x", "socket": {"port": 1}, "extensionToLanguage": {".a": "a"}}}"#,
            "`a.socket` is set but `a.transport` is stdio",
        ),
        (
            r#"{"a": {"transport": "socket", "extensionToLanguage": {".a": "a"}}}"#,
            "`a.socket.path` is missing",
        ),
        (
            r#"{"a": {"extensionToLanguage": {".a": "a"}}}"#,
            "`a.command` is missing or empty",
        ),
        (
            r#"{"a": {"transport": "tcp", "socket": {"host": "x", "port": 1, "user": "me"}, "extensionToLanguage": {".a": "a"}}}"#,
            "`a.socket.user`",
        ),
    ] {
        let e = parse_err(text);
        assert!(e.starts_with("/p/.lsp.json: "), "{e}");
        assert!(e.contains(says), "{says}: {e}");
    }
}

/// A project's file (its `.lsp.json`, its workspace settings) may only make toolbelt
/// connect to this machine; the person's own files may name another.
#[test]
fn only_the_persons_own_file_may_name_another_machine() {
    for host in [
        "10.0.0.7",
        "build.example.com",
        "0.0.0.0",
        "192.168.1.2",
        "::",
    ] {
        let text = format!(
            r#"{{"remote": {{"transport": "tcp", "socket": {{"host": "{host}", "port": 9}}, "extensionToLanguage": {{".r": "r"}}}}}}"#
        );
        let e = parse_err(&text);
        assert!(
            e.contains(&format!(
                "`remote.socket.host` is {host}: a project's file may only name this machine"
            )),
            "{e}"
        );
    }
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let remote = r#"{"remote": {"transport": "tcp", "socket": {"host": "10.0.0.7", "port": 9},
                               "extensionToLanguage": {".r": "r"}}}"#;
    std::fs::write(project.path().join(".lsp.json"), remote).unwrap();
    let none = Settings::default();
    let from_project = LspConfig::load(Some(project.path()), Some(home.path()), true, &none);
    assert!(from_project.servers.is_empty());
    assert_eq!(from_project.errors.len(), 1, "{:?}", from_project.errors);
    std::fs::remove_file(project.path().join(".lsp.json")).unwrap();
    std::fs::create_dir(home.path().join(".qwen")).unwrap();
    std::fs::write(home.path().join(".qwen/.lsp.json"), remote).unwrap();
    let from_user = LspConfig::load(Some(project.path()), Some(home.path()), true, &none);
    assert_eq!(from_user.servers.len(), 1, "{:?}", from_user.errors);
    assert_eq!(from_user.servers[0].owner, ConfigOwner::Person);
}

/// `lsp.servers` in the settings: the same layout, after the project's `.lsp.json` and
/// before the user's; each server's errors name the settings file it came from and its
/// key under `lsp.servers`, and the workspace file's server counts as the project's.
#[test]
fn servers_in_the_settings_load_between_the_files_and_name_their_file() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let home = dir.path().join("home");
    std::fs::create_dir_all(project.join(".qwen")).unwrap();
    std::fs::create_dir_all(home.join(".qwen")).unwrap();
    std::fs::write(
        project.join(".lsp.json"),
        r#"{"python": {"command": "from-project", "extensionToLanguage": {".py": "python"}}}"#,
    )
    .unwrap();
    std::fs::write(
        home.join(".qwen/.lsp.json"),
        r#"{"go": {"command": "from-user-file", "extensionToLanguage": {".go": "go"}},
            "rust": {"command": "from-user-file", "extensionToLanguage": {".rs": "rust"}}}"#,
    )
    .unwrap();
    std::fs::write(
        home.join(".qwen/settings.json"),
        r#"{"lsp": {"servers": {
            "python": {"command": "from-settings", "extensionToLanguage": {".py": "python"}},
            "go": {"command": "from-settings", "extensionToLanguage": {".go": "go"}},
            "remote": {"transport": "tcp", "socket": {"host": "10.0.0.7", "port": 9},
                       "extensionToLanguage": {".r": "r"}}
        }}}"#,
    )
    .unwrap();
    std::fs::write(
        project.join(".qwen/settings.json"),
        r#"{"lsp": {"servers": {
            "c": {"command": "clangd", "extensionToLanguage": {}},
            "zig": {"transport": "tcp", "socket": {"host": "10.0.0.8", "port": 9},
                    "extensionToLanguage": {".zig": "zig"}}
        }}}"#,
    )
    .unwrap();
    let paths = toolbelt_config::settings::SettingsPaths {
        user: Some(home.join(".qwen/settings.json")),
        workspace: Some(project.join(".qwen/settings.json")),
        system: None,
        claude_hooks: Vec::new(),
        trust: toolbelt_config::settings::WorkspaceTrust::Trusted,
    };
    let settings = Settings::load(&paths).unwrap();
    let config = LspConfig::load(Some(&project), Some(&home), true, &settings);
    let found: Vec<(&str, &str, ConfigOwner)> = config
        .servers
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.command.as_deref().unwrap_or("-"),
                s.owner,
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("python", "from-project", ConfigOwner::Project),
            ("go", "from-settings", ConfigOwner::Person),
            ("remote", "-", ConfigOwner::Person),
            ("rust", "from-user-file", ConfigOwner::Person),
        ]
    );
    assert_eq!(config.servers[1].source, home.join(".qwen/settings.json"));
    assert_eq!(config.servers[1].key, "lsp.servers.go");
    let errors: Vec<String> = config.errors.iter().map(ToString::to_string).collect();
    let workspace_file = project.join(".qwen/settings.json").display().to_string();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].starts_with(&format!(
            "{workspace_file}: `lsp.servers.c.extensionToLanguage`"
        )),
        "{errors:?}"
    );
    assert!(
        errors[1].starts_with(&format!(
            "{workspace_file}: `lsp.servers.zig.socket.host` is 10.0.0.8"
        )),
        "{errors:?}"
    );
}
