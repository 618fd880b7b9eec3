//! Host normalisation for special-scheme URLs: percent-decoding, lower-casing, IDN labels
//! to their `xn--` ASCII form, IPv4 in every notation browsers accept (`127.1`,
//! `0x7f.0.0.1`, `2130706433`) to dotted decimal, IPv6 to its compressed form, one trailing
//! dot removed. It is not a full UTS #46 implementation: where UTS #46 would map a code
//! point to something else (compatibility characters, ignored format characters) and we
//! cannot be sure what, the host is refused rather than guessed, so the origin we compute
//! is never a different host from the one Chromium would load.

use std::net::Ipv6Addr;

use crate::error::InvalidUrlReason;

/// Normalises the raw host of a special URL (`http`, `https`, `ws`, `wss`, `ftp`, `file`).
pub(crate) fn normalise_special_host(raw: &str) -> Result<String, InvalidUrlReason> {
    if let Some(inner) = raw.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or(InvalidUrlReason::InvalidIpv6)?;
        return parse_ipv6(inner).map(|addr| format!("[{}]", serialise_ipv6(addr)));
    }
    let decoded = percent_decode(raw);
    let decoded = String::from_utf8(decoded).map_err(|_| InvalidUrlReason::HostEncoding)?;
    let mut ascii = domain_to_ascii(&decoded)?;
    // `example.com.` is the same DNS name as `example.com`; treating them as one origin keeps
    // a blocklist from being sidestepped with a dot.
    if ascii.ends_with('.') {
        ascii.pop();
    }
    if ascii.is_empty() {
        return Err(InvalidUrlReason::MissingHost);
    }
    if ascii.split('.').any(str::is_empty) {
        return Err(InvalidUrlReason::EmptyHostLabel);
    }
    if ends_in_number(&ascii) {
        return parse_ipv4(&ascii).map(|ip| {
            let [a, b, c, d] = ip.to_be_bytes();
            format!("{a}.{b}.{c}.{d}")
        });
    }
    Ok(ascii)
}

/// Checks an opaque host (non-special schemes such as `chrome://` or `ssh://`), which
/// browsers keep as written apart from IPv6 literals.
pub(crate) fn check_opaque_host(raw: &str) -> Result<String, InvalidUrlReason> {
    if let Some(inner) = raw.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or(InvalidUrlReason::InvalidIpv6)?;
        return parse_ipv6(inner).map(|addr| format!("[{}]", serialise_ipv6(addr)));
    }
    if raw
        .chars()
        .any(|c| is_forbidden_host_code_point(c) || c.is_control())
    {
        return Err(InvalidUrlReason::ForbiddenHostCodePoint);
    }
    Ok(raw.to_owned())
}

fn percent_decode(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).and_then(|&b| hex_value(b)),
                bytes.get(i + 2).and_then(|&b| hex_value(b)),
            )
        {
            out.push(hi << 4 | lo);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

pub(crate) fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// WHATWG forbidden host code points (for opaque hosts).
fn is_forbidden_host_code_point(c: char) -> bool {
    matches!(
        c,
        '\0' | '\t'
            | '\n'
            | '\r'
            | ' '
            | '#'
            | '/'
            | ':'
            | '<'
            | '>'
            | '?'
            | '@'
            | '['
            | '\\'
            | ']'
            | '^'
            | '|'
    )
}

/// WHATWG forbidden domain code points: the host code points plus C0 controls, `%`, DEL.
fn is_forbidden_domain_code_point(c: char) -> bool {
    is_forbidden_host_code_point(c) || c <= '\u{1f}' || c == '%' || c == '\u{7f}'
}

/// Code points that UTS #46 maps to other text (often plain ASCII) by compatibility
/// decomposition or ignores; lower-casing alone would give a different host, so refuse.
fn is_unmappable(c: char) -> bool {
    matches!(
        c,
        '\u{00aa}' | '\u{00b2}' | '\u{00b3}' | '\u{00b5}' | '\u{00b9}' | '\u{00ba}'
            | '\u{00bc}'..='\u{00be}'
            | '\u{0130}'
            | '\u{1e9e}'
            | '\u{1d2c}'..='\u{1dbf}'
            | '\u{2070}'..='\u{209f}'
            | '\u{2100}'..='\u{218f}'
            | '\u{2460}'..='\u{24ff}'
            | '\u{2c7c}'..='\u{2c7d}'
            | '\u{3200}'..='\u{33ff}'
            | '\u{f900}'..='\u{faff}'
            | '\u{fb00}'..='\u{fb4f}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{fe10}'..='\u{fe6f}'
            | '\u{ff00}'..='\u{ffef}'
            | '\u{1d400}'..='\u{1d7ff}'
            | '\u{1f100}'..='\u{1f1ff}'
    )
}

/// Lower-cases, maps the IDNA full stops and fullwidth ASCII, refuses forbidden and
/// unmappable code points, and converts non-ASCII labels to punycode.
fn domain_to_ascii(domain: &str) -> Result<String, InvalidUrlReason> {
    let mut mapped = String::with_capacity(domain.len());
    for c in domain.chars() {
        let c = match c {
            '\u{3002}' | '\u{ff0e}' | '\u{ff61}' => '.',
            // Fullwidth ASCII (`ｅｘａｍｐｌｅ`) is plain ASCII to UTS #46.
            '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xfee0).unwrap_or(c),
            _ => c,
        };
        if c.is_ascii() {
            if is_forbidden_domain_code_point(c) {
                return Err(InvalidUrlReason::ForbiddenHostCodePoint);
            }
            mapped.push(c.to_ascii_lowercase());
            continue;
        }
        if is_unmappable(c) || !c.is_alphanumeric() {
            return Err(InvalidUrlReason::InvalidIdn);
        }
        for lower in c.to_lowercase() {
            if lower.is_ascii() || !lower.is_alphanumeric() {
                // A non-ASCII letter whose lower case is ASCII or a mark (`K` Kelvin sign,
                // `İ`): UTS #46 may disagree, so do not guess.
                return Err(InvalidUrlReason::InvalidIdn);
            }
            mapped.push(lower);
        }
    }
    if mapped.is_ascii() {
        return Ok(mapped);
    }
    let mut out = String::with_capacity(mapped.len() * 2);
    for (i, label) in mapped.split('.').enumerate() {
        if i > 0 {
            out.push('.');
        }
        if label.is_ascii() {
            out.push_str(label);
        } else {
            out.push_str("xn--");
            out.push_str(&punycode_encode(label).ok_or(InvalidUrlReason::InvalidIdn)?);
        }
    }
    Ok(out)
}

/// RFC 3492 punycode encoding of one label (without the `xn--` prefix).
pub(crate) fn punycode_encode(label: &str) -> Option<String> {
    const BASE: u32 = 36;
    const T_MIN: u32 = 1;
    const T_MAX: u32 = 26;
    const INITIAL_N: u32 = 128;
    const INITIAL_BIAS: u32 = 72;

    fn digit(d: u32) -> char {
        // d < 36 by construction of the callers below.
        if d < 26 {
            char::from(b'a' + d as u8)
        } else {
            char::from(b'0' + (d - 26) as u8)
        }
    }

    let input: Vec<u32> = label.chars().map(u32::from).collect();
    let mut output: String = label.chars().filter(char::is_ascii).collect();
    let basic = u32::try_from(output.len()).ok()?;
    let total = u32::try_from(input.len()).ok()?;
    if basic > 0 {
        output.push('-');
    }
    let mut n = INITIAL_N;
    let mut delta: u32 = 0;
    let mut bias = INITIAL_BIAS;
    let mut handled = basic;
    while handled < total {
        let m = input.iter().copied().filter(|&c| c >= n).min()?;
        delta = delta.checked_add((m - n).checked_mul(handled + 1)?)?;
        n = m;
        for &c in &input {
            if c < n {
                delta = delta.checked_add(1)?;
            }
            if c == n {
                let mut q = delta;
                let mut k = BASE;
                loop {
                    let t = if k <= bias {
                        T_MIN
                    } else if k >= bias + T_MAX {
                        T_MAX
                    } else {
                        k - bias
                    };
                    if q < t {
                        break;
                    }
                    output.push(digit(t + (q - t) % (BASE - t)));
                    q = (q - t) / (BASE - t);
                    k += BASE;
                }
                output.push(digit(q));
                bias = adapt(delta, handled + 1, handled == basic);
                delta = 0;
                handled += 1;
            }
        }
        delta = delta.checked_add(1)?;
        n = n.checked_add(1)?;
    }
    Some(output)
}

fn adapt(delta: u32, num_points: u32, first_time: bool) -> u32 {
    const BASE: u32 = 36;
    const T_MIN: u32 = 1;
    const T_MAX: u32 = 26;
    const SKEW: u32 = 38;
    const DAMP: u32 = 700;
    let mut delta = if first_time { delta / DAMP } else { delta / 2 };
    delta += delta / num_points;
    let mut k = 0;
    while delta > ((BASE - T_MIN) * T_MAX) / 2 {
        delta /= BASE - T_MIN;
        k += BASE;
    }
    k + (BASE - T_MIN + 1) * delta / (delta + SKEW)
}

/// WHATWG "ends in a number": the last label is all digits or a `0x` hex number.
fn ends_in_number(host: &str) -> bool {
    let last = host.rsplit('.').next().unwrap_or("");
    if !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    last.strip_prefix("0x")
        .or_else(|| last.strip_prefix("0X"))
        .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// WHATWG IPv4 parser: 1–4 parts, each decimal, octal (leading `0`) or hex (`0x`).
fn parse_ipv4(host: &str) -> Result<u32, InvalidUrlReason> {
    let parts: Vec<&str> = host.split('.').collect();
    if parts.len() > 4 {
        return Err(InvalidUrlReason::InvalidIpv4);
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for part in &parts {
        numbers.push(parse_ipv4_number(part).ok_or(InvalidUrlReason::InvalidIpv4)?);
    }
    let (last, init) = numbers.split_last().ok_or(InvalidUrlReason::InvalidIpv4)?;
    if init.iter().any(|&n| n > 255) {
        return Err(InvalidUrlReason::InvalidIpv4);
    }
    // `init.len()` is at most 3, so the shift is at most 32.
    let last_limit = 1u64 << (8 * (4 - init.len()));
    if *last >= last_limit {
        return Err(InvalidUrlReason::InvalidIpv4);
    }
    let mut ip = *last;
    for (i, &n) in init.iter().enumerate() {
        ip += n << (8 * (3 - i));
    }
    u32::try_from(ip).map_err(|_| InvalidUrlReason::InvalidIpv4)
}

fn parse_ipv4_number(part: &str) -> Option<u64> {
    let (digits, radix) =
        if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (part, 10)
        };
    if part.is_empty() {
        return None;
    }
    let mut value: u64 = 0;
    for c in digits.chars() {
        let d = u64::from(c.to_digit(radix)?);
        // Anything past 2^32 is invalid whatever follows; saturate instead of overflowing.
        value = value
            .saturating_mul(u64::from(radix))
            .saturating_add(d)
            .min(1 << 33);
    }
    Some(value)
}

fn parse_ipv6(inner: &str) -> Result<Ipv6Addr, InvalidUrlReason> {
    // Zone ids (`%25eth0`) are not allowed in URLs; std's parser refuses them too.
    inner
        .parse::<Ipv6Addr>()
        .map_err(|_| InvalidUrlReason::InvalidIpv6)
}

/// WHATWG IPv6 serialiser: lower-case hex, the first longest run of two or more zero
/// pieces compressed to `::`, embedded IPv4 printed as hex pieces (`::ffff:7f00:1`).
fn serialise_ipv6(addr: Ipv6Addr) -> String {
    let pieces = addr.segments();
    let mut best: Option<(usize, usize)> = None;
    let mut i = 0;
    while i < 8 {
        if pieces[i] == 0 {
            let start = i;
            while i < 8 && pieces[i] == 0 {
                i += 1;
            }
            let len = i - start;
            if len >= 2 && best.is_none_or(|(_, best_len)| len > best_len) {
                best = Some((start, len));
            }
        } else {
            i += 1;
        }
    }
    let mut out = String::with_capacity(39);
    let mut i = 0;
    while i < 8 {
        if let Some((start, len)) = best
            && i == start
        {
            out.push_str(if i == 0 { "::" } else { ":" });
            i += len;
            continue;
        }
        out.push_str(&format!("{:x}", pieces[i]));
        if i < 7 {
            out.push(':');
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn punycode_matches_rfc_examples() {
        assert_eq!(punycode_encode("bücher").as_deref(), Some("bcher-kva"));
        assert_eq!(punycode_encode("münchen").as_deref(), Some("mnchen-3ya"));
        assert_eq!(punycode_encode("例え").as_deref(), Some("r8jz45g"));
        assert_eq!(punycode_encode("テスト").as_deref(), Some("zckzah"));
        assert_eq!(punycode_encode("пример").as_deref(), Some("e1afmkfd"));
    }

    #[test]
    fn ipv4_notations() {
        for (input, expected) in [
            ("127.0.0.1", "127.0.0.1"),
            ("127.1", "127.0.0.1"),
            ("0x7f.0.0.1", "127.0.0.1"),
            ("0177.0.0.1", "127.0.0.1"),
            ("2130706433", "127.0.0.1"),
            ("0x7F000001", "127.0.0.1"),
            ("1.2.3.4.", "1.2.3.4"),
        ] {
            assert_eq!(
                normalise_special_host(input).as_deref(),
                Ok(expected),
                "{input}"
            );
        }
        for input in [
            "256.0.0.1",
            "1.2.3.4.5",
            "4294967296",
            "1.2.3.09",
            "0x1.2.3.0x100",
        ] {
            assert_eq!(
                normalise_special_host(input),
                Err(InvalidUrlReason::InvalidIpv4),
                "{input}"
            );
        }
    }

    #[test]
    fn ipv6_serialisation() {
        for (input, expected) in [
            ("[::1]", "[::1]"),
            ("[0:0:0:0:0:0:0:1]", "[::1]"),
            ("[2001:DB8:0:0:1:0:0:1]", "[2001:db8::1:0:0:1]"),
            ("[::ffff:127.0.0.1]", "[::ffff:7f00:1]"),
            ("[1:0:2:0:3:0:4:0]", "[1:0:2:0:3:0:4:0]"),
            ("[::]", "[::]"),
        ] {
            assert_eq!(
                normalise_special_host(input).as_deref(),
                Ok(expected),
                "{input}"
            );
        }
        assert_eq!(
            normalise_special_host("[::1%25eth0]"),
            Err(InvalidUrlReason::InvalidIpv6)
        );
    }

    #[test]
    fn unmappable_hosts_are_refused_not_guessed() {
        for input in [
            "\u{212a}.com",
            "exa\u{200b}mple.com",
            "bu\u{308}cher.de",
            "\u{1d41e}x.com",
        ] {
            assert_eq!(
                normalise_special_host(input),
                Err(InvalidUrlReason::InvalidIdn),
                "{input:?}"
            );
        }
        assert_eq!(
            normalise_special_host("ｅｘａｍｐｌｅ。com").as_deref(),
            Ok("example.com")
        );
    }
}
