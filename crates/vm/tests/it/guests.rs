//! Two guests through the adapter: isolation, unknown writes, refused images, reboots, guests
//! that are down, and credentials.

use std::sync::Arc;
use std::time::{Duration, Instant};

use protocol::{ElementRef, ExtendedAction, FrameId, ImageMime, Observation, ReceiptState};
use surface::{ActOptions, ObserveOptions, Surface, SurfaceAdapter as _, SurfaceError};

use crate::proxy::{self, Fault};
use crate::{adapter, fixture, probe, probe_log};

fn shot() -> ObserveOptions {
    ObserveOptions {
        screenshot: Some(ImageMime::Png),
        deadline: Duration::from_secs(20),
        ..ObserveOptions::default()
    }
}

fn act_options() -> ActOptions {
    ActOptions {
        deadline: Duration::from_secs(20),
        ..ActOptions::default()
    }
}

fn action(json: serde_json::Value) -> ExtendedAction {
    serde_json::from_value(json).expect("action")
}

fn click(frame: &FrameId, x: u32, y: u32) -> ExtendedAction {
    action(serde_json::json!({
        "type": "click",
        "expected_frame_id": frame.as_str(),
        "target": {"kind": "point", "x": x, "y": y},
        "intent": "click in the probe"
    }))
}

/// The ref of the window titled `title` in `o`.
fn window_ref(o: &Observation, title: &str) -> ElementRef {
    o.interactive_elements()
        .iter()
        .find(|e| e.name() == title)
        .unwrap_or_else(|| panic!("no window {title:?} in {}", o.aria_snapshot()))
        .element()
        .clone()
}

async fn attach(adapter: &vm::VmAdapter, id: &str) -> Arc<dyn Surface> {
    adapter.attach(id.to_owned(), None).await.expect("attach")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_guests_side_by_side_never_cross() {
    let f = fixture();
    let (_a, _b) = (f.a.lock.lock().await, f.b.lock.lock().await);
    let (ca, cb) = (f.a.client(), f.b.client());
    probe(&ca, "probe-alpha").await;
    probe(&cb, "probe-beta").await;
    let adapter = adapter(vec![f.a.config(), f.b.config()]).await;
    // Each guest is its own surface and its own input domain.
    let listed = adapter.list().await.expect("list");
    let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["vm:alpha", "vm:beta"]);
    assert_ne!(
        adapter.input_domain("vm:alpha"),
        adapter.input_domain("vm:beta")
    );
    let (sa, sb) = (
        attach(&adapter, "vm:alpha").await,
        attach(&adapter, "vm:beta").await,
    );
    let before_a = ca.log().await.expect("log").len();
    let before_b = cb.log().await.expect("log").len();
    let probe_before_b = probe_log(&cb, "probe-beta").await.len();

    // Click into alpha's probe, then type into it (it holds focus after the click).
    let oa = sa.observe(&shot()).await.expect("observe alpha");
    assert!(oa.screenshot().is_some());
    assert_eq!(oa.origin(), "vm://alpha");
    let done = sa
        .act(&click(oa.frame_id(), 100, 100), &act_options())
        .await
        .expect("click alpha");
    assert_eq!(done.receipt.state(), ReceiptState::Dispatched);
    let oa = done.observation.expect("a fresh observation");
    let probe_ref = window_ref(&oa, "probe-alpha");
    let typed = sa
        .act(
            &action(serde_json::json!({
                "type": "type",
                "expected_frame_id": oa.frame_id().as_str(),
                "target": {"kind": "element", "ref": probe_ref.as_str()},
                "text": "abc",
                "intent": "type into the probe"
            })),
            &act_options(),
        )
        .await
        .expect("type alpha");
    assert_eq!(typed.receipt.state(), ReceiptState::Dispatched);

    // Both guests, both actions at once: two input domains never wait on each other.
    let ob = sb.observe(&shot()).await.expect("observe beta");
    let oa = typed.observation.expect("observation");
    let (click_a, click_b, options) = (
        click(oa.frame_id(), 120, 110),
        click(ob.frame_id(), 90, 80),
        act_options(),
    );
    let (ra, rb) = tokio::join!(sa.act(&click_a, &options), sb.act(&click_b, &options));
    ra.expect("second click alpha");
    rb.expect("click beta");

    // Each guest's own log holds exactly its own input.
    let log_a = ca.log().await.expect("log");
    let log_b = cb.log().await.expect("log");
    let new_a: Vec<_> = log_a[before_a..].to_vec();
    let new_b: Vec<_> = log_b[before_b..].to_vec();
    assert_eq!(new_a.len(), 3, "{new_a:?}");
    assert_eq!(new_b.len(), 1, "{new_b:?}");
    assert_eq!(new_a[1].chars, 3);
    assert!(new_b[0].points.contains(&[90, 80]), "{new_b:?}");
    assert!(new_a.iter().all(|l| !l.points.contains(&[90, 80])));
    // The applications say the same: alpha's probe got the keys and two clicks, beta's one
    // click and no key.
    let pa = probe_log(&ca, "probe-alpha").await;
    assert!(
        pa.ends_with(&[
            "key a".into(),
            "key b".into(),
            "key c".into(),
            "button 1 80 70".into()
        ]),
        "{pa:?}"
    );
    let pb = probe_log(&cb, "probe-beta").await;
    assert_eq!(
        pb[probe_before_b..],
        ["button 1 50 40".to_owned()],
        "{pb:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_whose_answer_is_lost_is_unknown_and_never_sent_again() {
    let f = fixture();
    let _a = f.a.lock.lock().await;
    let direct = f.a.client();
    probe(&direct, "probe-alpha").await;
    let proxy = proxy::start(&f.a.endpoint).await;
    let mut config = f.a.config();
    config.endpoint = proxy.endpoint.clone();
    let adapter = adapter(vec![config]).await;
    let screen = attach(&adapter, "vm:alpha").await;
    let o = screen.observe(&shot()).await.expect("observe");
    let before = direct.log().await.expect("log").len();
    proxy.set(Fault::DropInputAnswer);
    let out = screen
        .act(&click(o.frame_id(), 60, 60), &act_options())
        .await
        .expect("an outcome, not an error");
    assert_eq!(
        out.receipt.state(),
        ReceiptState::Unknown,
        "{:?}",
        out.receipt
    );
    assert!(out.receipt.effect_uncertain());
    assert!(out.observation.is_none());
    proxy.set(Fault::None);
    // The frame is spent: the same action again is refused unsent.
    let again = screen
        .act(&click(o.frame_id(), 60, 60), &act_options())
        .await
        .expect_err("stale");
    assert!(matches!(again, SurfaceError::Stale { .. }), "{again:?}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let log = direct.log().await.expect("log");
    assert_eq!(log.len() - before, 1, "applied once, never again: {log:?}");
    // Observing first makes the next action possible.
    let o = screen.observe(&shot()).await.expect("observe");
    screen
        .act(&click(o.frame_id(), 60, 60), &act_options())
        .await
        .expect("after observing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_or_oversize_screenshot_is_refused_with_a_structured_error() {
    let f = fixture();
    let _b = f.b.lock.lock().await;
    let proxy = proxy::start(&f.b.endpoint).await;
    let mut config = f.b.config();
    config.endpoint = proxy.endpoint.clone();
    let adapter = adapter(vec![config]).await;
    let screen = attach(&adapter, "vm:beta").await;
    screen.observe(&shot()).await.expect("a good image first");
    for fault in [Fault::CorruptScreenshot, Fault::HugeScreenshot] {
        proxy.set(fault);
        let e = screen.observe(&shot()).await.expect_err("refused");
        assert_eq!(e.code(), protocol::ErrorCode::Internal, "{fault:?}: {e}");
        assert!(
            e.to_string().contains("screenshot was refused"),
            "{fault:?}: {e}"
        );
    }
    // Without an image the same guest is observed as before.
    proxy.set(Fault::CorruptScreenshot);
    screen
        .observe(&ObserveOptions::default())
        .await
        .expect("text only");
    // An image of another size than the guest's screen is refused too (checked offline: the
    // guest never sends one).
    let png = f.b.client().screenshot([800, 600]).await.expect("shot").png;
    let e = vm::client::check_png(png, [1024, 768]).err().expect("size");
    assert!(e.to_string().contains("800×600"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_that_is_down_or_hung_is_unavailable_not_a_hang() {
    // Nothing listens on a port just closed.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let f = fixture();
    let proxy = proxy::start(&f.b.endpoint).await;
    proxy.set(Fault::Hang);
    let adapter = adapter(vec![
        vm::GuestConfig {
            name: "down".into(),
            endpoint: format!("http://127.0.0.1:{port}"),
            token: None,
        },
        vm::GuestConfig {
            name: "hung".into(),
            endpoint: proxy.endpoint.clone(),
            token: None,
        },
    ])
    .await;
    let started = Instant::now();
    let listed = adapter.list().await.expect("list");
    assert!(
        listed
            .iter()
            .all(|s| s.input == [protocol::InputRoute::Unavailable]),
        "{listed:?}"
    );
    for id in ["vm:down", "vm:hung"] {
        let e = adapter
            .attach(id.into(), None)
            .await
            .err()
            .expect("unavailable");
        assert!(
            matches!(
                e.code(),
                protocol::ErrorCode::BackendUnavailable | protocol::ErrorCode::Timeout
            ),
            "{id}: {e}"
        );
        assert!(e.to_string().contains(&id[3..]), "names the guest: {e}");
    }
    // Two reads of each with one retry and a 5 s deadline: bounded, never a hang.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    // A guest no one configured is not reached by any name.
    let e = adapter
        .attach("vm:alpha".into(), None)
        .await
        .err()
        .expect("unknown");
    assert_eq!(e.code(), protocol::ErrorCode::TargetLost);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guest_token_is_needed_and_never_shown() {
    let f = fixture();
    let _a = f.a.lock.lock().await;
    let token = f.a.token.clone().expect("alpha has a token");
    // Without it the guest refuses everything.
    let anonymous = vm::GuestClient::new(f.a.endpoint.clone(), None);
    let e = anonymous.state().await.expect_err("refused");
    assert!(
        matches!(e, vm::GuestError::Refused { ref code, .. } if code == "unauthorized"),
        "{e:?}"
    );
    let wrong = vm::GuestClient::new(f.a.endpoint.clone(), Some(vm::Token::new("0123")));
    assert!(wrong.screenshot([800, 600]).await.is_err());
    // With it, nothing the runtime could show carries it.
    let adapter = adapter(vec![f.a.config()]).await;
    let screen = attach(&adapter, "vm:alpha").await;
    let o = screen.observe(&shot()).await.expect("observe");
    let out = screen
        .act(&click(o.frame_id(), 30, 30), &act_options())
        .await
        .expect("act");
    let texts = [
        serde_json::to_string(&o).expect("json"),
        format!("{out:?}"),
        format!("{:?}", f.a.config()),
        format!("{:?}", adapter.guests()),
        format!("{:?}", adapter.list().await),
        format!("{e:?} {e}"),
    ];
    for t in &texts {
        assert!(!t.contains(token.expose()), "the token leaked: {t}");
    }
    // Nor does the host's process list (it travels in a 0600 file through fw_cfg).
    let ps = std::process::Command::new("ps")
        .args(["-eo", "args"])
        .output()
        .expect("ps");
    assert!(!String::from_utf8_lossy(&ps.stdout).contains(token.expose()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reboot_makes_old_frames_stale_and_the_attachment_void() {
    let f = fixture();
    let _b = f.b.lock.lock().await;
    let client = f.b.client();
    let adapter = adapter(vec![f.b.config()]).await;
    let screen = attach(&adapter, "vm:beta").await;
    let o = screen.observe(&shot()).await.expect("observe");
    let boot = client.state().await.expect("state").boot_id;
    // `reboot -f` answers nothing: the request is cut off with the guest.
    let _ = client.execute("reboot -f", Duration::from_secs(5)).await;
    let started = Instant::now();
    let new_boot = loop {
        if let Ok(s) = client.state().await
            && s.boot_id != boot
        {
            break s.boot_id;
        }
        assert!(started.elapsed() < Duration::from_secs(180), "no new boot");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_ne!(new_boot, boot);
    // The old frame names a boot that is gone: nothing is sent.
    let e = screen
        .act(&click(o.frame_id(), 50, 50), &act_options())
        .await
        .expect_err("void");
    assert_eq!(e.code(), protocol::ErrorCode::TargetLost, "{e}");
    assert!(screen.lost().is_some());
    let log = client.log().await.expect("log");
    assert!(log.is_empty(), "the new boot applied nothing: {log:?}");
    // A new attachment works on the new boot; its memory of the old boot is not resumed.
    let fresh = adapter
        .attach("vm:beta".into(), Some(screen.memory()))
        .await
        .expect("attach");
    assert!(fresh.latest_frame().is_none());
    let o = fresh.observe(&shot()).await.expect("observe");
    fresh
        .act(&click(o.frame_id(), 50, 50), &act_options())
        .await
        .expect("act on the new boot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_watches_a_guest_live_and_their_input_reaches_it_as_theirs() {
    let f = fixture();
    let _b = f.b.lock.lock().await;
    let client = f.b.client();
    let adapter = adapter(vec![f.b.config()]).await;
    let jpeg = adapter
        .person_image("vm:beta".into())
        .await
        .expect("an image for a person");
    assert!(jpeg.starts_with(&[0xff, 0xd8, 0xff]));
    let mut cast = adapter.person_view("vm:beta".into()).await.expect("view");
    cast.start().await.expect("start");
    let frame = tokio::time::timeout(
        Duration::from_secs(20),
        cast.next_frame(Duration::from_millis(50)),
    )
    .await
    .expect("a frame in time")
    .expect("a frame");
    assert_eq!((frame.width, frame.height), (800.0, 600.0));
    let bytes = surface::decode_base64(&frame.data).expect("base64");
    assert!(bytes.starts_with(&[0xff, 0xd8, 0xff]), "JPEG");
    let entry = cast.entry();
    assert!(entry.alive(Duration::from_secs(5)).await);
    let before = client.log().await.expect("log").len();
    for event in ["down", "up"] {
        let input: surface::PersonInput = serde_json::from_value(serde_json::json!({
            "input": "pointer", "event": event, "x": 33.0, "y": 44.0, "button": "left"
        }))
        .expect("input");
        entry.input(input).await.expect("the person's input");
    }
    let log = client.log().await.expect("log");
    let theirs: Vec<_> = log[before..].iter().collect();
    assert_eq!(theirs.len(), 2, "{theirs:?}");
    assert!(
        theirs.iter().all(|l| l.op.contains("-person-")),
        "{theirs:?}"
    );
    assert!(theirs[0].points.contains(&[33, 44]));
    // A point off the guest's screen is refused, not clamped.
    let off: surface::PersonInput = serde_json::from_value(serde_json::json!({
        "input": "pointer", "event": "move", "x": 5000.0, "y": 44.0
    }))
    .expect("input");
    let e = entry.input(off).await.expect_err("refused");
    assert_eq!(e.code(), protocol::ErrorCode::InvalidAction, "{e}");
}
