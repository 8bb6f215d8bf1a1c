#![cfg_attr(test, allow(clippy::too_many_lines))]
//! The tool contract of toolbelt: what a tool is, what one call of it is, and what comes
//! back.
//!
//! # Brief overview
//!
//! A [`Tool`] is a *declaration*: a name, a description, a kind and a JSON Schema, and
//! the facts the engine reads of it ([`ToolFacts`]: rule names, path operation, whether
//! it changes files, its MCP annotations). Given the JSON arguments of one call it
//! *builds* an [`Invocation`], a validated call that can describe itself, ask for
//! confirmation ([`ConfirmationDetails`]) and execute with a cancellation token in an
//! [`ExecContext`]. It answers with a [`ToolResult`] (model content, display content) or
//! a [`ToolError`] of an [`ErrorKind`]. [`SchemaValidator`] checks arguments against the
//! schema (leniently, the way models are sloppy) before a tool sees them;
//! [`WorkspaceRoots`] resolves every path a tool touches and applies the session's
//! [`PathPolicy`]; [`OutputPolicy`] is the single place that decides how much text goes
//! back to the model.
//!
//! What this crate does not hold: the registry, permission rules and the scheduler are
//! `toolbelt-engine`'s; settings, trust and when-clauses are `toolbelt-config`'s (below
//! this crate: a tool reads the session's [`toolbelt_config::settings::Settings`]).
//! Nothing here knows a wire format (OpenAI, MCP): those live in the crates that speak
//! them.
//!
//! The modules are private: each item has one path, at this crate's root.

#![warn(missing_docs, unreachable_pub)]

mod ask_user;
mod confirm;
mod editor;
mod embedder_error;
mod output;
mod paths;
mod protected;
mod result;
mod server_asks;
mod tool;
mod validate;
mod workspace;

pub use ask_user::{Answer, AskUser, Question, QuestionOption, QuestionSlot};
pub use confirm::{ConfirmationDetails, ConfirmationOutcome};
pub use editor::{EditorBuffers, EditorSlot};
pub use embedder_error::EmbedderError;
pub use output::{
    DEFAULT_MAX_CHARS, DEFAULT_MAX_LINES, LimitedText, OutputPolicy, default_spill_dir,
    safe_file_stem,
};
pub use paths::{PathOperation, PathPolicy, PathRules, Relocation};
pub use protected::{PROTECTED_NAMES, ProtectedPaths, Protection};
pub use result::{
    Display, ErrorKind, FileDiff, Part, TodoItem, TodoStatus, ToolError, ToolResult, for_person,
};
pub use server_asks::{
    Choice, ElicitationAnswer, ElicitationMode, ElicitationRequest, FieldKind, Form, FormError,
    FormField, SAMPLING_MAX_TOKENS, SampledMessage, SampledReply, SamplingRequest, ServerAskSlot,
    ServerAsker, ServerSampler,
};
pub use tool::{
    AskOnce, AskOnceSlot, BoxFuture, Consent, ExecContext, Invocation, Kind, OutputSink,
    PermissionSubject, ShellCommand, Tool, ToolEnvironment, ToolFacts, TurnGrant, WorkDirSlot,
};
pub use validate::{
    MAX_QUOTED_CHARS, MAX_SAFE_INTEGER, SchemaValidator, describe_type, parse_arguments,
};
pub use workspace::{
    PathError, RootList, WorkspaceRoots, normalize_lexically, resolve_best_effort,
};
