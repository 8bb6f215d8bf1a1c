//! Checkpoint records: one small JSON file per checkpoint in `checkpoints/`, naming
//! the call, turn and session it precedes (or follows), when, and the tree of each
//! workspace root.
//!
//! A file is named `<time ms, 13 digits>-<id>-<b|a>.json`, so a listing sorts by name
//! without reading the files: `b` is the checkpoint *before* a call (what `/restore`
//! lists), `a` the state the call left (what a restore compares with to find files
//! changed outside toolbelt). A record is written whole to a temporary name and renamed
//! in after every object it names is in place, so a record that exists is complete.
//! Reading one checks everything in it; a damaged record is an error that names the
//! file, and the listing skips it with that error.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::hash::ContentHash;
use crate::objects::StoreError;

/// The largest record read (they are a few hundred bytes).
const MAX_RECORD_BYTES: u64 = 1 << 20;

/// Before the call, or after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Taken before the call ran: a restore point.
    Before,
    /// What the call left.
    After,
}

impl Phase {
    fn letter(self) -> char {
        match self {
            Phase::Before => 'b',
            Phase::After => 'a',
        }
    }
}

/// One root's tree in a record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RootTree {
    /// The root, absolute.
    pub path: PathBuf,
    /// Its tree, as 64 hex digits.
    pub tree: String,
}

/// What a checkpoint did not store, so a restore can say it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LeftOut {
    /// Files over the size cap (the first 50, relative to their root).
    pub oversized: Vec<String>,
    /// How many files were over the size cap.
    pub oversized_count: usize,
    /// The cap, in bytes.
    pub size_cap: u64,
    /// Paths the permission rules keep from reading.
    pub withheld: usize,
    /// Files that could not be read (the first 50, with why).
    pub unreadable: Vec<String>,
}

/// One checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The format (1).
    pub version: u32,
    /// The checkpoint's ID: 10 hex digits (shared by the `after` record of its call).
    pub id: String,
    /// Before or after the call.
    pub phase: Phase,
    /// When, in milliseconds since the epoch.
    pub time_ms: u64,
    /// The session (its saved conversation's ID).
    pub session: String,
    /// The call's ID, as the model gave it (`restore` for a restore's own checkpoint).
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The user turn, from 1, in the session's process (0: none, as in `toolbelt restore`).
    pub turn: u32,
    /// The turn's ID: the stream-JSON client's message `uuid`, else one made up.
    #[serde(default)]
    pub turn_id: Option<String>,
    /// The start of the turn's prompt.
    #[serde(default)]
    pub prompt: String,
    /// Each workspace root and its tree.
    pub roots: Vec<RootTree>,
    /// What was not stored.
    #[serde(default)]
    pub left_out: LeftOut,
}

impl Record {
    /// The file name this record is kept under.
    pub(crate) fn file_name(&self) -> String {
        format!(
            "{:013}-{}-{}.json",
            self.time_ms,
            self.id,
            self.phase.letter()
        )
    }

    /// Each root and its tree hash (checked when read).
    pub(crate) fn trees(&self) -> Vec<(PathBuf, ContentHash)> {
        self.roots
            .iter()
            .filter_map(|r| Some((r.path.clone(), ContentHash::from_hex(&r.tree)?)))
            .collect()
    }

    /// Everything a record must be to be used.
    fn check(&self) -> Result<(), String> {
        if self.version != 1 {
            return Err(format!("version {} is not known", self.version));
        }
        if !valid_id(&self.id) {
            return Err("a bad ID".into());
        }
        if self.roots.is_empty() {
            return Err("no roots".into());
        }
        for root in &self.roots {
            if !root.path.is_absolute() {
                return Err("a root that is not absolute".into());
            }
            if ContentHash::from_hex(&root.tree).is_none() {
                return Err("a bad tree hash".into());
            }
        }
        Ok(())
    }
}

/// Whether `id` is a checkpoint ID: 10 lowercase hex digits.
pub(crate) fn valid_id(id: &str) -> bool {
    id.len() == 10
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A fresh checkpoint ID.
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..10].to_string()
}

/// What a record's file name says: time, ID, phase.
pub(crate) fn parse_file_name(name: &str) -> Option<(u64, String, Phase)> {
    let stem = name.strip_suffix(".json")?;
    let mut parts = stem.splitn(3, '-');
    let time: u64 = parts.next().filter(|t| t.len() == 13)?.parse().ok()?;
    let id = parts.next().filter(|id| valid_id(id))?.to_string();
    let phase = match parts.next()? {
        "b" => Phase::Before,
        "a" => Phase::After,
        _ => return None,
    };
    Some((time, id, phase))
}

/// Parses and checks a record's bytes.
pub(crate) fn parse(bytes: &[u8]) -> Result<Record, String> {
    let record: Record =
        serde_json::from_slice(bytes).map_err(|e| format!("not a checkpoint record: {e}"))?;
    record.check()?;
    Ok(record)
}

/// Reads one record file.
pub(crate) fn read(path: &Path) -> Result<Record, StoreError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| StoreError::io(path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_RECORD_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| StoreError::io(path, e))?;
    parse(&bytes).map_err(|why| StoreError::Damaged {
        path: path.to_path_buf(),
        why,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn sample() -> Record {
        Record {
            version: 1,
            id: new_id(),
            phase: Phase::Before,
            time_ms: 1_700_000_000_000,
            session: "s".into(),
            call_id: "call_1".into(),
            tool: "edit".into(),
            turn: 1,
            turn_id: None,
            prompt: "fix it".into(),
            roots: vec![RootTree {
                path: "/ws".into(),
                tree: ContentHash::of(b"t").to_hex(),
            }],
            left_out: LeftOut::default(),
        }
    }

    #[test]
    fn a_record_round_trips_and_its_name_parses() {
        let r = sample();
        let bytes = serde_json::to_vec(&r).unwrap();
        assert_eq!(parse(&bytes).unwrap(), r);
        let (time, id, phase) = parse_file_name(&r.file_name()).unwrap();
        assert_eq!(
            (time, id.as_str(), phase),
            (r.time_ms, r.id.as_str(), r.phase)
        );
        assert!(parse_file_name("123-abc-b.json").is_none());
    }

    /// Records written in the same millisecond still come newest first in the order they
    /// were written, after what the store already held: the newest record is what a
    /// restore compares the workspace with (a tie picked either, and a restore then kept
    /// a file as "changed outside toolbelt").
    #[test]
    fn records_of_one_millisecond_keep_the_order_they_were_written_in() {
        let dir = tempfile::tempdir().unwrap();
        let earlier = crate::store::Store::open(dir.path().to_path_buf());
        let mut old = sample();
        old.time_ms = 5_000;
        earlier.write_record(&old).unwrap();
        let store = crate::store::Store::open(dir.path().to_path_buf());
        let mut written = Vec::new();
        for _ in 0..20 {
            let mut r = sample();
            r.phase = Phase::After;
            r.time_ms = store.record_time(1_000);
            store.write_record(&r).unwrap();
            written.push(r.id);
        }
        let newest_first: Vec<String> = store.record_files().into_iter().map(|f| f.id).collect();
        written.reverse();
        written.push(old.id);
        assert_eq!(newest_first, written);
    }

    #[test]
    fn a_record_with_a_relative_root_or_bad_hash_is_refused() {
        let mut r = sample();
        r.roots[0].path = "ws".into();
        assert!(parse(&serde_json::to_vec(&r).unwrap()).is_err());
        let mut r = sample();
        r.roots[0].tree = "zz".into();
        assert!(parse(&serde_json::to_vec(&r).unwrap()).is_err());
    }

    proptest! {
        #[test]
        fn random_records_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn damaged_records_never_panic(flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6)) {
            let mut bytes = serde_json::to_vec(&sample()).unwrap();
            for (at, b) in flips {
                let i = at % bytes.len();
                bytes[i] = b;
            }
            let _ = parse(&bytes);
        }
    }
}
