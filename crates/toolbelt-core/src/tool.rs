//! The tool contract: a [`Tool`] declares itself and builds an [`Invocation`] from
//! validated arguments; the invocation describes, confirms and executes one call.
//!
//! Two layers, as in Qwen Code's declarative tools: the tool is shared and immutable
//! (`Arc<dyn Tool>` in the registry), the invocation is one call's own state, consumed by
//! `execute`. Tools never see the conversation or the model: everything a call may use is
//! in its [`ExecContext`].

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::ConfirmationDetails;
use crate::OutputPolicy;
use crate::WorkspaceRoots;
use crate::{ToolError, ToolResult};
use toolbelt_config::settings::Settings;

/// A boxed, `Send` future: what the object-safe [`Tool`] and [`Invocation`] methods return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a tool does, broadly. Drives approval (edits and execution ask by default) and
/// parallelism (read-only kinds of one model turn may run together).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Reads files (`read_file`, `read_many_files`).
    Read,
    /// Changes files (`write_file`, `edit`, `notebook_edit`).
    Edit,
    /// Deletes files.
    Delete,
    /// Moves or renames files.
    Move,
    /// Searches or lists without changing anything (`grep_search`, `glob`, `list_directory`, `web_search`).
    Search,
    /// Runs commands or programs (`run_shell_command`, discovered tools).
    Execute,
    /// Fetches from the network (`web_fetch`).
    Fetch,
    /// Planning and notes rather than work on the workspace (`todo_write`,
    /// `exit_plan_mode`, and `save_memory`, which appends to a `QWEN.md` memory file).
    Think,
    /// Anything else; neither read-only nor a mutator.
    Other,
}

impl Kind {
    /// The `snake_case` name, as serialized and shown in listings.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Edit => "edit",
            Kind::Delete => "delete",
            Kind::Move => "move",
            Kind::Search => "search",
            Kind::Execute => "execute",
            Kind::Fetch => "fetch",
            Kind::Think => "think",
            Kind::Other => "other",
        }
    }

    /// Kinds that change nothing outside the session, so plan mode lets them run and the
    /// scheduler may run them side by side.
    pub fn is_read_only(self) -> bool {
        matches!(self, Kind::Read | Kind::Search | Kind::Fetch | Kind::Think)
    }

    /// Kinds that change the workspace or run code.
    pub fn is_mutator(self) -> bool {
        matches!(self, Kind::Edit | Kind::Delete | Kind::Move | Kind::Execute)
    }
}

/// What a permission rule's specifier is matched against for one call
/// (`run_shell_command(git *)`, `read_file(//src/**)`, `web_fetch(domain:x.org)`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PermissionSubject {
    /// The rule can only name the tool as a whole.
    #[default]
    None,
    /// The simple commands of a shell call, already split by the shell tool's parser on
    /// `&&`, `||`, `;`, `|`, newlines and substitutions. The rules engine matches each and
    /// the strictest answer wins; an allow rule approves a command only when it names
    /// everything the command runs and the command writes nothing through a redirection
    /// (see [`ShellCommand`]).
    Commands(Vec<ShellCommand>),
    /// The paths the call reads or writes.
    Paths(Vec<PathBuf>),
    /// The host a fetch goes to.
    Domain(String),
    /// A literal value (an agent type, a skill name).
    Literal(String),
}

/// One simple command of a shell call, as the permission rules see it.
///
/// Deny and ask rules must not be sidestepped by spelling (`\rm`, `r"m"`, `/bin/rm`,
/// `FOO=1 rm`), so they are matched against every form below; allow rules must not
/// approve more than they name, so they refuse a command that writes through a
/// redirection or runs with an environment prefix the rule does not spell out (see
/// `rules/specifier.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShellCommand {
    /// The words as written (quotes kept), joined by single spaces, without leading
    /// `VAR=x` assignments and without redirections.
    pub text: String,
    /// The words as the shell passes them to the program: quotes and escapes removed
    /// (`l"s"` and `\ls` are `ls`). Expansions (`$x`) stay as written.
    pub words: Vec<String>,
    /// Leading `VAR=x` assignments, as written (`LD_PRELOAD=/tmp/x.so`).
    pub assignments: Vec<String>,
    /// Output of this command (or of a group around it) is redirected to a file other
    /// than `/dev/null`, or the command line could not be parsed: something may be written.
    pub writes: bool,
    /// Why the program this command runs cannot be read from its text, if it cannot: a
    /// name that is not a literal (`$x`, `/usr/bin/[r]m`), or a wrapper whose command
    /// is a string it splits or input it reads (`env -S 'rm x'`, `bash` reading standard
    /// input, code given to an interpreter or to `git -c`). Every deny and ask rule of
    /// the shell covers such a command (fail closed), and no allow rule approves it but
    /// one allowing every command. The shell tool decides this; the rules engine only
    /// reads it.
    pub unreadable: Option<String>,
}

impl ShellCommand {
    /// A command from its text alone, split on whitespace (for tests and callers without
    /// a shell parser): leading `NAME=value` words are its assignments; no quotes are
    /// removed and no redirection is seen.
    pub fn from_text(text: &str) -> Self {
        let all: Vec<&str> = text.split_whitespace().collect();
        let is_assignment = |w: &&&str| {
            w.split_once('=').is_some_and(|(name, _)| {
                name.bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            })
        };
        let assigned = all.iter().take_while(is_assignment).count();
        let words = &all[assigned..];
        ShellCommand {
            text: words.join(" "),
            words: words.iter().map(|w| w.to_string()).collect(),
            assignments: all[..assigned].iter().map(|w| w.to_string()).collect(),
            writes: false,
            unreadable: None,
        }
    }
}

/// Live output of a running call (shell output, MCP progress), for a display.
/// Cheap to clone; calling it on a call without a listener costs nothing.
#[derive(Clone, Default)]
pub struct OutputSink(Option<Arc<OutputFn>>);

type OutputFn = dyn Fn(&str) + Send + Sync;

impl OutputSink {
    /// A sink that passes every chunk to `f` (called on the executing task; keep it quick).
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        OutputSink(Some(Arc::new(f)))
    }

    /// A sink with no listener: `emit` does nothing.
    pub fn none() -> Self {
        OutputSink(None)
    }

    /// Passes a chunk of live output to the listener, if there is one.
    pub fn emit(&self, chunk: &str) {
        if let Some(f) = &self.0 {
            f(chunk);
        }
    }

    /// Whether someone listens, so a tool can skip preparing output no one reads.
    pub fn is_listening(&self) -> bool {
        self.0.is_some()
    }
}

impl std::fmt::Debug for OutputSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "OutputSink(listening)"
        } else {
            "OutputSink(none)"
        })
    }
}

/// A narrow capability handed to tools that need a model's judgement (`web_fetch` with
/// `tools.webFetch.summarize`): one question to the session's model, with the given
/// instructions, no conversation and no tools. Tools never get the model itself.
pub trait AskOnce: Send + Sync {
    /// The model's answer text, or why there is none.
    fn ask<'a>(
        &'a self,
        instructions: &'a str,
        question: &'a str,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, crate::EmbedderError>>;
}

/// Where the session's [`AskOnce`] is put once the model exists (the environment is
/// built before it). Empty in `tools call` and in embedders that give none.
#[derive(Clone, Default)]
pub struct AskOnceSlot(Arc<OnceLock<Arc<dyn AskOnce>>>);

impl AskOnceSlot {
    /// Sets the capability; a second call is ignored.
    pub fn set(&self, ask: Arc<dyn AskOnce>) {
        let _ = self.0.set(ask);
    }

    /// The capability, `None` until the model exists (and always in `tools call`).
    pub fn get(&self) -> Option<&Arc<dyn AskOnce>> {
        self.0.get()
    }
}

impl std::fmt::Debug for AskOnceSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "AskOnceSlot(set)"
        } else {
            "AskOnceSlot(empty)"
        })
    }
}

/// The directory the shell runs in when a call names none, set while the session works
/// in a git worktree inside its workspace (`enter_worktree`) and cleared when it leaves
/// (`exit_worktree`); empty, the first workspace root. Shared by every clone of the
/// environment, because the session's tools were built before the worktree existed.
#[derive(Debug, Clone, Default)]
pub struct WorkDirSlot(Arc<std::sync::RwLock<Option<PathBuf>>>);

impl WorkDirSlot {
    /// Sets (or, with `None`, clears) the directory.
    pub fn set(&self, dir: Option<PathBuf>) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = dir;
    }

    /// The directory, `None` when the shell runs in the first workspace root.
    pub fn get(&self) -> Option<PathBuf> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// What every tool of a session shares: where it may work, how much it may say, and the
/// settings. Built once at start-up and handed to tools when they are constructed.
#[derive(Debug, Clone)]
pub struct ToolEnvironment {
    /// The workspace roots every path is resolved against (with the session's path rules).
    pub roots: WorkspaceRoots,
    /// How much text goes back to the model and where the rest is spilled.
    pub output: OutputPolicy,
    /// The merged settings of the session.
    pub settings: Arc<Settings>,
    /// Where per-session files live (spilled output, background logs, todos).
    pub session_dir: PathBuf,
    /// The model, as one question at a time (see [`AskOnce`]).
    pub ask_once: AskOnceSlot,
    /// The person, for questions with choices (see [`crate::AskUser`]); empty headless.
    pub ask_user: crate::QuestionSlot,
    /// Who answers what MCP servers ask (elicitation, sampling); empty headless (see
    /// [`crate::ServerAsker`]).
    pub server_asks: crate::ServerAskSlot,
    /// The person's home directory, where user-wide files live (`~/.qwen/QWEN.md` for
    /// `save_memory`). `None` unless the assembler sets it: a tool never reads `$HOME`
    /// itself, so an environment built by a test or an embedder cannot write to the real
    /// home by accident.
    pub user_home: Option<PathBuf>,
    /// toolbelt's own store (`$TOOLBELT_HOME`, default `~/.toolbelt`: sessions, logs,
    /// history, checkpoints), which a command run unasked may not read (the session's
    /// own `session_dir` in it excepted). `None` unless the assembler sets it.
    pub toolbelt_home: Option<PathBuf>,
    /// Where the shell runs by default while the session is in a worktree.
    pub work_dir: WorkDirSlot,
    /// The editor the session runs in, if any ([`crate::EditorBuffers`]).
    pub editor: crate::EditorSlot,
}

impl ToolEnvironment {
    /// An environment whose output policy comes from `settings`, spilling to `<session_dir>/output`, with an empty [`AskOnceSlot`].
    pub fn new(roots: WorkspaceRoots, settings: Arc<Settings>, session_dir: PathBuf) -> Self {
        let output = OutputPolicy::from_settings(&settings, session_dir.join("output"));
        ToolEnvironment {
            roots,
            output,
            settings,
            session_dir,
            ask_once: AskOnceSlot::default(),
            ask_user: crate::QuestionSlot::default(),
            server_asks: Default::default(),
            user_home: None,
            toolbelt_home: None,
            work_dir: WorkDirSlot::default(),
            editor: crate::EditorSlot::default(),
        }
    }
}

/// Whether a person stood behind a call, which decides how far a tool that runs code
/// trusts it (the shell confines an unasked command in a read-only sandbox).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Consent {
    /// Nobody was asked: the call's own [`Invocation::confirmation`] said it needs no
    /// approval (a command the shell classifier judged read-only). The default, so a
    /// context built outside the scheduler is treated as the less trusted kind.
    #[default]
    Unasked,
    /// The call asked and the person's choice let it run: an answer "yes", an allow rule
    /// or an "always" allowance covering what it asked, yolo, auto-edit for an edit.
    Approved,
}

/// Everything one execution may use.
#[derive(Debug, Clone)]
pub struct ExecContext {
    /// Cancelled when the call should stop (Ctrl-C, the turn ends); the tool must honour it.
    pub cancel: CancellationToken,
    /// Where live output goes; [`OutputSink::none`] when nobody listens.
    pub output: OutputSink,
    /// The session's shared environment.
    pub env: Arc<ToolEnvironment>,
    /// The model's id for this call (empty outside a scheduler): what a tool that runs
    /// a conversation of its own (`agent`) tags its events with.
    pub call_id: String,
    /// How the call came to run (see [`Consent`]).
    pub consent: Consent,
}

impl ExecContext {
    /// A context with a fresh cancellation token, no output listener and
    /// [`Consent::Unasked`].
    pub fn new(env: Arc<ToolEnvironment>) -> Self {
        ExecContext {
            cancel: CancellationToken::new(),
            output: OutputSink::none(),
            env,
            call_id: String::new(),
            consent: Consent::Unasked,
        }
    }

    /// The same context for a call the person approved.
    pub fn approved(mut self) -> Self {
        self.consent = Consent::Approved;
        self
    }
}

/// Facts about a tool that crates other than its own act on, declared by the tool
/// ([`Tool::facts`]); what its [`Kind`] already says is not repeated here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolFacts {
    /// Repeating a call with the same arguments leaves the same state (MCP's
    /// `idempotentHint`; read-only tools are idempotent whatever this says).
    pub idempotent: bool,
    /// Writes a file although its kind is read-only (`save_memory`): a checkpoint is
    /// taken before it runs, as before any call that may change files.
    pub writes_files: bool,
    /// Changes the files its arguments name, so a language server can check them after
    /// the call (the edit tools).
    pub edits_named_files: bool,
    /// Reaches the world outside the machine although its kind is not `Fetch`
    /// (`web_search`; MCP's `openWorldHint`).
    pub open_world: bool,
    /// Only a person can answer it (`ask_user_question`): a front end whose caller is
    /// a program, not a person (`mcp serve`), does not offer it.
    pub asks_a_person: bool,
}

/// What a call allows for the rest of the turn once it is approved: a skill's
/// `allowed-tools`, which the engine's scheduler adds to the turn's allow rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnGrant {
    /// Who grants, for messages: `skill "release-notes"`.
    pub source: String,
    /// Allow rules, as `--allowed-tools` takes them (`run_shell_command(git *)`, `Read`).
    pub rules: Vec<String>,
}

/// A tool: a declaration that builds validated calls.
///
/// `build` receives arguments that already passed the JSON Schema (see
/// [`crate::SchemaValidator`]); it does the checks a schema cannot express (absolute paths, the
/// workspace boundary, ranges that depend on each other) and returns an error message the
/// model can act on.
pub trait Tool: Send + Sync {
    /// Model-facing name, `[A-Za-z0-9_-]{1,64}` (the registry replaces anything else).
    fn name(&self) -> &str;
    /// Name shown to a person (e.g. `ReadFile`); free text.
    fn display_name(&self) -> &str;
    /// For the model: what it does, when to use it and when not, limits.
    fn description(&self) -> &str;
    /// What the tool does broadly: drives approval, plan mode and parallel runs.
    fn kind(&self) -> Kind;
    /// JSON Schema of the arguments, an object at the root.
    fn parameter_schema(&self) -> &Value;
    /// Older names that still resolve to this tool (`replace` for `edit`).
    fn aliases(&self) -> &[&'static str] {
        &[]
    }
    /// Older parameter names still accepted, as `(old, current)` pairs: when a call
    /// carries `old` and not `current`, the value is moved before validation
    /// (`file_path` → `absolute_path` for `read_file`).
    fn parameter_aliases(&self) -> &[(&'static str, &'static str)] {
        &[]
    }
    /// Whether calls usually need a person's approval (for listings; the real answer
    /// for one call is [`Invocation::confirmation`]).
    fn needs_confirmation(&self) -> bool {
        self.kind().is_mutator() || self.kind() == Kind::Fetch
    }
    /// Whether `execute` streams live output through the sink.
    fn can_update_output(&self) -> bool {
        false
    }
    /// VS Code's `when` clause: while it is false in the session's context the tool is
    /// not declared to the model and a call to it is refused as disabled (a `#reference`
    /// in the prompt still brings it in). `None`: always available.
    fn when_clause(&self) -> Option<&toolbelt_config::when::Expr> {
        None
    }
    /// The name a prompt uses to bring this tool into a request (`#name`), for tools
    /// that can be referenced.
    fn reference_name(&self) -> Option<&str> {
        None
    }
    /// The registered tool whose permission rules also apply to calls of this one (a
    /// declared tool bound to a built-in or MCP tool). The scheduler takes the strictest
    /// answer of the two, so a deny or ask rule on the target cannot be sidestepped by
    /// calling it under another name.
    fn rule_target(&self) -> Option<&str> {
        None
    }
    /// Other names permission rules may use for this tool (Claude Code's `Read`, `Bash`;
    /// Qwen Code's display names such as `ls`); one alias may name several tools. Only
    /// a built-in's are believed (see the engine's `ToolRegistry::rule_vocabulary`).
    fn rule_aliases(&self) -> &[&'static str] {
        &[]
    }
    /// Other names a hook's matcher may use for this tool (its display name always
    /// counts too). Unlike a rule alias, each names exactly one tool, as in Qwen Code and
    /// Claude Code: a `Read` matcher means `read_file`, not the other tools a `Read(...)`
    /// rule covers; `Edit` means `edit`, not `write_file`. The rule aliases by default.
    fn hook_aliases(&self) -> &[&'static str] {
        self.rule_aliases()
    }
    /// What the tool does to the paths it is given, for path rules: a rule on reading a
    /// path (`Read(//etc/**)`) covers every tool that reads. `None`: its path rules
    /// name it alone.
    fn path_operation(&self) -> Option<crate::PathOperation> {
        None
    }
    /// Whether the name is kept as Qwen Code spells it (models are trained on it) though
    /// it is not `verb_noun` (`edit`, `glob`): `tools lint` does not ask a built-in to rename it.
    fn keeps_legacy_name(&self) -> bool {
        false
    }
    /// Whether approving a call of this tool ends plan mode (it presents the plan): plan
    /// mode lets it through although it is not read-only, and asks the person even in yolo.
    fn ends_plan_mode(&self) -> bool {
        false
    }
    /// What other crates need to know of the tool (MCP annotations, checkpoints, the
    /// language server's check), declared here so that none keeps a list of tool names.
    fn facts(&self) -> ToolFacts {
        ToolFacts::default()
    }
    /// What to tell the model when it calls `name`, which is no registered tool, and
    /// this tool knows why (the `skill` tool: `name` is a skill). The registry asks every
    /// tool before it suggests the closest names.
    fn hint_for_unknown_name(&self, name: &str) -> Option<String> {
        let _ = name;
        None
    }
    /// Checks the validated arguments and builds the call.
    fn build(&self, args: Value) -> Result<Box<dyn Invocation>, ToolError>;
}

/// One validated call.
pub trait Invocation: Send + Sync {
    /// One line saying what this call will do: "Read src/main.rs lines 1-200".
    fn describe(&self) -> String;
    /// Paths the call touches, for displays and path rules.
    fn locations(&self) -> Vec<PathBuf> {
        Vec::new()
    }
    /// What path, command or domain rules are matched against.
    fn permission_subject(&self) -> PermissionSubject {
        PermissionSubject::None
    }
    /// VS Code's `prepareInvocation`: side-effect-free work done once, before
    /// [`Invocation::describe`] and [`Invocation::confirmation`], that may need time (a
    /// declared tool's `prepare` command yields its invocation and confirmation
    /// messages). Must honour `cancel`; most calls have nothing to prepare.
    fn prepare<'a>(&'a mut self, cancel: &'a CancellationToken) -> BoxFuture<'a, ()> {
        let _ = cancel;
        Box::pin(std::future::ready(()))
    }
    /// Calls this one allows without a question for the rest of the turn once it is
    /// approved (a skill's `allowed-tools`; see the engine's `scheduler/grants.rs`). Believed
    /// only from built-in tools.
    fn turn_grant(&self) -> Option<crate::TurnGrant> {
        None
    }
    /// `None` when the call needs no approval by its nature; otherwise what to show.
    /// The approval mode and permission rules decide whether the question is asked.
    fn confirmation(&self) -> BoxFuture<'_, Option<ConfirmationDetails>>;
    /// Does the work. Honours `ctx.cancel`: a cancelled call returns promptly with what it
    /// had done so far and an error of kind `cancelled`.
    fn execute(self: Box<Self>, ctx: ExecContext) -> BoxFuture<'static, ToolResult>;
}

impl std::fmt::Debug for dyn Invocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Invocation").field(&self.describe()).finish()
    }
}
