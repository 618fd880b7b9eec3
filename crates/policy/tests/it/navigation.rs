//! Navigation scheme and origin-list decisions.

use policy::{Destination, NavigationPolicy, Origin, PolicyError, check_navigation, check_origin};

fn origin(s: &str) -> Origin {
    Origin::parse(s).unwrap()
}

fn forbidden(scheme: &str) -> Result<Destination, PolicyError> {
    Err(PolicyError::ForbiddenScheme {
        scheme: scheme.to_owned(),
    })
}

fn to(s: &str) -> Result<Destination, PolicyError> {
    Ok(Destination::Origin(origin(s)))
}

fn check(policy: &NavigationPolicy, url: &str, expected: Result<Destination, PolicyError>) {
    assert_eq!(check_navigation(url, policy), expected, "url {url:?}");
}

#[test]
fn default_policy_allows_only_http_and_https() {
    let p = NavigationPolicy::default();
    check(&p, "https://example.com/x", to("https://example.com"));
    check(&p, "HTTP://Example.com:8080", to("http://example.com:8080"));
    check(&p, "http://localhost:3000/", to("http://localhost:3000"));
    check(
        &p,
        "data:text/html,<script>alert(1)</script>",
        forbidden("data"),
    );
    check(&p, "blob:https://example.com/uuid", forbidden("blob"));
    check(&p, "javascript:alert(1)", forbidden("javascript"));
    check(&p, "JavaScript:alert(1)", forbidden("javascript"));
    check(&p, " java\tscript:alert(1)", forbidden("javascript"));
    check(&p, "\u{1}javascript:alert(1)", forbidden("javascript"));
    check(&p, "file:///etc/passwd", forbidden("file"));
    check(&p, "chrome://settings", forbidden("chrome"));
    check(
        &p,
        "chrome-extension://abcdef/popup.html",
        forbidden("chrome-extension"),
    );
    check(
        &p,
        "devtools://devtools/bundled/inspector.html",
        forbidden("devtools"),
    );
    check(
        &p,
        "view-source:https://example.com",
        forbidden("view-source"),
    );
    check(&p, "about:blank", forbidden("about"));
    check(&p, "about:config", forbidden("about"));
    check(&p, "ftp://example.com/file", forbidden("ftp"));
    check(&p, "ws://example.com/socket", forbidden("ws"));
    check(&p, "wss://example.com/socket", forbidden("wss"));
    check(&p, "mailto:a@example.com", forbidden("mailto"));
    check(&p, "intent://x#Intent;end", forbidden("intent"));
    assert!(matches!(
        check_navigation("not a url", &p),
        Err(PolicyError::InvalidUrl { .. })
    ));
    assert!(matches!(
        check_navigation("https://exa mple.com", &p),
        Err(PolicyError::InvalidUrl { .. })
    ));
}

#[test]
fn about_blank_only_when_allowed_and_only_blank() {
    let p = NavigationPolicy {
        allow_about_blank: true,
        ..NavigationPolicy::default()
    };
    check(&p, "about:blank", Ok(Destination::AboutBlank));
    check(&p, "ABOUT:blank#top", Ok(Destination::AboutBlank));
    check(&p, "about:blank?x=1", forbidden("about"));
    check(&p, "about:config", forbidden("about"));
    check(&p, "about:srcdoc", forbidden("about"));
}

#[test]
fn explicitly_allowed_schemes() {
    let p = NavigationPolicy {
        allowed_schemes: vec!["https".into(), "DATA:".into(), "blob".into(), "wss".into()],
        ..NavigationPolicy::default()
    };
    check(
        &p,
        "data:text/plain,hi",
        Ok(Destination::Opaque {
            scheme: "data".into(),
        }),
    );
    check(
        &p,
        "blob:https://example.com/uuid",
        to("https://example.com"),
    );
    check(
        &p,
        "blob:null/uuid",
        Ok(Destination::Opaque {
            scheme: "blob".into(),
        }),
    );
    check(&p, "wss://example.com/", to("wss://example.com"));
    check(&p, "http://example.com/", forbidden("http"));
    check(&p, "javascript:void(0)", forbidden("javascript"));
    assert_eq!(check_navigation("data:,x", &p).unwrap().origin(), None);
}

#[test]
fn origin_lists_match_exactly() {
    let p = NavigationPolicy {
        allowed_origins: Some(vec![
            origin("https://example.com"),
            origin("http://localhost:3000"),
        ]),
        blocked_origins: vec![origin("http://localhost:3000")],
        ..NavigationPolicy::default()
    };
    check(&p, "https://EXAMPLE.com:443/a", to("https://example.com"));
    let not_allowed = |s: &str| Err(PolicyError::OriginNotAllowed { origin: origin(s) });
    check(
        &p,
        "https://sub.example.com/",
        not_allowed("https://sub.example.com"),
    );
    check(
        &p,
        "https://example.com:8443/",
        not_allowed("https://example.com:8443"),
    );
    check(&p, "http://example.com/", not_allowed("http://example.com"));
    check(
        &p,
        "https://example.com.evil.test/",
        not_allowed("https://example.com.evil.test"),
    );
    // The blocklist wins over the allowlist.
    check(
        &p,
        "http://localhost:3000/",
        Err(PolicyError::BlockedOrigin {
            origin: origin("http://localhost:3000"),
        }),
    );
}

#[test]
fn blocklist_is_not_sidestepped_by_alternative_spellings() {
    let p = NavigationPolicy {
        blocked_origins: vec![origin("http://127.0.0.1:8080")],
        ..NavigationPolicy::default()
    };
    for url in [
        "http://127.1:8080/",
        "http://2130706433:8080",
        "http://0x7f.0.0.1:8080",
        "http://127.0.0.1.:8080",
        "http://user@127.0.0.1:8080",
    ] {
        assert!(
            matches!(
                check_navigation(url, &p),
                Err(PolicyError::BlockedOrigin { .. })
            ),
            "{url}"
        );
    }
    let p = NavigationPolicy {
        blocked_origins: vec![origin("https://example.com")],
        ..NavigationPolicy::default()
    };
    for url in [
        "https://ｅｘａｍｐｌｅ.com/",
        "https://example。com",
        "https://EXAMPLE.COM.",
        "https://ex%61mple.com",
    ] {
        assert!(
            matches!(
                check_navigation(url, &p),
                Err(PolicyError::BlockedOrigin { .. })
            ),
            "{url}"
        );
    }
}

#[test]
fn check_origin_for_redirects() {
    let p = NavigationPolicy {
        allowed_origins: Some(vec![origin("https://example.com")]),
        ..NavigationPolicy::default()
    };
    assert_eq!(
        check_origin(&origin("https://example.com/next"), &p),
        Ok(())
    );
    assert!(check_origin(&origin("https://login.example.com"), &p).is_err());
}

#[test]
fn policy_deserialises_from_config_with_defaults() {
    let p: NavigationPolicy = serde_json::from_str(
        r#"{"blocked_origins": ["https://Bad.example"], "allow_about_blank": true}"#,
    )
    .unwrap();
    assert_eq!(p.allowed_schemes, ["http", "https"]);
    assert_eq!(p.blocked_origins, [origin("https://bad.example")]);
    assert!(serde_json::from_str::<NavigationPolicy>(r#"{"allowed_origin": []}"#).is_err());
    assert!(
        serde_json::from_str::<NavigationPolicy>(r#"{"blocked_origins": ["about:blank"]}"#)
            .is_err()
    );
}

#[test]
fn an_application_identity_is_never_a_destination() {
    let mut p = NavigationPolicy::default();
    check(&p, "app://gtk-app.py", forbidden("app"));
    // Not even when a configuration lists the scheme.
    p.allowed_schemes.push("app".into());
    check(&p, "app://gtk-app.py", forbidden("app"));
}
