//! The flags as `toolbelt_session` options, and the session every subcommand opens
//! (`Session::load`: the current directory under the global flags).

use std::ops::{Deref, DerefMut};

use toolbelt_session::{
    AgentOptions, McpOptions, Policy, Resume, SessionOptions, SetupError, Warn,
};

use crate::cli::{AgentArgs, GlobalArgs, PolicyArgs};

/// A session opened from the flags.
pub struct Session(pub toolbelt_session::Session);

impl Deref for Session {
    type Target = toolbelt_session::Session;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Session {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Session {
    /// The session of the current directory.
    pub fn load(global: &GlobalArgs) -> Result<Session, SetupError> {
        Self::load_with(options(global))
    }

    /// The session of the current directory under `options`.
    pub fn load_with(options: SessionOptions) -> Result<Session, SetupError> {
        let cwd = std::env::current_dir()
            .map_err(|e| SetupError(format!("cannot read the current directory: {e}")))?;
        toolbelt_session::Session::open(&cwd, options).map(Session)
    }

    /// The session of the current directory, or `None` after saying on stderr why
    /// there is none (the caller exits with `EXIT_USAGE`).
    pub fn load_or_say(global: &GlobalArgs) -> Option<Session> {
        Session::load(global)
            .inspect_err(|e| eprintln!("toolbelt: {}", e.0))
            .ok()
    }

    /// Discovered, MCP and declared tools.
    pub async fn load_extensions(&mut self, _global: &GlobalArgs) -> Result<(), SetupError> {
        self.0.load_extensions(true).await
    }
}

/// The global flags as session options; warnings on stderr through `pipes`.
pub fn options(global: &GlobalArgs) -> SessionOptions {
    SessionOptions {
        include_directories: global.include_directories.clone(),
        trust_workspace: global.trust_workspace,
        context: global.context.clone(),
        mcp: McpOptions {
            mcp_config: global.mcp.mcp_config.clone(),
            allowed_mcp_server_names: global.mcp.allowed_mcp_server_names.clone(),
            strict: false,
        },
        warn: Warn::new(|text| eprintln!("toolbelt: warning: {text}")),
        ..SessionOptions::default()
    }
}

/// `--approval-mode`, `--yolo`, `--allowed-tools`, `--exclude-tools`.
pub fn policy(args: &PolicyArgs) -> Policy {
    Policy {
        approval_mode: args.approval_mode.clone(),
        yolo: args.yolo,
        allowed_tools: args.allowed_tools.clone(),
        exclude_tools: args.exclude_tools.clone(),
    }
}

/// The agent's flags as agent options.
pub fn agent_options(args: &AgentArgs) -> AgentOptions {
    let resume = match (args.resume.as_deref(), args.continue_latest) {
        (Some(id), _) if !id.is_empty() => Resume::Id(id.to_string()),
        (None, true) => Resume::Latest,
        _ => Resume::Fresh,
    };
    let mut options = AgentOptions {
        model: args.model.clone(),
        openai_api_key: args.openai_api_key.clone(),
        openai_base_url: args.openai_base_url.clone(),
        provider: args.provider.clone(),
        model_replay: args.model_replay.clone(),
        record: args.record.clone(),
        policy: policy(&args.policy),
        core_tools: args.core_tools.clone(),
        system_prompt: args.system_prompt.clone(),
        append_system_prompt: args.append_system_prompt.clone(),
        max_session_turns: args.max_session_turns,
        resume,
        session_id: args.session_id.clone(),
        // Issue 33: the front ends with idle time fire scheduled prompts.
        scheduled_prompts: args.input_format == crate::cli::InputFormat::StreamJson
            || crate::interactive::wanted(args),
        ..AgentOptions::default()
    };
    args.claude.agent(&mut options);
    options
}

/// The session options of the agent: the global flags' and Claude's.
pub fn agent_session(global: &GlobalArgs, args: &AgentArgs) -> SessionOptions {
    let mut options = options(global);
    args.claude.session(&mut options);
    options.worktree =
        toolbelt_session::WorktreeOptions::new(args.worktree.clone(), args.resume.clone());
    options.worktree.continue_latest = args.continue_latest;
    options
}
