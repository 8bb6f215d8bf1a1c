//! The scan of a large file for `old_string`: windows of the file read in turn, checked
//! to be UTF-8 and of one line ending, searched for the needle in the file's own line
//! ending. What it cannot decide alone is a [`Scan::Fallback`].

use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::ops::Range;
use std::os::unix::fs::FileExt;

use memchr::memmem;

use super::{BOM, Found, MAX_OCCURRENCES, PROBE, Request, Scan, read_full};
use crate::text_file::{LineEnding, TextFormat, count_newlines};

/// Streams `file` (`len` bytes) looking for the exact occurrences of `req.old`.
pub(crate) fn scan(
    file: &File,
    len: u64,
    req: &Request<'_>,
    chunk: usize,
) -> std::io::Result<Scan> {
    let mut reader = file;
    reader.seek(SeekFrom::Start(0))?;
    // The line ending matters when the edit involves line breaks: the needle and the
    // replacement are then written in the file's ending, and a `\r` in old_string must
    // not match the `\r` of a CRLF break. Deleting (empty new_string) also looks at the
    // break after the match.
    let spans_lines =
        req.old.contains(['\n', '\r']) || req.new.contains('\n') || req.new.is_empty();
    // At least the three bytes of a byte-order mark in the first read.
    let chunk = chunk.max(BOM.len());
    let (mut buf, mut filled, mut eof) = read_first(&mut reader, req, chunk, spans_lines)?;
    let bom = buf[..filled].starts_with(BOM);
    let bom_len = if bom { BOM.len() } else { 0 };
    if bom && req.old.starts_with('\u{FEFF}') {
        return Ok(Scan::Fallback("old_string starts with a byte-order mark"));
    }
    let mut search = Search {
        spans_lines,
        utf8: Utf8Stream::default(),
        endings: Endings::Unknown,
        prev_byte: None,
        fresh_start: 0,
        base: 0,
        newlines_before_base: 0,
        search_from: bom_len as u64,
        ranges: Vec::new(),
        lines: Vec::new(),
        needle: None,
    };
    loop {
        if let Err(why) = search.window(&buf[..filled], req, eof) {
            return Ok(Scan::Fallback(why));
        }
        if eof {
            break;
        }
        let nlen = search.needle.as_ref().map_or(1, |n| n.0.len());
        search.slide(&mut buf, &mut filled, nlen);
        let want = (filled + chunk).min(buf.len());
        let n = read_full(&mut reader, &mut buf[filled..want])?;
        eof = n < want - filled;
        filled += n;
    }
    search.finish(file, len, req, &buf[..filled], bom)
}

/// The first read: at least `chunk` bytes, and when the edit spans lines, on to the
/// first line break (within the first MiB), since the line ending must be known before
/// the search starts. Returns the buffer, how much of it is filled, and whether the
/// file ended.
fn read_first(
    reader: &mut &File,
    req: &Request<'_>,
    chunk: usize,
    spans_lines: bool,
) -> std::io::Result<(Vec<u8>, usize, bool)> {
    let mut buf = vec![0u8; chunk + 2 * req.old.len() + 4];
    let mut filled = read_full(reader, &mut buf[..chunk])?;
    let mut eof = filled < chunk;
    while spans_lines && !eof && filled < PROBE && memchr::memchr(b'\n', &buf[..filled]).is_none() {
        buf.resize(filled + chunk + 2 * req.old.len() + 4, 0);
        let n = read_full(reader, &mut buf[filled..filled + chunk])?;
        eof = n < chunk;
        filled += n;
    }
    Ok((buf, filled, eof))
}

/// The state of a scan between windows of the file.
struct Search {
    spans_lines: bool,
    utf8: Utf8Stream,
    endings: Endings,
    prev_byte: Option<u8>,
    /// Where the bytes not yet checked start in the window.
    fresh_start: usize,
    /// Offset in the file of the window's first byte.
    base: u64,
    newlines_before_base: usize,
    search_from: u64,
    ranges: Vec<Range<u64>>,
    lines: Vec<usize>,
    /// Needle, replacement, and whether they were adapted to CRLF.
    needle: Option<(Vec<u8>, Vec<u8>, bool)>,
}

impl Search {
    /// Checks the window's new bytes and records the occurrences in it; `Err` is why
    /// the in-memory path must decide.
    fn window(&mut self, buf: &[u8], req: &Request<'_>, eof: bool) -> Result<(), &'static str> {
        let fresh = &buf[self.fresh_start..];
        if !self.utf8.feed(fresh) {
            return Err("not UTF-8");
        }
        if self.endings.check(fresh, self.prev_byte) == Transition::BecameLf
            && self.needle.as_ref().is_some_and(|n| n.2)
        {
            return Err("a CRLF file with a bare LF");
        }
        if let Some(&b) = fresh.last() {
            self.prev_byte = Some(b);
        }
        if self.needle.is_none() {
            self.needle = Some(self.choose_needle(req, eof)?);
        }
        let Some((pattern, _, _)) = self.needle.as_ref() else {
            return Err("no needle");
        };
        let nlen = pattern.len();
        let from = usize::try_from(self.search_from.saturating_sub(self.base))
            .unwrap_or(buf.len())
            .min(buf.len());
        let mut cursor = (0usize, self.newlines_before_base);
        for i in memmem::find_iter(&buf[from..], pattern) {
            let start = from + i;
            cursor.1 += count_newlines(&buf[cursor.0..start]);
            cursor.0 = start;
            let at = self.base + start as u64;
            self.ranges.push(at..at + nlen as u64);
            self.lines.push(cursor.1);
            self.search_from = at + nlen as u64;
            if self.ranges.len() > MAX_OCCURRENCES {
                return Err("too many occurrences");
            }
        }
        Ok(())
    }

    /// The needle and replacement, once the line ending is known.
    fn choose_needle(
        &self,
        req: &Request<'_>,
        eof: bool,
    ) -> Result<(Vec<u8>, Vec<u8>, bool), &'static str> {
        let crlf = match self.endings {
            Endings::CrlfSoFar => true,
            Endings::Lf => false,
            Endings::Unknown if !self.spans_lines || eof => false,
            Endings::Unknown => return Err("no line break in the first MiB"),
        };
        let crlf = crlf && self.spans_lines;
        let (n, r) = adapt(req, crlf);
        let (Some(n), Some(r)) = (n, r) else {
            return Err("a CRLF edit with a bare CR, or no change");
        };
        Ok((n, r, crlf))
    }

    /// Keeps what could still start a match, and nothing before the last match's end,
    /// at the start of `buf`.
    fn slide(&mut self, buf: &mut [u8], filled: &mut usize, nlen: usize) {
        let keep_from = filled
            .saturating_sub(nlen - 1)
            .max(usize::try_from(self.search_from.saturating_sub(self.base)).unwrap_or(*filled))
            .min(*filled);
        self.newlines_before_base += count_newlines(&buf[..keep_from]);
        buf.copy_within(keep_from..*filled, 0);
        *filled -= keep_from;
        self.base += keep_from as u64;
        self.fresh_start = *filled;
    }

    /// The result once the whole file (`buf` its last window) was searched.
    fn finish(
        self,
        file: &File,
        len: u64,
        req: &Request<'_>,
        buf: &[u8],
        bom: bool,
    ) -> std::io::Result<Scan> {
        let total_newlines = self.newlines_before_base + count_newlines(buf);
        if !self.utf8.finish() {
            return Ok(Scan::Fallback("not UTF-8 (cut short)"));
        }
        if self.base + buf.len() as u64 != len {
            return Ok(Scan::Fallback("the file changed while it was read"));
        }
        if self.ranges.is_empty() {
            return Ok(Scan::Fallback("no exact occurrence"));
        }
        let Some((needle, replacement, crlf)) = self.needle else {
            return Ok(Scan::Fallback("no needle"));
        };
        let format = TextFormat {
            line_ending: if self.endings == Endings::CrlfSoFar {
                LineEnding::Crlf
            } else {
                LineEnding::Lf
            },
            bom,
        };
        let mut ranges = self.ranges;
        if req.new.is_empty() {
            let bom_len = if bom { BOM.len() as u64 } else { 0 };
            extend_deleted_lines(file, &mut ranges, &needle, len, bom_len, crlf)?;
        }
        Ok(Scan::Found(Found {
            format,
            len,
            needle,
            replacement,
            ranges,
            lines: self.lines,
            newlines: total_newlines,
            last_byte: self.prev_byte,
        }))
    }
}

/// The needle and replacement in the file's line ending: as given for LF, or with
/// `\r\n` for CRLF (`None` when a `\r` in old_string makes the two paths disagree,
/// or when the edit changes nothing).
fn adapt(req: &Request<'_>, crlf: bool) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    if !crlf {
        if req.old == req.new {
            return (None, None);
        }
        return (
            Some(req.old.as_bytes().to_vec()),
            Some(req.new.as_bytes().to_vec()),
        );
    }
    let (old, new) = (req.old.replace("\r\n", "\n"), req.new.replace("\r\n", "\n"));
    // A `\r` in old_string could match the `\r` of a CRLF break on disk, which the
    // decoded text does not have.
    if old == new || old.contains('\r') {
        return (None, None);
    }
    let f = TextFormat {
        line_ending: LineEnding::Crlf,
        bom: false,
    };
    (Some(f.encode(&old)), Some(f.encode(&new)))
}

/// Deleting a whole line removes its line break too (as the in-memory path does): a
/// match that starts a line and is followed by the line's break takes the break.
fn extend_deleted_lines(
    file: &File,
    ranges: &mut [Range<u64>],
    needle: &[u8],
    len: u64,
    bom_len: u64,
    crlf: bool,
) -> std::io::Result<()> {
    if needle.ends_with(b"\n") {
        return Ok(());
    }
    let brk: &[u8] = if crlf { b"\r\n" } else { b"\n" };
    for i in 0..ranges.len() {
        let r = ranges[i].clone();
        let at_line_start = r.start == bom_len || {
            let mut b = [0u8; 1];
            file.read_exact_at(&mut b, r.start - 1)?;
            b[0] == b'\n'
        };
        if !at_line_start || r.end + brk.len() as u64 > len {
            continue;
        }
        let mut next = [0u8; 2];
        let next = &mut next[..brk.len()];
        file.read_exact_at(next, r.end)?;
        let new_end = r.end + brk.len() as u64;
        let fits = ranges.get(i + 1).is_none_or(|n| n.start >= new_end);
        if next == brk && fits {
            ranges[i].end = new_end;
        }
    }
    Ok(())
}

/// What the line breaks seen so far say about the file's line ending (the rule of
/// `TextFormat::detect`: CRLF only when every break is `\r\n`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endings {
    Unknown,
    CrlfSoFar,
    Lf,
}

#[derive(Debug, PartialEq, Eq)]
enum Transition {
    None,
    BecameLf,
}

impl Endings {
    /// Looks at the breaks in `bytes`; `prev` is the byte before them.
    fn check(&mut self, bytes: &[u8], prev: Option<u8>) -> Transition {
        if *self == Endings::Lf {
            return Transition::None;
        }
        for i in memchr::memchr_iter(b'\n', bytes) {
            let before = if i == 0 { prev } else { Some(bytes[i - 1]) };
            if before == Some(b'\r') {
                *self = Endings::CrlfSoFar;
            } else {
                *self = Endings::Lf;
                return Transition::BecameLf;
            }
        }
        Transition::None
    }
}

/// UTF-8 validation of a stream cut at arbitrary bytes: a character split between two
/// chunks is held until its end arrives.
#[derive(Default)]
pub(super) struct Utf8Stream {
    pending: [u8; 4],
    len: usize,
}

impl Utf8Stream {
    /// Whether `data` continues a valid stream.
    pub(super) fn feed(&mut self, mut data: &[u8]) -> bool {
        if self.len > 0 {
            let width = utf8_width(self.pending[0]);
            if width <= self.len {
                return false;
            }
            let take = (width - self.len).min(data.len());
            self.pending[self.len..self.len + take].copy_from_slice(&data[..take]);
            self.len += take;
            data = &data[take..];
            if self.len < width {
                return true;
            }
            if std::str::from_utf8(&self.pending[..width]).is_err() {
                return false;
            }
            self.len = 0;
        }
        match std::str::from_utf8(data) {
            Ok(_) => true,
            Err(e) if e.error_len().is_none() => {
                let rest = &data[e.valid_up_to()..];
                self.pending[..rest.len()].copy_from_slice(rest);
                self.len = rest.len();
                true
            }
            Err(_) => false,
        }
    }

    /// Whether the stream ended on a whole character.
    pub(super) fn finish(&self) -> bool {
        self.len == 0
    }
}

/// Bytes of the UTF-8 character that starts with `lead`.
fn utf8_width(lead: u8) -> usize {
    match lead {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 1,
    }
}
