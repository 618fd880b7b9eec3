//! Redaction of HTTP header values the browser adapter may surface (network events,
//! downloads): credentials are replaced, URLs are redacted like any other URL, everything
//! else is kept.

use std::borrow::Cow;

use crate::REDACTED;
use crate::field::names_credential;
use crate::redact::redact_url;

/// Whether a header's value is a credential: `Authorization`, `Proxy-Authorization`,
/// `Cookie`, `Set-Cookie`, and any name whose words name a token or password
/// (`X-Api-Key`, `X-Auth-Token`, `X-CSRF-Token`, `X-Session-Id`). Case-insensitive.
pub fn is_secret_header(name: &str) -> bool {
    let name = name.trim();
    [
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "cookie2",
        "set-cookie2",
    ]
    .iter()
    .any(|h| name.eq_ignore_ascii_case(h))
        || names_credential(name)
}

/// The value of header `name` as it may leave the runtime: [`REDACTED`] for credentials,
/// [`redact_url`] for headers that carry a URL (`Referer`, `Location`,
/// `Content-Location`), the value unchanged otherwise.
pub fn redact_header<'a>(name: &str, value: &'a str) -> Cow<'a, str> {
    let name = name.trim();
    if is_secret_header(name) {
        Cow::Borrowed(REDACTED)
    } else if ["referer", "location", "content-location"]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
    {
        Cow::Owned(redact_url(value))
    } else {
        Cow::Borrowed(value)
    }
}
