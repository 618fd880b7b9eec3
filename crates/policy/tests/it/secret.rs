//! Secret registry redaction.

use policy::{MIN_SECRET_CHARS, PolicyError, SecretRegistry};

fn registry(secrets: &[&str]) -> SecretRegistry {
    let mut r = SecretRegistry::new();
    for s in secrets {
        r.add(s).unwrap();
    }
    r
}

fn check(secrets: &[&str], text: &str, expected: &str) {
    assert_eq!(
        registry(secrets).redact(text),
        expected,
        "secrets {secrets:?} text {text:?}"
    );
}

#[test]
fn redaction_table() {
    check(
        &["hunter22"],
        "my password is hunter22.",
        "my password is [redacted].",
    );
    check(&["hunter22"], "hunter22hunter22", "[redacted]");
    check(&["hunter22"], "Hunter22", "Hunter22");
    check(&["abab"], "xababab!", "x[redacted]!");
    check(&["aaaa"], "aaaaaaa", "[redacted]");
    // Overlapping secrets: no fragment of either survives.
    check(
        &["secret-one", "one-two"],
        "a secret-one-two b",
        "a [redacted] b",
    );
    check(&["abcdef", "cdefgh"], "abcdefgh", "[redacted]");
    check(&["abcd", "cdxy"], "zabcdxyz", "z[redacted]z");
    check(
        &["longsecret", "secret"],
        "longsecret secret",
        "[redacted] [redacted]",
    );
    check(&["pässwört"], "ä pässwört ö", "ä [redacted] ö");
    check(
        &["p@ss word"],
        "https://x.test/?q=p%40ss%20word or q=p%40ss+word",
        "https://x.test/?q=[redacted] or q=[redacted]",
    );
    check(&["nomatch1"], "unrelated text", "unrelated text");
    check(&[], "anything", "anything");
}

#[test]
fn borrows_when_nothing_matches() {
    let r = registry(&["hunter22"]);
    assert!(matches!(
        r.redact("clean text"),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn short_secrets_are_refused_and_duplicates_ignored() {
    let mut r = SecretRegistry::new();
    assert_eq!(
        r.add("abc"),
        Err(PolicyError::SecretTooShort {
            chars: 3,
            min: MIN_SECRET_CHARS
        })
    );
    assert_eq!(
        r.add("äöü"),
        Err(PolicyError::SecretTooShort {
            chars: 3,
            min: MIN_SECRET_CHARS
        })
    );
    assert!(r.is_empty());
    r.add("abcd").unwrap();
    r.add("abcd").unwrap();
    assert_eq!(r.len(), 1);
}
