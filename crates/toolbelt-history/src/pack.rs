//! Packs: the objects one process writes, appended to one file of its own
//! (`objects/pack-<time>-<pid>-<n>.tbp`) instead of a file each (issue 49).
//!
//! A file per object cost a new inode, a temporary name and a rename each, and on this
//! project's file system a new inode was the largest single cost of a short session's
//! checkpoints (the allocator's search past recently freed inodes, the journal): a
//! seven-call session made thirteen object files. A pack is one inode per process.
//!
//! The file is `TBP1`, then entries one after another: the object's 32-byte hash, its
//! type byte (as a loose object's: `r`, `z`, `c`, `t`), the payload's length (4 bytes,
//! little-endian) and the payload. Entries are written whole with one positioned write
//! at the end of what is known to be whole; a failed write is cut off (or the pack is
//! given up and the next object starts another). Nothing in an entry is trusted on
//! reading: a reader stops at the first entry that does not parse or runs past the end
//! (a process killed mid-write, or another process still writing), and every object read
//! is checked against its hash by `objects.rs`, as a loose one is.
//!
//! The writing process holds an exclusive lock on its pack for its life, so the sweep
//! (`retention.rs`) leaves a pack in use alone; the lock goes with the process.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::hash::ContentHash;

const MAGIC: &[u8; 4] = b"TBP1";
/// Hash, type byte, length.
const HEADER: usize = 32 + 1 + 4;
/// The object types a pack may hold.
const KINDS: &[u8] = b"rzct";

static PACK_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Whether a name in the objects folder is a pack's.
pub(crate) fn is_pack_name(name: &str) -> bool {
    name.starts_with("pack-") && name.ends_with(".tbp")
}

/// Where an object is in a pack.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) pack: Arc<PathBuf>,
    /// Of the payload.
    pub(crate) offset: u64,
    pub(crate) len: u32,
    pub(crate) kind: u8,
}

impl Entry {
    /// The payload, read again from the pack.
    pub(crate) fn read(&self) -> io::Result<Vec<u8>> {
        let file = File::open(self.pack.as_path())?;
        let mut payload = vec![0; self.len as usize];
        file.read_exact_at(&mut payload, self.offset)?;
        Ok(payload)
    }
}

/// This process's pack, open for appending.
pub(crate) struct Writer {
    path: Arc<PathBuf>,
    file: File,
    /// The end of the last whole entry.
    end: u64,
}

impl Writer {
    /// A new pack in `dir` (which must exist), locked for this process's life.
    pub(crate) fn create(dir: &Path) -> io::Result<Writer> {
        let millis = crate::history::now_ms();
        loop {
            let n = PACK_COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!("pack-{millis}-{}-{n}.tbp", std::process::id()));
            let file = match toolbelt_config::store_files::open_options()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
            {
                // Another process of the same PID (another PID namespace) and millisecond.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                other => other?,
            };
            // Nobody else has it yet; the lock only tells the sweep it is in use.
            let _ = file.try_lock();
            file.write_all_at(MAGIC, 0)?;
            return Ok(Writer {
                path: Arc::new(path),
                file,
                end: MAGIC.len() as u64,
            });
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the pack was removed since it was made (by hand: the sweep leaves a
    /// locked pack alone): what is appended then would be lost with it.
    pub(crate) fn is_gone(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        self.file.metadata().map_or(true, |m| m.nlink() == 0)
    }

    /// Appends one object; where it is.
    pub(crate) fn append(
        &mut self,
        hash: &ContentHash,
        kind: u8,
        payload: &[u8],
    ) -> io::Result<Entry> {
        let len = u32::try_from(payload.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "an object over 4 GiB"))?;
        let mut entry = Vec::with_capacity(HEADER + payload.len());
        entry.extend_from_slice(hash.bytes());
        entry.push(kind);
        entry.extend_from_slice(&len.to_le_bytes());
        entry.extend_from_slice(payload);
        if let Err(e) = self.file.write_all_at(&entry, self.end) {
            // What was written of it would hide every later entry from readers.
            let _ = self.file.set_len(self.end);
            return Err(e);
        }
        let offset = self.end + HEADER as u64;
        self.end += entry.len() as u64;
        Ok(Entry {
            pack: Arc::clone(&self.path),
            offset,
            len,
            kind,
        })
    }
}

/// Each entry of the pack at `path` from byte `from` (0: the start) up to the first that
/// is not whole; returns where that is, to go on from when the pack has grown.
pub(crate) fn scan(
    path: &Path,
    from: u64,
    mut each: impl FnMut(ContentHash, Entry),
) -> io::Result<u64> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let shared = Arc::new(path.to_path_buf());
    let mut at = from;
    if at == 0 {
        let mut magic = [0u8; 4];
        if reader.read_exact(&mut magic).is_err() || &magic != MAGIC {
            return Ok(0);
        }
        at = MAGIC.len() as u64;
    } else {
        reader.seek(io::SeekFrom::Start(at))?;
    }
    loop {
        if at + HEADER as u64 > size {
            return Ok(at);
        }
        let mut header = [0u8; HEADER];
        if reader.read_exact(&mut header).is_err() {
            return Ok(at);
        }
        let (hash, rest) = header.split_at(32);
        let kind = rest[0];
        let len = u32::from_le_bytes([rest[1], rest[2], rest[3], rest[4]]);
        let offset = at + HEADER as u64;
        if !KINDS.contains(&kind) || offset + u64::from(len) > size {
            return Ok(at);
        }
        let Ok(hash) = <[u8; 32]>::try_from(hash) else {
            return Ok(at);
        };
        each(
            ContentHash::from_bytes(hash),
            Entry {
                pack: Arc::clone(&shared),
                offset,
                len,
                kind,
            },
        );
        skip(&mut reader, u64::from(len))?;
        at = offset + u64::from(len);
    }
}

/// Skips `n` bytes, within the buffer when they are there.
fn skip(reader: &mut BufReader<File>, n: u64) -> io::Result<()> {
    let buffered = reader.buffer().len() as u64;
    if n <= buffered {
        reader.consume(n as usize);
        Ok(())
    } else {
        reader.seek_relative(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

/// The entries of the packs this process has read or written.
#[derive(Default)]
pub(crate) struct Index {
    entries: HashMap<ContentHash, Entry>,
    /// Each pack read, and how far.
    scanned: HashMap<PathBuf, u64>,
}

impl Index {
    pub(crate) fn get(&self, hash: &ContentHash) -> Option<&Entry> {
        self.entries.get(hash)
    }

    pub(crate) fn insert(&mut self, hash: ContentHash, entry: Entry) {
        self.entries.insert(hash, entry);
    }

    /// Reads what is new in the packs of `dir`: packs not read yet, and what was
    /// appended to the others since.
    pub(crate) fn refresh(&mut self, dir: &Path) {
        let Ok(read) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in read.filter_map(Result::ok) {
            if !entry.file_name().to_str().is_some_and(is_pack_name) {
                continue;
            }
            let path = entry.path();
            let from = self.scanned.get(&path).copied().unwrap_or(0);
            let entries = &mut self.entries;
            if let Ok(to) = scan(&path, from, |hash, e| {
                entries.entry(hash).or_insert(e);
            }) {
                self.scanned.insert(path, to);
            }
        }
    }

    /// Forgets a pack that is gone (swept), so its objects are looked for again.
    pub(crate) fn forget_pack(&mut self, pack: &Path) {
        self.entries.retain(|_, e| e.pack.as_path() != pack);
        self.scanned.remove(pack);
    }

    /// Forgets every pack read (after a sweep); `keep` (this process's own) stays.
    pub(crate) fn forget_others(&mut self, keep: Option<&Path>) {
        self.entries
            .retain(|_, e| keep.is_some_and(|k| e.pack.as_path() == k));
        self.scanned.retain(|p, _| keep.is_some_and(|k| p == k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn entries_come_back_and_a_torn_tail_is_left_for_later() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = Writer::create(dir.path()).unwrap();
        let a = ContentHash::of(b"a");
        let b = ContentHash::of(b"b");
        w.append(&a, b'r', b"first").unwrap();
        w.append(&b, b't', b"second payload").unwrap();
        let mut found = Vec::new();
        let end = scan(w.path(), 0, |h, e| found.push((h, e.read().unwrap()))).unwrap();
        assert_eq!(
            found,
            vec![(a, b"first".to_vec()), (b, b"second payload".to_vec())]
        );
        // Half an entry (a writer killed mid-write): it and nothing after it is read...
        let full = std::fs::read(w.path()).unwrap();
        let mut torn = full.clone();
        torn.extend_from_slice(&ContentHash::of(b"c").bytes()[..20]);
        std::fs::write(w.path(), &torn).unwrap();
        let mut again = 0;
        assert_eq!(scan(w.path(), 0, |_, _| again += 1).unwrap(), end);
        assert_eq!(again, 2);
        // ...and a scan from where the last one ended finds what came after.
        std::fs::write(w.path(), &full).unwrap();
        let mut w2 = Writer {
            path: Arc::new(w.path().to_path_buf()),
            file: std::fs::OpenOptions::new()
                .write(true)
                .open(w.path())
                .unwrap(),
            end,
        };
        let c = ContentHash::of(b"c");
        w2.append(&c, b'z', b"third").unwrap();
        let mut later = Vec::new();
        scan(w.path(), end, |h, _| later.push(h)).unwrap();
        assert_eq!(later, vec![c]);
    }

    proptest! {
        /// Random bytes after the magic never panic, and nothing found lies past the end.
        #[test]
        fn packs_of_random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("pack-1-1-1.tbp");
            let mut content = MAGIC.to_vec();
            content.extend_from_slice(&bytes);
            std::fs::write(&path, &content).unwrap();
            let mut ok = true;
            scan(&path, 0, |_, e| ok &= e.offset + u64::from(e.len) <= content.len() as u64).unwrap();
            prop_assert!(ok);
            let mut index = Index::default();
            index.refresh(dir.path());
        }
    }
}
