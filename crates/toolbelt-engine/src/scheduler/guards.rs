//! Guards against two ways models waste turns: retrying the same invalid call, and
//! sending an edit from a reply the token limit cut off (its arguments are likely cut
//! too, and applying half an edit loses work).

use std::collections::HashMap;

/// How many identical validation failures in a row earn the note.
pub const RETRY_LOOP_THRESHOLD: u32 = 3;

/// Appended to a validation error once [`RETRY_LOOP_THRESHOLD`] identical failures of a
/// tool came in a row.
pub const RETRY_LOOP_NOTE: &str = "This is the same error for the same tool several times in a row: repeating the call will not help. Try a fundamentally different approach: re-read the file or the tool's parameter descriptions, use another tool, or ask the user.";

/// The error of an edit-kind call from a reply cut off by the output token limit.
pub const TRUNCATED_EDIT_ADVICE: &str = "Your previous reply was cut off by the output token limit, so the arguments of this edit may be incomplete; the call was refused and nothing was changed. Send smaller changes: first write_file with a short skeleton, then fill it in with several edit calls of modest size.";

/// Counts identical validation failures per tool. A success or a different error for
/// the tool starts the count again.
#[derive(Debug, Default)]
pub struct RetryLoopGuard {
    last: HashMap<String, (String, u32)>,
}

impl RetryLoopGuard {
    /// Records a validation failure; true when the note should be added.
    pub fn failed(&mut self, tool: &str, message: &str) -> bool {
        let entry = self
            .last
            .entry(tool.to_string())
            .or_insert_with(|| (message.to_string(), 0));
        if entry.0 != message {
            *entry = (message.to_string(), 0);
        }
        entry.1 += 1;
        entry.1 >= RETRY_LOOP_THRESHOLD
    }

    /// Records that a call of `tool` passed validation: its count starts again.
    pub fn passed(&mut self, tool: &str) {
        self.last.remove(tool);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn third_identical_failure_earns_the_note() {
        let mut guard = RetryLoopGuard::default();
        assert!(!guard.failed("edit", "no match"));
        assert!(!guard.failed("edit", "no match"));
        assert!(guard.failed("edit", "no match"));
        assert!(guard.failed("edit", "no match"));
    }

    #[test]
    fn a_different_error_or_a_success_starts_again() {
        let mut guard = RetryLoopGuard::default();
        guard.failed("edit", "a");
        guard.failed("edit", "a");
        assert!(!guard.failed("edit", "b"), "different message resets");
        guard.failed("edit", "b");
        guard.passed("edit");
        assert!(!guard.failed("edit", "b"), "success resets");
        assert!(!guard.failed("glob", "b"), "counted per tool");
    }
}
