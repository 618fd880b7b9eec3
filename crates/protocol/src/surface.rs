//! The server-owned Surface Context a model gets at turn start (`000_…` §06), and resolving a
//! model's `surface` against it; not the registry, bindings or leases that produce it.
//!
//! A context is immutable once built: aliases resolve only in the snapshot of the provider
//! request that produced the tool schema, never in a later "latest" map.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::error::ErrorCode;
use crate::ids::{ContextId, ProviderRequestId, SurfaceAlias, SurfaceKey, SurfaceName, TurnId};
use crate::observation::SurfaceKind;
use crate::preview::Preview;

/// What a surface lets the agent do. `interact` and `navigate` require `observe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// Read structure and previews (risk tier R0).
    Observe,
    /// Click, type, press, scroll, hover, select.
    Interact,
    /// Navigate the leased tab.
    Navigate,
}

/// How input reaches a surface, as the adapter measured it (`004_…`: declared, never assumed).
/// Distinct from [`Capability`], which is what a person permits.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum InputRoute {
    /// Through the application's accessibility interface (actions, text, values), without
    /// focus or the pointer: the window need not be in front.
    BackgroundAx,
    /// Input delivered to the surface itself, whatever holds the screen's focus (a browser
    /// tab's input over its debugging protocol).
    BackgroundInput,
    /// The display's one keyboard and pointer: the window is brought to the front and its
    /// focus confirmed before keys, and a covered point is refused.
    ForegroundInput,
    /// Only pixels and window facts: no input route was found.
    ScreenshotOnly,
    /// Not even that now (the window or the display is gone or unreachable).
    Unavailable,
}

/// Where a surface sits in the verified layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Region {
    /// The left pane.
    Left,
    /// The right pane.
    Right,
    /// The center tab area.
    Center,
}

/// One surface of a turn, as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SurfaceEntry {
    surface_key: SurfaceKey,
    aliases: Vec<SurfaceAlias>,
    kind: SurfaceKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<Region>,
    capabilities: Vec<Capability>,
    /// How input reaches it, as measured (empty: not known yet).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    input: Vec<InputRoute>,
    /// Absent when the user turned page control off: the model learns the surface exists
    /// but gets no page content.
    #[serde(skip_serializing_if = "Option::is_none")]
    preview: Option<Preview>,
    /// The surface of this context that opened this one (a popup, a `target=_blank` link).
    #[serde(skip_serializing_if = "Option::is_none")]
    opened_by: Option<SurfaceKey>,
    untrusted_content: bool,
}

/// Why a surface entry or a context is inconsistent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SurfaceContextError {
    /// `interact` or `navigate` without `observe`.
    #[error("surface {0} has interact or navigate without observe")]
    CapabilityWithoutObserve(SurfaceKey),
    /// Two surfaces share a key.
    #[error("surface key {0} is used twice")]
    DuplicateKey(SurfaceKey),
    /// Two surfaces share an alias.
    #[error("alias {0} names two surfaces")]
    DuplicateAlias(SurfaceAlias),
    /// The primary key names no surface.
    #[error("primary surface {0} is not in the context")]
    UnknownPrimary(SurfaceKey),
}

impl SurfaceEntry {
    /// A surface; capabilities are sorted and de-duplicated and must include `observe`
    /// whenever they include `interact` or `navigate`.
    pub fn new(
        surface_key: SurfaceKey,
        aliases: Vec<SurfaceAlias>,
        kind: SurfaceKind,
        region: Option<Region>,
        mut capabilities: Vec<Capability>,
        preview: Option<Preview>,
    ) -> Result<Self, SurfaceContextError> {
        capabilities.sort();
        capabilities.dedup();
        let writes = capabilities.iter().any(|c| *c != Capability::Observe);
        if writes && !capabilities.contains(&Capability::Observe) {
            return Err(SurfaceContextError::CapabilityWithoutObserve(surface_key));
        }
        Ok(Self {
            surface_key,
            aliases,
            kind,
            region,
            capabilities,
            input: Vec::new(),
            preview,
            opened_by: None,
            untrusted_content: true,
        })
    }

    /// The same surface, marked as opened by the surface `opener` of its context.
    pub fn opened_by(mut self, opener: SurfaceKey) -> Self {
        self.opened_by = Some(opener);
        self
    }

    /// The same surface, with the input routes its adapter measured.
    pub fn with_input(mut self, mut routes: Vec<InputRoute>) -> Self {
        routes.sort();
        routes.dedup();
        self.input = routes;
        self
    }

    /// How input reaches the surface, as measured.
    pub fn input(&self) -> &[InputRoute] {
        &self.input
    }

    /// The surface of the context that opened this one, if one did.
    pub fn opener(&self) -> Option<&SurfaceKey> {
        self.opened_by.as_ref()
    }

    /// The canonical key.
    pub fn surface_key(&self) -> &SurfaceKey {
        &self.surface_key
    }
    /// The aliases.
    pub fn aliases(&self) -> &[SurfaceAlias] {
        &self.aliases
    }
    /// The surface kind.
    pub fn kind(&self) -> SurfaceKind {
        self.kind
    }
    /// The layout region, when unique.
    pub fn region(&self) -> Option<Region> {
        self.region
    }
    /// The capabilities, sorted.
    pub fn capabilities(&self) -> &[Capability] {
        &self.capabilities
    }
    /// Whether the surface has `capability`.
    pub fn can(&self, capability: Capability) -> bool {
        self.capabilities.contains(&capability)
    }
    /// The preview, if page content may be shown.
    pub fn preview(&self) -> Option<&Preview> {
        self.preview.as_ref()
    }
}

/// Why a model's `surface` does not resolve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SurfaceError {
    /// No `surface` was given and there is no primary surface.
    #[error("no surface given and this turn has no primary surface")]
    Ambiguous,
    /// The name is not a key or alias of this context.
    #[error("unknown surface {0}")]
    Unknown(String),
}

impl SurfaceError {
    /// The wire error code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Ambiguous => ErrorCode::AmbiguousSurface,
            Self::Unknown(_) => ErrorCode::UnknownSurface,
        }
    }
}

/// The server-owned Surface Context of one turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SurfaceContext {
    context_id: ContextId,
    context_revision: u64,
    turn_id: TurnId,
    provider_request_id: ProviderRequestId,
    primary_surface_key: Option<SurfaceKey>,
    alias_map: BTreeMap<SurfaceAlias, SurfaceKey>,
    surfaces: Vec<SurfaceEntry>,
    untrusted_content: bool,
}

impl SurfaceContext {
    /// Builds a context; the alias map is derived from the surfaces' aliases, so the two
    /// cannot disagree.
    pub fn new(
        context_id: ContextId,
        context_revision: u64,
        turn_id: TurnId,
        provider_request_id: ProviderRequestId,
        primary_surface_key: Option<SurfaceKey>,
        surfaces: Vec<SurfaceEntry>,
    ) -> Result<Self, SurfaceContextError> {
        let mut alias_map = BTreeMap::new();
        for (i, s) in surfaces.iter().enumerate() {
            if surfaces[..i].iter().any(|o| o.surface_key == s.surface_key) {
                return Err(SurfaceContextError::DuplicateKey(s.surface_key.clone()));
            }
            for a in &s.aliases {
                if alias_map.insert(a.clone(), s.surface_key.clone()).is_some() {
                    return Err(SurfaceContextError::DuplicateAlias(a.clone()));
                }
            }
        }
        if let Some(p) = &primary_surface_key
            && !surfaces.iter().any(|s| &s.surface_key == p)
        {
            return Err(SurfaceContextError::UnknownPrimary(p.clone()));
        }
        Ok(Self {
            context_id,
            context_revision,
            turn_id,
            provider_request_id,
            primary_surface_key,
            alias_map,
            surfaces,
            untrusted_content: true,
        })
    }

    /// The context id.
    pub fn context_id(&self) -> &ContextId {
        &self.context_id
    }
    /// The context revision.
    pub fn context_revision(&self) -> u64 {
        self.context_revision
    }
    /// The turn.
    pub fn turn_id(&self) -> &TurnId {
        &self.turn_id
    }
    /// The provider request this snapshot belongs to.
    pub fn provider_request_id(&self) -> &ProviderRequestId {
        &self.provider_request_id
    }
    /// The primary surface, if unique.
    pub fn primary_surface_key(&self) -> Option<&SurfaceKey> {
        self.primary_surface_key.as_ref()
    }
    /// Alias → key.
    pub fn alias_map(&self) -> &BTreeMap<SurfaceAlias, SurfaceKey> {
        &self.alias_map
    }
    /// The surfaces.
    pub fn surfaces(&self) -> &[SurfaceEntry] {
        &self.surfaces
    }

    /// The names a model may pass as `computer_use.surface`: every key and alias of a
    /// surface that can be observed, keys first. Feed this to
    /// [`crate::schema::computer_use_input_schema`].
    pub fn selectable_names(&self) -> Vec<SurfaceName> {
        let observable = || self.surfaces.iter().filter(|s| s.can(Capability::Observe));
        let keys = observable().map(|s| SurfaceName::Key(s.surface_key.clone()));
        let aliases = observable().flat_map(|s| s.aliases.iter().cloned().map(SurfaceName::Alias));
        keys.chain(aliases).collect()
    }

    /// Resolves a model's `surface` (absent: the primary surface) to its entry.
    pub fn resolve(&self, name: Option<&SurfaceName>) -> Result<&SurfaceEntry, SurfaceError> {
        let key = match name {
            None => self
                .primary_surface_key
                .as_ref()
                .ok_or(SurfaceError::Ambiguous)?,
            Some(SurfaceName::Key(k)) => k,
            Some(SurfaceName::Alias(a)) => self
                .alias_map
                .get(a)
                .ok_or_else(|| SurfaceError::Unknown(a.to_string()))?,
        };
        self.surfaces
            .iter()
            .find(|s| &s.surface_key == key)
            .ok_or_else(|| SurfaceError::Unknown(key.to_string()))
    }
}
