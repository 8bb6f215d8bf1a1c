//! `/stats`: what this interactive session has used, gathered from the agent's events.

use std::collections::BTreeMap;
use std::time::Duration;

use toolbelt_agent::AgentEvent;
use toolbelt_engine::{scheduler::CallState, scheduler::SchedulerEvent};
use toolbelt_model::Usage;

/// Counters of one session; the UI feeds every [`AgentEvent`] to [`SessionStats::observe`]
/// and adds each run's model time with [`SessionStats::add_run`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionStats {
    /// Prompts sent by the person.
    pub prompts: u64,
    /// Prompts of the conversation this session resumed (`--continue`, `--resume`),
    /// sent before it started.
    pub resumed_prompts: u64,
    /// Model answers received.
    pub model_requests: u64,
    /// Tokens, as the server reported them.
    pub usage: Usage,
    /// Finished tool calls per tool: (succeeded, failed, cancelled, time executing).
    pub tools: BTreeMap<String, ToolStats>,
    /// Time waiting for the model.
    pub model_time: Duration,
    /// Wall time of the runs.
    pub run_time: Duration,
}

/// One tool's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolStats {
    /// Calls that succeeded.
    pub succeeded: u64,
    /// Calls that failed (refused, invalid, a tool error).
    pub failed: u64,
    /// Calls cancelled (or denied by the person).
    pub cancelled: u64,
    /// Time spent executing.
    pub time: Duration,
}

impl SessionStats {
    /// Counts one event.
    pub fn observe(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::Assistant { usage, .. } => {
                self.model_requests += 1;
                if let Some(u) = usage {
                    self.usage.add(*u);
                }
            }
            AgentEvent::Tool(SchedulerEvent::Finished(call)) => {
                let entry = self.tools.entry(call.name.clone()).or_default();
                match call.state {
                    CallState::Success => entry.succeeded += 1,
                    CallState::Cancelled => entry.cancelled += 1,
                    _ => entry.failed += 1,
                }
                entry.time += call.duration;
            }
            _ => {}
        }
    }

    /// Counts one prompt's run: its wall time and the model's share of it.
    pub fn add_run(&mut self, wall: Duration, model_time: Duration) {
        self.prompts += 1;
        self.run_time += wall;
        self.model_time += model_time;
    }

    /// The `/stats` text.
    pub fn text(&self) -> String {
        let calls: u64 = self
            .tools
            .values()
            .map(|t| t.succeeded + t.failed + t.cancelled)
            .sum();
        let tool_time: Duration = self.tools.values().map(|t| t.time).sum();
        let resumed = match self.resumed_prompts {
            0 => String::new(),
            n => format!(" (and {n} before resuming)"),
        };
        // Servers with a prompt cache (Anthropic, OpenAI, Gemini) count its part of the
        // input; reasoning models count their hidden reasoning in the output.
        let cached = match (self.usage.cache_read_tokens, self.usage.cache_write_tokens) {
            (0, 0) => String::new(),
            (read, 0) => format!(" ({read} from the cache)"),
            (read, written) => format!(" ({read} from the cache, {written} written to it)"),
        };
        let reasoning = match self.usage.reasoning_tokens {
            0 => String::new(),
            n => format!(" ({n} reasoning)"),
        };
        let mut s = format!(
            "Session: {} prompts{resumed}, {} model requests, {} tool calls\n\
             Tokens: {} in{cached}, {} out{reasoning}, {} total\n\
             Time: {} in runs ({} model, {} tools)\n",
            self.prompts,
            self.model_requests,
            calls,
            self.usage.prompt_tokens,
            self.usage.completion_tokens,
            self.usage.total_tokens,
            secs(self.run_time),
            secs(self.model_time),
            secs(tool_time),
        );
        if !self.tools.is_empty() {
            s.push_str("Tools:\n");
            for (name, t) in &self.tools {
                s.push_str(&format!(
                    "  {name:<28} {} ok, {} failed, {} cancelled, {}\n",
                    t.succeeded,
                    t.failed,
                    t.cancelled,
                    secs(t.time)
                ));
            }
        }
        s
    }
}

fn secs(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::Value;
    use toolbelt_core::ToolResult;
    use toolbelt_engine::scheduler::CompletedCall;
    use toolbelt_model::FinishReason;

    use super::*;

    fn finished(name: &str, state: CallState, ms: u64) -> AgentEvent {
        AgentEvent::Tool(SchedulerEvent::Finished(CompletedCall {
            call_id: "c".into(),
            name: name.into(),
            arguments: Value::Null,
            description: String::new(),
            state,
            result: ToolResult::text("x"),
            duration: Duration::from_millis(ms),
            stop: None,
        }))
    }

    #[test]
    fn tokens_calls_and_time_add_up() {
        let mut stats = SessionStats::default();
        for usage in [Some((100, 20, 0, 0)), None, Some((150, 30, 120, 25))] {
            stats.observe(&AgentEvent::Assistant {
                turn: 1,
                text: String::new(),
                tool_calls: Vec::new(),
                finish_reason: FinishReason::Stop,
                usage: usage.map(|(p, c, cached, reasoning)| Usage {
                    prompt_tokens: p,
                    completion_tokens: c,
                    total_tokens: p + c,
                    cache_read_tokens: cached,
                    cache_write_tokens: cached / 12,
                    reasoning_tokens: reasoning,
                }),
            });
        }
        stats.observe(&finished("read_file", CallState::Success, 200));
        stats.observe(&finished("read_file", CallState::Error, 0));
        stats.observe(&finished("run_shell_command", CallState::Cancelled, 1300));
        stats.observe(&AgentEvent::Tool(SchedulerEvent::Scheduled {
            call_id: "c".into(),
        }));
        stats.add_run(Duration::from_secs(3), Duration::from_millis(1500));
        assert_eq!(
            stats.text(),
            "Session: 1 prompts, 3 model requests, 3 tool calls\n\
             Tokens: 250 in (120 from the cache, 10 written to it), 50 out (25 reasoning), 300 total\n\
             Time: 3.0s in runs (1.5s model, 1.5s tools)\n\
             Tools:\n\
             \x20 read_file                    1 ok, 1 failed, 0 cancelled, 0.2s\n\
             \x20 run_shell_command            0 ok, 0 failed, 1 cancelled, 1.3s\n"
        );
    }
}
