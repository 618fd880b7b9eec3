//! URL redaction for everything that leaves the runtime (design invariant 8): observations,
//! events, logs, receipts. It keeps what an agent or operator needs to know where a page
//! is — scheme, host, port, path, query keys, plain anchors — and drops what carries data.
//!
//! Rules, in order:
//! - Userinfo is dropped entirely.
//! - Every query value is dropped, keys kept: `?token=abc&page=2` → `?token=&page=`. A
//!   segment without `=` (`?flag`) is a key and kept as written. A key that itself looks
//!   like an opaque token (see [`looks_opaque`]) becomes `[redacted]`.
//! - The fragment is kept only when it is a plain anchor: 1–128 bytes of ASCII letters,
//!   digits, `-`, `_`, `.`, `:`, non-ASCII letters or digits and percent-encoded non-ASCII
//!   bytes, and not opaque-looking. So `#section-2` and `#L10-L20` stay, while
//!   `#access_token=…`, `#a=b`, `#/route/x`, `#!x` and `#eyJhbGciOi…` are dropped with
//!   their `#`.
//! - Hosts of special schemes are normalised as in [`crate::Origin`], and a default port
//!   is omitted. The path is kept as written (`\` read as `/` in special schemes), except
//!   that `;name=value` path parameters lose their values (`;jsessionid=…`).
//! - Without an authority: `data:[redacted]`, `javascript:[redacted]`, `blob:` keeps only
//!   its origin (`blob:https://example.com`), `about:` keeps a plain name (`about:blank`),
//!   any other scheme (`mailto:`, `tel:`, …) becomes `scheme:[redacted]`.
//! - Anything that does not parse as an absolute URL becomes `[redacted]`.
//!
//! The result is itself a fixed point: redacting it again changes nothing. Paths are not
//! redacted; a secret the runtime typed is caught by [`crate::SecretRegistry`] instead.

use crate::REDACTED;
use crate::host::{check_opaque_host, hex_value, normalise_special_host};
use crate::origin::{Origin, Scheme, scheme_for_report};
use crate::url::{Body, clean, is_special, parse_port, split};

/// Redacts a URL for output; never panics, whatever the input. See the module docs for the
/// rules.
pub fn redact_url(url: &str) -> String {
    let cleaned = clean(url);
    let Ok(parts) = split(&cleaned) else {
        return REDACTED.to_owned();
    };
    let scheme = parts.scheme.as_str();
    if scheme.len() > 24 {
        return REDACTED.to_owned();
    }
    match scheme {
        "data" | "javascript" => return format!("{scheme}:{REDACTED}"),
        "blob" => {
            let inner = cleaned.get("blob:".len()..).unwrap_or("");
            return match Origin::parse(inner) {
                Ok(origin) if matches!(origin.scheme(), Scheme::Http | Scheme::Https) => {
                    format!("blob:{}", origin.serialize_web())
                }
                _ => format!("blob:{REDACTED}"),
            };
        }
        _ => {}
    }

    let mut out = String::with_capacity(cleaned.len());
    match parts.body {
        Body::Authority {
            host, port, path, ..
        } => {
            let special = is_special(scheme);
            let host = if special && !host.is_empty() {
                normalise_special_host(host)
            } else if special {
                Ok(String::new())
            } else {
                check_opaque_host(host)
            };
            let (Ok(host), Ok(port)) = (host, parse_port(port)) else {
                return REDACTED.to_owned();
            };
            if special && scheme != "file" && host.is_empty() {
                return REDACTED.to_owned();
            }
            let default_port = Scheme::from_lowercase(scheme).map(Scheme::default_port);
            out.push_str(scheme);
            out.push_str("://");
            out.push_str(&host);
            if let Some(port) = port.filter(|&p| Some(p) != default_port) {
                out.push(':');
                out.push_str(&port.to_string());
            }
            if special {
                // Special URLs always have a path starting with `/` (`file:C:/x` is
                // `file:///C:/x`); writing it so keeps the output a fixed point.
                if !path.starts_with(['/', '\\']) {
                    out.push('/');
                }
                let path: String = path
                    .chars()
                    .map(|c| if c == '\\' { '/' } else { c })
                    .collect();
                push_path(&path, &mut out);
            } else {
                push_path(path, &mut out);
            }
        }
        Body::Opaque { path } => {
            out.push_str(&scheme_for_report(scheme));
            out.push(':');
            if scheme == "about" && is_plain_name(path) {
                out.push_str(path);
            } else {
                out.push_str(REDACTED);
                return out;
            }
        }
    }
    if let Some(query) = parts.query {
        out.push('?');
        push_query_keys(query, &mut out);
    }
    if let Some(fragment) = parts.fragment.filter(|f| is_plain_anchor(f)) {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

/// Appends the path with the values of `;name=value` path parameters removed
/// (`/app;jsessionid=ABC/x` → `/app;jsessionid=/x`), the way query values are.
fn push_path(path: &str, out: &mut String) {
    for (i, segment) in path.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        let mut params = segment.split(';');
        out.push_str(params.next().unwrap_or(""));
        for param in params {
            out.push(';');
            match param.split_once('=') {
                Some((key, _value)) => {
                    out.push_str(key);
                    out.push('=');
                }
                None => out.push_str(param),
            }
        }
    }
}

/// Appends the query with every value removed and opaque-looking keys replaced.
fn push_query_keys(query: &str, out: &mut String) {
    for (i, pair) in query.split('&').enumerate() {
        if i > 0 {
            out.push('&');
        }
        let (key, has_value) = match pair.split_once('=') {
            Some((key, _value)) => (key, true),
            None => (pair, false),
        };
        if key.len() > 64 || looks_opaque(key) {
            out.push_str(REDACTED);
        } else {
            out.push_str(key);
        }
        if has_value {
            out.push('=');
        }
    }
}

/// `about:` names such as `blank`, `srcdoc`, `newtab`.
fn is_plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 32
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A fragment that only names a place in the page. See the module docs.
pub(crate) fn is_plain_anchor(fragment: &str) -> bool {
    if fragment.is_empty() || fragment.len() > 128 || looks_opaque(fragment) {
        return false;
    }
    let bytes = fragment.as_bytes();
    let mut chars = fragment.char_indices();
    while let Some((i, c)) = chars.next() {
        let ok = if c == '%' {
            // Only percent-encoded non-ASCII (headings in other scripts); `%3D` is `=`.
            let high = bytes.get(i + 1).copied().and_then(hex_value);
            let low = bytes.get(i + 2).copied().and_then(hex_value);
            match (high, low) {
                (Some(h), Some(_)) if h >= 8 => {
                    chars.next();
                    chars.next();
                    true
                }
                _ => false,
            }
        } else if c.is_ascii() {
            c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':')
        } else {
            c.is_alphanumeric()
        };
        if !ok {
            return false;
        }
    }
    true
}

/// Whether a key or fragment looks like an opaque token rather than a name: a run of 24+
/// ASCII letters and digits, a run of 16+ that mixes letters and digits, or 16+ hex digits
/// (with at least one digit) separated only by `-_.:` as in UUIDs and hashes. `section-2`,
/// `utm_source`, `page` are names; `eyJhbGciOiJIUzI1NiJ9`, a UUID or a SHA are not.
pub(crate) fn looks_opaque(s: &str) -> bool {
    for run in s.split(|c: char| !c.is_ascii_alphanumeric()) {
        let has_digit = run.bytes().any(|b| b.is_ascii_digit());
        let has_alpha = run.bytes().any(|b| b.is_ascii_alphabetic());
        if run.len() >= 24 || (run.len() >= 16 && has_digit && has_alpha) {
            return true;
        }
    }
    let only_hex_and_separators = s
        .bytes()
        .all(|b| b.is_ascii_hexdigit() || matches!(b, b'-' | b'_' | b'.' | b':'));
    let hex_digits = s.bytes().filter(u8::is_ascii_hexdigit).count();
    only_hex_and_separators && hex_digits >= 16 && s.bytes().any(|b| b.is_ascii_digit())
}

/// Whether a query key names a credential: `token`, `access_token`, `code`, `sig`, `apikey`,
/// `session_id`, `password`, … (lowercased, separators ignored).
fn is_secret_key(key: &str) -> bool {
    let k: String = key
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    const EXACT: &[&str] = &[
        "sid", "sig", "code", "key", "state", "otp", "pin", "jwt", "hash", "mac",
    ];
    const PART: &[&str] = &[
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "auth",
        "session",
        "sessid",
        "apikey",
        "signature",
        "nonce",
        "credential",
        "ticket",
        "saml",
        "assertion",
        "privatekey",
        "accesskey",
    ];
    EXACT.contains(&k.as_str())
        || PART.iter().any(|p| k.contains(p))
        || k.ends_with("key")
        || k.ends_with("sig")
}

/// The URL a retained tab is reopened at after a restart (`004_…` 浏览器重启恢复): an http(s)
/// URL with userinfo dropped, query parameters that carry credentials (by key, see
/// [`is_secret_key`], or by an opaque-looking value) removed and the others kept as written,
/// `;name=value` path parameter values removed and only a plain-anchor fragment kept. `None` for
/// anything else (no other scheme is reopened). Unlike [`redact_url`] the result still works.
pub fn restorable_url(url: &str) -> Option<String> {
    let cleaned = clean(url);
    let origin = Origin::parse(&cleaned).ok()?;
    if !matches!(origin.scheme(), Scheme::Http | Scheme::Https) {
        return None;
    }
    let parts = split(&cleaned).ok()?;
    let cut = cleaned.find(['?', '#']).unwrap_or(cleaned.len());
    let mut out = redact_url(&cleaned[..cut]);
    if out == REDACTED {
        return None;
    }
    if let Some(query) = parts.query {
        let kept: Vec<&str> = query
            .split('&')
            .filter(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                !pair.is_empty()
                    && !is_secret_key(key)
                    && !looks_opaque(key)
                    && !looks_opaque(value)
                    && value.len() <= 256
            })
            .collect();
        if !kept.is_empty() {
            out.push('?');
            out.push_str(&kept.join("&"));
        }
    }
    if let Some(fragment) = parts.fragment.filter(|f| is_plain_anchor(f)) {
        out.push('#');
        out.push_str(fragment);
    }
    Some(out)
}

#[cfg(test)]
mod restorable_tests {
    use super::restorable_url;

    #[test]
    fn credentials_leave_and_the_rest_stays() {
        assert_eq!(
            restorable_url("https://a.test/list?page=2&q=shoes#results").as_deref(),
            Some("https://a.test/list?page=2&q=shoes#results")
        );
        assert_eq!(
            restorable_url("https://u:p@a.test/x?token=abc&page=3").as_deref(),
            Some("https://a.test/x?page=3")
        );
        assert_eq!(
            restorable_url("http://127.0.0.1:8080/cb?code=xyz&state=s1&next=%2Fhome").as_deref(),
            Some("http://127.0.0.1:8080/cb?next=%2Fhome")
        );
        assert_eq!(
            restorable_url("https://a.test/?id=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9").as_deref(),
            Some("https://a.test/")
        );
        assert_eq!(
            restorable_url("https://a.test/app;jsessionid=ABC123/x#access_token=zzz").as_deref(),
            Some("https://a.test/app;jsessionid=/x")
        );
        assert_eq!(
            restorable_url("https://a.test/?X-Amz-Signature=1&apiKey=2&sort=asc").as_deref(),
            Some("https://a.test/?sort=asc")
        );
        assert_eq!(restorable_url("about:blank"), None);
        assert_eq!(restorable_url("file:///etc/passwd"), None);
        assert_eq!(restorable_url("javascript:alert(1)"), None);
        assert_eq!(restorable_url("not a url"), None);
    }
}

/// Free text a page controls (a form field's value, a console message) with what carries a
/// credential taken out: every `http(s)://` URL in it redacted as [`redact_url`] does (query
/// values, userinfo, data-carrying fragments), `Bearer <token>`, JSON-web-token-shaped runs, and
/// the value of `key=value` / `key: value` pairs whose key names a credential (`token`,
/// `password`, `api_key`, `session`, …). Borrows when nothing changed; never panics.
pub fn redact_text(text: &str) -> std::borrow::Cow<'_, str> {
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut rest = text;
    // URLs first: they carry most credentials in text.
    while let Some(at) = find_url(rest) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| {
                c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | ')' | ']' | '}')
            })
            .unwrap_or(tail.len());
        let url = &tail[..end];
        let redacted = redact_url(url);
        changed |= redacted != url;
        out.push_str(&redacted);
        rest = &tail[end..];
    }
    out.push_str(rest);
    // Then tokens and credential pairs, word by word (URLs are already clean).
    let pieces = split_keep(&out);
    fn trim(p: &str) -> &str {
        p.trim_matches(|c: char| matches!(c, '"' | '\'' | ',' | ';' | '(' | ')' | '{' | '}'))
    }
    let credential_like = |w: &str| {
        w.len() >= 8
            && w.bytes().any(|b| b.is_ascii_digit())
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._~+/=-".contains(&b))
    };
    let mut result = String::with_capacity(out.len());
    // The next word is a credential: after `password:` whatever it is; after `Bearer` only if it
    // looks like one (`Basic | $5.00` is a plan, not a header).
    let mut hide_next = false;
    for (i, piece) in pieces.iter().enumerate() {
        let word = trim(piece);
        if piece.chars().all(char::is_whitespace) {
            result.push_str(piece);
            continue;
        }
        if std::mem::take(&mut hide_next) && !word.is_empty() {
            result.push_str(&piece.replace(word, REDACTED));
            changed = true;
            continue;
        }
        if word.eq_ignore_ascii_case("bearer") || word.eq_ignore_ascii_case("basic") {
            hide_next = pieces
                .get(i + 2)
                .is_some_and(|next| credential_like(trim(next)));
            result.push_str(piece);
            continue;
        }
        if is_jwt(word) {
            result.push_str(&piece.replace(word, REDACTED));
            changed = true;
            continue;
        }
        // key=value and key: value (the value in this word, or the next one); the key a plain
        // name (not a URL's query, which is already clean).
        if let Some((key, value)) = word.split_once(['=', ':'])
            && !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            && is_secret_key(key)
        {
            let value = value.trim_matches(|c: char| matches!(c, '"' | '\'' | ' '));
            if value.is_empty() {
                // `Authorization: Bearer …` leaves the scheme word to its own rule.
                hide_next = pieces.get(i + 2).is_some_and(|next| {
                    let next = trim(next);
                    !next.is_empty()
                        && !next.eq_ignore_ascii_case("bearer")
                        && !next.eq_ignore_ascii_case("basic")
                });
                result.push_str(piece);
            } else if value != REDACTED && !value.starts_with('&') {
                result.push_str(&piece.replacen(value, REDACTED, 1));
                changed = true;
            } else {
                result.push_str(piece);
            }
            continue;
        }
        result.push_str(piece);
    }
    if changed {
        std::borrow::Cow::Owned(result)
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// Where the next `http://` or `https://` URL starts (case-insensitive scheme).
fn find_url(s: &str) -> Option<usize> {
    let lower = s.to_ascii_lowercase();
    match (lower.find("http://"), lower.find("https://")) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Words and the whitespace between them, in order.
fn split_keep(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space = None;
    for (i, c) in s.char_indices() {
        let space = c.is_whitespace();
        if in_space != Some(space) {
            if i > start {
                out.push(&s[start..i]);
            }
            start = i;
            in_space = Some(space);
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// Three base64url runs joined by dots, the first a JSON object header (`eyJ…`).
fn is_jwt(word: &str) -> bool {
    let parts: Vec<&str> = word.split('.').collect();
    parts.len() == 3
        && parts[0].starts_with("eyJ")
        && parts[0].len() >= 10
        && parts[1].len() >= 10
        && parts.iter().all(|p| {
            p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

#[cfg(test)]
mod text_tests {
    use super::redact_text;

    #[test]
    fn credentials_in_free_text_are_redacted_and_plain_text_is_borrowed() {
        let cases = [
            (
                "see https://pay.example/confirm?token=SECRET123&amount=5 now",
                "see https://pay.example/confirm?token=&amount= now",
            ),
            (
                "Authorization: Bearer abc.def-123_ghi",
                "Authorization: Bearer [redacted]",
            ),
            (
                "api_key=sk_live_1234567890 retry",
                "api_key=[redacted] retry",
            ),
            ("password: hunter2", "password: [redacted]"),
            (
                "got eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig_abc-123 back",
                "got [redacted] back",
            ),
            ("session=\"s3cr3t\";", "session=\"[redacted]\";"),
        ];
        for (text, expected) in cases {
            assert_eq!(redact_text(text), expected, "{text}");
        }
        for plain in [
            "Hello, world",
            "Total: 42",
            "a=b c:d",
            "ratio 3:2 at 10:30",
            "https://example.com/path#section-2",
            "row: Basic | $5.00 | 1",
            "link \"Forgot password?\" [e7] -> /reset?token=&user=#frag",
        ] {
            assert!(
                matches!(redact_text(plain), std::borrow::Cow::Borrowed(_)),
                "{plain} → {}",
                redact_text(plain)
            );
        }
    }
}
