//! Property tests: redaction never panics, never leaks a query value, userinfo or a
//! data-carrying fragment, and is a fixed point; secrets never survive the registry.

use policy::{NavigationPolicy, Origin, SecretRegistry, check_navigation, redact_url};
use proptest::prelude::*;

/// A URL whose every secret part (userinfo, query values, `k=v` fragment values) is upper
/// case with a `Q` prefix, while everything else is lower case, digits or punctuation, so a
/// secret can only appear in the output if it leaked.
fn url_with_secrets() -> impl Strategy<Value = (String, Vec<String>)> {
    let scheme = prop::sample::select(vec![
        "http", "https", "HTTP", "ws", "wss", "ftp", "chrome", "x-app",
    ]);
    let host = prop_oneof![
        "[a-z][a-z0-9-]{0,10}(\\.[a-z]{2,5}){0,2}",
        Just("[::1]".to_owned()),
        Just("127.0.0.1".to_owned()),
        Just("bücher.de".to_owned()),
    ];
    let port = prop::option::of(0u16..=65535);
    let userinfo = prop::option::of("Q[A-Z]{5,10}(:Q[A-Z]{5,10})?");
    let path = "(/[a-z0-9._%~-]{0,8}){0,4}";
    let key = "[a-z0-9_.%\\[\\]]{0,10}";
    let value = "Q[A-Z]{6,12}";
    let pairs = prop::collection::vec((key, prop::option::of(value)), 0..5);
    let fragment = prop::option::of(prop_oneof![
        "[a-z0-9-]{0,20}".prop_map(|s| (s, None)),
        ("[a-z_]{1,12}", "Q[A-Z]{6,12}").prop_map(|(k, v)| (format!("{k}={v}"), Some(v))),
    ]);
    (scheme, host, port, userinfo, path, pairs, fragment).prop_map(
        |(scheme, host, port, userinfo, path, pairs, fragment)| {
            let mut secrets = Vec::new();
            let mut url = format!("{scheme}://");
            if let Some(u) = userinfo {
                url.push_str(&u);
                url.push('@');
                secrets.extend(u.split(':').map(str::to_owned));
            }
            url.push_str(&host);
            if let Some(p) = port {
                url.push_str(&format!(":{p}"));
            }
            url.push_str(&path);
            if !pairs.is_empty() {
                url.push('?');
                let rendered: Vec<String> = pairs
                    .iter()
                    .map(|(k, v)| match v {
                        Some(v) => {
                            secrets.push(v.clone());
                            format!("{k}={v}")
                        }
                        None => k.clone(),
                    })
                    .collect();
                url.push_str(&rendered.join("&"));
            }
            if let Some((f, secret)) = fragment {
                url.push('#');
                url.push_str(&f);
                secrets.extend(secret);
            }
            (url, secrets)
        },
    )
}

proptest! {
    #[test]
    fn redact_text_never_panics_and_keeps_no_credential_value(input in any::<String>(), secret in "[a-z0-9]{8,16}") {
        let _ = policy::redact_text(&input);
        let text = format!("{input} token={secret} https://x.example/?code={secret}");
        let redacted = policy::redact_text(&text);
        prop_assert!(!redacted.contains(&format!("token={secret}")) && !redacted.contains(&format!("code={secret}")), "{}", redacted);
    }

    #[test]
    fn redact_url_never_panics_and_is_a_fixed_point(input in any::<String>()) {
        let once = redact_url(&input);
        prop_assert_eq!(redact_url(&once), once);
    }

    #[test]
    fn redact_url_handles_url_shaped_noise(input in "[a-zA-Z:/?#@\\[\\]%.&=\\\\ \t0-9-]{0,40}") {
        let once = redact_url(&input);
        prop_assert_eq!(redact_url(&once), once);
        let _ = Origin::parse(&input);
        let _ = check_navigation(&input, &NavigationPolicy::default());
    }

    #[test]
    fn redact_url_never_outputs_secrets((url, secrets) in url_with_secrets()) {
        let out = redact_url(&url);
        for secret in &secrets {
            prop_assert!(!out.contains(secret.as_str()), "{} leaked {} from {}", out, secret, url);
        }
        prop_assert_eq!(redact_url(&out), out.clone());
        // The output of a URL with secrets is still a URL the splitter accepts (or the marker).
        prop_assert!(out == "[redacted]" || out.contains("://"), "{}", out);
    }

    #[test]
    fn registry_never_lets_a_secret_through(
        secrets in prop::collection::vec("[abc]{4,7}", 1..4),
        text in "[abc ]{0,60}",
    ) {
        let mut registry = SecretRegistry::new();
        for s in &secrets {
            registry.add(s).unwrap();
        }
        let out = registry.redact(&text);
        for s in &secrets {
            prop_assert!(!out.contains(s.as_str()), "{:?} kept {:?}", out, s);
        }
    }
}
