//! Bounded text on multi-byte input: cuts never split a character, flags are exact.

use proptest::prelude::*;
use protocol::text::{
    BoundedText, char_count, fold_whitespace, json_byte_len, truncate_chars, truncate_utf8_bytes,
};

#[test]
fn cjk_and_emoji_are_counted_as_characters() {
    assert_eq!(char_count("日本語"), 3);
    assert_eq!(
        char_count("👍🏽"),
        2,
        "an emoji with a skin tone is two scalar values"
    );
    assert_eq!(truncate_chars("日本語テキスト", 3), ("日本語", true));
    assert_eq!(truncate_chars("日本語", 3), ("日本語", false));
    assert_eq!(truncate_chars("a😀b", 2), ("a😀", true));
    assert_eq!(truncate_chars("", 0), ("", false));
    assert_eq!(truncate_chars("x", 0), ("", true));
}

#[test]
fn byte_budget_never_splits_a_character() {
    // "日" is 3 bytes, "😀" is 4.
    assert_eq!(truncate_utf8_bytes("日本", 5), ("日", true));
    assert_eq!(truncate_utf8_bytes("日本", 6), ("日本", false));
    assert_eq!(truncate_utf8_bytes("😀😀", 7), ("😀", true));
    assert_eq!(truncate_utf8_bytes("😀", 3), ("", true));
}

#[test]
fn flag_is_set_exactly_at_the_limit() {
    let at = BoundedText::new("字".repeat(200), 200);
    assert_eq!((char_count(&at.text), at.truncated), (200, false));
    let over = BoundedText::new("字".repeat(201), 200);
    assert_eq!((char_count(&over.text), over.truncated), (200, true));
    let emoji = BoundedText::new("🎉".repeat(161), 160);
    assert_eq!((char_count(&emoji.text), emoji.truncated), (160, true));
}

#[test]
fn whitespace_folds_to_single_spaces() {
    assert_eq!(fold_whitespace("  a \n\t b\u{3000}c  "), "a b c");
    assert_eq!(fold_whitespace(" \n "), "");
}

#[test]
fn json_length_counts_escapes() {
    assert_eq!(json_byte_len("日"), 5, "quotes plus three bytes");
    assert_eq!(json_byte_len("\u{1}"), 8, "quotes plus \\u0001");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn truncation_is_a_prefix_within_bounds(s in "\\PC{0,40}", max in 0usize..50) {
        let (kept, cut) = truncate_chars(&s, max);
        prop_assert!(s.starts_with(kept));
        prop_assert!(char_count(kept) <= max);
        prop_assert_eq!(cut, char_count(&s) > max);
        if !cut { prop_assert_eq!(kept, s.as_str()); }

        let (kept, cut) = truncate_utf8_bytes(&s, max);
        prop_assert!(s.starts_with(kept));
        prop_assert!(kept.len() <= max);
        prop_assert_eq!(cut, s.len() > max);
        // Maximal: the next character would not have fit.
        if cut { prop_assert!(kept.len() + s[kept.len()..].chars().next().map_or(0, char::len_utf8) > max); }
    }
}
