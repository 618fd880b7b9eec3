//! The browser dies with Glovebox, even on SIGKILL; a later launch sweeps the dead profile; a running
//! browser can be reused through `--browser-endpoint`.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::{data_dir, glovebox};

struct Launched {
    child: Child,
    endpoint: String,
    browser_pid: u32,
    profile: PathBuf,
}

fn launch(dir: &std::path::Path) -> Launched {
    let mut child = glovebox(dir)
        .arg("launch")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut field = |name: &str| {
        let line = lines.next().expect("launch prints its fields").unwrap();
        line.strip_prefix(&format!("{name}: "))
            .unwrap_or_else(|| panic!("expected {name}, got {line}"))
            .to_owned()
    };
    let endpoint = field("endpoint");
    let browser_pid = field("pid").parse().unwrap();
    let profile = PathBuf::from(field("profile"));
    Launched {
        child,
        endpoint,
        browser_pid,
        profile,
    }
}

fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let zombie =
            std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|s| s.contains(") Z "));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(needle) {
            pids.push(pid);
        }
    }
    pids
}

fn wait_until_gone(needle: &str, deadline: Duration) -> Vec<u32> {
    let until = Instant::now() + deadline;
    loop {
        let left = processes_mentioning(needle);
        if left.is_empty() || Instant::now() >= until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn no_chromium_survives_a_sigkilled_glovebox_and_the_next_launch_sweeps_its_profile() {
    let dir = data_dir("sigkill");
    let mut launched = launch(&dir);
    let needle = launched.profile.display().to_string();
    assert!(processes_mentioning(&needle).contains(&launched.browser_pid));
    // SAFETY: SIGKILL to the glovebox process this test spawned.
    unsafe { libc::kill(launched.child.id() as libc::pid_t, libc::SIGKILL) };
    launched.child.wait().unwrap();
    let left = wait_until_gone(&needle, Duration::from_secs(10));
    assert!(
        left.is_empty(),
        "Chromium processes outlived a SIGKILLed glovebox: {left:?}"
    );
    assert!(
        launched.profile.exists(),
        "nobody was left to delete the profile"
    );

    // The next run of glovebox removes the dead run's profile.
    let out = glovebox(&dir).arg("doctor").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!launched.profile.exists(), "the dead profile was swept");
}

#[test]
fn sigterm_stops_the_browser_and_removes_the_profile() {
    let dir = data_dir("sigterm");
    let mut launched = launch(&dir);
    // SAFETY: SIGTERM to the glovebox process this test spawned.
    unsafe { libc::kill(launched.child.id() as libc::pid_t, libc::SIGTERM) };
    assert!(launched.child.wait().unwrap().success());
    assert!(
        wait_until_gone(
            &launched.profile.display().to_string(),
            Duration::from_secs(10)
        )
        .is_empty()
    );
    assert!(!launched.profile.exists());
}

/// A reader that closes stdout before glovebox prints (`glovebox launch | true`) does not kill
/// glovebox mid-start (a panic there once left the browser running): it keeps going and still
/// stops cleanly.
#[test]
fn a_closed_stdout_does_not_stop_launch() {
    let dir = data_dir("closed-stdout");
    let mut child = glovebox(&dir)
        .arg("launch")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    // The browser comes up (its profile appears) although nothing reads what launch prints.
    let until = Instant::now() + Duration::from_secs(30);
    let profiles = dir.join("profiles");
    while Instant::now() < until
        && std::fs::read_dir(&profiles).map_or(true, |mut d| d.next().is_none())
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "launch is still running"
    );
    // SAFETY: SIGTERM to the glovebox process this test spawned.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    assert!(child.wait().unwrap().success());
}

#[test]
fn observe_through_a_running_browser_by_http_and_by_ws() {
    let dir = data_dir("endpoint");
    let mut launched = launch(&dir);
    let port = launched
        .endpoint
        .trim_start_matches("ws://127.0.0.1:")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    for endpoint in [
        format!("http://127.0.0.1:{port}"),
        launched.endpoint.clone(),
    ] {
        let out = glovebox(&dir)
            .args(["observe", "about:blank", "--browser-endpoint", &endpoint])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{endpoint}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("url: about:blank"));
    }
    // The shared browser is still up after our clients came and went.
    assert!(
        processes_mentioning(&launched.profile.display().to_string())
            .contains(&launched.browser_pid)
    );
    launched.child.kill().unwrap();
    launched.child.wait().unwrap();
}
