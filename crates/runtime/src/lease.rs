//! Write leases: one per tab, generation-numbered, with an expiry. Reads never need one.

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
}

/// The lease table, keyed by the adapter's surface id.
#[derive(Debug, Default)]
pub(crate) struct Leases {
    table: Mutex<HashMap<String, Lease>>,
    generation: std::sync::atomic::AtomicU64,
    /// Woken whenever a lease is released or dropped.
    freed: tokio::sync::Notify,
}

impl Leases {
    /// Takes the tab's lease for `holder`, or names the live holder. An expired lease is taken over.
    pub(crate) fn acquire(
        &self,
        target: &str,
        holder: &str,
        now: u64,
        ttl_ms: u64,
    ) -> Result<Lease, LeaseHeld> {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(existing) = table.get(target)
            && existing.holder != holder
            && existing.expires_at > now
        {
            return Err(LeaseHeld {
                holder: existing.holder.clone(),
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
        table.insert(target.to_owned(), lease.clone());
        Ok(lease)
    }

    /// Who holds `target`'s live lease, if anyone.
    pub(crate) fn holder(&self, target: &str, now: u64) -> Option<String> {
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        table
            .get(target)
            .filter(|l| l.expires_at > now)
            .map(|l| l.holder.clone())
    }

    /// True when `lease` is still the live lease of `target`.
    pub(crate) fn is_current(&self, target: &str, lease: &Lease, now: u64) -> bool {
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        table
            .get(target)
            .is_some_and(|l| l.generation == lease.generation && l.expires_at > now)
    }

    /// Extends a live lease.
    pub(crate) fn renew(&self, target: &str, lease: &Lease, now: u64, ttl_ms: u64) -> bool {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        match table.get_mut(target) {
            Some(l) if l.generation == lease.generation => {
                l.expires_at = now + ttl_ms;
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
            .is_some_and(|l| l.generation == lease.generation)
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
    /// Takes the tab's lease for `holder` (see [`Leases::acquire`]) and keeps it alive.
    pub(crate) fn take(
        leases: &Arc<Leases>,
        target: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<HeldLease, LeaseHeld> {
        let ttl_ms = ttl.as_millis() as u64;
        let lease = leases.acquire(target, holder, now_ms(), ttl_ms)?;
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
