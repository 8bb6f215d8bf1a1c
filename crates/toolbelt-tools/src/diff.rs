//! Unified diffs of a file change, for confirmations and displays.
//!
//! Files can be large and edits small, so the unchanged head and tail are cut off by a
//! byte comparison before `similar` sees anything: a one-line edit of a 50 MB file
//! diffs a few lines, not a million. Hunk line numbers are shifted back to the whole
//! file. Very large rewrites are diffed under a deadline, after which `similar` gives a
//! coarser (still correct) diff.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use similar::{ChangeTag, DiffTag, TextDiff};
use toolbelt_core::FileDiff;

/// Lines of context around each hunk.
const CONTEXT: usize = 3;
/// How long the line diff of the changed middle may take.
const DIFF_TIMEOUT: Duration = Duration::from_millis(200);
/// Lines of diff text rendered; past this the changes are only counted. A person
/// cannot review a million-line diff, and building one costs more than the write.
const MAX_RENDERED_LINES: usize = 20_000;

/// The diff of `old` (`None`: the file does not exist) to `new`, with both texts
/// carried when they fit [`FileDiff::CONTENT_LIMIT`].
pub(crate) fn file_diff(path: &Path, display_name: &str, old: Option<&str>, new: &str) -> FileDiff {
    let (diff, added_lines, removed_lines) = unified(display_name, old.unwrap_or(""), new);
    let fits = old.map_or(0, str::len).max(new.len()) <= FileDiff::CONTENT_LIMIT;
    FileDiff {
        file_name: display_name.to_string(),
        file_path: path.to_path_buf(),
        diff,
        is_new_file: old.is_none(),
        original_content: old.filter(|_| fits).map(str::to_string),
        new_content: fits.then(|| new.to_string()),
        added_lines,
        removed_lines,
    }
}

/// The unified diff text and the added and removed line counts.
pub(crate) fn unified(name: &str, old: &str, new: &str) -> (String, usize, usize) {
    let mut diff = Unified::new(name);
    diff.region(old, new, 0, 0);
    diff.finish()
}

/// A unified diff built region by region: a file edited in place is diffed around
/// each change, without the whole text in memory.
pub(crate) struct Unified {
    out: String,
    added: usize,
    removed: usize,
    rendered: usize,
}

impl Unified {
    pub(crate) fn new(name: &str) -> Self {
        Unified {
            out: format!("--- {name}\tCurrent\n+++ {name}\tProposed\n"),
            added: 0,
            removed: 0,
            rendered: 0,
        }
    }

    /// Adds the changes between `old` and `new`, two versions of a region that starts
    /// at a line start: 0-based line `old_line` of the old file and `new_line` of the
    /// new one. Regions must come in file order and must not overlap.
    pub(crate) fn region(&mut self, old: &str, new: &str, old_line: usize, new_line: usize) {
        if old == new {
            return;
        }
        let window = ChangedWindow::find(old, new);
        let old_part = &old[window.old_start..window.old_end];
        let new_part = &new[window.new_start..window.new_end];
        let diff = TextDiff::configure()
            .timeout(DIFF_TIMEOUT)
            .diff_lines(old_part, new_part);
        for group in diff.grouped_ops(CONTEXT) {
            let (Some(first), Some(last)) = (group.first(), group.last()) else {
                continue;
            };
            if self.rendered >= MAX_RENDERED_LINES {
                for op in &group {
                    let (tag, old_range, new_range) = op.as_tag_tuple();
                    match tag {
                        DiffTag::Delete => self.removed += old_range.len(),
                        DiffTag::Insert => self.added += new_range.len(),
                        DiffTag::Replace => {
                            self.removed += old_range.len();
                            self.added += new_range.len();
                        }
                        DiffTag::Equal => {}
                    }
                }
                continue;
            }
            let old_range = first.old_range().start..last.old_range().end;
            let new_range = first.new_range().start..last.new_range().end;
            let _ = writeln!(
                self.out,
                "@@ -{} +{} @@",
                hunk_range(
                    old_line + window.first_line + old_range.start,
                    old_range.len()
                ),
                hunk_range(
                    new_line + window.first_line + new_range.start,
                    new_range.len()
                ),
            );
            for op in &group {
                for change in diff.iter_changes(op) {
                    let sign = match change.tag() {
                        ChangeTag::Equal => ' ',
                        ChangeTag::Delete => {
                            self.removed += 1;
                            '-'
                        }
                        ChangeTag::Insert => {
                            self.added += 1;
                            '+'
                        }
                    };
                    self.rendered += 1;
                    if self.rendered > MAX_RENDERED_LINES {
                        continue;
                    }
                    let line = change.value();
                    self.out.push(sign);
                    self.out.push_str(line);
                    if !line.ends_with('\n') {
                        self.out.push_str("\n\\ No newline at end of file\n");
                    }
                }
            }
        }
    }

    /// The diff text and the added and removed line counts.
    pub(crate) fn finish(mut self) -> (String, usize, usize) {
        if self.rendered > MAX_RENDERED_LINES {
            let _ = writeln!(
                self.out,
                "[... the diff is cut after {MAX_RENDERED_LINES} lines: {} lines added and {} removed in all]",
                self.added, self.removed
            );
        }
        (self.out, self.added, self.removed)
    }
}

/// `start,len` of a hunk side, 1-based; an empty side names the line before it.
fn hunk_range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

/// The byte ranges of `old` and `new` that differ, widened to whole lines plus the
/// context lines, and the 0-based line number where they start.
struct ChangedWindow {
    old_start: usize,
    old_end: usize,
    new_start: usize,
    new_end: usize,
    first_line: usize,
}

impl ChangedWindow {
    fn find(old: &str, new: &str) -> ChangedWindow {
        let (o, n) = (old.as_bytes(), new.as_bytes());
        let same_head = common_prefix(o, n);
        // Back to the start of the line holding the first difference.
        let head = memchr::memrchr(b'\n', &o[..same_head]).map_or(0, |i| i + 1);
        let max_tail = (o.len() - head).min(n.len() - head);
        let same_tail = common_suffix(&o[o.len() - max_tail..], &n[n.len() - max_tail..]);
        // Forward to the start of a line in the common tail (both sides agree there).
        let tail_text = &o[o.len() - same_tail..];
        let tail = match memchr::memchr(b'\n', tail_text) {
            Some(i) => same_tail - (i + 1),
            None => 0,
        };
        // Widen by the context lines on each side.
        let mut start = head;
        for _ in 0..CONTEXT {
            if start == 0 {
                break;
            }
            start = o[..start - 1]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
        }
        let mut tail_keep = tail;
        for _ in 0..CONTEXT {
            if tail_keep == 0 {
                break;
            }
            let rest = &o[o.len() - tail_keep..];
            tail_keep -= rest
                .iter()
                .position(|&b| b == b'\n')
                .map_or(rest.len(), |i| i + 1);
        }
        let first_line = crate::text_file::count_newlines(&o[..start]);
        ChangedWindow {
            old_start: start,
            old_end: o.len() - tail_keep,
            new_start: start,
            new_end: n.len() - tail_keep,
            first_line,
        }
    }
}

/// Block size for comparing long equal runs with `memcmp`.
const BLOCK: usize = 4096;

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let len = a.len().min(b.len());
    let mut i = 0;
    while i + BLOCK <= len && a[i..i + BLOCK] == b[i..i + BLOCK] {
        i += BLOCK;
    }
    i + a[i..len]
        .iter()
        .zip(&b[i..len])
        .take_while(|(x, y)| x == y)
        .count()
}

fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let len = a.len().min(b.len());
    let (a, b) = (&a[a.len() - len..], &b[b.len() - len..]);
    let mut i = 0;
    while i + BLOCK <= len && a[len - i - BLOCK..len - i] == b[len - i - BLOCK..len - i] {
        i += BLOCK;
    }
    i + a[..len - i]
        .iter()
        .rev()
        .zip(b[..len - i].iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_change_in_a_long_file_has_numbered_context() {
        let old: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 50\n", "line fifty\n");
        let (diff, added, removed) = unified("a.txt", &old, &new);
        assert_eq!((added, removed), (1, 1));
        assert_eq!(
            diff,
            "--- a.txt\tCurrent\n+++ a.txt\tProposed\n@@ -47,7 +47,7 @@\n line 47\n line 48\n line 49\n-line 50\n+line fifty\n line 51\n line 52\n line 53\n"
        );
    }

    #[test]
    fn new_file_and_missing_final_newline() {
        let (diff, added, removed) = unified("n.txt", "", "a\nb");
        assert_eq!((added, removed), (2, 0));
        assert_eq!(
            diff,
            "--- n.txt\tCurrent\n+++ n.txt\tProposed\n@@ -0,0 +1,2 @@\n+a\n+b\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn change_at_the_very_start_and_end() {
        let (diff, added, removed) = unified("x", "a\nb\nc\n", "A\nb\nC\n");
        assert_eq!((added, removed), (2, 2));
        assert!(
            diff.contains("@@ -1,3 +1,3 @@\n-a\n+A\n b\n-c\n+C\n"),
            "{diff}"
        );
    }

    #[test]
    fn huge_diffs_are_cut_but_fully_counted() {
        let new: String = (0..50_000).map(|i| format!("{i}\n")).collect();
        let (diff, added, removed) = unified("big", "", &new);
        assert_eq!((added, removed), (50_000, 0));
        assert!(diff.lines().count() < MAX_RENDERED_LINES + 10);
        assert!(
            diff.ends_with("50000 lines added and 0 removed in all]\n"),
            "{}",
            &diff[diff.len() - 100..]
        );
    }

    #[test]
    fn common_prefix_and_suffix_across_blocks() {
        let a = "x".repeat(10_000) + "A" + &"y".repeat(9_000);
        let b = "x".repeat(10_000) + "BB" + &"y".repeat(9_000);
        assert_eq!(common_prefix(a.as_bytes(), b.as_bytes()), 10_000);
        assert_eq!(common_suffix(a.as_bytes(), b.as_bytes()), 9_000);
        assert_eq!(common_prefix(b"abc", b"abc"), 3);
        assert_eq!(common_suffix(b"", b"abc"), 0);
    }

    #[test]
    fn identical_texts_have_an_empty_diff() {
        assert_eq!(unified("x", "same\n", "same\n").1, 0);
    }

    #[test]
    fn window_matches_a_full_diff_on_random_edits() {
        // The trimmed diff must describe the same change as diffing everything.
        let old: String = (0..40).map(|i| format!("{}\n", i % 7)).collect();
        for (from, to) in [("3\n4\n", "x\n"), ("0\n1\n", ""), ("6\n", "6\n6\n")] {
            let new = old.replacen(from, to, 1);
            let (_, added, removed) = unified("f", &old, &new);
            let full = TextDiff::from_lines(&old, &new);
            let full_added = full
                .iter_all_changes()
                .filter(|c| c.tag() == ChangeTag::Insert)
                .count();
            let full_removed = full
                .iter_all_changes()
                .filter(|c| c.tag() == ChangeTag::Delete)
                .count();
            assert_eq!(
                (added, removed),
                (full_added, full_removed),
                "{from:?} -> {to:?}"
            );
        }
    }
}
