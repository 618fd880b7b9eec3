//! Surfaces of a turn: canonical keys `s1…`, aliases (`web:N`, `focused`), the primary surface,
//! capabilities, and bounded previews. A tab's key number is given once when the session gets the
//! tab and never reused (`TabEntry::key`): `sN` and `web:N` name that tab for its whole life and
//! nothing after it — a closed tab's key is `unknown_surface`, never its neighbour.

use std::time::Duration;

use protocol::{
    Capability, ContextId, InputRoute, ProviderRequestId, SessionId, SurfaceAlias, SurfaceContext,
    SurfaceEntry, SurfaceKey, SurfaceKind, TurnId,
};

use crate::RuntimeError;
use crate::runtime::{Runtime, TabEntry, now_ms};

fn controllable(entry: &TabEntry) -> bool {
    entry.capabilities.contains(&Capability::Observe)
}

/// The alias prefix of a surface kind: `web:N` names a tab, `window:N` a desktop window,
/// `guest:N` a VM guest's screen.
pub(crate) fn alias_prefix(kind: SurfaceKind) -> &'static str {
    match kind {
        SurfaceKind::WebTab => "web",
        SurfaceKind::X11Window | SurfaceKind::X11Screen => "window",
        SurfaceKind::VmScreen => "guest",
    }
}

/// All names that resolve right now, for error messages.
pub(crate) fn names(
    tabs: &[TabEntry],
    focused: Option<crate::SurfaceId>,
    kind: SurfaceKind,
) -> Vec<String> {
    let mut names = Vec::new();
    for t in tabs {
        names.push(format!("s{}", t.key));
        names.push(format!("{}:{}", alias_prefix(kind), t.key));
        if Some(t.surface) == focused {
            names.push("focused".into());
        }
    }
    names
}

/// The index of the tab a key or alias names.
pub(crate) fn lookup(
    tabs: &[TabEntry],
    focused: Option<crate::SurfaceId>,
    kind: SurfaceKind,
    name: &str,
) -> Option<usize> {
    if name == "focused" {
        return tabs
            .iter()
            .position(|t| Some(t.surface) == focused && controllable(t));
    }
    let n: u32 = name
        .strip_prefix('s')
        .or_else(|| name.strip_prefix(alias_prefix(kind))?.strip_prefix(':'))?
        .parse()
        .ok()?;
    tabs.iter().position(|t| t.key == n)
}

/// The focused controllable tab, else the only controllable one, else none (ambiguous).
pub(crate) fn primary(tabs: &[TabEntry], focused: Option<crate::SurfaceId>) -> Option<usize> {
    if let Some(i) = tabs
        .iter()
        .position(|t| Some(t.surface) == focused && controllable(t))
    {
        return Some(i);
    }
    let mut controllable_tabs = tabs.iter().enumerate().filter(|(_, t)| controllable(t));
    match (controllable_tabs.next(), controllable_tabs.next()) {
        (Some((i, _)), None) => Some(i),
        _ => None,
    }
}

impl Runtime {
    /// The Surface Context of a turn: every tab of the session with its key, aliases and
    /// capabilities; a bounded preview for each one the agent may read; the primary key.
    pub async fn surface_context(
        &self,
        session: &SessionId,
        turn: &str,
        revision: u64,
    ) -> Result<SurfaceContext, RuntimeError> {
        let session = session.as_str();
        let (state, _op) = self.begin(session).await?;
        let tabs = state.tabs.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let focused = *state.focused.lock().unwrap_or_else(|p| p.into_inner());
        let internal = |e: String| RuntimeError::Internal(e);
        let kind = self.inner.adapter.kind();
        let mut surfaces = Vec::new();
        for entry in &tabs {
            let key = SurfaceKey::from_index(entry.key);
            let mut aliases = vec![
                SurfaceAlias::new(format!("{}:{}", alias_prefix(kind), entry.key))
                    .map_err(|e| internal(e.to_string()))?,
            ];
            if Some(entry.surface) == focused && controllable(entry) {
                aliases.push(SurfaceAlias::new("focused").map_err(|e| internal(e.to_string()))?);
            }
            // A surface the user closed to the agent is listed, without content.
            let (preview, input, own_kind) = if controllable(entry) {
                // A tab that cannot be attached (gone, browser busy) previews as unavailable,
                // like one that cannot be read: the turn still gets its context.
                let (preview, input, own_kind) = self
                    .preview_and_input(entry, Duration::from_millis(1500))
                    .await;
                (Some(preview), input, own_kind)
            } else {
                (None, Vec::new(), None)
            };
            let mut listed = SurfaceEntry::new(
                key,
                aliases,
                own_kind.unwrap_or(kind),
                None,
                entry.capabilities.clone(),
                preview,
            )
            .map_err(|e| internal(e.to_string()))?
            .with_input(input);
            if let Some(opener) = entry.opened_by {
                listed = listed.opened_by(SurfaceKey::from_index(opener));
            }
            surfaces.push(listed);
        }
        let primary = primary(&tabs, focused).map(|i| SurfaceKey::from_index(tabs[i].key));
        SurfaceContext::new(
            ContextId::new(format!("ctx_{session}_{revision}"))
                .map_err(|e| internal(e.to_string()))?,
            revision,
            TurnId::new(turn).map_err(|e| internal(e.to_string()))?,
            ProviderRequestId::new(format!("req_{}", now_ms()))
                .map_err(|e| internal(e.to_string()))?,
            primary,
            surfaces,
        )
        .map_err(|e| internal(e.to_string()))
    }
}

impl Runtime {
    /// The bounded preview of one tab (`unavailable` when it cannot be attached or read).
    pub(crate) async fn preview_entry(
        &self,
        entry: &TabEntry,
        deadline: Duration,
    ) -> protocol::Preview {
        self.preview_and_input(entry, deadline).await.0
    }

    /// The bounded preview of one tab, how input reaches it as its adapter measured
    /// (`unavailable` both when it cannot be attached), and its kind when it is not the
    /// adapter's usual one.
    async fn preview_and_input(
        &self,
        entry: &TabEntry,
        deadline: Duration,
    ) -> (protocol::Preview, Vec<InputRoute>, Option<SurfaceKind>) {
        match self.attach(entry).await {
            Ok(attached) => {
                let preview = attached.tab().preview(deadline).await;
                (
                    preview,
                    attached.tab().input_routes(),
                    attached.tab().surface_kind(),
                )
            }
            Err(_) => (
                protocol::Preview::unavailable(String::new(), String::new(), now_ms()),
                vec![InputRoute::Unavailable],
                None,
            ),
        }
    }

    /// The preview of a surface of the session (its read barrier, like any observation).
    pub(crate) async fn preview_of(
        &self,
        session: &SessionId,
        surface: crate::SurfaceId,
        deadline: Duration,
    ) -> protocol::Preview {
        let Ok((state, _op)) = self.begin(session.as_str()).await else {
            return protocol::Preview::unavailable(String::new(), String::new(), now_ms());
        };
        let entry = state
            .tabs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|t| t.surface == surface)
            .cloned();
        match entry {
            Some(entry) => self.preview_entry(&entry, deadline).await,
            None => protocol::Preview::unavailable(String::new(), String::new(), now_ms()),
        }
    }
}
