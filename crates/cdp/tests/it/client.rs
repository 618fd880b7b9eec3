//! Commands, events and sessions on one connection.

use std::time::Duration;

use cdp::domains::{runtime, target};
use cdp::{CdpError, ChildTargets, EventFilter};
use test_support::FixtureServer;

use crate::{eval, goto, launch_and_connect};

#[tokio::test]
async fn navigate_evaluate_and_receive_load_and_console_events_on_the_right_session() {
    let server = FixtureServer::start().await.unwrap();
    server.html("/hello", "<title>Hello fixture</title><h1>hi</h1>");
    let (_browser, conn) = launch_and_connect().await;
    let tab = conn
        .browser()
        .create_page("about:blank", None)
        .await
        .unwrap();
    goto(&tab, &server.url("/hello")).await;
    assert_eq!(eval(&tab, "document.title").await, "Hello fixture");
    assert_eq!(eval(&tab, "1+1").await, 2);

    tab.call(runtime::Enable {}).await.unwrap();
    let mut console = tab.subscribe(&["Runtime.consoleAPICalled"]);
    eval(&tab, "console.error('boom', 42)").await;
    let event = tokio::time::timeout(Duration::from_secs(5), console.recv())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(event.session_id.as_ref(), tab.id());
    let called: runtime::ConsoleApiCalled = event.parse().unwrap();
    assert_eq!(called.kind, "error");
    assert_eq!(called.args[0].value.as_ref().unwrap(), "boom");
    assert_eq!(server.requests_to("/hello").len(), 1);
}

#[tokio::test]
async fn two_tabs_never_see_each_others_commands_or_events() {
    let server = FixtureServer::start().await.unwrap();
    server
        .html("/a", "<title>A</title>")
        .html("/b", "<title>B</title>");
    let (_browser, conn) = launch_and_connect().await;
    let a = conn
        .browser()
        .create_page("about:blank", None)
        .await
        .unwrap();
    let b = conn
        .browser()
        .create_page("about:blank", None)
        .await
        .unwrap();
    assert_ne!(a.id(), b.id());
    let mut a_events = a.subscribe(&[]);
    let mut b_events = b.subscribe(&[]);
    let (url_a, url_b) = (server.url("/a"), server.url("/b"));
    tokio::join!(goto(&a, &url_a), goto(&b, &url_b));
    // Interleave many evaluations on both tabs; each answer must come from its own page.
    let mut checks = Vec::new();
    for i in 0..50 {
        let (a, b) = (a.clone(), b.clone());
        checks.push(tokio::spawn(async move {
            let expression = format!("document.title + {i}");
            let (x, y) = tokio::join!(eval(&a, &expression), eval(&b, &expression));
            assert_eq!(x, format!("A{i}"));
            assert_eq!(y, format!("B{i}"));
        }));
    }
    for check in checks {
        check.await.unwrap();
    }
    // Every event each stream got belongs to its own session.
    for (stream, id) in [
        (&mut a_events, a.id().cloned()),
        (&mut b_events, b.id().cloned()),
    ] {
        let mut seen = 0;
        while let Ok(Some(Ok(event))) =
            tokio::time::timeout(Duration::from_millis(100), stream.recv()).await
        {
            assert_eq!(event.session_id, id);
            seen += 1;
        }
        assert!(seen > 0, "each tab saw its own load events");
    }
}

#[tokio::test]
async fn a_command_past_its_deadline_times_out_and_the_connection_stays_usable() {
    let (_browser, conn) = launch_and_connect().await;
    let tab = conn
        .browser()
        .create_page("about:blank", None)
        .await
        .unwrap();
    let slow = runtime::Evaluate::value("new Promise(r => setTimeout(() => r(7), 1500))");
    let started = std::time::Instant::now();
    let err = tab
        .call_with(slow, Duration::from_millis(200))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CdpError::Timeout { ref method, .. } if method == "Runtime.evaluate"),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(eval(&tab, "1+1").await, 2);
    // The late reply to the timed-out command arrives and is dropped without disturbing later ones.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(eval(&tab, "2+2").await, 4);
}

#[tokio::test]
async fn a_dropped_command_future_is_cancelled_and_forgotten() {
    let (_browser, conn) = launch_and_connect().await;
    let tab = conn
        .browser()
        .create_page("about:blank", None)
        .await
        .unwrap();
    let never = tab.call(runtime::Evaluate::value("new Promise(() => {})"));
    assert!(
        tokio::time::timeout(Duration::from_millis(100), never)
            .await
            .is_err()
    );
    assert_eq!(eval(&tab, "3").await, 3);
}

#[tokio::test]
async fn protocol_errors_are_typed() {
    let (_browser, conn) = launch_and_connect().await;
    let err = conn
        .browser()
        .send_raw(
            "No.suchMethod",
            serde_json::json!({}),
            Duration::from_secs(5),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, CdpError::Protocol { code: -32601, .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn out_of_process_iframes_attach_as_their_own_flattened_sessions() {
    let server = FixtureServer::start().await.unwrap();
    // 127.0.0.1 and localhost are different sites, so the child runs in its own process.
    server.html("/child", "<title>child</title><p id=c>inside</p>");
    server.html(
        "/parent",
        format!(
            "<title>parent</title><iframe src='{}'></iframe>",
            server.url_on_host("localhost", "/child")
        ),
    );
    let (_browser, conn) = launch_and_connect().await;
    let tab = conn
        .browser()
        .create_page("about:blank", None)
        .await
        .unwrap();
    let children = ChildTargets::enable(&tab).await.unwrap();
    goto(&tab, &server.url("/parent")).await;
    let found = children
        .wait_until(Duration::from_secs(10), |c| {
            c.iter().any(|c| c.info.target_type == "iframe")
        })
        .await;
    assert!(
        found,
        "the cross-site iframe attached: {:?}",
        children.list()
    );
    let frame = children
        .list()
        .into_iter()
        .find(|c| c.info.target_type == "iframe")
        .unwrap();
    assert_eq!(frame.parent.as_ref(), tab.id());
    let text = eval(
        &frame.session,
        "new Promise(r => { const f = () => document.getElementById('c') ? r(document.getElementById('c').textContent) : setTimeout(f, 10); f(); })",
    )
    .await;
    assert_eq!(text, "inside");
    // The page session itself cannot see into the other process's document.
    assert_eq!(eval(&tab, "document.title").await, "parent");
}

#[tokio::test]
async fn a_slow_subscriber_is_told_it_lagged() {
    let (_browser, conn) = launch_and_connect().await;
    let tab = conn
        .browser()
        .create_page("about:blank", None)
        .await
        .unwrap();
    tab.call(runtime::Enable {}).await.unwrap();
    let conn2 = tab.connection().clone();
    let mut small = conn2
        .subscribe(EventFilter::session(tab.id().cloned()).methods(["Runtime.consoleAPICalled"]));
    // The default capacity is 1024; overflow it without reading.
    eval(&tab, "for (let i = 0; i < 1500; i++) console.log(i)").await;
    // Make sure the events have arrived: a round trip after them.
    eval(&tab, "0").await;
    let first = small.recv().await.unwrap();
    match first {
        Err(lagged) => assert!(lagged.count >= 400, "{lagged:?}"),
        Ok(_) => {
            // Lag is reported before waiting; a first event can only come if nothing was dropped.
            panic!("expected a lag report first");
        }
    }
    let next = small.recv().await.unwrap().unwrap();
    assert_eq!(next.method, "Runtime.consoleAPICalled");
}

#[tokio::test]
async fn created_targets_are_listed_and_closed() {
    let (_browser, conn) = launch_and_connect().await;
    let tab = conn
        .browser()
        .create_page("about:blank", None)
        .await
        .unwrap();
    let id = tab.target_id().cloned().unwrap();
    let listed = conn.browser().call(target::GetTargets {}).await.unwrap();
    assert!(
        listed
            .target_infos
            .iter()
            .any(|t| t.target_id.as_ref() == Some(&id) && t.attached)
    );
    assert!(tab.close_target().await.unwrap());
    let err = tab
        .call_with(runtime::Evaluate::value("1"), Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(
        matches!(err, CdpError::Detached { .. }),
        "commands to a closed target fail typed and at once: {err:?}"
    );
}

#[tokio::test]
async fn close_ends_this_connection_and_its_sessions_but_not_the_browser() {
    // A second connection needs the DevTools port (a piped browser has one connection).
    let browser = crate::launch_with_port().await;
    let conn = browser
        .connect(cdp::ConnectionOptions::default())
        .await
        .unwrap();
    let tab = conn
        .browser()
        .create_page("about:blank", None)
        .await
        .unwrap();
    let target = tab.target_id().cloned().unwrap();
    let mut events = tab.subscribe(&[]);
    conn.close();
    conn.close();
    assert!(conn.closed_reason().is_some());
    assert!(matches!(eval_err(&tab).await, CdpError::Closed { .. }));
    assert!(
        tokio::time::timeout(Duration::from_secs(5), events.recv())
            .await
            .unwrap()
            .is_none(),
        "event streams end"
    );
    // The browser and its tab live on, and nothing is attached to the tab any more.
    let other = browser
        .connect(cdp::ConnectionOptions::default())
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let targets = other
            .browser()
            .call(target::GetTargets {})
            .await
            .unwrap()
            .target_infos;
        let page = targets
            .iter()
            .find(|t| t.target_id.as_ref() == Some(&target))
            .expect("the tab is still open");
        if !page.attached {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the closed connection's session is never detached"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn eval_err(session: &cdp::Session) -> CdpError {
    session
        .call(runtime::Evaluate::value("1"))
        .await
        .unwrap_err()
}
