//! The one error type of this crate. Messages never echo the URL or text that failed,
//! because that input may carry a secret (design invariant 8).

use crate::origin::Origin;

/// Why a policy decision refused its input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The string is not a URL this crate can split and normalise.
    #[error("invalid URL: {reason}")]
    InvalidUrl {
        /// What was wrong with it.
        reason: InvalidUrlReason,
    },
    /// The URL's scheme is not allowed for navigation by the policy.
    #[error("scheme `{scheme}` is not allowed")]
    ForbiddenScheme {
        /// The lower-cased scheme, without the colon.
        scheme: String,
    },
    /// The origin is on the policy's blocklist.
    #[error("origin {origin} is blocked")]
    BlockedOrigin {
        /// The normalised origin that matched a blocklist entry exactly.
        origin: Origin,
    },
    /// The policy has an allowlist and the origin is not on it.
    #[error("origin {origin} is not on the allowlist")]
    OriginNotAllowed {
        /// The normalised origin that matched no allowlist entry.
        origin: Origin,
    },
    /// The URL has an opaque origin (`data:`, `about:`, `file:`, …), which can never be
    /// compared, granted or listed.
    #[error("a `{scheme}:` URL has an opaque origin")]
    OpaqueOrigin {
        /// The lower-cased scheme, without the colon.
        scheme: String,
    },
    /// A secret shorter than [`crate::MIN_SECRET_CHARS`] was offered to the
    /// [`crate::SecretRegistry`]; redacting it would blank out ordinary text.
    #[error("a secret of {chars} characters is too short to redact (minimum {min})")]
    SecretTooShort {
        /// Its length in characters.
        chars: usize,
        /// The minimum length in characters.
        min: usize,
    },
}

/// What made a URL invalid. Deliberately coarse: it names the part, never the content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum InvalidUrlReason {
    /// Nothing left after trimming whitespace and control characters.
    #[error("empty input")]
    Empty,
    /// No `scheme:` prefix (relative URLs are not accepted).
    #[error("missing scheme")]
    MissingScheme,
    /// A scheme-based URL (`http:`, `https:`, …) without a host.
    #[error("missing host")]
    MissingHost,
    /// The host contains a code point no browser accepts in a host.
    #[error("forbidden character in host")]
    ForbiddenHostCodePoint,
    /// The host is percent-encoded into bytes that are not UTF-8.
    #[error("host is not valid UTF-8 after percent-decoding")]
    HostEncoding,
    /// The host has an empty label (`a..b`, `.a`).
    #[error("empty label in host")]
    EmptyHostLabel,
    /// The host ends in a number but is not a valid IPv4 address.
    #[error("invalid IPv4 address")]
    InvalidIpv4,
    /// The bracketed host is not a valid IPv6 address.
    #[error("invalid IPv6 address")]
    InvalidIpv6,
    /// The port is not a number from 0 to 65535.
    #[error("invalid port")]
    InvalidPort,
    /// An internationalised label could not be converted to its ASCII form.
    #[error("host cannot be converted to ASCII")]
    InvalidIdn,
}

impl From<InvalidUrlReason> for PolicyError {
    fn from(reason: InvalidUrlReason) -> Self {
        Self::InvalidUrl { reason }
    }
}
