#![cfg_attr(test, allow(clippy::too_many_lines))]
//! What runs tools: the [`registry`] of every tool a session holds, the permission
//! [`rules`], the [`scheduler`] that takes a model's function calls to their responses
//! (validation, hooks, rules, approval, checkpoints, execution, output policy), the
//! seams the scheduler calls through ([`hooks`], [`checkpoint`]) and the [`lint`] of a
//! tool's declaration.
//!
//! It builds on the tool contract (`toolbelt-core`) and the files toolbelt reads
//! (`toolbelt-config`); front ends reach it through `toolbelt-session`, which builds
//! every scheduler a session runs.

#![warn(missing_docs, unreachable_pub)]

pub mod checkpoint;
pub mod hooks;
pub mod lint;
pub mod registry;
pub mod rules;
pub mod scheduler;
