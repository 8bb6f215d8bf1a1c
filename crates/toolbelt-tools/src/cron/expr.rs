//! Five-field cron expressions in local time: `minute hour day-of-month month
//! day-of-week`, with `*`, values, ranges, steps and lists; vixie-cron's rule that a date
//! matches when either day field matches if both are restricted.
//!
//! The next occurrence is computed by the `croner` crate. Its syntax is wider (seconds,
//! years, `L`, `W`, `#`, `?`, names), so every field is first checked here against the
//! syntax Qwen Code documents, and an error names the field and what is wrong with it.

use chrono::{DateTime, Local};
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

/// The fields, in order, with their bounds.
const FIELDS: [(&str, u32, u32); 5] = [
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day-of-month", 1, 31),
    ("month", 1, 12),
    // 0 and 7 are both Sunday.
    ("day-of-week", 0, 7),
];

/// Why a cron expression was refused or a task not scheduled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    /// Not five fields.
    #[error(
        "A cron expression has 5 fields (minute hour day-of-month month day-of-week), not {count}: '{text}'."
    )]
    FieldCount {
        /// How many there are.
        count: usize,
        /// The expression.
        text: String,
    },
    /// A field out of range or malformed.
    #[error("Field {name} ('{field}') of '{text}': {why}.")]
    Field {
        /// The field's name (`minute`, ...).
        name: &'static str,
        /// The field as written.
        field: String,
        /// The expression.
        text: String,
        /// What is wrong.
        why: String,
    },
    /// The fields are each fine, but the parser refuses the whole.
    #[error("'{text}' is not a valid cron expression: {why}.")]
    Invalid {
        /// The expression.
        text: String,
        /// The parser's message.
        why: String,
    },
    /// The expression names no date that exists (`0 0 31 2 *`).
    #[error("'{0}' never matches a date.")]
    NeverMatches(String),
    /// A durable task without `experimental.cronDurable`.
    #[error(
        "Durable tasks are off (the user's settings do not set experimental.cronDurable); schedule it without `durable`, for this session only."
    )]
    DurableOff,
    /// The session's tasks are at their limit (the limit).
    #[error("A session holds at most {0} scheduled tasks; delete one with cron_delete first.")]
    TooMany(usize),
}

/// A checked expression.
#[derive(Debug, Clone)]
pub struct CronExpr {
    text: String,
    cron: Cron,
}

impl CronExpr {
    /// Parses `text`; the error names the field at fault.
    pub fn parse(text: &str) -> Result<Self, CronError> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(CronError::FieldCount {
                count: fields.len(),
                text: text.to_string(),
            });
        }
        for (field, &(name, low, high)) in fields.iter().zip(FIELDS.iter()) {
            check_field(field, low, high).map_err(|why| CronError::Field {
                name,
                field: (*field).to_string(),
                text: text.to_string(),
                why,
            })?;
        }
        let text = fields.join(" ");
        let cron = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            // vixie-cron: restricted day-of-month OR restricted day-of-week.
            .dom_and_dow(false)
            .build()
            .parse(&text)
            .map_err(|e| CronError::Invalid {
                text: text.clone(),
                why: e.to_string(),
            })?;
        Ok(CronExpr { text, cron })
    }

    /// The expression as written (single spaces).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The first time after `after` that matches (whole minutes).
    pub fn next_after(&self, after: DateTime<Local>) -> Option<DateTime<Local>> {
        self.cron.find_next_occurrence(&after, false).ok()
    }
}

/// Checks one field: a list of `*`, `N`, `N-M`, each optionally with `/step`.
fn check_field(field: &str, low: u32, high: u32) -> Result<(), String> {
    for item in field.split(',') {
        if item.is_empty() {
            return Err("an empty list item".to_string());
        }
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, Some(step)),
            None => (item, None),
        };
        if let Some(step) = step {
            let n = number(step)?;
            if n == 0 || n > high {
                return Err(format!("step {n} is out of range (1-{high})"));
            }
        }
        if range == "*" {
            continue;
        }
        let (from, to) = match range.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let n = number(range)?;
                (n, n)
            }
        };
        for n in [from, to] {
            if n < low || n > high {
                return Err(format!("{n} is out of range ({low}-{high})"));
            }
        }
        if from > to {
            return Err(format!("the range {from}-{to} runs backwards"));
        }
    }
    Ok(())
}

fn number(text: &str) -> Result<u32, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "'{text}' is not a number (only digits, '*', ',', '-' and '/' are supported; L, W, ?, # and names are not)"
        ));
    }
    text.parse()
        .map_err(|_| format!("'{text}' is not a number"))
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Local> {
        Local.with_ymd_and_hms(y, mo, d, h, mi, 0).single().unwrap()
    }

    #[test]
    fn bad_expressions_name_the_field() {
        let cases = [
            (
                "61 * * * *",
                "Field minute ('61')",
                "61 is out of range (0-59)",
            ),
            ("* * * * * *", "5 fields", "not 6"),
            (
                "0 9 L * *",
                "Field day-of-month ('L')",
                "L, W, ?, # and names",
            ),
            ("0 24 * * *", "Field hour ('24')", "out of range (0-23)"),
            ("0 9 * 13 *", "Field month ('13')", "out of range (1-12)"),
            ("0 9 * * MON", "Field day-of-week ('MON')", "not a number"),
            ("*/0 * * * *", "Field minute", "step 0"),
            ("5-1 * * * *", "Field minute", "backwards"),
            ("1,,2 * * * *", "Field minute", "empty list item"),
        ];
        for (text, field, why) in cases {
            let e = CronExpr::parse(text).unwrap_err();
            let by_field = matches!(e, CronError::Field { .. });
            let by_count = matches!(e, CronError::FieldCount { count: 6, .. });
            assert!(by_field || by_count, "{text}: {e:?}");
            let e = e.to_string();
            assert!(e.contains(field), "{text}: {e}");
            assert!(e.contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn next_occurrences_in_local_time() {
        let every5 = CronExpr::parse("*/5 * * * *").unwrap();
        assert_eq!(
            every5.next_after(at(2026, 3, 2, 10, 3)),
            Some(at(2026, 3, 2, 10, 5))
        );
        let weekdays = CronExpr::parse("0 9 * * 1-5").unwrap();
        // 2026-03-07 is a Saturday: the next is Monday the 9th.
        assert_eq!(
            weekdays.next_after(at(2026, 3, 7, 8, 0)),
            Some(at(2026, 3, 9, 9, 0))
        );
        let sunday = CronExpr::parse("0 0 * * 7").unwrap();
        assert_eq!(
            sunday.next_after(at(2026, 3, 2, 0, 0)),
            Some(at(2026, 3, 8, 0, 0))
        );
    }

    #[test]
    fn day_of_month_or_day_of_week_as_vixie_cron() {
        // The 15th, or any Friday: from Monday 2026-03-02 the Friday the 6th comes first,
        // then the 13th (a Friday), then Sunday the 15th.
        let e = CronExpr::parse("0 12 15 * 5").unwrap();
        let first = e.next_after(at(2026, 3, 2, 0, 0)).unwrap();
        assert_eq!(first, at(2026, 3, 6, 12, 0));
        let second = e.next_after(first).unwrap();
        assert_eq!(second, at(2026, 3, 13, 12, 0));
        assert_eq!(e.next_after(second), Some(at(2026, 3, 15, 12, 0)));
    }
}
