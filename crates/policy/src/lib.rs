//! Glovebox's pure policy decisions: origin normalisation, the navigation scheme and origin
//! lists, redaction of URLs, header values and secrets the runtime typed, and the
//! sensitivity of form fields. It does no I/O, reads no clock (time, where a rule needs
//! it, is passed in), spawns nothing and never panics on input.
//!
//! Sources: `000_…` §08 ("权限、安全与隐私") and the design's Policy section and
//! invariants 1 (page content never lowers a decision) and 8 (secrets never leave the
//! runtime). Entry points: [`Origin::parse`], [`check_navigation`], [`redact_url`],
//! [`classify_field`], [`SecretRegistry`], [`redact_value_for_field`], [`redact_header`].

#![warn(missing_docs)]

mod error;
mod field;
mod header;
mod host;
mod navigation;
mod origin;
mod redact;
mod risk;
mod secret;
mod url;
mod words;

pub use error::{InvalidUrlReason, PolicyError};
pub use field::{
    FieldFacts, SecretKind, Sensitivity, classify_field, classify_prompt, redact_value_for_field,
};
pub use header::{is_secret_header, redact_header};
pub use navigation::{Destination, NavigationPolicy, check_navigation, check_origin};
pub use origin::{Origin, Scheme, web_origin};
pub use redact::{redact_text, redact_url, restorable_url};
pub use risk::{
    Decision, Effect, Grant, Grants, Request, RiskFacts, RiskTier, TrustConfig, classify, decide,
    names_high_impact,
};
pub use secret::{MIN_SECRET_CHARS, SecretRegistry};

/// The one marker that replaces redacted content everywhere.
pub const REDACTED: &str = "[redacted]";
