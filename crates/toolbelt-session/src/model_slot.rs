//! The session's model behind a slot, so a stream-JSON client can switch models
//! (`set_model`) between turns without rebuilding the agent.

use std::sync::{Arc, PoisonError, RwLock};

use tokio_util::sync::CancellationToken;
use toolbelt_core::BoxFuture;
use toolbelt_model::{DeltaSink, Model, ModelError, ModelRequest, ModelTurn};

/// A model that can be replaced while the agent holds it.
pub struct ModelSlot {
    /// The name at start-up: what the session file records. The current name is the
    /// emitter's.
    name: String,
    current: RwLock<Arc<dyn Model>>,
}

impl ModelSlot {
    /// A slot holding `model`.
    pub fn new(model: Arc<dyn Model>) -> Self {
        ModelSlot {
            name: model.name().to_string(),
            current: RwLock::new(model),
        }
    }

    fn current(&self) -> Arc<dyn Model> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The name of the model requests go to now (after any switch).
    pub fn current_name(&self) -> String {
        self.current().name().to_string()
    }

    /// Requests from now on go to `model`; a request under way keeps the old one.
    pub fn replace(&self, model: Arc<dyn Model>) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = model;
    }
}

impl Model for ModelSlot {
    fn name(&self) -> &str {
        &self.name
    }

    fn takes_images(&self) -> bool {
        self.current().takes_images()
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>> {
        let model = self.current();
        Box::pin(async move { model.complete(request, cancel).await })
    }

    fn complete_streaming<'a>(
        &'a self,
        request: &'a ModelRequest,
        cancel: &'a CancellationToken,
        on_delta: DeltaSink<'a>,
    ) -> BoxFuture<'a, Result<ModelTurn, ModelError>> {
        let model = self.current();
        Box::pin(async move { model.complete_streaming(request, cancel, on_delta).await })
    }
}
