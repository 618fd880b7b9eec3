//! A real PostgreSQL server for tests, one per test process, on a loopback port: Debian's
//! PostgreSQL binaries, `initdb` into a fresh data directory and `postgres` started on it.
//! PostgreSQL refuses to run as root, so as root the harness creates an unprivileged system
//! user (`glovebox-pg`) and runs both as that user. The server dies with the test process
//! (a parent-death signal: SIGQUIT, PostgreSQL's immediate shutdown); data directories left
//! by earlier processes are removed at the next start.
//!
//! Each test gets a schema of its own ([`Server::fresh_url`]), so tests run side by side on
//! one server without seeing each other's rows.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The unprivileged user the server runs as when the tests run as root.
const USER: &str = "glovebox-pg";

/// Why the test server could not be started.
#[derive(Debug)]
pub enum StartError {
    /// No PostgreSQL binaries on this machine.
    NoBinaries,
    /// A command failed (or could not run): which, and what it printed.
    Command { command: String, output: String },
    /// A file or directory could not be made.
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The server did not accept connections in time.
    NotReady { port: u16 },
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::NoBinaries => f.write_str(
                "no PostgreSQL binaries (initdb, postgres) in /usr/lib/postgresql/*/bin or on PATH; \
                 run scripts/ensure-postgres.sh (apt-get install postgresql)",
            ),
            StartError::Command { command, output } => write!(f, "{command} failed: {output}"),
            StartError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            StartError::NotReady { port } => {
                write!(f, "PostgreSQL on port {port} not ready after 30 s")
            }
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StartError + '_ {
    move |error| StartError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// A running server.
#[derive(Debug)]
pub struct Server {
    /// Its loopback port.
    pub port: u16,
    bin: PathBuf,
    next: AtomicU64,
}

/// The process's server, started at the first call. Panics with what is missing when
/// PostgreSQL cannot be started (`make test` installs it: `scripts/ensure-postgres.sh`).
pub fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        start().unwrap_or_else(|e| panic!("cannot start PostgreSQL for the tests: {e}"))
    })
}

impl Server {
    /// The address of the server's `postgres` database, as its superuser (trust auth on
    /// loopback).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// A new, empty schema and the address that keeps to it (`search_path`).
    pub fn fresh_url(&self, name: &str) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let clean: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .take(40)
            .collect();
        let schema = format!("t{}_{n}_{clean}", std::process::id());
        self.psql(&format!("CREATE SCHEMA {schema}"));
        format!(
            "postgres://postgres@127.0.0.1:{}/postgres?options=-c%20search_path%3D{schema}",
            self.port
        )
    }

    /// Runs one SQL statement with `psql`, panicking when it fails.
    pub fn psql(&self, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-d",
                "postgres",
            ])
            .arg("-p")
            .arg(self.port.to_string())
            .args(["-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .expect("run psql");
        assert!(
            out.status.success(),
            "psql {sql:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

/// Debian's PostgreSQL binaries: the newest `/usr/lib/postgresql/<n>/bin`, or `initdb` on PATH.
fn bin_dir() -> Result<PathBuf, StartError> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let dir = Path::new(dir);
        if dir.join("initdb").exists() && dir.join("postgres").exists() {
            return Ok(dir.to_path_buf());
        }
    }
    Err(StartError::NoBinaries)
}

fn run(cmd: &mut Command) -> Result<String, StartError> {
    let out = cmd.output().map_err(|e| StartError::Command {
        command: format!("{cmd:?}"),
        output: e.to_string(),
    })?;
    if !out.status.success() {
        return Err(StartError::Command {
            command: format!("{cmd:?}"),
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The uid and gid to run the server as: our own, or (as root) the unprivileged user's.
fn identity() -> Result<Option<(u32, u32)>, StartError> {
    if run(Command::new("id").arg("-u"))? != "0" {
        return Ok(None);
    }
    if run(Command::new("id").args(["-u", USER])).is_err() {
        // Two test processes may race to create it: whichever loses finds it made.
        let _ = run(Command::new("useradd").args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            USER,
        ]));
    }
    let uid = run(Command::new("id").args(["-u", USER]))?;
    let gid = run(Command::new("id").args(["-g", USER]))?;
    let number = |what: &str, v: &str| {
        v.parse().map_err(|_| StartError::Command {
            command: format!("id -{what} {USER}"),
            output: v.to_owned(),
        })
    };
    Ok(Some((number("u", &uid)?, number("g", &gid)?)))
}

fn as_user(cmd: &mut Command, who: Option<(u32, u32)>, die_with_parent: bool) {
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if let Some((uid, gid)) = who
                && (libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(gid) != 0
                    || libc::setuid(uid) != 0)
            {
                return Err(std::io::Error::last_os_error());
            }
            // After the credential change, which would clear it.
            if die_with_parent && libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

fn pid_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

fn start() -> Result<Server, StartError> {
    let bin = bin_dir()?;
    let who = identity()?;
    let base = PathBuf::from("/tmp/glovebox-pg");
    std::fs::create_dir_all(&base).map_err(io(&base))?;
    // Directories of earlier test processes that are gone.
    for entry in std::fs::read_dir(&base).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name.split('-').next().and_then(|p| p.parse::<i32>().ok())
            && !pid_alive(pid)
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = base.join(format!("{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    if let Some((uid, gid)) = who {
        std::os::unix::fs::chown(&base, None, None).ok();
        std::fs::set_permissions(&base, std::os::unix::fs::PermissionsExt::from_mode(0o755)).ok();
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).map_err(io(&dir))?;
    }
    let data = dir.join("data");
    let mut initdb = Command::new(bin.join("initdb"));
    initdb
        .arg("-D")
        .arg(&data)
        .args([
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
            "--locale=C",
        ])
        .current_dir(&dir);
    as_user(&mut initdb, who, false);
    run(&mut initdb)?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(io(Path::new("127.0.0.1:0")))?
        .port();
    // Spawned from a thread that lives as long as the process: the parent-death signal is
    // sent when the spawning *thread* ends.
    let (tx, rx) = std::sync::mpsc::channel();
    let postgres = bin.join("postgres");
    let log = dir.join("server.log");
    std::thread::spawn(move || {
        let log = std::fs::File::create(&log);
        let mut cmd = Command::new(postgres);
        cmd.arg("-D")
            .arg(&data)
            .arg("-p")
            .arg(port.to_string())
            .arg("-k")
            .arg(&dir)
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "max_connections=200",
            ])
            .current_dir(&dir)
            .stdin(Stdio::null());
        match log {
            Ok(log) => {
                let err = log.try_clone().map(Stdio::from).unwrap_or(Stdio::null());
                cmd.stdout(Stdio::from(log)).stderr(err);
            }
            Err(_) => {
                cmd.stdout(Stdio::null()).stderr(Stdio::null());
            }
        }
        as_user(&mut cmd, who, true);
        let child = cmd.spawn();
        let failed = child.as_ref().err().map(ToString::to_string);
        let _ = tx.send(failed);
        if let Ok(mut child) = child {
            let _ = child.wait();
        }
        loop {
            std::thread::park();
        }
    });
    if let Ok(Some(e)) = rx.recv() {
        return Err(StartError::Command {
            command: "postgres".into(),
            output: e,
        });
    }
    let server = Server {
        port,
        bin,
        next: AtomicU64::new(1),
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = Command::new(server.bin.join("pg_isready"))
            .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string()])
            .status()
            .is_ok_and(|s| s.success());
        if ready {
            return Ok(server);
        }
        if Instant::now() > deadline {
            return Err(StartError::NotReady { port });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
