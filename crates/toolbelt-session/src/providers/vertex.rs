//! Vertex AI chosen from the variables Gemini CLI and Qwen Code users already have:
//! `GOOGLE_GENAI_USE_VERTEXAI` picks it, and then either a project
//! (`GOOGLE_CLOUD_PROJECT`, `GOOGLE_CLOUD_LOCATION`) or express mode (`GOOGLE_API_KEY`, a
//! Vertex AI API key).
//!
//! Those tools sign in to a project with application default credentials, which means
//! running Google's OAuth flows; toolbelt does not, so a project takes an access token
//! from `GOOGLE_CLOUD_ACCESS_TOKEN` (what `gcloud auth print-access-token` prints). A
//! complete project setup wins over a key; missing pieces are named in the error.

use super::{ModelChoice, Vars};

/// The variable holding an OAuth access token for a Vertex AI project.
const TOKEN_VAR: &str = "GOOGLE_CLOUD_ACCESS_TOKEN";

/// Whether `GOOGLE_GENAI_USE_VERTEXAI` asks for Vertex AI (`true` or `1`, as the Gen AI
/// SDKs read it).
pub(super) fn chosen_by(vars: &Vars) -> bool {
    vars.get("GOOGLE_GENAI_USE_VERTEXAI")
        .is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1"))
}

impl ModelChoice {
    /// A project, region and token, else an express-mode key (the entry's `envKey`
    /// variable, else `GOOGLE_API_KEY`), else an error naming what is not set.
    pub(super) fn set_vertex_credentials(&mut self, at: Option<&str>) -> Result<(), String> {
        let vars = self.vars().clone();
        let project = vars.get("GOOGLE_CLOUD_PROJECT");
        let location = vars.get("GOOGLE_CLOUD_LOCATION");
        let token = vars.get(TOKEN_VAR);
        if let (Some(project), Some(location), Some(token)) = (&project, &location, &token) {
            self.api_key = Some(token.clone());
            self.api_key_origin = TOKEN_VAR.into();
            // The region's own host, unless a flag, entry or variable chose the server.
            if self.base_url_origin.starts_with("the default") && location != "global" {
                self.base_url = format!("https://{location}-aiplatform.googleapis.com");
            }
            self.vertex_project = Some((project.clone(), location.clone()));
            return Ok(());
        }
        let key_var = match (self.entry.as_ref().and_then(|e| e.env_key.clone()), at) {
            (Some(var), Some(at)) => {
                self.api_key_origin = format!("{var} (named by {at}.envKey)");
                var
            }
            _ => {
                self.api_key_origin = "GOOGLE_API_KEY".into();
                "GOOGLE_API_KEY".into()
            }
        };
        if let Some(key) = vars.get(&key_var) {
            self.api_key = Some(key);
            return Ok(());
        }
        let unset: Vec<&str> = [
            ("GOOGLE_CLOUD_PROJECT", project.is_none()),
            ("GOOGLE_CLOUD_LOCATION", location.is_none()),
            (TOKEN_VAR, token.is_none()),
            (key_var.as_str(), true),
        ]
        .into_iter()
        .filter_map(|(name, missing)| missing.then_some(name))
        .collect();
        Err(format!(
            "provider '{}', model '{}' at {}: Vertex AI needs either a project \
             (GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION such as us-central1 or global, and \
             {TOKEN_VAR}, an OAuth access token such as `gcloud auth print-access-token` prints; \
             toolbelt does not read application default credentials) or {key_var}, a Vertex AI \
             API key for express mode. Not set: {}",
            self.provider,
            self.model,
            self.base_url,
            unset.join(", ")
        ))
    }
}
