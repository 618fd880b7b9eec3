//! Surface keys, aliases and the primary surface (cases 12–14 in part).

use protocol::{ErrorCode, SurfaceName};

use crate::env;

#[tokio::test]
async fn keys_aliases_primary_and_ambiguity() {
    let env = env("surfaces", true).await;
    let err = env
        .runtime
        .observe(&env.session, None, &Default::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::AmbiguousSurface, "no surface at all");
    let first = crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    let second = crate::open(&env.runtime, &env.session, &env.server.url("/login.html"))
        .await
        .unwrap();
    let context = env
        .runtime
        .surface_context(&env.session, "turn_1", 1)
        .await
        .unwrap();
    let json = serde_json::to_value(&context).unwrap();
    assert_eq!(
        json["primary_surface_key"], "s2",
        "the focused tab (the newest) is primary"
    );
    assert_eq!(json["alias_map"]["web:1"], "s1");
    assert_eq!(json["alias_map"]["focused"], "s2");
    assert_eq!(json["untrusted_content"], true);
    assert_eq!(json["surfaces"][0]["preview"]["title"], "Sign up");
    let web2 = env
        .runtime
        .observe(
            &env.session,
            Some(&SurfaceName::new("web:2").unwrap()),
            &Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(web2.title(), "Sign in — Fixture Bank");
    let err = env
        .runtime
        .observe(
            &env.session,
            Some(&SurfaceName::new("s9").unwrap()),
            &Default::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::UnknownSurface);
    // A surface the user closed to the agent is listed, without content.
    env.runtime
        .set_capabilities(&env.session, first, vec![])
        .unwrap();
    let context = serde_json::to_value(
        env.runtime
            .surface_context(&env.session, "turn_2", 2)
            .await
            .unwrap(),
    )
    .unwrap();
    assert!(
        context["surfaces"][0]
            .get("preview")
            .is_none_or(|p| p.is_null()),
        "{context}"
    );
    let err = env
        .runtime
        .observe(
            &env.session,
            Some(&SurfaceName::new("s1").unwrap()),
            &Default::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::CapabilityDenied);
    assert_ne!(first, second);
}

/// Keys were positions: after closing `s1`, the tab that was `s3` became `s2`, and a command for
/// `s2` reached another tab. A key names one tab for its whole life, and nothing after it.
#[tokio::test]
async fn tab_keys_stay_stable_across_a_close() {
    let env = env("surfaces-stable", true).await;
    let (s, rt) = (&env.session, &env.runtime);
    let name = |n: &str| SurfaceName::new(n).unwrap();
    let first = crate::open(rt, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    crate::open(rt, s, &env.server.url("/login.html"))
        .await
        .unwrap();
    crate::open(rt, s, &env.server.url("/table.html"))
        .await
        .unwrap();
    let title = |o: protocol::Observation| o.title().to_owned();
    let third = title(
        rt.observe(s, Some(&name("s3")), &Default::default())
            .await
            .unwrap(),
    );
    rt.close_tab(s, first).await.unwrap();
    assert_eq!(
        title(
            rt.observe(s, Some(&name("s3")), &Default::default())
                .await
                .unwrap()
        ),
        third,
        "s3 is still the third tab"
    );
    assert_eq!(
        title(
            rt.observe(s, Some(&name("web:3")), &Default::default())
                .await
                .unwrap()
        ),
        third,
        "and so is its alias"
    );
    assert_eq!(
        rt.observe(s, Some(&name("s1")), &Default::default())
            .await
            .unwrap_err()
            .code(),
        ErrorCode::UnknownSurface,
        "a closed tab's key names nothing"
    );
    let fourth = crate::open(rt, s, &env.server.url("/form.html"))
        .await
        .unwrap();
    assert_eq!(
        rt.surface_key(s, fourth).as_deref(),
        Some("s4"),
        "keys are never reused"
    );
    let context = serde_json::to_value(rt.surface_context(s, "turn_1", 1).await.unwrap()).unwrap();
    let keys: Vec<_> = context["surfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["surface_key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(keys, ["s2", "s3", "s4"]);
    assert_eq!(context["alias_map"]["web:3"], "s3");
}

#[tokio::test]
async fn sessions_are_isolated_browser_contexts() {
    let env = env("isolation", true).await;
    crate::open(&env.runtime, &env.session, &env.server.url("/form.html"))
        .await
        .unwrap();
    let other = env.runtime.create_session().await.unwrap();
    crate::open(&env.runtime, &other, &env.server.url("/form.html"))
        .await
        .unwrap();
    let conn = env.browser.connection().unwrap();
    let targets = conn
        .browser()
        .call(cdp::domains::target::GetTargets {})
        .await
        .unwrap()
        .target_infos;
    let contexts: std::collections::HashSet<_> = targets
        .iter()
        .filter(|t| t.target_type == "page")
        .filter_map(|t| t.browser_context_id.clone())
        .collect();
    assert!(
        contexts.len() >= 2,
        "each session has its own browser context: {contexts:?}"
    );
    env.runtime.close_session(&other).await.unwrap();
    assert_eq!(
        env.runtime
            .observe(&other, None, &Default::default())
            .await
            .unwrap_err()
            .code(),
        ErrorCode::UnknownSurface
    );
}

/// Issue 35: a `tab_open` that waited for a person's approval, or whose page did not load, used
/// up a key and left a `released` row, so a new user's first real tab after one approval was
/// `s2` and `status` listed tabs that never were. A tab that never came to be is nobody's.
#[tokio::test]
async fn a_tab_that_never_opened_uses_no_key_and_leaves_no_row() {
    let env = env("surfaces-no-key", false).await;
    let (s, rt) = (&env.session, &env.runtime);
    let url = env.server.url("/form.html");
    let err = rt
        .open_tab(s, &url, std::time::Duration::ZERO)
        .await
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::NeedsApproval, "{err}");
    assert!(
        rt.status(s).unwrap().tabs.is_empty(),
        "a tab waiting for a person is not listed"
    );
    // A page that does not load (nothing listens on the port) after a person allowed it.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}/", dead.local_addr().unwrap());
    drop(dead);
    let failed = crate::open(rt, s, &dead_url).await;
    assert!(failed.is_err(), "{failed:?}");
    assert!(rt.status(s).unwrap().tabs.is_empty(), "nor a failed one");
    let pending = rt.pending_approvals();
    assert_eq!(pending.len(), 1, "{pending:?}");
    rt.resolve_approval(
        &pending[0].approval_id,
        runtime::ApprovalDecision::ApproveOnce,
    )
    .unwrap();
    let first = rt
        .open_tab(s, &url, std::time::Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(rt.surface_key(s, first).as_deref(), Some("s1"));
    let status = rt.status(s).unwrap();
    assert_eq!(status.tabs.len(), 1, "{:?}", status.tabs.len());
    let second = crate::open(rt, s, &env.server.url("/login.html"))
        .await
        .unwrap();
    assert_eq!(rt.surface_key(s, second).as_deref(), Some("s2"));
}

/// Every tab's page viewport is the configured size: the first tab's window is fitted around
/// the browser's own frame, and later tabs (this session's and a new session's, in another
/// browser context) are created at the size that frame needs.
#[tokio::test]
async fn every_tab_has_the_configured_viewport() {
    let data_dir = crate::data_dir("viewport-source");
    let mut launch = browser::LaunchOptions::new(&data_dir);
    launch.window_size = (1000, 640);
    let env = crate::env_on(
        "viewport",
        true,
        Some(browser::BrowserSource::Launch(launch)),
        |_| {},
    )
    .await;
    let other = env.runtime.create_session().await.unwrap();
    for (session, page) in [
        (&env.session, "/form.html"),
        (&env.session, "/login.html"),
        (&other, "/form.html"),
        (&other, "/login.html"),
    ] {
        let surface = crate::open(&env.runtime, session, &env.server.url(page))
            .await
            .unwrap();
        let key = env.runtime.surface_key(session, surface).unwrap();
        let name = SurfaceName::new(key).unwrap();
        let seen = env
            .runtime
            .observe(session, Some(&name), &Default::default())
            .await
            .unwrap();
        let viewport = seen.viewport();
        assert_eq!(
            (viewport.width, viewport.height),
            (1000.0, 640.0),
            "{page} in {session:?}"
        );
    }
}

/// `status` lists the session's open tabs and counts the closed ones: found by a long fuzz,
/// where a session's status listed every tab it had ever opened (thousands) and took 137 ms.
#[tokio::test]
async fn status_lists_open_tabs_and_counts_closed_ones() {
    let env = env("status-closed", true).await;
    let s = &env.session;
    let mut opened = Vec::new();
    for page in ["/form.html", "/login.html", "/counter.html"] {
        opened.push(
            crate::open(&env.runtime, s, &env.server.url(page))
                .await
                .unwrap(),
        );
    }
    for surface in &opened[..2] {
        env.runtime.close_tab(s, *surface).await.unwrap();
    }
    let status = env.runtime.status(s).unwrap();
    assert_eq!(status.closed_tabs, 2, "{status:?}");
    assert_eq!(status.tabs.len(), 1, "{status:?}");
    assert_eq!(status.tabs[0].surface, Some(opened[2]));
    assert!(status.tabs[0].live, "{status:?}");
}
