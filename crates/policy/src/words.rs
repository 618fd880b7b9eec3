//! Splitting identifiers and short labels into lower-case words, and matching them against
//! word patterns. Shared by field classification and header redaction.
//!
//! Words break at every non-alphanumeric character, at camelCase humps (`accessToken`,
//! `APIKey` → `api`, `key`) and between letters and digits (`password2` → `password`, `2`;
//! `2fa` → `2`, `fa`). Matching is on whole words, so `monkey` never matches `key`,
//! `tokenizer` never matches `token` and `author` never matches `auth`.

/// The lower-case words of `text`.
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for run in text.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = run.chars().collect();
        let mut current = String::new();
        for (i, &c) in chars.iter().enumerate() {
            if i > 0 && is_boundary(chars[i - 1], c, chars.get(i + 1).copied()) {
                out.push(std::mem::take(&mut current));
            }
            current.extend(c.to_lowercase());
        }
        if !current.is_empty() {
            out.push(current);
        }
    }
    out
}

fn is_boundary(prev: char, c: char, next: Option<char>) -> bool {
    let lower_to_upper = prev.is_lowercase() && c.is_uppercase();
    // The last capital of an acronym starts the next word: `APIKey` → `API` + `Key`.
    let acronym_end =
        prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase);
    let letter_digit = prev.is_alphabetic() != c.is_alphabetic();
    lower_to_upper || acronym_end || letter_digit
}

/// Whether `pattern` occurs as consecutive whole words in `words`.
pub(crate) fn contains_phrase(words: &[String], pattern: &[&str]) -> bool {
    !pattern.is_empty()
        && words
            .windows(pattern.len())
            .any(|window| window.iter().zip(pattern).all(|(w, p)| w == p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_identifiers() {
        assert_eq!(words("accessToken"), ["access", "token"]);
        assert_eq!(words("APIKey"), ["api", "key"]);
        assert_eq!(words("api-key"), ["api", "key"]);
        assert_eq!(words("user_password2"), ["user", "password", "2"]);
        assert_eq!(words("2faCode"), ["2", "fa", "code"]);
        assert_eq!(words("Card number:"), ["card", "number"]);
        assert_eq!(words(""), Vec::<String>::new());
    }
}
