//! Process incarnations. Each runtime holds a lock file under `<data-dir>/instances/` for as
//! long as it lives and records its instance in the store under that name. At start it looks
//! at every instance that has not ended: one whose lock it can take died without cleaning up
//! (SIGKILL, a crash, power loss), and its records are reconciled into terminal or recoverable
//! states (`Store::end_instance`): sessions `abandoned` with tools inactive, unmarked agent tabs
//! closed, claimed tabs given back, marked tabs kept for a restore, pending approvals
//! `abandoned`. Several runtimes may share a data directory (`serve` beside `observe`): a lock
//! that is held belongs to a live process and is left alone. `shutdown` ends its own instance.
//!
//! Instances on several hosts that share one PostgreSQL database cannot see each other's lock
//! files. There each instance records a heartbeat every `heartbeat_interval`; one whose last
//! heartbeat is older than `takeover_after` is dead, and the first live instance to notice
//! takes it over — the staleness check and the reconciliation are one transaction
//! (`Store::take_over_instance`), so exactly one does — and restores its kept tabs in its own
//! browser. An instance that finds its own record ended (it stalled past the takeover time and
//! was taken over) is fenced: it reports not ready and starts no new work as the records' owner.

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};

use serde::Serialize;
use store::{InstanceEnd, Mark, Ownership, ResourceState};

use crate::RuntimeError;
use crate::runtime::{Runtime, now_ms};

/// The lock this process holds while it lives; the lock goes with the process, however it ends.
#[derive(Debug)]
pub(crate) struct InstanceLock {
    _file: File,
    path: PathBuf,
    pub(crate) name: String,
}

impl InstanceLock {
    /// Removes the lock file (orderly shutdown; the instance has ended).
    pub(crate) fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn lock_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("instances")
}

/// A data-directory failure in words a person can act on (a full disk says so).
pub(crate) fn data_dir_error(path: &Path, e: &std::io::Error) -> RuntimeError {
    let why = if e.kind() == std::io::ErrorKind::StorageFull {
        "the disk is full (no space left on device); free some space or use another --data-dir"
            .to_owned()
    } else if e.kind() == std::io::ErrorKind::PermissionDenied {
        "permission denied; use a directory you can write (--data-dir)".to_owned()
    } else {
        e.to_string()
    };
    RuntimeError::DataDir {
        path: path.display().to_string(),
        why,
    }
}

/// Takes this process's lock under the data directory.
pub(crate) fn take_lock(data_dir: &Path) -> Result<InstanceLock, RuntimeError> {
    use std::io::Write as _;
    let dir = lock_dir(data_dir);
    std::fs::create_dir_all(&dir).map_err(|e| data_dir_error(&dir, &e))?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!("{}-{nanos}.lock", std::process::id());
    let path = dir.join(&name);
    let mut file = File::create(&path).map_err(|e| data_dir_error(&path, &e))?;
    file.try_lock().map_err(|e| RuntimeError::DataDir {
        path: path.display().to_string(),
        why: format!("cannot lock: {e}"),
    })?;
    writeln!(file, "{}", std::process::id())
        .and_then(|()| file.sync_all())
        .map_err(|e| data_dir_error(&path, &e))?;
    Ok(InstanceLock {
        _file: file,
        path,
        name,
    })
}

/// Whether the process that holds (or held) this lock is gone.
fn is_dead(data_dir: &Path, lock_name: Option<&str>) -> bool {
    // Instances recorded before locks existed cannot be running beside a binary that has them.
    let Some(name) = lock_name else { return true };
    if name.contains('/') || name.contains("..") {
        return false; // not ours to judge
    }
    match File::open(lock_dir(data_dir).join(name)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(_) => false,
        Ok(file) => match file.try_lock() {
            Ok(()) => true,
            Err(TryLockError::WouldBlock) => false,
            Err(TryLockError::Error(_)) => false,
        },
    }
}

/// What a start found of processes that ended without cleaning up, and what it did with their
/// records (`browser_status` reports it; `serve` prints it).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Reconciliation {
    /// Earlier processes found dead.
    pub instances: usize,
    /// Their sessions that were still active, now `abandoned`.
    pub sessions: usize,
    /// Their unmarked agent tabs, recorded closed (closed now if the browser still had them).
    pub closed: usize,
    /// Claimed tabs given back to the person.
    pub released: usize,
    /// Marked tabs kept for the person (`retained`, waiting for a restore).
    pub kept: usize,
    /// Approvals that were still waiting, now `abandoned`.
    pub approvals: u64,
    /// Operations that were in flight, now `unknown` (never replayed).
    pub unknown_operations: u64,
    /// Runs that were running, now `abandoned`.
    pub abandoned_runs: u64,
    /// Milliseconds the reconciliation took.
    pub took_ms: u64,
}

impl Reconciliation {
    /// Nothing was found.
    pub fn is_empty(&self) -> bool {
        self.instances == 0
    }
}

impl Runtime {
    /// Reconciles the records of every earlier process that died without ending its instance.
    pub(crate) async fn reconcile_dead_instances(&self) -> Result<Reconciliation, RuntimeError> {
        let started = std::time::Instant::now();
        let store = &self.inner.store;
        let data_dir = &self.inner.config.data_dir;
        let mut done = Reconciliation::default();
        let remote = !self.adapter().launched();
        let shared = self.inner.config.store_url.is_some();
        let now = now_ms();
        let stale_before = now.saturating_sub(self.inner.config.takeover_after.as_millis() as u64);
        for instance in store.open_instances()? {
            if instance.id == self.inner.instance {
                continue;
            }
            let dead = if shared {
                instance.heartbeat_at.unwrap_or(instance.started_at) < stale_before
            } else {
                is_dead(data_dir, instance.lock_name.as_deref())
            };
            if !dead {
                continue;
            }
            // A launched browser died with its process group; a remote one may still show the
            // dead process's tabs: close the ones nobody keeps before forgetting their handles.
            if remote {
                for resource in store.instance_handles(instance.id)? {
                    let abandoned = resource
                        .session_id
                        .as_ref()
                        .and_then(|s| store.get_session(s).ok())
                        .is_some_and(|s| s.state == store::SessionState::Active);
                    if abandoned
                        && resource.ownership == Ownership::AgentCreated
                        && resource.mark == Mark::None
                        && resource.state != ResourceState::Released
                        && let Some(target) = &resource.cdp_target_id
                        && !self.close_target(target.as_str()).await
                    {
                        tracing::warn!(resource = %resource.id, "a tab of a dead process could not be closed; it stays in the remote browser");
                    }
                }
            }
            let report = if shared {
                // Another live instance may have taken it over first: then there is nothing to do.
                match store.take_over_instance(instance.id, stale_before, now_ms())? {
                    Some(report) => report,
                    None => continue,
                }
            } else {
                store.end_instance(instance.id, InstanceEnd::Abandoned, now_ms())?
            };
            if let Some(name) = &instance.lock_name
                && !name.contains('/')
                && !shared
            {
                let _ = std::fs::remove_file(lock_dir(data_dir).join(name));
            }
            tracing::info!(
                instance = instance.id.0,
                sessions = report.sessions.len(),
                closed = report.closed.len(),
                released = report.released.len(),
                kept = report.kept.len(),
                approvals = report.approvals,
                unknown_operations = report.unknown_operations,
                abandoned_runs = report.abandoned_runs,
                "reconciled the records of a process that ended without cleaning up"
            );
            done.instances += 1;
            done.sessions += report.sessions.len();
            done.closed += report.closed.len();
            done.released += report.released.len();
            done.kept += report.kept.len();
            done.approvals += report.approvals;
            done.unknown_operations += report.unknown_operations;
            done.abandoned_runs += report.abandoned_runs;
        }
        done.took_ms = started.elapsed().as_millis() as u64;
        Ok(done)
    }

    /// What this start reconciled of earlier processes that ended without cleaning up.
    pub fn reconciliation(&self) -> Reconciliation {
        self.inner
            .incarnation
            .reconciled
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Runtime {
    /// With a shared store: records a heartbeat every `heartbeat_interval` and takes over the
    /// instances that stopped recording theirs, restoring their kept tabs here. Ends with the
    /// runtime.
    pub(crate) fn keep_alive(&self) {
        if self.inner.config.store_url.is_none() {
            return;
        }
        let weak = std::sync::Arc::downgrade(&self.inner);
        let every = self.inner.config.heartbeat_interval;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                let runtime = Runtime { inner };
                if runtime
                    .inner
                    .connection
                    .stopped
                    .load(std::sync::atomic::Ordering::SeqCst)
                {
                    return;
                }
                match runtime
                    .inner
                    .store
                    .heartbeat(runtime.inner.instance, now_ms())
                {
                    Ok(true) => {}
                    Ok(false) => {
                        runtime.fence();
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "could not record this instance's heartbeat");
                        continue;
                    }
                }
                match runtime.reconcile_dead_instances().await {
                    Ok(done) if !done.is_empty() => {
                        tracing::info!(
                            instances = done.instances,
                            sessions = done.sessions,
                            kept = done.kept,
                            took_ms = done.took_ms,
                            "took over the sessions of an instance that stopped"
                        );
                        {
                            let mut total = runtime
                                .inner
                                .incarnation
                                .reconciled
                                .lock()
                                .unwrap_or_else(|p| p.into_inner());
                            total.add(&done);
                        }
                        runtime.request_restore();
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "could not look for instances that stopped")
                    }
                }
            }
        });
    }

    /// Another instance took this one's records over (it stalled past the takeover time): the
    /// records are no longer its to write. It stops — no new session or operation, its runs
    /// stopped, its browser (with its copies of the kept tabs the other instance restored)
    /// shut — and reports not ready; only its process's end remains.
    fn fence(&self) {
        use std::sync::atomic::Ordering;
        if self.inner.incarnation.fenced.swap(true, Ordering::SeqCst) {
            return;
        }
        tracing::error!(
            instance = self.inner.instance.0,
            "another instance took this instance's sessions over (its heartbeat was late); it is fenced: it serves nothing more and reports not ready"
        );
        self.inner.connection.stopping.store(true, Ordering::SeqCst);
        self.inner.runs.stop(None);
        self.inner.connection.stopped.store(true, Ordering::SeqCst);
        self.adapter().shutdown();
    }

    /// `backend_unavailable` once this instance is fenced.
    pub(crate) fn refuse_if_fenced(&self) -> Result<(), RuntimeError> {
        if self.fenced() {
            return Err(RuntimeError::Surface(surface::SurfaceError::BackendUnavailable {
                reason: "another instance took this instance's sessions over (it missed its heartbeats); reconnect to a live instance".into(),
            }));
        }
        Ok(())
    }

    /// Whether another instance took this one's records over (see [`Runtime::keep_alive`]).
    pub fn fenced(&self) -> bool {
        self.inner
            .incarnation
            .fenced
            .load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Reconciliation {
    fn add(&mut self, other: &Reconciliation) {
        self.instances += other.instances;
        self.sessions += other.sessions;
        self.closed += other.closed;
        self.released += other.released;
        self.kept += other.kept;
        self.approvals += other.approvals;
        self.unknown_operations += other.unknown_operations;
        self.abandoned_runs += other.abandoned_runs;
        self.took_ms += other.took_ms;
    }
}

/// This process's instance of the runtime.
pub(crate) struct Incarnation {
    /// Its lock under the data directory (the instance is alive while it is held).
    pub(crate) lock: InstanceLock,
    /// What its start (and, with a shared store, each takeover since) reconciled of processes
    /// that died without cleaning up.
    pub(crate) reconciled: std::sync::Mutex<Reconciliation>,
    /// Another instance took this one's records over.
    pub(crate) fenced: std::sync::atomic::AtomicBool,
}
