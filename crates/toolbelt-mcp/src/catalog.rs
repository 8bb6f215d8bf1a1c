//! What a server offers besides tools: its resources (and resource templates) and its
//! prompts, as far as its `initialize` (or `server/discover`) answer advertises them.
//!
//! At connect (and after every `list_changed` of tools, resources or prompts) the
//! connection counts the resources and templates and keeps the prompts with their
//! arguments: `toolbelt mcp list` shows the counts, the session turns the prompts into
//! slash commands, and the resource tools are offered only when some server advertises
//! resources. A server whose resource or prompt listing fails still serves its tools:
//! the failure is a warning and the count is zero. Reads and `prompts/get` go to the
//! server each time (rmcp caches what a server marks cacheable); a 2026-07-28 server that
//! needs input first gets it as for a tool call (`connection::call`).
//!
//! A resource read from a server that offers subscriptions is subscribed to, once per
//! listing (a server started again has forgotten): its `notifications/resources/updated`
//! reach the model as a reminder at its next request ([`crate::McpServers::take_resource_updates`]).

use std::sync::{Arc, PoisonError};

use rmcp::model::{
    ErrorData, GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequiredResult,
    InputResponses, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceTemplate,
};
use rmcp::{Peer, RoleClient, ServiceError};
use tokio_util::sync::CancellationToken;
use toolbelt_config::redact::redact;

use crate::connection::{
    MAX_INPUT_ROUNDS, McpConnection, Unavailable, human_duration, service_error_text,
};

/// How long counting a server's resources and listing its prompts may take at connect.
const CATALOG_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What the last listing of a server found besides its tools.
#[derive(Debug, Clone, Default)]
pub(crate) struct Catalog {
    pub(crate) offers_resources: bool,
    pub(crate) offers_prompts: bool,
    /// The URIs of the listed resources (for `@server:uri` completion).
    pub(crate) resources: Vec<String>,
    pub(crate) templates: usize,
    pub(crate) prompts: Vec<McpPrompt>,
    /// The server offers `resources/subscribe`.
    pub(crate) subscribes: bool,
    /// The server offers `completion/complete`.
    pub(crate) completes: bool,
    /// The URIs subscribed to since this listing.
    pub(crate) subscribed: std::collections::HashSet<String>,
}

/// One prompt of a server, as `prompts/list` described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPrompt {
    /// The alias of its server.
    pub server: String,
    /// Its name on the server.
    pub name: String,
    /// What the server says it does (may be empty).
    pub description: String,
    /// Its arguments, in the server's order.
    pub arguments: Vec<McpPromptArgument>,
}

impl McpPrompt {
    /// The command that runs it: `server:prompt` (typed with a leading `/`).
    pub fn command(&self) -> String {
        format!("{}:{}", self.server, self.name)
    }

    /// Its arguments as typed: `city=... [state=...]` (optional ones in brackets).
    pub fn argument_hint(&self) -> String {
        let words: Vec<String> = self
            .arguments
            .iter()
            .map(|a| {
                if a.required {
                    format!("{}=...", a.name)
                } else {
                    format!("[{}=...]", a.name)
                }
            })
            .collect();
        words.join(" ")
    }
}

/// One argument of an [`McpPrompt`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpPromptArgument {
    /// The argument's name.
    pub name: String,
    /// What the server says about it (may be empty).
    pub description: String,
    /// Whether `prompts/get` needs it.
    pub required: bool,
}

/// One page of `resources/list`, with the templates when it is the first page.
pub(crate) struct ResourcePage {
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
    pub(crate) next_cursor: Option<String>,
}

impl McpConnection {
    /// Whether the server advertised resources in its `initialize` answer.
    pub fn offers_resources(&self) -> bool {
        self.catalog().offers_resources
    }

    /// The server's prompts as last listed (empty when it offers none).
    pub fn prompts(&self) -> Vec<McpPrompt> {
        self.catalog().prompts
    }

    /// The URIs of its resources as last listed.
    pub fn resource_uris(&self) -> Vec<String> {
        self.catalog().resources
    }

    /// `(resources, resource templates, prompts)` as last counted.
    pub fn catalog_counts(&self) -> (usize, usize, usize) {
        let c = self.catalog();
        (c.resources.len(), c.templates, c.prompts.len())
    }

    pub(crate) fn catalog(&self) -> Catalog {
        self.catalog
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Counts the resources and templates and lists the prompts the server advertises,
    /// for at most [`CATALOG_WAIT`]: a server with a slow or huge listing still serves
    /// its tools and resources, its counts are then zero. Never fails: what cannot be
    /// listed is a warning and counts as nothing.
    pub(crate) async fn list_catalog(&self, peer: &Peer<RoleClient>) {
        let capabilities = peer.peer_info().map(|info| info.capabilities.clone());
        let offers_resources = capabilities.as_ref().is_some_and(|c| c.resources.is_some());
        let offers_prompts = capabilities.as_ref().is_some_and(|c| c.prompts.is_some());
        let listing = self.catalog_lists(peer, offers_resources, offers_prompts);
        let mut catalog = match tokio::time::timeout(CATALOG_WAIT, listing).await {
            Ok(catalog) => catalog,
            Err(_) => {
                tracing::warn!(
                    "MCP server \"{}\": listing its resources and prompts took longer than {}; they are not counted",
                    self.alias(),
                    human_duration(CATALOG_WAIT)
                );
                Catalog::default()
            }
        };
        catalog.offers_resources = offers_resources;
        catalog.offers_prompts = offers_prompts;
        catalog.completes = capabilities
            .as_ref()
            .is_some_and(|c| c.completions.is_some());
        catalog.subscribes = capabilities
            .as_ref()
            .and_then(|c| c.resources.as_ref())
            .and_then(|r| r.subscribe)
            .unwrap_or(false);
        *self.catalog.lock().unwrap_or_else(PoisonError::into_inner) = catalog;
    }

    async fn catalog_lists(
        &self,
        peer: &Peer<RoleClient>,
        offers_resources: bool,
        offers_prompts: bool,
    ) -> Catalog {
        let mut catalog = Catalog::default();
        let alias = self.alias();
        if offers_resources {
            match peer.list_all_resources().await {
                Ok(list) => catalog.resources = list.into_iter().map(|r| r.uri).collect(),
                Err(e) => warn_listing(alias, "resources/list", &e),
            }
            match peer.list_all_resource_templates().await {
                Ok(list) => catalog.templates = list.len(),
                Err(e) => warn_listing(alias, "resources/templates/list", &e),
            }
        }
        if offers_prompts {
            match peer.list_all_prompts().await {
                Ok(list) => catalog.prompts = list.into_iter().map(|p| prompt(alias, p)).collect(),
                Err(e) => warn_listing(alias, "prompts/list", &e),
            }
        }
        catalog
    }

    /// One page of the server's resources; the first page (`cursor` `None`) also has
    /// every resource template.
    pub(crate) async fn resource_page(
        self: &Arc<Self>,
        cursor: Option<String>,
        cancel: &CancellationToken,
    ) -> Result<ResourcePage, String> {
        let first = cursor.is_none();
        let params = PaginatedRequestParams::default().with_cursor(cursor);
        self.ask("resources/list", cancel, |peer| async move {
            let page = peer.list_resources(Some(params)).await?;
            let templates = if first {
                peer.list_all_resource_templates().await?
            } else {
                Vec::new()
            };
            Ok(ResourcePage {
                resources: page.resources,
                templates,
                next_cursor: page.next_cursor,
            })
        })
        .await
    }

    /// `resources/read` of `uri`.
    pub(crate) async fn read_resource(
        self: &Arc<Self>,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<ReadResourceResult, String> {
        let params = ReadResourceRequestParams::new(uri);
        let this = self.clone();
        let read = self
            .ask("resources/read", cancel, |peer| async move {
                let once = |params: ReadResourceRequestParams| {
                    let peer = peer.clone();
                    async move {
                        match peer.read_resource_once(params).await? {
                            ReadResourceResponse::InputRequired(input) => Ok(Err(input)),
                            ReadResourceResponse::Complete(result) => Ok(Ok(result)),
                            _ => Err(ServiceError::UnexpectedResponse),
                        }
                    }
                };
                let answered = |params: &mut ReadResourceRequestParams, (responses, state)| {
                    params.input_responses = responses;
                    params.request_state = state;
                };
                this.input_rounds(&peer, params, once, answered).await
            })
            .await?;
        self.subscribe(uri, cancel).await;
        Ok(read)
    }

    /// `resources/subscribe` of `uri`, once, when the server offers it; a failure is
    /// a warning (the read itself worked).
    async fn subscribe(self: &Arc<Self>, uri: &str, cancel: &CancellationToken) {
        let first = {
            let mut catalog = self.catalog.lock().unwrap_or_else(PoisonError::into_inner);
            catalog.subscribes && catalog.subscribed.insert(uri.to_string())
        };
        if !first {
            return;
        }
        // Before the request: the server may say the resource changed at once.
        self.events().subscribing(uri);
        let params = rmcp::model::SubscribeRequestParams::new(uri);
        #[allow(deprecated)]
        let subscribed = self
            .ask("resources/subscribe", cancel, |peer| async move {
                peer.subscribe(params).await
            })
            .await;
        if let Err(why) = subscribed {
            tracing::warn!("{why}");
            self.events().unsubscribed(uri);
            let mut catalog = self.catalog.lock().unwrap_or_else(PoisonError::into_inner);
            catalog.subscribed.remove(uri);
        }
    }

    /// `completion/complete` of argument `argument` of prompt `prompt`, whose value is
    /// typed up to `value`, with the other arguments typed so far; nothing when the
    /// server offers no completions.
    pub(crate) async fn complete_prompt_argument(
        self: &Arc<Self>,
        prompt: &str,
        argument: &str,
        value: &str,
        typed: std::collections::HashMap<String, String>,
    ) -> Result<Vec<String>, String> {
        if !self.catalog().completes {
            return Ok(Vec::new());
        }
        let mut context = rmcp::model::CompletionContext::new();
        context.arguments = (!typed.is_empty()).then_some(typed);
        let (prompt, argument, value) =
            (prompt.to_string(), argument.to_string(), value.to_string());
        let cancel = CancellationToken::new();
        self.ask("completion/complete", &cancel, |peer| async move {
            peer.complete_prompt_argument(prompt, argument, value, Some(context))
                .await
                .map(|info| info.values)
        })
        .await
    }

    /// `prompts/get` of `name` with `arguments`.
    pub(crate) async fn get_prompt(
        self: &Arc<Self>,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<GetPromptResult, String> {
        let params = GetPromptRequestParams::new(name).with_arguments(arguments);
        let cancel = CancellationToken::new();
        let this = self.clone();
        self.ask("prompts/get", &cancel, |peer| async move {
            let once = |params: GetPromptRequestParams| {
                let peer = peer.clone();
                async move {
                    match peer.get_prompt_once(params).await? {
                        GetPromptResponse::InputRequired(input) => Ok(Err(input)),
                        GetPromptResponse::Complete(result) => Ok(Ok(result)),
                        _ => Err(ServiceError::UnexpectedResponse),
                    }
                }
            };
            let answered = |params: &mut GetPromptRequestParams, (responses, state)| {
                params.input_responses = responses;
                params.request_state = state;
            };
            this.input_rounds(&peer, params, once, answered).await
        })
        .await
    }

    /// Sends a request (`once`) again with the answers to what the server asked for
    /// (`answered` puts them in the request), until the server answers it or has asked
    /// [`MAX_INPUT_ROUNDS`] times: a 2026-07-28 server's `InputRequiredResult`, as for a
    /// tool call (`connection::call`).
    async fn input_rounds<P: Clone, T, Fut>(
        &self,
        peer: &Peer<RoleClient>,
        mut params: P,
        once: impl Fn(P) -> Fut,
        answered: impl Fn(&mut P, (Option<InputResponses>, Option<String>)),
    ) -> Result<T, ServiceError>
    where
        Fut: std::future::Future<Output = Result<Result<T, InputRequiredResult>, ServiceError>>,
    {
        for round in 0..MAX_INPUT_ROUNDS {
            let input = match once(params.clone()).await? {
                Ok(result) => return Ok(result),
                Err(input) => input,
            };
            let answers = (self.answer_input(peer, input, round).await).map_err(input_failed)?;
            answered(&mut params, answers);
        }
        Err(ServiceError::InputRequiredRoundsExceeded {
            max_rounds: MAX_INPUT_ROUNDS as usize,
        })
    }

    /// Runs `request` on the live peer within the call timeout, or until `cancel`;
    /// every failure is one masked sentence naming the server and the method.
    async fn ask<T, F, Fut>(
        self: &Arc<Self>,
        method: &str,
        cancel: &CancellationToken,
        request: F,
    ) -> Result<T, String>
    where
        F: FnOnce(Peer<RoleClient>) -> Fut,
        Fut: std::future::Future<Output = Result<T, rmcp::ServiceError>>,
    {
        let alias = self.alias().to_string();
        let peer = match self.peer(cancel).await {
            Ok(peer) => peer,
            Err(Unavailable::Cancelled) => return Err(format!("{method} was cancelled")),
            Err(Unavailable::Failed(why)) => {
                return Err(redact(&format!(
                    "MCP server \"{alias}\" is not available: {why}"
                )));
            }
        };
        let timeout = self.config().call_timeout;
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(timeout, request(peer)) => outcome,
            _ = cancel.cancelled() => return Err(format!("{method} was cancelled")),
        };
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(redact(&format!(
                "MCP server \"{alias}\": {method} failed: {}",
                service_error_text(&e)
            ))),
            Err(_) => Err(format!(
                "MCP server \"{alias}\": {method} got no answer within {} (the server's `timeout` setting)",
                human_duration(timeout)
            )),
        }
    }
}

fn prompt(alias: &str, p: rmcp::model::Prompt) -> McpPrompt {
    McpPrompt {
        server: alias.to_string(),
        name: p.name,
        description: p.description.unwrap_or_default(),
        arguments: (p.arguments.unwrap_or_default().into_iter())
            .map(|a| McpPromptArgument {
                name: a.name,
                description: a.description.unwrap_or_default(),
                required: a.required.unwrap_or(false),
            })
            .collect(),
    }
}

/// Input a 2026-07-28 server asked for that could not be given, as the request's error.
fn input_failed(why: String) -> ServiceError {
    ServiceError::McpError(ErrorData::internal_error(
        format!("the server asked for input that could not be given: {why}"),
        None,
    ))
}

fn warn_listing(alias: &str, method: &str, e: &rmcp::ServiceError) {
    tracing::warn!(
        "MCP server \"{alias}\": {method} failed: {}",
        redact(&service_error_text(e))
    );
}
