//! A ready desktop for people without one (`glovebox desktop`) and for tests: Xvfb on a display
//! number it picks itself (`-displayfd`, never `-a`), a session D-Bus of its own, and optionally
//! openbox as window manager. `DISPLAY` and `XDG_RUNTIME_DIR` are in the bus daemon's own
//! environment: the AT-SPI bus launcher is D-Bus-activated and inherits them, so two stacks never
//! share an accessibility bus socket.
//!
//! Dropping the stack stops what it started in reverse order (window manager, bus, Xvfb) and
//! waits, bounded, for each process to be gone; the bus's activated children (the AT-SPI
//! launcher and registry) go with their process group.

use std::io::{BufRead as _, BufReader, Read as _};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Why a stack could not start.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    #[error("{program} is not installed (Debian package {package}); `make test` installs it")]
    Missing {
        program: &'static str,
        package: &'static str,
    },
    #[error("{what}: {detail}")]
    Failed { what: &'static str, detail: String },
}

/// What to start.
#[derive(Debug, Clone)]
pub struct StackOptions {
    /// Screen size.
    pub width: u32,
    pub height: u32,
    /// Start openbox as window manager.
    pub window_manager: bool,
}

impl Default for StackOptions {
    fn default() -> Self {
        StackOptions {
            width: 1280,
            height: 800,
            window_manager: false,
        }
    }
}

/// A running desktop (see the module docs).
pub struct Stack {
    /// `:N`.
    pub display: String,
    /// The session bus's address.
    pub session_bus: String,
    /// The stack's own runtime directory (0700).
    pub runtime_dir: PathBuf,
    xvfb: Option<Child>,
    bus: Option<Child>,
    wm: Option<Child>,
    /// Applications started in the stack (stopped first).
    apps: Vec<Child>,
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

fn need(program: &'static str, package: &'static str) -> Result<(), StackError> {
    if which(program) {
        Ok(())
    } else {
        Err(StackError::Missing { program, package })
    }
}

fn failed(what: &'static str, detail: impl std::fmt::Display) -> StackError {
    StackError::Failed {
        what,
        detail: detail.to_string(),
    }
}

/// Reads one line from `pipe` within `deadline`.
fn line_within(pipe: impl std::io::Read + Send + 'static, deadline: Duration) -> Option<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let ok = BufReader::new(pipe).read_line(&mut line).is_ok();
        let _ = tx.send(ok.then_some(line));
    });
    rx.recv_timeout(deadline).ok().flatten()
}

impl Stack {
    /// Starts Xvfb and a session bus (and openbox when asked), each in its own process group.
    pub fn start(options: &StackOptions) -> Result<Stack, StackError> {
        need("Xvfb", "xvfb")?;
        need("dbus-daemon", "dbus")?;
        if options.window_manager {
            need("openbox", "openbox")?;
        }
        // One directory per stack, never shared: stacks started side by side (tests in one
        // binary) each bind their own bus socket and AT-SPI bus under it.
        static STACKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let runtime_dir = std::env::temp_dir().join(format!(
            "glovebox-desktop-{}-{:x}-{}",
            std::process::id(),
            crate::adapter::process_salt() & 0xffff_ffff,
            STACKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        {
            use std::os::unix::fs::DirBuilderExt as _;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&runtime_dir)
                .map_err(|e| failed("creating the runtime directory", e))?;
        }
        let mut stack = Stack {
            display: String::new(),
            session_bus: String::new(),
            runtime_dir,
            xvfb: None,
            bus: None,
            wm: None,
            apps: Vec::new(),
        };
        // Xvfb writes the display number it chose to the given descriptor: its stdout here.
        let mut xvfb = Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-nolisten",
                "tcp",
                "-noreset",
                "-screen",
                "0",
            ])
            .arg(format!("{}x{}x24", options.width, options.height))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| failed("starting Xvfb", e))?;
        let out = xvfb.stdout.take();
        stack.xvfb = Some(xvfb);
        let number = out
            .and_then(|o| line_within(o, Duration::from_secs(10)))
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| failed("starting Xvfb", "it named no display within 10 s"))?;
        stack.display = format!(":{number}");
        let mut bus = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .arg(format!(
                "--address=unix:path={}",
                stack.runtime_dir.join("bus").display()
            ))
            .env("DISPLAY", &stack.display)
            .env("XDG_RUNTIME_DIR", &stack.runtime_dir)
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .env_remove("WAYLAND_DISPLAY")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| failed("starting the session bus", e))?;
        let out = bus.stdout.take();
        stack.bus = Some(bus);
        stack.session_bus = out
            .and_then(|o| line_within(o, Duration::from_secs(10)))
            .map(|l| l.trim().to_owned())
            .filter(|l| l.starts_with("unix:"))
            .ok_or_else(|| failed("starting the session bus", "it gave no address within 10 s"))?;
        if options.window_manager {
            let wm = stack
                .command("openbox")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| failed("starting openbox", e))?;
            stack.wm = Some(wm);
            // Ready when it announces itself on the root window.
            let display = crate::x11::Display::connect(&stack.display)
                .map_err(|e| failed("connecting to the new display", e))?;
            let started = Instant::now();
            while display
                .now(|c| Ok(c.window_manager()))
                .ok()
                .flatten()
                .is_none()
            {
                if started.elapsed() > Duration::from_secs(10) {
                    return Err(failed(
                        "starting openbox",
                        "it did not take the display within 10 s",
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(stack)
    }

    /// A command that runs inside the stack: its display, bus and runtime directory, in a
    /// process group of its own.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env("DISPLAY", &self.display)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.session_bus)
            .env("XDG_RUNTIME_DIR", &self.runtime_dir)
            .env_remove("WAYLAND_DISPLAY")
            .env("NO_AT_BRIDGE", "0")
            .env("GTK_A11Y", "atspi")
            .stdin(Stdio::null())
            .process_group(0);
        c
    }

    /// Starts an application in the stack; it is stopped with the stack.
    pub fn spawn(&mut self, mut command: Command) -> Result<u32, StackError> {
        let child = command
            .spawn()
            .map_err(|e| failed("starting an application", e))?;
        let pid = child.id();
        self.apps.push(child);
        Ok(pid)
    }

    /// The environment lines a shell needs to use the stack (`export …`).
    pub fn env_lines(&self) -> String {
        format!(
            "export DISPLAY={}\nexport DBUS_SESSION_BUS_ADDRESS='{}'\nexport XDG_RUNTIME_DIR={}\n",
            self.display,
            self.session_bus,
            self.runtime_dir.display()
        )
    }

    fn stop(child: &mut Option<Child>) {
        let Some(mut c) = child.take() else { return };
        let group = c.id() as libc::pid_t;
        // SAFETY: kill(2) on a process group this stack created; no memory is involved.
        unsafe {
            libc::kill(-group, libc::SIGTERM);
        }
        let started = Instant::now();
        loop {
            if matches!(c.try_wait(), Ok(Some(_))) {
                break;
            }
            if started.elapsed() > Duration::from_secs(3) {
                // SAFETY: as above.
                unsafe {
                    libc::kill(-group, libc::SIGKILL);
                }
                let _ = c.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // What the leader started in its group (the bus's AT-SPI launcher and registry) goes
        // too, within a bounded wait: the next stack never meets this one's.
        let started = Instant::now();
        while group_alive(group) {
            if started.elapsed() > Duration::from_secs(2) {
                // SAFETY: as above.
                unsafe {
                    libc::kill(-group, libc::SIGKILL);
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut rest = String::new();
        if let Some(mut out) = c.stdout.take() {
            let _ = out.read_to_string(&mut rest);
        }
    }
}

/// Whether a live (not zombie) process is still in process group `group`, from `/proc`.
fn group_alive(group: libc::pid_t) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            return false;
        };
        // `pid (comm) state ppid pgrp …`: comm may hold spaces and parentheses.
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            return false;
        };
        let mut fields = rest.split(' ');
        let state = fields.next().unwrap_or("Z");
        let pgrp = fields.nth(1).and_then(|p| p.parse::<libc::pid_t>().ok());
        pgrp == Some(group) && state != "Z" && state != "X"
    })
}

impl Drop for Stack {
    fn drop(&mut self) {
        for app in self.apps.drain(..) {
            Stack::stop(&mut Some(app));
        }
        Stack::stop(&mut self.wm);
        // The bus's group holds the AT-SPI launcher and registry it activated.
        Stack::stop(&mut self.bus);
        Stack::stop(&mut self.xvfb);
        let _ = std::fs::remove_dir_all(&self.runtime_dir);
    }
}
