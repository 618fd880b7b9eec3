//! `doctor` and `observe` as a user runs them.

use test_support::FixtureServer;

use crate::{data_dir, glovebox};

#[test]
fn doctor_finds_launches_and_reports() {
    let out = glovebox(&data_dir("doctor"))
        .arg("doctor")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for expected in [
        "data dir",
        "chromium",
        "sandbox",
        "version",
        "ok: Glovebox can drive this browser",
    ] {
        assert!(
            stdout.contains(expected),
            "doctor output lacks {expected:?}:\n{stdout}"
        );
    }
}

#[test]
fn doctor_names_the_fix_when_chromium_is_missing() {
    let out = glovebox(&data_dir("doctor-missing"))
        .args(["doctor", "--chromium", "/nonexistent/chromium"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The binary named is the one meant: no other Chromium on the machine is run instead.
    assert!(!out.status.success(), "{stdout}");
    for expected in [
        "/nonexistent/chromium",
        "GLOVEBOX_CHROMIUM",
        "apt-get install -y chromium",
    ] {
        assert!(stdout.contains(expected), "lacks {expected:?}: {stdout}");
    }
    // Named in the config file: doctor checks that binary, the one a launch would use.
    let dir = data_dir("doctor-missing-config");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("config.toml");
    std::fs::write(&config, "chromium = \"/nonexistent/from-config\"\n").unwrap();
    let out = glovebox(&dir)
        .args(["doctor"])
        .env("GLOVEBOX_CONFIG", &config)
        .env_remove("GLOVEBOX_CHROMIUM")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("chromium   not found"), "{stdout}");
    assert!(stdout.contains("/nonexistent/from-config"), "{stdout}");
}

/// A failure's reason is said once, not once per layer that wraps it.
#[tokio::test]
async fn a_failure_says_its_reason_once() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = data_dir("reason-once");
    let (serve, observe) = tokio::task::spawn_blocking(move || {
        let serve = glovebox(&dir)
            .args(["serve", "--bind", &addr])
            .output()
            .unwrap();
        // Chromium refuses port 1 itself (net::ERR_UNSAFE_PORT): a browser's reason, through
        // the runtime's error and the command's context.
        let observe = glovebox(&dir)
            .args(["observe", "http://127.0.0.1:1/"])
            .output()
            .unwrap();
        (serve, observe)
    })
    .await
    .unwrap();
    drop(taken);
    for (out, reason) in [
        (serve, "Address already in use"),
        (observe, "ERR_UNSAFE_PORT"),
    ] {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert_eq!(stderr.matches(reason).count(), 1, "{stderr}");
    }
}

#[tokio::test]
async fn observe_prints_title_and_url_of_a_fixture_page() {
    let server = FixtureServer::start().await.unwrap();
    server.html("/page", "<title>Fixture title</title><p>hello</p>");
    let url = server.url("/page");
    let dir = data_dir("observe");
    let out = tokio::task::spawn_blocking(move || {
        glovebox(&dir).args(["observe", &url]).output().unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("title: Fixture title"), "{stdout}");
    assert!(
        stdout.contains(&format!("url: {}", server.url("/page"))),
        "{stdout}"
    );
    assert_eq!(server.requests_to("/page").len(), 1);
}

/// Issue 34: `--browser-pool` through a user's command: a pool of a local browser and an
/// endpoint nobody answers starts on the one that is up and observes; a member that is neither
/// `local` nor an endpoint is refused by name.
#[tokio::test]
async fn observe_runs_on_a_browser_pool_with_a_member_down() {
    let server = FixtureServer::start().await.unwrap();
    server.html("/page", "<title>Pooled</title><p>hello</p>");
    let url = server.url("/page");
    let dir = data_dir("observe-pool");
    let (out, bad) = tokio::task::spawn_blocking(move || {
        let out = glovebox(&dir)
            .args([
                "--browser-pool",
                "http://127.0.0.1:1,local",
                "observe",
                &url,
            ])
            .output()
            .unwrap();
        let bad = glovebox(&dir)
            .args(["--browser-pool", "local,ftp://x", "observe", &url])
            .output()
            .unwrap();
        (out, bad)
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("title: Pooled"), "{stdout}");
    // doctor names each browser of the pool and whether it is reachable now.
    let dir = data_dir("doctor-pool");
    let doctor = tokio::task::spawn_blocking(move || {
        glovebox(&dir)
            .args(["--browser-pool", "http://127.0.0.1:1,local", "doctor"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let said = String::from_utf8_lossy(&doctor.stdout);
    assert!(said.contains("pool       2 browsers"), "{said}");
    assert!(
        said.contains("m0       http://127.0.0.1:1: NOT reachable"),
        "{said}"
    );
    assert!(said.contains("m1       local: reachable"), "{said}");
    assert!(!bad.status.success());
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(
        said.contains("\"ftp://x\" is neither `local` nor an endpoint"),
        "{said}"
    );
}

/// `glovebox observe` bypassed the runtime and ignored the configured origin lists.
#[tokio::test]
async fn observe_keeps_to_the_configured_blocked_origins() {
    let server = FixtureServer::start().await.unwrap();
    server.html("/page", "<title>Blocked</title><p>hello</p>");
    let (url, origin) = (server.url("/page"), server.origin());
    let dir = data_dir("observe-blocked");
    let out = tokio::task::spawn_blocking(move || {
        glovebox(&dir)
            .args(["--block-origin", &origin, "observe", &url])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("refusing to open"), "{stderr}");
    assert!(server.requests_to("/page").is_empty(), "nothing was loaded");
}

#[test]
fn observe_refuses_forbidden_schemes_before_starting_a_browser() {
    for url in [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "data:text/html,hi",
        "chrome://settings",
    ] {
        let out = glovebox(&data_dir("observe-refuse"))
            .args(["observe", url])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("refusing to open"), "{url}: {stderr}");
    }
}

#[test]
fn observe_demo_serves_and_reads_the_builtin_page() {
    let out = glovebox(&data_dir("demo"))
        .args(["observe", "--demo"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("title: Glovebox demo"), "{stdout}");
}

#[test]
fn observe_prints_a_redacted_snapshot_json_and_a_screenshot() {
    let dir = data_dir("observe-json");
    let shot = dir.join("shot.png");
    let out = glovebox(&dir)
        .args(["observe", "--demo", "--json", "--screenshot"])
        .arg(&shot)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let observation: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(observation["untrusted_content"], true);
    assert!(
        observation["frame_id"]
            .as_str()
            .unwrap()
            .starts_with("frame_")
    );
    assert!(
        !stdout.contains("hunter2") && !stdout.contains("abc123"),
        "secrets never reach the output"
    );
    assert!(
        observation["aria_snapshot"]
            .as_str()
            .unwrap()
            .contains("textbox \"Password\" [e2]: \"[redacted]\"")
    );
    assert!(
        observation.get("screenshot").is_none(),
        "the image goes to the file, not stdout"
    );
    assert_eq!(observation["screenshot_size"]["width"], 1280);
    // The configured size is the page's viewport, not the window's (which includes the frame).
    assert_eq!(
        (
            observation["viewport"]["width"].as_f64(),
            observation["viewport"]["height"].as_f64()
        ),
        (Some(1280.0), Some(720.0))
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
}

#[test]
fn observe_honours_the_configured_viewport() {
    let out = glovebox(&data_dir("observe-viewport"))
        .args(["--viewport", "1000x700", "observe", "--demo", "--json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let observation: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (
            observation["viewport"]["width"].as_f64(),
            observation["viewport"]["height"].as_f64()
        ),
        (Some(1000.0), Some(700.0))
    );
}

#[test]
fn demo_runs_a_verified_task_and_asks_the_person_on_the_terminal() {
    let out = glovebox(&data_dir("demo-run"))
        .args(["demo", "--answer", "task"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (result["status"].as_str(), result["reason_code"].as_str()),
        (Some("succeeded"), Some("verified"))
    );

    // A person who denies on the terminal: nothing is typed, and the run cannot succeed.
    use std::io::Write;
    let mut child = glovebox(&data_dir("demo-deny"))
        .arg("demo")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Opening the page is asked about first (a navigation to an untrusted origin): once.
    child.stdin.take().unwrap().write_all(b"o\nd\nd\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("approve navigate http://127.0.0.1:"),
        "{stderr}"
    );
    assert!(stderr.contains("approve type textbox \"Name\""), "{stderr}");
    assert!(!out.status.success());
    let result: serde_json::Value =
        serde_json::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap();
    assert_ne!(result["status"], "succeeded");
}
