//! A Claude Code plugin's skills and MCP servers joining a session: from the binary's
//! `--plugin-dir` and from `initialize`'s `plugins`.

use std::path::Path;

use toolbelt_session::SessionOptions;

/// The largest plugin `.mcp.json` read.
const MAX_PLUGIN_MCP_BYTES: u64 = 1 << 20;

/// A Claude Code plugin at `dir`: its `skills/` folder, and (`with_mcp`) the servers of
/// its `.mcp.json` (`${CLAUDE_PLUGIN_ROOT}` in them is the plugin's directory).
pub fn add_plugin(options: &mut SessionOptions, dir: &Path, with_mcp: bool) {
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    options.plugin_skills.push(dir.join("skills"));
    if !with_mcp {
        return;
    }
    let file = dir.join(".mcp.json");
    match read_bounded(&file) {
        Ok(Some(text)) => {
            let root = serde_json::to_string(&dir.to_string_lossy()).unwrap_or_default();
            let root = root.trim_matches('"');
            let text = text.replace("${CLAUDE_PLUGIN_ROOT}", root);
            options.mcp.mcp_config.push(text);
        }
        Ok(None) => {}
        Err(e) => options.warn.say(&format!(
            "plugin {}: cannot read .mcp.json: {e}",
            dir.display()
        )),
    }
}

/// The file's text, `None` when there is none; an error past the size limit.
fn read_bounded(file: &Path) -> std::io::Result<Option<String>> {
    use std::io::Read;
    let opened = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut text = String::new();
    opened
        .take(MAX_PLUGIN_MCP_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_PLUGIN_MCP_BYTES {
        return Err(std::io::Error::other(format!(
            "larger than {MAX_PLUGIN_MCP_BYTES} bytes"
        )));
    }
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_brings_its_skills_and_its_mcp_servers_with_its_root() {
        let dir = tempfile::tempdir().unwrap();
        let plugin = dir.path().join("plug");
        std::fs::create_dir_all(plugin.join("skills")).unwrap();
        std::fs::write(
            plugin.join(".mcp.json"),
            r#"{"mcpServers": {"db": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/db"}}}"#,
        )
        .unwrap();
        let root = plugin.canonicalize().unwrap();
        let mut session = SessionOptions::default();
        add_plugin(&mut session, &plugin, true);
        assert_eq!(session.plugin_skills, [root.join("skills")]);
        let config: serde_json::Value = serde_json::from_str(&session.mcp.mcp_config[0]).unwrap();
        assert_eq!(
            config["mcpServers"]["db"]["command"],
            format!("{}/bin/db", root.display())
        );
        let mut session = SessionOptions::default();
        add_plugin(&mut session, &plugin, false);
        assert!(session.mcp.mcp_config.is_empty());
    }
}
