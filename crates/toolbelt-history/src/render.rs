//! The texts a person reads: the list of checkpoints, a restore's plan with its diff,
//! what a restore did, and what each turn changed. Every front end shows these same
//! texts (`/restore`, `/rewind`, `/diff`, `toolbelt restore`).

use std::fmt::Write as _;

use chrono::{Local, TimeZone};

use crate::hash::ContentHash;
use crate::history::{History, TurnMark};
use crate::objects::Objects;
use crate::record::{LeftOut, Phase, Record};
use crate::restore::{Applied, Change, RestorePlan, compare};
use crate::tree::EntryKind;

/// Largest file whose text a diff shows.
const DIFF_TEXT_LIMIT: u64 = 1 << 20;
/// At most this many lines of diff in one text; the rest is counted.
const DIFF_LINES: usize = 4_000;

/// A checkpoint's time, local.
pub fn when(time_ms: u64) -> String {
    i64::try_from(time_ms)
        .ok()
        .and_then(|ms| Local.timestamp_millis_opt(ms).single())
        .map_or_else(
            || "?".to_string(),
            |t| t.format("%Y-%m-%d %H:%M:%S").to_string(),
        )
}

/// One line about a checkpoint: what it comes before.
pub fn describe(record: &Record) -> String {
    let mut s = format!("before {} ({})", record.tool, record.call_id);
    if record.turn > 0 {
        let _ = write!(s, " in turn {}", record.turn);
        if !record.prompt.is_empty() {
            let _ = write!(s, " \"{}\"", record.prompt);
        }
    }
    s
}

/// A listed checkpoint.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The record.
    pub record: Record,
    /// Files that differ between it and the workspace now (`None`: unknown).
    pub changed: Option<usize>,
}

impl History {
    /// The checkpoints of the project, newest first, each with how many files differ
    /// from it now; damaged records as messages.
    pub fn list(&self) -> Result<(Vec<Listed>, Vec<String>), crate::HistoryError> {
        // Nothing to compare with: nothing is read (or written to the store).
        if self.store().record_files().is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let current = {
            let mut state = self.state();
            self.sync_locked(&mut state, None)?
        };
        let objects = &self.store().objects;
        let mut listed = Vec::new();
        let mut damaged = Vec::new();
        for r in self.store().checkpoints() {
            match r {
                Ok(record) => {
                    let changed = changed_between(objects, &record, &current);
                    listed.push(Listed { record, changed });
                }
                Err(e) => damaged.push(e.to_string()),
            }
        }
        Ok((listed, damaged))
    }

    /// The checkpoint to go back to for turn `mark`: the first this session took after
    /// the turn started; `None` when toolbelt changed nothing since.
    pub fn turn_checkpoint(&self, mark: &TurnMark) -> Option<Record> {
        let mut files = self.store().record_files();
        files.reverse();
        files
            .into_iter()
            .filter(|f| f.phase == Phase::Before && f.time_ms >= mark.started_ms)
            .filter_map(|f| crate::record::read(&f.path).ok())
            .find(|r| r.session == self.session())
    }

    /// What each turn of this session changed (its first checkpoint to what its last
    /// call left), as text with diffs.
    pub fn turns_text(&self) -> String {
        let marks = self.turns();
        if marks.is_empty() {
            return "No turns in this session yet.\n".to_string();
        }
        let mut records: Vec<Record> = self
            .store()
            .record_files()
            .into_iter()
            .rev()
            .filter_map(|f| crate::record::read(&f.path).ok())
            .filter(|r| r.session == self.session())
            .collect();
        records.sort_by_key(|r| r.time_ms);
        let mut out = String::new();
        for (i, mark) in marks.iter().enumerate() {
            let end = marks.get(i + 1).map_or(u64::MAX, |m| m.started_ms);
            let inside: Vec<&Record> = records
                .iter()
                .filter(|r| r.time_ms >= mark.started_ms && r.time_ms < end)
                .collect();
            let first = inside.iter().find(|r| r.phase == Phase::Before);
            let last = inside.iter().rev().find(|r| r.phase == Phase::After);
            let _ = writeln!(
                out,
                "── Turn {} \"{}\"",
                mark.number,
                prompt_line(&mark.prompt)
            );
            match (first, last) {
                (Some(a), Some(b)) => out.push_str(&self.diff_records(a, b)),
                _ => out.push_str("   (no file changes)\n"),
            }
        }
        out
    }

    /// The diff from record `a` to record `b`.
    fn diff_records(&self, a: &Record, b: &Record) -> String {
        let objects = &self.store().objects;
        let mut out = String::new();
        let mut lines = 0;
        let mut files = 0;
        for (root, then) in a.trees() {
            let Some((_, now)) = b.trees().into_iter().find(|(r, _)| *r == root) else {
                continue;
            };
            let mut diffs = Vec::new();
            if compare(objects, Some(&then), Some(&now), b"", &mut diffs).is_err() {
                out.push_str("   (the checkpoints of this turn cannot be read)\n");
                continue;
            }
            for (rel, before, after) in diffs {
                let change = Change {
                    root: root.clone(),
                    rel,
                    now: before,
                    then: after,
                    outside: false,
                };
                if let Some(text) = file_diff(objects, &change, &mut lines, ("before", "after")) {
                    files += 1;
                    out.push_str(&text);
                }
            }
        }
        if files == 0 {
            return "   (no file changes)\n".to_string();
        }
        out
    }
}

fn prompt_line(prompt: &str) -> String {
    let line = prompt.trim().lines().next().unwrap_or("");
    let short: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        format!("{short}…")
    } else {
        short
    }
}

/// How many files (not directories) differ between `record` and the trees `current`.
fn changed_between(
    objects: &Objects,
    record: &Record,
    current: &[(std::path::PathBuf, ContentHash)],
) -> Option<usize> {
    let mut count = 0;
    let mut compared = false;
    for (root, then) in record.trees() {
        let Some((_, now)) = current.iter().find(|(r, _)| *r == root) else {
            continue;
        };
        compared = true;
        let mut diffs = Vec::new();
        compare(objects, Some(&then), Some(now), b"", &mut diffs).ok()?;
        let file = |l: &Option<crate::tree::Leaf>| l.is_some_and(|l| l.kind != EntryKind::Dir);
        count += diffs.iter().filter(|(_, a, b)| file(a) || file(b)).count();
    }
    // A checkpoint of other roots (a worktree the session is not in now) has nothing
    // here to compare with: "cannot compare", not "0 files changed".
    compared.then_some(count)
}

impl History {
    /// Lines a restore adds back and takes away (text files up to 1 MiB).
    pub fn line_counts(&self, plan: &RestorePlan) -> (usize, usize) {
        let objects = &self.store().objects;
        let text = |l: &Option<crate::tree::Leaf>| -> Option<String> {
            match l {
                None => Some(String::new()),
                Some(l) if l.kind == EntryKind::File && l.size <= DIFF_TEXT_LIMIT => {
                    String::from_utf8(objects.read_content(&l.hash).ok()?).ok()
                }
                Some(_) => None,
            }
        };
        let (mut added, mut removed) = (0, 0);
        for c in plan.changes.iter().filter(|c| !c.outside) {
            if let (Some(old), Some(new)) = (text(&c.now), text(&c.then)) {
                let (_, a, r) = toolbelt_tools::unified_diff(&c.shown(), &old, &new);
                added += a;
                removed += r;
            }
        }
        (added, removed)
    }
}

/// `toolbelt restore --list` and `/restore`: one checkpoint a line, newest first,
/// starting with its ID.
pub fn list_text(listed: &[Listed], damaged: &[String]) -> String {
    if listed.is_empty() && damaged.is_empty() {
        return "No checkpoints yet: one is taken before every call that may change files.\n"
            .to_string();
    }
    let mut out = String::new();
    for l in listed {
        let changed = match l.changed {
            Some(1) => "1 file changed since".to_string(),
            Some(n) => format!("{n} files changed since"),
            None => "cannot compare".to_string(),
        };
        let _ = writeln!(
            out,
            "{}  {}  {}  ({changed})",
            l.record.id,
            when(l.record.time_ms),
            describe(&l.record)
        );
    }
    for d in damaged {
        let _ = writeln!(out, "damaged: {d}");
    }
    out
}

/// What was not kept, said once.
pub fn left_out_text(left: &LeftOut, has_ignore_rules: bool) -> String {
    let mut out = String::new();
    if has_ignore_rules {
        out.push_str("Not in checkpoints: files your ignore rules leave out (.gitignore, .qwenignore, context.fileFiltering) are never kept, and stay as they are.\n");
    }
    if left.oversized_count > 0 {
        let _ = writeln!(
            out,
            "Left out of this checkpoint: {} file(s) over the size cap of {} bytes (general.checkpointing.maxFileSize): {}{}",
            left.oversized_count,
            left.size_cap,
            left.oversized.join(", "),
            if left.oversized_count > left.oversized.len() {
                ", …"
            } else {
                ""
            }
        );
    }
    if left.withheld > 0 {
        let _ = writeln!(
            out,
            "{} path(s) your permission rules keep from reading were not kept.",
            left.withheld
        );
    }
    if !left.unreadable.is_empty() {
        let _ = writeln!(out, "Could not be read: {}", left.unreadable.join("; "));
    }
    out
}

/// A restore's plan: what it does, what it keeps and why, and the diff.
pub fn plan_text(history: &History, plan: &RestorePlan) -> String {
    let mut out = format!(
        "Checkpoint {} ({}), {}:\n",
        plan.target.id,
        when(plan.target.time_ms),
        describe(&plan.target)
    );
    if plan.is_empty() {
        out.push_str("Nothing to restore: the files are as they were then.\n");
    }
    for c in &plan.changes {
        if c.now.is_some_and(|l| l.kind == EntryKind::Dir)
            && c.then.is_some_and(|l| l.kind == EntryKind::Dir)
        {
            let _ = writeln!(out, "  mode     {}/", c.shown());
            continue;
        }
        let mark = if c.outside {
            "  (changed outside toolbelt since)"
        } else {
            ""
        };
        let left = if c.restorable() {
            ""
        } else {
            "  (left out: over the size cap then; stays)"
        };
        let _ = writeln!(out, "  {:<8} {}{mark}{left}", c.verb(), c.shown());
    }
    let special: Vec<String> = plan
        .changes
        .iter()
        .filter(|c| c.then.is_some_and(|l| l.mode & 0o7000 != 0))
        .map(Change::shown)
        .collect();
    if !special.is_empty() {
        let _ = writeln!(
            out,
            "Restored without their set-user-ID, set-group-ID and sticky bits, owned by you: {}",
            special.join(", ")
        );
    }
    let outside: Vec<String> = plan.outside().map(Change::shown).collect();
    if !outside.is_empty() {
        let _ = writeln!(
            out,
            "Changed outside toolbelt since it last saw them, so kept unless forced (--force): {}",
            outside.join(", ")
        );
    }
    for root in &plan.missing_roots {
        let _ = writeln!(
            out,
            "Not in this session's workspace, left alone: {}",
            root.display()
        );
    }
    let objects = &history.store().objects;
    let ignores = has_ignore_file(objects, &plan.target);
    out.push_str(&left_out_text(&plan.target.left_out, ignores));
    let mut lines = 0;
    for c in &plan.changes {
        if let Some(text) = file_diff(objects, c, &mut lines, ("now", "checkpoint")) {
            out.push_str(&text);
        }
    }
    out
}

/// Whether a checkpoint's trees hold an ignore file (`.gitignore`, `.qwenignore`,
/// `.ignore`): only then can a restore have left ignored files alone, and say so.
fn has_ignore_file(objects: &Objects, record: &Record) -> bool {
    record.trees().iter().any(|(_, hash)| {
        let Ok(tree) = crate::index::DirNode::load(objects, hash, 0o755) else {
            return true;
        };
        let mut all = std::collections::BTreeMap::new();
        tree.flatten(b"", &mut all);
        all.keys().any(|path| {
            let name = path.rsplit(|b| *b == b'/').next().unwrap_or(path);
            [&b".gitignore"[..], b".qwenignore", b".ignore"].contains(&name)
        })
    })
}

/// What a restore did; `restore` is the command that restores a checkpoint where the
/// person reads this (`/restore`, `toolbelt restore`), so the undo line can be typed.
pub fn applied_text(applied: &Applied, restore: &str) -> String {
    let mut out = format!(
        "Restored {} path(s), removed {}.",
        applied.restored.len(),
        applied.removed.len()
    );
    if let Some(undo) = &applied.undo {
        let _ = write!(out, " To undo this restore: {restore} {undo}");
    }
    out.push('\n');
    if !applied.kept.is_empty() {
        let _ = writeln!(
            out,
            "Kept, because they changed outside toolbelt (--force overwrites them): {}",
            applied.kept.join(", ")
        );
    }
    for f in &applied.failed {
        let _ = writeln!(out, "Not restored: {f}");
    }
    out
}

/// A unified diff whose two sides are named in words (`--- a.py (now)`,
/// `+++ a.py (checkpoint)`): not a confirmation's `Current`/`Proposed`, which would be
/// wrong for a past change, and no tab, which a terminal cell drops.
fn labelled_diff(name: &str, old: &str, new: &str, (before, after): (&str, &str)) -> String {
    let (diff, ..) = toolbelt_tools::unified_diff(name, old, new);
    let body = diff.splitn(3, '\n').nth(2).unwrap_or("");
    format!("--- {name} ({before})\n+++ {name} ({after})\n{body}")
}

/// The diff of one change as restoring shows it (what is there now to what the
/// checkpoint had), or a line saying what happens to it; `None` for a directory.
fn file_diff(
    objects: &Objects,
    c: &Change,
    lines: &mut usize,
    sides: (&str, &str),
) -> Option<String> {
    let kind = |l: &Option<crate::tree::Leaf>| l.map(|l| l.kind);
    if kind(&c.now) == Some(EntryKind::Dir) || kind(&c.then) == Some(EntryKind::Dir) {
        return None;
    }
    let name = c.shown();
    if *lines > DIFF_LINES {
        return Some(format!("--- {name}: diff not shown (the diff is long)\n"));
    }
    let text = |l: &Option<crate::tree::Leaf>| -> Option<String> {
        match l {
            None => Some(String::new()),
            Some(l) if l.kind == EntryKind::Omitted || l.size > DIFF_TEXT_LIMIT => None,
            Some(l) => {
                let bytes = objects.read_content(&l.hash).ok()?;
                let text = String::from_utf8(bytes).ok()?;
                Some(if l.kind == EntryKind::Link {
                    format!("-> {text}\n")
                } else {
                    text
                })
            }
        }
    };
    let mode_note = match (c.now, c.then) {
        (Some(a), Some(b)) if a.mode != b.mode => format!("mode {:o} -> {:o}\n", a.mode, b.mode),
        _ => String::new(),
    };
    match (text(&c.now), text(&c.then)) {
        (Some(old), Some(new)) => {
            let diff = labelled_diff(&name, &old, &new, sides);
            *lines += diff.lines().count();
            if old == new {
                Some(format!("--- {name}: {mode_note}"))
            } else {
                Some(format!("{mode_note}{diff}"))
            }
        }
        _ => Some(format!(
            "--- {name}: binary or large file differs\n{mode_note}"
        )),
    }
}
