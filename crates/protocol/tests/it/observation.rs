//! `Observation::bounded` applies every seed limit and flags each cut.

use protocol::limits::*;
use protocol::text::char_count;
use protocol::{
    ElementRef, FrameId, ImageMime, InteractiveElement, Observation, ObservationParts,
    ProducerCuts, Screenshot, TabId, TargetIdentity, Viewport,
};

fn element(i: u32, name: &str) -> InteractiveElement {
    InteractiveElement::new(
        ElementRef::from_index(i),
        "button",
        name,
        false,
        vec!["focused".into()],
        None,
    )
}

fn parts() -> ObservationParts {
    ObservationParts {
        frame_id: FrameId::new("frame_abc").expect("valid"),
        content_epoch: 7,
        captured_at: 1_700_000_000_000,
        target: TargetIdentity::web_tab(TabId::new("T1").expect("valid")),
        url: "https://shop.test/cart?session=REDACTED".into(),
        origin: "https://shop.test".into(),
        title: "Cart".into(),
        viewport: Viewport {
            width: 1280.0,
            height: 800.0,
            device_scale_factor: 2.0,
            page_zoom: 1.0,
            scroll_x: 0.0,
            scroll_y: 0.0,
        },
        screenshot: None,
        aria_snapshot: "main\n button \"Checkout\" [e1]".into(),
        interactive_elements: vec![element(1, "Checkout")],
        console_errors: vec!["TypeError: x is undefined".into()],
        cut: ProducerCuts::default(),
    }
}

#[test]
fn within_limits_nothing_is_flagged() {
    let obs = Observation::bounded(parts());
    assert!(!obs.aria_truncated() && !obs.elements_truncated() && !obs.console_truncated());
    assert!(obs.untrusted_content());
    insta::assert_json_snapshot!("observation_small", obs);
}

#[test]
fn over_limits_are_cut_and_flagged() {
    let mut p = parts();
    p.aria_snapshot = "木".repeat(ARIA_SNAPSHOT_MAX_CHARS + 1);
    p.interactive_elements = (0..=INTERACTIVE_ELEMENTS_MAX as u32)
        .map(|i| element(i, "ok"))
        .collect();
    p.console_errors = vec!["😀".repeat(CONSOLE_ERROR_MAX_CHARS + 1)];
    let obs = Observation::bounded(p);
    assert_eq!(char_count(obs.aria_snapshot()), ARIA_SNAPSHOT_MAX_CHARS);
    assert!(obs.aria_truncated());
    assert_eq!(obs.interactive_elements().len(), INTERACTIVE_ELEMENTS_MAX);
    assert!(obs.elements_truncated());
    assert_eq!(
        char_count(&obs.console_errors()[0]),
        CONSOLE_ERROR_MAX_CHARS
    );
    assert!(obs.console_truncated());

    let mut p = parts();
    p.console_errors = vec!["e".into(); CONSOLE_ERRORS_MAX + 1];
    let obs = Observation::bounded(p);
    assert_eq!(obs.console_errors().len(), CONSOLE_ERRORS_MAX);
    assert!(obs.console_truncated());

    let mut p = parts();
    p.aria_snapshot = "木".repeat(ARIA_SNAPSHOT_MAX_CHARS);
    p.interactive_elements = (0..INTERACTIVE_ELEMENTS_MAX as u32)
        .map(|i| element(i, "ok"))
        .collect();
    p.console_errors = vec!["e".repeat(CONSOLE_ERROR_MAX_CHARS); CONSOLE_ERRORS_MAX];
    let obs = Observation::bounded(p);
    assert!(
        !obs.aria_truncated() && !obs.elements_truncated() && !obs.console_truncated(),
        "exactly at the limits"
    );
}

#[test]
fn element_names_and_values_are_bounded() {
    let e = InteractiveElement::new(
        ElementRef::from_index(3),
        "textbox",
        "名".repeat(ELEMENT_NAME_MAX_CHARS + 1),
        true,
        vec!["s".repeat(100); 40],
        Some("v".repeat(ELEMENT_VALUE_MAX_CHARS + 5)),
    );
    assert_eq!(char_count(e.name()), ELEMENT_NAME_MAX_CHARS);
    assert!(e.name_truncated() && e.name_inferred() && e.value_truncated());
    assert_eq!(e.states().len(), ELEMENT_STATES_MAX);
    assert!(
        e.states()
            .iter()
            .all(|s| char_count(s) == ELEMENT_STATE_MAX_CHARS)
    );
    let exact = InteractiveElement::new(
        ElementRef::from_index(3),
        "textbox",
        "名".repeat(ELEMENT_NAME_MAX_CHARS),
        false,
        vec![],
        None,
    );
    assert!(!exact.name_truncated());
}

#[test]
fn screenshot_can_be_taken_out_keeping_its_size() {
    let mut p = parts();
    p.screenshot = Some(Screenshot {
        mime: ImageMime::Png,
        data: "iVBORw0KGgo=".into(),
        width: 2560,
        height: 1600,
    });
    let mut obs = Observation::bounded(p);
    let shot = obs.take_screenshot().expect("present");
    assert_eq!(shot.size(), obs.screenshot_size().expect("kept"));
    let json = serde_json::to_value(&obs).expect("serializes");
    assert!(json.get("screenshot").is_none());
    assert_eq!(json["screenshot_size"]["width"], 2560);
}
