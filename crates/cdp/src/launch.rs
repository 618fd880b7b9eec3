//! Finding and launching a local Chromium that dies with this process.
//!
//! The browser runs in its own process group with `PR_SET_PDEATHSIG(SIGKILL)`, so it goes when
//! Glovebox goes, even on SIGKILL. [`Browser`]'s `Drop` kills the whole group, reaps the child
//! and deletes the profile. Profiles left by dead Glovebox processes are swept at the next launch.

use std::io::{Read, Seek, SeekFrom};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::{CdpError, Connection, ConnectionOptions};

/// The environment variable that names the Chromium binary to use.
pub const CHROMIUM_ENV: &str = "GLOVEBOX_CHROMIUM";

/// Names looked up on `PATH`, then absolute locations, in this order.
const PATH_NAMES: &[&str] = &[
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chrome",
];
const KNOWN_LOCATIONS: &[&str] = &[
    "/usr/bin/chromium",
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium-browser",
    "/snap/bin/chromium",
    "/usr/bin/google-chrome",
    "/opt/google/chrome/chrome",
];

/// Flags every launch gets (the README lists them and why). Background networking is off
/// because test and CI machines have no internet and Chromium would otherwise retry connections
/// forever. The omnibox's WebUI popups are off because every window Chromium opens (one per tab
/// here) loads two of them as hidden pages nobody sees: ~100 ms of CPU and ~40 ms per
/// `tab_open`.
const BASE_FLAGS: &[&str] = &[
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-default-apps",
    "--disable-dev-shm-usage",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
    "--disable-features=Translate,MediaRouter,OptimizationHints,DialMediaRouteProvider,WebUIOmniboxPopup,WebUIOmniboxAimPopup",
    "--password-store=basic",
    "--use-mock-keychain",
    "--mute-audio",
];

/// Why a local browser could not be found or started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(
        "no Chromium found; tried {}. Install it (Debian/Ubuntu: `apt-get install -y chromium`) or set {CHROMIUM_ENV}=/path/to/chrome",
        tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    NotFound { tried: Vec<PathBuf> },
    #[error(
        "no executable Chromium at {} (named with --chromium, {CHROMIUM_ENV} or the config file's `chromium`; a bare name is looked up on PATH): fix it, or leave it unset to search PATH and the usual locations (Debian/Ubuntu: `apt-get install -y chromium`)",
        path.display()
    )]
    NamedMissing { path: PathBuf },
    #[error("cannot start {}: {source}", path.display())]
    Spawn {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("Chromium exited during start-up ({status}); its last output:\n{log_tail}")]
    Exited {
        status: ExitStatus,
        log_tail: String,
    },
    #[error(
        "Chromium did not answer (on its pipe or DevTools port) within {after:?}; its last output:\n{log_tail}"
    )]
    StartTimeout { after: Duration, log_tail: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
    #[error(
        "{} is Chromium's headless shell, which shows no window: a headed browser needs `chromium` (or leave --headed off)",
        path.display()
    )]
    HeadedShell { path: PathBuf },
    #[error(transparent)]
    Connect(#[from] CdpError),
}

/// How to launch a local Chromium.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// An explicit binary; otherwise [`CHROMIUM_ENV`], `PATH` and the usual locations are tried.
    pub executable: Option<PathBuf>,
    /// Headless (default) or a visible window.
    pub headless: bool,
    /// Chromium's sandbox. It cannot run as root, so the default is on only for other users.
    pub sandbox: bool,
    /// Glovebox's data directory; profiles go under `<data_dir>/profiles/`.
    pub data_dir: PathBuf,
    /// The page viewport size in CSS pixels. Chromium starts with a window of this size; the
    /// runtime then fits each agent tab's window so that the page itself has this size.
    pub window_size: (u32, u32),
    /// Extra command-line flags.
    pub extra_args: Vec<String>,
    /// How long Chromium may take to start answering.
    pub startup_timeout: Duration,
    /// Open a DevTools port (`--remote-debugging-port`) that other processes can connect to,
    /// as `glovebox launch` does for `--browser-endpoint`. Off by default: the browser is then
    /// driven over `--remote-debugging-pipe`, its one connection opened at launch, so no local
    /// process can attach to it and act around Glovebox.
    pub debugging_port: bool,
}

impl LaunchOptions {
    /// Headless, sandboxed unless root, 1280×720, 20 s start-up deadline, driven over a pipe.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        LaunchOptions {
            executable: None,
            headless: true,
            // SAFETY: geteuid has no preconditions and cannot fail.
            sandbox: unsafe { libc::geteuid() } != 0,
            data_dir: data_dir.into(),
            window_size: (1280, 720),
            extra_args: Vec::new(),
            startup_timeout: Duration::from_secs(20),
            debugging_port: false,
        }
    }
}

/// Finds the Chromium binary: the explicit path, else `$GLOVEBOX_CHROMIUM` (either one, when
/// given, is the only one tried; a bare name is looked up on `PATH`), else `PATH`, then known
/// locations; one found on `PATH` or at a known location that is a distribution's launcher
/// script is replaced by the binary it runs ([`behind_launcher`]).
pub fn find_chromium(explicit: Option<&Path>) -> Result<PathBuf, LaunchError> {
    let mut tried = Vec::new();
    let env = std::env::var_os(CHROMIUM_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let path_dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    // A binary someone named is the one they meant: another one found instead would run the
    // wrong browser without a word. A bare name (`google-chrome`) is looked up on PATH, as a
    // shell would.
    if let Some(named) = explicit.map(Path::to_path_buf).or(env) {
        let bare = named.components().count() == 1 && !named.is_absolute();
        let found = if bare && !is_executable(&named) {
            path_dirs
                .iter()
                .map(|dir| dir.join(&named))
                .find(|candidate| is_executable(candidate))
        } else {
            Some(named.clone()).filter(|path| is_executable(path))
        };
        return found
            .map(unwrapped)
            .ok_or(LaunchError::NamedMissing { path: named });
    }
    for name in PATH_NAMES {
        for dir in &path_dirs {
            let candidate = dir.join(name);
            if is_executable(&candidate) {
                return Ok(behind_launcher(candidate));
            }
        }
        tried.push(PathBuf::from(format!("{name} on PATH")));
    }
    for location in KNOWN_LOCATIONS {
        let candidate = PathBuf::from(location);
        if is_executable(&candidate) {
            return Ok(behind_launcher(candidate));
        }
        tried.push(candidate);
    }
    Err(LaunchError::NotFound { tried })
}

/// Whether `executable` is Chromium's headless shell — the "old headless" build Debian ships as
/// `chromium-headless-shell` and Chrome for Testing as `chrome-headless-shell`: pages with no
/// browser window around them, which opens a tab in about half the time and CPU of `chromium
/// --headless` (README, "Choosing the browser"). Headless only; never found on its own, only
/// given (`--chromium`, `GLOVEBOX_CHROMIUM`).
pub fn is_headless_shell(executable: &Path) -> bool {
    executable
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.contains("headless-shell") || n.contains("headless_shell"))
}

/// Wrapper scripts that run a browser binary as their child, without `exec`, and add nothing:
/// launched through one, the browser is not Glovebox's child, so it outlives a killed Glovebox
/// and cannot be frozen or watched by its pid. Replaced by the binary even when given explicitly.
const CHILD_WRAPPERS: &[(&str, &str)] = &[(
    "/usr/bin/chromium-headless-shell",
    "/usr/lib/chromium/chromium-headless-shell",
)];

/// The binary behind `found` when it is one of [`CHILD_WRAPPERS`]; else `found`.
fn unwrapped(found: PathBuf) -> PathBuf {
    let canonical = std::fs::canonicalize(&found).unwrap_or_else(|_| found.clone());
    CHILD_WRAPPERS
        .iter()
        .find(|(wrapper, _)| canonical == Path::new(wrapper))
        .map(|(_, binary)| PathBuf::from(binary))
        .filter(|binary| is_executable(binary))
        .unwrap_or(found)
}

/// Distribution launcher scripts and the browser binary each one runs.
const LAUNCHERS: &[(&str, &str)] = &[("/usr/bin/chromium", "/usr/lib/chromium/chromium")];

/// The browser binary behind a distribution's launcher script, when `found` is one: Debian's
/// `/usr/bin/chromium` is a shell script that runs `uname`, `grep`, `find` and `expr`, sources
/// `/etc/chromium.d/`, and only then execs `/usr/lib/chromium/chromium` with flags of its own
/// added (remote extensions, GPU rasterization). Launched directly, the browser gets only
/// Glovebox's flags and starts ~25 ms sooner (`scripts/bench_mcp.py`). Anything else (a binary,
/// another script, a path given explicitly) is used as found.
fn behind_launcher(found: PathBuf) -> PathBuf {
    let Ok(canonical) = std::fs::canonicalize(&found) else {
        return found;
    };
    let Some((_, binary)) = LAUNCHERS
        .iter()
        .find(|(launcher, _)| canonical == Path::new(launcher))
    else {
        return found;
    };
    let mut head = [0u8; 2];
    let script = std::fs::File::open(&canonical)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && head == *b"#!";
    let binary = PathBuf::from(binary);
    if script && is_executable(&binary) {
        binary
    } else {
        found
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A running local Chromium owned by this process. Dropping it kills the browser and deletes its profile.
#[derive(Debug)]
pub struct Browser {
    child: Child,
    executable: PathBuf,
    profile_dir: PathBuf,
    /// The DevTools port's URL, when one was asked for.
    ws_url: Option<String>,
    /// A piped browser's one connection, until [`Browser::connect`] takes it.
    piped: std::sync::Mutex<Option<Connection>>,
}

impl Browser {
    /// Launches Chromium and waits until it answers: over its pipe, or on its DevTools port
    /// ([`LaunchOptions::debugging_port`]).
    ///
    /// A browser that dies or hangs while starting (Chromium does, now and then, under load)
    /// gets one more try with a fresh profile before the launch fails.
    pub async fn launch(options: &LaunchOptions) -> Result<Browser, LaunchError> {
        match Browser::launch_once(options).await {
            Err(first @ (LaunchError::Exited { .. } | LaunchError::StartTimeout { .. })) => {
                tracing::warn!(error = %first, "Chromium failed to start; trying once more");
                Browser::launch_once(options).await
            }
            other => other,
        }
    }

    async fn launch_once(options: &LaunchOptions) -> Result<Browser, LaunchError> {
        let executable = find_chromium(options.executable.as_deref())?;
        if !options.headless && is_headless_shell(&executable) {
            return Err(LaunchError::HeadedShell { path: executable });
        }
        let profiles = options.data_dir.join("profiles");
        std::fs::create_dir_all(&profiles).map_err(|source| LaunchError::Io {
            context: format!("cannot create {}", profiles.display()),
            source,
        })?;
        sweep_dead_profiles(&profiles);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let profile_dir = profiles.join(format!("chromium-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&profile_dir).map_err(|source| LaunchError::Io {
            context: format!("cannot create {}", profile_dir.display()),
            source,
        })?;
        let log_path = profile_dir.join("chromium.log");
        let log = std::fs::File::create(&log_path).map_err(|source| LaunchError::Io {
            context: format!("cannot create {}", log_path.display()),
            source,
        })?;

        let mut command = Command::new(&executable);
        // The browser gets the environment a browser needs, not Glovebox's: no model key, token
        // or other secret of this process reaches it (or the pages' processes it starts).
        command.env_clear();
        for (name, value) in std::env::vars_os() {
            if name.to_str().is_some_and(browser_env) {
                command.env(name, value);
            }
        }
        if options.headless {
            command.arg("--headless");
        }
        if is_headless_shell(&executable) {
            // The shell leaves site isolation off: a cross-site frame would share its page's
            // renderer. Glovebox's boundary and its frame handling assume every launch has it.
            command.arg("--site-per-process");
        }
        if !options.sandbox {
            command.arg("--no-sandbox");
        }
        command
            .args(BASE_FLAGS)
            .arg(format!("--user-data-dir={}", profile_dir.display()))
            .arg(if options.debugging_port {
                "--remote-debugging-port=0"
            } else {
                "--remote-debugging-pipe=cbor"
            })
            .arg(format!(
                "--window-size={},{}",
                options.window_size.0, options.window_size.1
            ))
            .args(&options.extra_args)
            // A headless browser driven over the pipe opens no first window: nothing runs in it
            // until a session opens a tab, and a first page's renderer no longer competes with
            // the start-up (on 2 cores it answered after ~380 ms with one, ~235 ms without). A
            // browser for other processes (`glovebox launch`) or for a person to watch (headed,
            // where closing the last window would end it) opens its usual first window.
            .arg(if options.headless && !options.debugging_port {
                "--no-startup-window"
            } else {
                "about:blank"
            })
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        // The browser reads commands on its fd 3 and writes replies and events on its fd 4.
        let pipes = if options.debugging_port {
            None
        } else {
            let io = |context: &str| {
                let context = context.to_owned();
                move |source| LaunchError::Io { context, source }
            };
            Some((
                cloexec_pipe().map_err(io("cannot create the DevTools pipe"))?,
                cloexec_pipe().map_err(io("cannot create the DevTools pipe"))?,
            ))
        };
        let child_fds = pipes
            .as_ref()
            .map(|((commands, _), (_, replies))| (commands.as_raw_fd(), replies.as_raw_fd()));
        let child =
            spawn_tied_to_process(command, child_fds).map_err(|source| LaunchError::Spawn {
                path: executable.clone(),
                source,
            })?;
        let mut browser = Browser {
            child,
            executable,
            profile_dir,
            ws_url: None,
            piped: std::sync::Mutex::new(None),
        };
        match pipes {
            None => browser.ws_url = Some(browser.wait_for_port(options.startup_timeout).await?),
            Some(((commands_child, to_browser), (from_browser, replies_child))) => {
                // The child holds its own copies now; ours would keep the pipes open past it.
                drop((commands_child, replies_child));
                let conn = Connection::over_pipe(to_browser, from_browser, Default::default())?;
                browser
                    .wait_for_pipe(&conn, options.startup_timeout)
                    .await?;
                *browser.piped.get_mut().unwrap_or_else(|p| p.into_inner()) = Some(conn);
            }
        }
        Ok(browser)
    }

    /// Waits until the browser answers on its pipe, or reports why it did not.
    async fn wait_for_pipe(
        &mut self,
        conn: &Connection,
        deadline: Duration,
    ) -> Result<(), LaunchError> {
        let asked = conn
            .browser()
            .call_with(crate::domains::browser::GetVersion {}, deadline)
            .await;
        if asked.is_ok() {
            return Ok(());
        }
        // A browser that exits closes its pipe at once; give the exit a moment to be reaped.
        for _ in 0..50 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(LaunchError::Exited {
                    status,
                    log_tail: self.log_tail(),
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Err(LaunchError::StartTimeout {
            after: deadline,
            log_tail: self.log_tail(),
        })
    }

    async fn wait_for_port(&mut self, deadline: Duration) -> Result<String, LaunchError> {
        let port_file = self.profile_dir.join("DevToolsActivePort");
        let started = Instant::now();
        let mut tick = tokio::time::interval(Duration::from_millis(10));
        loop {
            tick.tick().await;
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next())
                    && port.parse::<u16>().is_ok()
                    && path.starts_with('/')
                {
                    return Ok(format!("ws://127.0.0.1:{port}{path}"));
                }
            }
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    return Err(LaunchError::Exited {
                        status,
                        log_tail: self.log_tail(),
                    });
                }
                Ok(None) => {}
                Err(source) => {
                    return Err(LaunchError::Io {
                        context: "cannot poll Chromium".into(),
                        source,
                    });
                }
            }
            if started.elapsed() > deadline {
                return Err(LaunchError::StartTimeout {
                    after: deadline,
                    log_tail: self.log_tail(),
                });
            }
        }
    }

    /// The last 2 KiB of Chromium's own output, for error messages.
    pub fn log_tail(&self) -> String {
        let Ok(mut file) = std::fs::File::open(self.profile_dir.join("chromium.log")) else {
            return String::new();
        };
        let len = file.metadata().map_or(0, |m| m.len());
        let _ = file.seek(SeekFrom::Start(len.saturating_sub(2048)));
        let mut tail = String::new();
        let _ = file.read_to_string(&mut tail);
        tail
    }

    /// Opens a CDP connection to this browser's DevTools port, or hands over the one connection
    /// of a browser driven over its pipe (opened at launch with the default options; a second
    /// call is refused, since nothing else can reach a piped browser).
    pub async fn connect(&self, options: ConnectionOptions) -> Result<Connection, CdpError> {
        match &self.ws_url {
            Some(ws_url) => Connection::connect(ws_url, options).await,
            None => self
                .piped
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
                .ok_or_else(|| CdpError::Connect {
                    endpoint: "pipe".to_owned(),
                    reason: "a browser driven over its pipe has one connection, taken already"
                        .to_owned(),
                }),
        }
    }

    /// The browser's WebSocket debugger URL, when it was launched with a DevTools port.
    pub fn ws_url(&self) -> Option<&str> {
        self.ws_url.as_deref()
    }

    /// The browser process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The binary that was started.
    pub fn executable(&self) -> &Path {
        &self.executable
    }

    /// The profile directory (deleted when this value is dropped).
    pub fn profile_dir(&self) -> &Path {
        &self.profile_dir
    }

    /// True while the browser process is running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the browser's process group and reaps it. Idempotent.
    pub fn kill(&mut self) {
        let pgid = self.child.id() as libc::pid_t;
        // SAFETY: killpg only sends a signal; the group is the one we created for this child.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.kill();
        remove_profile(&self.profile_dir);
    }
}

fn remove_profile(dir: &Path) {
    // A helper process may still be writing as the group dies; one retry covers a racing file.
    if std::fs::remove_dir_all(dir).is_err() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Removes `chromium-<pid>-…` profiles whose Glovebox process is gone (killed, crashed).
pub fn sweep_dead_profiles(profiles: &Path) {
    let Ok(entries) = std::fs::read_dir(profiles) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("chromium-"))
            .and_then(|n| n.split('-').next())
        else {
            continue;
        };
        let Ok(pid) = pid.parse::<libc::pid_t>() else {
            continue;
        };
        if pid as u32 != std::process::id() && !process_alive(pid) {
            tracing::debug!(profile = %entry.path().display(), "removing the profile of a dead Glovebox process");
            remove_profile(&entry.path());
        }
    }
}

fn process_alive(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Spawns `command` from one long-lived thread.
///
/// `PR_SET_PDEATHSIG` fires when the *thread* that forked the child exits, not the process; tokio's
/// blocking threads come and go, so every browser is forked from this thread, which lives as long
/// as the process.
///
/// `fds`, when given, become the child's fd 3 and fd 4 (the DevTools pipe's ends).
fn spawn_tied_to_process(
    mut command: Command,
    fds: Option<(RawFd, RawFd)>,
) -> std::io::Result<Child> {
    type Request = (Command, std_mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<std::sync::Mutex<std_mpsc::Sender<Request>>> = OnceLock::new();
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure only calls async-signal-safe functions (fcntl, dup2, close, setpgid,
    // prctl, getppid, _exit).
    unsafe {
        command.pre_exec(move || {
            if let Some((read, write)) = fds {
                // Moved above 10 first, so that neither lands on the other's target; dup2
                // leaves the copies at 3 and 4 without close-on-exec.
                let read = libc::fcntl(read, libc::F_DUPFD, 10);
                let write = libc::fcntl(write, libc::F_DUPFD, 10);
                if read < 0 || write < 0 || libc::dup2(read, 3) < 0 || libc::dup2(write, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(read);
                libc::close(write);
            }
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl; then nobody would ever kill us.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = std_mpsc::channel::<Request>();
        // If the thread cannot start, `rx` is dropped with the closure and every send below
        // reports "the spawner thread is gone" instead of panicking.
        let _ = std::thread::Builder::new()
            .name("glovebox-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            });
        std::sync::Mutex::new(tx)
    });
    let (reply_tx, reply_rx) = std_mpsc::channel();
    sender
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send((command, reply_tx))
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
    reply_rx
        .recv()
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?
}
/// A pipe whose ends are closed on exec, so that no other child inherits them.
fn cloexec_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The environment variables a launched browser keeps: where it runs (paths, locale, time
/// zone, display and session bus, fonts, proxies), never a credential.
fn browser_env(name: &str) -> bool {
    matches!(
        name,
        "PATH"
            | "HOME"
            | "USER"
            | "LOGNAME"
            | "SHELL"
            | "LANG"
            | "LANGUAGE"
            | "TZ"
            | "TMPDIR"
            | "DISPLAY"
            | "WAYLAND_DISPLAY"
            | "XAUTHORITY"
            | "XDG_RUNTIME_DIR"
            | "XDG_CONFIG_HOME"
            | "XDG_CACHE_HOME"
            | "XDG_DATA_HOME"
            | "DBUS_SESSION_BUS_ADDRESS"
            | "FONTCONFIG_PATH"
            | "FONTCONFIG_FILE"
            | "http_proxy"
            | "https_proxy"
            | "no_proxy"
            | "HTTP_PROXY"
            | "HTTPS_PROXY"
            | "NO_PROXY"
            | "ALL_PROXY"
            | "all_proxy"
            | "CHROME_LOG_FILE"
    ) || name.starts_with("LC_")
}
