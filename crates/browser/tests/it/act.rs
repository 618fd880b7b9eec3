//! Actions on real Chromium: each does exactly what it names, on the frame it names, or fails with
//! a reason and sends nothing.

use std::time::Duration;

use browser::{ActOptions, BrowserError, ObserveOptions, Tab};
use protocol::{ErrorCode, ExtendedAction, ImageMime, Observation, ReceiptState};
use serde_json::json;

use crate::{env, observe, observe_eval};

fn ref_of(observation: &Observation, name: &str) -> String {
    observation
        .interactive_elements()
        .iter()
        .find(|e| e.name() == name)
        .unwrap_or_else(|| {
            panic!(
                "no element named {name:?} in\n{}",
                observation.aria_snapshot()
            )
        })
        .element()
        .as_str()
        .to_owned()
}

/// A v1 action, converted as every transport converts it.
fn action(value: serde_json::Value) -> ExtendedAction {
    protocol::validate_action(&value)
        .expect("a valid action")
        .into()
}

fn click(frame: &Observation, name: &str) -> ExtendedAction {
    action(
        json!({"type": "click", "expected_frame_id": frame.frame_id().as_str(), "target": {"kind": "element", "ref": ref_of(frame, name)}, "intent": "test"}),
    )
}

fn type_into(frame: &Observation, name: &str, text: &str) -> ExtendedAction {
    action(
        json!({"type": "type", "expected_frame_id": frame.frame_id().as_str(), "target": {"kind": "element", "ref": ref_of(frame, name)}, "text": text, "intent": "test"}),
    )
}

/// The popup's announcement may trail the click that opened it by a moment.
async fn wait_for_popup(tab: &Tab) {
    for _ in 0..50 {
        if !tab.opened_targets().is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn title(tab: &Tab) -> String {
    observe_eval(tab, "document.title")
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn fill_a_form_submit_with_enter_and_see_the_success_message() {
    let env = env().await;
    let tab = env.open("/form.html").await;
    let o = observe(&tab).await;
    let outcome = tab
        .act(
            &type_into(&o, "Name", "Ada Lovelace"),
            &ActOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.receipt.state(), ReceiptState::Confirmed);
    let o = outcome.observation.unwrap();
    assert!(
        o.aria_snapshot()
            .contains("textbox \"Name\" [e1 focused]: \"Ada Lovelace\""),
        "{}",
        o.aria_snapshot()
    );
    let outcome = tab
        .act(&click(&o, "I accept the terms"), &ActOptions::default())
        .await
        .unwrap();
    assert_eq!(
        outcome.receipt.state(),
        ReceiptState::Confirmed,
        "the checkbox toggled"
    );
    let o = outcome.observation.unwrap();
    let press = action(
        json!({"type": "press", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": ref_of(&o, "Name")}, "key": "Enter", "intent": "submit"}),
    );
    let outcome = tab.act(&press, &ActOptions::default()).await.unwrap();
    let o = outcome.observation.unwrap();
    assert!(
        o.aria_snapshot().contains("Welcome, Ada Lovelace!"),
        "{}",
        o.aria_snapshot()
    );
    assert_eq!(env.server.writes().len(), 1, "exactly one submission");
}

#[tokio::test]
async fn a_typed_secret_never_comes_back_even_when_the_page_echoes_it() {
    let env = env().await;
    let tab = env.open("/form.html").await;
    let o = observe(&tab).await;
    let outcome = tab
        .act(
            &type_into(&o, "Password", "correct-horse-battery"),
            &ActOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.receipt.state(), ReceiptState::Confirmed);
    let o = outcome.observation.unwrap();
    let json = serde_json::to_string(&o).unwrap();
    assert!(!json.contains("correct-horse-battery"), "{json}");
    assert!(
        o.aria_snapshot().contains("Echo: [redacted]"),
        "{}",
        o.aria_snapshot()
    );
    // The turn-start preview reads the page's visible text too: the echo is redacted there as well.
    let preview = serde_json::to_string(&tab.preview(Duration::from_secs(5)).await).unwrap();
    assert!(
        preview.contains("\"preview_status\":\"ready\""),
        "{preview}"
    );
    assert!(!preview.contains("correct-horse-battery"), "{preview}");
    assert!(preview.contains("Echo: [redacted]"), "{preview}");
}

#[tokio::test]
async fn a_covered_button_is_refused_naming_the_overlay_and_nothing_is_sent() {
    let env = env().await;
    let tab = env.open("/widgets.html").await;
    let o = observe(&tab).await;
    // The overlay never goes away, so each refusal takes the whole deadline: long enough that a
    // loaded machine (the whole suite at once) still reports the reason, not a timeout.
    let options = ActOptions {
        deadline: Duration::from_secs(6),
        ..Default::default()
    };
    let err = tab.act(&click(&o, "Buy now"), &options).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidAction, "{err}");
    assert!(
        err.to_string()
            .contains("covered by div#consent-banner \"Accept cookies\""),
        "{err}"
    );
    let err = tab
        .act(&click(&o, "Unavailable"), &options)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("is disabled"), "{err}");
    assert!(
        env.server.writes().is_empty(),
        "a refused action sends nothing: {:?}",
        env.server.writes()
    );
}

#[tokio::test]
async fn elements_below_the_fold_are_scrolled_to_and_moving_ones_waited_for() {
    let env = env().await;
    let tab = env.open("/widgets.html").await;
    let o = observe(&tab).await;
    let outcome = tab
        .act(&click(&o, "Moving target"), &ActOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome.receipt.state(), ReceiptState::Dispatched);
    assert_eq!(title(&tab).await, "moved-clicked");
    let o = outcome.observation.unwrap();
    tab.act(&click(&o, "Far below"), &ActOptions::default())
        .await
        .unwrap();
    assert!(observe_eval(&tab, "window.scrollY").await.as_f64().unwrap() > 1000.0);
}

#[tokio::test]
async fn contenteditable_dates_times_and_key_listening_fields() {
    let env = env().await;
    let tab = env.open("/widgets.html").await;
    let mut o = observe(&tab).await;
    for (name, text) in [
        ("Editor", "new text"),
        ("Date", "2026-11-29"),
        ("Time", "13:45"),
        ("Keyed", "typed by keys"),
    ] {
        let outcome = tab
            .act(&type_into(&o, name, text), &ActOptions::default())
            .await
            .unwrap();
        assert_eq!(
            outcome.receipt.state(),
            ReceiptState::Confirmed,
            "{name}: {:?}",
            outcome.receipt
        );
        o = outcome.observation.unwrap();
    }
    assert_eq!(
        observe_eval(&tab, "document.getElementById('date').value").await,
        "2026-11-29"
    );
    assert_eq!(
        observe_eval(&tab, "document.getElementById('keyed').value").await,
        "typed by keys"
    );
    // Paste only, on the field that wants keys: the value does not take, and the receipt says so.
    observe_eval(&tab, "sawKey = false").await;
    let o = observe(&tab).await;
    let paste = protocol::validate_extended_action(&json!({
        "type": "type", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": ref_of(&o, "Keyed")},
        "text": "pasted", "mode": "paste", "intent": "test"
    }))
    .unwrap();
    let outcome = tab.act(&paste, &ActOptions::default()).await.unwrap();
    assert_eq!(outcome.receipt.state(), ReceiptState::Failed);
    assert!(outcome.receipt.effect_uncertain());
}

#[tokio::test]
async fn native_select_by_value_or_label_and_a_custom_listbox_is_explained() {
    let env = env().await;
    let tab = env.open("/widgets.html").await;
    let o = observe(&tab).await;
    let select = |o: &Observation, name: &str, value: &str| {
        action(
            json!({"type": "select", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": ref_of(o, name)}, "value": value, "intent": "choose"}),
        )
    };
    let outcome = tab
        .act(&select(&o, "Country", "Japan"), &ActOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome.receipt.state(), ReceiptState::Confirmed);
    let o = outcome.observation.unwrap();
    assert_eq!(
        observe_eval(&tab, "document.getElementById('country').value").await,
        "jp"
    );
    let outcome = tab
        .act(&select(&o, "Country", "de"), &ActOptions::default())
        .await
        .unwrap();
    let o = outcome.observation.unwrap();
    assert_eq!(
        observe_eval(&tab, "document.getElementById('country').value").await,
        "de"
    );
    let err = tab
        .act(&select(&o, "Country", "Atlantis"), &ActOptions::default())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("\"France\", \"Germany\", \"Japan\""),
        "{err}"
    );
    let err = tab
        .act(&select(&o, "Fancy list", "Two"), &ActOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not a native <select>"), "{err}");
}

#[tokio::test]
async fn press_chords_and_enter_in_a_search_field() {
    let env = env().await;
    let tab = env.open("/widgets.html").await;
    let o = observe(&tab).await;
    let o = tab
        .act(&type_into(&o, "Search", "glovebox"), &ActOptions::default())
        .await
        .unwrap()
        .observation
        .unwrap();
    let press = |o: &Observation, key: &str| {
        action(
            json!({"type": "press", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": ref_of(o, "Search")}, "key": key, "intent": "key"}),
        )
    };
    let o = tab
        .act(&press(&o, "Enter"), &ActOptions::default())
        .await
        .unwrap()
        .observation
        .unwrap();
    assert_eq!(title(&tab).await, "searched:glovebox");
    // Control+A then Backspace empties the field.
    let o = tab
        .act(&press(&o, "Control+A"), &ActOptions::default())
        .await
        .unwrap()
        .observation
        .unwrap();
    tab.act(&press(&o, "Backspace"), &ActOptions::default())
        .await
        .unwrap();
    assert_eq!(
        observe_eval(&tab, "document.getElementById('search').value").await,
        ""
    );
    let err = tab
        .act(
            &press(&observe(&tab).await, "Hyper+Q"),
            &ActOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("unknown key"), "{err}");
}

#[tokio::test]
async fn stale_frames_and_refs_are_refused_and_never_guessed() {
    let env = env().await;
    let tab = env.open("/widgets.html").await;
    let first = observe(&tab).await;
    // The element the ref names is replaced: same place, same text, a different node.
    let o = tab
        .act(&click(&first, "Replace me"), &ActOptions::default())
        .await
        .unwrap()
        .observation
        .unwrap();
    let err = tab
        .act(&click(&first, "Alert me"), &ActOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.code(),
        ErrorCode::StaleObservation,
        "an older frame is refused: {err}"
    );
    assert!(err.to_string().contains("observe again"), "{err}");
    let replaced = o
        .interactive_elements()
        .iter()
        .find(|e| e.name() == "Fresh")
        .unwrap()
        .element()
        .clone();
    let old_ref = ref_of(&first, "Replace me");
    let stale = action(
        json!({"type": "click", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": "e999"}, "intent": "x"}),
    );
    assert_eq!(
        tab.act(&stale, &ActOptions::default())
            .await
            .unwrap_err()
            .code(),
        ErrorCode::StaleObservation
    );
    assert_ne!(replaced.as_str(), "", "{old_ref}");
    // After navigation every ref of the old frame is stale, even with a matching frame id.
    let before = observe(&tab).await;
    tab.goto(&env.server.url("/login.html"), Duration::from_secs(10))
        .await
        .unwrap();
    let err = tab
        .act(&click(&before, "Alert me"), &ActOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::StaleObservation);
    assert!(err.to_string().contains("navigated"), "{err}");
}

#[tokio::test]
async fn a_node_replaced_under_the_same_frame_is_stale_not_retargeted() {
    let env = env().await;
    let tab = env.open("/widgets.html").await;
    let o = observe(&tab).await;
    // Replace the button with a look-alike without changing the frame id (text-only world change
    // would not move it; here an element swap does, so re-observe is the only valid path).
    observe_eval(&tab, "const old = document.getElementById('alert'); const twin = old.cloneNode(true); twin.onclick = () => fetch('/twin', {method: 'POST'}); old.replaceWith(twin)").await;
    let err = tab
        .act(&click(&o, "Alert me"), &ActOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::StaleObservation, "{err}");
    assert!(env.server.writes().is_empty());
}

#[tokio::test]
async fn a_canvas_is_clicked_by_point_at_scale_two_with_zoom_and_scroll_and_old_frames_are_refused()
{
    let env = env().await;
    let tab = env.open("/canvas.html").await;
    tab.session()
        .call(cdp::domains::emulation::SetDeviceMetricsOverride {
            width: 800,
            height: 600,
            device_scale_factor: 2.0,
            mobile: false,
        })
        .await
        .unwrap();
    observe_eval(&tab, "window.scrollTo(0, 300)").await;
    let o = tab
        .observe(&ObserveOptions {
            screenshot: Some(ImageMime::Png),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        o.screenshot_size().map(|s| (s.width, s.height)),
        Some((1600, 1200))
    );
    // The red square is at page (100..150, 400..450): in the viewport at (125, 125) CSS pixels.
    let point = action(
        json!({"type": "click", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "point", "x": 125, "y": 125}, "intent": "square"}),
    );
    tab.act(&point, &ActOptions::default()).await.unwrap();
    assert_eq!(title(&tab).await, "clicked 125,125 page 125,425");
    // After a scroll, the old frame's point is refused.
    observe_eval(&tab, "window.scrollTo(0, 100)").await;
    let err = tab.act(&point, &ActOptions::default()).await.unwrap_err();
    assert_eq!(err.code(), ErrorCode::StaleObservation, "{err}");
    // Outside the viewport, and without a screenshot, a point is refused.
    let o = observe(&tab).await;
    let no_shot = action(
        json!({"type": "click", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "point", "x": 10, "y": 10}, "intent": "x"}),
    );
    assert!(
        tab.act(&no_shot, &ActOptions::default())
            .await
            .unwrap_err()
            .to_string()
            .contains("screenshot")
    );
    let o = tab
        .observe(&ObserveOptions {
            screenshot: Some(ImageMime::Png),
            ..Default::default()
        })
        .await
        .unwrap();
    let outside = action(
        json!({"type": "click", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "point", "x": 900, "y": 10}, "intent": "x"}),
    );
    assert_eq!(
        tab.act(&outside, &ActOptions::default())
            .await
            .unwrap_err()
            .code(),
        ErrorCode::InvalidAction
    );
}

#[tokio::test]
async fn popups_are_reported_and_dialogs_block_until_handled() {
    let env = env().await;
    let tab = env.open("/widgets.html").await;
    let o = observe(&tab).await;
    let outcome = tab
        .act(&click(&o, "Open help"), &ActOptions::default())
        .await
        .unwrap();
    wait_for_popup(&tab).await;
    assert_eq!(tab.opened_targets().len(), 1, "{:?}", outcome.opened);
    let o = outcome.observation.unwrap();
    let outcome = tab
        .act(&click(&o, "Alert me"), &ActOptions::default())
        .await
        .unwrap();
    let dialog = outcome.dialog.expect("the alert is reported");
    assert_eq!(
        (dialog.kind.as_str(), dialog.message.as_str()),
        ("alert", "Saved!")
    );
    assert!(outcome.observation.is_none());
    let err = tab
        .act(&click(&o, "Confirm me"), &ActOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("alert dialog is open"), "{err}");
    tab.handle_dialog(true, None).await.unwrap();
    let o = observe(&tab).await;
    let outcome = tab
        .act(&click(&o, "Confirm me"), &ActOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome.dialog.unwrap().kind, "confirm");
    tab.handle_dialog(false, None).await.unwrap();
    assert_eq!(title(&tab).await, "declined");
}

/// A tab whose popup opened in front of it in its window is a background tab, and Chromium
/// paints no frames for one: its screenshot waited for a frame until the call's deadline (the
/// fuzzer's one stall, issue 35; the first capture or two still had a frame to give). Each one
/// is answered, and shows the page.
#[tokio::test]
async fn a_tab_behind_its_popup_is_still_screenshotted() {
    let env = env().await;
    let tab = env.open("/widgets.html").await;
    let o = observe(&tab).await;
    tab.act(&click(&o, "Open help"), &ActOptions::default())
        .await
        .unwrap();
    wait_for_popup(&tab).await;
    assert_eq!(tab.opened_targets().len(), 1);
    for _ in 0..4 {
        let shot = tab
            .observe(&ObserveOptions {
                screenshot: Some(ImageMime::Png),
                ..Default::default()
            })
            .await
            .expect("the screenshot of a tab behind its popup is answered");
        let image = shot.screenshot().expect("a screenshot");
        assert!(image.width > 0 && image.height > 0);
        assert!(shot.aria_snapshot().contains("Open help"));
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
}

/// A click's events go out together, so a dialog its press (`mousedown`) opens is reported by
/// the click, which ends at once; its release waited behind the dialog and reaches the page
/// once the dialog is answered (the one way it differs from a hand; ARCHITECTURE.md).
#[tokio::test]
async fn a_dialog_the_press_opens_is_reported_by_the_click() {
    let env = env().await;
    let tab = env.open("/press-dialog.html").await;
    let o = observe(&tab).await;
    let outcome = tab
        .act(&click(&o, "Hold"), &ActOptions::default())
        .await
        .unwrap();
    let dialog = outcome.dialog.expect("the alert is reported");
    assert_eq!(
        (dialog.kind.as_str(), dialog.message.as_str()),
        ("alert", "pressed")
    );
    assert!(outcome.observation.is_none());
    tab.handle_dialog(true, None).await.unwrap();
    let mut now = String::new();
    for _ in 0..50 {
        now = title(&tab).await;
        if now == "released" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(now, "released");
}

#[tokio::test]
async fn navigate_scroll_hover_and_wait() {
    let env = env().await;
    let tab = env.open("/scroll.html").await;
    let o = observe(&tab).await;
    let scroll = action(
        json!({"type": "scroll", "expected_frame_id": o.frame_id().as_str(), "delta_y": 400, "intent": "down"}),
    );
    let outcome = tab.act(&scroll, &ActOptions::default()).await.unwrap();
    assert_eq!(outcome.receipt.state(), ReceiptState::Confirmed);
    let o = outcome.observation.unwrap();
    assert!(o.viewport().scroll_y > 0.0);
    let wait = action(
        json!({"type": "wait", "expected_frame_id": o.frame_id().as_str(), "duration_ms": 50, "intent": "settle"}),
    );
    let o = tab
        .act(&wait, &ActOptions::default())
        .await
        .unwrap()
        .observation
        .unwrap();
    let hover = action(
        json!({"type": "hover", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": ref_of(&o, "Far button")}, "intent": "look"}),
    );
    let o = tab
        .act(&hover, &ActOptions::default())
        .await
        .unwrap()
        .observation
        .unwrap();
    let navigate = action(
        json!({"type": "navigate", "expected_frame_id": o.frame_id().as_str(), "url": env.server.url("/login.html"), "intent": "go"}),
    );
    let outcome = tab.act(&navigate, &ActOptions::default()).await.unwrap();
    assert_eq!(outcome.receipt.state(), ReceiptState::Confirmed);
    assert_eq!(
        outcome.observation.unwrap().title(),
        "Sign in — Fixture Bank"
    );
}

#[tokio::test]
async fn inputs_inside_same_and_cross_site_frames_and_shadow_dom() {
    let env = env().await;
    let tab = env.open("/iframes.html").await;
    let mut o = observe(&tab).await;
    for _ in 0..50 {
        if o.interactive_elements()
            .iter()
            .any(|e| e.name() == "Coupon")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        o = observe(&tab).await;
    }
    let o = tab
        .act(&click(&o, "Inner button"), &ActOptions::default())
        .await
        .unwrap()
        .observation
        .unwrap();
    let outcome = tab
        .act(&type_into(&o, "Coupon", "SAVE10"), &ActOptions::default())
        .await
        .unwrap();
    assert_eq!(
        outcome.receipt.state(),
        ReceiptState::Confirmed,
        "{:?}",
        outcome.receipt
    );
    assert!(
        outcome
            .observation
            .unwrap()
            .aria_snapshot()
            .contains("\"SAVE10\"")
    );

    let tab = env.open("/shadow.html").await;
    let o = observe(&tab).await;
    let outcome = tab
        .act(
            &type_into(&o, "Query", "closed roots"),
            &ActOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.receipt.state(), ReceiptState::Confirmed);
    let o = outcome.observation.unwrap();
    tab.act(&click(&o, "Go"), &ActOptions::default())
        .await
        .unwrap();
}

#[tokio::test]
async fn a_lost_tab_is_target_lost() {
    let env = env().await;
    let tab = env.open("/form.html").await;
    let o = observe(&tab).await;
    tab.session().close_target().await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let err = tab
        .act(&click(&o, "Create account"), &ActOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::TargetLost, "{err:?}");
    let _ = BrowserError::Stale {
        reason: String::new(),
    };
}

#[tokio::test]
async fn a_tree_items_expander_opens_it_without_activating_the_item() {
    let env = env().await;
    let tab = env.open("/tree-expander.html").await;
    let o = observe(&tab).await;
    let outcome = tab
        .act(&click(&o, "Expand src"), &ActOptions::default())
        .await
        .unwrap();
    let o = outcome.observation.unwrap();
    assert!(
        o.aria_snapshot().contains("src\" [e1 expanded]"),
        "{}",
        o.aria_snapshot()
    );
    assert!(o.aria_snapshot().contains("main.rs"), "the children show");
    assert!(
        o.aria_snapshot().contains("paragraph: none"),
        "the item was not activated: {}",
        o.aria_snapshot()
    );
}

/// On a page large enough for the DOM model, refs act on the exact node, and a node whose
/// identity changed since the observation is refused as stale (its DOM fingerprint differs).
#[tokio::test]
async fn refs_of_the_dom_model_act_and_go_stale_like_the_others() {
    let env = env().await;
    let mut html = String::from("<!doctype html><title>Big</title><h1>Big page</h1><ul>");
    for i in 0..800 {
        html.push_str(&format!("<li><a href='#i{i}'>Item {i}</a> <button onclick=\"document.title='bought {i}'\">Buy {i}</button></li>"));
    }
    html.push_str("</ul>");
    env.server.html("/big-act", html);
    let tab = env.open("/big-act").await;
    let o = observe(&tab).await;
    assert!(
        tab.latest_observation()
            .unwrap()
            .refs
            .values()
            .all(|b| b.fingerprint.is_some()),
        "2,400 elements use the DOM model"
    );
    let outcome = tab
        .act(&click(&o, "Buy 2"), &ActOptions::default())
        .await
        .unwrap();
    assert!(
        matches!(
            outcome.receipt.state(),
            ReceiptState::Confirmed | ReceiptState::Dispatched
        ),
        "{:?}",
        outcome.receipt
    );
    assert_eq!(title(&tab).await, "bought 2");
    let o = outcome.observation.unwrap();
    // Same node, same frame (a text change is not structural), but it now says something else.
    observe_eval(
        &tab,
        "document.querySelectorAll('button')[5].firstChild.data = 'Sell 5'",
    )
    .await;
    let err = tab
        .act(&click(&o, "Buy 5"), &ActOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::StaleObservation, "{err}");
    assert_eq!(title(&tab).await, "bought 2", "nothing was clicked");
}

/// A same-document navigation (`href="#"`, a fragment, `pushState`) never fires a load: settling
/// recognises it and ends there, after the page's `hashchange` handler ran; a navigation to a
/// 204 stops loading without a new document; a real one still waits for its load.
#[tokio::test]
async fn same_document_navigations_settle_without_waiting_for_a_load() {
    use browser::SettleEnd;
    let env = env().await;
    env.server.route(
        "/no-content",
        test_support::Route::Status {
            status: 204,
            body: String::new(),
        },
    );
    let tab = env.open("/fragments.html").await;
    let mut o = observe(&tab).await;
    for (name, expected) in [
        ("Top", SettleEnd::SameDocument),
        ("Details", SettleEnd::SameDocument),
        ("Push", SettleEnd::SameDocument),
    ] {
        let outcome = tab
            .act(
                &click(&o, name),
                &ActOptions {
                    deadline: Duration::from_secs(60),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(
            outcome.timing.settled_by, expected,
            "{name}: {:?}",
            outcome.timing
        );
        o = outcome.observation.unwrap();
        if name == "Details" {
            assert!(
                o.aria_snapshot().contains("Hash #details"),
                "the hashchange handler ran before the observation:\n{}",
                o.aria_snapshot()
            );
        }
    }
    assert!(o.url().ends_with("/pushed"), "{}", o.url());
    let outcome = tab
        .act(
            &click(&o, "Nothing"),
            &ActOptions {
                deadline: Duration::from_secs(60),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_ne!(
        outcome.timing.settled_by,
        SettleEnd::Deadline,
        "a 204 stops loading: {:?}",
        outcome.timing
    );
    let o = outcome.observation.unwrap();
    let outcome = tab
        .act(
            &click(&o, "Form"),
            &ActOptions {
                deadline: Duration::from_secs(60),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        outcome.timing.settled_by,
        SettleEnd::Loaded,
        "{:?}",
        outcome.timing
    );
    assert!(outcome.observation.unwrap().url().ends_with("/form.html"));
}

/// A link that goes nowhere shows no target, a fragment shows as itself, and a real link keeps
/// its destination (issue 16: `href="#"` showed the page's own path).
#[tokio::test]
async fn links_show_only_targets_they_have() {
    let env = env().await;
    env.server.html(
        "/targets.html",
        r##"<!doctype html><a href="#">Top</a> <a href="javascript:void(0)">Run</a> <a href="#details">Details</a> <a href="#access_token=abc">Callback</a> <a href="/form.html">Form</a>"##,
    );
    let tab = env.open("/targets.html").await;
    let text = observe(&tab).await.aria_snapshot().to_owned();
    let line = |name: &str| {
        text.lines()
            .find(|l| l.contains(&format!("\"{name}\"")))
            .unwrap_or_else(|| panic!("{name} in {text}"))
            .to_owned()
    };
    assert!(
        !line("Top").contains("->") && !line("Run").contains("->"),
        "{text}"
    );
    assert!(line("Details").ends_with("-> #details"), "{text}");
    assert!(
        !line("Callback").contains("->") && !text.contains("abc"),
        "{text}"
    );
    assert!(line("Form").ends_with("-> /form.html"), "{text}");
}

/// A busy page (a 10 Hz clock, an animation, a poll every 100 ms with a cache-busting query)
/// never goes quiet; an action waits only for the requests it started, never for the page's own
/// polling, and the one its handler starts is still awaited.
#[tokio::test]
async fn settling_waits_for_the_actions_requests_not_the_pages_polling() {
    let env = env().await;
    env.server.html("/poll", "ok");
    env.server.html("/save", "saved");
    env.server.html(
        "/busy.html",
        r#"<!doctype html><p>Time <span id=t>0</span></p><p id=out>idle</p>
<button onclick="document.getElementById('out').textContent = 'clicked'">Mark</button>
<button onclick="fetch('/save', {method: 'POST'}).then(r => r.text()).then(t => document.getElementById('out').textContent = t)">Save</button>
<script>let n = 0; setInterval(() => { document.getElementById('t').textContent = ++n; fetch('/poll?t=' + n).catch(() => 0); }, 100);</script>"#,
    );
    let tab = env.open("/busy.html").await;
    tokio::time::sleep(Duration::from_millis(350)).await;
    let mut o = observe(&tab).await;
    for _ in 0..5 {
        let outcome = tab
            .act(&click(&o, "Mark"), &ActOptions::default())
            .await
            .unwrap();
        assert_eq!(
            outcome.timing.awaited_requests, 0,
            "the page's polling is not the action's: {:?}",
            outcome.timing
        );
        o = outcome.observation.unwrap();
    }
    let outcome = tab
        .act(&click(&o, "Save"), &ActOptions::default())
        .await
        .unwrap();
    assert!(
        outcome.timing.awaited_requests >= 1,
        "the click's own request is awaited: {:?}",
        outcome.timing
    );
    assert!(
        outcome
            .observation
            .unwrap()
            .aria_snapshot()
            .contains("saved"),
        "its effect is in the fresh observation"
    );
}

/// The network boundary's window ends however the action ends: after a guarded click that fails
/// in dispatch (a disabled button), the page's own requests elsewhere go through once the tail
/// has passed.
#[tokio::test]
async fn a_failed_guarded_action_leaves_no_boundary_armed() {
    let env = env().await;
    let other = test_support::FixtureServer::start().await.unwrap();
    other.html("/ping", "pong");
    env.server.html(
        "/disabled.html",
        "<!doctype html><button disabled>Locked</button><button>Open</button>",
    );
    let tab = env.open("/disabled.html").await;
    let o = observe(&tab).await;
    let guarded = ActOptions {
        allowed_origins: Some(vec![policy::Origin::parse(&env.server.origin()).unwrap()]),
        deadline: Duration::from_secs(2),
        ..Default::default()
    };
    assert!(
        tab.act(&click(&o, "Locked"), &guarded).await.is_err(),
        "a disabled button is not actionable"
    );
    tokio::time::sleep(browser::GUARD_TAIL + Duration::from_millis(500)).await;
    observe_eval(
        &tab,
        &format!(
            "fetch('{}/ping', {{method: 'POST'}}).catch(() => 0)",
            other.origin()
        ),
    )
    .await;
    for _ in 0..50 {
        if !other.requests().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        other.requests().len(),
        1,
        "the page's own request after the window went through"
    );
}

/// A page whose rows come and go: "Rotate" removes the first row and adds one at the end,
/// "Mark" changes the second row's text in place.
const ROWS: &str = r#"<!doctype html><title>Rows</title><main><h1>Queue</h1><ul id=rows></ul>
<button id=rotate>Rotate</button> <button id=mark>Mark</button> <a href="/form.html">Elsewhere</a>
<p>Some text that stays the same, long enough that a diff of a few lines is smaller than the whole page.</p>
<p>More text that stays the same, so the snapshot is not only the rows that change under the diff.</p></main>
<script>
let next = 0;
const add = () => { const li = document.createElement('li'); li.innerHTML = '<button>Open ' + next + '</button> item ' + next; next++; document.getElementById('rows').append(li); };
for (let i = 0; i < 8; i++) add();
document.getElementById('rotate').onclick = () => { document.querySelector('#rows li').remove(); add(); };
document.getElementById('mark').onclick = () => { document.querySelectorAll('#rows li button')[1].textContent += ' (marked)'; };
</script>"#;

/// The refs of every element, by name.
fn refs(o: &Observation) -> std::collections::HashMap<String, String> {
    o.interactive_elements()
        .iter()
        .map(|e| (e.name().to_owned(), e.element().as_str().to_owned()))
        .collect()
}

/// Refs are stable (issue 16): a node keeps its ref across observations and actions while it
/// exists; a new node takes a number no node of the document had; the fresh observation after an
/// action carries its changes against the observation the action named — rows added and removed
/// with their refs — and the whole snapshot when asked for, or when the document changed.
#[tokio::test]
async fn stable_refs_and_diffs_after_actions() {
    let env = env().await;
    env.server.html("/rows", ROWS);
    let tab = env.open("/rows").await;
    let first = observe(&tab).await;
    assert!(
        first.snapshot_diff().is_none(),
        "an observation on its own is whole"
    );
    let before = refs(&first);

    let rotated = tab
        .act(&click(&first, "Rotate"), &ActOptions::default())
        .await
        .unwrap()
        .observation
        .unwrap();
    let after = refs(&rotated);
    for (name, r) in &before {
        if name != "Open 0" {
            assert_eq!(after.get(name), Some(r), "{name} keeps its ref");
        }
    }
    assert!(!after.contains_key("Open 0"));
    let new_ref = &after["Open 8"];
    assert!(
        !before.values().any(|r| r == new_ref),
        "a new node never takes an old ref: {new_ref}"
    );
    assert!(
        tab.latest_observation()
            .unwrap()
            .binding(&protocol::ElementRef::new(before["Open 0"].clone()).unwrap())
            .is_none(),
        "the gone row's ref is not bound"
    );

    let diff = rotated.snapshot_diff().expect("a diff after the click");
    assert_eq!(diff.base_frame_id(), first.frame_id());
    let lines: Vec<&str> = diff.text().lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("- ") && l.contains(&format!("[{}]", before["Open 0"]))),
        "the gone row:\n{}",
        diff.text()
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("+ ") && l.contains(&format!("[{new_ref}]"))),
        "the new row:\n{}",
        diff.text()
    );
    assert!(
        lines.iter().any(|l| l.starts_with("@@ after: ")),
        "{}",
        diff.text()
    );
    // The clicked button took focus: a changed line.
    assert!(diff.added() >= 1 && diff.removed() >= 1, "{}", diff.text());
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("~ ") && l.contains("\"Rotate\"") && l.contains("focused")),
        "{}",
        diff.text()
    );
    assert!(diff.text().len() < rotated.aria_snapshot().len());
    let text = surface::observation_text_or_changes(&rotated);
    assert!(
        text.contains("changes since ") && !text.contains("Some text that stays"),
        "{text}"
    );
    assert!(
        surface::observation_text(&rotated).contains("Some text that stays"),
        "the whole text is still there on request"
    );

    // A row whose text changes in place keeps its ref: one changed line.
    let marked = tab
        .act(&click(&rotated, "Mark"), &ActOptions::default())
        .await
        .unwrap()
        .observation
        .unwrap();
    let diff = marked.snapshot_diff().expect("a diff");
    // The marked row, and focus moving from Rotate to Mark: changed lines, nothing added or removed.
    assert_eq!(
        (diff.added(), diff.removed(), diff.changed()),
        (0, 0, 3),
        "{}",
        diff.text()
    );
    assert!(
        diff.text()
            .lines()
            .any(|l| l.starts_with("~ ") && l.contains("(marked)")),
        "{}",
        diff.text()
    );
    assert_eq!(
        refs(&marked).get("Open 2 (marked)"),
        after.get("Open 2"),
        "same node, same ref"
    );

    // The whole snapshot on request.
    let whole = tab
        .act(
            &click(&marked, "Rotate"),
            &ActOptions {
                full_snapshot: true,
                ..ActOptions::default()
            },
        )
        .await
        .unwrap()
        .observation
        .unwrap();
    assert!(whole.snapshot_diff().is_none());
    // No base for another document: a navigation's result is whole.
    let moved = tab
        .act(&click(&whole, "Elsewhere"), &ActOptions::default())
        .await
        .unwrap()
        .observation
        .unwrap();
    assert!(moved.url().ends_with("/form.html"), "{}", moved.url());
    assert!(
        moved.snapshot_diff().is_none(),
        "another document has no base"
    );
    assert!(
        surface::observation_text_or_changes(&moved).contains(moved.aria_snapshot().trim_end())
    );
    assert_eq!(
        moved
            .interactive_elements()
            .first()
            .map(|e| e.element().as_str()),
        Some("e1"),
        "a new document numbers from e1"
    );
}

/// Issue 35: `press` on an element that cannot take focus (a clickable `div`) answered
/// `internal` "DOM.focus failed"; it is the action that is wrong for the element, said so.
#[tokio::test]
async fn press_on_an_element_that_cannot_take_focus_is_an_invalid_action() {
    let env = env().await;
    env.server.html(
        "/unfocusable.html",
        r#"<!doctype html><title>Tiles</title><div id=t style="cursor:pointer" onclick="this.textContent='hit'">Open tile</div>"#,
    );
    let tab = env.open("/unfocusable.html").await;
    let o = observe(&tab).await;
    let press = action(
        json!({"type": "press", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": ref_of(&o, "Open tile")}, "key": "Enter", "intent": "open"}),
    );
    let err = tab.act(&press, &ActOptions::default()).await.unwrap_err();
    assert_eq!(err.code(), protocol::ErrorCode::InvalidAction, "{err}");
    assert!(err.to_string().contains("cannot take focus"), "{err}");
}

/// Issue 36: a click on a read-only date field that opens its picker came back `failed` ("the
/// control's checked state did not change"). The receipt of a click over the roles a page may
/// have: confirmed where a promised state changed, failed where it did not, dispatched where
/// nothing was promised.
#[tokio::test]
async fn a_clicks_receipt_follows_what_its_control_promised() {
    let env = env().await;
    env.server.html(
        "/roles.html",
        r#"<!doctype html><title>Roles</title>
<label><input type=checkbox> Native box</label>
<label><input type=radio name=r> Native radio</label>
<div role=checkbox aria-checked=false tabindex=0 onclick="this.setAttribute('aria-checked', this.getAttribute('aria-checked') !== 'true')">Aria box</div>
<div role=switch aria-checked=false tabindex=0 onclick="this.setAttribute('aria-checked', this.getAttribute('aria-checked') !== 'true')">Aria switch</div>
<button aria-pressed=false onclick="this.setAttribute('aria-pressed', this.getAttribute('aria-pressed') !== 'true')">Bold</button>
<div role=checkbox aria-checked=false tabindex=0>Broken box</div>
<input aria-label=Date readonly onclick="document.getElementById('picker').hidden = false"><div id=picker hidden>May 2026</div>
<button>Plain</button>
<div role=menu><div role=menuitemcheckbox aria-checked=false tabindex=0 onclick="this.setAttribute('aria-checked', this.getAttribute('aria-checked') !== 'true')">Show grid</div>
<div role=menuitemradio aria-checked=false tabindex=0 onclick="this.setAttribute('aria-checked', 'true')">Zoom to fit</div>
<div role=menuitemradio aria-checked=false tabindex=0>Stuck zoom</div>
<div role=menuitem tabindex=0>Print</div></div>
<a href=#top>Top link</a>
<div role=tablist><div role=tab tabindex=0 aria-selected=false>Second tab</div></div>
<div role=listbox aria-label=Fruit><div role=option tabindex=0 aria-selected=false>Plum</div></div>
<div role=tree aria-label=Files><div role=treeitem tabindex=0 aria-expanded=false>Folder</div></div>
<div role=slider tabindex=0 aria-valuenow=3 aria-valuemin=0 aria-valuemax=10 aria-label=Volume style="width:100px;height:12px;background:#ccc"></div>"#,
    );
    let tab = env.open("/roles.html").await;
    for (name, expected) in [
        ("Native box", ReceiptState::Confirmed),
        ("Native radio", ReceiptState::Confirmed),
        ("Aria box", ReceiptState::Confirmed),
        ("Aria switch", ReceiptState::Confirmed),
        ("Bold", ReceiptState::Confirmed),
        ("Broken box", ReceiptState::Failed),
        ("Date", ReceiptState::Dispatched),
        ("Plain", ReceiptState::Dispatched),
        ("Show grid", ReceiptState::Confirmed),
        ("Zoom to fit", ReceiptState::Confirmed),
        ("Stuck zoom", ReceiptState::Failed),
        ("Print", ReceiptState::Dispatched),
        ("Top link", ReceiptState::Dispatched),
        ("Second tab", ReceiptState::Dispatched),
        ("Plum", ReceiptState::Dispatched),
        ("Folder", ReceiptState::Dispatched),
        ("Volume", ReceiptState::Dispatched),
    ] {
        let o = observe(&tab).await;
        let outcome = tab
            .act(&click(&o, name), &ActOptions::default())
            .await
            .unwrap();
        assert_eq!(
            outcome.receipt.state(),
            expected,
            "{name}: {:?}",
            outcome.receipt
        );
        // Only a confirmed change is certain: a click that was sent and not confirmed (or whose
        // promised change did not come) may still have done something else.
        assert_eq!(
            outcome.receipt.effect_uncertain(),
            expected != ReceiptState::Confirmed,
            "{name}: {:?}",
            outcome.receipt
        );
    }
    assert_eq!(
        observe_eval(&tab, "document.getElementById('picker').hidden").await,
        false,
        "the date field's click opened its picker"
    );
}

/// The targets of a widget library's page act as a person's click would (issue 36): jQuery
/// UI's Next pages its calendar, a delegated anchor pages ours, a CSS-painted icon, a delegated
/// list item and a chip served by a document listener each run their handler.
#[tokio::test]
async fn widget_library_targets_do_what_a_person_would() {
    let env = env().await;
    let tab = env.open("/jquery-widgets.html").await;
    let mut o = observe(&tab).await;
    assert!(o.aria_snapshot().contains("March"), "{}", o.aria_snapshot());
    for (name, expect) in [
        ("Next", "April"),
        (">>", "April"),
        ("reply", "tool tool reply"),
        ("flag", "tool sprite flag"),
        ("Spam", "act spam"),
        ("Green", "chip Green"),
    ] {
        let outcome = tab
            .act(&click(&o, name), &ActOptions::default())
            .await
            .unwrap_or_else(|e| panic!("click {name}: {e}"));
        assert_ne!(outcome.receipt.state(), ReceiptState::Failed, "{name}");
        o = observe(&tab).await;
        let text = o.aria_snapshot();
        assert!(text.contains(expect), "after {name}: {text}");
    }
    // Both calendars moved on by one month, each by its own control.
    let text = o.aria_snapshot();
    assert_eq!(text.matches("April").count(), 2, "{text}");
    assert_eq!(title(&tab).await, "chip Green");
}

/// A task on a folder tree a script folds (issue 36): opening the folders the observation says
/// are collapsed, one click each, reaches the file the task names, for every way the tree is
/// drawn.
#[tokio::test]
async fn a_file_in_a_folded_tree_is_reached_through_its_collapsed_folders() {
    let env = env().await;
    for seed in 0..3 {
        let tab = env.open(&format!("/random-tree.html?seed={seed}")).await;
        let mut o = observe(&tab).await;
        let target = observe_eval(&tab, "document.getElementById('query').textContent")
            .await
            .as_str()
            .unwrap()
            .split('"')
            .nth(1)
            .unwrap()
            .to_owned();
        let mut clicks = 0;
        while !o.aria_snapshot().contains(&format!("\"{target}\"")) {
            let collapsed = o
                .interactive_elements()
                .iter()
                .find(|e| e.states().iter().any(|s| s == "collapsed"))
                .unwrap_or_else(|| {
                    panic!(
                        "seed {seed}: nothing collapsed left:\n{}",
                        o.aria_snapshot()
                    )
                })
                .name()
                .to_owned();
            tab.act(&click(&o, &collapsed), &ActOptions::default())
                .await
                .unwrap();
            o = observe(&tab).await;
            clicks += 1;
            assert!(clicks < 20, "seed {seed}");
        }
        tab.act(&click(&o, &target), &ActOptions::default())
            .await
            .unwrap();
        let o = observe(&tab).await;
        assert!(
            o.aria_snapshot().contains(&format!("clicked {target}")),
            "seed {seed}:\n{}",
            o.aria_snapshot()
        );
    }
}

/// A target the budget left out of a 5,000-element page (issue 36) is reached in one step by a
/// text locator, with no observation that showed it.
#[tokio::test]
async fn a_far_target_of_a_big_page_is_reached_by_a_locator_in_one_step() {
    let env = env().await;
    let mut html = String::from("<!doctype html><title>Big</title>");
    for n in 0..1250 {
        html.push_str(&format!(
            "<p><a href='/item/{n}'>Item {n}</a> <button onclick=\"document.title='bought {n}'\">Buy {n}</button> <span>note {n}</span></p>"
        ));
    }
    env.server.html("/far.html", html);
    let tab = env.open("/far.html").await;
    let o = observe(&tab).await;
    assert!(!o.aria_snapshot().contains("\"Buy 1240\""));
    let click = protocol::validate_extended_action(&json!({
        "type": "click", "expected_frame_id": o.frame_id().as_str(),
        "target": {"kind": "text", "text": "Buy 1240", "exact": true}, "intent": "test"
    }))
    .unwrap();
    tab.act(&click, &ActOptions::default()).await.unwrap();
    assert_eq!(title(&tab).await, "bought 1240");
}
