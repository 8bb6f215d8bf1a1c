//! The scheduled prompts of one session: created, listed and deleted by the `cron_*`
//! tools, fired by whoever runs the turns when the session is idle ([`CronTasks::due`]
//! is only ever asked between turns, so a prompt never lands mid-turn).
//!
//! As Qwen Code documents: at most [`MAX_TASKS`]; 8-character ids; a recurring task
//! fires up to 10% of its period late (at most 15 minutes), a one-shot task set for
//! minute `:00` or `:30` up to 90 seconds early, both by an offset derived from its id
//! (the same task, the same offset); a recurring task expires after the configured age
//! (7 days unless said otherwise; 0 days: never) with one final fire; no catch-up, a
//! task whose time passed while the session was busy fires once. Time comes from a
//! [`Clock`], so tests move it without waiting. Nothing is written to disk.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Local, Timelike};

use super::expr::{CronError, CronExpr};

/// Tasks a session may hold.
pub const MAX_TASKS: usize = 50;
/// The age at which recurring tasks expire unless the settings say otherwise.
pub const DEFAULT_MAX_AGE_DAYS: u32 = 7;

/// The time now.
pub type Clock = Arc<dyn Fn() -> DateTime<Local> + Send + Sync>;

/// The local wall clock.
pub fn system_clock() -> Clock {
    Arc::new(Local::now)
}

/// One scheduled prompt, as `cron_list` shows it.
#[derive(Debug, Clone)]
pub struct CronTask {
    /// 8 hexadecimal characters, unique in the schedule.
    pub id: String,
    /// When it fires.
    pub cron: CronExpr,
    /// What runs when it fires.
    pub prompt: String,
    /// Fires on every match until it expires; else once.
    pub recurring: bool,
    /// When it was created (the expiry counts from here).
    pub created: DateTime<Local>,
    /// When it fires next (jitter included).
    pub next_fire: DateTime<Local>,
    /// Where a durable task was made; `None`: this session's only, never saved.
    pub durable: Option<TaskOrigin>,
}

/// Where a durable task was made, told when it fires in a later session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskOrigin {
    /// The session that created it.
    pub session: String,
    /// The project folder it was created in.
    pub project: String,
}

impl CronTask {
    /// Where it came from, in words: the session, the project and the time it was made.
    fn origin_words(&self) -> Option<String> {
        self.durable.as_ref().map(|o| {
            format!(
                "durable task made {} by session {} in {}",
                self.created.format("%Y-%m-%d %H:%M %Z"),
                o.session,
                o.project
            )
        })
    }
}

/// A prompt that came due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    /// The task's id.
    pub id: String,
    /// What to run.
    pub prompt: String,
    /// Whether this was its last fire (one-shot, or a recurring task that expired).
    pub last: bool,
    /// For a durable task, where and when it was made (it may fire in a session that
    /// did not make it).
    pub origin: Option<String>,
}

/// The scheduled prompts of one session.
pub struct CronTasks {
    tasks: Mutex<Vec<CronTask>>,
    clock: Clock,
    /// `None`: recurring tasks never expire.
    max_age: Option<chrono::Duration>,
    /// Where the durable tasks are saved after each change (see [`super::durable`]),
    /// and the origin new durable tasks get; `None`: durable tasks are off.
    file: Mutex<Option<(std::path::PathBuf, TaskOrigin)>>,
}

impl CronTasks {
    /// An empty schedule on `clock`, recurring tasks expiring after `max_age_days` (0:
    /// never).
    pub fn new(clock: Clock, max_age_days: u32) -> Arc<Self> {
        Arc::new(CronTasks {
            tasks: Mutex::default(),
            clock,
            max_age: (max_age_days > 0).then(|| chrono::Duration::days(i64::from(max_age_days))),
            file: Mutex::default(),
        })
    }

    /// Allows durable tasks, kept in `file`: what it holds is read back now (next
    /// times from now), and every change to the durable tasks is saved there. A task
    /// made from now on is durable only when asked for ([`CronTasks::create`]), with
    /// `origin`. Returns warnings about entries skipped.
    pub fn make_durable(&self, file: std::path::PathBuf, origin: TaskOrigin) -> Vec<String> {
        let (restored, warnings) = super::durable::load(&file);
        let now = self.now();
        {
            let mut tasks = self.lock();
            for r in restored {
                if tasks.len() >= MAX_TASKS || tasks.iter().any(|t| t.id == r.id) {
                    continue;
                }
                if let Some(next_fire) = fire_time(&r.cron, &r.id, r.recurring, now) {
                    tasks.push(CronTask {
                        id: r.id,
                        cron: r.cron,
                        prompt: r.prompt,
                        recurring: r.recurring,
                        created: r.created,
                        next_fire,
                        durable: Some(r.origin),
                    });
                }
            }
        }
        if let Ok(mut f) = self.file.lock() {
            *f = Some((file, origin));
        }
        warnings
    }

    /// Whether durable tasks may be made (the person's settings allow them).
    pub fn durable_allowed(&self) -> bool {
        self.file.lock().is_ok_and(|f| f.is_some())
    }

    /// Saves the durable tasks when they are allowed; a failure is a warning.
    fn saved(&self, tasks: &[CronTask]) {
        let file = self.file.lock().ok().and_then(|f| f.clone());
        if let Some((file, _)) = file
            && let Err(e) = super::durable::save(&file, tasks)
        {
            tracing::warn!("scheduled tasks not saved to {}: {e}", file.display());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<CronTask>> {
        match self.tasks.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The time now, by the schedule's clock.
    pub fn now(&self) -> DateTime<Local> {
        (self.clock)()
    }

    /// Schedules `prompt` on `cron`, kept across sessions when `durable` (the person
    /// must have approved that: `cron_create` asks); the task, or why not.
    pub fn create(
        &self,
        cron: CronExpr,
        prompt: &str,
        recurring: bool,
        durable: bool,
    ) -> Result<CronTask, CronError> {
        let origin = match durable {
            false => None,
            true => match self.file.lock().ok().and_then(|f| f.clone()) {
                Some((_, origin)) => Some(origin),
                None => {
                    return Err(CronError::DurableOff);
                }
            },
        };
        let now = self.now();
        let mut tasks = self.lock();
        if tasks.len() >= MAX_TASKS {
            return Err(CronError::TooMany(MAX_TASKS));
        }
        let id = loop {
            let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
            if !tasks.iter().any(|t| t.id == id) {
                break id;
            }
        };
        let next_fire = fire_time(&cron, &id, recurring, now)
            .ok_or_else(|| CronError::NeverMatches(cron.as_str().to_string()))?;
        let task = CronTask {
            id,
            cron,
            prompt: prompt.to_string(),
            recurring,
            created: now,
            next_fire,
            durable: origin,
        };
        tasks.push(task.clone());
        self.saved(&tasks);
        Ok(task)
    }

    /// Every task, oldest first.
    pub fn list(&self) -> Vec<CronTask> {
        self.lock().clone()
    }

    /// Deletes task `id`; `false` when there is none.
    pub fn delete(&self, id: &str) -> bool {
        let mut tasks = self.lock();
        let before = tasks.len();
        tasks.retain(|t| t.id != id);
        self.saved(&tasks);
        tasks.len() != before
    }

    /// Deletes every task; returns how many there were.
    pub fn clear(&self) -> usize {
        let mut tasks = self.lock();
        let n = tasks.len();
        tasks.clear();
        self.saved(&tasks);
        n
    }

    /// The earliest next fire, to sleep until.
    pub fn next_fire(&self) -> Option<DateTime<Local>> {
        self.lock().iter().map(|t| t.next_fire).min()
    }

    /// The prompts due now, oldest task first. Ask only when the session is idle: a
    /// due task fires once however many of its times passed (no catch-up); a one-shot
    /// or expired task is deleted, a recurring one is moved to its next time.
    pub fn due(&self) -> Vec<Fired> {
        let now = self.now();
        let mut fired = Vec::new();
        let mut tasks = self.lock();
        tasks.retain_mut(|task| {
            if task.next_fire > now {
                return true;
            }
            let expired = self.max_age.is_some_and(|age| now >= task.created + age);
            let next = (task.recurring && !expired)
                .then(|| fire_time(&task.cron, &task.id, true, now))
                .flatten();
            fired.push(Fired {
                id: task.id.clone(),
                prompt: task.prompt.clone(),
                last: next.is_none(),
                origin: task.origin_words(),
            });
            match next {
                Some(at) => {
                    task.next_fire = at;
                    true
                }
                None => false,
            }
        });
        if fired.iter().any(|f| f.last) {
            self.saved(&tasks);
        }
        fired
    }
}

impl CronTasks {
    /// Waits until prompts are due and returns them. The session awaits this only while
    /// it is idle (between turns) and drops it when a turn starts, so a prompt never
    /// fires mid-turn. It looks at least once a second, as Qwen Code's scheduler does:
    /// the clock may jump, and a task created meanwhile counts from the next look.
    pub async fn wait_due(&self) -> Vec<Fired> {
        const NAP: std::time::Duration = std::time::Duration::from_secs(1);
        loop {
            let due = self.due();
            if !due.is_empty() {
                return due;
            }
            let wait = self.next_fire().map_or(NAP, |at| {
                (at - self.now())
                    .to_std()
                    .unwrap_or_default()
                    .clamp(std::time::Duration::from_millis(1), NAP)
            });
            tokio::time::sleep(wait).await;
        }
    }
}

/// The next fire after `now`, jitter included.
fn fire_time(
    cron: &CronExpr,
    id: &str,
    recurring: bool,
    now: DateTime<Local>,
) -> Option<DateTime<Local>> {
    let at = cron.next_after(now)?;
    let share = id_fraction(id);
    if recurring {
        let period = cron
            .next_after(at)
            .map_or(chrono::Duration::zero(), |n| n - at);
        let cap = (period / 10).min(chrono::Duration::minutes(15));
        Some(at + scale(cap, share))
    } else if at.minute() % 30 == 0 {
        Some(at - scale(chrono::Duration::seconds(90), share))
    } else {
        Some(at)
    }
}

/// `d` times `share` (0..1), to the millisecond.
fn scale(d: chrono::Duration, share: f64) -> chrono::Duration {
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    let ms = (d.num_milliseconds() as f64 * share) as i64;
    chrono::Duration::milliseconds(ms)
}

/// A number in `0..1` that depends only on `id` (FNV-1a: stable across runs and
/// releases, unlike the standard library's hasher).
pub fn id_fraction(id: &str) -> f64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    #[allow(clippy::cast_precision_loss)]
    let share = (hash >> 11) as f64 / (1u64 << 53) as f64;
    share
}
