#![allow(clippy::too_many_lines)]
//! Secrets stay out of what toolbelt prints: credentials in a server URL, header values
//! and the values of variables the settings expanded are masked in `mcp list` (text and
//! JSON), in warnings and in errors.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::json;

fn testserver() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/mcp_testserver");
    assert!(path.exists(), "{} is missing", path.display());
    path
}

#[test]
fn mcp_list_masks_url_credentials_headers_and_expanded_values() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".qwen")).unwrap();
    std::fs::create_dir_all(&root).unwrap();
    // The person's own settings (so no trust is needed).
    let settings = json!({"mcpServers": {
        "userinfo": {"httpUrl": "http://alice:TOKEN-in-url-123@127.0.0.1:1/mcp"},
        "query": {
            "httpUrl": "http://127.0.0.1:1/mcp?key=${MY_KEY}",
            "headers": {"X-Api-Key": "header-secret-456"}
        },
        "chatty": {
            "command": testserver(),
            "args": ["silent"],
            "env": {"TESTSERVER_STDERR": "starting with token=$MY_KEY"},
            // It never answers: give up on its start after a second, not the default 30.
            "startupTimeout": 1000
        }
    }});
    std::fs::write(home.join(".qwen/settings.json"), settings.to_string()).unwrap();
    for (args, log) in [
        (&["mcp", "list"][..], Some("debug")),
        (&["mcp", "list", "--json"][..], Some("debug")),
        (&["mcp", "list"][..], None),
    ] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_toolbelt"));
        match log {
            Some(filter) => command.env("TOOLBELT_LOG", filter),
            None => command.env_remove("TOOLBELT_LOG"),
        };
        let out = command
            .args(args)
            .current_dir(&root)
            .env("HOME", &home)
            .env("TOOLBELT_HOME", home.join(".toolbelt"))
            .env(
                "TOOLBELT_SYSTEM_SETTINGS_PATH",
                home.join("no-system-settings.json"),
            )
            .env("MY_KEY", "expanded-value-789")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(all.contains("userinfo") && all.contains("chatty"), "{all}");
        for secret in [
            "TOKEN-in-url-123",
            "header-secret-456",
            "expanded-value-789",
        ] {
            assert!(
                !all.contains(secret),
                "{secret} printed by {args:?}:\n{all}"
            );
        }
        if log.is_none() {
            // By default no raw rmcp error dump: the status line says it once.
            assert!(!all.contains("rmcp::"), "{all}");
        }
    }
}
