//! The text of one directory in the store (a *tree*), and its parser.
//!
//! ```text
//! toolbelt-tree 1
//! <kind> <mode> <size> <mtime_ns> <ctime_ns> <inode> <hash> <name>
//! ```
//!
//! One line per entry, sorted by name (bytes), names unique. `kind` is `f` (a regular
//! file, `hash` names its content), `l` (a symbolic link, `hash` names its target's
//! bytes), `d` (a directory, `hash` names its tree; size, times and inode are 0) or `o`
//! (a file left out because it was over the size cap: its stat is kept so it is not
//! looked at again, its hash is zeros). `mode` is octal permission bits (at most
//! `7777`). The name comes last so it may hold spaces; `%`, control bytes and bytes
//! over 0x7e are written `%XX`.
//!
//! The parser is the store's front door for damaged or hostile files: everything is
//! checked (fields, order, names that could leave the directory: empty, `.`, `..`, a
//! `/` or a NUL), an error names the line, and nothing panics
//! (`tree/property_tests.rs`).

use crate::hash::ContentHash;

const HEADER: &str = "toolbelt-tree 1\n";
/// Most entries one tree may hold (a directory of a million files is not a workspace
/// a checkpoint is for).
pub(crate) const MAX_ENTRIES: usize = 1_000_000;

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A symbolic link (its target is the content).
    Link,
    /// A directory.
    Dir,
    /// A regular file over the size cap: recorded, not stored.
    Omitted,
}

impl EntryKind {
    fn letter(self) -> char {
        match self {
            EntryKind::File => 'f',
            EntryKind::Link => 'l',
            EntryKind::Dir => 'd',
            EntryKind::Omitted => 'o',
        }
    }

    fn from_letter(s: &str) -> Option<Self> {
        match s {
            "f" => Some(EntryKind::File),
            "l" => Some(EntryKind::Link),
            "d" => Some(EntryKind::Dir),
            "o" => Some(EntryKind::Omitted),
            _ => None,
        }
    }
}

/// What a tree records of one entry, besides its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leaf {
    /// What it is.
    pub kind: EntryKind,
    /// Permission bits (`0o7777` at most).
    pub mode: u32,
    /// Size in bytes (0 for a directory).
    pub size: u64,
    /// Modification time, nanoseconds since the epoch (0 for a directory).
    pub mtime_ns: i64,
    /// Status change time, nanoseconds since the epoch (0 for a directory).
    pub ctime_ns: i64,
    /// Inode number (0 for a directory).
    pub ino: u64,
    /// The content's (or the subtree's) hash; zeros when left out.
    pub hash: ContentHash,
}

impl Leaf {
    /// Whether two entries hold the same thing (kind, mode, content), whatever their
    /// stat says; for left-out files, whose content is unknown, the size and time.
    pub fn same_content(&self, other: &Leaf) -> bool {
        let same = self.kind == other.kind && self.mode == other.mode && self.hash == other.hash;
        if self.kind == EntryKind::Omitted {
            same && self.size == other.size && self.mtime_ns == other.mtime_ns
        } else {
            same
        }
    }
}

/// One line of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TreeEntry {
    /// The entry's name in its directory (bytes, never empty, `.`, `..`, nor with `/`).
    pub name: Vec<u8>,
    /// What the entry holds.
    pub leaf: Leaf,
}

/// Why a stored file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: line {line}: {message}")]
pub struct FormatError {
    /// What was being read ("tree", "chunk list").
    pub what: &'static str,
    /// The line, from 1 (0: the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

fn bad(line: usize, message: impl Into<String>) -> FormatError {
    FormatError {
        what: "tree",
        line,
        message: message.into(),
    }
}

/// The text of a tree; `entries` must be sorted by name with no repeats (the index
/// keeps them so).
pub(crate) fn encode(entries: &[TreeEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER.len() + entries.len() * 120);
    out.extend_from_slice(HEADER.as_bytes());
    for e in entries {
        let l = &e.leaf;
        out.extend_from_slice(
            format!(
                "{} {:o} {} {} {} {} {} ",
                l.kind.letter(),
                l.mode,
                l.size,
                l.mtime_ns,
                l.ctime_ns,
                l.ino,
                l.hash.to_hex()
            )
            .as_bytes(),
        );
        escape_into(&e.name, &mut out);
        out.push(b'\n');
    }
    out
}

/// Parses a tree's text: the entries in order, or what is wrong.
pub(crate) fn parse(bytes: &[u8]) -> Result<Vec<TreeEntry>, FormatError> {
    let body = bytes
        .strip_prefix(HEADER.as_bytes())
        .ok_or_else(|| bad(1, "not a tree (the header `toolbelt-tree 1` is missing)"))?;
    if body.is_empty() {
        return Ok(Vec::new());
    }
    let body = body
        .strip_suffix(b"\n")
        .ok_or_else(|| bad(0, "the last line is cut short"))?;
    let mut entries: Vec<TreeEntry> = Vec::new();
    for (i, line) in body.split(|&b| b == b'\n').enumerate() {
        let number = i + 2;
        if line.is_empty() {
            return Err(bad(number, "empty line"));
        }
        if entries.len() == MAX_ENTRIES {
            return Err(bad(number, format!("more than {MAX_ENTRIES} entries")));
        }
        let entry = parse_line(line).map_err(|m| bad(number, m))?;
        if let Some(last) = entries.last()
            && last.name >= entry.name
        {
            return Err(bad(number, "names are not in order or repeat"));
        }
        entries.push(entry);
    }
    Ok(entries)
}

fn parse_line(line: &[u8]) -> Result<TreeEntry, String> {
    let mut fields = line.splitn(8, |&b| b == b' ');
    let mut next = |what: &str| -> Result<&str, String> {
        let field = fields.next().ok_or(format!("no {what}"))?;
        std::str::from_utf8(field).map_err(|_| format!("the {what} is not text"))
    };
    let kind = EntryKind::from_letter(next("kind")?).ok_or("unknown kind")?;
    let mode = u32::from_str_radix(next("mode")?, 8).map_err(|_| "bad mode")?;
    if mode > 0o7777 {
        return Err("mode out of range".into());
    }
    let size: u64 = next("size")?.parse().map_err(|_| "bad size")?;
    let mtime_ns: i64 = next("mtime")?.parse().map_err(|_| "bad mtime")?;
    let ctime_ns: i64 = next("ctime")?.parse().map_err(|_| "bad ctime")?;
    let ino: u64 = next("inode")?.parse().map_err(|_| "bad inode")?;
    let hash = ContentHash::from_hex(next("hash")?).ok_or("bad hash")?;
    let raw_name = fields.next().ok_or("no name")?;
    let name = unescape(raw_name)?;
    check_name(&name)?;
    Ok(TreeEntry {
        name,
        leaf: Leaf {
            kind,
            mode,
            size,
            mtime_ns,
            ctime_ns,
            ino,
            hash,
        },
    })
}

/// Whether `name` is one entry of a directory: not empty, `.` or `..`, no `/` or NUL.
pub(crate) fn check_name(name: &[u8]) -> Result<(), String> {
    if name.is_empty() || name == b"." || name == b".." {
        return Err("a name may not be empty, `.` or `..`".into());
    }
    if name.iter().any(|&b| b == b'/' || b == 0) {
        return Err("a name may not hold `/` or NUL".into());
    }
    Ok(())
}

fn escape_into(name: &[u8], out: &mut Vec<u8>) {
    for &b in name {
        if b == b'%' || !(0x20..=0x7e).contains(&b) {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        } else {
            out.push(b);
        }
    }
}

fn unescape(raw: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'%' {
            let hex = raw.get(i + 1..i + 3).ok_or("a `%` escape is cut short")?;
            let text = std::str::from_utf8(hex).map_err(|_| "bad `%` escape")?;
            out.push(u8::from_str_radix(text, 16).map_err(|_| "bad `%` escape")?);
            i += 3;
        } else if !(0x20..=0x7e).contains(&b) {
            return Err("an unescaped control or non-ASCII byte in a name".into());
        } else {
            out.push(b);
            i += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod property_tests;
