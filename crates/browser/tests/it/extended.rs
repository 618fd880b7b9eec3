//! The extended action set (`glovebox.actions/2`) on real Chromium: buttons, counts and
//! modifiers, held keys, drags, two-axis scrolls, multi-selects, uploads, downloads, dialogs,
//! and locators with frame chains. Each action does what it names or fails sending nothing.

use std::path::PathBuf;
use std::time::Duration;

use browser::{ActOptions, ActOutcome, BrowserError, Tab, UploadRoot};
use protocol::{ErrorCode, ExtendedAction, ExtendedKind, Observation, ReceiptState};
use serde_json::{Value, json};

use crate::{env, observe, observe_eval};

fn ext(value: Value) -> ExtendedAction {
    protocol::validate_extended_action(&value)
        .unwrap_or_else(|e| panic!("a valid extended action: {e:?}\n{value}"))
}

/// An extended action on `frame`: `fields` plus `expected_frame_id` and `intent`.
fn on(frame: &Observation, mut fields: Value) -> ExtendedAction {
    fields["expected_frame_id"] = json!(frame.frame_id().as_str());
    fields["intent"] = json!("test");
    ext(fields)
}

fn role(role: &str, name: &str) -> Value {
    json!({"kind": "role", "role": role, "name": name})
}

fn text(text: &str) -> Value {
    json!({"kind": "text", "text": text, "exact": true})
}

/// Runs an action that must succeed; returns the outcome and its fresh observation.
async fn act(
    tab: &Tab,
    action: ExtendedAction,
    options: &ActOptions,
) -> (ActOutcome, Option<Observation>) {
    let mut outcome = tab
        .act(&action, options)
        .await
        .unwrap_or_else(|e| panic!("{action:?} failed: {e}"));
    let observation = outcome.observation.take();
    (outcome, observation)
}

async fn refused(tab: &Tab, action: ExtendedAction, options: &ActOptions) -> BrowserError {
    tab.act(&action, options)
        .await
        .expect_err("the action is refused")
}

fn strings(value: Value) -> Vec<String> {
    serde_json::from_value(value).unwrap()
}

#[tokio::test]
async fn double_triple_and_right_clicks_with_held_modifiers_and_keys() {
    let env = env().await;
    let tab = env.open("/pointer.html").await;
    let options = ActOptions::default();
    let clicker = role("button", "Clicker");
    let o = observe(&tab).await;
    let (outcome, o) = act(
        &tab,
        on(
            &o,
            json!({"type": "click", "target": clicker, "click_count": 2}),
        ),
        &options,
    )
    .await;
    assert_eq!(outcome.action, ExtendedKind::Click);
    let (_, o) = act(
        &tab,
        on(
            &o.unwrap(),
            json!({"type": "click", "target": clicker, "click_count": 3}),
        ),
        &options,
    )
    .await;
    let (_, o) = act(
        &tab,
        on(
            &o.unwrap(),
            json!({"type": "click", "target": clicker, "button": "right"}),
        ),
        &options,
    )
    .await;
    let (_, o) = act(
        &tab,
        on(
            &o.unwrap(),
            json!({"type": "click", "target": clicker, "modifiers": ["Shift", "Control"]}),
        ),
        &options,
    )
    .await;
    assert_eq!(
        strings(observe_eval(&tab, "events").await),
        [
            "click:0:1:false:false:false:false",
            "click:0:2:false:false:false:false",
            "dblclick:0:2:false:false:false:false",
            "click:0:1:false:false:false:false",
            "click:0:2:false:false:false:false",
            "dblclick:0:2:false:false:false:false",
            "click:0:3:false:false:false:false",
            "contextmenu:2:0:false:false:false:false",
            "auxclick:2:1:false:false:false:false",
            "click:0:1:true:true:false:false",
        ]
    );
    assert_eq!(
        strings(observe_eval(&tab, "keys.splice(0)").await),
        ["down:Control", "down:Shift", "up:Shift", "up:Control"]
    );

    // Shift held across actions: a plain click (the v1 path) carries it, then it is released.
    observe_eval(&tab, "events.length = 0").await;
    let (outcome, o) = act(
        &tab,
        on(&o.unwrap(), json!({"type": "key_down", "key": "Shift"})),
        &options,
    )
    .await;
    assert_eq!(
        (outcome.action, outcome.receipt.action()),
        (ExtendedKind::KeyDown, ExtendedKind::KeyDown)
    );
    assert_eq!(tab.held_keys(), ["Shift"]);
    let (_, o) = act(
        &tab,
        on(&o.unwrap(), json!({"type": "click", "target": clicker})),
        &options,
    )
    .await;
    let (outcome, o) = act(
        &tab,
        on(&o.unwrap(), json!({"type": "key_up", "key": "Shift"})),
        &options,
    )
    .await;
    assert_eq!(outcome.receipt.action(), ExtendedKind::KeyUp);
    assert_eq!(
        strings(observe_eval(&tab, "events").await),
        ["click:0:1:true:false:false:false"]
    );
    assert_eq!(
        strings(observe_eval(&tab, "keys.splice(0)").await),
        ["down:Shift", "up:Shift"]
    );
    let o = o.unwrap();
    let err = refused(
        &tab,
        on(&o, json!({"type": "key_up", "key": "Shift"})),
        &options,
    )
    .await;
    assert!(err.to_string().contains("not held"), "{err}");

    // A key left down is released by release_input (the runtime's end-of-run cleanup).
    let (_, o) = act(
        &tab,
        on(&o, json!({"type": "key_down", "key": "Control"})),
        &options,
    )
    .await;
    let err = refused(
        &tab,
        on(&o.unwrap(), json!({"type": "key_down", "key": "Control"})),
        &options,
    )
    .await;
    assert!(err.to_string().contains("held down already"), "{err}");
    tab.release_input().await.unwrap();
    assert!(tab.held_keys().is_empty());
    assert_eq!(
        strings(observe_eval(&tab, "keys.splice(0)").await),
        ["down:Control", "up:Control"],
        "nothing sent for the refused key_down"
    );
}

#[tokio::test]
async fn a_sortable_list_reordered_along_a_path_html5_drop_and_a_horizontal_scroll() {
    let env = env().await;
    let tab = env.open("/pointer.html").await;
    let options = ActOptions::default();
    let o = observe(&tab).await;
    // Alpha to just below Delta's middle, passing over the zone on the way.
    let drag = json!({"type": "drag", "source": text("Alpha"), "destination": text("Delta"), "path": [{"x": 290, "y": 110}], "end_offset": {"x": 0, "y": 8}});
    let (outcome, o) = act(&tab, on(&o, drag), &options).await;
    assert_eq!(outcome.action, ExtendedKind::Drag);
    assert_eq!(outcome.receipt.state(), ReceiptState::Dispatched);
    // The receipt names the drag as sent, not a stand-in v1 kind.
    assert_eq!(outcome.receipt.action(), ExtendedKind::Drag);
    assert_eq!(
        serde_json::to_value(&outcome.receipt).unwrap()["action"],
        "drag"
    );
    assert_eq!(
        strings(
            observe_eval(
                &tab,
                "[...document.querySelectorAll('#list li')].map(l => l.textContent)"
            )
            .await
        ),
        ["Beta", "Gamma", "Delta", "Alpha"]
    );
    assert_eq!(
        observe_eval(&tab, "zoneSeen").await,
        true,
        "the pointer passed over the zone with the button down"
    );
    assert!(tab.held_keys().is_empty());

    let html5 = json!({"type": "drag", "source": text("Card"), "destination": role("region", "Bin"), "mode": "html5"});
    let (_, o) = act(&tab, on(&o.unwrap(), html5), &options).await;
    assert_eq!(
        observe_eval(&tab, "document.getElementById('bin').textContent").await,
        "Dropped: card-data"
    );

    let scroll = json!({"type": "scroll", "target": role("region", "Wide strip"), "delta_x": 300});
    let (outcome, o) = act(&tab, on(&o.unwrap(), scroll), &options).await;
    assert_eq!(outcome.receipt.state(), ReceiptState::Confirmed);
    assert!(
        observe_eval(&tab, "document.getElementById('strip').scrollLeft")
            .await
            .as_f64()
            .unwrap()
            > 0.0
    );
    // A drop point outside the viewport is refused before anything is sent.
    let far = json!({"type": "drag", "source": text("Beta"), "destination": text("Gamma"), "end_offset": {"x": 2000, "y": 0}});
    let err = refused(&tab, on(&o.unwrap(), far), &options).await;
    assert!(err.to_string().contains("outside the viewport"), "{err}");
    assert_eq!(
        strings(
            observe_eval(
                &tab,
                "[...document.querySelectorAll('#list li')].map(l => l.textContent)"
            )
            .await
        ),
        ["Beta", "Gamma", "Delta", "Alpha"]
    );
}

#[tokio::test]
async fn a_multi_select_takes_several_values_and_missing_ones_are_listed() {
    let env = env().await;
    let tab = env.open("/extended-forms.html").await;
    let options = ActOptions::default();
    let o = observe(&tab).await;
    let toppings = json!({"kind": "label", "text": "Toppings"});
    let (outcome, o) = act(
        &tab,
        on(
            &o,
            json!({"type": "select", "target": toppings, "values": ["ham", "Basil"]}),
        ),
        &options,
    )
    .await;
    assert_eq!(outcome.receipt.state(), ReceiptState::Confirmed);
    assert_eq!(
        strings(observe_eval(&tab, "[...toppings.selectedOptions].map(o => o.value)").await),
        ["ham", "basil"]
    );
    let o = o.unwrap();
    let err = refused(
        &tab,
        on(
            &o,
            json!({"type": "select", "target": toppings, "values": ["olives", "anchovy"]}),
        ),
        &options,
    )
    .await;
    assert!(err.to_string().contains("no option \"anchovy\""), "{err}");
    assert!(
        err.to_string()
            .contains("\"Ham\", \"Olives\", \"Basil\", \"Pepper\""),
        "{err}"
    );
    let size = json!({"kind": "label", "text": "Size"});
    let err = refused(
        &tab,
        on(
            &o,
            json!({"type": "select", "target": size, "values": ["s", "l"]}),
        ),
        &options,
    )
    .await;
    assert!(err.to_string().contains("takes one option"), "{err}");
    assert_eq!(
        strings(observe_eval(&tab, "[...toppings.selectedOptions].map(o => o.value)").await),
        ["ham", "basil"],
        "refused selects change nothing"
    );
}

/// A fresh upload root per call: tests run side by side in one process, so each gets its own.
fn upload_root() -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("uploads-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("notes.txt"), "hello upload").unwrap();
    std::fs::write(root.join("other.txt"), "second").unwrap();
    let outside = root.with_extension("secret");
    std::fs::write(&outside, "not for upload").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("escape")).unwrap();
    std::fs::write(root.join(".env"), "TOKEN=not-for-upload").unwrap();
    root
}

#[tokio::test]
async fn uploads_only_from_the_authorised_folder_and_refusals_send_nothing() {
    let env = env().await;
    let tab = env.open("/extended-forms.html").await;
    let root = upload_root();
    let options = ActOptions {
        uploads: Some(UploadRoot::new(&root).unwrap()),
        ..Default::default()
    };
    let o = observe(&tab).await;
    let upload = |files: Value| {
        on(
            &o,
            json!({"type": "upload", "target": {"kind": "label", "text": "Attachment"}, "files": files}),
        )
    };
    for (files, why) in [
        (json!(["escape"]), "symbolic link"),
        (json!([".env"]), "hidden file"),
        (json!(["missing.txt"]), "not among the files"),
        (json!(["sub"]), "not a regular file"),
        (json!(["notes.txt", "other.txt"]), "takes one file"),
    ] {
        let err = refused(&tab, upload(files), &options).await;
        assert!(err.to_string().contains(why), "{err}");
    }
    let err = refused(&tab, upload(json!(["notes.txt"])), &ActOptions::default()).await;
    assert!(err.to_string().contains("no files for upload"), "{err}");
    assert!(
        env.server.requests_to("/upload").is_empty(),
        "a refused upload sends nothing"
    );
    assert_eq!(
        observe_eval(&tab, "document.getElementById('file').files.length").await,
        0
    );

    let (outcome, _) = act(&tab, upload(json!(["notes.txt"])), &options).await;
    assert_eq!(
        (outcome.action, outcome.receipt.action()),
        (ExtendedKind::Upload, ExtendedKind::Upload)
    );
    assert_eq!(outcome.receipt.state(), ReceiptState::Confirmed);
    let mut posted = env.server.requests_to("/upload");
    for _ in 0..100 {
        if !posted.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        posted = env.server.requests_to("/upload");
    }
    let body = String::from_utf8_lossy(&posted[0].body).into_owned();
    assert!(
        body.contains("filename=\"notes.txt\"") && body.contains("hello upload"),
        "{body}"
    );
}

/// Waits (bounded) for the fixture server to log a request to `path`.
async fn posted(env: &crate::Env, path: &str) -> Vec<test_support::RequestRecord> {
    for _ in 0..100 {
        let posted = env.server.requests_to(path);
        if !posted.is_empty() {
            return posted;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Vec::new()
}

#[tokio::test]
async fn uploads_through_a_file_chooser_a_button_opens_and_refusals_click_nothing() {
    let env = env().await;
    let tab = env.open("/file-chooser.html").await;
    let root = upload_root();
    let options = ActOptions {
        uploads: Some(UploadRoot::new(&root).unwrap()),
        ..Default::default()
    };
    let events = || async { strings(observe_eval(&tab, "events.splice(0)").await) };
    let o = observe(&tab).await;
    let attach = role("button", "Attach files");
    let upload = |o: &Observation, target: &Value, files: Value| {
        on(
            o,
            json!({"type": "upload", "target": target, "files": files}),
        )
    };

    // Refused names are refused before the click: no chooser opens, nothing is posted.
    for (files, why) in [
        (json!(["escape"]), "symbolic link"),
        (json!([".env"]), "hidden file"),
        (json!(["missing.txt"]), "not among the files"),
    ] {
        let err = refused(&tab, upload(&o, &attach, files), &options).await;
        assert_eq!(err.code(), ErrorCode::InvalidAction);
        assert!(err.to_string().contains(why), "{err}");
    }
    let err = refused(
        &tab,
        upload(&o, &attach, json!(["notes.txt"])),
        &ActOptions::default(),
    )
    .await;
    assert!(err.to_string().contains("no files for upload"), "{err}");
    assert!(events().await.is_empty(), "no chooser opened");
    assert!(
        env.server.writes().is_empty(),
        "a refused upload sends nothing"
    );

    // Allowed: the button's chooser is answered with both files.
    let (outcome, o) = act(
        &tab,
        upload(&o, &attach, json!(["notes.txt", "other.txt"])),
        &options,
    )
    .await;
    assert_eq!(
        (outcome.receipt.action(), outcome.receipt.state()),
        (ExtendedKind::Upload, ReceiptState::Confirmed),
        "{:?}",
        outcome.receipt
    );
    assert_eq!(events().await, ["change:many:notes.txt,other.txt"]);
    let body = String::from_utf8_lossy(&posted(&env, "/chooser-upload").await[0].body).into_owned();
    assert!(
        body.contains("filename=\"notes.txt\"")
            && body.contains("hello upload")
            && body.contains("filename=\"other.txt\""),
        "{body}"
    );

    // A single-file chooser given two files is cancelled, not half answered.
    let avatar = role("button", "Choose avatar");
    let o = o.unwrap();
    let (outcome, o) = act(
        &tab,
        upload(&o, &avatar, json!(["notes.txt", "other.txt"])),
        &options,
    )
    .await;
    assert_eq!(outcome.receipt.state(), ReceiptState::Failed);
    assert!(
        outcome
            .receipt
            .detail()
            .unwrap()
            .contains("takes one file, not 2"),
        "{:?}",
        outcome.receipt
    );
    assert_eq!(events().await, ["cancel:one"]);
    let (outcome, o) = act(
        &tab,
        upload(&o.unwrap(), &avatar, json!(["other.txt"])),
        &options,
    )
    .await;
    assert_eq!(
        outcome.receipt.state(),
        ReceiptState::Confirmed,
        "{:?}",
        outcome.receipt
    );
    assert_eq!(events().await, ["change:one:other.txt"]);

    // A control that opens no chooser: the click happened, the receipt says no chooser came.
    let (outcome, _) = act(
        &tab,
        upload(
            &o.unwrap(),
            &role("button", "Not a chooser"),
            json!(["notes.txt"]),
        ),
        &options,
    )
    .await;
    assert_eq!(outcome.receipt.state(), ReceiptState::Failed);
    assert!(outcome.receipt.effect_uncertain());
    assert!(
        outcome
            .receipt
            .detail()
            .unwrap()
            .contains("opened no file chooser"),
        "{:?}",
        outcome.receipt
    );
    assert_eq!(observe_eval(&tab, "result.textContent").await, "clicked");
    assert_eq!(
        env.server.requests_to("/chooser-upload").len(),
        2,
        "only the two answered choosers posted"
    );
}

#[tokio::test]
async fn uploads_through_a_chooser_inside_a_cross_site_frame() {
    let env = env().await;
    let inner = env.server.url_on_host("localhost", "/file-chooser.html");
    env.server.html("/chooser-frame", format!("<!doctype html><title>Outer</title><iframe title=Uploads src=\"{inner}\" width=600 height=300></iframe>"));
    let tab = env.open("/chooser-frame").await;
    let root = upload_root();
    let options = ActOptions {
        uploads: Some(UploadRoot::new(&root).unwrap()),
        ..Default::default()
    };
    let mut o = observe(&tab).await;
    for _ in 0..50 {
        if o.interactive_elements()
            .iter()
            .any(|e| e.name() == "Attach files")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        o = observe(&tab).await;
    }
    assert_eq!(tab.child_frame_count(), 1, "the frame is out of process");
    let frame = ref_of(&o, "iframe", "Uploads");
    let attach = json!({"kind": "role", "role": "button", "name": "Attach files", "frame": [{"kind": "element", "ref": frame}]});
    let (outcome, _) = act(
        &tab,
        on(
            &o,
            json!({"type": "upload", "target": attach, "files": ["notes.txt"]}),
        ),
        &options,
    )
    .await;
    assert_eq!(
        outcome.receipt.state(),
        ReceiptState::Confirmed,
        "{:?}",
        outcome.receipt
    );
    let body = String::from_utf8_lossy(&posted(&env, "/chooser-upload").await[0].body).into_owned();
    assert!(body.contains("filename=\"notes.txt\""), "{body}");
}

#[tokio::test]
async fn a_chooser_opened_without_an_upload_is_not_intercepted_and_does_not_block_later_ones() {
    let env = env().await;
    let tab = env.open("/file-chooser.html").await;
    let root = upload_root();
    let options = ActOptions {
        uploads: Some(UploadRoot::new(&root).unwrap()),
        ..Default::default()
    };
    let mut intercepted = tab.session().subscribe(&["Page.fileChooserOpened"]);
    let attach = role("button", "Attach files");
    // A plain click opens Chromium's own chooser: nothing intercepts it (headless cancels it).
    let o = observe(&tab).await;
    let (outcome, o) = act(
        &tab,
        on(&o, json!({"type": "click", "target": attach})),
        &options,
    )
    .await;
    assert_eq!(outcome.receipt.action(), ExtendedKind::Click);
    let cancelled = async {
        for _ in 0..100 {
            if observe_eval(&tab, "events.includes('cancel:many')").await == true {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    };
    assert!(
        cancelled.await,
        "headless Chromium cancels a chooser nobody intercepts: {:?}",
        observe_eval(&tab, "events").await
    );
    // An upload through the same button still gets its chooser, and interception ends with it.
    let (outcome, o) = act(
        &tab,
        on(
            &o.unwrap(),
            json!({"type": "upload", "target": attach, "files": ["notes.txt"]}),
        ),
        &options,
    )
    .await;
    assert_eq!(
        outcome.receipt.state(),
        ReceiptState::Confirmed,
        "{:?}",
        outcome.receipt
    );
    assert!(
        matches!(
            tokio::time::timeout(Duration::ZERO, intercepted.recv()).await,
            Ok(Some(Ok(_)))
        ),
        "the upload's chooser was intercepted"
    );
    observe_eval(&tab, "events.length = 0").await;
    act(
        &tab,
        on(&o.unwrap(), json!({"type": "click", "target": attach})),
        &options,
    )
    .await;
    let after = tokio::time::timeout(Duration::from_millis(500), intercepted.recv()).await;
    assert!(
        after.is_err(),
        "after the upload, choosers are no longer intercepted: {after:?}"
    );
    // The approved file was sent once, and nothing else ever. (Chromium 156 cancels the later
    // chooser; Debian 12's Chromium 148 empties the input instead, and the page posts an empty
    // form.)
    let bodies: Vec<String> = posted(&env, "/chooser-upload")
        .await
        .iter()
        .map(|p| String::from_utf8_lossy(&p.body).into_owned())
        .collect();
    let with_files: Vec<&String> = bodies.iter().filter(|b| b.contains("filename=")).collect();
    assert_eq!(with_files.len(), 1, "{bodies:?}");
    assert_eq!(with_files[0].matches("filename=").count(), 1, "{bodies:?}");
    assert!(
        with_files[0].contains("filename=\"notes.txt\""),
        "{bodies:?}"
    );
    assert!(bodies.len() <= 2, "{bodies:?}");
}

#[tokio::test]
async fn a_download_is_captured_into_the_given_folder() {
    let env = env().await;
    let tab = env.open("/extended-forms.html").await;
    let o = observe(&tab).await;
    let click = on(
        &o,
        json!({"type": "click", "target": text("Download report"), "expect_download": true}),
    );
    let err = refused(&tab, click.clone(), &ActOptions::default()).await;
    assert!(
        err.to_string().contains("does not capture downloads"),
        "{err}"
    );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("downloads-{}", std::process::id()));
    let options = ActOptions {
        downloads: Some(dir.clone()),
        ..Default::default()
    };
    let (outcome, _) = act(&tab, click, &options).await;
    assert_eq!(
        outcome.receipt.state(),
        ReceiptState::Confirmed,
        "{:?}",
        outcome.receipt
    );
    let [download] = outcome.downloads.as_slice() else {
        panic!("one download: {:?}", outcome.downloads)
    };
    let expected = std::fs::read(crate::fixtures().join("report.csv")).unwrap();
    assert_eq!(download.suggested_filename, "report.csv");
    assert_eq!(download.size, expected.len() as u64);
    assert!(
        download
            .path
            .starts_with(std::fs::canonicalize(&dir).unwrap()),
        "{download:?}"
    );
    assert_eq!(std::fs::read(&download.path).unwrap(), expected);
}

/// A plain link the server answers as an attachment starts a download no capture took: the
/// receipt says so, and how to ask for it; with `expect_download` the same link is captured.
#[tokio::test]
async fn a_download_nobody_asked_for_is_named_in_the_receipt() {
    let env = env().await;
    env.server.route(
        "/export",
        test_support::Route::attachment("export.csv", b"a,b\n"),
    );
    env.server.html(
        "/export.html",
        r#"<!doctype html><title>Export</title><a href="/export">Export all</a>"#,
    );
    let tab = env.open("/export.html").await;
    let o = observe(&tab).await;
    let (outcome, o) = act(
        &tab,
        on(&o, json!({"type": "click", "target": text("Export all")})),
        &ActOptions::default(),
    )
    .await;
    assert!(outcome.downloads.is_empty());
    let detail = outcome.receipt.detail().unwrap_or_default();
    assert!(
        detail.contains(r#"began a download ("export.csv")"#) && detail.contains("expect_download"),
        "{detail:?}"
    );
    // The same link again: a request to a URL the page sent before is not taken for its polling
    // when it is the main frame's document.
    let (outcome, o) = act(
        &tab,
        on(
            &o.expect("the page stays"),
            json!({"type": "click", "target": text("Export all")}),
        ),
        &ActOptions::default(),
    )
    .await;
    let detail = outcome.receipt.detail().unwrap_or_default();
    assert!(
        detail.contains(r#"began a download ("export.csv")"#),
        "{detail:?}"
    );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("downloads-export-{}", std::process::id()));
    let options = ActOptions {
        downloads: Some(dir),
        ..Default::default()
    };
    let (outcome, _) = act(
        &tab,
        on(
            &o.expect("the page stays"),
            json!({"type": "click", "target": text("Export all"), "expect_download": true}),
        ),
        &options,
    )
    .await;
    assert_eq!(outcome.downloads.len(), 1, "{:?}", outcome.receipt);
    assert!(
        !outcome
            .receipt
            .detail()
            .unwrap_or_default()
            .contains("began a download"),
        "a captured download is not named as uncaptured"
    );
}

#[tokio::test]
async fn every_dialog_kind_is_answered_and_answering_none_is_refused() {
    let env = env().await;
    let tab = env.open("/extended-forms.html").await;
    let options = ActOptions::default();
    let result = || async { observe_eval(&tab, "result.textContent").await };
    let mut o = observe(&tab).await;
    let err = refused(
        &tab,
        on(&o, json!({"type": "dialog", "accept": true})),
        &options,
    )
    .await;
    assert!(err.to_string().contains("no dialog is open"), "{err}");
    for (button, answer, kind, expected) in [
        ("Alert", json!({"accept": true}), "alert", "alerted"),
        ("Confirm", json!({"accept": true}), "confirm", "yes"),
        ("Confirm", json!({"accept": false}), "confirm", "no"),
        (
            "Prompt",
            json!({"accept": true, "prompt_text": "Ada"}),
            "prompt",
            "name:Ada",
        ),
        ("Prompt", json!({"accept": true}), "prompt", "name:anon"),
    ] {
        let (outcome, none) = act(
            &tab,
            on(
                &o,
                json!({"type": "click", "target": role("button", button)}),
            ),
            &options,
        )
        .await;
        assert_eq!(outcome.dialog.map(|d| d.kind).as_deref(), Some(kind));
        assert!(
            none.is_none(),
            "no observation while the dialog blocks the page"
        );
        let mut answer = answer;
        answer["type"] = json!("dialog");
        let (outcome, after) = act(&tab, on(&o, answer), &options).await;
        assert_eq!(
            (
                outcome.action,
                outcome.receipt.action(),
                outcome.receipt.state()
            ),
            (
                ExtendedKind::Dialog,
                ExtendedKind::Dialog,
                ReceiptState::Confirmed
            )
        );
        assert!(tab.dialog().is_none());
        assert_eq!(result().await, expected);
        o = after.expect("a fresh observation once the dialog is answered");
    }
}

#[tokio::test]
async fn locators_by_role_label_text_and_test_id_match_exactly_one() {
    let env = env().await;
    let tab = env.open("/extended-forms.html").await;
    let options = ActOptions::default();
    let o = observe(&tab).await;
    let click = |o: &Observation, target: Value| on(o, json!({"type": "click", "target": target}));
    let (_, o) = act(&tab, click(&o, role("button", "save")), &options).await;
    assert_eq!(observe_eval(&tab, "result.textContent").await, "saved");
    observe_eval(&tab, "result.textContent = 'none'").await;
    let o = o.unwrap();
    let (_, o) = act(
        &tab,
        click(&o, json!({"kind": "test_id", "id": "save-btn"})),
        &options,
    )
    .await;
    assert_eq!(observe_eval(&tab, "result.textContent").await, "saved");
    let (_, o) = act(
        &tab,
        click(
            &o.unwrap(),
            json!({"kind": "text", "text": "terms and conditions"}),
        ),
        &options,
    )
    .await;
    assert_eq!(observe_eval(&tab, "result.textContent").await, "terms");
    let mut o = o.unwrap();
    for (label, value) in [("Email", "ada@example.test"), ("phone NUMBER", "555 0100")] {
        let typed = on(
            &o,
            json!({"type": "type", "target": {"kind": "label", "text": label}, "text": value, "mode": "keystrokes"}),
        );
        let (outcome, next) = act(&tab, typed, &options).await;
        assert_eq!(outcome.receipt.state(), ReceiptState::Confirmed, "{label}");
        o = next.unwrap();
    }
    assert_eq!(
        observe_eval(&tab, "[email.value, phone.value]").await,
        json!(["ada@example.test", "555 0100"])
    );

    let err = refused(&tab, click(&o, role("button", "Nope")), &options).await;
    assert_eq!(err.code(), ErrorCode::InvalidAction);
    assert!(
        err.to_string()
            .contains("no element matches role button named \"Nope\""),
        "{err}"
    );
    let err = refused(
        &tab,
        click(
            &o,
            json!({"kind": "role", "role": "button", "name": "save", "exact": true}),
        ),
        &options,
    )
    .await;
    assert!(err.to_string().contains("no element matches"), "{err}");
    let err = refused(&tab, click(&o, role("button", "Delete")), &options).await;
    let message = err.to_string();
    assert!(
        message.contains("2 elements match role button named \"Delete\""),
        "{message}"
    );
    let delete_refs: Vec<_> = o
        .interactive_elements()
        .iter()
        .filter(|e| e.name() == "Delete")
        .map(|e| {
            format!(
                "button \"Delete\" (button \"Delete\") [{}]",
                e.element().as_str()
            )
        })
        .collect();
    assert_eq!(delete_refs.len(), 2);
    for listed in &delete_refs {
        assert!(
            message.contains(listed.as_str()),
            "{message} lists {listed}"
        );
    }
    assert_eq!(
        observe_eval(&tab, "result.textContent").await,
        "terms",
        "refused locators click nothing"
    );
}

#[tokio::test]
async fn locators_inside_same_and_cross_origin_frames_through_a_frame_chain() {
    let env = env().await;
    let tab = env.open("/iframes.html").await;
    let options = ActOptions::default();
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
    assert_eq!(
        tab.child_frame_count(),
        1,
        "the cross-site frame is out of process"
    );
    observe_eval(&tab, "document.querySelector('iframe').contentDocument.querySelector('button').onclick = () => { document.title = 'inner clicked'; }").await;
    let o = observe(&tab).await;
    // Frames are searched only when entered.
    let err = refused(
        &tab,
        on(
            &o,
            json!({"type": "click", "target": role("button", "Inner button")}),
        ),
        &options,
    )
    .await;
    assert!(err.to_string().contains("no element matches"), "{err}");
    let inner = json!({"kind": "role", "role": "button", "name": "Inner button", "frame": [{"kind": "title", "text": "Same origin"}]});
    let (_, o) = act(
        &tab,
        on(&o, json!({"type": "click", "target": inner})),
        &options,
    )
    .await;
    assert_eq!(observe_eval(&tab, "document.title").await, "inner clicked");
    let coupon = json!({"kind": "label", "text": "Coupon", "frame": [{"kind": "title", "text": "other site"}]});
    let (outcome, o) = act(
        &tab,
        on(
            &o.unwrap(),
            json!({"type": "type", "target": coupon, "text": "SAVE10"}),
        ),
        &options,
    )
    .await;
    assert_eq!(
        outcome.receipt.state(),
        ReceiptState::Confirmed,
        "{:?}",
        outcome.receipt
    );
    assert!(o.unwrap().aria_snapshot().contains("\"SAVE10\""));
    let missing = json!({"kind": "label", "text": "Coupon", "frame": [{"kind": "title", "text": "Checkout"}]});
    let err = refused(
        &tab,
        on(
            &observe(&tab).await,
            json!({"type": "type", "target": missing, "text": "x"}),
        ),
        &options,
    )
    .await;
    assert!(
        err.to_string()
            .contains("no frame matches title \"Checkout\""),
        "{err}"
    );
}

/// The ref of the element with this role and name in an observation.
fn ref_of(o: &Observation, role: &str, name: &str) -> String {
    let found = o
        .interactive_elements()
        .iter()
        .find(|e| e.role() == role && e.name() == name);
    found
        .unwrap_or_else(|| panic!("{role} {name:?} has a ref:\n{}", o.aria_snapshot()))
        .element()
        .as_str()
        .to_owned()
}

/// Observes until the cross-site frame of `/iframes.html` has loaded.
async fn observe_frames(tab: &Tab) -> Observation {
    let mut o = observe(tab).await;
    for _ in 0..50 {
        if o.interactive_elements()
            .iter()
            .any(|e| e.name() == "Coupon")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        o = observe(tab).await;
    }
    o
}

#[tokio::test]
async fn frames_are_entered_by_the_ref_the_model_saw_same_and_cross_origin() {
    let env = env().await;
    let tab = env.open("/iframes.html").await;
    let options = ActOptions::default();
    observe_frames(&tab).await;
    assert_eq!(
        tab.child_frame_count(),
        1,
        "the cross-site frame is out of process"
    );
    observe_eval(&tab, "document.querySelector('iframe').contentDocument.querySelector('button').onclick = () => { document.title = 'inner clicked'; }").await;
    let o = observe(&tab).await;
    let (same, other) = (
        ref_of(&o, "iframe", "Same origin"),
        ref_of(&o, "iframe", "Other site"),
    );
    assert!(
        o.aria_snapshot()
            .contains(&format!("iframe \"Same origin\" [{same}]")),
        "{}",
        o.aria_snapshot()
    );
    let enter = |frame: &str| json!([{"kind": "element", "ref": frame}]);

    let inner =
        json!({"kind": "role", "role": "button", "name": "Inner button", "frame": enter(&same)});
    let (_, o) = act(
        &tab,
        on(&o, json!({"type": "click", "target": inner})),
        &options,
    )
    .await;
    assert_eq!(observe_eval(&tab, "document.title").await, "inner clicked");
    let o = o.unwrap();
    let coupon = json!({"kind": "label", "text": "Coupon", "frame": enter(&other)});
    let (outcome, o) = act(
        &tab,
        on(
            &o,
            json!({"type": "type", "target": coupon, "text": "SAVE10"}),
        ),
        &options,
    )
    .await;
    assert_eq!(
        outcome.receipt.state(),
        ReceiptState::Confirmed,
        "{:?}",
        outcome.receipt
    );
    let o = o.unwrap();
    assert!(o.aria_snapshot().contains("\"SAVE10\""));

    // Only the frame entered is searched.
    let wrong = json!({"kind": "label", "text": "Coupon", "frame": enter(&same)});
    let err = refused(
        &tab,
        on(&o, json!({"type": "type", "target": wrong, "text": "x"})),
        &options,
    )
    .await;
    assert!(
        err.to_string().contains(&format!(
            "no element matches label \"Coupon\" in {same} iframe \"Same origin\""
        )),
        "{err}"
    );
    // A frame's ref names a frame to enter, not a target; an element's ref is not a frame.
    let err = refused(
        &tab,
        on(
            &o,
            json!({"type": "click", "target": {"kind": "element", "ref": same}}),
        ),
        &options,
    )
    .await;
    assert_eq!(err.code(), ErrorCode::InvalidAction);
    assert!(err.to_string().contains("is a frame"), "{err}");
    let button = ref_of(&o, "button", "Inner button");
    let not_a_frame = json!({"kind": "role", "role": "button", "frame": enter(&button)});
    let err = refused(
        &tab,
        on(&o, json!({"type": "click", "target": not_a_frame})),
        &options,
    )
    .await;
    assert!(err.to_string().contains("is not a frame"), "{err}");
    // A frame removed since the observation is stale, never a guess.
    observe_eval(&tab, "document.querySelector('iframe').remove()").await;
    let err = refused(
        &tab,
        on(&o, json!({"type": "click", "target": inner_in(&same)})),
        &options,
    )
    .await;
    assert_eq!(err.code(), ErrorCode::StaleObservation, "{err}");
    assert_eq!(observe_eval(&tab, "document.title").await, "inner clicked");
}

fn inner_in(frame: &str) -> Value {
    json!({"kind": "role", "role": "button", "name": "Inner button", "frame": [{"kind": "element", "ref": frame}]})
}

#[tokio::test]
async fn a_nested_frame_is_entered_through_its_parent_frame_by_refs() {
    let env = env().await;
    env.server.html("/nest-outer", "<!doctype html><title>Outer</title><iframe title=Middle src=/nest-middle width=500 height=300></iframe>");
    env.server.html("/nest-middle", "<!doctype html><title>Middle</title><iframe title=Deep src=/nest-inner width=400 height=150></iframe>");
    env.server.html("/nest-inner", "<!doctype html><title>Deep</title><button onclick=\"this.textContent = 'Pressed'\">Press me</button>");
    let tab = env.open("/nest-outer").await;
    let options = ActOptions::default();
    let mut o = observe(&tab).await;
    for _ in 0..50 {
        if o.interactive_elements()
            .iter()
            .any(|e| e.name() == "Press me")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        o = observe(&tab).await;
    }
    let (middle, deep) = (ref_of(&o, "iframe", "Middle"), ref_of(&o, "iframe", "Deep"));
    let press = |chain: Value| json!({"type": "click", "target": {"kind": "role", "role": "button", "name": "Press me", "frame": chain}});
    let err = refused(
        &tab,
        on(&o, press(json!([{"kind": "element", "ref": deep}]))),
        &options,
    )
    .await;
    assert!(
        err.to_string().contains("is not in the page's document"),
        "{err}"
    );
    let (_, o) = act(
        &tab,
        on(
            &o,
            press(json!([{"kind": "element", "ref": middle}, {"kind": "element", "ref": deep}])),
        ),
        &options,
    )
    .await;
    assert!(o.unwrap().aria_snapshot().contains("button \"Pressed\""));
}

/// A Ctrl-, Shift- or middle-click on a link opens the page elsewhere and leaves this one as it
/// is: the action settles without waiting for a navigation of this tab that never comes, and
/// the receipt never claims a failure. Headless Chromium opens such tabs without an opener; the
/// outcome still names the tab, matched by the window the page asked for (`Page.windowOpen`).
#[tokio::test]
async fn modifier_and_middle_clicks_on_links_settle_without_waiting_for_this_tab() {
    let env = env().await;
    let tab = env.open("/links.html").await;
    // A deadline far past any settling, with a hang detector below it.
    let options = ActOptions {
        deadline: Duration::from_secs(60),
        ..ActOptions::default()
    };
    let mut o = observe(&tab).await;
    for (i, click) in [
        json!({"type": "click", "target": role("link", "Counter page"), "modifiers": ["Control"]}),
        json!({"type": "click", "target": role("link", "Form page"), "button": "middle"}),
        json!({"type": "click", "target": role("link", "Counter page"), "modifiers": ["Shift"]}),
    ]
    .into_iter()
    .enumerate()
    {
        let (outcome, next) = tokio::time::timeout(
            Duration::from_secs(20),
            act(&tab, on(&o, click.clone()), &options),
        )
        .await
        .expect("settles, no stall");
        // The effect is in another tab: dispatched, not confirmed on this page, never failed.
        assert_ne!(
            outcome.receipt.state(),
            ReceiptState::Failed,
            "{click}: {:?}",
            outcome.receipt
        );
        assert_eq!(
            outcome.opened.len(),
            1,
            "{click} ({i}): the tab it opened is named"
        );
        let targets = tab
            .session()
            .connection()
            .browser()
            .call(cdp::domains::target::GetTargets {})
            .await
            .unwrap();
        let opened = targets
            .target_infos
            .iter()
            .find(|t| {
                t.target_id
                    .as_ref()
                    .is_some_and(|id| id.0 == outcome.opened[0])
            })
            .expect("a live target");
        let wanted = if click["button"] == "middle" {
            "/form.html"
        } else {
            "/counter.html"
        };
        assert!(
            opened.url.ends_with(wanted),
            "{click}: the named tab is the one the link opened: {}",
            opened.url
        );
        o = next.unwrap();
        assert!(
            o.url().ends_with("/links.html"),
            "this tab stayed: {}",
            o.url()
        );
    }
}

/// A drag of one item onto another of a real jQuery UI sortable (issue 36) puts it in that
/// item's place, down and up a vertical list and along a floated row, as a person's drag does:
/// by ref, with no path or offset given, the pointer passing the midpoints on its way.
#[tokio::test]
async fn a_drag_onto_an_item_of_a_jquery_ui_sortable_takes_its_place() {
    let env = env().await;
    let tab = env.open("/jquery-sortable.html").await;
    let options = ActOptions::default();
    let mut o = observe(&tab).await;
    let by_ref = |o: &Observation, name: &str| {
        let e = o
            .interactive_elements()
            .iter()
            .find(|e| e.name() == name)
            .unwrap_or_else(|| panic!("{name} has a ref:\n{}", o.aria_snapshot()));
        json!({"kind": "element", "ref": e.element().as_str()})
    };
    for (list, from, onto, expect) in [
        (
            "sortable",
            "Sharyl",
            "Marianne",
            ["Benni", "Marianne", "Sharyl", "Dulcie", "Arlene"].as_slice(),
        ),
        (
            "sortable",
            "Arlene",
            "Benni",
            &["Arlene", "Benni", "Marianne", "Sharyl", "Dulcie"],
        ),
        (
            "sortable",
            "Dulcie",
            "Marianne",
            &["Arlene", "Benni", "Dulcie", "Marianne", "Sharyl"],
        ),
        ("tiles", "One", "Three", &["Two", "Three", "One", "Four"]),
        ("tiles", "Four", "Two", &["Four", "Two", "Three", "One"]),
    ] {
        let drag =
            json!({"type": "drag", "source": by_ref(&o, from), "destination": by_ref(&o, onto)});
        let (_, next) = act(&tab, on(&o, drag), &options).await;
        assert_eq!(
            strings(observe_eval(&tab, &format!("order('{list}')")).await),
            expect,
            "{from} onto {onto}"
        );
        assert!(tab.held_keys().is_empty());
        o = match next {
            Some(next) => next,
            None => observe(&tab).await,
        };
    }
}

/// The element a locator resolved to when the runtime judged an action (`locator_facts`, what
/// its policy reads) is the element that action acts on, even if the locator would now find
/// another; used once: the next action resolves afresh.
#[tokio::test]
async fn a_locator_acts_on_the_element_that_was_judged_and_only_once() {
    let env = env().await;
    env.server.html(
        "/two-labels",
        "<title>Two</title><label for=a id=la>City</label><input id=a><label for=b id=lb>Town</label><input id=b>",
    );
    let tab = env.open("/two-labels").await;
    let o = observe(&tab).await;
    let city: protocol::extended::Locator =
        serde_json::from_value(json!({"kind": "label", "text": "City", "exact": true})).unwrap();
    let record = tab.latest_observation().unwrap();
    let judged = tab.locator_facts(&record, &city).await.expect("found");
    assert_eq!(judged.name, "City");
    // The labels swap their words (text only: the frame stays the same document and structure).
    observe_eval(
        &tab,
        "la.firstChild.data = 'Town'; lb.firstChild.data = 'City'; true",
    )
    .await;
    let options = ActOptions::default();
    let typing = |text: &str| {
        on(
            &o,
            json!({"type": "type", "target": {"kind": "label", "text": "City", "exact": true}, "text": text}),
        )
    };
    let (_, after) = act(&tab, typing("judged"), &options).await;
    assert_eq!(
        strings(observe_eval(&tab, "[a.value, b.value]").await),
        ["judged", ""],
        "the judged element took the text"
    );
    let after = after.unwrap();
    let again = on(
        &after,
        json!({"type": "type", "target": {"kind": "label", "text": "City", "exact": true}, "text": "afresh"}),
    );
    act(&tab, again, &options).await;
    assert_eq!(
        strings(observe_eval(&tab, "[a.value, b.value]").await),
        ["judged", "afresh"],
        "the next action found the locator's element again"
    );
}
