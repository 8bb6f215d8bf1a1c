//! The saved sessions of one project: a directory of `<ID>.jsonl` files, and
//! `<ID>.<n>.jsonl` for the continuations that keep the ID (see the parent module).
//!
//! Names are never trusted to sort by time (UUIDs are random): listings read the start
//! time from each file's header line, and a continuation's number says which of an ID's
//! files is the newest without reading any.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{
    LATEST_SHOWN, Line, LoadedSession, SessionHeader, SessionWriter, TranscriptError, new_id, parse,
};

/// How long a header line may be when only its start time is wanted.
const HEADER_LIMIT: u64 = 64 * 1024;

/// Whether `id` is a plain session name (never a path).
pub fn valid_id(id: &str) -> bool {
    id.len() <= 100
        && id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Whether `id` is a UUID in its hyphenated form (what SDK clients accept).
pub fn is_uuid(id: &str) -> bool {
    id.len() == 36 && uuid::Uuid::try_parse(id).is_ok()
}

/// The session a file stem belongs to: `<uuid>.<n>` is a continuation of `<uuid>`.
fn session_of(stem: &str) -> &str {
    match stem.rsplit_once('.') {
        Some((base, n))
            if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && is_uuid(base) =>
        {
            base
        }
        _ => stem,
    }
}

/// The saved sessions of one project.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
}

impl SessionStore {
    /// Sessions kept in `dir`.
    pub fn new(dir: PathBuf) -> Self {
        SessionStore { dir }
    }

    /// The directory sessions are kept in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The IDs of the saved sessions, the most recently started (or continued) first.
    /// No directory: none.
    pub fn ids(&self) -> Result<Vec<String>, TranscriptError> {
        let io = |source| TranscriptError::Io {
            path: self.dir.clone(),
            source,
        };
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(e)),
        };
        let mut newest: std::collections::HashMap<String, String> = Default::default();
        for entry in entries {
            let entry = entry.map_err(io)?;
            let name = entry.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else {
                continue;
            };
            if !valid_id(stem) {
                continue;
            }
            let started = started_of(&entry.path()).unwrap_or_default();
            let slot = newest.entry(session_of(stem).to_string()).or_default();
            if started > *slot {
                *slot = started;
            }
        }
        let mut ids: Vec<(String, String)> = newest.into_iter().collect();
        // RFC 3339 UTC with milliseconds sorts as text; the ID breaks ties.
        ids.sort_unstable_by(|(a, at), (b, bt)| bt.cmp(at).then_with(|| b.cmp(a)));
        Ok(ids.into_iter().map(|(id, _)| id).collect())
    }

    /// The session `id` (its newest file); an ID that is not a plain name is refused
    /// before any file is touched.
    pub fn load(&self, id: &str) -> Result<LoadedSession, TranscriptError> {
        if !valid_id(id) {
            return Err(TranscriptError::InvalidId(id.to_string()));
        }
        let path = self.newest_file(id);
        match std::fs::read(&path) {
            Ok(bytes) => parse(&path, &bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut latest = self.ids()?;
                latest.truncate(LATEST_SHOWN);
                Err(TranscriptError::UnknownId {
                    id: id.to_string(),
                    dir: self.dir.clone(),
                    latest,
                })
            }
            Err(source) => Err(TranscriptError::Io { path, source }),
        }
    }

    /// The most recent session.
    pub fn latest(&self) -> Result<LoadedSession, TranscriptError> {
        match self.ids()?.first() {
            Some(id) => self.load(id),
            None => Err(TranscriptError::NoSessions {
                dir: self.dir.clone(),
            }),
        }
    }

    /// The first line of the first prompt of session `id`, for listings; `None` when the
    /// file cannot be read.
    pub fn first_prompt(&self, id: &str) -> Option<String> {
        let path = self.newest_file(id);
        let bytes = std::fs::read(&path).ok()?;
        parse(&path, &bytes).ok()?.first_prompt
    }

    /// Starts a session file (directory 0700, file 0600) with `header` as its first
    /// line: `<ID>.jsonl`, or for a continuation that keeps its parent's ID
    /// ([`SessionHeader::continuing`]) the next `<ID>.<n>.jsonl`.
    pub fn create(&self, header: SessionHeader) -> Result<SessionWriter, TranscriptError> {
        if header.parent.as_deref() == Some(header.id.as_str()) {
            return self.create_continuation(header);
        }
        self.create_file(header, true)
    }

    /// [`SessionStore::create`] under the ID the header names (`--session-id`): an
    /// invalid ID or one already saved is an error, never silently another ID.
    pub fn create_named(&self, header: SessionHeader) -> Result<SessionWriter, TranscriptError> {
        if !valid_id(&header.id) {
            return Err(TranscriptError::InvalidId(header.id));
        }
        self.create_file(header, false)
    }

    fn create_file(
        &self,
        mut header: SessionHeader,
        rename: bool,
    ) -> Result<SessionWriter, TranscriptError> {
        create_private_dir(&self.dir)?;
        let mut attempt = 0;
        loop {
            let path = self.path_of(&header.id);
            match open_new_private(&path) {
                Ok(file) => return start(header, path, file),
                Err(e)
                    if rename && e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 8 =>
                {
                    attempt += 1;
                    header.id = new_id();
                }
                Err(source) => return Err(TranscriptError::Io { path, source }),
            }
        }
    }

    /// The next free `<ID>.<n>.jsonl`; two runs continuing at once each get their own.
    fn create_continuation(&self, header: SessionHeader) -> Result<SessionWriter, TranscriptError> {
        if !valid_id(&header.id) {
            return Err(TranscriptError::InvalidId(header.id));
        }
        create_private_dir(&self.dir)?;
        let mut n = self.last_continuation(&header.id) + 1;
        loop {
            let path = self.continuation_path(&header.id, n);
            match open_new_private(&path) {
                Ok(file) => return start(header, path, file),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
                Err(source) => return Err(TranscriptError::Io { path, source }),
            }
        }
    }

    /// The number of `id`'s newest continuation file (0: none). Files are numbered in
    /// order, so the first gap ends the search.
    fn last_continuation(&self, id: &str) -> u64 {
        if !is_uuid(id) {
            return 0;
        }
        let mut n = 0;
        while self.continuation_path(id, n + 1).exists() {
            n += 1;
        }
        n
    }

    fn newest_file(&self, id: &str) -> PathBuf {
        match self.last_continuation(id) {
            0 => self.path_of(id),
            n => self.continuation_path(id, n),
        }
    }

    fn path_of(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    fn continuation_path(&self, id: &str, n: u64) -> PathBuf {
        self.dir.join(format!("{id}.{n}.jsonl"))
    }
}

/// A writer for the new file at `path`, its header written.
fn start(
    header: SessionHeader,
    path: PathBuf,
    file: std::fs::File,
) -> Result<SessionWriter, TranscriptError> {
    let writer = SessionWriter {
        id: header.id.clone(),
        path,
        file: Mutex::new(file),
        answers: std::sync::atomic::AtomicUsize::new(0),
        answers_at_start: std::sync::atomic::AtomicUsize::new(usize::MAX),
    };
    writer.write_line(&Line::Session(header))?;
    Ok(writer)
}

/// The `started` of a session file's header; `None` when it cannot be read.
fn started_of(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    let mut line = Vec::new();
    BufReader::new(file.take(HEADER_LIMIT))
        .read_until(b'\n', &mut line)
        .ok()?;
    let value: serde_json::Value = serde_json::from_slice(line.trim_ascii()).ok()?;
    value.get("started")?.as_str().map(str::to_string)
}

fn create_private_dir(dir: &Path) -> Result<(), TranscriptError> {
    toolbelt_config::store_files::create_dir_all(dir).map_err(|source| TranscriptError::Io {
        path: dir.to_path_buf(),
        source,
    })
}

fn open_new_private(path: &Path) -> std::io::Result<std::fs::File> {
    toolbelt_config::store_files::open_options()
        .write(true)
        .create_new(true)
        .open(path)
}
