//! Flags and subcommands, as data: one definition feeds parsing and `--help`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::claude_flags::ClaudeArgs;

pub const EXIT_OK: u8 = 0;
pub const EXIT_TOOL_ERROR: u8 = 1;
pub const EXIT_USAGE: u8 = 2;
pub const EXIT_REFUSED: u8 = 3;
/// A file toolbelt keeps for itself cannot be read or written (the trusted folders, the
/// saved sessions, the checkpoint store), or HOME is not set: not the command line's
/// fault, nor the settings', so a script can tell it from a usage error.
pub const EXIT_STATE: u8 = 4;
pub const EXIT_INTERRUPTED: u8 = 130;
/// The agent reached `--max-session-turns` (Qwen Code's code for the same).
pub const EXIT_TURN_LIMIT: u8 = 53;

/// The exit code of an agent that could not be made, by its cause: each is the person's
/// configuration, flags or input (2), the model's too: a missing key, URL or replay
/// script is configuration, not a model that failed to answer (1). A `--resume` ID that
/// is not saved is the flag's (2): scripts and tests rely on it.
pub fn setup_failure(e: &toolbelt_session::AgentError) -> u8 {
    use toolbelt_session::AgentError;
    match e {
        AgentError::Setup(_)
        | AgentError::Flags(_)
        | AgentError::Saved(_)
        | AgentError::Prompt(_)
        | AgentError::Model(_) => EXIT_USAGE,
    }
}

/// `--input-format stream-json` that could not start: a bad `initialize` field is usage
/// (2); an agent that could not be made exits as without stream-JSON.
pub fn stream_failure(e: &toolbelt_stream_json::StreamError) -> u8 {
    use toolbelt_stream_json::StreamError;
    match e {
        StreamError::Initialize(_) | StreamError::Setup(_) => EXIT_USAGE,
        StreamError::Agent(e) => setup_failure(e),
    }
}

/// `--resume` without an ID: no saved session is usage (2); a store that cannot be
/// read is toolbelt's own state (4).
pub fn list_failure(e: &toolbelt_session::ListError) -> u8 {
    use toolbelt_session::ListError;
    match e {
        ListError::NoneSaved(_) => EXIT_USAGE,
        ListError::Store(_) => EXIT_STATE,
    }
}

/// `toolbelt trust`: a folder that is not there is usage (2); a trusted-folders file
/// with a value it does not know is configuration, like bad settings (2); one that cannot
/// be read or written, or no HOME, is toolbelt's own state (4).
pub fn trust_failure(e: &toolbelt_session::TrustChangeError) -> u8 {
    use toolbelt_config::trust::TrustError;
    use toolbelt_session::TrustChangeError;
    match e {
        TrustChangeError::CurrentDir(_)
        | TrustChangeError::NotADirectory(_)
        | TrustChangeError::Unreadable { .. }
        | TrustChangeError::File(TrustError::Invalid { .. }) => EXIT_USAGE,
        TrustChangeError::NoHome
        | TrustChangeError::File(TrustError::Io { .. } | TrustError::NoHome) => EXIT_STATE,
    }
}

const EXAMPLES: &str = "\
Examples:
  bash examples/tour.sh        (from a checkout: a scripted model tours the tools offline)
  OPENAI_BASE_URL=http://127.0.0.1:8000/v1 toolbelt -y \"fix the failing test\"
  git diff | toolbelt -p \"review this diff\" --output-format json
  toolbelt tools list
  toolbelt tools list --json
  toolbelt skills list
  toolbelt tools call read_file \"{\\\"absolute_path\\\": \\\"$PWD/README.md\\\"}\"
  echo \"{\\\"absolute_path\\\": \\\"$PWD/logo.png\\\"}\" | toolbelt tools call read_file - --json
  toolbelt --include-directories ../lib tools call read_file \"{\\\"absolute_path\\\": \\\"$(cd ../lib && pwd)/x.rs\\\"}\"

Exit codes of the agent (`toolbelt PROMPT`):
  0    the model answered
  1    the model could not be used (refused the request, unreachable after retries)
  2    usage error (no prompt, bad flags, bad settings, unreadable replay file)
  4    `--resume` without an ID: the saved sessions cannot be read
  53   the session reached --max-session-turns
  130  interrupted with Ctrl-C

Exit codes of `tools call`:
  0    the tool succeeded
  1    the tool ran and reported an error
  2    usage or validation error (unknown tool, bad JSON, invalid arguments, bad settings)
  3    refused: the call needs confirmation and none was given (no terminal, no --yes),
       or the person answered no
  130  interrupted with Ctrl-C (the running tool is cancelled first)

Exit codes of `restore` and `trust`:
  0    done (or nothing to do)
  1    some paths could not be restored
  2    usage error (no such checkpoint, a path outside the workspace, not a directory)
  3    refused: the restore was not confirmed
  4    a file toolbelt keeps cannot be read or written (the checkpoint store,
       ~/.qwen/trustedFolders.json), or HOME is not set";

/// Where the flags every subcommand takes are listed in `--help`: apart from the
/// subcommand's own, since few of them matter to a given subcommand.
const GLOBAL: &str = "Global options (workspace and MCP servers)";

#[derive(Debug, Parser)]
#[command(
    name = "toolbelt",
    version,
    about = "A fast, safe tool runtime for LLM coding agents",
    after_help = EXAMPLES,
    // Global flags (`--include-directories`) may stand before a subcommand, so top-level
    // arguments must not rule subcommands out; a first word that names a subcommand is
    // that subcommand, any other starts the prompt.
    subcommand_precedence_over_arg = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(flatten)]
    pub agent: AgentArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// More workspace directories besides the current one (comma-separated or repeated).
    #[arg(
        long = "include-directories",
        alias = "add-dir",
        value_delimiter = ',',
        global = true,
        help_heading = GLOBAL
    )]
    pub include_directories: Vec<PathBuf>,
    /// Trust this folder's `.qwen/settings.json` for this run (its commands, MCP servers,
    /// allow rules and extra directories), as `toolbelt trust` would for good
    /// [env: TOOLBELT_TRUST_WORKSPACE=1].
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub trust_workspace: bool,
    /// Set a when-clause context key for declared tools (KEY=JSON; a value that is not
    /// JSON is a string), over the session's own keys and settings `context.keys`.
    /// Repeatable.
    #[arg(long = "context", value_name = "KEY=JSON", global = true, help_heading = GLOBAL)]
    pub context: Vec<String>,
    #[command(flatten)]
    pub mcp: McpArgs,
}

/// Which MCP servers to connect, besides the settings' `mcpServers`.
#[derive(Debug, Clone, Default, Args)]
pub struct McpArgs {
    /// More MCP servers: a JSON file or inline JSON, `{"mcpServers": {...}}` or the
    /// server map itself. Replaces settings entries of the same name. Repeatable.
    #[arg(long = "mcp-config", value_name = "FILE|JSON", global = true, help_heading = GLOBAL)]
    pub mcp_config: Vec<String>,
    /// Connect only these MCP servers (comma-separated or repeated).
    #[arg(
        long = "allowed-mcp-server-names",
        value_delimiter = ',',
        value_name = "NAMES",
        global = true, help_heading = GLOBAL
    )]
    pub allowed_mcp_server_names: Vec<String>,
}

/// The headless agent: the same words as Qwen Code's headless mode where they exist.
// The help text names URLs as a person reads them in a terminal.
#[allow(rustdoc::bare_urls)]
#[derive(Debug, Clone, Args)]
pub struct AgentArgs {
    /// The prompt (several words are joined with spaces). Standard input, when it is not
    /// a terminal, is appended to it.
    #[arg(value_name = "PROMPT")]
    pub words: Vec<String>,
    /// The prompt, as a flag (Qwen Code's `-p`); joined with the positional words.
    #[arg(short = 'p', long = "prompt", value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// Start an interactive session with this first prompt (as `toolbelt` alone on a
    /// terminal does without one).
    #[arg(short = 'i', long = "prompt-interactive", value_name = "PROMPT")]
    pub prompt_interactive: Option<String>,
    /// Model name [env: OPENAI_MODEL; settings: model.name].
    #[arg(short = 'm', long)]
    pub model: Option<String>,
    /// The model provider: openai (chat completions), anthropic, gemini, vertex-ai,
    /// openai-responses, or an id of the settings' modelProviders (`--auth-type` is Qwen
    /// Code's name) [default: from the model's modelProviders entry, else from the API key
    /// variables set, else openai].
    #[arg(long, alias = "auth-type", value_name = "PROVIDER")]
    pub provider: Option<String>,
    /// API key of the OpenAI-compatible server [env: OPENAI_API_KEY].
    #[arg(long, value_name = "KEY")]
    pub openai_api_key: Option<String>,
    /// Base URL of the OpenAI-compatible server, up to the version
    /// [env: OPENAI_BASE_URL; default: https://api.openai.com/v1, only with a key].
    #[arg(long, value_name = "URL")]
    pub openai_base_url: Option<String>,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// text: the answer on stdout, tool activity on stderr; json: the session's messages
    /// (the SDK protocol's `system`, `assistant`, `user`, `result`) as one JSON array at
    /// the end; stream-json: the same messages, one JSON object per line as they happen.
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,
    /// text: the prompt from the arguments and standard input; stream-json: user
    /// messages and control requests on standard input, one JSON object per line, for
    /// as many turns as the client sends (Qwen Code's and Claude Code's SDK protocol).
    #[arg(long, value_enum, default_value_t = InputFormat::Text)]
    pub input_format: InputFormat,
    /// Serve the Agent Client Protocol on standard input and output, for an editor
    /// (Zed, JetBrains, Neovim, Emacs) to drive toolbelt as its agent (docs/acp.md).
    #[arg(long, visible_alias = "experimental-acp")]
    pub acp: bool,
    /// With `-o stream-json`: also `stream_event` messages (`message_start`,
    /// `content_block_delta`, ...) for each model answer.
    #[arg(long)]
    pub include_partial_messages: bool,
    /// The ID of this run's saved session (a new one; an ID already saved is an error;
    /// with --resume or --continue only for a fork, --fork-session).
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// Only these built-in tools (comma-separated; Qwen Code's `--core-tools`, the
    /// settings' `tools.core` for this run). Discovered and MCP tools are not affected.
    #[arg(long, value_delimiter = ',', value_name = "TOOLS")]
    pub core_tools: Vec<String>,
    /// The system prompt to use in place of toolbelt's own.
    #[arg(long, value_name = "TEXT")]
    pub system_prompt: Option<String>,
    /// Text added to the end of the system prompt (toolbelt's own, or --system-prompt).
    #[arg(long, value_name = "TEXT")]
    pub append_system_prompt: Option<String>,
    /// Who started toolbelt (the SDKs pass `--channel=SDK`); accepted and ignored.
    #[arg(long, hide = true, value_name = "NAME")]
    pub channel: Option<String>,
    /// Most model turns in the session (Claude Code's `--max-turns`).
    #[arg(long, alias = "max-turns", default_value_t = 100, value_name = "N")]
    pub max_session_turns: usize,
    #[command(flatten)]
    pub claude: ClaudeArgs,
    /// Answer model requests from this JSONL script instead of a server (offline).
    #[arg(long, value_name = "FILE")]
    pub model_replay: Option<PathBuf>,
    /// Write the model's turns to this JSONL file, in the replay format.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Continue this project's latest saved session: its conversation (tool results
    /// included, nothing run again) comes before the new prompt. Every run that got a
    /// model's answer is saved under `~/.toolbelt/sessions/<project>/`.
    #[arg(long = "continue", conflicts_with = "resume")]
    pub continue_latest: bool,
    /// Continue the saved session ID. Without an ID, list this project's sessions and
    /// exit (headless has no picker). The next word is taken as the ID: put the prompt
    /// after it, or use `-p`.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
    /// Work in a git worktree of its own, `.qwen/worktrees/NAME` on branch
    /// `worktree-NAME` from the current branch (a generated name without one; `#N` for
    /// `origin`'s pull request N). With `--resume ID`, that session's worktree is used.
    #[arg(short = 'w', long, value_name = "NAME", num_args = 0..=1, default_missing_value = "", require_equals = true)]
    pub worktree: Option<String>,
}

/// What runs without asking and which tools are offered: the same words for the agent
/// and the MCP server.
#[derive(Debug, Clone, Args)]
pub struct PolicyArgs {
    /// What runs without asking [settings: tools.approvalMode; default: default]. When
    /// nobody can be asked (headless, an MCP client without elicitation), calls that
    /// would ask are refused with the reason and how to allow them.
    /// Claude Code's `--permission-mode` names are accepted too: `acceptEdits`
    /// (auto-edit), `bypassPermissions` (yolo), `dontAsk` (default, with nobody asked:
    /// what would ask is refused) and `auto` (default).
    #[arg(
        long,
        alias = "permission-mode",
        value_parser = ["plan", "default", "auto-edit", "yolo", "acceptEdits", "bypassPermissions", "dontAsk", "auto"]
    )]
    pub approval_mode: Option<String>,
    /// Approve every call (`--approval-mode yolo`).
    #[arg(short = 'y', long)]
    pub yolo: bool,
    /// Tools (or rules such as `run_shell_command(git *)`, or Claude Code's names such as
    /// `Bash(git *)`) that run without asking (comma-separated or repeated).
    #[arg(
        long,
        alias = "allowedTools",
        value_delimiter = ',',
        value_name = "TOOLS"
    )]
    pub allowed_tools: Vec<String>,
    /// Tools not offered at all (comma-separated or repeated).
    #[arg(long, value_delimiter = ',', value_name = "TOOLS")]
    pub exclude_tools: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    Text,
    StreamJson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
    StreamJson,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List, inspect and run tools.
    Tools {
        #[command(subcommand)]
        command: ToolsCommand,
    },
    /// MCP: serve toolbelt's tools to any MCP client (`mcp serve`), or list the
    /// configured MCP servers and their tools (`mcp list`).
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// The sub-agents the `agent` tool offers: project `.qwen/agents`, user
    /// `~/.qwen/agents`, built-ins.
    Agents {
        #[command(subcommand)]
        command: AgentsCommand,
    },
    /// The language servers of `.lsp.json` (project, when trusted, and `~/.qwen/.lsp.json`)
    /// that the `lsp` tool asks.
    Lsp {
        #[command(subcommand)]
        command: LspCommand,
    },
    /// List the skills (`.qwen/skills/`, `.agents/skills/`, `~/.qwen/skills/`).
    Skills {
        #[command(subcommand)]
        command: SkillsCommand,
    },
    /// The hooks of the settings (`.qwen/settings.json`, `~/.qwen/settings.json`, the
    /// system file, Claude Code's `.claude/settings*.json`) and whether each runs here.
    Hooks {
        #[command(subcommand)]
        command: HooksCommand,
    },
    /// Trust a folder (default: the current one): its `.qwen/settings.json` may then run
    /// commands, start MCP servers, add allow rules and widen the workspace. Saved in
    /// `~/.qwen/trustedFolders.json`, as Qwen Code does.
    Trust {
        /// The folder to trust.
        path: Option<PathBuf>,
        /// Stop trusting it instead.
        #[arg(long)]
        remove: bool,
    },
    /// The git worktrees under `.qwen/worktrees` (`list`), or remove one with its branch
    /// (`remove NAME`: refused while it holds commits no other branch or remote has).
    Worktree {
        #[command(subcommand)]
        command: WorktreeCommand,
    },
    /// The file checkpoints taken before every call that may change files: list them
    /// (newest first), or restore one after its diff (a terminal is asked; `--yes`
    /// instead). A restore is checkpointed too, so it can be undone.
    Restore(RestoreArgs),
    /// What the kernel enforces on shell commands here: Landlock ABI, seccomp, network,
    /// and which commands run confined. `--verify` proves it from inside a confined
    /// command; `-- CMD...` runs CMD confined read-only, as an unasked command runs.
    Sandbox {
        /// Try a write outside the workspace, a chmod, a TCP connection and a signal to
        /// toolbelt from inside; exit 1 if any gets through.
        #[arg(long)]
        verify: bool,
        /// A command to run confined read-only (one argument: a shell line; several: a
        /// program and its arguments).
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// What the editor's terminal runs for a command of an ACP session: prints the
    /// command's output from LOG as toolbelt writes it, and exits with its status (or
    /// when toolbelt, PID, is gone). It runs nothing itself (docs/acp.md).
    #[command(name = "acp-terminal", hide = true)]
    AcpTerminal {
        /// The call's output file, in the session's directory.
        log: std::path::PathBuf,
        /// toolbelt's process.
        pid: u32,
        /// Its start time (clock ticks since boot), so a reused PID is not taken for it.
        start: Option<u64>,
    },
}

/// `toolbelt restore [--list] [ID] [--yes] [--force] [-- PATHS...]`.
#[derive(Debug, Clone, Args)]
pub struct RestoreArgs {
    /// List the checkpoints (also what no ID does).
    #[arg(long)]
    pub list: bool,
    /// The checkpoint to restore: its ID, or a unique start of it.
    pub id: Option<String>,
    /// Restore without asking.
    #[arg(short = 'y', long)]
    pub yes: bool,
    /// Also overwrite files changed outside toolbelt since it last saw them.
    #[arg(long)]
    pub force: bool,
    /// Only these files or directories.
    #[arg(last = true)]
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum WorktreeCommand {
    /// Each worktree: name, branch, path, and what removing it would lose.
    List,
    /// Remove a worktree and its branch.
    Remove {
        /// The worktree's name.
        name: String,
        /// Also when it has uncommitted changes, which are lost.
        #[arg(long)]
        discard_changes: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AgentsCommand {
    /// Each agent with its level, tools and limits, and the files that could not be
    /// loaded (file, line, key).
    List {
        /// Print the agents and warnings as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum LspCommand {
    /// Each configured server: its file, command, the extensions it covers, its state and
    /// why it would not run; and the `.lsp.json` files that were not read.
    List {
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Each hook with its event, matcher, type, command or URL and file, whether it runs
    /// here and why not (an untrusted folder, disableAllHooks); and the bad entries.
    List {
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// Each skill with its level, folder, description and allowed-tools; skills hidden
    /// by one of the same name; and the files that did not load, with file, line and key.
    List {
        /// Print them as JSON.
        #[arg(long)]
        json: bool,
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
    /// Log in to a Streamable HTTP server that asks for OAuth: opens the authorization
    /// page in the browser (or prints it), waits for its redirect to 127.0.0.1 and keeps
    /// the tokens in toolbelt's store (~/.toolbelt/mcp-oauth, never the settings).
    Auth {
        /// The server's name in mcpServers.
        name: String,
        /// Print the URL only; open it yourself (on another machine, say).
        #[arg(long)]
        no_browser: bool,
        /// How long to wait for the browser to come back, in seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 300)]
        timeout: u64,
    },
    /// Forget the OAuth tokens kept for a server.
    Logout {
        /// The server's name in mcpServers.
        name: String,
    },
    /// Serve toolbelt's tools to an MCP client, over stdio (default) or Streamable HTTP.
    /// The workspace is the client's roots when it offers them, else the current
    /// directory; settings, rules and approval mode are the agent's.
    Serve(ServeArgs),
}

/// `toolbelt mcp serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Serve Streamable HTTP at http://ADDR:PORT/mcp instead of stdio (port 0: any free
    /// port; the URL is printed on stderr). Loopback unless --auth-token-env is given.
    #[arg(long, value_name = "ADDR:PORT")]
    pub http: Option<String>,
    /// Serve HTTP without sessions, so any instance can answer any request (behind a
    /// load balancer). Nothing is asked of the client: no elicitation, no roots.
    #[arg(long, requires = "http")]
    pub stateless: bool,
    /// Require `Authorization: Bearer <token>`, the token read from this environment
    /// variable. Needed to listen on a non-loopback address.
    #[arg(long, value_name = "NAME", requires = "http")]
    pub auth_token_env: Option<String>,
    /// Also offer the tools of the configured MCP servers (`mcpServers`, --mcp-config).
    #[arg(long)]
    pub proxy_mcp: bool,
    /// Over stdio: after writing a message, watch the input this many microseconds
    /// before sleeping, so a client's next request is read without a wake-up (costs
    /// at most that much CPU per message; 0 turns it off).
    #[arg(long, value_name = "MICROSECONDS", default_value_t = 250,
          value_parser = clap::value_parser!(u64).range(0..=100_000))]
    pub busy_poll_us: u64,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List the tools a model would be offered.
    List {
        /// Print the function declarations (name, description, parameters) as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Evaluate a VS Code when-clause against this session's context keys: prints
    /// `true` (exit 0) or `false` (exit 1); a clause that does not parse is exit 2, with
    /// the position.
    When {
        /// The clause, such as `isLinux && workspaceFolderCount > 1`. Context keys are
        /// set with the global `--context KEY=JSON`.
        expr: String,
    },
    /// Check every registered tool (built-in, discovered, MCP) against the naming and
    /// description guidelines and the providers' limits. Exit 1 when there are errors.
    Lint {
        /// Print the findings as a JSON array.
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
