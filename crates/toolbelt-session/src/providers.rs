//! Which model server a session talks to, and in which wire format: the choice Qwen Code's
//! users already make, read the same way.
//!
//! The provider comes from `--provider` (or its Qwen Code name `--auth-type`); else from
//! the `modelProviders` entry whose `id` is the model asked for; else from the variables
//! set (an `ANTHROPIC_API_KEY` with no `OPENAI_*` variable picks `anthropic`,
//! `GOOGLE_GENAI_USE_VERTEXAI` picks `vertex-ai` (its credentials: `providers/vertex.rs`), a
//! `GEMINI_API_KEY` or `GOOGLE_API_KEY` picks `gemini`); else `openai`, today's chat
//! completions. A provider id is a protocol (`openai`, `anthropic`, `gemini`,
//! `vertex-ai`, `openai-responses`) or a custom id that `providerProtocol` maps to one.
//!
//! Then, for that provider, the model (`--model`, its variable, `model.name`, its first
//! entry), the entry of `modelProviders.<provider>` with that `id` (its `baseUrl`,
//! `envKey`, `generationConfig`), the base URL (flag, entry, variable, default) and the
//! key (flag, the entry's `envKey` variable, the provider's variables). Every part
//! remembers where it came from, so an error names the provider, the URL and the
//! variable or setting that chose it.

use std::sync::Arc;
use std::time::Duration;

use toolbelt_config::settings::ModelProviderEntry;
use toolbelt_config::settings::Settings;
use toolbelt_model::{
    AnthropicClient, AnthropicConfig, GeminiConfig, GeminiModel, Model, OpenAiClient, OpenAiConfig,
    ResponsesConfig, ResponsesModel, RetryPolicy, Sampling,
};

use crate::error::ModelSetupError;
use crate::options::AgentOptions;

mod vertex;

/// A wire format toolbelt speaks to model servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protocol {
    /// OpenAI-compatible Chat Completions (`openai`).
    OpenAiChat,
    /// Anthropic Messages (`anthropic`).
    Anthropic,
    /// Gemini `generateContent` at the Gemini API (`gemini`).
    Gemini,
    /// Gemini `generateContent` at Vertex AI (`vertex-ai`): the same format, Vertex AI's
    /// URLs and credentials.
    VertexAi,
    /// OpenAI Responses (`openai-responses`).
    OpenAiResponses,
}

impl Protocol {
    /// The protocol of a provider id, when it names one.
    pub fn of_provider(id: &str) -> Option<Protocol> {
        match id {
            // `qwen-oauth` is Qwen Code's own sign-in, which toolbelt does not have: an
            // SDK that passes it gets the chat-completions variables, as before.
            "openai" | "qwen-oauth" => Some(Protocol::OpenAiChat),
            "anthropic" => Some(Protocol::Anthropic),
            "gemini" => Some(Protocol::Gemini),
            "vertex-ai" => Some(Protocol::VertexAi),
            "openai-responses" => Some(Protocol::OpenAiResponses),
            _ => None,
        }
    }

    /// The variables that hold a key, in the order they are read.
    fn key_variables(self) -> &'static [&'static str] {
        match self {
            Protocol::OpenAiChat | Protocol::OpenAiResponses => &["OPENAI_API_KEY"],
            Protocol::Anthropic => &["ANTHROPIC_API_KEY"],
            Protocol::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            // Express mode's API key; with a project, vertex.rs reads a token instead.
            Protocol::VertexAi => &["GOOGLE_API_KEY"],
        }
    }

    fn base_url_variable(self) -> &'static str {
        match self {
            Protocol::OpenAiChat | Protocol::OpenAiResponses => "OPENAI_BASE_URL",
            Protocol::Anthropic => "ANTHROPIC_BASE_URL",
            Protocol::Gemini => "GOOGLE_GEMINI_BASE_URL",
            Protocol::VertexAi => "GOOGLE_VERTEX_BASE_URL",
        }
    }

    fn model_variable(self) -> &'static str {
        match self {
            Protocol::OpenAiChat | Protocol::OpenAiResponses => "OPENAI_MODEL",
            Protocol::Anthropic => "ANTHROPIC_MODEL",
            Protocol::Gemini | Protocol::VertexAi => "GEMINI_MODEL",
        }
    }

    fn default_base_url(self) -> &'static str {
        match self {
            Protocol::OpenAiChat | Protocol::OpenAiResponses => ResponsesConfig::DEFAULT_BASE_URL,
            Protocol::Anthropic => "https://api.anthropic.com",
            Protocol::Gemini => GeminiConfig::DEFAULT_BASE_URL,
            // A region's host replaces it once the region is known (vertex.rs).
            Protocol::VertexAi => GeminiConfig::VERTEX_GLOBAL_URL,
        }
    }
}

/// A model as chosen: what its client needs, and where each part came from.
#[derive(Clone)]
pub struct ModelChoice {
    /// The provider id, as configured.
    pub provider: String,
    /// The wire format.
    pub protocol: Protocol,
    /// The model name sent.
    pub model: String,
    /// The server.
    pub base_url: String,
    /// What set `base_url`.
    pub base_url_origin: String,
    /// The key, when one is set.
    pub api_key: Option<String>,
    /// What set the key (or where one would be read).
    pub api_key_origin: String,
    /// The `modelProviders` entry of the model, when it has one.
    pub entry: Option<ModelProviderEntry>,
    /// Whether the model takes images.
    pub takes_images: bool,
    /// `model.toolCallsInText` (chat format).
    pub tool_calls_in_text: bool,
    /// Vertex AI's project and region, when the provider is `vertex-ai` with a project
    /// (`None`: express mode, or not Vertex AI).
    vertex_project: Option<(String, String)>,
    /// What it was chosen from, to choose another model the same way.
    from: Arc<(AgentOptions, Settings, Vars)>,
}

/// Without the key, which must not reach a log.
impl std::fmt::Debug for ModelChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelChoice")
            .field("provider", &self.provider)
            .field("protocol", &self.protocol)
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key_origin", &self.api_key_origin)
            .finish_non_exhaustive()
    }
}

/// Where variables are read: the process's environment, or in tests a fixed set (the
/// process's is shared by every test thread, so tests do not set it).
#[derive(Clone, Default)]
pub(crate) struct Vars(Option<Arc<std::collections::HashMap<String, String>>>);

impl Vars {
    /// Only these variables, none of the process's.
    #[cfg(test)]
    pub(crate) fn fixed(vars: &[(&str, &str)]) -> Vars {
        let map = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Vars(Some(Arc::new(map)))
    }

    /// A variable's value; an empty one counts as unset.
    fn get(&self, name: &str) -> Option<String> {
        let value = match &self.0 {
            None => std::env::var(name).ok(),
            Some(map) => map.get(name).cloned(),
        };
        value.filter(|v| !v.trim().is_empty())
    }
}

/// The model a session's options, environment and settings choose.
pub(crate) fn choose(
    options: &AgentOptions,
    settings: &Settings,
) -> Result<ModelChoice, ModelSetupError> {
    choose_with(options, settings, Vars::default())
}

/// [`choose`] reading the variables from `vars`.
pub(crate) fn choose_with(
    options: &AgentOptions,
    settings: &Settings,
    vars: Vars,
) -> Result<ModelChoice, ModelSetupError> {
    let (provider, provider_origin) = provider(options, settings, &vars);
    let protocol = Protocol::of_provider(&provider)
        .or_else(|| {
            settings
                .provider_protocol
                .get(&provider)
                .and_then(|p| Protocol::of_provider(p))
        })
        .ok_or_else(|| ModelSetupError::UnknownProvider {
            provider: provider.clone(),
            origin: provider_origin.clone(),
        })?;
    let entries = settings
        .model_providers
        .get(&provider)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let model = options
        .model
        .clone()
        .or_else(|| vars.get(protocol.model_variable()))
        .or_else(|| settings.model.name.clone())
        .or_else(|| entries.first().map(|e| e.id.clone()))
        .ok_or_else(|| ModelSetupError::NoModel(protocol.model_variable()))?;
    let entry = entries.iter().enumerate().find(|(_, e)| e.id == model);
    let mut choice = ModelChoice {
        provider: provider.clone(),
        protocol,
        model,
        base_url: String::new(),
        base_url_origin: String::new(),
        api_key: None,
        api_key_origin: String::new(),
        entry: entry.map(|(_, e)| e.clone()),
        takes_images: entry
            .and_then(|(_, e)| e.capabilities.vision)
            .unwrap_or(settings.model.vision || protocol == Protocol::Anthropic),
        tool_calls_in_text: settings.model.tool_calls_in_text.unwrap_or(true),
        vertex_project: None,
        from: Arc::new((options.clone(), settings.clone(), vars)),
    };
    let at = entry.map(|(i, _)| format!("modelProviders.{provider}[{i}]"));
    choice.set_base_url(options, at.as_deref());
    if protocol == Protocol::VertexAi {
        choice
            .set_vertex_credentials(at.as_deref())
            .map_err(ModelSetupError::Credentials)?;
    } else {
        choice
            .set_key(options, at.as_deref())
            .map_err(ModelSetupError::Credentials)?;
    }
    Ok(choice)
}

/// The provider and what chose it.
fn provider(options: &AgentOptions, settings: &Settings, vars: &Vars) -> (String, String) {
    if let Some(p) = &options.provider {
        return (p.clone(), "--provider".to_string());
    }
    if let Some(model) = &options.model
        && let Some((p, _)) = settings
            .model_providers
            .iter()
            .find(|(_, entries)| entries.iter().any(|e| &e.id == model))
    {
        return (
            p.clone(),
            format!("modelProviders (the entry of '{model}')"),
        );
    }
    let openai_set = options.openai_base_url.is_some()
        || options.openai_api_key.is_some()
        || vars.get("OPENAI_BASE_URL").is_some()
        || vars.get("OPENAI_API_KEY").is_some();
    if !openai_set {
        if vars.get("ANTHROPIC_API_KEY").is_some() {
            return (
                "anthropic".into(),
                "ANTHROPIC_API_KEY (set, and no OPENAI_* variable)".into(),
            );
        }
        if vertex::chosen_by(vars) {
            return (
                "vertex-ai".into(),
                "GOOGLE_GENAI_USE_VERTEXAI (set, and no OPENAI_* variable)".into(),
            );
        }
        if vars.get("GEMINI_API_KEY").is_some() || vars.get("GOOGLE_API_KEY").is_some() {
            return (
                "gemini".into(),
                "GEMINI_API_KEY or GOOGLE_API_KEY (set, and no OPENAI_* variable)".into(),
            );
        }
    }
    ("openai".into(), "the default".into())
}

impl ModelChoice {
    /// Flag, entry, variable, default. The chat format keeps the words it always used.
    fn set_base_url(&mut self, options: &AgentOptions, at: Option<&str>) {
        let chat = self.protocol == Protocol::OpenAiChat;
        let var = self.protocol.base_url_variable();
        let from_flag = options.openai_base_url.clone().filter(|_| {
            matches!(
                self.protocol,
                Protocol::OpenAiChat | Protocol::OpenAiResponses
            )
        });
        let from_entry = self.entry.as_ref().and_then(|e| e.base_url.clone());
        let (url, origin) = if let Some(url) = from_flag {
            (url, "--openai-base-url".to_string())
        } else if let (Some(url), Some(at)) = (from_entry, at) {
            (url, format!("{at}.baseUrl in the settings"))
        } else if let Some(url) = self.vars().get(var) {
            let origin = if chat {
                format!("{var} (or --openai-base-url)")
            } else {
                var.to_string()
            };
            (url, origin)
        } else {
            let origin = if chat {
                format!("the default (set {var} or --openai-base-url)")
            } else {
                format!("the default (set {var})")
            };
            (self.protocol.default_base_url().to_string(), origin)
        };
        self.base_url = url;
        self.base_url_origin = if self.provider == "openai" {
            origin
        } else {
            format!("{origin}, for provider '{}'", self.provider)
        };
    }

    /// Flag, the entry's `envKey` variable, the provider's variables.
    fn set_key(&mut self, options: &AgentOptions, at: Option<&str>) -> Result<(), String> {
        let openai = matches!(
            self.protocol,
            Protocol::OpenAiChat | Protocol::OpenAiResponses
        );
        if let Some(key) = options.openai_api_key.clone().filter(|_| openai) {
            self.api_key = Some(key);
            self.api_key_origin = "--openai-api-key".into();
            return Ok(());
        }
        if let (Some(var), Some(at)) = (self.entry.as_ref().and_then(|e| e.env_key.clone()), at) {
            self.api_key_origin = format!("{var} (named by {at}.envKey)");
            self.api_key = self.vars().get(&var);
            return match self.api_key {
                Some(_) => Ok(()),
                None => Err(format!(
                    "provider '{}', model '{}' at {}: the variable {var} that {at}.envKey names is not set",
                    self.provider, self.model, self.base_url
                )),
            };
        }
        let vars = self.protocol.key_variables();
        let found = vars
            .iter()
            .find_map(|v| self.vars().get(v).map(|k| (*v, k)));
        self.api_key_origin = vars.join(" or ");
        if let Some((var, key)) = found {
            self.api_key = Some(key);
            self.api_key_origin = var.to_string();
        }
        let default_url = self.base_url == self.protocol.default_base_url();
        if self.api_key.is_some() || !default_url {
            return Ok(());
        }
        // The public server answers nothing without a key: say what is missing now rather
        // than after a round of retries (and, offline, of failed name lookups).
        Err(
            if self.protocol == Protocol::OpenAiChat && options.openai_base_url.is_none() {
                format!(
                    "no model server is configured: OPENAI_BASE_URL is not set, so the default {} would be \
                 used, and it needs OPENAI_API_KEY, which is not set either. Set OPENAI_BASE_URL (or --openai-base-url) \
                 to your server (vLLM, llama.cpp, Ollama, DashScope, ...), or OPENAI_API_KEY for OpenAI; \
                 --model-replay FILE runs offline",
                    self.base_url
                )
            } else {
                format!(
                    "provider '{}' at {} needs a key: set {} (or give the model an envKey in modelProviders.{})",
                    self.provider,
                    self.base_url,
                    vars.join(" or "),
                    self.provider
                )
            },
        )
    }

    /// Another model (a sub-agent's): the provider of its `modelProviders` entry when
    /// it has one (this provider's first), else this provider and server.
    pub fn for_model(&self, model: &str) -> Result<ModelChoice, ModelSetupError> {
        let (options, settings, vars) = &*self.from;
        let listed_under = |p: &str| {
            settings
                .model_providers
                .get(p)
                .is_some_and(|entries| entries.iter().any(|e| e.id == model))
        };
        if !settings.model_providers.keys().any(|p| listed_under(p)) {
            return Ok(ModelChoice {
                model: model.to_string(),
                ..self.clone()
            });
        }
        let mut options = options.clone();
        options.model = Some(model.to_string());
        if !listed_under(&self.provider) {
            options.provider = None;
        }
        choose_with(&options, settings, vars.clone())
    }

    /// Where this choice reads variables.
    fn vars(&self) -> &Vars {
        &self.from.2
    }

    /// The client of this choice's protocol.
    pub fn build(&self) -> Result<Box<dyn Model>, ModelSetupError> {
        match self.protocol {
            Protocol::OpenAiChat => self.openai_chat(),
            Protocol::Anthropic => self.anthropic(),
            Protocol::Gemini => self.gemini(),
            Protocol::VertexAi => self.vertex_ai(),
            Protocol::OpenAiResponses => self.openai_responses(),
        }
    }

    fn openai_chat(&self) -> Result<Box<dyn Model>, ModelSetupError> {
        let mut config = OpenAiConfig::new(&self.base_url, &self.model);
        config.api_key = self.api_key.clone();
        config.base_url_origin = Some(self.base_url_origin.clone());
        config.takes_images = self.takes_images;
        config.tool_calls_in_text = self.tool_calls_in_text;
        // The usual flag and variable are named by the client itself; an entry's own
        // variable is not.
        if self.entry.as_ref().is_some_and(|e| e.env_key.is_some()) {
            config.api_key_origin = Some(self.api_key_origin.clone());
        }
        config.sampling = self.sampling();
        config.headers = self.headers();
        config.retry = self.retry_policy();
        if let Some(t) = self.timeout() {
            config.request_timeout = t;
        }
        let client = OpenAiClient::new(config).map_err(|e| self.failed(&e.to_string()))?;
        Ok(Box::new(client))
    }

    fn anthropic(&self) -> Result<Box<dyn Model>, ModelSetupError> {
        let mut config = AnthropicConfig::new(&self.base_url, &self.model);
        config.api_key = self.api_key.clone();
        config.base_url_origin = Some(self.base_url_origin.clone());
        config.api_key_origin = Some(self.api_key_origin.clone());
        config.takes_images = self.takes_images;
        config.sampling = self.sampling();
        config.headers = self.headers();
        config.retry = self.retry_policy();
        if let Some(t) = self.timeout() {
            config.request_timeout = t;
        }
        if let Some(cache) = self
            .entry
            .as_ref()
            .and_then(|e| e.generation_config.enable_cache_control)
        {
            config.cache_control = cache;
        }
        let max_tokens = config.sampling.max_tokens.unwrap_or(config.max_tokens);
        config.thinking_budget = self.thinking_budget(max_tokens)?;
        let client = AnthropicClient::new(config).map_err(|e| self.failed(&e.to_string()))?;
        Ok(Box::new(client))
    }

    /// Extended thinking's budget from `MAX_THINKING_TOKENS` (Claude Code's variable):
    /// unset or 0 leaves thinking off; the API wants 1024 or more, below `max_tokens`.
    fn thinking_budget(&self, max_tokens: u32) -> Result<Option<u32>, ModelSetupError> {
        let Some(text) = self.vars().get("MAX_THINKING_TOKENS") else {
            return Ok(None);
        };
        match text.trim().parse::<u32>() {
            Ok(0) => Ok(None),
            Ok(n) if (1024..max_tokens).contains(&n) => Ok(Some(n)),
            _ => Err(self.failed(&format!(
                "MAX_THINKING_TOKENS is '{text}': thinking needs a whole number from 1024 to below max_tokens ({max_tokens}; samplingParams.max_tokens of a modelProviders entry raises it), or 0 for no thinking"
            ))),
        }
    }

    /// The Gemini API (the key goes in `x-goog-api-key`).
    fn gemini(&self) -> Result<Box<dyn Model>, ModelSetupError> {
        self.gemini_client(GeminiConfig::new(&self.base_url, &self.model))
    }

    /// Vertex AI: with a project and region (a bearer token), or in express mode (a key).
    fn vertex_ai(&self) -> Result<Box<dyn Model>, ModelSetupError> {
        let mut config = match &self.vertex_project {
            Some((project, location)) => GeminiConfig::vertex(project, location, &self.model),
            None => GeminiConfig::vertex_express(&self.model),
        };
        config.base_url = self.base_url.clone();
        self.gemini_client(config)
    }

    /// A Gemini client of `config` with this choice's key, entry and limits.
    fn gemini_client(&self, mut config: GeminiConfig) -> Result<Box<dyn Model>, ModelSetupError> {
        config.api_key = self.api_key.clone();
        config.base_url_origin = Some(self.base_url_origin.clone());
        config.takes_images = self.takes_images;
        config.sampling = self.sampling();
        config.headers = self.headers();
        config.retry = self.retry_policy();
        if let Some(t) = self.timeout() {
            config.request_timeout = t;
        }
        let client = GeminiModel::new(config).map_err(|e| self.failed(&e.to_string()))?;
        Ok(Box::new(client))
    }

    fn openai_responses(&self) -> Result<Box<dyn Model>, ModelSetupError> {
        let mut config = ResponsesConfig::new(&self.base_url, &self.model);
        config.api_key = self.api_key.clone();
        config.base_url_origin = Some(self.base_url_origin.clone());
        config.takes_images = self.takes_images;
        config.sampling = self.sampling();
        config.headers = self.headers();
        config.retry = self.retry_policy();
        if let Some(t) = self.timeout() {
            config.request_timeout = t;
        }
        let client = ResponsesModel::new(config).map_err(|e| self.failed(&e.to_string()))?;
        Ok(Box::new(client))
    }

    fn failed(&self, why: &str) -> ModelSetupError {
        ModelSetupError::Client(format!(
            "provider '{}', model '{}' at {} (from {}): {why}",
            self.provider, self.model, self.base_url, self.base_url_origin
        ))
    }

    fn sampling(&self) -> Sampling {
        let Some(e) = &self.entry else {
            return Sampling::default();
        };
        let s = &e.generation_config.sampling_params;
        Sampling {
            temperature: s.temperature,
            top_p: s.top_p,
            top_k: s.top_k,
            max_tokens: s.max_tokens,
            presence_penalty: s.presence_penalty,
            frequency_penalty: s.frequency_penalty,
        }
    }

    fn headers(&self) -> Vec<(String, String)> {
        self.entry
            .as_ref()
            .map(|e| {
                e.generation_config
                    .custom_headers
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn timeout(&self) -> Option<Duration> {
        let ms = self.entry.as_ref()?.generation_config.timeout?;
        Some(Duration::from_millis(ms.max(1)))
    }

    fn retry_policy(&self) -> RetryPolicy {
        let mut policy = RetryPolicy::default();
        if let Some(g) = self.entry.as_ref().map(|e| &e.generation_config) {
            if let Some(n) = g.max_retries {
                policy.max_attempts = n.saturating_add(1);
            }
            if let Some(ms) = g.retry_initial_delay_ms {
                policy.base_delay = Duration::from_millis(ms);
            }
            if let Some(ms) = g.retry_max_delay_ms {
                policy.max_delay = Duration::from_millis(ms);
            }
        }
        policy
    }
}

#[cfg(test)]
mod tests;
