//! The docs name everything there is: every tool an agent session offers (in
//! docs/tools.md, and `tools list` names each with when it is offered), every slash
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
    claude: super::claude_flags::ClaudeArgs,
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

/// `scripts/setup.sh` says what it installs, where and how much, and never runs a
/// command as root without printing it first.
#[test]
fn setup_says_what_it_installs_and_prints_what_it_runs_as_root() {
    let script = std::fs::read_to_string(repo().join("scripts/setup.sh")).unwrap();
    let out = std::process::Command::new("bash")
        .args(["scripts/setup.sh", "--list"])
        .current_dir(repo())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("about 1 GB"), "{text}");
    // Every folder it installs into is named, installed or to be installed.
    let dirs: Vec<&str> = script
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            l.strip_prefix("local dir=.cache/")
                .or_else(|| l.strip_prefix("EVERYTHING_DIR=.cache/"))
                .or_else(|| {
                    let rest = l
                        .strip_prefix("install_python_sdk .cache/")
                        .or_else(|| l.strip_prefix("install_npm .cache/"))?;
                    rest.split_whitespace().next()
                })
        })
        .collect();
    assert!(dirs.len() >= 6, "{dirs:?}");
    for dir in dirs {
        let dir = format!(".cache/{dir}");
        let installed = repo().join(&dir).exists();
        assert!(
            text.contains(&format!("into {dir}")) || installed,
            "{dir} is not named: {text}"
        );
    }
    // apt-get runs only in apt_install, and each run is printed first.
    let body = script
        .split("apt_install() {")
        .nth(1)
        .and_then(|rest| rest.split("\n}\n").next())
        .expect("setup.sh has no apt_install function");
    let runs_apt = |l: &&str| l.contains("apt-get install") || l.contains("apt-get update");
    for line in script.lines().filter(runs_apt) {
        let t = line.trim();
        let said = t.starts_with('#') || t.starts_with("say ") || t.contains("missing \"");
        assert!(
            said || body.contains(line),
            "apt-get outside apt_install: {line}"
        );
    }
    let lines: Vec<&str> = body.lines().map(str::trim).collect();
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with("apt-get") {
            assert!(
                i > 0 && lines[i - 1].starts_with("say \"running as root:"),
                "not printed before it runs: {line}"
            );
        }
    }
}

/// README's tour sentence counts right: the tools the tour calls, of all the built-in
/// tools, and the ones it names as left out are exactly the rest.
#[test]
fn readmes_tour_counts_the_built_in_tools_right() {
    let servers = servers();
    let world = World::new(&servers);
    let listed = run_line(&world, "toolbelt tools list", None).unwrap();
    let mut builtins: BTreeSet<String> = listed
        .stdout
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    // Registered only with a provider configured, which `tools list` says.
    assert!(listed.stdout.contains("web_search is not registered"));
    builtins.insert("web_search".into());
    let tour = std::fs::read_to_string(repo().join("examples/tour.jsonl")).unwrap();
    let toured: BTreeSet<String> = tour
        .lines()
        .filter(|l| l.starts_with('{'))
        .flat_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
        })
        .filter(|n| builtins.contains(n))
        .collect();
    let words = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let said = format!(
        "through {} of the {} built-in tools",
        words[toured.len()],
        words[builtins.len()]
    );
    assert!(readme.contains(&said), "README should say: {said}");
    let sentence = readme.split(&said).nth(1).unwrap();
    let left_out = sentence
        .split("(not")
        .nth(1)
        .unwrap()
        .split(')')
        .next()
        .unwrap();
    let named: BTreeSet<String> = left_out
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    let rest: BTreeSet<String> = builtins.difference(&toured).cloned().collect();
    assert_eq!(
        named, rest,
        "README's list of the tools the tour leaves out"
    );
}

/// The long pages are sections a person can scan, not walls of prose: headings, and no
/// paragraph of prose longer than a screenful; BENCHMARKS.md opens with a summary table.
#[test]
fn long_pages_are_in_sections_and_benchmarks_open_with_a_summary() {
    for page in [
        "docs/safety.md",
        "docs/mcp-server.md",
        "docs/sdk-and-stream-json.md",
    ] {
        let text = std::fs::read_to_string(repo().join(page)).unwrap();
        let headings = text.lines().filter(|l| l.starts_with("## ")).count();
        assert!(headings >= 5, "{page}: {headings} sections");
        let mut in_code = false;
        let mut run = 0;
        for line in text.lines() {
            if line.starts_with("```") {
                in_code = !in_code;
            }
            let prose =
                !in_code && !line.trim().is_empty() && !line.starts_with(['#', '|', '-', ' ', '`']);
            run = if prose { run + 1 } else { 0 };
            assert!(
                run <= 22,
                "{page}: a paragraph of over 22 lines ends at: {line}"
            );
        }
    }
    let benchmarks = std::fs::read_to_string(repo().join("BENCHMARKS.md")).unwrap();
    let head: String = benchmarks.lines().take(12).collect::<Vec<_>>().join("\n");
    assert!(head.contains("## Summary"), "{head}");
    let summary = benchmarks.split("## Summary").nth(1).unwrap();
    let summary = summary.split("\n## ").next().unwrap();
    let rows = summary.lines().filter(|l| l.starts_with("| [")).count();
    let sections = benchmarks.matches("\n## ").count() - 1;
    assert!(
        rows >= sections - 3,
        "{rows} summary rows for {sections} sections"
    );
}

/// No documented command overwrites a file a person may already have: no `>` into a
/// file (`>>` adds, `2>&1` and `/dev/null` are fine), `cp` and `mv` only with `-n`, `tee`
/// only with `-a`. (The doc-commands run also checks the person's settings survive.)
#[test]
fn no_documented_command_overwrites_a_file() {
    let mut found = Vec::new();
    for block in super::extract::doc_blocks() {
        for s in &block.lines {
            let words: Vec<&str> = s.command.split_whitespace().collect();
            let overwrites = words.windows(2).any(|w| match w[0] {
                "cp" | "mv" => !w[1].starts_with('-') || !w[1].contains('n'),
                "tee" => w[1] != "-a",
                _ => false,
            }) || s.command.match_indices('>').any(|(at, _)| {
                let before = s.command[..at].chars().last();
                let after = s.command[at + 1..].trim_start();
                before != Some('>')
                    && before != Some('2')
                    && !after.starts_with(['>', '&'])
                    && !after.starts_with("/dev/null")
                    && !s.command[..at].ends_with(" -")
                    && !in_quotes(&s.command[..at])
            });
            if overwrites {
                found.push(format!("{}: {}", s.source, s.command));
            }
        }
    }
    assert!(found.is_empty(), "{found:#?}");
}

/// Whether the text before a character leaves it inside single or double quotes.
fn in_quotes(before: &str) -> bool {
    let (mut single, mut double) = (false, false);
    for c in before.chars() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            _ => {}
        }
    }
    single || double
}
