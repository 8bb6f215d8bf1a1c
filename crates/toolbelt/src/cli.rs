//! Flags and subcommands, as data: one definition feeds parsing and `--help`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub const EXIT_OK: u8 = 0;
pub const EXIT_TOOL_ERROR: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_REFUSED: u8 = 3;
pub const EXIT_INTERRUPTED: u8 = 130;

const EXAMPLES: &str = "\
Examples:
  toolbelt tools list
  toolbelt tools list --json
  toolbelt tools call read_file '{\"absolute_path\": \"/abs/path/README.md\"}'
  echo '{\"absolute_path\": \"/abs/path/logo.png\"}' | toolbelt tools call read_file - --json
  toolbelt --include-directories ../lib tools call read_file '{\"absolute_path\": \"/abs/lib/x.rs\"}'

Exit codes of `tools call`:
  0    the tool succeeded
  1    the tool ran and reported an error
  2    usage or validation error (unknown tool, bad JSON, invalid arguments, bad settings)
  3    refused: the call needs confirmation and none was given (no terminal, no --yes),
       or the person answered no
  130  interrupted with Ctrl-C (the running tool is cancelled first)";

#[derive(Debug, Parser)]
#[command(name = "toolbelt", version, about = "A fast, safe tool runtime for LLM coding agents", after_help = EXAMPLES)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// More workspace directories besides the current one (comma-separated or repeated).
    #[arg(long = "include-directories", value_delimiter = ',', global = true)]
    pub include_directories: Vec<PathBuf>,
    #[command(flatten)]
    pub mcp: McpArgs,
}

/// Which MCP servers to connect, besides the settings' `mcpServers`.
#[derive(Debug, Clone, Default, Args)]
pub struct McpArgs {
    /// More MCP servers: a JSON file or inline JSON, `{"mcpServers": {...}}` or the
    /// server map itself. Replaces settings entries of the same name. Repeatable.
    #[arg(long = "mcp-config", value_name = "FILE|JSON", global = true)]
    pub mcp_config: Vec<String>,
    /// Connect only these MCP servers (comma-separated or repeated).
    #[arg(
        long = "allowed-mcp-server-names",
        value_delimiter = ',',
        value_name = "NAMES",
        global = true
    )]
    pub allowed_mcp_server_names: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List, inspect and run tools.
    Tools {
        #[command(subcommand)]
        command: ToolsCommand,
    },
    /// Inspect the configured MCP servers.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Connect every configured server and show its status (with the reason when it
    /// failed) and its tools.
    List {
        /// Print the servers as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List the tools a model would be offered.
    List {
        /// Print the function declarations (name, description, parameters) as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run one tool call through the whole flow: lookup, validation, confirmation,
    /// execution.
    #[command(after_help = EXAMPLES)]
    Call {
        /// Tool name (or an older alias such as `replace`).
        name: String,
        /// JSON object of arguments, or `-` to read it from standard input. Default `{}`.
        args: Option<String>,
        /// Approve the call without asking.
        #[arg(short = 'y', long)]
        yes: bool,
        /// Print the whole ToolResult as JSON instead of its display text.
        #[arg(long)]
        json: bool,
    },
}
