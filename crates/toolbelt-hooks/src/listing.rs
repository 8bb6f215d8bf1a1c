//! `toolbelt hooks list [--json]`: every configured hook with its event, matcher, type,
//! what it runs, its file, and whether it runs here and why not (an untrusted folder,
//! `disableAllHooks`, a hook type or event toolbelt does not run, a bad entry).
//!
//! Read from the settings alone, not from a session: a session does not start while an
//! entry is bad, and this listing is where the person sees which one.

use std::path::PathBuf;

use serde_json::{Value, json};
use toolbelt_config::settings::Settings;

use crate::config::{ConfigError, HookOrigin, Skipped, parse_layer};

/// One configured hook.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedHook {
    /// Its event (`PreToolUse`).
    pub event: String,
    /// Its group's matcher, as written (`""`: every target).
    pub matcher: String,
    /// Whether its group is sequential.
    pub sequential: bool,
    /// `command` or `http`.
    pub kind: &'static str,
    /// The command line or the URL.
    pub runs: String,
    /// Its `name`.
    pub name: Option<String>,
    /// Its time limit, in seconds.
    pub timeout_seconds: f64,
    /// The file it comes from.
    pub file: PathBuf,
    /// Whether the file is Claude Code's.
    pub claude: bool,
    /// Where it is in the file (`hooks.PreToolUse[0].hooks[1]`).
    pub key: String,
    /// Why it does not run here; `None`: it runs.
    pub not_running: Option<String>,
}

/// Every configured hook, and what is wrong or skipped.
#[derive(Debug, Clone, Default)]
pub struct HookListing {
    /// The hooks, in configuration order.
    pub hooks: Vec<ListedHook>,
    /// Entries of other tools' events and types, not run here.
    pub skipped: Vec<Skipped>,
    /// Bad entries in files whose hooks would run: a session does not start with one.
    pub errors: Vec<ConfigError>,
    /// Bad entries in files whose hooks do not run (an untrusted folder's).
    pub ignored_errors: Vec<ConfigError>,
    /// The file whose `disableAllHooks` turns every hook off.
    pub disabled_by: Option<PathBuf>,
}

impl HookListing {
    /// The hooks of every settings file (an untrusted folder's too, marked).
    pub fn from_settings(settings: &Settings) -> HookListing {
        let mut listing = HookListing {
            disabled_by: settings.hooks_disabled_by.clone(),
            ..HookListing::default()
        };
        for layer in &settings.hook_layers {
            let parsed = parse_layer(layer);
            let not_running = if !layer.trusted {
                Some("this folder is not trusted (`toolbelt trust` trusts it)".to_string())
            } else {
                settings
                    .hooks_disabled_by
                    .as_ref()
                    .map(|file| format!("disableAllHooks is true in {}", file.display()))
            };
            for group in &parsed.groups {
                for (j, hook) in group.hooks.iter().enumerate() {
                    listing.hooks.push(ListedHook {
                        event: group.event.as_str().to_string(),
                        matcher: group.matcher.text().to_string(),
                        sequential: group.sequential,
                        kind: hook.executor.kind(),
                        runs: hook.executor.target(),
                        name: hook.name.clone(),
                        timeout_seconds: hook.executor.timeout().as_secs_f64(),
                        file: layer.file.clone(),
                        claude: layer.claude,
                        key: format!("{}.hooks[{j}]", group.key),
                        not_running: not_running.clone(),
                    });
                }
            }
            listing.skipped.extend(parsed.skipped);
            if layer.trusted && settings.hooks_disabled_by.is_none() {
                listing.errors.extend(parsed.errors);
            } else {
                listing.ignored_errors.extend(parsed.errors);
            }
        }
        listing
    }

    /// The listing for a person.
    pub fn text(&self) -> String {
        let mut out = String::new();
        if let Some(file) = &self.disabled_by {
            out.push_str(&format!(
                "All hooks are off: disableAllHooks is true in {}.\n",
                file.display()
            ));
        }
        if self.hooks.is_empty() && self.skipped.is_empty() && self.errors.is_empty() {
            out.push_str("No hooks are configured.\n");
        }
        for hook in &self.hooks {
            let matcher = if hook.matcher.trim().is_empty() {
                "*"
            } else {
                hook.matcher.as_str()
            };
            let name = hook
                .name
                .as_ref()
                .map(|n| format!(" \"{n}\""))
                .unwrap_or_default();
            out.push_str(&format!(
                "{} [{matcher}] {}{name}: {}\n",
                hook.event, hook.kind, hook.runs
            ));
            let state = match &hook.not_running {
                None => "runs".to_string(),
                Some(why) => format!("does not run: {why}"),
            };
            out.push_str(&format!(
                "    {} {}; {state}\n",
                hook.file.display(),
                hook.key
            ));
        }
        for skipped in &self.skipped {
            out.push_str(&format!("{}\n", skipped.warning()));
        }
        if !self.errors.is_empty() {
            out.push_str("Errors (toolbelt does not start a session until they are fixed):\n");
            for error in &self.errors {
                out.push_str(&format!("  {error}\n"));
            }
        }
        for error in &self.ignored_errors {
            out.push_str(&format!("not loaded here: {error}\n"));
        }
        out
    }

    /// The listing as JSON (`toolbelt hooks list --json`).
    pub fn json(&self) -> Value {
        let hooks: Vec<Value> = self
            .hooks
            .iter()
            .map(|h| {
                let mut hook = json!({
                    "event": h.event,
                    "matcher": h.matcher,
                    "sequential": h.sequential,
                    "type": h.kind,
                    "name": h.name,
                    "timeoutSeconds": h.timeout_seconds,
                    "source": h.file,
                    "claude": h.claude,
                    "key": h.key,
                    "runs": h.not_running.is_none(),
                    "whyNot": h.not_running,
                });
                let what = if h.kind == "http" { "url" } else { "command" };
                hook[what] = Value::String(h.runs.clone());
                hook
            })
            .collect();
        let origin = |o: &HookOrigin| o.to_string();
        json!({
            "disabledBy": self.disabled_by,
            "hooks": hooks,
            "skipped": self.skipped.iter().map(|s| json!({
                "source": origin(&s.origin), "key": s.key, "why": s.why,
            })).collect::<Vec<_>>(),
            "errors": self.errors.iter().map(|e| json!({
                "source": origin(&e.origin), "key": e.key, "message": e.message,
            })).collect::<Vec<_>>(),
            "ignoredErrors": self.ignored_errors.iter().map(|e| json!({
                "source": origin(&e.origin), "key": e.key, "message": e.message,
            })).collect::<Vec<_>>(),
        })
    }
}
