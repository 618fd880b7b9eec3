//! Origin parsing and serialisation table.

use policy::{InvalidUrlReason, Origin, PolicyError, web_origin};

/// `expected`: `Ok((display, web))` or the error.
fn check(input: &str, expected: Result<(&str, &str), PolicyError>) {
    let actual = Origin::parse(input).map(|o| (o.to_string(), o.serialize_web()));
    let expected = expected.map(|(d, w)| (d.to_owned(), w.to_owned()));
    assert_eq!(actual, expected, "input {input:?}");
}

fn opaque(scheme: &str) -> Result<(&'static str, &'static str), PolicyError> {
    Err(PolicyError::OpaqueOrigin {
        scheme: scheme.to_owned(),
    })
}

fn invalid(reason: InvalidUrlReason) -> Result<(&'static str, &'static str), PolicyError> {
    Err(PolicyError::InvalidUrl { reason })
}

#[test]
fn origin_table() {
    use InvalidUrlReason::*;
    check(
        "http://Example.COM",
        Ok(("http://example.com:80", "http://example.com")),
    );
    check(
        "HTTPS://example.com/a?b#c",
        Ok(("https://example.com:443", "https://example.com")),
    );
    check(
        "https://example.com:443/",
        Ok(("https://example.com:443", "https://example.com")),
    );
    check(
        "https://example.com:8443/",
        Ok(("https://example.com:8443", "https://example.com:8443")),
    );
    check(
        "http://example.com:0080/",
        Ok(("http://example.com:80", "http://example.com")),
    );
    check(
        "http://example.com:/",
        Ok(("http://example.com:80", "http://example.com")),
    );
    check(
        "ws://example.com/socket",
        Ok(("ws://example.com:80", "ws://example.com")),
    );
    check(
        "wss://example.com",
        Ok(("wss://example.com:443", "wss://example.com")),
    );
    check(
        "ftp://example.com",
        Ok(("ftp://example.com:21", "ftp://example.com")),
    );
    check(
        "http://example.com./",
        Ok(("http://example.com:80", "http://example.com")),
    );
    check(
        "http://user:pass@example.com/",
        Ok(("http://example.com:80", "http://example.com")),
    );
    check(
        "http://a@b@example.com/",
        Ok(("http://example.com:80", "http://example.com")),
    );
    check(
        "http://[::1]:3000/",
        Ok(("http://[::1]:3000", "http://[::1]:3000")),
    );
    check("http://[0:0::1]/", Ok(("http://[::1]:80", "http://[::1]")));
    check(
        "http://127.1:3000/",
        Ok(("http://127.0.0.1:3000", "http://127.0.0.1:3000")),
    );
    check(
        "http://0x7f.0.0.1/",
        Ok(("http://127.0.0.1:80", "http://127.0.0.1")),
    );
    check(
        "http://LOCALHOST:5173",
        Ok(("http://localhost:5173", "http://localhost:5173")),
    );
    check(
        "https://bücher.de/",
        Ok(("https://xn--bcher-kva.de:443", "https://xn--bcher-kva.de")),
    );
    check(
        "https://BÜCHER.de/",
        Ok(("https://xn--bcher-kva.de:443", "https://xn--bcher-kva.de")),
    );
    check(
        "https://xn--bcher-kva.de/",
        Ok(("https://xn--bcher-kva.de:443", "https://xn--bcher-kva.de")),
    );
    check(
        "https://ex%41mple.com/",
        Ok(("https://example.com:443", "https://example.com")),
    );
    check(
        "  https://example.com/\n",
        Ok(("https://example.com:443", "https://example.com")),
    );
    check(
        "https:example.com",
        Ok(("https://example.com:443", "https://example.com")),
    );
    check(
        "https:\\\\example.com\\x",
        Ok(("https://example.com:443", "https://example.com")),
    );
    // A browser loads evil.com here: `\` ends the authority before the `@`.
    check(
        "https://evil.com\\@good.com/",
        Ok(("https://evil.com:443", "https://evil.com")),
    );
    check(
        "blob:https://example.com/550e8400-e29b",
        Ok(("https://example.com:443", "https://example.com")),
    );
    check("blob:null/abc", opaque("blob"));
    check("data:text/html,<b>x</b>", opaque("data"));
    check("about:blank", opaque("about"));
    check("javascript:alert(1)", opaque("javascript"));
    check("file:///etc/passwd", opaque("file"));
    check("chrome://settings", opaque("chrome"));
    check(
        "chrome-extension://abc/page.html",
        opaque("chrome-extension"),
    );
    check("", invalid(Empty));
    check("   ", invalid(Empty));
    check("example.com", invalid(MissingScheme));
    check("/relative/path", invalid(MissingScheme));
    check("http://", invalid(MissingHost));
    check("http://user@/", invalid(MissingHost));
    check("http://exa mple.com/", invalid(ForbiddenHostCodePoint));
    check("http://example.com:65536/", invalid(InvalidPort));
    check("http://example.com:80a/", invalid(InvalidPort));
    check("http://[::1/", invalid(InvalidIpv6));
    check("http://[::1]x/", invalid(InvalidIpv6));
    check("http://256.0.0.1/", invalid(InvalidIpv4));
    check("http://a..b/", invalid(EmptyHostLabel));
    check("http://%ff/", invalid(HostEncoding));
}

#[test]
fn origins_compare_exactly_never_by_suffix() {
    let parent = Origin::parse("https://example.com").unwrap();
    for other in [
        "https://sub.example.com",
        "https://example.com:8443",
        "http://example.com",
        "https://example.com.evil",
    ] {
        assert_ne!(Origin::parse(other).unwrap(), parent, "{other}");
    }
    assert_eq!(Origin::parse("https://EXAMPLE.com:443/x").unwrap(), parent);
}

#[test]
fn serde_uses_the_web_form_and_parses_back() {
    let origin = Origin::parse("http://Example.com:8080/path").unwrap();
    let json = serde_json::to_string(&origin).unwrap();
    assert_eq!(json, r#""http://example.com:8080""#);
    assert_eq!(serde_json::from_str::<Origin>(&json).unwrap(), origin);
    assert!(serde_json::from_str::<Origin>(r#""data:text/plain,x""#).is_err());
}

#[test]
fn web_origin_prints_null_for_opaque_and_invalid() {
    assert_eq!(web_origin("https://example.com/a"), "https://example.com");
    assert_eq!(web_origin("data:text/plain,hi"), "null");
    assert_eq!(web_origin("not a url"), "null");
}

#[test]
fn errors_never_echo_the_url() {
    let err = Origin::parse("http://user:hunter2@exa mple.com/?token=abc").unwrap_err();
    let message = err.to_string();
    assert!(
        !message.contains("hunter2") && !message.contains("abc"),
        "{message}"
    );
}

#[test]
fn an_application_identity_is_an_origin_of_its_own() {
    let app = Origin::parse("app://gtk-app.py").unwrap();
    assert_eq!(app.scheme(), policy::Scheme::App);
    assert_eq!(app.serialize_web(), "app://gtk-app.py");
    assert_eq!(app, Origin::parse("APP://GTK-App.py").unwrap());
    assert_ne!(app, Origin::parse("app://gedit").unwrap());
    assert_ne!(app, Origin::parse("http://gtk-app.py").unwrap());
}
