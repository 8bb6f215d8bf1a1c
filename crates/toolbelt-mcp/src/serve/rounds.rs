//! The 2026-07-28 revision: a client names its revision and capabilities in every
//! request, and the server sends it no request of its own. What the handshake revisions
//! ask with `roots/list` and `elicitation/create`, this one asks in the answer to the
//! call (multi round-trip requests): an `input_required` result carrying the requests,
//! which the client fulfils and sends back with the call again.
//!
//! - **Roots**: a `tools/call` of a client that offers roots is answered first with a
//!   `roots/list` input request ([`ROOTS_KEY`]); the call sent again with the client's
//!   roots runs in that workspace. Every call asks again, because this revision has no
//!   notification that the roots changed, and a workspace that shrank must not be served
//!   from a stale list. `tools/list` cannot ask: it lists the workspace the connection's
//!   last call ran in, else the default one.
//! - **Confirmation**: the call runs as it does in every other era, one
//!   `Scheduler::run`, in a task of its own; its approver ([`RoundsApprover`]) hands the
//!   question to the request that waits for the call, which answers `input_required`
//!   with the form ([`CONFIRM_KEY`]) and an opaque `requestState`: a random handle to
//!   the call, which waits in [`Parked`] for the answer. The retry with that handle
//!   gives the answer to the waiting call, and its request then waits for the result
//!   (or the next question). So the call's `prepare` runs once, the question is the one
//!   answered (the call is not re-planned between rounds), and a retry cannot approve
//!   anything but the call it names: the handle is a secret of 122 random bits, and a
//!   retry with other arguments declines the waiting call and starts its own.
//! - **Unknown handles** (a restarted server, an expired question): the call starts
//!   again and asks again; nothing runs on a stale answer.
//! - **Limits**: a question waits [`ANSWER_TIMEOUT`] (then it is a "no", as in the other
//!   eras), at most [`MAX_PARKED`] wait in a process (beyond that the call is declined
//!   with a warning), and a question gives the call's turn for file changes back while
//!   it waits.
//! - **HTTP**: every request of this revision is a connection of its own (no sessions),
//!   so the waiting calls are the process's, not a connection's; no "always" answer is
//!   offered there (there is no connection to remember it for), and a request's end is
//!   not the end of the background commands its call started.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ElicitRequest, ElicitRequestParams,
    ElicitResult, ElicitationAction, ErrorData, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, JsonObject, ListRootsRequest, ListRootsResult, LoggingLevel,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use toolbelt_core::ConfirmationOutcome;
use toolbelt_engine::{scheduler::Approval, scheduler::ApprovalRequest, scheduler::Approver};

use super::approve::{ANSWER_TIMEOUT, Remembered, form};
use super::progress::ProgressWatch;
use super::turns::TurnWhileAsking;
use super::{Active, Asking, Connection, Opening, Roots};

/// The key of the `roots/list` input request.
pub(super) const ROOTS_KEY: &str = "toolbelt/roots";

/// The key of the confirmation's `elicitation/create` input request.
pub(super) const CONFIRM_KEY: &str = "toolbelt/confirm";

/// The most calls of a process that wait for an answer at once.
pub(super) const MAX_PARKED: usize = 256;

/// Whether `context` is a request of the 2026-07-28 revision (or a later one without the
/// handshake). Such a request over HTTP makes its connection one per request.
pub(super) fn modern(connection: &Connection, context: &RequestContext<RoleServer>) -> bool {
    let modern = context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize());
    if modern && over_http(context) {
        connection.per_request.store(true, Ordering::SeqCst);
    }
    modern
}

/// The request came over HTTP (rmcp gives its handlers the request's head).
fn over_http(context: &RequestContext<RoleServer>) -> bool {
    context
        .extensions
        .get::<hyper::http::request::Parts>()
        .is_some()
}

/// What a call running in rounds tells the request that waits for it.
enum Step {
    /// The call needs its person's answer (`None`: no answer, a "no").
    Ask {
        form: ElicitRequestParams,
        answer: oneshot::Sender<Option<ElicitResult>>,
    },
    /// The call's result.
    Done(Result<CallToolResult, ErrorData>),
}

/// Where each call of a connection that asks in rounds sends its question, by call id.
#[derive(Default)]
pub(super) struct AskRoutes {
    routes: Mutex<HashMap<String, mpsc::Sender<Step>>>,
}

impl AskRoutes {
    fn add(&self, call_id: &str, steps: mpsc::Sender<Step>) {
        if let Ok(mut routes) = self.routes.lock() {
            routes.insert(call_id.to_string(), steps);
        }
    }

    fn remove(&self, call_id: &str) {
        if let Ok(mut routes) = self.routes.lock() {
            routes.remove(call_id);
        }
    }

    fn get(&self, call_id: &str) -> Option<mpsc::Sender<Step>> {
        self.routes.lock().ok()?.get(call_id).cloned()
    }
}

/// Asks the client's person in the answer to the call: the question goes to the request
/// waiting for the call, the answer comes with the client's retry.
pub(super) struct RoundsApprover {
    pub routes: Arc<AskRoutes>,
    pub remembered: Arc<Remembered>,
    /// The call's turn for file changes, given back while the question is open.
    pub turn: TurnWhileAsking,
    /// Offer "always" (the connection outlives the call).
    pub offer_always: bool,
}

impl Approver for RoundsApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let route = self.routes.get(&request.call_id);
            let (Some(route), Some(form)) = (route, form(request, self.offer_always)) else {
                return ConfirmationOutcome::Cancel.into();
            };
            let (answer, answered) = oneshot::channel();
            if route.send(Step::Ask { form, answer }).await.is_err() {
                return ConfirmationOutcome::Cancel.into();
            }
            let waiting = async {
                tokio::time::timeout(ANSWER_TIMEOUT, answered)
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .flatten()
            };
            let accepted = |answer: &Option<ElicitResult>| {
                answer
                    .as_ref()
                    .is_some_and(|a| a.action == ElicitationAction::Accept)
            };
            let answer = self.turn.around(&request.call_id, waiting, accepted).await;
            self.remembered.outcome(request, answer.as_ref()).into()
        })
    }
}

/// A call that runs across requests, and what its waiting request needs of it.
struct Running {
    call_id: String,
    name: String,
    arguments: JsonObject,
    steps: mpsc::Receiver<Step>,
    /// Ends the call (its waiting request was cancelled).
    cancel: CancellationToken,
    /// The connection's progress notifications: each round reports on its own request.
    progress: ProgressWatch,
}

/// A call waiting for its person's answer until the client sends it again.
struct Waiting {
    running: Running,
    answer: oneshot::Sender<Option<ElicitResult>>,
    since: Instant,
}

/// The calls of a process that wait for an answer, by the `requestState` their client
/// was given.
#[derive(Default)]
pub(super) struct Parked {
    waiting: Mutex<HashMap<String, Box<Waiting>>>,
}

impl Parked {
    /// Keeps `waiting` under a new handle; gives it back when [`MAX_PARKED`] already wait.
    fn park(&self, waiting: Box<Waiting>) -> Result<String, Box<Waiting>> {
        let Ok(mut parked) = self.waiting.lock() else {
            return Err(waiting);
        };
        // A question not answered in time is already a "no" (its call gave up on it).
        parked.retain(|_, w| w.since.elapsed() < ANSWER_TIMEOUT && !w.answer.is_closed());
        if parked.len() >= MAX_PARKED {
            return Err(waiting);
        }
        let handle = uuid::Uuid::new_v4().simple().to_string();
        parked.insert(handle.clone(), waiting);
        Ok(handle)
    }

    /// The call waiting under `handle`, taken out.
    fn take(&self, handle: &str) -> Option<Box<Waiting>> {
        self.waiting.lock().ok()?.remove(handle)
    }

    /// How many calls wait (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.waiting.lock().map_or(0, |w| w.len())
    }
}

/// `tools/call` of the 2026-07-28 revision: the answer to a question asked, the roots
/// asked for, or a new call; its result, or the next question.
pub(super) async fn call(
    connection: &Arc<Connection>,
    request: CallToolRequestParams,
    context: RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    let arguments = request.arguments.unwrap_or_default();
    let responses = request.input_responses.unwrap_or_default();
    if let Some(handle) = request.request_state.as_deref()
        && let Some(waiting) = connection.options.parked.take(handle)
    {
        if waiting.running.name == request.name && waiting.running.arguments == arguments {
            let _ = waiting.answer.send(answer_in(&responses, CONFIRM_KEY));
            return follow(connection, waiting.running, &context).await;
        }
        // The question was about another call: that one is not allowed, and this one
        // starts on its own (and asks its own question).
        let _ = waiting.answer.send(None);
    }
    let roots = match roots_in(connection, &responses, &context).await {
        Ok(roots) => roots,
        Err(ask) => return Ok(ask.into()),
    };
    let opening = connection.round_opening(&context, roots);
    let active = connection.active(&context.peer, opening).await?;
    let running = start(connection, active, request.name.into_owned(), arguments);
    follow(connection, running, &context).await
}

/// The client's roots for this call: none asked (it offers none, or the server is
/// stateless), the ones it sent, or the input request that asks for them.
async fn roots_in(
    connection: &Connection,
    responses: &InputResponses,
    context: &RequestContext<RoleServer>,
) -> Result<Option<Vec<PathBuf>>, InputRequiredResult> {
    let offered = !connection.options.stateless
        && context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.roots.is_some());
    if !offered {
        return Ok(None);
    }
    let Some(answer) = responses.get(ROOTS_KEY) else {
        let mut requests = InputRequests::new();
        requests.insert(
            ROOTS_KEY.to_string(),
            InputRequest::ListRoots(ListRootsRequest::default()),
        );
        return Err(InputRequiredResult::from_input_requests(requests));
    };
    match serde_json::from_value::<ListRootsResult>(answer.clone()) {
        Ok(listed) => Ok(connection.root_dirs(&context.peer, listed.roots).await),
        Err(e) => {
            let message = format!(
                "the client's answer to roots/list is not a list of roots ({e}); the workspace is the server's directory"
            );
            connection
                .log(&context.peer, LoggingLevel::Warning, &message)
                .await;
            Ok(None)
        }
    }
}

/// The client's answer to the input request `key`, as an elicitation result (`None`: no
/// answer, or not one: the call does not run).
fn answer_in(responses: &InputResponses, key: &str) -> Option<ElicitResult> {
    serde_json::from_value(responses.get(key)?.clone()).ok()
}

/// Starts the call in a task of its own, so that it can outlive the request that
/// started it while it waits for an answer.
fn start(
    connection: &Arc<Connection>,
    active: Arc<Active>,
    name: String,
    arguments: JsonObject,
) -> Running {
    let call_id = connection.next_call_id();
    let (steps, received) = mpsc::channel(1);
    connection.routes.add(&call_id, steps.clone());
    let cancel = CancellationToken::new();
    let task = {
        let connection = connection.clone();
        let call_id = call_id.clone();
        let cancel = cancel.clone();
        let name = name.clone();
        let arguments = Value::Object(arguments.clone());
        async move {
            let (result, _) = connection
                .run_call(&active, &call_id, &name, &arguments, &cancel)
                .await;
            connection.routes.remove(&call_id);
            let _ = steps.send(Step::Done(result)).await;
        }
    };
    tokio::spawn(task);
    Running {
        call_id,
        name,
        arguments,
        steps: received,
        cancel,
        progress: connection.progress.clone(),
    }
}

/// Waits for the call's next step: its result, or a question, which parks the call and
/// becomes this request's `input_required` answer.
async fn follow(
    connection: &Connection,
    mut running: Running,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResponse, ErrorData> {
    match context.meta.get_progress_token() {
        Some(token) => running
            .progress
            .watch(&running.call_id, context.peer.clone(), token),
        None => running.progress.unwatch(&running.call_id),
    }
    loop {
        let step = tokio::select! {
            step = running.steps.recv() => step,
            () = context.ct.cancelled() => {
                // The client gave up on the call: it ends, and its processes with it.
                running.cancel.cancel();
                running.progress.unwatch(&running.call_id);
                return Err(ErrorData::internal_error("the call was cancelled", None));
            }
        };
        running.progress.unwatch(&running.call_id);
        let (form, answer) = match step {
            Some(Step::Done(result)) => return result.map(CallToolResponse::from),
            Some(Step::Ask { form, answer }) => (form, answer),
            None => return Err(ErrorData::internal_error("the call gave no result", None)),
        };
        let waiting = Box::new(Waiting {
            running,
            answer,
            since: Instant::now(),
        });
        match connection.options.parked.park(waiting) {
            Ok(handle) => {
                let mut requests = InputRequests::new();
                requests.insert(
                    CONFIRM_KEY.to_string(),
                    InputRequest::Elicitation(ElicitRequest::new(form)),
                );
                return Ok(InputRequiredResult::new(Some(requests), Some(handle)).into());
            }
            Err(waiting) => {
                tracing::warn!(
                    "{MAX_PARKED} calls already wait for an answer; {} is not allowed",
                    waiting.running.name
                );
                let _ = waiting.answer.send(None);
                running = waiting.running;
            }
        }
    }
}

impl Connection {
    /// How the tools of a call of the 2026-07-28 revision are opened: in `roots` (the
    /// default workspace when `None`), asking in rounds when the request says the
    /// client can answer a form.
    fn round_opening(
        &self,
        context: &RequestContext<RoleServer>,
        roots: Option<Vec<PathBuf>>,
    ) -> Opening {
        let asks = !self.options.stateless
            && context
                .client_capabilities()
                .is_some_and(|capabilities| capabilities.elicitation.is_some());
        let asking = if asks {
            Asking::Rounds {
                always: !over_http(context),
            }
        } else {
            Asking::Nobody
        };
        Opening {
            roots: Roots::Given(roots),
            asking,
        }
    }

    /// How `tools/list` of the 2026-07-28 revision opens the tools: in the workspace of
    /// the connection's last call (it cannot ask for roots), else the default one.
    pub(super) async fn listing_opening(&self, context: &RequestContext<RoleServer>) -> Opening {
        let roots = match self.active.lock().await.as_ref().map(|a| &a.opening.roots) {
            Some(Roots::Given(roots)) => roots.clone(),
            _ => None,
        };
        self.round_opening(context, roots)
    }
}

#[cfg(test)]
mod tests;
