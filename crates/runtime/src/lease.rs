//! Write leases: one per surface, generation-numbered, with an expiry, and exclusive within the
//! surface's input domain (a tab is its own; every window of an X display shares the display's,
//! since XTest is one keyboard and mouse per display). Reads never need one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::runtime::now_ms;

/// Who holds a tab's write lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub holder: String,
    pub generation: u64,
    pub expires_at: u64,
}

/// Another holder's live lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeaseHeld {
    pub(crate) holder: String,
    /// The live lease is of another surface of the same input domain (another window of the
    /// display), not of the surface asked for.
    pub(crate) elsewhere: bool,
}

/// One row of the table: the lease and the input domain of its surface.
#[derive(Debug)]
struct Row {
    domain: String,
    lease: Lease,
}

/// The lease table, keyed by the adapter's surface id.
#[derive(Debug, Default)]
pub(crate) struct Leases {
    table: Mutex<HashMap<String, Row>>,
    generation: std::sync::atomic::AtomicU64,
    /// Woken whenever a lease is released or dropped.
    freed: tokio::sync::Notify,
}

impl Leases {
    /// Takes `target`'s lease for `holder`, or names the live holder of a lease in its input
    /// `domain` (of `target` itself or of another surface of the domain). An expired lease is
    /// taken over.
    pub(crate) fn acquire(
        &self,
        target: &str,
        domain: &str,
        holder: &str,
        now: u64,
        ttl_ms: u64,
    ) -> Result<Lease, LeaseHeld> {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        // The surface's own row first, so a conflict on it is named as such.
        let own = table.get(target).into_iter().map(|r| (true, r));
        let others = table
            .iter()
            .filter(|(t, r)| t.as_str() != target && r.domain == domain)
            .map(|(_, r)| (false, r));
        if let Some((mine, row)) = own
            .chain(others)
            .find(|(_, r)| r.lease.holder != holder && r.lease.expires_at > now)
        {
            return Err(LeaseHeld {
                holder: row.lease.holder.clone(),
                elsewhere: !mine,
            });
        }
        let generation = self
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let lease = Lease {
            holder: holder.to_owned(),
            generation,
            expires_at: now + ttl_ms,
        };
        table.insert(
            target.to_owned(),
            Row {
                domain: domain.to_owned(),
                lease: lease.clone(),
            },
        );
        Ok(lease)
    }

    /// Who holds `target`'s live lease, if anyone.
    /// How many leases are live at `now`.
    pub(crate) fn live(&self, now: u64) -> usize {
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        table.values().filter(|r| r.lease.expires_at > now).count()
    }

    pub(crate) fn holder(&self, target: &str, now: u64) -> Option<String> {
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        table
            .get(target)
            .filter(|r| r.lease.expires_at > now)
            .map(|r| r.lease.holder.clone())
    }

    /// True when `lease` is still the live lease of `target`.
    pub(crate) fn is_current(&self, target: &str, lease: &Lease, now: u64) -> bool {
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        table
            .get(target)
            .is_some_and(|r| r.lease.generation == lease.generation && r.lease.expires_at > now)
    }

    /// Extends a live lease.
    pub(crate) fn renew(&self, target: &str, lease: &Lease, now: u64, ttl_ms: u64) -> bool {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        match table.get_mut(target) {
            Some(r) if r.lease.generation == lease.generation => {
                r.lease.expires_at = now + ttl_ms;
                true
            }
            _ => false,
        }
    }

    /// Releases `lease` if it is still the tab's (a newer holder is left alone).
    pub(crate) fn release(&self, target: &str, lease: &Lease) {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if table
            .get(target)
            .is_some_and(|r| r.lease.generation == lease.generation)
        {
            table.remove(target);
        }
        drop(table);
        self.freed.notify_waiters();
    }

    /// Drops every lease of a closed tab: its next side effect is `target_lost`.
    pub(crate) fn invalidate(&self, target: &str) {
        self.table
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(target);
        self.freed.notify_waiters();
    }

    /// Completes at the next release. Take it before trying to acquire, so a release between
    /// the try and the wait is not missed.
    pub(crate) fn released(&self) -> std::pin::Pin<Box<tokio::sync::futures::Notified<'_>>> {
        let mut notified = Box::pin(self.freed.notified());
        notified.as_mut().enable();
        notified
    }
}

/// A held lease: renewed while its holder lives — however long it waits for a model's answer,
/// a person's approval or a login — and let go when this is dropped (a call cancelled
/// part-way, its future dropped while it waits for a person, still releases the tab). The
/// lease's time-to-live is only the backstop for a holder that stopped without letting go.
pub(crate) struct HeldLease {
    leases: Arc<Leases>,
    target: String,
    pub(crate) lease: Lease,
    keeper: tokio::task::JoinHandle<()>,
}

impl HeldLease {
    /// Takes the surface's lease for `holder` (see [`Leases::acquire`]) and keeps it alive.
    pub(crate) fn take(
        leases: &Arc<Leases>,
        target: &str,
        domain: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<HeldLease, LeaseHeld> {
        let ttl_ms = ttl.as_millis() as u64;
        let lease = leases.acquire(target, domain, holder, now_ms(), ttl_ms)?;
        let keeper = {
            let (leases, target, lease) = (leases.clone(), target.to_owned(), lease.clone());
            tokio::spawn(async move {
                let every = (ttl / 3).max(Duration::from_millis(10));
                loop {
                    tokio::time::sleep(every).await;
                    // A lease invalidated (its tab closed, hidden or lost) stays gone.
                    if !leases.renew(&target, &lease, now_ms(), ttl_ms) {
                        return;
                    }
                }
            })
        };
        Ok(HeldLease {
            leases: leases.clone(),
            target: target.to_owned(),
            lease,
            keeper,
        })
    }

    /// The surface the lease is of.
    pub(crate) fn target(&self) -> &str {
        &self.target
    }
}

impl Drop for HeldLease {
    fn drop(&mut self) {
        self.keeper.abort();
        self.leases.release(&self.target, &self.lease);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_exclusive_within_its_input_domain_and_only_there() {
        let leases = Leases::default();
        let a = leases.acquire("w1", "x11:1", "s1/c1", 0, 1000).unwrap();
        // Another window of the same display: refused, and named as elsewhere.
        let held = leases.acquire("w2", "x11:1", "s2/c1", 0, 1000).unwrap_err();
        assert_eq!(held.holder, "s1/c1");
        assert!(held.elsewhere);
        // The same window: refused, named as its own.
        let held = leases.acquire("w1", "x11:1", "s2/c1", 0, 1000).unwrap_err();
        assert!(!held.elsewhere);
        // The same holder may write another window of the domain; another domain is free.
        leases.acquire("w2", "x11:1", "s1/c1", 0, 1000).unwrap();
        leases.acquire("w3", "x11:2", "s2/c1", 0, 1000).unwrap();
        // An expired lease in the domain is no conflict.
        leases.acquire("w4", "x11:1", "s3/c1", 5000, 1000).unwrap();
        leases.release("w1", &a);
        assert_eq!(leases.holder("w1", 0), None);
    }
}
