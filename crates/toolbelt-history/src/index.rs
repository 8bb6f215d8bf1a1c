//! The checkpoints' picture of one workspace root: a tree of directories in memory,
//! each with its entries' stat and content hash, like git's index. A scan updates it
//! (only what changed is read again); writing it stores the directories whose entries
//! changed and reuses the hash of every other one, so a checkpoint after one edit
//! writes the file and the trees on its path, nothing else.

use std::collections::BTreeMap;

use crate::hash::ContentHash;
use crate::objects::{Objects, StoreError};
use crate::tree::{self, EntryKind, Leaf, TreeEntry};

/// A node: a file, link or left-out file, or a directory.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    Leaf(Leaf),
    Dir(DirNode),
}

/// A directory: its entries by name, its mode, its tree's hash while nothing in it
/// changed since it was written (`None` after a change), and its stat when its entries
/// were listed (`None`: unknown, list it again).
#[derive(Debug, Clone, Default)]
pub(crate) struct DirNode {
    pub(crate) children: BTreeMap<Vec<u8>, Node>,
    pub(crate) mode: u32,
    pub(crate) hash: Option<ContentHash>,
    pub(crate) stat: Option<DirStat>,
}

/// What says a directory holds the same names under the same rules as when it was
/// listed (git's "untracked cache"): its times and inode (creating, removing or
/// renaming an entry changes them) and a stamp of its rule files (`.gitignore` and the
/// like, whose edits do not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DirStat {
    pub(crate) mtime_ns: i64,
    pub(crate) ctime_ns: i64,
    pub(crate) ino: u64,
    pub(crate) rules: [u8; 16],
}

/// The components of a relative path (`a/b/c`); the empty path has none.
pub(crate) fn components(rel: &[u8]) -> impl Iterator<Item = &[u8]> {
    rel.split(|&b| b == b'/').filter(|c| !c.is_empty())
}

/// `dir/name` (or `name` at the top).
pub(crate) fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    if dir.is_empty() {
        name.to_vec()
    } else {
        let mut p = dir.to_vec();
        p.push(b'/');
        p.extend_from_slice(name);
        p
    }
}

impl DirNode {
    pub(crate) fn new(mode: u32) -> Self {
        DirNode {
            children: BTreeMap::new(),
            mode,
            hash: None,
            stat: None,
        }
    }

    /// The node at `rel` (the empty path is this directory, which is not a node).
    pub(crate) fn get(&self, rel: &[u8]) -> Option<&Node> {
        let mut parts = components(rel).peekable();
        let mut dir = self;
        while let Some(part) = parts.next() {
            let node = dir.children.get(part)?;
            if parts.peek().is_none() {
                return Some(node);
            }
            match node {
                Node::Dir(d) => dir = d,
                Node::Leaf(_) => return None,
            }
        }
        None
    }

    /// The directory at `rel` (this one for the empty path).
    pub(crate) fn dir(&self, rel: &[u8]) -> Option<&DirNode> {
        if components(rel).next().is_none() {
            return Some(self);
        }
        match self.get(rel)? {
            Node::Dir(d) => Some(d),
            Node::Leaf(_) => None,
        }
    }

    /// The directory at `rel`, to change: every directory on the way is marked changed.
    pub(crate) fn dir_mut(&mut self, rel: &[u8]) -> Option<&mut DirNode> {
        let mut dir = self;
        dir.hash = None;
        for part in components(rel) {
            match dir.children.get_mut(part)? {
                Node::Dir(d) => {
                    d.hash = None;
                    dir = d;
                }
                Node::Leaf(_) => return None,
            }
        }
        Some(dir)
    }

    /// Records the stat of the directory at `rel` when it was listed; its hash stays
    /// (the stat is not part of the tree).
    pub(crate) fn set_stat(&mut self, rel: &[u8], stat: Option<DirStat>) {
        let mut dir = self;
        for part in components(rel) {
            match dir.children.get_mut(part) {
                Some(Node::Dir(d)) => dir = d,
                _ => return,
            }
        }
        dir.stat = stat;
    }

    /// Puts `node` at `rel`; its parent directory must be there. Returns whether it was.
    pub(crate) fn set(&mut self, rel: &[u8], node: Node) -> bool {
        let (parent, name) = split_last(rel);
        match self.dir_mut(parent) {
            Some(dir) if !name.is_empty() => {
                dir.children.insert(name.to_vec(), node);
                true
            }
            _ => false,
        }
    }

    /// Removes the node at `rel`, if any.
    pub(crate) fn remove(&mut self, rel: &[u8]) -> Option<Node> {
        let (parent, name) = split_last(rel);
        if self.dir(parent)?.children.contains_key(name) {
            self.dir_mut(parent)?.children.remove(name)
        } else {
            None
        }
    }

    /// How many files, links and left-out files are below.
    #[cfg(test)]
    pub(crate) fn file_count(&self) -> usize {
        self.children
            .values()
            .map(|n| match n {
                Node::Leaf(_) => 1,
                Node::Dir(d) => d.file_count(),
            })
            .sum()
    }

    /// Stores every changed directory below and this one; returns this one's hash.
    pub(crate) fn write(
        &mut self,
        objects: &Objects,
        written: &mut Vec<std::path::PathBuf>,
    ) -> Result<ContentHash, StoreError> {
        if let Some(hash) = self.hash {
            return Ok(hash);
        }
        let mut entries = Vec::with_capacity(self.children.len());
        for (name, node) in &mut self.children {
            let leaf = match node {
                Node::Leaf(leaf) => *leaf,
                Node::Dir(d) => Leaf {
                    kind: EntryKind::Dir,
                    mode: d.mode,
                    size: 0,
                    mtime_ns: 0,
                    ctime_ns: 0,
                    ino: 0,
                    hash: d.write(objects, written)?,
                },
            };
            entries.push(TreeEntry {
                name: name.clone(),
                leaf,
            });
        }
        let hash = objects.put_tree(&tree::encode(&entries), written)?;
        self.hash = Some(hash);
        Ok(hash)
    }

    /// Takes `old`'s stored hash for every directory below that holds what `old` held
    /// there (a walk builds the tree afresh), so writing it re-encodes only the
    /// directories on a changed path. Returns whether this whole directory is the same.
    pub(crate) fn reuse_hashes(&mut self, old: &DirNode) -> bool {
        let mut same = self.mode == old.mode && self.children.len() == old.children.len();
        for (name, node) in &mut self.children {
            // Every directory is visited, also once this one is known to differ.
            let child_same = match (node, old.children.get(name)) {
                (Node::Leaf(a), Some(Node::Leaf(b))) => a == b,
                (Node::Dir(a), Some(Node::Dir(b))) => a.reuse_hashes(b),
                _ => false,
            };
            same &= child_same;
        }
        if same && self.hash.is_none() {
            self.hash = old.hash;
        }
        same
    }

    /// The directory stored as `hash`, whole.
    pub(crate) fn load(
        objects: &Objects,
        hash: &ContentHash,
        mode: u32,
    ) -> Result<Self, StoreError> {
        let text = objects.read_tree(hash)?;
        let entries = tree::parse(&text).map_err(|e| StoreError::Damaged {
            path: objects.location(hash),
            why: e.to_string(),
        })?;
        let mut dir = DirNode::new(mode);
        for e in entries {
            let node = match e.leaf.kind {
                EntryKind::Dir => Node::Dir(DirNode::load(objects, &e.leaf.hash, e.leaf.mode)?),
                _ => Node::Leaf(e.leaf),
            };
            dir.children.insert(e.name, node);
        }
        dir.hash = Some(*hash);
        Ok(dir)
    }

    /// Every leaf below, with its path relative to this directory, in path order;
    /// directories too (as `Dir` leaves with their mode), before what they hold.
    pub(crate) fn flatten(&self, prefix: &[u8], out: &mut BTreeMap<Vec<u8>, Leaf>) {
        for (name, node) in &self.children {
            let path = join(prefix, name);
            match node {
                Node::Leaf(leaf) => {
                    out.insert(path, *leaf);
                }
                Node::Dir(d) => {
                    out.insert(
                        path.clone(),
                        Leaf {
                            kind: EntryKind::Dir,
                            mode: d.mode,
                            size: 0,
                            mtime_ns: 0,
                            ctime_ns: 0,
                            ino: 0,
                            hash: d.hash.unwrap_or_default(),
                        },
                    );
                    d.flatten(&path, out);
                }
            }
        }
    }
}

/// `(parent, name)` of a relative path.
pub(crate) fn split_last(rel: &[u8]) -> (&[u8], &[u8]) {
    match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&[], rel),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(content: &[u8]) -> Node {
        Node::Leaf(Leaf {
            kind: EntryKind::File,
            mode: 0o644,
            size: content.len() as u64,
            mtime_ns: 1,
            ctime_ns: 1,
            ino: 1,
            hash: ContentHash::of(content),
        })
    }

    #[test]
    fn a_change_rewrites_only_the_trees_on_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let objects = Objects::new(dir.path().join("objects"));
        let mut root = DirNode::new(0o755);
        for d in ["a", "a/b", "c"] {
            assert!(root.set(d.as_bytes(), Node::Dir(DirNode::new(0o755))));
        }
        root.set(b"a/b/x", leaf(b"x"));
        root.set(b"c/y", leaf(b"y"));
        let mut written = Vec::new();
        let first = root.write(&objects, &mut written).unwrap();
        assert_eq!(written.len(), 4);
        root.set(b"a/b/x", leaf(b"x2"));
        let mut written = Vec::new();
        let second = root.write(&objects, &mut written).unwrap();
        assert_ne!(first, second);
        assert_eq!(written.len(), 3, "a/b, a and the root; c is reused");
        let loaded = DirNode::load(&objects, &second, 0o755).unwrap();
        assert_eq!(loaded.file_count(), 2);
        assert!(
            matches!(loaded.get(b"a/b/x"), Some(Node::Leaf(l)) if l.hash == ContentHash::of(b"x2"))
        );
        // A walk builds the tree afresh: the unchanged directories take the stored hashes.
        let mut again = DirNode::load(&objects, &second, 0o755).unwrap();
        let old = again.clone();
        again.hash = None;
        again.set(b"a/b/x", leaf(b"x3"));
        assert!(!again.reuse_hashes(&old));
        assert_eq!(again.dir(b"c").unwrap().hash, old.dir(b"c").unwrap().hash);
        assert!(again.dir(b"c").unwrap().hash.is_some());
        assert!(again.dir(b"a/b").unwrap().hash.is_none() && again.hash.is_none());
        assert!(root.remove(b"c").is_some());
        assert!(root.get(b"c/y").is_none());
        assert!(!root.set(b"nope/z", leaf(b"z")));
    }
}
