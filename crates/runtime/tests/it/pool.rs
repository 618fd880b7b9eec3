//! Issue 34's browser pool beneath the runtime, on three real local Chromiums: sessions spread
//! over the least loaded browser; past every browser's cap one session may wait in the queue
//! (and gets the place a closed session frees) while another is refused at once, and a wait
//! that finds no room ends `backend_unavailable` with when to retry — never a hang; a browser
//! killed fails only its own session (a named code, not `internal`), the others go on, and a
//! new session gets the browser once the pool has brought it back.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use protocol::ErrorCode;
use runtime::{Runtime, RuntimeConfig};
use test_support::FixtureServer;

use crate::data_dir;

async fn observe_ok(rt: &Runtime, session: &protocol::SessionId) -> bool {
    rt.observe(session, None, &Default::default()).await.is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_spreads_sessions_fails_only_a_dead_browsers_and_refuses_when_full() {
    let server = FixtureServer::start().await.unwrap();
    server.dir(
        "/",
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"),
    );
    let dir = data_dir("pool");
    let pool = browser::Pool::new(
        (0..3).map(|_| browser::Chromium::local(&dir)).collect(),
        browser::PoolLimits {
            sessions_per_browser: 1,
            queue: 1,
            wait: Duration::from_secs(2),
        },
    );
    let mut config = RuntimeConfig::new(&dir);
    config
        .trust
        .trusted_origins
        .push(policy::Origin::parse(&server.origin()).unwrap());
    let rt = Runtime::start(config, pool.clone()).await.unwrap();
    let pids = pool.pids();
    assert!(pids.iter().all(Option::is_some), "{pids:?}");
    assert_eq!(
        pids.iter().collect::<std::collections::HashSet<_>>().len(),
        3,
        "three browsers"
    );

    // Spread: one session on each browser.
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let s = rt.create_session().await.unwrap();
        rt.open_tab(&s, &server.url("/form.html"), Duration::ZERO)
            .await
            .unwrap();
        sessions.push(s);
    }
    assert_eq!(pool.loads(), vec![1, 1, 1]);
    let metrics = rt.metrics_text();
    for m in ["m0", "m1", "m2"] {
        assert!(
            metrics.contains(&format!("glovebox_pool_sessions{{browser=\"{m}\"}} 1\n"))
                && metrics.contains(&format!("glovebox_pool_browser_up{{browser=\"{m}\"}} 1\n"))
                && metrics.contains(&format!("glovebox_pool_capacity{{browser=\"{m}\"}} 1\n")),
            "{metrics}"
        );
    }

    // Full: one waits in the queue, the next is refused at once, with when to retry.
    let waiting = {
        let rt = rt.clone();
        tokio::spawn(async move { rt.create_session().await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        rt.metrics_text().contains("glovebox_pool_waiting 1\n"),
        "one session waits"
    );
    let started = Instant::now();
    let refused = rt.create_session().await.expect_err("the queue is full");
    assert_eq!(refused.code(), ErrorCode::BackendUnavailable, "{refused}");
    assert!(refused.to_string().contains("retry in"), "{refused}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "refused at once"
    );
    // A closed session frees its place for the one waiting.
    rt.close_session(&sessions.remove(0)).await.unwrap();
    let placed = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("no hang")
        .unwrap()
        .expect("the waiting session got the freed place");
    rt.open_tab(&placed, &server.url("/form.html"), Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(pool.loads(), vec![1, 1, 1]);
    // A wait that finds no room ends within the pool's wait.
    let started = Instant::now();
    let full = tokio::time::timeout(Duration::from_secs(10), rt.create_session())
        .await
        .expect("no hang")
        .expect_err("no room");
    assert_eq!(full.code(), ErrorCode::BackendUnavailable, "{full}");
    assert!(started.elapsed() >= Duration::from_secs(2), "it waited");

    // The second browser dies: only its session fails, with a named code.
    let victim = pids[1].unwrap();
    assert!(
        std::process::Command::new("kill")
            .args(["-KILL", &victim.to_string()])
            .status()
            .unwrap()
            .success()
    );
    let on_m1 = sessions[0].clone(); // created second: on m1
    let deadline = Instant::now() + Duration::from_secs(15);
    let failed = loop {
        match rt.observe(&on_m1, None, &Default::default()).await {
            Err(e) => break e,
            Ok(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Ok(_) => panic!("the dead browser's session still observes"),
        }
    };
    assert!(
        matches!(
            failed.code(),
            ErrorCode::TargetLost | ErrorCode::BackendUnavailable
        ),
        "{failed}"
    );
    assert!(observe_ok(&rt, &placed).await, "m0's session goes on");
    assert!(observe_ok(&rt, &sessions[1]).await, "m2's session goes on");

    // The pool brings the browser back; a new session gets it (the others are full).
    let started = Instant::now();
    let fresh = loop {
        match rt.create_session().await {
            Ok(s) => break s,
            Err(e) if started.elapsed() < Duration::from_secs(30) => {
                assert_eq!(e.code(), ErrorCode::BackendUnavailable, "{e}");
            }
            Err(e) => panic!("the browser never came back: {e}"),
        }
    };
    rt.open_tab(&fresh, &server.url("/form.html"), Duration::ZERO)
        .await
        .unwrap();
    assert!(observe_ok(&rt, &fresh).await);
    let after = pool.pids();
    assert!(after[1].is_some() && after[1] != Some(victim), "{after:?}");
    assert_eq!(after[0], pids[0]);
    assert_eq!(after[2], pids[2]);

    // Every browser's CDP round trips are in the pool's metrics.
    let metrics = rt.metrics_text();
    assert!(
        metrics.contains("glovebox_backend_up{kind=\"web_tab\"} 1"),
        "{metrics}"
    );
    rt.shutdown(Duration::from_secs(5)).await;
    // Shut down stays down: no browser of the pool is brought back afterwards.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for pid in pool.pids().into_iter().flatten() {
        let alive =
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "));
        assert!(!alive, "browser {pid} runs after the shutdown");
    }
    drop(Arc::clone(&pool));
}

/// Every browser of a pool dies at once: the pool is down (the runtime's own reconnect and the
/// pool's health task bring the browsers back without launching one twice), the old sessions
/// fail with named codes, and a new session works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_whose_every_browser_died_comes_back_for_new_sessions() {
    let server = FixtureServer::start().await.unwrap();
    server.dir(
        "/",
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"),
    );
    let dir = data_dir("pool-all-down");
    let pool = browser::Pool::new(
        (0..2).map(|_| browser::Chromium::local(&dir)).collect(),
        browser::PoolLimits::default(),
    );
    let mut config = RuntimeConfig::new(&dir);
    config
        .trust
        .trusted_origins
        .push(policy::Origin::parse(&server.origin()).unwrap());
    let rt = Runtime::start(config, pool.clone()).await.unwrap();
    let old = rt.create_session().await.unwrap();
    rt.open_tab(&old, &server.url("/form.html"), Duration::ZERO)
        .await
        .unwrap();
    let before = pool.pids();
    for pid in before.iter().flatten() {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let started = Instant::now();
    let failed = loop {
        match rt.observe(&old, None, &Default::default()).await {
            Err(e) => break e,
            Ok(_) if started.elapsed() < Duration::from_secs(15) => {
                tokio::time::sleep(Duration::from_millis(100)).await
            }
            Ok(_) => panic!("a session on a dead pool still observes"),
        }
    };
    assert_ne!(failed.code(), ErrorCode::Internal, "{failed}");
    let fresh = loop {
        match rt.create_session().await {
            Ok(s) => match rt
                .open_tab(&s, &server.url("/form.html"), Duration::ZERO)
                .await
            {
                Ok(_) => break s,
                Err(e) if started.elapsed() < Duration::from_secs(30) => {
                    assert_ne!(e.code(), ErrorCode::Internal, "{e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => panic!("no tab after the pool came back: {e}"),
            },
            Err(e) if started.elapsed() < Duration::from_secs(30) => {
                assert_ne!(e.code(), ErrorCode::Internal, "{e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("the pool never came back: {e}"),
        }
    };
    assert!(observe_ok(&rt, &fresh).await);
    // Two browsers again, both new: none launched twice.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let after = pool.pids();
    assert!(
        after.iter().all(|p| p.is_some()) && after.iter().zip(&before).all(|(a, b)| a != b),
        "{before:?} -> {after:?}"
    );
    // Browser processes (not their helpers, `--type=…`) with a profile of this data dir.
    let profiles = format!("--user-data-dir={}", dir.join("profiles").display());
    let roots = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&profiles) && !c.contains("--type="))
        .count();
    assert_eq!(roots, 2, "two browser processes, not more");
    rt.shutdown(Duration::from_secs(5)).await;
}

/// Sessions placed at the same moment never pass a cap: each takes its place before its context
/// is made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_started_at_once_take_separate_places() {
    let dir = data_dir("pool-at-once");
    let pool = browser::Pool::new(
        (0..2).map(|_| browser::Chromium::local(&dir)).collect(),
        browser::PoolLimits {
            sessions_per_browser: 1,
            queue: 0,
            wait: Duration::from_secs(1),
        },
    );
    let rt = Runtime::start(RuntimeConfig::new(&dir), pool.clone())
        .await
        .unwrap();
    let (a, b) = tokio::join!(rt.create_session(), rt.create_session());
    assert!(a.is_ok() && b.is_ok(), "{a:?} {b:?}");
    assert_eq!(pool.loads(), vec![1, 1]);
    let third = rt.create_session().await.expect_err("full, no queue");
    assert_eq!(third.code(), ErrorCode::BackendUnavailable, "{third}");
    rt.shutdown(Duration::from_secs(5)).await;
}
