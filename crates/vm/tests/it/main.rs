//! VM guests booted under QEMU (TCG here: KVM does not work on these machines), once per test
//! binary: two guests side by side, each with our guest server, Xvfb and the probe app. The
//! tests drive them through the adapter and read each guest's own logs.

mod proxy;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use vm::qemu::{BootOptions, Guest, GuestImage};
use vm::{GuestClient, GuestConfig, Token, VmAdapter};

mod guests;
mod mcp;
mod osworld;
mod runtime;

/// One booted guest, shared by the tests (one at a time: a test takes its lock).
pub struct Booted {
    pub name: String,
    pub endpoint: String,
    pub token: Option<Token>,
    pub lock: tokio::sync::Mutex<()>,
}

impl Booted {
    pub fn config(&self) -> GuestConfig {
        GuestConfig {
            name: self.name.clone(),
            endpoint: self.endpoint.clone(),
            token: self.token.clone(),
        }
    }

    pub fn client(&self) -> GuestClient {
        GuestClient::new(self.endpoint.clone(), self.token.clone())
    }
}

pub struct Fixture {
    /// With a token.
    pub a: Booted,
    /// Without one (OSWorld's own clients send none).
    pub b: Booted,
    pub boot_times: Vec<Duration>,
}

static FIXTURE: OnceLock<Result<Fixture, FixtureError>> = OnceLock::new();

/// Why the guests of the tests did not come up (every test that needs them says it).
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    #[error(transparent)]
    Qemu(#[from] vm::qemu::QemuError),
    #[error("no runtime to wait for the guests: {0}")]
    Runtime(#[from] std::io::Error),
    #[error("{error}\n{console}")]
    NotReady {
        error: vm::qemu::QemuError,
        console: String,
    },
    #[error("the thread booting the guests ended without a word")]
    Vanished,
}

fn image() -> Result<GuestImage, vm::qemu::QemuError> {
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("vm-image");
    vm::qemu::build_image(
        &cache,
        std::path::Path::new(env!("CARGO_BIN_EXE_glovebox-guest")),
    )
}

/// Boots both guests (once). QEMU is started from a thread that lives as long as the test
/// process: the guests die with it (`setpriv --pdeathsig`).
pub fn fixture() -> &'static Fixture {
    let result = FIXTURE.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let booted = (|| -> Result<(Vec<Guest>, Vec<Duration>), FixtureError> {
                let image = image()?;
                let dir = tempdir();
                let mut guests = Vec::new();
                for (name, token) in [("alpha", Some(Token::generate())), ("beta", None)] {
                    guests.push(Guest::boot(
                        &image,
                        &BootOptions {
                            name: name.into(),
                            dir: dir.join(name),
                            memory_mb: 384,
                            screen: [800, 600],
                            token,
                            port: None,
                        },
                        false,
                    )?);
                }
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                let mut times = Vec::new();
                for g in &mut guests {
                    times.push(
                        runtime
                            .block_on(g.wait_ready(Duration::from_secs(180)))
                            .map_err(|error| FixtureError::NotReady {
                                error,
                                console: std::fs::read_to_string(&g.console).unwrap_or_default(),
                            })?,
                    );
                }
                Ok((guests, times))
            })();
            match booted {
                Ok((guests, times)) => {
                    let fixture = Fixture {
                        a: Booted {
                            name: "alpha".into(),
                            endpoint: guests[0].endpoint(),
                            token: guests[0].token.clone(),
                            lock: tokio::sync::Mutex::new(()),
                        },
                        b: Booted {
                            name: "beta".into(),
                            endpoint: guests[1].endpoint(),
                            token: None,
                            lock: tokio::sync::Mutex::new(()),
                        },
                        boot_times: times,
                    };
                    let _ = tx.send(Ok(fixture));
                    // The guests live as long as this thread: the whole test process.
                    let _keep = guests;
                    loop {
                        std::thread::park();
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            }
        });
        rx.recv().unwrap_or(Err(FixtureError::Vanished))
    });
    match result {
        Ok(f) => f,
        Err(e) => panic!("the VM guests did not boot: {e}"),
    }
}

/// A directory of this test process.
pub fn tempdir() -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("vm-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The adapter over `configs`, connected.
pub async fn adapter(configs: Vec<GuestConfig>) -> Arc<VmAdapter> {
    use surface::SurfaceAdapter as _;
    let adapter = Arc::new(VmAdapter::new(configs));
    adapter.connect().await.expect("connect");
    adapter
}

/// Runs `command` in the guest through OSWorld's `/execute` and returns its output.
pub async fn run(client: &GuestClient, command: &str) -> String {
    let answer = client
        .execute(command, Duration::from_secs(30))
        .await
        .expect("execute");
    assert_eq!(answer.returncode, 0, "{command}: {}", answer.error);
    answer.output
}

/// Starts the probe app titled `title` in the guest (once per boot) and waits for its window.
pub async fn probe(client: &GuestClient, title: &str) {
    let state = client.state().await.expect("state");
    if state.windows.iter().any(|w| w.name == title) {
        return;
    }
    run(
        client,
        &format!(
            "DISPLAY=:0 /bin/glovebox-guest probe --title {title} --at 40,40 --log /tmp/{title}.log >/dev/null 2>&1 &"
        ),
    )
    .await;
    let started = Instant::now();
    loop {
        let state = client.state().await.expect("state");
        if state.windows.iter().any(|w| w.name == title) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the probe window {title} did not appear: {state:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What the probe app titled `title` received.
pub async fn probe_log(client: &GuestClient, title: &str) -> Vec<String> {
    run(client, &format!("cat /tmp/{title}.log 2>/dev/null || true"))
        .await
        .lines()
        .map(str::to_owned)
        .collect()
}

#[allow(dead_code)]
pub fn shared<T>(v: T) -> Arc<Mutex<T>> {
    Arc::new(Mutex::new(v))
}
