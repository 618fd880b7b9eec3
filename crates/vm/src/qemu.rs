//! Guests under QEMU: the guest image (a kernel and a ramroot holding Xvfb, xterm and our guest
//! server, built from Debian packages by `scripts/vm/build-guest.sh`, cached), the accelerator
//! (KVM only where it really works — `/dev/kvm` existing is no proof: on a PVM host it opens and
//! QEMU then aborts — TCG otherwise), and one QEMU process per guest: user networking with
//! `restrict=on` (the guest reaches no network) and one loopback port forwarded to its guest
//! server; its token handed over in a 0600 file through `fw_cfg` (never on a command line any
//! host process can read).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::client::{GuestClient, Token};

/// The image build script, carried in the binary (`glovebox vm create` runs it from any
/// directory).
pub const BUILD_SCRIPT: &str = include_str!("../../../scripts/vm/build-guest.sh");

/// QEMU's small firmware for direct kernel boot (in `qemu-system-data`).
const QBOOT: &str = "/usr/share/qemu/qboot.rom";

/// Why a guest could not be built or booted.
#[derive(Debug, thiserror::Error)]
pub enum QemuError {
    #[error("{0}")]
    Missing(String),
    #[error("building the guest image failed: {0}")]
    Build(String),
    #[error("QEMU for VM {name} failed: {reason}")]
    Boot { name: String, reason: String },
    #[error("VM {name} was not ready within {after_s} s: {reason}")]
    NotReady {
        name: String,
        after_s: u64,
        reason: String,
    },
}

/// How guests execute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accelerator {
    /// `kvm` or `tcg`.
    pub name: &'static str,
    /// Why this one.
    pub why: String,
}

impl Accelerator {
    /// KVM only when the processor has hardware virtualisation (`vmx`/`svm`), `/dev/kvm` opens
    /// and the module behind it is `kvm_intel` or `kvm_amd`; TCG otherwise, saying why.
    pub fn detect() -> Accelerator {
        let tcg = |why: String| Accelerator { name: "tcg", why };
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let flags = cpuinfo
            .lines()
            .find(|l| l.starts_with("flags"))
            .unwrap_or("");
        let hardware = flags.split_whitespace().any(|f| f == "vmx" || f == "svm");
        if !hardware {
            return tcg("the processor shows no vmx/svm (hardware virtualisation)".into());
        }
        if std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/kvm")
            .is_err()
        {
            return tcg("/dev/kvm cannot be opened".into());
        }
        let module = ["kvm_intel", "kvm_amd"]
            .into_iter()
            .find(|m| Path::new("/sys/module").join(m).exists());
        match module {
            Some(m) => Accelerator {
                name: "kvm",
                why: format!("/dev/kvm opens and {m} is loaded"),
            },
            None => {
                let pvm = Path::new("/sys/module/kvm_pvm").exists();
                tcg(if pvm {
                    "/dev/kvm is kvm_pvm, which runs no ordinary guest".into()
                } else {
                    "/dev/kvm has neither kvm_intel nor kvm_amd behind it".into()
                })
            }
        }
    }
}

/// A built guest image.
#[derive(Debug, Clone)]
pub struct GuestImage {
    pub kernel: PathBuf,
    pub initrd: PathBuf,
}

/// The guest server binary to put in the image: `GLOVEBOX_GUEST_BINARY`, else
/// `glovebox-guest` beside the running program.
pub fn guest_binary() -> Result<PathBuf, QemuError> {
    if let Some(p) = std::env::var_os("GLOVEBOX_GUEST_BINARY") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| QemuError::Missing(e.to_string()))?;
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    for candidate in [dir.join("glovebox-guest"), dir.join("../glovebox-guest")] {
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(QemuError::Missing(format!(
        "no glovebox-guest beside {} (build it with `cargo build --release -p vm`, or name it in GLOVEBOX_GUEST_BINARY)",
        exe.display()
    )))
}

/// Builds (or finds cached) the guest image under `cache` with `guest` as its guest server.
/// Idempotent and quick when nothing changed; two callers at once wait for each other.
pub fn build_image(cache: &Path, guest: &Path) -> Result<GuestImage, QemuError> {
    std::fs::create_dir_all(cache).map_err(|e| QemuError::Build(e.to_string()))?;
    let script = cache.join("build-guest.sh");
    // Rewritten only when it changed (a running build may be reading it).
    if std::fs::read_to_string(&script).ok().as_deref() != Some(BUILD_SCRIPT) {
        let tmp = cache.join(format!("build-guest.sh.{}", std::process::id()));
        std::fs::write(&tmp, BUILD_SCRIPT).map_err(|e| QemuError::Build(e.to_string()))?;
        std::fs::rename(&tmp, &script).map_err(|e| QemuError::Build(e.to_string()))?;
    }
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg(cache)
        .arg(guest)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| QemuError::Build(format!("cannot run bash: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(12).collect();
        return Err(QemuError::Build(
            tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        ));
    }
    let image = GuestImage {
        kernel: cache.join("kernel"),
        initrd: cache.join("initrd"),
    };
    if !image.kernel.is_file() || !image.initrd.is_file() {
        return Err(QemuError::Build(format!(
            "the script left no kernel and initrd in {}",
            cache.display()
        )));
    }
    Ok(image)
}

/// How to boot one guest.
#[derive(Debug, Clone)]
pub struct BootOptions {
    pub name: String,
    /// Where its token file and console log go (created 0700).
    pub dir: PathBuf,
    pub memory_mb: u32,
    pub screen: [u32; 2],
    /// `None`: the guest server takes requests without a token (OSWorld's own clients).
    pub token: Option<Token>,
    /// The loopback port to forward; `None`: a free one.
    pub port: Option<u16>,
}

/// A QEMU process running one guest.
pub struct Guest {
    pub name: String,
    pub port: u16,
    pub pid: u32,
    pub token: Option<Token>,
    pub accelerator: Accelerator,
    /// The guest's console output.
    pub console: PathBuf,
    child: Option<std::process::Child>,
}

impl std::fmt::Debug for Guest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guest")
            .field("name", &self.name)
            .field("port", &self.port)
            .field("pid", &self.pid)
            .finish()
    }
}

fn free_port() -> Result<u16, std::io::Error> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

fn setpriv_installed() -> bool {
    std::process::Command::new("setpriv")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether `qemu-system-x86_64` is installed.
pub fn qemu_installed() -> bool {
    std::process::Command::new("qemu-system-x86_64")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

impl Guest {
    /// Starts QEMU for one guest (not waiting for it: see [`Guest::wait_ready`]).
    /// `detached`: the process outlives this one (its own session; `glovebox vm start`).
    pub fn boot(
        image: &GuestImage,
        options: &BootOptions,
        detached: bool,
    ) -> Result<Guest, QemuError> {
        let fail = |reason: String| QemuError::Boot {
            name: options.name.clone(),
            reason,
        };
        if !qemu_installed() {
            return Err(QemuError::Missing(
                "qemu-system-x86_64 is not installed (Debian package qemu-system-x86); `make test` installs it".into(),
            ));
        }
        std::fs::create_dir_all(&options.dir).map_err(|e| fail(e.to_string()))?;
        set_mode(&options.dir, 0o700);
        let accelerator = Accelerator::detect();
        let port = match options.port {
            Some(p) => p,
            None => free_port().map_err(|e| fail(e.to_string()))?,
        };
        let console = options.dir.join("console.log");
        // An attached guest dies with this process, however it ends (`setpriv --pdeathsig`:
        // the signal follows the spawning thread, so callers spawn from a thread that lives as
        // long as the guest should).
        let mut command = if detached || !setpriv_installed() {
            std::process::Command::new("qemu-system-x86_64")
        } else {
            let mut c = std::process::Command::new("setpriv");
            c.args(["--pdeathsig", "KILL", "--", "qemu-system-x86_64"]);
            c
        };
        command.args(["-accel", accelerator.name]);
        if accelerator.name == "kvm" {
            command.args(["-cpu", "host"]);
        } else {
            command.args(["-cpu", "max"]);
        }
        command.args(["-machine", "q35"]);
        // qboot starts the kernel ~0.4 s sooner than SeaBIOS under TCG (measured); SeaBIOS when
        // it is missing.
        if Path::new(QBOOT).is_file() {
            command.args(["-bios", QBOOT]);
        }
        command
            .arg("-m")
            .arg(options.memory_mb.to_string())
            .args(["-smp", "1", "-nographic", "-nodefaults", "-no-user-config"])
            .arg("-kernel")
            .arg(&image.kernel)
            .arg("-initrd")
            .arg(&image.initrd)
            .arg("-append")
            .arg(format!(
                // The crypto self-tests cost 200 ms or more emulated; zeroing every allocation
                // ~0.1 s.
                "console=ttyS0 quiet panic=-1 cryptomgr.notests init_on_alloc=0 glovebox.screen={}x{}",
                options.screen[0], options.screen[1]
            ))
            .arg("-serial")
            .arg(format!("file:{}", console.display()))
            .arg("-netdev")
            .arg(format!(
                "user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:8000"
            ))
            // No iPXE boot ROM: the kernel is given directly.
            .args(["-device", "virtio-net-pci,netdev=n0,romfile="]);
        if let Some(token) = &options.token {
            let file = options.dir.join("token");
            write_private(&file, token.expose()).map_err(|e| fail(e.to_string()))?;
            command
                .arg("-fw_cfg")
                .arg(format!("name=opt/glovebox/token,file={}", file.display()));
        }
        // QEMU's own complaints go to a file beside the console (a pipe nobody reads would
        // end a guest that outlives this process with SIGPIPE).
        let stderr_path = options.dir.join("qemu.log");
        let stderr = std::fs::File::create(&stderr_path).map_err(|e| fail(e.to_string()))?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        if detached {
            use std::os::unix::process::CommandExt as _;
            command.process_group(0);
        }
        let mut child = command.spawn().map_err(|e| fail(e.to_string()))?;
        // QEMU refuses a bad option (or a taken port) at once: say so rather than time out.
        std::thread::sleep(Duration::from_millis(150));
        if let Ok(Some(status)) = child.try_wait() {
            let err = std::fs::read_to_string(&stderr_path).unwrap_or_default();
            return Err(fail(format!("exited with {status}: {}", err.trim())));
        }
        Ok(Guest {
            name: options.name.clone(),
            port,
            pid: child.id(),
            token: options.token.clone(),
            accelerator,
            console,
            child: Some(child),
        })
    }

    /// The guest server's address.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A transport to it.
    pub fn client(&self) -> GuestClient {
        GuestClient::new(self.endpoint(), self.token.clone())
    }

    /// Waits until the guest server answers (its state), within `deadline`.
    pub async fn wait_ready(&mut self, deadline: Duration) -> Result<Duration, QemuError> {
        let started = Instant::now();
        let mut client = self.client();
        // QEMU's user networking accepts a connection at once and holds it until the guest
        // answers: short attempts find the guest ready sooner (measured: 5 s attempts answered
        // at 5.1 s, 0.25 s ones at 2.2 s).
        client.read_deadline = Duration::from_millis(250);
        let mut last = String::from("no answer yet");
        while started.elapsed() < deadline {
            if let Some(child) = &mut self.child
                && let Ok(Some(status)) = child.try_wait()
            {
                return Err(QemuError::Boot {
                    name: self.name.clone(),
                    reason: format!(
                        "QEMU exited with {status}; console: {}",
                        self.console.display()
                    ),
                });
            }
            match client.state().await {
                Ok(_) => return Ok(started.elapsed()),
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(QemuError::NotReady {
            name: self.name.clone(),
            after_s: deadline.as_secs(),
            reason: format!("{last}; console: {}", self.console.display()),
        })
    }

    /// Lets the process run on when this handle goes (`glovebox vm start`).
    pub fn detach(mut self) -> u32 {
        self.child = None;
        self.pid
    }

    /// Stops the guest (the QEMU process) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        self.stop();
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())
}
