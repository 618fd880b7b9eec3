//! Tabs kept for a person across restarts and browser deaths (`004_…` 浏览器重启恢复).
//!
//! - **Location.** A watcher on the browser connection follows every tab Glovebox tracks
//!   (`SurfaceAdapter::events`: committed navigations, same-document ones included) and
//!   (and the title each observation shows: Chromium does not announce every title change,
//!   `Runtime::note_observed`) records its last confirmed URL and title as one pair, the URL through
//!   [`policy::restorable_url`] (credentials removed, the rest kept so it still opens). A tab
//!   that goes away without Glovebox closing it was closed by a person: it stays closed.
//! - **Site storage.** A tab kept for a person (marked deliverable or handoff, or retained) has
//!   its site's cookies and local storage saved under `<data-dir>/webtabs/` (0700, one 0600 file
//!   per tab, like a browser profile; never in the store or a log), refreshed when it is marked,
//!   kept at a turn end, and when it navigates. Ephemeral tabs save nothing.
//! - **Restore.** After a restart (the dead process's records reconciled) or a relaunch of a
//!   browser that died, every restorable record (`Store::restorable_resources`) gets a new page
//!   in the background — in a fresh isolated context per former session, seeded with its saved
//!   cookies and local storage (on its own origin, answered without the network) — at its last
//!   confirmed URL, and a new handle of this process. Old handles, frames and leases stay
//!   unusable; nothing of an agent resumes. A record without a usable URL is marked "restore
//!   failed" and not recreated. One restore runs at a time; a request during one (a host
//!   window registering) runs exactly one more pass after it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};
use store::{Mark, Ownership, Resource, ResourceId, ResourceState};
use surface::{KeptSite, Surface, SurfaceError, SurfaceEvent, SurfaceInfo};

use crate::RuntimeError;
use crate::runtime::{Runtime, now_ms};

/// A title is recorded up to this many characters.
const TITLE_MAX: usize = 300;
/// A tab's location is written at most this often; the latest one always lands (a trailing
/// write), so a page that rewrites its URL in a loop cannot make the store write per event.
const LOCATION_MIN_INTERVAL: Duration = Duration::from_millis(500);
/// A kept tab's site storage is saved on navigation at most this often.
const STORAGE_MIN_INTERVAL: Duration = Duration::from_secs(5);

/// The write throttle of one target's location.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LocationWrites {
    written: std::time::Instant,
    saved: Option<std::time::Instant>,
    trailing: bool,
}

/// How long one tab's restore may take.
const RESTORE_DEADLINE: Duration = Duration::from_secs(15);

/// Why a kept tab could not be restored now (the words a person reads; the next restore tries
/// again).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct RestoreFailure(String);

impl From<String> for RestoreFailure {
    fn from(why: String) -> Self {
        RestoreFailure(why)
    }
}

impl From<&str> for RestoreFailure {
    fn from(why: &str) -> Self {
        RestoreFailure(why.to_owned())
    }
}

/// What a restore pass did.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct RestoreReport {
    /// Tabs brought back.
    pub restored: Vec<String>,
    /// Tabs whose record cannot be reopened (listed as "restore failed", not tried again).
    pub failed: Vec<String>,
    /// Milliseconds the passes took.
    pub took_ms: u64,
    /// Passes run: 1, or 2 when a restore was asked for during the first.
    pub passes: u32,
}

/// The trailing location write, boxed as a `Send` future (it re-enters the watcher's handler).
fn trailing_refresh(
    runtime: Runtime,
    target: String,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(async move { runtime.refresh_location(&target).await })
}

/// A page's title as Glovebox records and shows it (`tabs`, `user_tabs`, `status`, the
/// console, the store): page-controlled text, with what carries a credential taken out
/// (`policy::redact_text`), bounded.
pub(crate) fn recorded_title(title: &str) -> String {
    policy::redact_text(title).chars().take(TITLE_MAX).collect()
}

/// A person's preview preferences for one tab (`POST /api/tabs/{id}/preview`): exactly these
/// fields, each optional (absent: off); anything else is refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreviewPrefs {
    /// The preview stays on this tab instead of following the agent.
    #[serde(default)]
    pub pinned: bool,
    /// The preview of this tab is hidden.
    #[serde(default)]
    pub hidden: bool,
}

impl Runtime {
    /// `text` (a title or an address of `target`) without the secrets typed into that target.
    pub(crate) fn without_typed_secrets(&self, target: &str, text: &str) -> String {
        match self
            .inner
            .typed_secrets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(target)
        {
            Some(secrets) => secrets.redact(text).into_owned(),
            None => text.to_owned(),
        }
    }
}

/// Where tabs came from and where they are going.
#[derive(Default)]
pub(crate) struct Provenance {
    /// Tabs a person offered (`register_user_tab`): the only tabs a session may claim. A tab a
    /// session released or handed over is the person's, but nobody offered it to other sessions.
    pub(crate) offered: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Targets Glovebox is closing or closed (a destroyed one not among them was closed by a
    /// person).
    pub(crate) closing: std::sync::Mutex<std::collections::HashSet<String>>,
}

/// Kept tabs' own state: one restore at a time (one more pass when asked during one), the last
/// restore's report, and per target when its location was last written and its site storage
/// last saved, with whether a trailing write is scheduled (a page cannot make the store write
/// per event).
#[derive(Default)]
pub(crate) struct Keeping {
    pub(crate) restoring: tokio::sync::Mutex<()>,
    pub(crate) restore_again: std::sync::atomic::AtomicBool,
    pub(crate) last_restore: std::sync::Mutex<Option<RestoreReport>>,
    pub(crate) location_writes: std::sync::Mutex<std::collections::HashMap<String, LocationWrites>>,
    /// The last title an observation showed per target ([`Runtime::note_observed`]).
    pub(crate) observed_titles: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

impl Runtime {
    fn webtabs_dir(&self) -> PathBuf {
        self.inner.config.data_dir.join("webtabs")
    }

    /// The file of a tab's saved site storage; `None` for an id that is not a plain name.
    fn site_storage_path(&self, resource: &str) -> Option<PathBuf> {
        resource
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            .then(|| self.webtabs_dir().join(format!("{resource}.json")))
    }

    fn write_site_storage(&self, resource: &str, saved: &KeptSite) -> std::io::Result<()> {
        use std::io::Write as _;
        use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
        let Some(path) = self.site_storage_path(resource) else {
            return Ok(());
        };
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(self.webtabs_dir())?;
        let tmp = path.with_extension("json.tmp");
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(&serde_json::to_vec(saved).map_err(std::io::Error::other)?)?;
        drop(file);
        std::fs::rename(&tmp, &path)
    }

    fn read_site_storage(&self, resource: &str) -> Option<KeptSite> {
        let bytes = std::fs::read(self.site_storage_path(resource)?).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    pub(crate) fn forget_site_storage(&self, resource: &str) {
        if let Some(path) = self.site_storage_path(resource) {
            let _ = std::fs::remove_file(path);
        }
    }

    /// The browser context a session's tabs live in (`None`: the default one).
    fn context_of(&self, session: Option<&str>) -> Option<String> {
        let state = self
            .inner
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(session?)
            .cloned()?;
        state
            .context_id
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Saves the site storage of a kept tab: its site's cookies from its browser context, and
    /// its origin's local storage when `tab` (an attachment) is given; without one, the local
    /// storage saved before is kept (`SurfaceAdapter::keep_site`).
    pub(crate) async fn save_site_storage(
        &self,
        resource: &str,
        session: Option<&str>,
        url: &str,
        tab: Option<&dyn Surface>,
    ) {
        let previous = self.read_site_storage(resource);
        let Some(kept) = self
            .adapter()
            .keep_site(self.context_of(session), url, tab, previous)
            .await
        else {
            return;
        };
        if let Err(e) = self.write_site_storage(resource, &kept) {
            tracing::warn!(resource, error = %e, "a kept tab's site storage could not be saved");
        }
    }

    /// Whether a tab's record says it is kept for a person (its site storage is saved).
    fn kept(resource: &Resource) -> bool {
        resource.mark != Mark::None || resource.state == ResourceState::Retained
    }

    /// A window one of a session's tabs opened outside any action (a click handler's delayed
    /// `window.open`, still within the click's user activation) is that session's own tab too,
    /// exactly as one an action opened ([`Runtime::adopt_opened`]): the browser names its
    /// opener. A window already recorded (by an action's adoption, or as anyone's tab) is left
    /// as it is; one whose opener no session holds (a person's tab) stays the person's.
    fn adopt_window(&self, info: &SurfaceInfo) {
        let Some(opener) = info.opener.as_deref() else {
            return;
        };
        let sessions: Vec<(String, std::sync::Arc<crate::runtime::SessionState>)> =
            crate::runtime::lock(&self.inner.sessions)
                .iter()
                .map(|(id, state)| (id.clone(), state.clone()))
                .collect();
        let held = sessions.into_iter().find_map(|(id, state)| {
            crate::runtime::lock(&state.tabs)
                .iter()
                .find(|t| t.target() == opener)
                .cloned()
                .map(|entry| (id, entry))
        });
        let Some((session, opener)) = held else {
            return;
        };
        if !matches!(
            self.inner
                .store
                .find_by_handle(&store::TargetId::new(&info.id)),
            Ok(None)
        ) {
            return;
        }
        let (runtime, window) = (self.clone(), info.id.clone());
        tokio::spawn(async move {
            runtime.adopt_opened(&session, &opener, &[window]).await;
        });
    }

    /// Follows the browser connection's targets for as long as it lives: locations of tracked
    /// tabs, and tabs closed without Glovebox. When a launched browser dies, relaunches it and
    /// restores what was kept (no restart of Glovebox needed).
    pub(crate) fn watch_browser(&self) {
        // The watcher must not keep the runtime alive: it holds it weakly, and ends with it.
        let weak = std::sync::Arc::downgrade(&self.inner);
        let runtime = self.clone();
        tokio::spawn(async move {
            let Some(mut events) = runtime.adapter().events().await else {
                return;
            };
            drop(runtime);
            while let Some(event) = events.recv().await {
                let Some(inner) = weak.upgrade() else { return };
                let runtime = Runtime { inner };
                match event {
                    SurfaceEvent::Changed(info) => runtime.on_target_changed(info).await,
                    SurfaceEvent::Destroyed(target) => runtime.on_target_destroyed(&target),
                }
            }
            // The connection ended. A launched browser that died is relaunched and what was
            // kept comes back; a shutdown, or a remote browser, is left to the next operation.
            let Some(inner) = weak.upgrade() else { return };
            let runtime = Runtime { inner };
            let launched = runtime.adapter().launched();
            if launched
                && runtime.inner.config.relaunch_dead_browser
                && !runtime.inner.connection.stopping.load(Ordering::SeqCst)
            {
                tracing::warn!("the browser connection ended; relaunching the browser");
                // The reconnect restores what was kept.
                match runtime.ensure_connected().await {
                    Ok(()) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "the browser could not be relaunched; the next operation tries again")
                    }
                }
            }
        });
    }

    async fn on_target_changed(&self, info: SurfaceInfo) {
        if !info.top_level {
            return;
        }
        self.adopt_window(&info);
        let target = &info.id;
        let save_storage = {
            let now = std::time::Instant::now();
            let mut writes = self
                .inner
                .keeping
                .location_writes
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if writes.len() > 4096 {
                writes.retain(|_, w| now.duration_since(w.written) < LOCATION_MIN_INTERVAL);
            }
            match writes.get_mut(target) {
                Some(w) if now.duration_since(w.written) < LOCATION_MIN_INTERVAL => {
                    if !w.trailing {
                        w.trailing = true;
                        let wait = LOCATION_MIN_INTERVAL - now.duration_since(w.written);
                        let (weak, target) =
                            (std::sync::Arc::downgrade(&self.inner), target.clone());
                        tokio::spawn(async move {
                            tokio::time::sleep(wait).await;
                            let Some(inner) = weak.upgrade() else { return };
                            if let Some(w) = inner
                                .keeping
                                .location_writes
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .get_mut(&target)
                            {
                                w.trailing = false;
                            }
                            trailing_refresh(Runtime { inner }, target).await;
                        });
                    }
                    return;
                }
                Some(w) => {
                    w.written = now;
                    let due = w
                        .saved
                        .is_none_or(|s| now.duration_since(s) >= STORAGE_MIN_INTERVAL);
                    if due {
                        w.saved = Some(now);
                    }
                    due
                }
                None => {
                    writes.insert(
                        target.clone(),
                        LocationWrites {
                            written: now,
                            saved: Some(now),
                            trailing: false,
                        },
                    );
                    true
                }
            }
        };
        let Ok(Some(resource)) = self
            .inner
            .store
            .find_by_handle(&store::TargetId::new(target))
        else {
            return;
        };
        let Some(url) = policy::restorable_url(&info.url) else {
            return;
        };
        let url = self.without_typed_secrets(target, &url);
        let title = recorded_title(&self.without_typed_secrets(target, &info.title));
        // A page without a title yet always gets its title looked for again below.
        if !title.is_empty()
            && resource.url.as_deref() == Some(url.as_str())
            && resource.title.as_deref() == Some(title.as_str())
        {
            return;
        }
        // No title yet is no title: the pair must never show an older page's title with a newer URL.
        let placeholder = title.is_empty();
        if placeholder {
            // Chromium announces no title change: look again shortly for the page's title.
            let (weak, target) = (std::sync::Arc::downgrade(&self.inner), target.clone());
            tokio::spawn(async move {
                for wait in [300, 1000, 3000] {
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                    let Some(inner) = weak.upgrade() else { return };
                    if (Runtime { inner }).titled(&target).await {
                        return;
                    }
                }
            });
        }
        if resource.url.as_deref() == Some(url.as_str())
            && resource.title.as_deref() == Some(title.as_str())
        {
            return;
        }
        if let Err(e) = self
            .inner
            .store
            .update_location(&resource.id, &url, &title, now_ms())
        {
            tracing::debug!(error = %e, "a tab's location could not be recorded");
            return;
        }
        if save_storage && Self::kept(&resource) {
            self.save_site_storage(
                resource.id.as_str(),
                resource.session_id.as_ref().map(|s| s.as_str()),
                &info.url,
                None,
            )
            .await;
        }
    }

    /// What the browser reports of a target now.
    async fn target_info(&self, target: &str) -> Option<SurfaceInfo> {
        self.adapter()
            .list()
            .await
            .ok()?
            .into_iter()
            .find(|t| t.id == target)
    }

    /// Records a tracked tab's location as the browser reports it now.
    pub(crate) async fn refresh_location(&self, target: &str) {
        if let Some(info) = self.target_info(target).await {
            self.on_target_changed(info).await;
        }
    }

    /// What an observation or an action's fresh observation showed of a tab: when its title is
    /// not the last one seen, the tab's location is read and recorded afresh (through the same
    /// throttle as an announced change). Chromium announces navigations, but not every change
    /// of `document.title` (`Target.targetInfoChanged` came for one title of a page that set a
    /// new one every 200 ms): the titles the runtime sees are recorded too. In the background:
    /// nothing waits for the store.
    pub(crate) fn note_observed(&self, target: &str, title: &str) {
        {
            let mut seen = self
                .inner
                .keeping
                .observed_titles
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if seen.get(target).is_some_and(|t| t == title) {
                return;
            }
            if seen.len() > 4096 {
                seen.clear();
            }
            seen.insert(target.to_owned(), title.to_owned());
        }
        let (weak, target) = (std::sync::Arc::downgrade(&self.inner), target.to_owned());
        tokio::spawn(async move {
            if let Some(inner) = weak.upgrade() {
                trailing_refresh(Runtime { inner }, target).await;
            }
        });
    }

    /// Records the page's title once it has one (`true`), or says it has none yet.
    async fn titled(&self, target: &str) -> bool {
        let Some(info) = self.target_info(target).await else {
            return true;
        };
        if info.title.is_empty() {
            return false;
        }
        let Ok(Some(resource)) = self
            .inner
            .store
            .find_by_handle(&store::TargetId::new(target))
        else {
            return true;
        };
        // Only the page the record's URL names gets this title (one pair).
        let url = policy::restorable_url(&info.url).map(|u| self.without_typed_secrets(target, &u));
        if url.as_deref() == resource.url.as_deref() {
            let title = recorded_title(&self.without_typed_secrets(target, &info.title));
            let _ = self.inner.store.update_location(
                &resource.id,
                resource.url.as_deref().unwrap_or_default(),
                &title,
                now_ms(),
            );
        }
        true
    }

    fn on_target_destroyed(&self, target: &str) {
        // A closed page echoes nothing more.
        self.inner
            .typed_secrets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(target);
        if self
            .inner
            .provenance
            .closing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(target)
        {
            return; // Glovebox closed it
        }
        let Ok(Some(resource)) = self
            .inner
            .store
            .find_by_handle(&store::TargetId::new(target))
        else {
            return;
        };
        if matches!(
            resource.state,
            ResourceState::Released | ResourceState::Finalizing
        ) && resource.ownership != Ownership::User
        {
            return;
        }
        self.inner.leases.invalidate(target);
        match self.inner.store.close_by_person(&resource.id, now_ms()) {
            Ok(_) => {
                self.forget_site_storage(resource.id.as_str());
                self.inner
                    .provenance
                    .offered
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(resource.id.as_str());
                tracing::info!(resource = %resource.id, "a tab was closed outside Glovebox; it stays closed");
            }
            Err(e) => {
                tracing::warn!(error = %e, "a tab closed outside Glovebox could not be recorded")
            }
        }
    }

    /// A person closes a page (the console's close, the person channel): it stays closed and is
    /// listed as closed; whatever session held it loses it.
    pub async fn close_by_person(&self, resource: &str) -> Result<(), RuntimeError> {
        let id = ResourceId::new(resource);
        let record =
            self.inner
                .store
                .get_resource(&id)
                .map_err(|_| RuntimeError::UnknownSurface {
                    name: resource.to_owned(),
                    known: "a tab of GET /api/tabs".into(),
                })?;
        if record.closed_by_person {
            return Ok(());
        }
        if let Some(target) = &record.cdp_target_id
            && record.instance == Some(self.inner.instance)
        {
            self.inner.leases.invalidate(target.as_str());
            // Whichever session shows it drops it.
            let sessions = self.session_states();
            for state in sessions {
                let taken: Vec<_> = {
                    let mut tabs = state.tabs.lock().unwrap_or_else(|p| p.into_inner());
                    let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut *tabs)
                        .into_iter()
                        .partition(|t| t.resource == resource);
                    *tabs = kept;
                    gone
                };
                for entry in taken {
                    entry
                        .debugger
                        .detach(Some(crate::debugger::Retired::Closed))
                        .await;
                }
            }
            if !self.close_target(target.as_str()).await {
                return Err(RuntimeError::Surface(SurfaceError::Timeout {
                    what: "closing the tab".into(),
                    after_ms: 5000,
                }));
            }
        }
        self.inner.store.close_by_person(&id, now_ms())?;
        self.forget_site_storage(resource);
        self.inner
            .provenance
            .offered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(resource);
        Ok(())
    }

    /// Every tab record, for a person (the console's Resources, `GET /api/tabs`): live ones,
    /// kept ones, those a person closed (listed as closed) and those whose restore failed. URLs
    /// are redacted.
    pub fn tabs_for_person(&self) -> Result<Vec<Value>, RuntimeError> {
        let resources = self.inner.store.list_all_resources()?;
        Ok(resources
            .into_iter()
            .filter(|r| r.kind == store::ResourceKind::Tab)
            .map(|r| {
                let live = r.cdp_target_id.is_some() && r.instance == Some(self.inner.instance) && !r.handle_lost;
                let state = if r.closed_by_person {
                    "closed"
                } else if r.restore_error.is_some() && !live {
                    "restore_failed"
                } else if live && (r.state != ResourceState::Released || r.ownership == Ownership::User) {
                    "open"
                } else if r.handle_lost {
                    "restoring"
                } else {
                    "gone"
                };
                let control = if live { self.control_of(r.id.as_str()) } else { crate::Control::Idle };
                let offered = self.inner.provenance.offered.lock().unwrap_or_else(|p| p.into_inner()).contains(r.id.as_str());
                // A person's tab nobody offered yet: the console offers it to sessions.
                let offerable = !offered && self.persons_open_tab(&r);
                // What the agent typed is held in the tab: where its requests may go, what was refused.
                let held = if live { self.network_hold_of(r.id.as_str()) } else { None };
                // A tab a page opened: by which of its session's tabs, and whether a person linked
                // it for runs (the console's Link button, `POST /api/tabs/{id}/link`).
                let popup = if live { self.popup_of(r.id.as_str()) } else { None };
                json!({
                    "tab": r.id.as_str(), "session": r.session_id.as_ref().map(|s| s.as_str()), "ownership": r.ownership.as_str(), "control": control,
                    "mark": r.mark.as_str(), "record_state": r.state.as_str(), "state": state,
                    "url": r.url.as_deref().map(policy::redact_url), "title": r.title, "branch": r.branch,
                    "preview": r.preview.as_deref().and_then(|p| serde_json::from_str::<Value>(p).ok()),
                    "restored_at": r.restored_at, "restore_error": r.restore_error, "closed_at": r.closed_at,
                    "offered": offered, "offerable": offerable, "network_hold": held,
                    "opened_by": popup.map(|(opener, _)| format!("s{opener}")),
                    "linkable": popup.is_some_and(|(_, linked)| !linked),
                })
            })
            .collect())
    }

    /// A read-only image of a tab for a person (the console's preview of the exact page): its
    /// viewport as JPEG, through a short attachment of its own — never through an agent's lease,
    /// never an input, nothing changed on the page.
    pub async fn person_screenshot(&self, resource: &str) -> Result<Vec<u8>, RuntimeError> {
        let target = self.person_target(resource)?;
        Ok(self.adapter().person_image(target).await?)
    }

    /// The opener's key of a popup a session adopted, and whether a person linked it.
    fn popup_of(&self, resource: &str) -> Option<(u32, bool)> {
        let (_, entry) = self.control_target(resource).ok()?;
        let entry = entry?;
        Some((entry.opened_by?, entry.linked_in.is_some()))
    }

    fn network_hold_of(&self, resource: &str) -> Option<surface::NetworkHold> {
        let (_, entry) = self.control_target(resource).ok()?;
        entry?.debugger.network_hold()
    }

    /// A person lets a tab that holds what the agent typed (`Surface::network_hold`) reach
    /// `origin` too, for as long as the hold lasts: its requests to that origin stop being
    /// refused. Only a person: no agent transport reaches this. Returns the hold as it is now.
    pub fn allow_origin_for_tab(
        &self,
        resource: &str,
        origin: &str,
    ) -> Result<surface::NetworkHold, RuntimeError> {
        let origin = policy::Origin::parse(origin)
            .ok()
            .filter(|o| matches!(o.scheme(), policy::Scheme::Http | policy::Scheme::Https))
            .ok_or_else(|| {
                RuntimeError::InvalidAction(format!(
                    "{:?} is not an http(s) origin (scheme://host[:port])",
                    policy::redact_url(origin)
                ))
            })?;
        let (_, entry) = self.control_target(resource)?;
        let not_held = || {
            RuntimeError::InvalidAction(
                "the tab holds nothing the agent typed: its requests are not held, nothing to allow".into(),
            )
        };
        let entry = entry.ok_or_else(not_held)?;
        if !entry.debugger.allow_origin(&origin) {
            return Err(not_held());
        }
        tracing::info!(resource, origin = %origin.serialize_web(), "a person let a held tab reach an origin");
        entry.debugger.network_hold().ok_or_else(not_held)
    }

    /// A person's preview preferences for a tab (the console's pin and hide): stored, restored
    /// with the tab, never read by a lifecycle decision.
    pub fn set_preview(&self, resource: &str, preview: &PreviewPrefs) -> Result<(), RuntimeError> {
        let stored =
            serde_json::to_string(preview).map_err(|e| RuntimeError::Internal(e.to_string()))?;
        self.inner
            .store
            .set_preview(&ResourceId::new(resource), &stored, now_ms())
            .map_err(|_| RuntimeError::UnknownSurface {
                name: resource.to_owned(),
                known: "a tab of GET /api/tabs".into(),
            })
    }

    /// Brings back every restorable tab (see the module docs); one pass at a time, and a request
    /// during a pass runs exactly one more after it.
    pub async fn restore_kept(&self) -> RestoreReport {
        let Ok(_one) = self.inner.keeping.restoring.try_lock() else {
            self.inner
                .keeping
                .restore_again
                .store(true, Ordering::SeqCst);
            return RestoreReport::default();
        };
        // A request that came before this pass began is served by it.
        self.inner
            .keeping
            .restore_again
            .store(false, Ordering::SeqCst);
        let mut report = self.restore_pass().await;
        report.passes = 1;
        while self
            .inner
            .keeping
            .restore_again
            .swap(false, Ordering::SeqCst)
        {
            let again = self.restore_pass().await;
            report.restored.extend(again.restored);
            report.failed.extend(again.failed);
            report.took_ms += again.took_ms;
            report.passes += 1;
        }
        *self
            .inner
            .keeping
            .last_restore
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(report.clone());
        report
    }

    /// Asks for a restore in the background (a host window registered, the runtime started).
    pub fn request_restore(&self) {
        let runtime = self.clone();
        tokio::spawn(async move {
            let report = runtime.restore_kept().await;
            if !report.restored.is_empty() || !report.failed.is_empty() {
                tracing::info!(
                    restored = report.restored.len(),
                    failed = report.failed.len(),
                    took_ms = report.took_ms,
                    "restored kept tabs"
                );
            }
        });
    }

    /// What the last restore did.
    pub fn last_restore(&self) -> Option<RestoreReport> {
        self.inner
            .keeping
            .last_restore
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    async fn restore_pass(&self) -> RestoreReport {
        let started = std::time::Instant::now();
        let mut report = RestoreReport::default();
        let Ok(records) = self.inner.store.restorable_resources() else {
            return report;
        };
        // First, in order: which records can be reopened at all, the fresh isolated context of
        // each former session (its tabs shared one before), and each (context, origin)'s site
        // storage seeded once, from the tab whose storage was saved last.
        let mut contexts: HashMap<String, Option<String>> = HashMap::new();
        let mut ready = Vec::new();
        let mut seeds: HashMap<(Option<String>, String), (std::time::SystemTime, KeptSite)> =
            HashMap::new();
        for record in records {
            if self.inner.connection.stopping.load(Ordering::SeqCst) {
                return report;
            }
            // A tab a live session of another instance (sharing the store) still owns is that
            // instance's to restore, into that session.
            let elsewhere = record
                .session_id
                .as_ref()
                .and_then(|s| self.inner.store.get_session(s).ok())
                .is_some_and(|s| {
                    s.state == store::SessionState::Active
                        && s.instance.is_some_and(|i| i != self.inner.instance)
                });
            if elsewhere {
                continue;
            }
            let id = record.id.to_string();
            // A record that cannot be reopened is marked failed and not tried again; a browser
            // that fails (or stops) now leaves it to the next restore.
            let url = record.url.as_deref().and_then(policy::restorable_url);
            let unusable = match &url {
                None => {
                    Some("its last confirmed address is not one that can be reopened".to_owned())
                }
                Some(url) => policy::check_navigation(url, &self.inner.config.navigation)
                    .err()
                    .map(|e| format!("policy refuses its address now: {e}")),
            };
            if let Some(why) = unusable {
                tracing::warn!(resource = %id, %why, "a kept tab cannot be restored");
                let _ = self.inner.store.restore_failed(&record.id, &why, now_ms());
                report.failed.push(id);
                continue;
            }
            let context = match self.restore_context(&record, &mut contexts).await {
                Ok(context) => context,
                Err(why) => {
                    tracing::warn!(resource = %id, %why, "a kept tab could not be restored now; the next restore tries again");
                    continue;
                }
            };
            if let Some(saved) = self.read_site_storage(record.id.as_str()) {
                let saved_at = self
                    .site_storage_path(record.id.as_str())
                    .and_then(|p| std::fs::metadata(p).ok())
                    .and_then(|m| m.modified().ok());
                let saved_at = saved_at.unwrap_or(std::time::UNIX_EPOCH);
                let key = (context.clone(), saved.origin.clone());
                let newer = seeds.get(&key).is_none_or(|(at, _)| *at < saved_at);
                if newer {
                    seeds.insert(key, (saved_at, saved));
                }
            }
            ready.push((record, url.unwrap_or_default(), context));
        }
        for ((context, origin), (_, saved)) in &seeds {
            if let Err(why) = self.seed_site_storage(saved, context.clone()).await {
                tracing::warn!(%origin, %why, "a kept site's storage could not be restored; its tabs open without it");
            }
        }
        // Then every page at once.
        let mut pages = tokio::task::JoinSet::new();
        for (record, url, context) in ready {
            let runtime = self.clone();
            pages.spawn(async move {
                let id = record.id.to_string();
                let outcome = tokio::time::timeout(
                    RESTORE_DEADLINE,
                    runtime.restore_one(&record, url, context),
                )
                .await;
                (id, outcome)
            });
        }
        while let Some(done) = pages.join_next().await {
            let Ok((id, outcome)) = done else { continue };
            match outcome {
                Ok(Ok(())) => report.restored.push(id),
                Ok(Err(why)) => {
                    tracing::warn!(resource = %id, %why, "a kept tab could not be restored now; the next restore tries again")
                }
                Err(_) => {
                    tracing::warn!(resource = %id, "a kept tab's restore timed out; the next restore tries again")
                }
            }
        }
        report.restored.sort();
        report.took_ms = started.elapsed().as_millis() as u64;
        report
    }

    /// The context a restored tab opens in: a person's own tab in the default one, as it was; a
    /// session's in a fresh isolated one per former session (unless the configuration shares one).
    async fn restore_context(
        &self,
        record: &Resource,
        contexts: &mut HashMap<String, Option<String>>,
    ) -> Result<Option<String>, RestoreFailure> {
        match (&record.session_id, self.inner.config.share_browser_context) {
            (Some(session), false) if record.ownership != Ownership::User => {
                if let Some(c) = contexts.get(session.as_str()) {
                    return Ok(c.clone());
                }
                let context = self
                    .adapter()
                    .create_context(false)
                    .await
                    .map_err(|e| format!("no browser context: {e}"))?;
                contexts.insert(session.to_string(), Some(context.clone()));
                Ok(Some(context))
            }
            _ => Ok(None),
        }
    }

    async fn restore_one(
        &self,
        record: &Resource,
        url: String,
        context: Option<String>,
    ) -> Result<(), RestoreFailure> {
        let created = self
            .adapter()
            .open_detached(url, context, true)
            .await
            .map_err(|e| format!("no page: {e}"))?;
        let restored = match self.inner.store.restored(
            &record.id,
            &store::TargetId::new(&created),
            self.inner.instance,
            now_ms(),
        ) {
            Ok(restored) => restored,
            Err(e) => {
                // Another instance sharing the store restored it first (or the record moved):
                // the page made here is nobody's.
                self.close_target(&created).await;
                return Err(e.to_string().into());
            }
        };
        // What the page reported before its handle was on record is read once now.
        self.refresh_location(&created).await;
        // A tab a live session still owns (the browser died under it) goes back into that
        // session as a new surface: its old key, refs and frames stay invalid.
        let live = restored.session_id.as_ref().and_then(|s| {
            self.inner
                .sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(s.as_str())
                .cloned()
        });
        match live {
            Some(state) if restored.state == ResourceState::Owned => {
                let session = restored
                    .session_id
                    .as_ref()
                    .map(|s| s.to_string())
                    .unwrap_or_default();
                self.attach_entry(&state, &session, restored.id.as_str(), &created)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            // Its session is gone: the tab (and its cookies) is the person's, who may offer it
            // to a session (`Runtime::offer_tab`); no session claims it without them.
            _ => {}
        }
        Ok(())
    }

    /// Puts a kept site's saved state (cookies, local storage) into `context`
    /// (`SurfaceAdapter::restore_site`).
    async fn seed_site_storage(
        &self,
        saved: &KeptSite,
        context: Option<String>,
    ) -> Result<(), RestoreFailure> {
        self.adapter()
            .restore_site(saved, context)
            .await
            .map_err(|e| RestoreFailure(e.to_string()))
    }
}
