//! Header redaction table.

use policy::{is_secret_header, redact_header};

#[test]
fn header_table() {
    for (name, value, expected) in [
        ("Authorization", "Bearer abc", "[redacted]"),
        ("proxy-authorization", "Basic xyz", "[redacted]"),
        ("Cookie", "sid=1", "[redacted]"),
        ("Set-Cookie", "sid=1; HttpOnly", "[redacted]"),
        ("X-Api-Key", "k", "[redacted]"),
        ("X-Auth-Token", "t", "[redacted]"),
        ("X-CSRF-Token", "t", "[redacted]"),
        ("x-session-id", "s", "[redacted]"),
        (
            "Referer",
            "https://u:p@example.com/a?token=x#access_token=y",
            "https://example.com/a?token=",
        ),
        ("Location", "/relative?x=1", "[redacted]"),
        (
            "Content-Type",
            "text/html; charset=utf-8",
            "text/html; charset=utf-8",
        ),
        ("Accept-Language", "en-US", "en-US"),
        ("X-Author", "alice", "alice"),
    ] {
        assert_eq!(redact_header(name, value), expected, "{name}");
    }
    assert!(is_secret_header("AUTHORIZATION"));
    assert!(!is_secret_header("Keyboard-Layout"));
}
