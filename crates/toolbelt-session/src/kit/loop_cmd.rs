//! `/loop` (issue 33): `/loop [interval] prompt`, `/loop prompt every <interval>`,
//! `/loop list`, `/loop clear` and `/loop cancel <id>`, as Qwen Code documents them.
//!
//! An interval is `<n>s|m|h|d`; cron has one-minute granularity, so seconds round up to
//! a minute, and an interval that does not divide its unit evenly (`7m`, `90m`) becomes
//! the nearest one that does, which the confirmation names. No interval: every 10
//! minutes.

use crate::error::CommandError;
use std::sync::Arc;

use toolbelt_tools::MonitorTable;
use toolbelt_tools::cron::{self, CronTasks};

/// What `/loop ...` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoopCommand {
    /// Schedule `prompt` on `cron` (every `every`), and run it once now.
    Schedule {
        /// The cron expression.
        cron: String,
        /// The cadence in words (`every 5 minutes`).
        every: String,
        /// What runs.
        prompt: String,
        /// Set when the interval asked for was rounded.
        rounded_from: Option<String>,
    },
    /// List the scheduled tasks.
    List,
    /// Cancel every scheduled task.
    Clear,
    /// Cancel one task.
    Cancel(String),
}

/// What follows `/loop` in `text`, when `text` is a `/loop` command.
pub fn strip(text: &str) -> Option<&str> {
    let rest = text.trim_start().strip_prefix("/loop")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some(rest)
}

/// Carries out `/loop rest` on `tasks`: the note to show, and the prompt to run now
/// (a new loop runs once at once, as in Qwen Code).
pub fn run(tasks: Option<&Arc<CronTasks>>, rest: &str) -> (String, Option<String>) {
    let Some(tasks) = tasks else {
        return (
            "Scheduled tasks are off (QWEN_CODE_DISABLE_CRON).".to_string(),
            None,
        );
    };
    let command = match parse(rest) {
        Ok(c) => c,
        Err(e) => return (e.to_string(), None),
    };
    match command {
        LoopCommand::List => (cron::list_text(&tasks.list()), None),
        LoopCommand::Clear => (
            format!("Cancelled {} scheduled task(s).", tasks.clear()),
            None,
        ),
        LoopCommand::Cancel(id) if tasks.delete(&id) => (format!("Cancelled {id}."), None),
        LoopCommand::Cancel(id) => (
            format!("No scheduled task has the id {id} (/loop list)."),
            None,
        ),
        LoopCommand::Schedule {
            cron,
            every,
            prompt,
            rounded_from,
        } => {
            let made =
                cron::CronExpr::parse(&cron).and_then(|c| tasks.create(c, &prompt, true, false));
            match made {
                Ok(task) => {
                    let rounded = rounded_from
                        .map(|r| format!(" ({r} does not divide evenly; rounded)"))
                        .unwrap_or_default();
                    (
                        format!(
                            "Scheduled {} {every}{rounded} ({cron}); it runs now, then when due and the session is idle. /loop cancel {} stops it.",
                            task.id, task.id
                        ),
                        Some(prompt),
                    )
                }
                Err(e) => (e.to_string(), None),
            }
        }
    }
}

/// The prompts an interactive front end runs by itself, one at a time when no request
/// runs (issue 33): `/loop`'s first run, scheduled prompts that came due, and the
/// monitors' events as a turn of their own.
pub struct IdlePrompts {
    cron: Option<Arc<CronTasks>>,
    monitors: Arc<MonitorTable>,
    changes: tokio::sync::watch::Receiver<u64>,
    queue: std::collections::VecDeque<String>,
}

impl IdlePrompts {
    /// Prompts from `cron` (when scheduling is on) and `monitors`.
    pub fn new(cron: Option<Arc<CronTasks>>, monitors: Arc<MonitorTable>) -> Self {
        let changes = monitors.subscribe();
        IdlePrompts {
            cron,
            monitors,
            changes,
            queue: std::collections::VecDeque::new(),
        }
    }

    /// Carries out `text` when it is a `/loop` command: the note to show.
    pub fn command(&mut self, text: &str) -> Option<String> {
        let (note, run_now) = run(self.cron.as_ref(), strip(text)?);
        self.queue.extend(run_now);
        Some(note)
    }

    /// Waits until a scheduled prompt is due (queued) or a monitor has news. Await it
    /// only while idle, then ask [`IdlePrompts::next_prompt`].
    pub async fn wait(&mut self) {
        tokio::select! {
            fired = crate::cron::due(self.cron.as_ref()) => {
                self.queue.extend(fired.into_iter().map(|t| t.prompt));
            }
            _ = self.changes.changed() => {}
        }
    }

    /// The next prompt to run now that the session is idle: queued ones first, then
    /// the monitors' waiting events.
    pub fn next_prompt(&mut self) -> Option<String> {
        if self.queue.is_empty()
            && let Some(events) = self.monitors.take()
        {
            self.queue.push_back(events);
        }
        self.queue.pop_front()
    }
}

/// Minutes that divide an hour, hours that divide a day: the clean intervals.
const MINUTE_STEPS: [u64; 11] = [1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30];
const HOUR_STEPS: [u64; 7] = [1, 2, 3, 4, 6, 8, 12];

/// Parses what follows `/loop`.
pub fn parse(rest: &str) -> Result<LoopCommand, CommandError> {
    let rest = rest.trim();
    let mut words = rest.split_whitespace();
    match (words.next(), words.next()) {
        (Some("list"), None) => return Ok(LoopCommand::List),
        (Some("clear"), None) | (Some("cancel"), None) => return Ok(LoopCommand::Clear),
        (Some("cancel"), Some(id)) if words.next().is_none() => {
            return Ok(LoopCommand::Cancel(id.to_string()));
        }
        (None, _) => {
            return Err(CommandError::Usage("/loop needs a prompt: /loop [interval] <prompt>, /loop list, /loop clear (the autonomous loop without a prompt is not supported)".to_string()));
        }
        _ => {}
    }
    let (minutes, prompt, asked) = split_interval(rest).map_err(CommandError::Usage)?;
    if prompt.trim().is_empty() {
        return Err(CommandError::Usage(
            "/loop needs a prompt after the interval".to_string(),
        ));
    }
    let (cron, every, clean) = cron_for(minutes);
    Ok(LoopCommand::Schedule {
        cron,
        every,
        prompt: prompt.trim().to_string(),
        rounded_from: asked.filter(|_| !clean),
    })
}

/// The interval in minutes (rounded up), the prompt, and the interval as written.
fn split_interval(rest: &str) -> Result<(u64, String, Option<String>), String> {
    let (first, tail) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    if let Some(minutes) = interval(first)? {
        return Ok((minutes, tail.to_string(), Some(first.to_string())));
    }
    // A trailing `every <n><unit>` or `every <n> <unit words>`.
    let lower = rest.to_ascii_lowercase();
    if let Some(at) = lower.rfind(" every ") {
        let spec: String = rest[at + 7..]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join("");
        if let Some(minutes) = interval(&words_to_unit(&spec))? {
            return Ok((
                minutes,
                rest[..at].to_string(),
                Some(rest[at + 7..].trim().to_string()),
            ));
        }
    }
    Ok((10, rest.to_string(), None))
}

/// `2hours` → `2h`, `30minutes` → `30m`.
fn words_to_unit(spec: &str) -> String {
    let digits: String = spec.chars().take_while(char::is_ascii_digit).collect();
    let unit = &spec[digits.len()..];
    let unit = match unit {
        "s" | "sec" | "secs" | "second" | "seconds" => "s",
        "m" | "min" | "mins" | "minute" | "minutes" => "m",
        "h" | "hr" | "hrs" | "hour" | "hours" => "h",
        "d" | "day" | "days" => "d",
        other => other,
    };
    format!("{digits}{unit}")
}

/// `<n>s|m|h|d` in minutes (seconds rounded up); `Ok(None)` when `word` is no interval.
fn interval(word: &str) -> Result<Option<u64>, String> {
    let Some(unit) = word.chars().last().filter(|c| "smhd".contains(*c)) else {
        return Ok(None);
    };
    let digits = &word[..word.len() - 1];
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("the interval {word} is too large"))?;
    if n == 0 {
        return Err("the interval must be more than zero".to_string());
    }
    let minutes = match unit {
        's' => n.div_ceil(60),
        'm' => n,
        'h' => n.saturating_mul(60),
        _ => n.saturating_mul(24 * 60),
    };
    Ok(Some(minutes))
}

/// The cron expression for every `minutes`, what it means, and whether it is exact.
fn cron_for(minutes: u64) -> (String, String, bool) {
    if minutes < 60 {
        let step = nearest(&MINUTE_STEPS, minutes);
        let cron = if step == 1 {
            "* * * * *".to_string()
        } else {
            format!("*/{step} * * * *")
        };
        return (cron, plural(step, "minute"), step == minutes);
    }
    if minutes < 24 * 60 {
        let hours = (minutes + 30) / 60;
        let step = nearest(&HOUR_STEPS, hours);
        let cron = if step == 1 {
            "0 * * * *".to_string()
        } else {
            format!("0 */{step} * * *")
        };
        return (cron, plural(step, "hour"), step * 60 == minutes);
    }
    let days = ((minutes + 12 * 60) / (24 * 60)).min(31);
    let cron = if days == 1 {
        "0 0 * * *".to_string()
    } else {
        format!("0 0 */{days} * *")
    };
    (cron, plural(days, "day"), days * 24 * 60 == minutes)
}

fn nearest(steps: &[u64], n: u64) -> u64 {
    steps
        .iter()
        .copied()
        .min_by_key(|s| s.abs_diff(n))
        .unwrap_or(1)
}

fn plural(n: u64, unit: &str) -> String {
    if n == 1 {
        format!("every {unit}")
    } else {
        format!("every {n} {unit}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(rest: &str) -> (String, String, Option<String>) {
        match parse(rest).unwrap() {
            LoopCommand::Schedule {
                cron,
                prompt,
                rounded_from,
                ..
            } => (cron, prompt, rounded_from),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn intervals_lead_trail_or_default_to_ten_minutes() {
        assert_eq!(
            schedule("30m check the build"),
            ("*/30 * * * *".into(), "check the build".into(), None)
        );
        assert_eq!(
            schedule("check the build every 2 hours"),
            ("0 */2 * * *".into(), "check the build".into(), None)
        );
        assert_eq!(
            schedule("check the build"),
            ("*/10 * * * *".into(), "check the build".into(), None)
        );
        assert_eq!(schedule("20m /review-pr 1234").1, "/review-pr 1234");
        assert_eq!(schedule("1d report").0, "0 0 * * *");
        // Seconds round up to a minute.
        assert_eq!(schedule("30s ping").0, "* * * * *");
    }

    #[test]
    fn uneven_intervals_round_to_a_clean_one_and_say_so() {
        assert_eq!(
            schedule("7m x"),
            ("*/6 * * * *".into(), "x".into(), Some("7m".into()))
        );
        assert_eq!(schedule("90m x").0, "0 */2 * * *");
        assert_eq!(schedule("90m x").2.as_deref(), Some("90m"));
        assert_eq!(schedule("5h x").0, "0 */4 * * *");
    }

    #[test]
    fn a_loop_is_scheduled_runs_now_and_is_listed_and_cancelled() {
        let tasks = CronTasks::new(cron::system_clock(), 7);
        let (note, now) = run(Some(&tasks), " 7m check the deploy");
        assert_eq!(now.as_deref(), Some("check the deploy"));
        let id = tasks.list()[0].id.clone();
        assert!(
            note.contains(&id) && note.contains("every 6 minutes"),
            "{note}"
        );
        assert!(note.contains("7m does not divide evenly"), "{note}");
        let (listed, none) = run(Some(&tasks), " list");
        assert!(listed.contains("*/6 * * * *") && listed.contains("check the deploy"));
        assert!(none.is_none());
        assert_eq!(
            run(Some(&tasks), &format!(" cancel {id}")).0,
            format!("Cancelled {id}.")
        );
        assert!(tasks.list().is_empty());
        assert!(run(None, " 5m x").0.contains("off"));
        assert!(strip("/loop 5m x").is_some() && strip("/looping").is_none());
    }

    #[test]
    fn subcommands_and_mistakes() {
        assert_eq!(parse("list"), Ok(LoopCommand::List));
        assert_eq!(parse("clear"), Ok(LoopCommand::Clear));
        assert_eq!(
            parse("cancel ab12cd34"),
            Ok(LoopCommand::Cancel("ab12cd34".into()))
        );
        assert!(parse("").is_err());
        assert!(parse("0m x").is_err());
        assert!(parse("10m").is_err());
    }
}
