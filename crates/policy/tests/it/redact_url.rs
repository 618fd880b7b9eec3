//! URL redaction table.

use policy::redact_url;

fn check(input: &str, expected: &str) {
    let actual = redact_url(input);
    assert_eq!(actual, expected, "input {input:?}");
    assert_eq!(redact_url(&actual), actual, "not a fixed point: {input:?}");
}

#[test]
fn query_values_are_dropped_keys_kept() {
    check(
        "https://example.com/search?token=abc&page=2",
        "https://example.com/search?token=&page=",
    );
    check(
        "https://example.com/?q=a%26b&x=1",
        "https://example.com/?q=&x=",
    );
    check(
        "https://example.com/?a=1&a=2&a=3",
        "https://example.com/?a=&a=&a=",
    );
    check("https://example.com/?flag", "https://example.com/?flag");
    check(
        "https://example.com/?flag&k=v",
        "https://example.com/?flag&k=",
    );
    check("https://example.com/?", "https://example.com/?");
    check("https://example.com/?&&x=1&", "https://example.com/?&&x=&");
    check("https://example.com/?k==v=w", "https://example.com/?k=");
    check("https://example.com/?=value", "https://example.com/?=");
    check(
        "https://example.com/?filter[status]=open",
        "https://example.com/?filter[status]=",
    );
    check(
        "https://example.com/?redirect=https://other.test/?token=x",
        "https://example.com/?redirect=",
    );
    check(
        "https://example.com/?eyJhbGciOiJIUzI1NiJ9eyJzdWIiOiIx",
        "https://example.com/?[redacted]",
    );
    check(
        "https://example.com/?sk_live_4eC39HqLyjWDarjtT1zdp7dc",
        "https://example.com/?[redacted]",
    );
    check(
        "https://example.com/?utm_source=x&utm_campaign2024=y",
        "https://example.com/?utm_source=&utm_campaign2024=",
    );
}

#[test]
fn userinfo_is_dropped() {
    check("http://user:pass@example.com/", "http://example.com/");
    check(
        "http://user@example.com:8080/x",
        "http://example.com:8080/x",
    );
    check(
        "ftp://anonymous:me%40x.test@ftp.example.com/pub",
        "ftp://ftp.example.com/pub",
    );
    check("http://a@b@example.com/", "http://example.com/");
    check(
        "chrome-extension://u:p@abcdef/page.html",
        "chrome-extension://abcdef/page.html",
    );
}

#[test]
fn hosts_and_ports_are_normalised() {
    check("HTTP://Example.COM", "http://example.com/");
    check("https://example.com:443/a", "https://example.com/a");
    check("https://example.com:8443/a", "https://example.com:8443/a");
    check(
        "http://[0:0:0:0:0:0:0:1]:8080/x?y=z",
        "http://[::1]:8080/x?y=",
    );
    check("http://127.1/", "http://127.0.0.1/");
    check(
        "https://bücher.de/straße?q=x",
        "https://xn--bcher-kva.de/straße?q=",
    );
    check(
        "https://example.com/%7Euser/a%20b",
        "https://example.com/%7Euser/a%20b",
    );
    check("https:\\\\example.com\\a\\b", "https://example.com/a/b");
    check(
        "  https://example.com/a\t?b=c\n",
        "https://example.com/a?b=",
    );
}

#[test]
fn fragments_keep_anchors_and_drop_data() {
    check(
        "https://example.com/doc#section-2",
        "https://example.com/doc#section-2",
    );
    check(
        "https://github.com/o/r/blob/main/x.rs#L10-L20",
        "https://github.com/o/r/blob/main/x.rs#L10-L20",
    );
    check("https://example.com/#top", "https://example.com/#top");
    check(
        "https://zh.wikipedia.org/wiki/X#%E6%A6%82%E8%A6%81",
        "https://zh.wikipedia.org/wiki/X#%E6%A6%82%E8%A6%81",
    );
    check(
        "https://example.com/cb#access_token=abc123&token_type=bearer",
        "https://example.com/cb",
    );
    check("https://example.com/#a=b", "https://example.com/");
    check("https://example.com/#%3Dx", "https://example.com/");
    check(
        "https://example.com/app#/inbox/123",
        "https://example.com/app",
    );
    check("https://example.com/#!route", "https://example.com/");
    check(
        "https://example.com/#eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
        "https://example.com/",
    );
    check(
        "https://example.com/#550e8400-e29b-41d4-a716-446655440000",
        "https://example.com/",
    );
    check(
        "https://example.com/#a8f5f167f44f4964e6c998dee827110c",
        "https://example.com/",
    );
    check("https://example.com/#", "https://example.com/");
    check(
        "https://example.com/?code=x#state",
        "https://example.com/?code=#state",
    );
}

#[test]
fn non_http_schemes() {
    check("data:text/html;base64,PHNjcmlwdD4=", "data:[redacted]");
    check("DATA:,secret", "data:[redacted]");
    check(
        "blob:https://example.com/550e8400-e29b-41d4-a716-446655440000",
        "blob:https://example.com",
    );
    check(
        "blob:https://example.com:8443/uuid",
        "blob:https://example.com:8443",
    );
    check("blob:null/uuid", "blob:[redacted]");
    check(
        "javascript:fetch('/steal?c='+document.cookie)",
        "javascript:[redacted]",
    );
    check(" java\nscript:alert(1)", "javascript:[redacted]");
    check("about:blank", "about:blank");
    check("about:srcdoc", "about:srcdoc");
    check("about:blank#frag", "about:blank#frag");
    check("about:blank?x=y", "about:blank?x=");
    check("about:<script>", "about:[redacted]");
    check("mailto:alice@example.com?subject=hi", "mailto:[redacted]");
    check("tel:+15551234", "tel:[redacted]");
    check(
        "file:///home/alice/notes.txt?x=1",
        "file:///home/alice/notes.txt?x=",
    );
    check(
        "file://C:/Users/alice/a.txt",
        "file:///C:/Users/alice/a.txt",
    );
    check("file:notes.txt", "file:///notes.txt");
    check(
        "chrome://settings/passwords?search=bank",
        "chrome://settings/passwords?search=",
    );
    check(
        "ws://example.com:80/socket?token=abc",
        "ws://example.com/socket?token=",
    );
    check(
        "wss://example.com/socket?key=abc",
        "wss://example.com/socket?key=",
    );
}

#[test]
fn garbage_becomes_the_marker() {
    for input in [
        "",
        "   ",
        "not a url",
        "/relative?token=abc",
        "?token=abc",
        "http://",
        "http://[::1/",
        "http://exa mple.com/?t=1",
        "http://example.com:99999/",
        "http://%ff/",
        "1http://x",
        "[redacted]",
        "::::",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:secret",
    ] {
        check(input, "[redacted]");
    }
}
