//! `Preview::ready` applies the field limits and the 8 KiB payload budget.

use proptest::prelude::*;
use protocol::limits::*;
use protocol::text::{char_count, json_byte_len};
use protocol::{FrameId, Landmark, Preview, PreviewParts, PreviewStatus};

fn parts(text: String, landmarks: Vec<Landmark>) -> PreviewParts {
    PreviewParts {
        preview_frame_id: FrameId::new("frame_p1").expect("valid"),
        content_epoch: 3,
        captured_at: 1_700_000_000_000,
        title: "Example Shop".into(),
        origin: "https://shop.test".into(),
        visible_text: text,
        aria_landmarks: landmarks,
        interactive_count: 17,
    }
}

#[test]
fn typical_preview_snapshot() {
    let p = Preview::ready(parts(
        "  Welcome   to\n the shop.\tFree shipping today. ".into(),
        vec![
            Landmark::new("banner", ""),
            Landmark::new("navigation", "Main"),
            Landmark::new("main", ""),
        ],
    ));
    assert_eq!(
        p.visible_text_excerpt(),
        "Welcome to the shop. Free shipping today."
    );
    assert!(!p.text_truncated() && !p.landmarks_truncated() && !p.payload_truncated());
    insta::assert_json_snapshot!("preview_typical", p);
    insta::assert_json_snapshot!(
        "preview_unavailable",
        Preview::unavailable("Example Shop", "https://shop.test", 5)
    );
}

#[test]
fn field_limits_are_flagged() {
    let p = Preview::ready(parts(
        "a".repeat(PREVIEW_TEXT_MAX_CHARS + 1),
        (0..=PREVIEW_LANDMARKS_MAX)
            .map(|_| Landmark::new("region", "n"))
            .collect(),
    ));
    assert_eq!(char_count(p.visible_text_excerpt()), PREVIEW_TEXT_MAX_CHARS);
    assert!(p.text_truncated());
    assert_eq!(p.aria_landmarks().len(), PREVIEW_LANDMARKS_MAX);
    assert!(p.landmarks_truncated());
    assert!(!p.payload_truncated(), "ASCII at the limits fits 8 KiB");
    let l = Landmark::new("region", "名".repeat(PREVIEW_LANDMARK_NAME_MAX_CHARS + 1));
    assert!(l.name_truncated());
    assert_eq!(char_count(l.name()), PREVIEW_LANDMARK_NAME_MAX_CHARS);
}

#[test]
fn payload_budget_shrinks_text_first() {
    // 2,000 CJK characters are 6,000 bytes; twelve 160-character CJK names add ~5,900.
    let landmarks: Vec<Landmark> = (0..12)
        .map(|_| Landmark::new("region", "名".repeat(160)))
        .collect();
    let p = Preview::ready(parts("字".repeat(2_000), landmarks));
    assert!(p.payload_truncated() && p.text_truncated());
    assert!(json_byte_len(&p) <= PREVIEW_PAYLOAD_MAX_BYTES);
    assert_eq!(
        p.aria_landmarks().len(),
        12,
        "landmarks survive while text can shrink"
    );
    assert!(!p.landmarks_truncated());
}

#[test]
fn payload_budget_drops_landmarks_after_text() {
    // Control characters escape to six bytes each: the text alone would be ~12 KB.
    let landmarks: Vec<Landmark> = (0..12)
        .map(|_| Landmark::new("region", "\u{1}".repeat(160)))
        .collect();
    let p = Preview::ready(parts("\u{1}".repeat(2_000), landmarks));
    assert!(p.payload_truncated() && p.landmarks_truncated());
    assert_eq!(p.visible_text_excerpt(), "");
    assert!(p.aria_landmarks().len() < 12);
    assert!(json_byte_len(&p) <= PREVIEW_PAYLOAD_MAX_BYTES);
    assert_eq!(p.preview_status(), PreviewStatus::Ready);
}

fn any_text(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just('a'),
            Just('字'),
            Just('😀'),
            Just('\u{1}'),
            Just('"'),
            Just(' '),
            Just('\n')
        ],
        0..max,
    )
    .prop_map(String::from_iter)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn every_preview_fits_the_budget(
        text in any_text(3_000),
        title in any_text(600),
        names in prop::collection::vec(any_text(200), 0..15),
    ) {
        let landmarks = names.into_iter().map(|n| Landmark::new("region", n)).collect();
        let mut p = parts(text, landmarks);
        p.title = title;
        let preview = Preview::ready(p);
        let len = json_byte_len(&preview);
        prop_assert!(len <= PREVIEW_PAYLOAD_MAX_BYTES, "{} bytes", len);
        prop_assert!(char_count(preview.visible_text_excerpt()) <= PREVIEW_TEXT_MAX_CHARS);
        prop_assert!(preview.aria_landmarks().len() <= PREVIEW_LANDMARKS_MAX);
    }
}
