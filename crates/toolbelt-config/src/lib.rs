#![cfg_attr(test, allow(clippy::too_many_lines))]
//! What toolbelt reads from the person's and the project's files, and how it writes its
//! own: the settings files and their layers ([`settings`]), folder trust ([`trust`]),
//! when-clauses ([`when`]), the front matter of skills and agent definitions
//! ([`front_matter`]), files of a project opened without following links
//! ([`project_file`]), masking of secrets in what is shown ([`redact`]) and the atomic
//! writes of toolbelt's own stored files ([`store_files`]).
//!
//! It sits below the tool contract (`toolbelt-core`) and the engine (`toolbelt-engine`):
//! it knows neither tools nor rules, only the plain data both read, such as the
//! [`ApprovalMode`] and the form of a rule's text ([`split_rule`]).
//!
//! The settings types of the tools (`tools.shell`, `tools.webFetch`, `lsp`, `mcpServers`,
//! ...) live here too, in [`settings`], rather than beside each tool: a settings file is
//! checked whole when it is read (an unknown key, a wrong type and a key an untrusted
//! folder may not set are reported at start, with the file and the key), which needs
//! every type below the loader; a tool reads its part typed through
//! `ExecContext::settings`.

#![warn(missing_docs, unreachable_pub)]

mod approval;
pub mod front_matter;
pub mod project_file;
pub mod redact;
mod rule_text;
pub mod settings;
pub mod store_files;
pub mod trust;
pub mod when;

pub use approval::ApprovalMode;
pub use rule_text::{MAX_RULE_BYTES, is_well_formed_rule, split_rule};
