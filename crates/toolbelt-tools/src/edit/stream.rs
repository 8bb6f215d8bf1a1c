//! Editing a large file without holding it in memory.
//!
//! Reading a 50 MB file into memory, building the edited copy, keeping both for the
//! confirmation and the result and writing it back costs several times a plain read,
//! most of it in page faults on fresh buffers. Above a size threshold an exact edit is
//! therefore planned in one streamed pass and written in a second:
//!
//! 1. [`scan`] reads the file in chunks through one reused buffer. It checks UTF-8,
//!    learns the line ending, finds every occurrence of `old_string` with `memmem`
//!    (carrying the last bytes of a chunk over to the next so no match is split) and
//!    notes the line of each.
//! 2. [`Found::render`] reads back only the lines around each change to build the
//!    unified diff and the snippet for the model.
//! 3. [`Found::write_into`] writes the new file as "copy the unchanged range, write the
//!    replacement" pairs; the copies are `copy_file_range` (the kernel copies page
//!    cache to page cache, or shares blocks on file systems with reflinks), and the
//!    replaced bytes are checked to still be `old_string` as they are skipped.
//!
//! The result is byte for byte what the in-memory path gives (a property test compares
//! them). Whatever the streamed pass cannot decide by itself falls back to that path
//! ([`Scan::Fallback`]): no exact occurrence (tolerant matching and the "closest lines"
//! error need the whole text), a CRLF file with a stray LF when the edit spans lines,
//! a `\r` in the old_string of a CRLF edit, no line break in the first MiB, thousands
//! of occurrences, or lines so long that the diff would need the whole file anyway.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;

use crate::diff::Unified;

mod scan;
use crate::text_file::{LineEnding, TextFormat, count_newlines};
#[cfg(test)]
use scan::Utf8Stream;
pub(crate) use scan::scan;

/// Bytes read at a time.
pub(crate) const CHUNK: usize = 1 << 20;
/// How far the first line break is looked for.
const PROBE: usize = 1 << 20;
/// More occurrences than this are edited in memory: one diff region per occurrence
/// would cost more than the whole file.
const MAX_OCCURRENCES: usize = 1_000;
/// Lines of context read around each change: the diff shows 3, the snippet 4.
const WINDOW_LINES: usize = 4;
/// Bytes of context windows read in all; past this the lines are so long that the
/// in-memory path is as cheap.
const MAX_WINDOW_BYTES: u64 = 8 * 1024 * 1024;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The edit asked of the streamed pass, as given (line endings not yet adapted).
pub(crate) struct Request<'a> {
    pub old: &'a str,
    pub new: &'a str,
}

/// What the streamed pass concluded.
#[derive(Debug)]
pub(crate) enum Scan {
    Found(Found),
    /// The in-memory path must decide; the reason is for logs.
    Fallback(&'static str),
}

/// The exact occurrences of `old_string` in a file, as ranges of its bytes.
#[derive(Debug)]
pub(crate) struct Found {
    pub format: TextFormat,
    pub len: u64,
    /// The bytes searched for and their replacement, in the file's line ending.
    needle: Vec<u8>,
    replacement: Vec<u8>,
    /// Ranges replaced, in order and disjoint: the needle, and for a deleted whole
    /// line its line break too.
    pub ranges: Vec<Range<u64>>,
    /// 0-based line of each range's start.
    pub lines: Vec<usize>,
    /// `\n` bytes in the file, and its last byte.
    newlines: usize,
    last_byte: Option<u8>,
}

/// The diff and snippet data of a streamed edit.
pub(crate) struct Rendered {
    pub diff: String,
    pub added: usize,
    pub removed: usize,
    /// The first changed region of the new file, `\n`-separated.
    pub first_window: String,
    /// 1-based line of `first_window`'s first line in the new file.
    pub first_window_line: usize,
    /// Byte range of the first replacement in `first_window`.
    pub first_change: Range<usize>,
    /// Lines of the new file.
    pub new_total_lines: usize,
}

impl Found {
    pub(crate) fn occurrences(&self) -> usize {
        self.ranges.len()
    }

    /// The unified diff of the change and the region around the first replacement,
    /// read back from `file` around each change. `None` when the changed lines are so
    /// long that the in-memory path is as cheap.
    pub(crate) fn render(&self, file: &File, name: &str) -> std::io::Result<Option<Rendered>> {
        let bom_len = if self.format.bom { BOM.len() as u64 } else { 0 };
        // Windows of whole lines around each range, merged when they touch.
        let mut groups: Vec<(Range<u64>, Range<usize>)> = Vec::new();
        let mut window_bytes = 0;
        for (i, r) in self.ranges.iter().enumerate() {
            let start = line_start_before(file, r.start, WINDOW_LINES, bom_len)?;
            // One line more after: when whole lines are deleted, the snippet counts
            // its lines from the line that follows them.
            let end = line_end_after(file, r.end - 1, WINDOW_LINES + 1, self.len)?;
            match groups.last_mut() {
                Some((w, members)) if start <= w.end => {
                    window_bytes += end.saturating_sub(w.end);
                    w.end = w.end.max(end);
                    members.end = i + 1;
                }
                _ => {
                    window_bytes += end - start;
                    groups.push((start..end, i..i + 1));
                }
            }
            if window_bytes > MAX_WINDOW_BYTES {
                return Ok(None);
            }
        }
        let mut diff = Unified::new(name);
        let mut delta: isize = 0;
        let mut first = None;
        for (window, members) in &groups {
            let mut old = vec![0u8; usize::try_from(window.end - window.start).unwrap_or(0)];
            file.read_exact_at(&mut old, window.start)?;
            let mut new = Vec::with_capacity(old.len() + self.replacement.len());
            let mut at = 0;
            let mut change = 0..0;
            for (k, r) in self.ranges[members.clone()].iter().enumerate() {
                let s = usize::try_from(r.start - window.start).unwrap_or(0);
                new.extend_from_slice(&old[at..s]);
                if k == 0 {
                    change = new.len()..new.len() + self.replacement.len();
                }
                new.extend_from_slice(&self.replacement);
                at = usize::try_from(r.end - window.start).unwrap_or(0);
            }
            new.extend_from_slice(&old[at..]);
            let first_range = &self.ranges[members.start];
            let before = count_newlines(
                &old[..usize::try_from(first_range.start - window.start).unwrap_or(0)],
            );
            let old_line = self.lines[members.start] - before;
            let new_line = old_line.checked_add_signed(delta).unwrap_or(0);
            let (old_text, new_text, change) = self.display_texts(old, new, change);
            diff.region(&old_text, &new_text, old_line, new_line);
            delta += count_newlines(new_text.as_bytes()) as isize
                - count_newlines(old_text.as_bytes()) as isize;
            if first.is_none() {
                first = Some((new_text, new_line + 1, change));
            }
        }
        let (diff, added, removed) = diff.finish();
        let Some((first_window, first_window_line, first_change)) = first else {
            return Ok(None);
        };
        let newlines = self.newlines.checked_add_signed(delta).unwrap_or(0);
        let new_total_lines = newlines + usize::from(self.new_last_line_unbroken(file)?);
        Ok(Some(Rendered {
            diff,
            added,
            removed,
            first_window,
            first_window_line,
            first_change,
            new_total_lines,
        }))
    }

    /// A window's bytes as the in-memory path shows them: `\n` breaks for CRLF files
    /// (the change range moved with them).
    fn display_texts(
        &self,
        old: Vec<u8>,
        new: Vec<u8>,
        change: Range<usize>,
    ) -> (String, String, Range<usize>) {
        let old = String::from_utf8_lossy(&old).into_owned();
        let new_str = String::from_utf8_lossy(&new).into_owned();
        if self.format.line_ending != LineEnding::Crlf {
            return (old, new_str, change);
        }
        let shift = |i: usize| i - new_str[..i].matches("\r\n").count();
        let change = shift(change.start)..shift(change.end);
        (
            old.replace("\r\n", "\n"),
            new_str.replace("\r\n", "\n"),
            change,
        )
    }

    /// Whether the new file is not empty and its last byte is not a line break (its
    /// last line then counts without one).
    fn new_last_line_unbroken(&self, file: &File) -> std::io::Result<bool> {
        let bom_len = if self.format.bom { BOM.len() as u64 } else { 0 };
        if self.new_len() <= bom_len {
            return Ok(false);
        }
        // Walk back over the ranges that end the file (deleted ones expose the bytes
        // before them).
        let mut end = self.len;
        for r in self.ranges.iter().rev() {
            if r.end != end {
                break;
            }
            if let Some(&b) = self.replacement.last() {
                return Ok(b != b'\n');
            }
            end = r.start;
        }
        if end <= bom_len {
            return Ok(false);
        }
        let last = if end == self.len {
            self.last_byte.unwrap_or(b'\n')
        } else {
            let mut b = [0u8; 1];
            file.read_exact_at(&mut b, end - 1)?;
            b[0]
        };
        Ok(last != b'\n')
    }

    /// Length of the new file.
    pub(crate) fn new_len(&self) -> u64 {
        let removed: u64 = self.ranges.iter().map(|r| r.end - r.start).sum();
        self.len - removed + self.ranges.len() as u64 * self.replacement.len() as u64
    }

    /// Writes the new file into `out`: the unchanged ranges of `src` copied by the
    /// kernel, the replacements written. Fails with [`Changed`] when `src` is no
    /// longer the file that was scanned (a replaced range is not the needle any more,
    /// or the length differs).
    pub(crate) fn write_into(&self, src: &File, out: &mut File) -> std::io::Result<()> {
        let mut reader = src;
        let mut pos = 0u64;
        let mut check = vec![0u8; self.needle.len()];
        for r in &self.ranges {
            copy_range(&mut reader, out, pos, r.start)?;
            src.read_exact_at(&mut check, r.start)
                .map_err(changed_on_eof)?;
            if check != self.needle {
                return Err(changed());
            }
            out.write_all(&self.replacement)?;
            pos = r.end;
        }
        copy_range(&mut reader, out, pos, self.len)?;
        if src.metadata()?.len() != self.len {
            return Err(changed());
        }
        Ok(())
    }
}

/// The error [`Found::write_into`] gives when the file changed under it: the one the
/// shared write path turns into "changed since the confirmation".
pub(crate) use crate::file_change::ChangedWhileWriting as Changed;

fn changed() -> std::io::Error {
    std::io::Error::other(Changed)
}

fn changed_on_eof(e: std::io::Error) -> std::io::Error {
    if e.kind() == std::io::ErrorKind::UnexpectedEof {
        changed()
    } else {
        e
    }
}

/// Whether an I/O error is [`Changed`].
#[cfg(test)]
pub(crate) fn is_changed(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Changed>())
}

/// Copies `src[from..to]` to the end of `out`. `std::io::copy` between two files uses
/// `copy_file_range` (and falls back to read and write where that is refused).
fn copy_range(src: &mut &File, out: &mut File, from: u64, to: u64) -> std::io::Result<()> {
    if to <= from {
        return Ok(());
    }
    src.seek(SeekFrom::Start(from))?;
    let copied = std::io::copy(&mut src.take(to - from), out)?;
    if copied != to - from {
        return Err(changed());
    }
    Ok(())
}

/// The start of the line `lines` lines above the one holding byte `pos` (not before
/// `floor`).
fn line_start_before(file: &File, pos: u64, lines: usize, floor: u64) -> std::io::Result<u64> {
    let mut need = lines + 1;
    let mut end = pos;
    let mut block = [0u8; 4096];
    while end > floor {
        let start = end.saturating_sub(block.len() as u64).max(floor);
        let n = usize::try_from(end - start).unwrap_or(0);
        file.read_exact_at(&mut block[..n], start)?;
        for i in memchr::memrchr_iter(b'\n', &block[..n]) {
            need -= 1;
            if need == 0 {
                return Ok(start + i as u64 + 1);
            }
        }
        end = start;
    }
    Ok(floor)
}

/// The end (after the break) of the line `lines` lines below the one holding byte
/// `pos`, or the file's end.
fn line_end_after(file: &File, pos: u64, lines: usize, len: u64) -> std::io::Result<u64> {
    let mut need = lines + 1;
    let mut start = pos;
    let mut block = [0u8; 4096];
    while start < len {
        let n = usize::try_from((len - start).min(block.len() as u64)).unwrap_or(0);
        file.read_exact_at(&mut block[..n], start)?;
        for i in memchr::memchr_iter(b'\n', &block[..n]) {
            need -= 1;
            if need == 0 {
                return Ok(start + i as u64 + 1);
            }
        }
        start += n as u64;
    }
    Ok(len)
}

/// Reads until `buf` is full or the file ends; the number of bytes read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match reader.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests;
