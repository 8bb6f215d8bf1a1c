//! The token bucket that paces a monitor's events (Qwen Code's: a burst of 5, then one a
//! second). Time is a parameter, so tests drive it without waiting.

use std::time::{Duration, Instant};

/// Events a monitor may send at once.
pub(super) const BURST: u32 = 5;
/// How long the bucket takes to earn one event back.
pub(super) const REFILL: Duration = Duration::from_secs(1);

/// A token bucket: [`BURST`] tokens, one more every [`REFILL`].
#[derive(Debug, Clone)]
pub(super) struct TokenBucket {
    /// Whole tokens left.
    tokens: u32,
    /// When the next token is earned counts from here.
    since: Instant,
}

impl TokenBucket {
    /// A full bucket at `now`.
    pub(super) fn new(now: Instant) -> Self {
        TokenBucket {
            tokens: BURST,
            since: now,
        }
    }

    /// Takes a token at `now`; `false` when there is none (the event is dropped).
    pub(super) fn take(&mut self, now: Instant) -> bool {
        self.refill(now);
        if self.tokens == 0 {
            return false;
        }
        self.tokens -= 1;
        true
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.since);
        let earned = elapsed.as_millis() / REFILL.as_millis();
        if earned == 0 {
            return;
        }
        if self.tokens >= BURST {
            // A full bucket earns nothing: the next token counts from now.
            self.since = now;
            return;
        }
        let earned = u32::try_from(earned).unwrap_or(u32::MAX);
        self.tokens = self.tokens.saturating_add(earned).min(BURST);
        self.since = if self.tokens >= BURST {
            now
        } else {
            self.since + REFILL * earned
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_five_then_one_a_second() {
        let t0 = Instant::now();
        let mut bucket = TokenBucket::new(t0);
        let taken = (0..10_000).filter(|_| bucket.take(t0)).count();
        assert_eq!(taken, 5);
        assert!(!bucket.take(t0 + Duration::from_millis(999)));
        assert!(bucket.take(t0 + Duration::from_millis(1000)));
        assert!(!bucket.take(t0 + Duration::from_millis(1500)));
        assert!(bucket.take(t0 + Duration::from_millis(2000)));
        // Ten quiet seconds refill the bucket to its burst, not beyond.
        let later = t0 + Duration::from_secs(12);
        let taken = (0..100).filter(|_| bucket.take(later)).count();
        assert_eq!(taken, 5);
    }

    #[test]
    fn a_full_bucket_does_not_bank_time() {
        let t0 = Instant::now();
        let mut bucket = TokenBucket::new(t0);
        // Idle for a minute with a full bucket, then a flood: still five.
        let later = t0 + Duration::from_secs(60);
        assert_eq!((0..50).filter(|_| bucket.take(later)).count(), 5);
        assert!(!bucket.take(later + Duration::from_millis(900)));
        assert!(bucket.take(later + Duration::from_millis(1000)));
    }
}
