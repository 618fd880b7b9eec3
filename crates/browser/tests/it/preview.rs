//! The turn-start preview: bounded, no hidden content, no refs.

use std::time::Duration;

use protocol::PreviewStatus;
use protocol::limits::{
    PREVIEW_LANDMARK_NAME_MAX_CHARS, PREVIEW_LANDMARKS_MAX, PREVIEW_PAYLOAD_MAX_BYTES,
    PREVIEW_TEXT_MAX_CHARS,
};
use protocol::text::char_count;

use crate::env;

#[tokio::test]
async fn preview_of_the_login_page() {
    let env = env().await;
    let tab = env.open("/login.html").await;
    let preview = tab.preview(Duration::from_secs(5)).await;
    assert_eq!(preview.preview_status(), PreviewStatus::Ready);
    assert_eq!(preview.title(), "Sign in — Fixture Bank");
    assert_eq!(preview.origin(), env.server.origin());
    let json = serde_json::to_string(&preview).unwrap();
    assert!(!json.contains("ref="), "no refs in a preview");
    assert!(!json.contains("hunter2"));
    insta::assert_snapshot!(
        serde_json::to_string_pretty(&serde_json::json!({
            "text": preview.visible_text_excerpt(),
            "landmarks": preview.aria_landmarks(),
            "interactive_count": preview.interactive_count(),
            "flags": [preview.text_truncated(), preview.landmarks_truncated(), preview.payload_truncated()],
        }))
        .unwrap()
    );
}

#[tokio::test]
async fn preview_leaves_out_hidden_content() {
    let env = env().await;
    let tab = env.open("/hidden.html").await;
    let preview = tab.preview(Duration::from_secs(5)).await;
    let text = preview.visible_text_excerpt();
    assert!(text.contains("Visible paragraph"), "{text}");
    for absent in [
        "secret display text",
        "aria hidden text",
        "Hidden by display",
        "hidden link",
    ] {
        assert!(!text.contains(absent), "{absent} in {text}");
    }
}

#[tokio::test]
async fn preview_bounds_hold_on_multibyte_text_and_many_landmarks() {
    let env = env().await;
    let mut html = String::from("<!doctype html><title>多字节 🎉</title><main>");
    for i in 0..30 {
        html.push_str(&format!(
            "<nav aria-label='导航 {i} {}'>x</nav>",
            "长".repeat(300)
        ));
    }
    for _ in 0..40 {
        html.push_str(&format!(
            "<p style='font-size:6px;margin:0'>{}</p>",
            "日本語のテキスト🎉🎉 and ascii words mixed ".repeat(12)
        ));
    }
    html.push_str("</main>");
    env.server.html("/multi", html);
    let tab = env.open("/multi").await;
    let preview = tab.preview(Duration::from_secs(5)).await;
    assert_eq!(preview.preview_status(), PreviewStatus::Ready);
    assert!(char_count(preview.visible_text_excerpt()) <= PREVIEW_TEXT_MAX_CHARS);
    assert!(preview.text_truncated());
    assert!(preview.aria_landmarks().len() <= PREVIEW_LANDMARKS_MAX);
    assert!(preview.landmarks_truncated());
    assert!(
        preview
            .aria_landmarks()
            .iter()
            .all(|l| char_count(l.name()) <= PREVIEW_LANDMARK_NAME_MAX_CHARS)
    );
    assert!(serde_json::to_vec(&preview).unwrap().len() <= PREVIEW_PAYLOAD_MAX_BYTES);
}

#[tokio::test]
async fn preview_is_unavailable_when_the_page_cannot_be_read_in_time() {
    let env = env().await;
    let tab = env.open("/login.html").await;
    // A page stuck in a long synchronous loop cannot answer before the local deadline.
    let _ = tab
        .session()
        .send_raw(
            "Runtime.evaluate",
            serde_json::json!({ "expression": "setTimeout(() => { const end = Date.now() + 1500; while (Date.now() < end) {} }, 0)" }),
            Duration::from_secs(5),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let preview = tab.preview(Duration::from_millis(300)).await;
    assert_eq!(preview.preview_status(), PreviewStatus::Unavailable);
}
