//! Finding the commands: shell blocks of Markdown, example lines of `--help`.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use super::repo;

#[derive(Debug, Clone)]
pub struct Snippet {
    /// `README.md:42` or `toolbelt tools call --help`.
    pub source: String,
    pub command: String,
    pub code: i32,
    pub interactive: bool,
    pub output: Vec<String>,
}

#[derive(Debug)]
pub struct Block {
    pub lines: Vec<Snippet>,
}

/// Where a line's trailing comment starts (a `#` after whitespace, outside quotes).
pub fn comment_start(line: &str) -> Option<usize> {
    let (mut single, mut double, mut prev_space) = (false, false, true);
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev_space => return Some(i),
            _ => {}
        }
        prev_space = c.is_whitespace();
    }
    None
}

/// A command line and the markers of its comment.
pub fn snippet(source: String, line: &str) -> Snippet {
    let (command, comment) = match comment_start(line) {
        Some(i) => (line[..i].trim_end(), line[i + 1..].trim()),
        None => (line, ""),
    };
    let words: Vec<&str> = comment.split_whitespace().collect();
    let code = words
        .windows(2)
        .find(|w| w[0] == "exits")
        .and_then(|w| w[1].trim_end_matches([',', ';', ')', ':']).parse().ok())
        .unwrap_or(0);
    Snippet {
        source,
        command: command.trim().to_string(),
        code,
        interactive: comment.starts_with("interactive"),
        output: Vec::new(),
    }
}

/// The shell blocks of one Markdown text.
pub fn blocks(name: &str, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut current: Option<(String, Block)> = None;
    let mut pending = String::new();
    for (n, line) in text.lines().enumerate() {
        let at = format!("{name}:{}", n + 1);
        if let Some(fence) = line.trim_start().strip_prefix("```") {
            match current.take() {
                Some((_, block)) => out.push(block),
                None if ["sh", "bash", "console"].contains(&fence.trim()) => {
                    let block = Block { lines: Vec::new() };
                    current = Some((fence.trim().to_string(), block));
                }
                None => current = Some((String::new(), Block { lines: Vec::new() })),
            }
            continue;
        }
        let Some((lang, block)) = current.as_mut() else {
            continue;
        };
        match lang.as_str() {
            "" => {}
            "console" => match line.strip_prefix("$ ") {
                Some(cmd) => block.lines.push(snippet(at, cmd)),
                None => {
                    if let Some(last) = block.lines.last_mut() {
                        last.output.push(line.to_string());
                    }
                }
            },
            _ => {
                let t = line.trim();
                if t.is_empty() || (t.starts_with('#') && pending.is_empty()) {
                    continue;
                }
                if let Some(head) = t.strip_suffix('\\') {
                    pending.push_str(head);
                    continue;
                }
                let whole = std::mem::take(&mut pending) + t;
                block.lines.push(snippet(at, &whole));
            }
        }
    }
    out.retain(|b| !b.lines.is_empty());
    out
}

/// README.md and every docs/*.md, each with its name relative to the repository.
pub fn doc_files() -> Vec<(String, String)> {
    let root = repo();
    let mut files = vec![root.join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    files.extend(pages);
    files
        .iter()
        .map(|f| {
            let name = f.strip_prefix(&root).unwrap().display().to_string();
            (name, std::fs::read_to_string(f).unwrap())
        })
        .collect()
}

/// The shell blocks of README.md and every docs/*.md.
pub fn doc_blocks() -> Vec<Block> {
    doc_files()
        .iter()
        .flat_map(|(name, text)| blocks(name, text))
        .collect()
}

/// The ```json blocks of one Markdown text, each with where it starts.
pub fn json_blocks(name: &str, text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current: Option<(String, String)> = None;
    for (n, line) in text.lines().enumerate() {
        if let Some(fence) = line.trim_start().strip_prefix("```") {
            match current.take() {
                Some(block) => out.push(block),
                None if fence.trim() == "json" => {
                    current = Some((format!("{name}:{}", n + 1), String::new()));
                }
                // Another language: skip to its closing fence.
                None => current = Some((String::new(), String::new())),
            }
            continue;
        }
        if let Some((_, body)) = current.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out.retain(|(at, _)| !at.is_empty());
    out
}

/// `toolbelt ARGS --help`, wide enough that no example line is wrapped.
pub fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(args)
        .arg("--help")
        .env("COLUMNS", "400")
        .output()
        .unwrap();
    assert!(out.status.success(), "toolbelt {args:?} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands a help text lists under `Commands:` (not `help`).
pub fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| *w != "help")
        .map(str::to_string)
        .collect()
}

/// The example lines of `toolbelt --help` and of every subcommand's, each once.
pub fn help_examples() -> Vec<Block> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut queue: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(path) = queue.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help(&args);
        for sub in subcommands(&text) {
            let mut next = path.clone();
            next.push(sub);
            queue.push(next);
        }
        let source = format!("toolbelt {} --help", path.join(" "));
        for line in text
            .lines()
            .skip_while(|l| !l.starts_with("Examples:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
        {
            let line = line.trim();
            let command = line.split("  (").next().unwrap_or(line).trim();
            if seen.insert(command.to_string()) {
                out.push(Block {
                    lines: vec![snippet(source.clone(), command)],
                });
            }
        }
    }
    out
}
