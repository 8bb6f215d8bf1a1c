//! The approval mode: how much of a session runs without asking (Qwen Code's
//! `--approval-mode`). Settings name it (`tools.approvalMode`), when-clauses read it and
//! the scheduler applies it; it lives here, below all three, as plain data.

use std::fmt;
use std::str::FromStr;

/// How much runs without asking (Qwen Code's `--approval-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ApprovalMode {
    /// Read-only kinds only, until a plan is approved through `exit_plan_mode`.
    Plan,
    /// Ask for edits, execution, fetches and untrusted MCP tools.
    #[default]
    Default,
    /// Edits approved; the rest as in `Default`.
    AutoEdit,
    /// Everything approved (explicit ask and deny rules still hold).
    Yolo,
}

impl ApprovalMode {
    /// The spelling the flag and the settings take (`plan`, `default`, `auto-edit`, `yolo`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Plan => "plan",
            ApprovalMode::Default => "default",
            ApprovalMode::AutoEdit => "auto-edit",
            ApprovalMode::Yolo => "yolo",
        }
    }

    /// The spelling hook inputs carry (`permission_mode`), Qwen Code's: `plan`,
    /// `default`, `auto_edit`, `yolo`.
    pub fn hook_name(self) -> &'static str {
        match self {
            ApprovalMode::AutoEdit => "auto_edit",
            other => other.as_str(),
        }
    }
}

impl fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ApprovalMode {
    type Err = String;

    /// Accepts the spellings of Qwen Code's flag and settings (`auto-edit`, `auto_edit`,
    /// `autoEdit`) and Claude Code's `acceptEdits` and `bypassPermissions`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "plan" => Ok(ApprovalMode::Plan),
            "default" => Ok(ApprovalMode::Default),
            // Claude Code's names (`acceptEdits`, `bypassPermissions`) as well.
            "auto-edit" | "autoedit" | "acceptedits" => Ok(ApprovalMode::AutoEdit),
            "yolo" | "bypasspermissions" => Ok(ApprovalMode::Yolo),
            other => Err(format!(
                "unknown approval mode '{other}': expected plan, default, auto-edit or yolo (or Claude Code's acceptEdits, bypassPermissions)"
            )),
        }
    }
}
