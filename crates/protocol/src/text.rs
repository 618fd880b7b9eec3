//! Bounded text: count characters, cut on a character boundary, flag what was cut. Pure functions.
//!
//! "Characters" are Unicode scalar values (`char`s), the unit of JSON Schema's `maxLength`
//! and of every character limit in [`crate::limits`]. A cut never splits a character; it
//! may split a grapheme cluster (an emoji with a skin-tone modifier, say), which is the
//! price of counting the way the schema counts.

use std::io;

use serde::Serialize;

/// The number of Unicode scalar values in `s`.
pub fn char_count(s: &str) -> usize {
    s.chars().count()
}

/// The longest prefix of `s` with at most `max_chars` characters, and whether anything was cut.
pub fn truncate_chars(s: &str, max_chars: usize) -> (&str, bool) {
    match s.char_indices().nth(max_chars) {
        Some((byte_index, _)) => (&s[..byte_index], true),
        None => (s, false),
    }
}

/// The longest prefix of `s` with at most `max_bytes` UTF-8 bytes that ends on a character
/// boundary, and whether anything was cut.
pub fn truncate_utf8_bytes(s: &str, max_bytes: usize) -> (&str, bool) {
    if s.len() <= max_bytes {
        return (s, false);
    }
    let mut end = max_bytes;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    (&s[..end], true)
}

/// Cuts `s` in place to at most `max_chars` characters; returns whether anything was cut.
pub fn truncate_chars_in_place(s: &mut String, max_chars: usize) -> bool {
    let (kept, cut) = truncate_chars(s, max_chars);
    if cut {
        let len = kept.len();
        s.truncate(len);
    }
    cut
}

/// Folds every run of whitespace into one space and trims both ends, as the preview's
/// "visible text with whitespace folded" requires.
pub fn fold_whitespace(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// A string cut to a character limit, with the flag a producer copies into the field's
/// `*_truncated` companion.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BoundedText {
    /// The kept text: at most the limit it was built with.
    pub text: String,
    /// Whether the original was longer than the limit.
    pub truncated: bool,
}

impl BoundedText {
    /// Cuts `text` to at most `max_chars` characters.
    pub fn new(text: impl Into<String>, max_chars: usize) -> Self {
        let mut text = text.into();
        let truncated = truncate_chars_in_place(&mut text, max_chars);
        Self { text, truncated }
    }
}

/// Keeps the first `max` items of `items`; returns whether any were dropped.
pub fn truncate_list<T>(items: &mut Vec<T>, max: usize) -> bool {
    let cut = items.len() > max;
    items.truncate(max);
    cut
}

/// The size in UTF-8 bytes of `value` serialized as compact JSON, or `usize::MAX` if it
/// cannot be serialized (which is then never within any budget).
pub fn json_byte_len<T: Serialize + ?Sized>(value: &T) -> usize {
    struct Counter(usize);
    impl io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

/// Whether `value` serialized as compact JSON fits in `max_bytes` UTF-8 bytes.
pub fn fits_json_budget<T: Serialize + ?Sized>(value: &T, max_bytes: usize) -> bool {
    json_byte_len(value) <= max_bytes
}

/// Page-derived text made safe to show a person on a terminal or a page: escape sequences (CSI,
/// OSC and other `ESC` sequences, C1 `CSI`) are dropped with their parameters, other control
/// characters become spaces, and bidirectional overrides and isolates (which can reorder what a
/// line appears to say) are dropped; whitespace is then folded.
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates up to a final byte.
                Some('[') => skip_csi(&mut chars),
                // OSC (and DCS, SOS, PM, APC): up to BEL or ST.
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' => {}
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    fold_whitespace(&out)
}

fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn printable_drops_escapes_controls_and_overrides() {
        assert_eq!(
            printable("Read\u{1b}[2K\r\u{9b}2KApproved\u{202e} ok\u{7}"),
            "Read Approved ok"
        );
        assert_eq!(printable("a\u{1b}]0;title\u{7}b"), "ab");
        assert_eq!(printable("a\u{1b}]0;title\u{1b}\\b"), "ab");
        assert_eq!(printable("line\none\ttab"), "line one tab");
        assert_eq!(printable("Ünïcödé 名前"), "Ünïcödé 名前");
    }
}
