//! The navigation decision: may the runtime point a tab at this URL? Scheme allowlist
//! first (only `http`/`https` by default, `000_…` §08 and the design's Policy section), then
//! the exact-origin blocklist and allowlist. Pure: the caller passes the URL and the policy.

use serde::{Deserialize, Serialize};

use crate::error::PolicyError;
use crate::origin::{Origin, scheme_for_report};
use crate::url::{Body, clean, split};

/// Which navigations are allowed. Every field is valid with any value, so they are public;
/// `Default` is the safe policy (http and https to any origin, nothing else).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NavigationPolicy {
    /// Schemes allowed for navigation, compared case-insensitively, with or without the
    /// trailing colon. Default `["http", "https"]`. Adding `data`, `blob`, `javascript`,
    /// `file`, `chrome`, … is an explicit operator decision; nothing else allows them.
    pub allowed_schemes: Vec<String>,
    /// Allow exactly `about:blank` (fragment ignored, no query) even though `about` is not
    /// in `allowed_schemes`. Default `false`.
    pub allow_about_blank: bool,
    /// When set, only these origins may be loaded (exact match). Default: any origin.
    pub allowed_origins: Option<Vec<Origin>>,
    /// Origins that may never be loaded (exact match; wins over `allowed_origins`).
    pub blocked_origins: Vec<Origin>,
}

impl Default for NavigationPolicy {
    fn default() -> Self {
        Self {
            allowed_schemes: vec!["http".to_owned(), "https".to_owned()],
            allow_about_blank: false,
            allowed_origins: None,
            blocked_origins: Vec::new(),
        }
    }
}

impl NavigationPolicy {
    fn allows_scheme(&self, scheme: &str) -> bool {
        self.allowed_schemes.iter().any(|allowed| {
            let allowed = allowed.trim();
            let allowed = allowed.strip_suffix(':').unwrap_or(allowed);
            allowed.eq_ignore_ascii_case(scheme)
        })
    }
}

/// Where an allowed navigation goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// A page with a tuple origin, which passed the origin lists; grants key on it.
    Origin(Origin),
    /// `about:blank`, allowed by [`NavigationPolicy::allow_about_blank`] or the `about` scheme.
    AboutBlank,
    /// An explicitly allowed scheme without a tuple origin (`data:`, `file:`, …). Such a
    /// page can never match a grant.
    Opaque {
        /// The lower-cased scheme.
        scheme: String,
    },
}

impl Destination {
    /// The origin, when the destination has one.
    pub fn origin(&self) -> Option<&Origin> {
        match self {
            Self::Origin(origin) => Some(origin),
            Self::AboutBlank | Self::Opaque { .. } => None,
        }
    }
}

/// Decides whether a tab may navigate to `url` under `policy`.
///
/// The URL is read the way Chromium reads it (surrounding whitespace and embedded tabs and
/// newlines stripped, `\` as `/`), so ` javascript:…` or `java\tscript:…` is the
/// `javascript` scheme. A `blob:` URL, when its scheme is allowed, is checked against the
/// origin lists with the origin inside it.
///
/// Errors: [`PolicyError::InvalidUrl`], [`PolicyError::ForbiddenScheme`],
/// [`PolicyError::BlockedOrigin`], [`PolicyError::OriginNotAllowed`].
pub fn check_navigation(url: &str, policy: &NavigationPolicy) -> Result<Destination, PolicyError> {
    let cleaned = clean(url);
    let parts = split(&cleaned)?;
    let scheme = parts.scheme.as_str();

    if scheme == "about" {
        let is_blank =
            matches!(parts.body, Body::Opaque { path: "blank" }) && parts.query.is_none();
        if is_blank && (policy.allow_about_blank || policy.allows_scheme("about")) {
            return Ok(Destination::AboutBlank);
        }
    }
    // An application's or a guest's identity (`app://…`, `vm://…`) names what a person grants,
    // never a place to go.
    if !policy.allows_scheme(scheme) || scheme == "app" || scheme == "vm" {
        return Err(PolicyError::ForbiddenScheme {
            scheme: scheme_for_report(scheme),
        });
    }
    match Origin::parse(&cleaned) {
        Ok(origin) => {
            check_origin(&origin, policy)?;
            Ok(Destination::Origin(origin))
        }
        Err(PolicyError::OpaqueOrigin { scheme }) => Ok(Destination::Opaque { scheme }),
        Err(other) => Err(other),
    }
}

/// Checks an origin against the policy's blocklist and allowlist (exact match). The runner
/// uses it again after a redirect or any other origin change it observes.
///
/// Errors: [`PolicyError::BlockedOrigin`], [`PolicyError::OriginNotAllowed`].
pub fn check_origin(origin: &Origin, policy: &NavigationPolicy) -> Result<(), PolicyError> {
    if policy.blocked_origins.contains(origin) {
        return Err(PolicyError::BlockedOrigin {
            origin: origin.clone(),
        });
    }
    if let Some(allowed) = &policy.allowed_origins
        && !allowed.contains(origin)
    {
        return Err(PolicyError::OriginNotAllowed {
            origin: origin.clone(),
        });
    }
    Ok(())
}
