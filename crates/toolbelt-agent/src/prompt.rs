//! The system prompt: our own, short. Role, how to use tools, the workspace, the date
//! and platform, then the context files.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::context_files::ContextFile;

/// What the prompt mentions about the session.
#[derive(Debug, Clone, Default)]
pub struct PromptFacts {
    /// The workspace directories the tools may use.
    pub workspace_dirs: Vec<PathBuf>,
    /// The directory the session started in.
    pub cwd: PathBuf,
    /// The approval mode, as the flag spells it.
    pub approval_mode: String,
    /// The names of the declared tools.
    pub tool_names: Vec<String>,
    /// Context files (`QWEN.md`, ...) to include, in order.
    pub context_files: Vec<ContextFile>,
}

const ROLE: &str = "\
You are toolbelt, a coding agent working in a software project on the user's machine. \
You act through the tools you are given. Read before you change, keep changes small and \
exact, and check your work.";

const TOOL_RULES: &str = "\
# Using tools
- Paths given to tools are absolute; build them from the workspace directories below.
- Find files with the search tools, read them with read_file, change them with edit \
(an exact old_string with enough surrounding lines to be unique) or write_file (new or \
wholly rewritten files).
- Independent read-only calls (reads, searches) can go in one reply: they run in parallel. \
Calls that change things run one at a time, in the order given.
- A result starting with \"Error:\" says what went wrong: correct the call rather than \
repeating it.
- Some calls need the user's approval and may be refused in this session; when one is, \
do not retry it: continue without it or say what you need.
- Prefer non-interactive shell commands; never start editors, pagers or servers that do \
not exit.
- When the task is done, answer with a short summary and no tool call.";

/// The whole system prompt.
pub fn system_prompt(facts: &PromptFacts) -> String {
    let mut out = format!("{ROLE}\n\n{TOOL_RULES}\n\n# Environment\n");
    out.push_str(&format!("- Date: {}\n", today()));
    out.push_str(&format!(
        "- Platform: {} ({})\n",
        std::env::consts::OS,
        std::env::consts::ARCH
    ));
    out.push_str(&format!("- Working directory: {}\n", facts.cwd.display()));
    let dirs: Vec<String> = facts
        .workspace_dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    out.push_str(&format!("- Workspace directories: {}\n", dirs.join(", ")));
    out.push_str(&format!("- Approval mode: {}\n", facts.approval_mode));
    if !facts.tool_names.is_empty() {
        out.push_str(&format!("- Tools: {}\n", facts.tool_names.join(", ")));
    }
    if !facts.context_files.is_empty() {
        out.push_str("\n# Project context\nInstructions and notes from the user's context files; the later ones are closer to the working directory and take precedence.\n");
        for f in &facts.context_files {
            out.push_str(&format!(
                "\n--- Context from: {} ---\n{}\n--- End of context from: {} ---\n",
                f.path.display(),
                f.text.trim_end(),
                f.path.display()
            ));
        }
    }
    out
}

/// Today's date (UTC) as `YYYY-MM-DD`, without a date library.
pub fn today() -> String {
    let days = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or(0) as i64;
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
    }

    #[test]
    fn the_prompt_names_the_workspace_and_the_context() {
        let facts = PromptFacts {
            workspace_dirs: vec!["/w".into(), "/lib".into()],
            cwd: "/w".into(),
            approval_mode: "yolo".into(),
            tool_names: vec!["read_file".into()],
            context_files: vec![ContextFile {
                path: "/w/QWEN.md".into(),
                text: "Use tabs.".into(),
            }],
        };
        let p = system_prompt(&facts);
        assert!(p.contains("Workspace directories: /w, /lib"));
        assert!(p.contains("Approval mode: yolo"));
        assert!(p.contains("--- Context from: /w/QWEN.md ---\nUse tabs."));
        assert!(p.contains(&format!("Date: {}", today())));
    }
}
