//! The objects of the store: file contents, chunks of large files and trees, each in a
//! file named by its hash (`objects/abcdef…`), so a content stored once serves every
//! checkpoint that holds it.
//!
//! The folder is flat. Stores made before stop 58 kept each object in a two-character
//! folder (`objects/ab/cdef…`), as git does; on this project's file system each such
//! folder cost about 80 µs to make, which a fresh store paid for nearly every object (a
//! store's first dozen objects made a dozen folders: about 1 ms of a short session).
//! Objects of that layout are still found, read and swept; new ones go flat.
//!
//! An object file is `TB1`, a type byte and the payload: `r` raw bytes, `z` bytes
//! compressed with zstd (level 3, kept only when smaller), `c` a chunk list, `t` a
//! tree's text. A file over [`CHUNKED_OVER`] is cut into content-defined chunks
//! (FastCDC, 16/64/256 KiB): an edit in the middle of a large file changes one or two
//! chunks, so 100 edits of a 1 MiB file store about 100 chunks, not 100 MiB. Its object
//! is then the list of its chunks (`c`).
//!
//! New objects are not files of their own any more: each process appends the objects it
//! writes to one pack (`crate::pack`), a file per process instead of an inode, temporary
//! name and rename per object. Loose object files (the layout above) are still read, and
//! the sweep writes the live objects of a pack it removes back as loose files, each
//! written whole to a temporary name and renamed into place. A process killed at any
//! moment leaves each object absent or complete; the background syncer makes them
//! durable ([`crate::syncer`]). Every read checks the content against its name, so a
//! damaged file or entry is an error, never wrong bytes handed on; a decompression is
//! bounded.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::hash::ContentHash;
use crate::pack;

/// Whether `path` is a regular file (not followed if a link).
fn is_file(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// Files larger than this are stored as chunks.
pub(crate) const CHUNKED_OVER: usize = 256 * 1024;
const CHUNK_MIN: u32 = 16 * 1024;
const CHUNK_AVG: u32 = 64 * 1024;
const CHUNK_MAX: u32 = 256 * 1024;
/// The largest decoded piece (a small file or one chunk).
const MAX_PIECE: usize = CHUNKED_OVER;
/// The largest file the store gives back whole.
pub(crate) const MAX_CONTENT: u64 = 1 << 30;
const MAGIC: &[u8; 3] = b"TB1";
const CHUNKS_HEADER: &str = "toolbelt-chunks 1\n";

/// Why the store could not give something back.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file of the store could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// An object is not there (removed by hand, or never made durable before a crash).
    #[error("object {0} is missing from the store")]
    Missing(String),
    /// A file of the store is damaged: its content does not match its name, or it
    /// does not parse.
    #[error("{path}: damaged: {why}")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

impl StoreError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        StoreError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    fn damaged(path: &Path, why: impl Into<String>) -> Self {
        StoreError::Damaged {
            path: path.to_path_buf(),
            why: why.into(),
        }
    }
}

/// The object folder of one store.
pub(crate) struct Objects {
    dir: PathBuf,
    /// Objects known to be in place (written or read by this process), so a checkpoint
    /// does not look for them again.
    known: Mutex<HashSet<ContentHash>>,
    /// Whether this process made (or found) the folder, so a write does not ask again.
    made: AtomicBool,
    /// This process's pack and the packs' entries it knows.
    packs: Mutex<Packs>,
    /// A compression context kept between pieces: making one cost more than compressing
    /// a small file. A thread that finds it busy makes its own for the piece.
    compressor: Mutex<Option<zstd::bulk::Compressor<'static>>>,
}

#[derive(Default)]
struct Packs {
    writer: Option<pack::Writer>,
    index: pack::Index,
}

fn lock_packs(m: &Mutex<Packs>) -> std::sync::MutexGuard<'_, Packs> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An object as read: its type byte, payload, and the file it came from.
type Raw = (u8, Vec<u8>, PathBuf);

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl Objects {
    pub(crate) fn new(dir: PathBuf) -> Self {
        Objects {
            dir,
            known: Mutex::new(HashSet::new()),
            made: AtomicBool::new(false),
            packs: Mutex::new(Packs::default()),
            compressor: Mutex::new(None),
        }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the object named `hash` is written.
    pub(crate) fn path(&self, hash: &ContentHash) -> PathBuf {
        self.dir.join(hash.to_hex())
    }

    /// Where a store made before stop 58 kept it (see the module documentation).
    fn fanned_out(&self, hash: &ContentHash) -> PathBuf {
        let hex = hash.to_hex();
        self.dir.join(&hex[..2]).join(&hex[2..])
    }

    /// The object's file where it is, for messages: the older place when only that
    /// holds it.
    pub(crate) fn location(&self, hash: &ContentHash) -> PathBuf {
        if let Some(e) = lock_packs(&self.packs).index.get(hash) {
            return e.pack.to_path_buf();
        }
        let flat = self.path(hash);
        let older = self.fanned_out(hash);
        if !is_file(&flat) && is_file(&older) {
            older
        } else {
            flat
        }
    }

    fn is_known(&self, hash: &ContentHash) -> bool {
        self.known.lock().map(|k| k.contains(hash)).unwrap_or(false)
    }

    fn mark_known(&self, hash: ContentHash) {
        if let Ok(mut k) = self.known.lock() {
            k.insert(hash);
        }
    }

    /// Forgets what this process knew (after a sweep removed objects).
    pub(crate) fn forget_known(&self) {
        if let Ok(mut k) = self.known.lock() {
            k.clear();
        }
        let mut packs = lock_packs(&self.packs);
        let own = packs.writer.as_ref().map(|w| w.path().to_path_buf());
        packs.index.forget_others(own.as_deref());
    }

    /// This process's pack, if it has written one.
    pub(crate) fn own_pack(&self) -> Option<PathBuf> {
        lock_packs(&self.packs)
            .writer
            .as_ref()
            .map(|w| w.path().to_path_buf())
    }

    /// Whether the object is in place.
    pub(crate) fn has(&self, hash: &ContentHash) -> bool {
        if self.is_known(hash) {
            return true;
        }
        // Packs are not read for this: an object in another process's pack that this one
        // has not read is written again (a duplicate, never a loss).
        let there = lock_packs(&self.packs).index.get(hash).is_some()
            || is_file(&self.path(hash))
            || is_file(&self.fanned_out(hash));
        if there {
            self.mark_known(*hash);
        }
        there
    }

    /// Writes one object unless it is there: appended to this process's pack, whose path
    /// goes to `written` (once per object written).
    fn put(
        &self,
        hash: &ContentHash,
        kind: u8,
        payload: &[u8],
        written: &mut Vec<PathBuf>,
    ) -> Result<(), StoreError> {
        if self.has(hash) {
            return Ok(());
        }
        if !self.made.load(Ordering::Relaxed) {
            self.make_folder()?;
        }
        let mut packs = lock_packs(&self.packs);
        if let Some(gone) = packs.writer.as_ref().filter(|w| w.is_gone()) {
            // Removed by hand with what it held: a new pack, and what this process knew
            // to be in the store is looked for again.
            let gone = gone.path().to_path_buf();
            packs.writer = None;
            packs.index.forget_pack(&gone);
            if let Ok(mut k) = self.known.lock() {
                k.clear();
            }
        }
        if packs.writer.is_none() {
            let writer = match pack::Writer::create(&self.dir) {
                // The folder went since this process made it (removed by hand).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.make_folder()?;
                    pack::Writer::create(&self.dir)
                }
                other => other,
            }
            .map_err(|e| StoreError::io(&self.dir, e))?;
            packs.writer = Some(writer);
        }
        let Some(writer) = packs.writer.as_mut() else {
            return Err(StoreError::Missing(hash.to_hex()));
        };
        let path = writer.path().to_path_buf();
        match writer.append(hash, kind, payload) {
            Ok(entry) => packs.index.insert(*hash, entry),
            Err(e) => {
                // The next object starts another pack.
                packs.writer = None;
                return Err(StoreError::io(&path, e));
            }
        }
        drop(packs);
        written.push(path);
        self.mark_known(*hash);
        Ok(())
    }

    /// Writes one object as a file of its own unless one is there (the sweep, for the
    /// live objects of a pack it removes); the new file's path goes to `written`.
    pub(crate) fn put_loose(
        &self,
        hash: &ContentHash,
        kind: u8,
        payload: &[u8],
        written: &mut Vec<PathBuf>,
    ) -> Result<(), StoreError> {
        let path = self.path(hash);
        if is_file(&path) || is_file(&self.fanned_out(hash)) {
            return Ok(());
        }
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = self.dir.join(format!(".tmp-{}-{n}", std::process::id()));
        let result = (|| {
            let mut file = toolbelt_config::store_files::create(&temp)?;
            file.write_all(MAGIC)?;
            file.write_all(&[kind])?;
            file.write_all(payload)?;
            drop(file);
            std::fs::rename(&temp, &path)
        })();
        if let Err(e) = result {
            let _ = std::fs::remove_file(&temp);
            return Err(StoreError::io(&path, e));
        }
        written.push(path);
        Ok(())
    }

    /// Makes the folder (and the store's above it) if it is not there.
    fn make_folder(&self) -> Result<(), StoreError> {
        toolbelt_config::store_files::create_dir_all(&self.dir)
            .map_err(|e| StoreError::io(&self.dir, e))?;
        self.made.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Stores one piece (a small file or a chunk), compressed when that is smaller.
    fn put_piece(
        &self,
        hash: &ContentHash,
        bytes: &[u8],
        written: &mut Vec<PathBuf>,
    ) -> Result<(), StoreError> {
        if self.has(hash) {
            return Ok(());
        }
        match self.compress(bytes) {
            Ok(z) if z.len() < bytes.len() => self.put(hash, b'z', &z, written),
            _ => self.put(hash, b'r', bytes, written),
        }
    }

    /// `bytes` compressed with zstd at level 3.
    fn compress(&self, bytes: &[u8]) -> std::io::Result<Vec<u8>> {
        let Ok(mut kept) = self.compressor.try_lock() else {
            return zstd::bulk::compress(bytes, 3);
        };
        if kept.is_none() {
            *kept = Some(zstd::bulk::Compressor::new(3)?);
        }
        match kept.as_mut() {
            Some(c) => c.compress(bytes),
            None => zstd::bulk::compress(bytes, 3),
        }
    }

    /// Stores a file's content (chunked when large); returns its hash.
    pub(crate) fn put_content(
        &self,
        content: &[u8],
        written: &mut Vec<PathBuf>,
    ) -> Result<ContentHash, StoreError> {
        let hash = ContentHash::of(content);
        self.put_content_as(hash, content, written)?;
        Ok(hash)
    }

    /// Stores content whose hash is already known.
    pub(crate) fn put_content_as(
        &self,
        hash: ContentHash,
        content: &[u8],
        written: &mut Vec<PathBuf>,
    ) -> Result<(), StoreError> {
        if self.has(&hash) {
            return Ok(());
        }
        if content.len() <= CHUNKED_OVER {
            return self.put_piece(&hash, content, written);
        }
        let mut list = format!("{CHUNKS_HEADER}{}\n", content.len());
        for chunk in fastcdc::v2020::FastCDC::new(content, CHUNK_MIN, CHUNK_AVG, CHUNK_MAX) {
            let bytes = &content[chunk.offset..chunk.offset + chunk.length];
            let piece = ContentHash::of(bytes);
            self.put_piece(&piece, bytes, written)?;
            list.push_str(&format!("{} {}\n", piece.to_hex(), chunk.length));
        }
        self.put(&hash, b'c', list.as_bytes(), written)
    }

    /// Stores a tree's text; returns its hash.
    pub(crate) fn put_tree(
        &self,
        text: &[u8],
        written: &mut Vec<PathBuf>,
    ) -> Result<ContentHash, StoreError> {
        let hash = ContentHash::of_tree(text);
        self.put(&hash, b't', text, written)?;
        Ok(hash)
    }

    /// An object's type byte and payload.
    fn read_raw(&self, hash: &ContentHash) -> Result<Raw, StoreError> {
        if let Some(found) = self.read_packed(hash, false) {
            return found;
        }
        match self.read_loose(hash) {
            Err(StoreError::Missing(_)) => {}
            other => return other,
        }
        // Packs written or grown since this process last read them.
        self.read_packed(hash, true)
            .unwrap_or_else(|| Err(StoreError::Missing(hash.to_hex())))
    }

    /// The object from a pack this process knows of (after reading what is new in the
    /// packs, with `refresh`); `None` when no pack holds it.
    fn read_packed(&self, hash: &ContentHash, refresh: bool) -> Option<Result<Raw, StoreError>> {
        let mut packs = lock_packs(&self.packs);
        if refresh {
            packs.index.refresh(&self.dir);
        }
        let entry = packs.index.get(hash)?.clone();
        drop(packs);
        let path = entry.pack.to_path_buf();
        match entry.read() {
            Ok(payload) => Some(Ok((entry.kind, payload, path))),
            // Swept since: its live objects are loose now.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                lock_packs(&self.packs).index.forget_pack(&path);
                None
            }
            Err(e) => Some(Err(StoreError::io(&path, e))),
        }
    }

    /// The object from its own file.
    fn read_loose(&self, hash: &ContentHash) -> Result<Raw, StoreError> {
        let mut path = self.path(hash);
        let mut read = std::fs::read(&path);
        if matches!(&read, Err(e) if e.kind() == std::io::ErrorKind::NotFound) {
            path = self.fanned_out(hash);
            read = std::fs::read(&path);
        }
        let bytes = match read {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::Missing(hash.to_hex()));
            }
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        let Some(rest) = bytes.strip_prefix(MAGIC.as_slice()) else {
            return Err(StoreError::damaged(&path, "not an object of this store"));
        };
        let Some((&kind, payload)) = rest.split_first() else {
            return Err(StoreError::damaged(&path, "no type"));
        };
        Ok((kind, payload.to_vec(), path))
    }

    /// A small file or a chunk, checked against its hash.
    fn read_piece(&self, hash: &ContentHash) -> Result<Vec<u8>, StoreError> {
        let (kind, payload, path) = self.read_raw(hash)?;
        let bytes = match kind {
            b'r' => payload,
            b'z' => zstd::bulk::decompress(&payload, MAX_PIECE)
                .map_err(|e| StoreError::damaged(&path, format!("does not decompress: {e}")))?,
            _ => return Err(StoreError::damaged(&path, "not a piece of content")),
        };
        if ContentHash::of(&bytes) != *hash {
            return Err(StoreError::damaged(
                &path,
                "content does not match its name",
            ));
        }
        Ok(bytes)
    }

    /// A file's content, checked against its hash.
    pub(crate) fn read_content(&self, hash: &ContentHash) -> Result<Vec<u8>, StoreError> {
        let (kind, payload, path) = self.read_raw(hash)?;
        if kind != b'c' {
            return self.read_piece(hash);
        }
        let (total, pieces) =
            parse_chunks(&payload).map_err(|why| StoreError::damaged(&path, why))?;
        let mut out = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
        for (piece, len) in pieces {
            let bytes = self.read_piece(&piece)?;
            if bytes.len() as u64 != len {
                return Err(StoreError::damaged(&path, "a chunk has the wrong length"));
            }
            out.extend_from_slice(&bytes);
        }
        if ContentHash::of(&out) != *hash {
            return Err(StoreError::damaged(
                &path,
                "content does not match its name",
            ));
        }
        Ok(out)
    }

    /// The hashes of the chunks a content is made of (itself when it is one piece).
    pub(crate) fn pieces_of(&self, hash: &ContentHash) -> Result<Vec<ContentHash>, StoreError> {
        let (kind, payload, path) = self.read_raw(hash)?;
        if kind != b'c' {
            return Ok(Vec::new());
        }
        let (_, pieces) = parse_chunks(&payload).map_err(|why| StoreError::damaged(&path, why))?;
        Ok(pieces.into_iter().map(|(h, _)| h).collect())
    }

    /// A tree's text, checked against its hash.
    pub(crate) fn read_tree(&self, hash: &ContentHash) -> Result<Vec<u8>, StoreError> {
        let (kind, payload, path) = self.read_raw(hash)?;
        if kind != b't' {
            return Err(StoreError::damaged(&path, "not a tree"));
        }
        if ContentHash::of_tree(&payload) != *hash {
            return Err(StoreError::damaged(&path, "tree does not match its name"));
        }
        self.mark_known(*hash);
        Ok(payload)
    }
}

/// A chunk list: the total size, and each chunk's hash and length.
pub(crate) fn parse_chunks(payload: &[u8]) -> Result<(u64, Vec<(ContentHash, u64)>), String> {
    let text = std::str::from_utf8(payload).map_err(|_| "a chunk list is not text")?;
    let body = text.strip_prefix(CHUNKS_HEADER).ok_or("not a chunk list")?;
    let mut lines = body.lines();
    let total: u64 = lines
        .next()
        .and_then(|l| l.parse().ok())
        .ok_or("a chunk list without its size")?;
    if total > MAX_CONTENT {
        return Err("a chunk list over the largest size".into());
    }
    let mut sum = 0u64;
    let mut pieces = Vec::new();
    for line in lines {
        let (hex, len) = line.split_once(' ').ok_or("a bad chunk line")?;
        let hash = ContentHash::from_hex(hex).ok_or("a bad chunk hash")?;
        let len: u64 = len.parse().map_err(|_| "a bad chunk length")?;
        if len == 0 || len > MAX_PIECE as u64 {
            return Err("a chunk length out of range".into());
        }
        sum = sum.saturating_add(len);
        if sum > total {
            return Err("the chunks are longer than the file".into());
        }
        pieces.push((hash, len));
    }
    if sum != total {
        return Err("the chunks do not add up to the file".into());
    }
    Ok((total, pieces))
}

#[cfg(test)]
mod tests;
