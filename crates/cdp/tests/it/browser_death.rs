//! A browser that dies mid-command fails pending commands promptly, and the next launch works.

use std::time::{Duration, Instant};

use cdp::CdpError;
use cdp::domains::runtime;

use crate::{eval, launch_and_connect};

#[tokio::test]
async fn pending_commands_fail_promptly_when_the_browser_is_killed() {
    let (browser, conn) = launch_and_connect().await;
    let tab = conn
        .browser()
        .create_page("about:blank", None)
        .await
        .unwrap();
    let pending: Vec<_> = (0..3)
        .map(|_| {
            let tab = tab.clone();
            tokio::spawn(async move {
                tab.call(runtime::Evaluate::value("new Promise(() => {})"))
                    .await
            })
        })
        .collect();
    // Let the commands reach the browser before it dies.
    eval(&tab, "1").await;
    let killed_at = Instant::now();
    // SAFETY: sending SIGKILL to the browser process this test launched.
    unsafe { libc::kill(browser.pid() as libc::pid_t, libc::SIGKILL) };
    for handle in pending {
        let err = tokio::time::timeout(Duration::from_secs(5), handle)
            .await
            .expect("no hang")
            .unwrap()
            .unwrap_err();
        assert!(err.is_closed(), "typed close error, got {err:?}");
    }
    assert!(killed_at.elapsed() < Duration::from_secs(5));
    // Later commands fail at once, without waiting for their deadline.
    let started = Instant::now();
    let err = tab.call(runtime::Evaluate::value("1")).await.unwrap_err();
    assert!(matches!(err, CdpError::Closed { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(1));
    tokio::time::timeout(Duration::from_secs(1), conn.closed())
        .await
        .expect("closed() resolves");
    assert!(conn.closed_reason().is_some());
    drop(browser);

    // The next launch works.
    let (_browser, conn) = launch_and_connect().await;
    let tab = conn
        .browser()
        .create_page("about:blank", None)
        .await
        .unwrap();
    assert_eq!(eval(&tab, "6*7").await, 42);
}
