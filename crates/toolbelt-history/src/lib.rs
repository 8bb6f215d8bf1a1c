#![cfg_attr(test, allow(clippy::too_many_lines))]
#![warn(missing_docs, unreachable_pub)]
//! File checkpoints of toolbelt sessions (issue 34): undo for what the model's calls
//! changed, shell commands included.
//!
//! # Brief overview
//!
//! Before every call that may change files (every kind that is not read-only, and
//! `save_memory`), and again after it, the session's [`History`] records the
//! workspace: the scheduler calls it through core's
//! [`Checkpoints`](toolbelt_engine::checkpoint::Checkpoints). What is recorded goes to a
//! content-addressed [`Store`] under the toolbelt home (`history/<project>/`, never the
//! project's own `.git`): each file's content once, named by its BLAKE3 hash
//! (`objects.rs`; large files in content-defined chunks, zstd-compressed; appended to
//! one pack file per process, `pack.rs`), each
//! directory as a tree of names, modes and hashes (`tree.rs`, its parser the front door
//! for damaged files), and a small [`Record`] per checkpoint naming the call, turn and
//! session (`record.rs`). Unchanged files and directories are shared by every
//! checkpoint that holds them, so a checkpoint costs what changed.
//!
//! Knowing what changed is the fast part: an in-memory index of each root (`index.rs`,
//! like git's) updated from inotify events (`watch.rs`), or by a walk with the tools'
//! ignore rules when inotify cannot say (`scan.rs`). A new process (a one-shot `tools
//! call`) reads that index from the project's index file (`index_file.rs`) and, without
//! inotify, lists again only the directories whose stat or rule files changed
//! (`revisit.rs`, git's untracked cache). The files are written atomically (temporary
//! name, rename) and made durable off the call path (`syncer.rs`).
//!
//! A restore ([`History::plan`], [`History::apply`]) compares a checkpoint with the
//! workspace now, names what changed outside toolbelt since (kept unless forced),
//! checkpoints the workspace first (so it can be undone), and writes each file
//! atomically without following links (`restore.rs`, `apply.rs`). [`render`] has the
//! texts every front end shows; `retention.rs` removes what is older than
//! `general.cleanupPeriodDays`.

mod apply;
mod error;
mod hash;
mod history;
mod index;
mod index_file;
mod objects;
mod pack;
mod record;
pub mod render;
mod restore;
mod retention;
mod revisit;
mod roots;
mod scan;
mod store;
mod syncer;
mod tree;
mod watch;

pub use error::HistoryError;
pub use hash::ContentHash;
pub use history::{History, HistoryConfig, TurnMark};
pub use objects::StoreError;
pub use record::{LeftOut, Phase, Record, RootTree};
pub use restore::{Applied, Change, RestorePlan};
pub use retention::SweepReport;
pub use store::{FindError, Store};
pub use tree::{EntryKind, FormatError, Leaf};
