//! The registry of secrets the runtime itself typed (passwords, tokens from the vault), and
//! the redaction of any text that might contain them before it leaves the runtime
//! (design invariant 8; `000_…` §08: typed text is recorded only by length, target and
//! sensitivity). A plain struct the runtime owns; nothing global.

use std::borrow::Cow;
use std::fmt;

use crate::REDACTED;
use crate::error::PolicyError;

/// The shortest secret the registry accepts, in characters. Shorter strings occur in
/// ordinary text too often for blanket replacement to be meaningful.
pub const MIN_SECRET_CHARS: usize = 4;

/// Secrets to scrub from text. `Debug` prints only how many there are.
///
/// Besides each secret as typed, its percent-encoded forms (`encodeURIComponent` and
/// form encoding with `+` for space) are scrubbed too, since typed text often comes back
/// inside a URL. Matching is exact and case-sensitive. Built for a handful of secrets:
/// each `redact` scans the text once per pattern.
#[derive(Clone, Default)]
pub struct SecretRegistry {
    /// Every pattern to scrub, longest first; no duplicates.
    patterns: Vec<String>,
    added: usize,
}

impl SecretRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a secret. Adding one already present is a no-op.
    ///
    /// Errors: [`PolicyError::SecretTooShort`] under [`MIN_SECRET_CHARS`] characters; the
    /// caller must then keep that text out of outputs some other way (record its length only).
    pub fn add(&mut self, secret: &str) -> Result<(), PolicyError> {
        let chars = secret.chars().count();
        if chars < MIN_SECRET_CHARS {
            return Err(PolicyError::SecretTooShort {
                chars,
                min: MIN_SECRET_CHARS,
            });
        }
        if self.patterns.iter().any(|p| p == secret) {
            return Ok(());
        }
        self.added += 1;
        let component = percent_encode(secret, false);
        let form = percent_encode(secret, true);
        for pattern in [secret.to_owned(), component, form] {
            if !self.patterns.contains(&pattern) {
                self.patterns.push(pattern);
            }
        }
        self.patterns
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        Ok(())
    }

    /// How many distinct secrets were added.
    pub fn len(&self) -> usize {
        self.added
    }

    /// Whether no secret was added.
    pub fn is_empty(&self) -> bool {
        self.added == 0
    }

    /// `text` with every occurrence of every registered secret replaced by [`REDACTED`].
    /// Overlapping or adjacent occurrences (of one secret or several) collapse into one
    /// marker, so no part of any occurrence survives. Borrows when nothing matched.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for pattern in &self.patterns {
            let mut from = 0;
            while let Some(found) = text
                .get(from..)
                .and_then(|rest| rest.find(pattern.as_str()))
            {
                let start = from + found;
                spans.push((start, start + pattern.len()));
                // Step one character, not one match, so self-overlapping occurrences
                // (`abab` in `ababab`) are all found.
                from = start + text[start..].chars().next().map_or(1, char::len_utf8);
            }
        }
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        spans.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut copied_to = 0;
        let mut iter = spans.into_iter().peekable();
        while let Some((start, mut end)) = iter.next() {
            while let Some(&(next_start, next_end)) = iter.peek() {
                if next_start > end {
                    break;
                }
                end = end.max(next_end);
                iter.next();
            }
            out.push_str(&text[copied_to..start]);
            out.push_str(REDACTED);
            copied_to = end;
        }
        out.push_str(&text[copied_to..]);
        Cow::Owned(out)
    }
}

impl fmt::Debug for SecretRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SecretRegistry")
            .field("secrets", &self.added)
            .finish_non_exhaustive()
    }
}

/// Percent-encodes everything but unreserved characters; `form` writes space as `+`.
fn percent_encode(s: &str, form: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else if form && b == b' ' {
            out.push('+');
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_does_not_print_secrets() {
        let mut registry = SecretRegistry::new();
        registry.add("hunter22").unwrap();
        let debug = format!("{registry:?}");
        assert!(!debug.contains("hunter22"), "{debug}");
        assert!(debug.contains("secrets: 1"), "{debug}");
    }
}
