//! A token bucket per MCP session that bounds the rate of tool calls.

use std::time::{Duration, Instant};

/// How many tool calls a session may make: `burst` at once, refilled at `per_minute`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Calls allowed back to back.
    pub burst: u32,
    /// Sustained calls per minute.
    pub per_minute: u32,
}

impl Default for RateLimit {
    /// Over HTTP: 200 at once, 6,000 a minute (100 a second): a scripted client or a fast agent
    /// loop of observe/act calls is never throttled, a runaway still is.
    fn default() -> Self {
        RateLimit {
            burst: 200,
            per_minute: 6000,
        }
    }
}

impl RateLimit {
    /// No bound: stdio's default, where the client that started Glovebox is its only user.
    pub const UNLIMITED: RateLimit = RateLimit {
        burst: u32::MAX,
        per_minute: u32::MAX,
    };
}

#[derive(Debug)]
pub(crate) struct Bucket {
    tokens: f64,
    last: Instant,
}

impl Bucket {
    pub(crate) fn new(limit: RateLimit, now: Instant) -> Self {
        Bucket {
            tokens: f64::from(limit.burst),
            last: now,
        }
    }

    /// Takes one call, or says how long until the next one is allowed.
    pub(crate) fn take(&mut self, limit: RateLimit, now: Instant) -> Result<(), Duration> {
        let per_second = f64::from(limit.per_minute.max(1)) / 60.0;
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * per_second).min(f64::from(limit.burst.max(1)));
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.tokens) / per_second))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refill() {
        let limit = RateLimit {
            burst: 2,
            per_minute: 60,
        };
        let t0 = Instant::now();
        let mut b = Bucket::new(limit, t0);
        assert!(b.take(limit, t0).is_ok());
        assert!(b.take(limit, t0).is_ok());
        let wait = b.take(limit, t0).unwrap_err();
        assert!(wait <= Duration::from_secs(1) && wait > Duration::ZERO);
        assert!(b.take(limit, t0 + Duration::from_secs(1)).is_ok());
    }
}
