//! The mandatory OS sandbox every runner starts in (`004_…` 执行权限与隔离: "生成的 Python 是任意
//! 代码，必须由 OS 隔离 … 要求平台 sandbox 且禁止降级"): bubblewrap with new user, pid, network,
//! IPC, UTS and cgroup namespaces, every capability dropped, no environment but a fixed one, a
//! read-only view of Debian's interpreter, its standard library and shared libraries and the SDK
//! — nothing else of the host (no `/etc`, no home, no data directory, no token, no profile) —
//! no `/proc` (nothing of any process, its own included, to read or write: a `/proc` would even
//! let the script write its namespace's sysctls), a private size-bounded scratch tmpfs, a
//! read-only root, a new session (no terminal to inject into), death with its parent, and the
//! seccomp filter of `seccomp.rs`.
//!
//! If any of it cannot be had, [`Sandbox::probe`] says why and there is no runner: no setting
//! turns isolation off or down.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// The interpreter: Debian's, never whatever `python3` comes first on a PATH.
pub const PYTHON: &str = "/usr/bin/python3";
/// Where the SDK is inside the sandbox.
pub const SDK_MOUNT: &str = "/sdk";
/// The script's private, writable directory inside the sandbox (a tmpfs).
pub const SCRATCH: &str = "/scratch";
/// The scratch tmpfs's size, and `/tmp`'s.
const SCRATCH_BYTES: u64 = 64 << 20;
/// The uid and gid the script runs as inside its user namespace.
const NOBODY: &str = "65534";

const SDK_FILES: &[(&str, &str)] = &[
    ("glovebox.py", include_str!("../sdk/glovebox.py")),
    ("runner.py", include_str!("../sdk/runner.py")),
];

/// Why there is no sandbox (and so no `gui_exec`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    #[error("bubblewrap is not installed (apt-get install bubblewrap)")]
    NoBubblewrap,
    #[error("{PYTHON} (Debian's python3) is not installed")]
    NoPython,
    #[error("the seccomp filter is written for x86_64 Linux only")]
    Architecture,
    #[error("the SDK could not be written: {0}")]
    Files(String),
    #[error("bubblewrap could not set up the sandbox here: {0}")]
    Setup(String),
}

/// A sandbox that was tried and works: the paths its runners are built from.
#[derive(Debug)]
pub struct Sandbox {
    bwrap: PathBuf,
    /// The interpreter's real file (`/usr/bin/python3.11`).
    python: PathBuf,
    /// Its standard library (`/usr/lib/python3.11`).
    stdlib: PathBuf,
    /// The host directory holding the SDK and the filter (removed when the sandbox drops).
    dir: PathBuf,
    description: String,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Sandbox {
    /// Finds bubblewrap and the interpreter, writes the SDK and the filter, and starts one
    /// sandboxed interpreter to prove the whole set-up works here.
    pub async fn probe() -> Result<Sandbox, Unavailable> {
        let filter = crate::seccomp::filter_bytes().ok_or(Unavailable::Architecture)?;
        let bwrap = ["/usr/bin/bwrap", "/bin/bwrap"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .ok_or(Unavailable::NoBubblewrap)?;
        let python = std::fs::canonicalize(PYTHON).map_err(|_| Unavailable::NoPython)?;
        let name = python
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| n.starts_with("python3."))
            .ok_or(Unavailable::NoPython)?;
        let stdlib = Path::new("/usr/lib").join(name);
        if !stdlib.is_dir() {
            return Err(Unavailable::NoPython);
        }
        let dir = write_files(&filter).map_err(|e| Unavailable::Files(e.to_string()))?;
        let version = tokio::process::Command::new(&bwrap)
            .arg("--version")
            .output()
            .await
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        let mut sandbox = Sandbox {
            bwrap,
            python,
            stdlib,
            dir,
            description: String::new(),
        };
        let probe = sandbox
            .command(&["-c", "import sys; print(sys.version.split()[0])"])
            .stdin(Stdio::null())
            .output();
        let out = tokio::time::timeout(Duration::from_secs(20), probe)
            .await
            .map_err(|_| Unavailable::Setup("a trial run did not finish in 20 s".into()))?
            .map_err(|e| Unavailable::Setup(e.to_string()))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(Unavailable::Setup(err.trim().chars().take(500).collect()));
        }
        sandbox.description = format!(
            "{} ({} namespaces, seccomp), Python {}",
            if version.is_empty() {
                "bubblewrap"
            } else {
                &version
            },
            "user, pid, net, ipc, uts, cgroup",
            String::from_utf8_lossy(&out.stdout).trim()
        );
        Ok(sandbox)
    }

    /// What it is, for results and `doctor`: e.g. `bubblewrap 0.8.0 (…), Python 3.11.2`.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The command that runs the interpreter with `args` inside a new sandbox. Its stdin and
    /// stdout are the broker channel (inherited by the interpreter alone); the seccomp filter is
    /// handed to bubblewrap on fd 3 by a shell redirection, so no descriptor has to be made
    /// inheritable by hand.
    pub(crate) fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new("/bin/sh");
        cmd.env_clear()
            .arg("-c")
            .arg("exec \"$@\" 3<\"$0\"")
            .arg(self.dir.join("seccomp.bpf"))
            .arg(&self.bwrap);
        let python = self.python.to_string_lossy();
        let stdlib = self.stdlib.to_string_lossy();
        let sdk = self.dir.join("sdk");
        let sdk = sdk.to_string_lossy();
        let size = SCRATCH_BYTES.to_string();
        #[rustfmt::skip]
        let sandbox: &[&str] = &[
            "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--uid", NOBODY, "--gid", NOBODY, "--hostname", "glovebox-sandbox",
            "--clearenv", "--setenv", "PATH", "/usr/bin", "--setenv", "HOME", SCRATCH,
            "--setenv", "LANG", "C.UTF-8", "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
            "--ro-bind", &python, PYTHON,
            "--ro-bind", &stdlib, &stdlib,
            "--ro-bind", "/usr/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
            "--ro-bind", "/usr/lib64", "/usr/lib64",
            "--symlink", "usr/lib", "/lib",
            "--symlink", "usr/lib64", "/lib64",
            "--ro-bind", &sdk, SDK_MOUNT,
            "--dev", "/dev", "--remount-ro", "/dev",
            "--size", &size, "--tmpfs", SCRATCH,
            "--size", &size, "--tmpfs", "/tmp",
            "--remount-ro", "/",
            "--chdir", SCRATCH,
            "--seccomp", "3",
            PYTHON, "-I", "-S", "-B",
        ];
        cmd.args(sandbox).args(args);
        cmd.kill_on_drop(true);
        cmd
    }

    /// The command of a persistent runner.
    pub(crate) fn runner(&self) -> tokio::process::Command {
        let runner = format!("{SDK_MOUNT}/runner.py");
        let mut cmd = self.command(&[&runner]);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }
}

/// A fresh private directory under the system's temporary directory with the SDK (readable by
/// the sandbox's user) and the filter.
fn write_files(filter: &[u8]) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    remove_abandoned();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let dir =
        std::env::temp_dir().join(format!("glovebox-script-{}-{nanos:x}", std::process::id()));
    std::fs::create_dir(&dir)?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o711))?;
    let sdk = dir.join("sdk");
    std::fs::create_dir(&sdk)?;
    std::fs::set_permissions(&sdk, std::fs::Permissions::from_mode(0o755))?;
    for (name, text) in SDK_FILES {
        let path = sdk.join(name);
        std::fs::write(&path, text)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
    }
    let bpf = dir.join("seccomp.bpf");
    std::fs::write(&bpf, filter)?;
    std::fs::set_permissions(&bpf, std::fs::Permissions::from_mode(0o600))?;
    Ok(dir)
}

/// Removes the directories of processes that are gone (a process ends without dropping its
/// sandbox when it exits from `main` with the sandbox in a static, or is killed).
fn remove_abandoned() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("glovebox-script-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
