//! Discovery errors, profile clean-up and no orphan processes.

use std::path::PathBuf;
use std::time::Duration;

use cdp::launch::{LaunchOptions, find_chromium, sweep_dead_profiles};
use cdp::{Browser, LaunchError};

use crate::{data_dir, launch, wait_until_gone};

#[tokio::test]
async fn no_chromium_process_remains_after_the_browser_is_dropped() {
    let browser = launch().await;
    let profile = browser.profile_dir().to_path_buf();
    let needle = profile.display().to_string();
    assert!(
        !crate::processes_mentioning(&needle).is_empty(),
        "the browser runs"
    );
    drop(browser);
    let left = wait_until_gone(&needle, Duration::from_secs(10)).await;
    assert!(left.is_empty(), "orphans: {left:?}");
    assert!(!profile.exists(), "the profile directory is removed");
}

#[tokio::test]
async fn a_missing_binary_names_what_was_tried_and_how_to_install() {
    // A binary someone named is the one meant: nothing else on the machine is run instead.
    let err = find_chromium(Some(&PathBuf::from("/nonexistent/chrome"))).unwrap_err();
    assert!(matches!(err, LaunchError::NamedMissing { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("/nonexistent/chrome") && text.contains("apt-get install -y chromium"),
        "{text}"
    );
    // A bare name is looked up on PATH, and is refused when it is not there either.
    let err = find_chromium(Some(&PathBuf::from("no-such-chrome-anywhere"))).unwrap_err();
    assert!(matches!(err, LaunchError::NamedMissing { .. }), "{err:?}");
    let mut options = LaunchOptions::new(data_dir());
    options.executable = Some(PathBuf::from("/bin/false"));
    match Browser::launch(&options).await {
        Err(LaunchError::Exited { .. }) => {}
        other => panic!("a binary that exits at once is reported as such: {other:?}"),
    }
}

#[tokio::test]
async fn profiles_of_dead_processes_are_swept_and_live_ones_kept() {
    let profiles = data_dir().join("sweep-test");
    std::fs::create_dir_all(&profiles).unwrap();
    // A pid that cannot exist (above pid_max) stands for a dead Glovebox process.
    let dead = profiles.join("chromium-4194305-1");
    let mine = profiles.join(format!("chromium-{}-1", std::process::id()));
    let unrelated = profiles.join("notes");
    for dir in [&dead, &mine, &unrelated] {
        std::fs::create_dir_all(dir).unwrap();
    }
    sweep_dead_profiles(&profiles);
    assert!(!dead.exists());
    assert!(mine.exists());
    assert!(unrelated.exists());
    std::fs::remove_dir_all(&profiles).unwrap();
}

/// Issue 29: a launched browser inherited Glovebox's whole environment — a model key set for
/// the agent reached Chromium and every process it starts. It gets what a browser needs only.
#[tokio::test]
async fn no_secret_of_this_process_reaches_the_browsers_environment() {
    // SAFETY: this test binary's only writer of this variable; nothing reads it concurrently.
    unsafe { std::env::set_var("GLOVEBOX_TEST_PROVIDER_API_KEY", "sk-live-do-not-leak-7f3") };
    let browser = launch().await;
    let environ = std::fs::read(format!("/proc/{}/environ", browser.pid())).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    assert!(
        !environ.contains("sk-live-do-not-leak-7f3"),
        "the key reached the browser"
    );
    assert!(
        environ.split('\0').any(|v| v.starts_with("PATH=")),
        "what it needs stays: {environ}"
    );
}

/// Issue 29: a launched browser listened on a DevTools port, so any local process could attach
/// to it and drive the agent's tabs around Glovebox. It is driven over its pipe: none of its
/// processes listens on any TCP port, it wrote no port file, and its one connection cannot be
/// opened twice.
#[tokio::test]
async fn a_launched_browser_listens_on_no_port_and_has_one_connection() {
    let (browser, conn) = crate::launch_and_connect().await;
    // It answers over the pipe, with pages and all.
    let page = conn
        .browser()
        .create_page("about:blank", None)
        .await
        .unwrap();
    assert_eq!(crate::eval(&page, "6 * 7").await, 42);
    assert_eq!(browser.ws_url(), None);
    assert!(!browser.profile_dir().join("DevToolsActivePort").exists());
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", browser.pid())).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline);
    assert!(cmdline.contains("--remote-debugging-pipe"), "{cmdline}");
    assert!(!cmdline.contains("--remote-debugging-port"), "{cmdline}");

    let listening = listening_socket_inodes();
    let group = browser.pid() as i32;
    let mut members = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: getpgid only reads the process table.
        if unsafe { libc::getpgid(pid) } != group {
            continue;
        }
        members += 1;
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let link = link.display().to_string();
            if let Some(inode) = link
                .strip_prefix("socket:[")
                .and_then(|l| l.strip_suffix(']'))
            {
                assert!(
                    !listening.contains(inode),
                    "browser process {pid} listens on a TCP socket ({link})"
                );
            }
        }
    }
    assert!(members >= 2, "the browser and its helpers were looked at");

    let again = browser
        .connect(cdp::ConnectionOptions::default())
        .await
        .unwrap_err();
    assert!(again.to_string().contains("one connection"), "{again}");
}

/// The inodes of every listening TCP socket on this machine (IPv4 and IPv6).
fn listening_socket_inodes() -> std::collections::HashSet<String> {
    let mut inodes = std::collections::HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // `st` 0A is LISTEN; the inode is the tenth field.
            if fields.get(3) == Some(&"0A")
                && let Some(inode) = fields.get(9)
            {
                inodes.insert((*inode).to_owned());
            }
        }
    }
    inodes
}

#[test]
fn a_distribution_launcher_script_is_replaced_by_the_binary_it_runs() {
    // Debian's /usr/bin/chromium is a shell script that execs /usr/lib/chromium/chromium.
    let launcher = std::path::Path::new("/usr/bin/chromium");
    let binary = std::path::Path::new("/usr/lib/chromium/chromium");
    let is_script = std::fs::read(launcher).is_ok_and(|bytes| bytes.starts_with(b"#!"));
    if !is_script || !binary.exists() || std::env::var_os(cdp::launch::CHROMIUM_ENV).is_some() {
        eprintln!("skipped: no Debian launcher script here");
        return;
    }
    assert_eq!(find_chromium(None).unwrap(), binary, "found on PATH");
    // A path given explicitly is used as given, script or not; so is a bare name, found on PATH.
    assert_eq!(find_chromium(Some(launcher)).unwrap(), launcher);
    assert_eq!(
        find_chromium(Some(std::path::Path::new("chromium"))).unwrap(),
        launcher
    );
}

/// Chromium's headless shell (`make test` installs Debian's `chromium-headless-shell` beside
/// `chromium`) leaves site isolation off; Glovebox launches it with it on, so a cross-site frame
/// runs in a renderer of its own and attaches as its own session, as in `chromium`. It shows no
/// window, so a headed launch of it is refused with what to use instead.
#[tokio::test]
async fn the_headless_shell_runs_with_site_isolation_and_is_never_launched_headed() {
    let shell = PathBuf::from("/usr/lib/chromium/chromium-headless-shell");
    assert!(
        shell.exists(),
        "no {}: `make test` installs Debian's chromium-headless-shell (scripts/ensure-chromium.sh)",
        shell.display()
    );
    assert!(cdp::launch::is_headless_shell(&shell));
    // Debian's /usr/bin wrapper runs it as a child without `exec` (it would outlive a killed
    // Glovebox): the binary is launched instead, even when the wrapper is named.
    assert_eq!(
        find_chromium(Some(std::path::Path::new(
            "/usr/bin/chromium-headless-shell"
        )))
        .unwrap(),
        shell
    );
    assert!(!cdp::launch::is_headless_shell(&PathBuf::from(
        "/usr/lib/chromium/chromium"
    )));
    let mut options = LaunchOptions::new(data_dir());
    options.executable = Some(shell);
    options.headless = false;
    match Browser::launch(&options).await {
        Err(e @ LaunchError::HeadedShell { .. }) => {
            assert!(e.to_string().contains("needs `chromium`"), "{e}")
        }
        other => panic!("a headed shell is refused: {other:?}"),
    }
    options.headless = true;
    let browser = Browser::launch(&options).await.expect("the shell launches");
    let conn = browser
        .connect(cdp::ConnectionOptions::default())
        .await
        .expect("connects");
    let server = test_support::FixtureServer::start().await.unwrap();
    server.html("/child", "<title>child</title><p>inside</p>");
    server.html(
        "/parent",
        format!(
            "<title>parent</title><iframe src='{}'></iframe>",
            server.url_on_host("localhost", "/child")
        ),
    );
    let tab = conn
        .browser()
        .create_page("about:blank", None)
        .await
        .unwrap();
    let children = cdp::ChildTargets::enable(&tab).await.unwrap();
    crate::goto(&tab, &server.url("/parent")).await;
    let isolated = children
        .wait_until(Duration::from_secs(10), |c| {
            c.iter().any(|c| c.info.target_type == "iframe")
        })
        .await;
    assert!(
        isolated,
        "the cross-site frame has its own renderer: {:?}",
        children.list()
    );
}
