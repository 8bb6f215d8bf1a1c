//! The docs name everything there is: every tool an agent session offers (in
//! docs/tools.md, and `tools list`'s note names those it does not list), every slash
//! command (in docs/interactive.md), every flag of `--help` and of Claude Code's
//! accepted flags (somewhere in README.md or docs/). And user docs name no issue
//! numbers or branches: they are for people who never saw either.

use std::collections::BTreeSet;

use clap::CommandFactory;

use super::repo;
use super::run::run_line;
use super::world::{World, servers};

/// README.md and every page of docs/, as one text.
fn all_docs() -> String {
    let mut text = std::fs::read_to_string(repo().join("README.md")).unwrap();
    for entry in std::fs::read_dir(repo().join("docs")).unwrap() {
        text.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    text
}

/// Whether `text` has `word` with no word character or `-` right after it.
fn names(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        text[at + word.len()..]
            .chars()
            .next()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'))
    })
}

/// The `--flags` defined in a `--help` text (its option lines).
fn help_flags(help: &str) -> BTreeSet<String> {
    help.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .flat_map(|l| l.split([' ', ',', '=', '[', '<']).take(3))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(str::to_string)
        .collect()
}

/// `toolbelt [SUB...] --help` for the binary and every subcommand, recursively.
fn every_help(world: &World, path: &[String], out: &mut Vec<(String, String)>) {
    let command = format!("toolbelt {} --help", path.join(" "));
    let run = run_line(world, &command, None).unwrap();
    assert_eq!(run.code, 0, "{command}: {}", run.stderr);
    let subcommands: Vec<String> = run
        .stdout
        .split("Commands:\n")
        .nth(1)
        .map(|list| {
            list.lines()
                .take_while(|l| !l.trim().is_empty())
                .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
                .filter_map(|l| l.split_whitespace().next())
                .filter(|name| *name != "help")
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    out.push((command, run.stdout));
    for sub in subcommands {
        let mut next = path.to_vec();
        next.push(sub);
        every_help(world, &next, out);
    }
}

#[derive(clap::Parser)]
struct ClaudeFlags {
    #[command(flatten)]
    claude: toolbelt_stream_json::ClaudeArgs,
}

#[test]
fn every_flag_is_in_help_and_in_the_docs() {
    let servers = servers();
    let world = World::new(&servers);
    let mut helps = Vec::new();
    every_help(&world, &[], &mut helps);
    assert!(helps.len() >= 8, "only {} --help texts", helps.len());
    let docs = all_docs();
    let mut missing = Vec::new();
    for (command, help) in &helps {
        for flag in help_flags(help) {
            if !["--help", "--version"].contains(&flag.as_str()) && !names(&docs, &flag) {
                missing.push(format!("{flag} (in `{command}`)"));
            }
        }
    }
    // Claude Code's flags, hidden from --help but accepted: the docs name each.
    for arg in ClaudeFlags::command().get_arguments() {
        if let Some(long) = arg.get_long() {
            let flag = format!("--{long}");
            if !names(&docs, &flag) {
                missing.push(format!("{flag} (accepted for Claude Code's SDK)"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not in README.md or docs/: {missing:#?}"
    );
    // Flags a person uses directly are in --help, not only in the docs.
    let top = &helps[0].1;
    for flag in [
        "--fork-session",
        "--no-session-persistence",
        "--resume",
        "--continue",
    ] {
        assert!(names(top, flag), "{flag} is not in toolbelt --help");
    }
}

#[test]
fn every_tool_and_slash_command_is_in_the_docs() {
    let servers = servers();
    let world = World::new(&servers);
    // The tools of an agent session: its `init` message.
    let run = run_line(&world, "toolbelt -o stream-json hello", None).unwrap();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let init: serde_json::Value = serde_json::from_str(run.stdout.lines().next().unwrap()).unwrap();
    let session_tools: BTreeSet<String> = init["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .filter(|t| !t.starts_with("mcp__"))
        .map(str::to_string)
        .collect();
    assert!(session_tools.len() >= 15, "{session_tools:?}");
    let listed = run_line(&world, "toolbelt tools list", None).unwrap();
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let tools_md = std::fs::read_to_string(repo().join("docs/tools.md")).unwrap();
    let mut missing = Vec::new();
    for tool in &session_tools {
        if !tools_md.contains(&format!("`{tool}`")) && !tools_md.contains(&format!("`{tool} {{")) {
            missing.push(format!("tool {tool}: not in docs/tools.md"));
        }
        let in_table = listed
            .stdout
            .lines()
            .any(|l| l.starts_with(&format!("{tool} ")));
        if !in_table && !names(&listed.stdout, tool) {
            missing.push(format!(
                "tool {tool}: offered to the agent, neither listed by `tools list` nor named in its note"
            ));
        }
    }
    let interactive = std::fs::read_to_string(repo().join("docs/interactive.md")).unwrap();
    for (name, _, _) in toolbelt_session::kit::slash::COMMANDS {
        if !names(&interactive, &format!("/{name}")) {
            missing.push(format!("/{name}: not in docs/interactive.md"));
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");
}

#[test]
fn user_docs_name_no_issues_or_branches() {
    let mut found = Vec::new();
    let mut pages = vec![repo().join("README.md")];
    pages.extend(
        std::fs::read_dir(repo().join("docs"))
            .unwrap()
            .map(|e| e.unwrap().path()),
    );
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        for (n, line) in text.lines().enumerate() {
            let lower = line.to_lowercase();
            let issue = lower
                .match_indices("issue ")
                .any(|(at, w)| lower[at + w.len()..].starts_with(|c: char| c.is_ascii_digit()));
            let branch = ["fix-", "feat-", "branch `", "the branch"]
                .iter()
                .any(|b| lower.contains(b));
            if issue || branch {
                found.push(format!("{}:{}: {line}", page.display(), n + 1));
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}
