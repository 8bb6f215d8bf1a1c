//! The project's index file (`<store>/index`): the in-memory index of the last
//! checkpoint's roots, every file's stat and content hash and every directory's stat,
//! written at each checkpoint that changed a tree, so a new process (a one-shot `tools
//! call`) reads one file instead of a tree object per directory, and can then skip
//! listing the directories that did not change (`revisit.rs`).
//!
//! ```text
//! "toolbelt-index\n" u32:version
//! u32:roots, each: bytes:path [32]:tree hash u8+[16]:rules stamp u8+i64:since dir
//! u32:recent, each: u32:root bytes:path        (files to read again: racily clean)
//! u64:withheld u32:unreadable, each: bytes:line
//! [32]:BLAKE3 of everything before
//! dir  = u32:mode u8+[32]:hash u8+(i64:mtime i64:ctime u64:inode [16]:rules) u32:n, n × entry
//! entry = bytes:name, then `d` dir, or kind(`f` `l` `o`) u32:mode u64:size i64:mtime
//!         i64:ctime u64:inode [32]:hash
//! ```
//!
//! Little-endian; `bytes` is a u32 length and the bytes. It is a cache: one that is
//! missing, damaged (the checksum, any field, a name that could leave its directory),
//! of another version, or that does not name the very tree hashes of the last
//! checkpoint of the same roots is not used, and the index is seeded from that
//! checkpoint's trees as before. It lives in toolbelt's store, never in the workspace,
//! and is written by rename without `fsync` (a lost one costs only the slower seed).

use std::collections::HashSet;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::hash::ContentHash;
use crate::history::{Shared, State};
use crate::index::{DirNode, DirStat, Node, join};
use crate::record::{self, Record};
use crate::scan::RACY_NS;
use crate::tree::{EntryKind, Leaf};

/// The file's name in the store.
pub(crate) const FILE_NAME: &str = "index";
const MAGIC: &[u8] = b"toolbelt-index\n";
const VERSION: u32 = 1;
/// Deeper than any workspace: a damaged file cannot recurse without end.
const MAX_DEPTH: usize = 512;

/// One root as the index file holds it.
pub(crate) struct IndexRoot {
    pub(crate) path: PathBuf,
    pub(crate) tree_hash: ContentHash,
    /// The stamp of the rules outside the tree when it was walked (`revisit.rs`).
    pub(crate) rules: Option<[u8; 16]>,
    /// Since when its directories' stats hold (`revisit.rs`).
    pub(crate) since_ns: Option<i64>,
    pub(crate) tree: DirNode,
}

/// What the index file holds.
pub(crate) struct IndexFile {
    pub(crate) roots: Vec<IndexRoot>,
    /// Files to read again (by root number): read too close to a change.
    pub(crate) recent: Vec<(usize, Vec<u8>)>,
    pub(crate) withheld: usize,
    pub(crate) unreadable: Vec<String>,
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&u32::try_from(bytes.len()).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(bytes);
}

fn put_dir(out: &mut Vec<u8>, dir: &DirNode) {
    out.extend_from_slice(&dir.mode.to_le_bytes());
    match dir.hash {
        Some(h) => {
            out.push(1);
            out.extend_from_slice(h.bytes());
        }
        None => out.push(0),
    }
    match dir.stat {
        Some(s) => {
            out.push(1);
            out.extend_from_slice(&s.mtime_ns.to_le_bytes());
            out.extend_from_slice(&s.ctime_ns.to_le_bytes());
            out.extend_from_slice(&s.ino.to_le_bytes());
            out.extend_from_slice(&s.rules);
        }
        None => out.push(0),
    }
    out.extend_from_slice(
        &u32::try_from(dir.children.len())
            .unwrap_or(u32::MAX)
            .to_le_bytes(),
    );
    for (name, node) in &dir.children {
        put_bytes(out, name);
        match node {
            Node::Dir(d) => {
                out.push(b'd');
                put_dir(out, d);
            }
            Node::Leaf(l) => {
                out.push(match l.kind {
                    EntryKind::File => b'f',
                    EntryKind::Link => b'l',
                    EntryKind::Omitted | EntryKind::Dir => b'o',
                });
                out.extend_from_slice(&l.mode.to_le_bytes());
                out.extend_from_slice(&l.size.to_le_bytes());
                out.extend_from_slice(&l.mtime_ns.to_le_bytes());
                out.extend_from_slice(&l.ctime_ns.to_le_bytes());
                out.extend_from_slice(&l.ino.to_le_bytes());
                out.extend_from_slice(l.hash.bytes());
            }
        }
    }
}

/// One root to write: its path, tree hash, rules stamp, since and tree.
pub(crate) type RootToWrite<'a> = (
    &'a Path,
    ContentHash,
    Option<[u8; 16]>,
    Option<i64>,
    &'a DirNode,
);

/// The roots' index as the file's bytes.
pub(crate) fn encode(
    roots: &[RootToWrite<'_>],
    recent: &HashSet<(usize, Vec<u8>)>,
    withheld: usize,
    unreadable: &[String],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 << 20);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&u32::try_from(roots.len()).unwrap_or(u32::MAX).to_le_bytes());
    for (path, hash, rules, since, tree) in roots {
        put_bytes(&mut out, path.as_os_str().as_bytes());
        out.extend_from_slice(hash.bytes());
        match rules {
            Some(r) => {
                out.push(1);
                out.extend_from_slice(r);
            }
            None => out.push(0),
        }
        match since {
            Some(s) => {
                out.push(1);
                out.extend_from_slice(&s.to_le_bytes());
            }
            None => out.push(0),
        }
        put_dir(&mut out, tree);
    }
    out.extend_from_slice(
        &u32::try_from(recent.len())
            .unwrap_or(u32::MAX)
            .to_le_bytes(),
    );
    for (root, rel) in recent {
        out.extend_from_slice(&u32::try_from(*root).unwrap_or(u32::MAX).to_le_bytes());
        put_bytes(&mut out, rel);
    }
    out.extend_from_slice(&(withheld as u64).to_le_bytes());
    out.extend_from_slice(
        &u32::try_from(unreadable.len())
            .unwrap_or(u32::MAX)
            .to_le_bytes(),
    );
    for line in unreadable {
        put_bytes(&mut out, line.as_bytes());
    }
    let sum = *blake3::hash(&out).as_bytes();
    out.extend_from_slice(&sum);
    out
}

/// Reads the fields of a file, every read checked.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.bytes.len() {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.array()?))
    }

    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.array()?))
    }

    fn len(&mut self) -> Option<usize> {
        let n = usize::try_from(self.u32()?).ok()?;
        // Each element takes at least a byte: a count larger than the rest is damage.
        (n <= self.bytes.len()).then_some(n)
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.len()?;
        self.take(n)
    }

    fn flag(&mut self) -> Option<bool> {
        match self.u8()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    fn dir(&mut self, depth: usize) -> Option<DirNode> {
        if depth > MAX_DEPTH {
            return None;
        }
        let mut dir = DirNode::new(self.u32()?);
        if self.flag()? {
            dir.hash = Some(ContentHash::from_bytes(self.array()?));
        }
        if self.flag()? {
            dir.stat = Some(DirStat {
                mtime_ns: self.i64()?,
                ctime_ns: self.i64()?,
                ino: self.u64()?,
                rules: self.array()?,
            });
        }
        let n = self.len()?;
        let mut last: Option<&[u8]> = None;
        for _ in 0..n {
            let name = self.bytes()?;
            let bad = name.is_empty()
                || name == b"."
                || name == b".."
                || name.iter().any(|&b| b == b'/' || b == 0)
                || last.is_some_and(|l| l >= name);
            if bad {
                return None;
            }
            last = Some(name);
            let node = match self.u8()? {
                b'd' => Node::Dir(self.dir(depth + 1)?),
                letter => Node::Leaf(self.leaf(letter)?),
            };
            dir.children.insert(name.to_vec(), node);
        }
        Some(dir)
    }

    fn leaf(&mut self, letter: u8) -> Option<Leaf> {
        let kind = match letter {
            b'f' => EntryKind::File,
            b'l' => EntryKind::Link,
            b'o' => EntryKind::Omitted,
            _ => return None,
        };
        Some(Leaf {
            kind,
            mode: self.u32()? & 0o7777,
            size: self.u64()?,
            mtime_ns: self.i64()?,
            ctime_ns: self.i64()?,
            ino: self.u64()?,
            hash: ContentHash::from_bytes(self.array()?),
        })
    }
}

/// The index file's content; `None` for anything but a whole file of this version.
pub(crate) fn decode(bytes: &[u8]) -> Option<IndexFile> {
    let body_len = bytes.len().checked_sub(32)?;
    let (body, sum) = bytes.split_at(body_len);
    if blake3::hash(body).as_bytes() != sum {
        return None;
    }
    let mut r = Reader { bytes: body };
    if r.take(MAGIC.len())? != MAGIC || r.u32()? != VERSION {
        return None;
    }
    let mut roots = Vec::new();
    for _ in 0..r.len()? {
        let path = PathBuf::from(std::ffi::OsString::from_vec(r.bytes()?.to_vec()));
        let tree_hash = ContentHash::from_bytes(r.array()?);
        let rules = if r.flag()? { Some(r.array()?) } else { None };
        let since_ns = if r.flag()? { Some(r.i64()?) } else { None };
        let tree = r.dir(0)?;
        roots.push(IndexRoot {
            path,
            tree_hash,
            rules,
            since_ns,
            tree,
        });
    }
    let mut recent = Vec::new();
    for _ in 0..r.len()? {
        let root = usize::try_from(r.u32()?).ok()?;
        recent.push((root, r.bytes()?.to_vec()));
    }
    let withheld = usize::try_from(r.u64()?).ok()?;
    let mut unreadable = Vec::new();
    for _ in 0..r.len()? {
        unreadable.push(String::from_utf8_lossy(r.bytes()?).into_owned());
    }
    r.bytes.is_empty().then_some(IndexFile {
        roots,
        recent,
        withheld,
        unreadable,
    })
}

/// Reads the store's index file; `None` when it is missing or not usable.
pub(crate) fn read(store_dir: &Path) -> Option<IndexFile> {
    decode(&std::fs::read(store_dir.join(FILE_NAME)).ok()?)
}

/// Writes the store's index file by rename (no `fsync`: it is a cache).
pub(crate) fn write(store_dir: &Path, bytes: &[u8]) -> std::io::Result<()> {
    toolbelt_config::store_files::create_dir_all(store_dir)?;
    toolbelt_config::store_files::write_atomic(&store_dir.join(FILE_NAME), bytes)
}

#[cfg(test)]
mod tests;

/// The files below `dir` changed within [`RACY_NS`] of `since_ns`: their stat cannot
/// say they did not change again since, so they are read again.
fn racy_files(dir: &DirNode, prefix: &[u8], since_ns: i64, out: &mut Vec<Vec<u8>>) {
    for (name, node) in &dir.children {
        match node {
            Node::Leaf(l) if l.mtime_ns.saturating_add(RACY_NS) >= since_ns => {
                out.push(join(prefix, name));
            }
            Node::Leaf(_) => {}
            Node::Dir(d) => racy_files(d, &join(prefix, name), since_ns, out),
        }
    }
}

impl Shared {
    /// Starts the index from the project's last checkpoint of the same roots, so files
    /// that did not change are not read again.
    pub(crate) fn seed(&self, state: &mut State) {
        let paths: Vec<PathBuf> = state.roots.iter().map(|r| r.path.clone()).collect();
        let Some(last) = self.store.record_files().into_iter().find_map(|f| {
            let r = record::read(&f.path).ok()?;
            let same = r.roots.iter().map(|t| &t.path).eq(paths.iter());
            same.then_some(r)
        }) else {
            return;
        };
        if self.seed_from_index(state, &last) {
            return;
        }
        let seen_ns = i64::try_from(last.time_ms)
            .unwrap_or(i64::MAX)
            .saturating_mul(1_000_000);
        for (i, (root, (_, hash))) in state.roots.iter_mut().zip(last.trees()).enumerate() {
            let Ok(tree) = DirNode::load(&self.store.objects, &hash, 0o755) else {
                continue;
            };
            // Files modified near the time of that checkpoint may have changed since
            // without their times showing it: they are read again.
            let mut all = std::collections::BTreeMap::new();
            tree.flatten(b"", &mut all);
            for (rel, leaf) in all {
                if leaf.kind != EntryKind::Dir && leaf.mtime_ns.saturating_add(RACY_NS) >= seen_ns {
                    state.recent.insert((i, rel));
                }
            }
            root.tree = tree;
        }
    }

    /// Seeds the index from the project's index file when it names `last`'s trees (the
    /// last checkpoint of the same roots); false when it cannot be used.
    pub(crate) fn seed_from_index(&self, state: &mut State, last: &Record) -> bool {
        let Some(file) = read(self.store.dir()) else {
            return false;
        };
        let trees = last.trees();
        let matches = file.roots.len() == trees.len()
            && file.roots.len() == state.roots.len()
            && file
                .roots
                .iter()
                .zip(&trees)
                .zip(&state.roots)
                .all(|((f, (path, hash)), r)| {
                    &f.path == path && f.tree_hash == *hash && r.path == *path
                });
        if !matches {
            return false;
        }
        let record_ns = i64::try_from(last.time_ms)
            .unwrap_or(i64::MAX)
            .saturating_mul(1_000_000);
        for (i, (root, from)) in state.roots.iter_mut().zip(file.roots).enumerate() {
            let mut racy = Vec::new();
            racy_files(
                &from.tree,
                b"",
                from.since_ns.unwrap_or(record_ns),
                &mut racy,
            );
            state.recent.extend(racy.into_iter().map(|rel| (i, rel)));
            root.tree = from.tree;
            root.rules = from.rules;
            root.since_ns = from.since_ns;
        }
        let count = state.roots.len();
        state
            .recent
            .extend(file.recent.into_iter().filter(|(i, _)| *i < count));
        state.left_out.withheld = file.withheld;
        state.left_out.unreadable = file.unreadable;
        state.index_of = trees.into_iter().map(|(_, h)| h).collect();
        true
    }

    /// The index file's bytes for `hashes` (the roots' trees now), unless the file names
    /// these trees already.
    pub(crate) fn index_bytes(&self, state: &State, hashes: &[ContentHash]) -> Option<Vec<u8>> {
        if state.index_of == hashes {
            return None;
        }
        let roots: Vec<_> = state
            .roots
            .iter()
            .zip(hashes)
            .map(|(r, h)| (r.path.as_path(), *h, r.rules, r.since_ns, &r.tree))
            .collect();
        Some(encode(
            &roots,
            &state.recent,
            state.left_out.withheld,
            &state.left_out.unreadable,
        ))
    }

    /// Writes the index file of a process without a watcher, after the record naming
    /// `hashes`: now, since the process may end right after the call (about a millisecond
    /// for 15,000 files).
    pub(crate) fn save_index(&self, bytes: &[u8], hashes: &[ContentHash]) {
        match write(self.store.dir(), bytes) {
            Ok(()) => self.state_mut().index_of = hashes.to_vec(),
            Err(e) => tracing::debug!("the checkpoints' index file: {e}"),
        }
    }

    /// Writes the index file of a session with a watcher, from its syncer's thread once
    /// the store is quiet: for the last record written, while the trees are still those.
    pub(crate) fn write_due_index(&self) {
        let (bytes, hashes) = {
            let state = self.state_mut();
            let Some(due) = state.index_due.clone() else {
                return;
            };
            let now: Option<Vec<ContentHash>> = state.roots.iter().map(|r| r.tree.hash).collect();
            if now.as_ref() != Some(&due) {
                return;
            }
            match self.index_bytes(&state, &due) {
                Some(bytes) => (bytes, due),
                None => return,
            }
        };
        self.save_index(&bytes, &hashes);
    }
}
