//! Connecting to an already running browser by http://host:port and by its ws URL.

use std::time::Duration;

use cdp::domains::target;
use cdp::{Connection, ConnectionOptions, endpoint};

use crate::{eval, launch_with_port};

#[tokio::test]
async fn connect_by_http_and_by_ws_without_touching_other_tabs() {
    let browser = launch_with_port().await;
    let ws_url = browser.ws_url().expect("a DevTools port was asked for");
    let port = ws_url
        .trim_start_matches("ws://127.0.0.1:")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let resolved = endpoint::resolve(&format!("http://127.0.0.1:{port}"), Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(resolved, ws_url);
    assert_eq!(
        endpoint::resolve(ws_url, Duration::from_secs(5))
            .await
            .unwrap(),
        ws_url
    );

    // The browser already has a tab we did not create (the start-up about:blank).
    let conn = Connection::connect(&resolved, ConnectionOptions::default())
        .await
        .unwrap();
    let before = conn
        .browser()
        .call(target::GetTargets {})
        .await
        .unwrap()
        .target_infos;
    let foreign: Vec<_> = before
        .iter()
        .filter(|t| t.target_type == "page")
        .cloned()
        .collect();
    assert!(!foreign.is_empty());
    let tab = conn
        .browser()
        .create_page("about:blank", None)
        .await
        .unwrap();
    assert_eq!(eval(&tab, "'mine'").await, "mine");
    let after = conn
        .browser()
        .call(target::GetTargets {})
        .await
        .unwrap()
        .target_infos;
    for t in foreign {
        let now = after
            .iter()
            .find(|a| a.target_id == t.target_id)
            .expect("foreign tab still open");
        assert!(
            !now.attached,
            "we never attached to a tab we did not create"
        );
    }
}

#[tokio::test]
async fn bad_endpoints_fail_with_a_connect_error() {
    for bad in ["ftp://x", "http://", "http://127.0.0.1:1"] {
        let err = endpoint::resolve(bad, Duration::from_secs(2))
            .await
            .unwrap_err();
        assert!(
            matches!(err, cdp::CdpError::Connect { .. }),
            "{bad}: {err:?}"
        );
    }
    let err = Connection::connect(
        "ws://127.0.0.1:1/devtools/browser/x",
        ConnectionOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, cdp::CdpError::Connect { .. }));
}
