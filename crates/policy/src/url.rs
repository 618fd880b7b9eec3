//! A small URL splitter: scheme, userinfo, host, port, path, query and fragment, as
//! borrowed slices. It follows the WHATWG URL standard wherever a difference could let a
//! URL mean one origin to us and another to Chromium (whitespace stripping, `\` as a
//! separator in special schemes, the last `@` ending userinfo, any number of slashes after
//! `http:`), and nothing more: it does not percent-encode, resolve dot segments or
//! normalise paths. Host normalisation lives in [`crate::host`].

use std::borrow::Cow;

use crate::error::InvalidUrlReason;

/// The WHATWG "special" schemes: they always have an authority, and `\` separates like `/`.
pub(crate) fn is_special(scheme: &str) -> bool {
    matches!(scheme, "http" | "https" | "ws" | "wss" | "ftp" | "file")
}

/// A URL cut into its parts. Slices borrow the cleaned input (see [`clean`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SplitUrl<'a> {
    /// Lower-cased scheme without the colon.
    pub scheme: String,
    /// Everything between the scheme and the query.
    pub body: Body<'a>,
    /// The text after `?` up to `#`, if there is a `?`.
    pub query: Option<&'a str>,
    /// The text after the first `#`, if there is one.
    pub fragment: Option<&'a str>,
}

/// The part of a URL between its scheme and its query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Body<'a> {
    /// `scheme://[userinfo@]host[:port]path`.
    Authority {
        /// Present when the authority had an `@`; never to be printed.
        userinfo: Option<&'a str>,
        /// The raw host, brackets included for IPv6; may be empty (`file:///`).
        host: &'a str,
        /// The raw port text after `:`, possibly empty.
        port: Option<&'a str>,
        /// The raw path, possibly empty.
        path: &'a str,
    },
    /// `scheme:path` without an authority (`data:`, `javascript:`, `mailto:`, `about:`).
    Opaque {
        /// Everything after the colon up to `?` or `#`.
        path: &'a str,
    },
}

/// Strips what browsers strip before parsing: leading and trailing C0 controls and spaces,
/// and every tab, line feed and carriage return inside (so `java\nscript:` is `javascript:`).
pub(crate) fn clean(input: &str) -> Cow<'_, str> {
    let trimmed = input.trim_matches(|c: char| c <= ' ');
    if trimmed.contains(['\t', '\n', '\r']) {
        Cow::Owned(
            trimmed
                .chars()
                .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
                .collect(),
        )
    } else {
        Cow::Borrowed(trimmed)
    }
}

/// Splits a cleaned URL. Relative URLs are refused: there is no base to resolve against.
pub(crate) fn split(s: &str) -> Result<SplitUrl<'_>, InvalidUrlReason> {
    if s.is_empty() {
        return Err(InvalidUrlReason::Empty);
    }
    let colon = scheme_end(s).ok_or(InvalidUrlReason::MissingScheme)?;
    let scheme = s[..colon].to_ascii_lowercase();
    let rest = &s[colon + 1..];

    let (body, after) = if scheme == "file" {
        split_file(rest)
    } else if is_special(&scheme) {
        // WHATWG "special authority ignore slashes": `http:x`, `http:/x`, `http:\\x` and
        // `http:///x` all have host `x`.
        let rest = rest.trim_start_matches(['/', '\\']);
        split_authority(rest, &['/', '\\', '?', '#'])?
    } else if let Some(rest) = rest.strip_prefix("//") {
        split_authority(rest, &['/', '?', '#'])?
    } else {
        let end = rest.find(['?', '#']).unwrap_or(rest.len());
        (Body::Opaque { path: &rest[..end] }, &rest[end..])
    };

    let (query, fragment) = split_query_fragment(after);
    Ok(SplitUrl {
        scheme,
        body,
        query,
        fragment,
    })
}

/// Byte index of the colon ending a valid scheme (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`).
fn scheme_end(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    if !bytes.first()?.is_ascii_alphabetic() {
        return None;
    }
    for (i, &b) in bytes.iter().enumerate().skip(1) {
        match b {
            b':' => return Some(i),
            b if b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.') => {}
            _ => return None,
        }
    }
    None
}

/// Splits `[userinfo@]host[:port]` off `rest`, ending at the first of `terminators`, then
/// the path up to `?` or `#`. Returns the body and the remainder starting at `?` or `#`.
fn split_authority<'a>(
    rest: &'a str,
    terminators: &[char],
) -> Result<(Body<'a>, &'a str), InvalidUrlReason> {
    let end = rest.find(terminators).unwrap_or(rest.len());
    let (authority, after) = rest.split_at(end);
    // The last `@` ends the userinfo, as in browsers: `http://a@b@c/` has host `c`.
    let (userinfo, hostport) = match authority.rfind('@') {
        Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
        None => (None, authority),
    };
    let (host, port) = split_host_port(hostport)?;
    let path_end = after.find(['?', '#']).unwrap_or(after.len());
    let body = Body::Authority {
        userinfo,
        host,
        port,
        path: &after[..path_end],
    };
    Ok((body, &after[path_end..]))
}

/// `file:` URLs: `file://host/path`, `file:///path`, `file:/path`, `file:C:/path`.
fn split_file(rest: &str) -> (Body<'_>, &str) {
    let starts_with_two_slashes = rest.len() >= 2
        && rest.as_bytes()[..2]
            .iter()
            .all(|b| matches!(b, b'/' | b'\\'));
    let (host, path_and_more) = if starts_with_two_slashes {
        let after_slashes = &rest[2..];
        let end = after_slashes
            .find(['/', '\\', '?', '#'])
            .unwrap_or(after_slashes.len());
        let host = &after_slashes[..end];
        if is_windows_drive_letter(host) {
            // `file://C:/x` names a path on drive C, not a host called `C:`.
            ("", after_slashes)
        } else {
            (host, &after_slashes[end..])
        }
    } else {
        ("", rest)
    };
    let path_end = path_and_more
        .find(['?', '#'])
        .unwrap_or(path_and_more.len());
    let body = Body::Authority {
        userinfo: None,
        host,
        port: None,
        path: &path_and_more[..path_end],
    };
    (body, &path_and_more[path_end..])
}

fn is_windows_drive_letter(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 2 && b[0].is_ascii_alphabetic() && matches!(b[1], b':' | b'|')
}

/// Splits `host[:port]`, keeping the brackets of an IPv6 literal on the host.
fn split_host_port(s: &str) -> Result<(&str, Option<&str>), InvalidUrlReason> {
    if s.starts_with('[') {
        let close = s.find(']').ok_or(InvalidUrlReason::InvalidIpv6)?;
        let (host, rest) = s.split_at(close + 1);
        if rest.is_empty() {
            Ok((host, None))
        } else if let Some(port) = rest.strip_prefix(':') {
            Ok((host, Some(port)))
        } else {
            Err(InvalidUrlReason::InvalidIpv6)
        }
    } else {
        match s.find(':') {
            Some(colon) => Ok((&s[..colon], Some(&s[colon + 1..]))),
            None => Ok((s, None)),
        }
    }
}

fn split_query_fragment(after: &str) -> (Option<&str>, Option<&str>) {
    let (before_fragment, fragment) = match after.find('#') {
        Some(hash) => (&after[..hash], Some(&after[hash + 1..])),
        None => (after, None),
    };
    let query = before_fragment.strip_prefix('?');
    (query, fragment)
}

/// Parses a port: digits only, leading zeros allowed, at most 65535; empty means none.
pub(crate) fn parse_port(raw: Option<&str>) -> Result<Option<u16>, InvalidUrlReason> {
    let Some(raw) = raw.filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let mut value: u32 = 0;
    for b in raw.bytes() {
        if !b.is_ascii_digit() {
            return Err(InvalidUrlReason::InvalidPort);
        }
        value = value * 10 + u32::from(b - b'0');
        if value > u32::from(u16::MAX) {
            return Err(InvalidUrlReason::InvalidPort);
        }
    }
    u16::try_from(value)
        .map(Some)
        .map_err(|_| InvalidUrlReason::InvalidPort)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_every_part_and_keeps_userinfo_apart() {
        let url = split("HTTP://user:pa@ss@Example.com:8080/a/b?x=1&y#frag").unwrap();
        assert_eq!(url.scheme, "http");
        assert_eq!(
            url.body,
            Body::Authority {
                userinfo: Some("user:pa@ss"),
                host: "Example.com",
                port: Some("8080"),
                path: "/a/b"
            }
        );
        assert_eq!(url.query, Some("x=1&y"));
        assert_eq!(url.fragment, Some("frag"));
    }

    #[test]
    fn backslash_ends_the_authority_of_special_schemes() {
        // `http://evil.com\@good.com/` goes to evil.com in a browser.
        let url = split("http://evil.com\\@good.com/").unwrap();
        let Body::Authority { host, userinfo, .. } = url.body else {
            panic!("no authority")
        };
        assert_eq!(host, "evil.com");
        assert_eq!(userinfo, None);
    }

    #[test]
    fn clean_strips_controls_like_browsers() {
        assert_eq!(clean("  java\tscript:x\n "), "javascript:x");
        assert_eq!(clean("\u{0}http://a/\u{1f}"), "http://a/");
    }

    #[test]
    fn file_urls_with_drive_letters_and_hosts() {
        let url = split("file://C:/Users/x").unwrap();
        assert_eq!(
            url.body,
            Body::Authority {
                userinfo: None,
                host: "",
                port: None,
                path: "C:/Users/x"
            }
        );
        let url = split("file://server/share").unwrap();
        assert_eq!(
            url.body,
            Body::Authority {
                userinfo: None,
                host: "server",
                port: None,
                path: "/share"
            }
        );
    }

    #[test]
    fn ports() {
        assert_eq!(parse_port(Some("0080")), Ok(Some(80)));
        assert_eq!(parse_port(Some("")), Ok(None));
        assert_eq!(
            parse_port(Some("65536")),
            Err(InvalidUrlReason::InvalidPort)
        );
        assert_eq!(
            parse_port(Some("99999999999999999999")),
            Err(InvalidUrlReason::InvalidPort)
        );
        assert_eq!(parse_port(Some("8a")), Err(InvalidUrlReason::InvalidPort));
    }
}
