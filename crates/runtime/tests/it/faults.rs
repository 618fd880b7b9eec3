//! Faults (issue 15): a frozen browser and a browser killed mid-call. Every call and every
//! lifecycle operation ends within its deadline with a closed-set code, reports what it could not
//! finish, and leaves no tab behind once the browser can be reached again.

use std::time::Duration;

use protocol::ErrorCode;

use crate::{click, env, open, page_targets};

fn signal(pid: u32, signal: i32) {
    // SAFETY: a signal to the browser this test's runtime launched.
    unsafe { libc::kill(pid as libc::pid_t, signal) };
}

/// Fails the test if `call` is not answered in a minute (a hang, not a slow machine).
async fn answered<T>(what: &str, call: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), call).await.unwrap_or_else(|_| panic!("{what} was never answered"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_browser_fails_calls_and_cleanup_within_their_deadlines() {
    let env = env("faults-frozen", true).await;
    let (s, rt) = (&env.session, &env.runtime);
    open(rt, s, &env.server.url("/counter.html")).await.unwrap();
    open(rt, s, &env.server.url("/form.html")).await.unwrap();
    let o = rt.observe(s, None, &Default::default()).await.unwrap();
    let pid = rt.browser_pid().unwrap();
    signal(pid, libc::SIGSTOP);
    let observed = answered("observe", rt.observe(s, None, &Default::default())).await;
    // A timeout, or — when the idle detach of the tab's earlier attachment came due while the
    // browser was frozen (a loaded machine) — the detach that could not finish: both structured,
    // both within their deadlines.
    let code = observed.unwrap_err().code();
    assert!(matches!(code, ErrorCode::Timeout | ErrorCode::BackendUnavailable), "{code:?}");
    let acted = answered("act", rt.act(s, None, &click(&o, "Create account"), &Default::default(), Duration::ZERO)).await;
    assert!(matches!(acted.as_ref().unwrap_err().code(), ErrorCode::Timeout | ErrorCode::StaleObservation), "{acted:?}");
    let status = rt.status(s).unwrap();
    assert_eq!(status.tabs.len(), 2, "status needs no browser");
    // The turn's cleanup cannot close anything: it says so, keeps both records with their
    // recovery records, and returns.
    let report = answered("end_turn", rt.end_turn(s, "turn_1")).await.unwrap();
    assert!(!report.ok && report.failed.len() == 2 && report.closed.is_empty(), "{report:?}");
    assert!(rt.status(s).unwrap().pending_recoveries >= 2, "a record per failed close (and per failed detach)");
    signal(pid, libc::SIGCONT);
    // Reachable again: the retry closes both, and the browser has no tab of ours left.
    let report = answered("end_turn", rt.end_turn(s, "turn_2")).await.unwrap();
    assert!(report.ok && report.closed.len() == 2, "{report:?}");
    assert_eq!(page_targets(&env, "/counter.html").await.0 + page_targets(&env, "/form.html").await.0, 0);
    assert_eq!(rt.status(s).unwrap().pending_recoveries, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_killed_during_an_act_is_a_structured_error_and_the_tab_is_not_alive() {
    let env = env("faults-killed-act", true).await;
    let (s, rt) = (&env.session, &env.runtime);
    open(rt, s, &env.server.url("/rt/slow-click.html")).await.unwrap();
    let o = rt.observe(s, None, &Default::default()).await.unwrap();
    let pid = rt.browser_pid().unwrap();
    let killer = async {
        tokio::time::sleep(Duration::from_millis(150)).await;
        signal(pid, libc::SIGKILL);
    };
    let (slow, options) = (click(&o, "Slow"), browser::ActOptions::default());
    let (acted, ()) = tokio::join!(answered("act", rt.act(s, None, &slow, &options, Duration::ZERO)), killer);
    let code = acted.map(|_| ()).map_err(|e| e.code());
    assert!(matches!(code, Ok(()) | Err(ErrorCode::TargetLost | ErrorCode::BackendUnavailable)), "{code:?}");
    answered("the connection closes", rt.connection().closed()).await;
    // Nothing describes the dead tab as alive.
    let status = rt.status(s).unwrap();
    let observed = answered("observe", rt.observe(s, None, &Default::default())).await;
    assert!(
        matches!(observed.as_ref().map_err(|e| e.code()), Err(ErrorCode::TargetLost | ErrorCode::BackendUnavailable | ErrorCode::AmbiguousSurface)),
        "{observed:?}"
    );
    let after = rt.status(s).unwrap();
    assert!(after.tabs.iter().all(|t| !t.live), "{status:?} / {after:?}");
}
