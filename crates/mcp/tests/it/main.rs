//! The MCP server driven by a real MCP client (the official Python SDK, installed into a venv
//! under target/ by `scripts/ensure-python-mcp.sh`), against real Chromium and loopback fixtures.

mod console;
mod desktop;
mod hostile;
mod http;
mod stdio;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use mcp::McpOptions;
use runtime::{Runtime, RuntimeConfig};
use serde_json::Value;
use server::{HttpOptions, HttpServer};
use test_support::FixtureServer;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The venv's python, created once per test binary (the script itself is idempotent and locked).
pub fn python() -> &'static PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/ensure-python-mcp.sh");
        let out = std::process::Command::new(script)
            .output()
            .expect("run ensure-python-mcp.sh");
        assert!(
            out.status.success(),
            "ensure-python-mcp.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    })
}

pub fn client_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/client.py")
}

pub struct Env {
    pub runtime: Runtime,
    /// The browser beneath the runtime, for the tests' own checks of it.
    pub browser: std::sync::Arc<browser::Chromium>,
    pub fixtures: FixtureServer,
    pub server: HttpServer,
}

/// A runtime (fixture origin trusted when `trusted`), the browser crate's fixtures and two
/// cookie pages on loopback, and `serve` on an ephemeral loopback port.
pub async fn env(name: &str, trusted: bool, token: Option<&str>) -> Env {
    env_with(name, trusted, token, None).await
}

/// The test planner (`tests/planner.py`) as a command.
pub fn test_planner() -> Vec<String> {
    vec![
        "python3".into(),
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/planner.py")
            .display()
            .to_string(),
    ]
}

/// [`env`] with a planner command behind `computer_use`.
pub async fn env_with(
    name: &str,
    trusted: bool,
    token: Option<&str>,
    planner: Option<Vec<String>>,
) -> Env {
    env_configured(name, trusted, token, planner, |_| {}).await
}

/// [`env_with`], with the runtime's configuration adjusted by `tweak` before it starts.
pub async fn env_configured(
    name: &str,
    trusted: bool,
    token: Option<&str>,
    planner: Option<Vec<String>>,
    tweak: impl FnOnce(&mut RuntimeConfig),
) -> Env {
    let fixtures = FixtureServer::start().await.unwrap();
    fixtures.dir(
        "/",
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../browser/tests/fixtures"),
    );
    let page = |set: bool| {
        format!(
            "<!doctype html><title>cookies</title>{}<p id=c></p><script>document.getElementById('c').textContent = 'cookie: ' + (document.cookie || 'none')</script><button onclick=\"this.dataset.n = 1\">Touch</button>",
            if set {
                "<script>document.cookie = 'who=a; path=/'</script>"
            } else {
                ""
            }
        )
    };
    fixtures.html("/set", page(true));
    fixtures.html("/show", page(false));
    let data_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("mcp-tests")
        .join(name);
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&data_dir).unwrap();
    let mut config = RuntimeConfig::new(&data_dir);
    if trusted {
        config
            .trust
            .trusted_origins
            .push(policy::Origin::parse(&fixtures.origin()).unwrap());
    }
    tweak(&mut config);
    let browser = browser::Chromium::local(&data_dir);
    let runtime = Runtime::start(config, browser.clone())
        .await
        .expect("runtime starts");
    let options = HttpOptions {
        bind: "127.0.0.1:0".parse().unwrap(),
        token: token.map(str::to_owned),
        mcp: McpOptions {
            elicitation_timeout: Some(Duration::from_secs(20)),
            planner,
            ..McpOptions::default()
        },
        ..HttpOptions::default()
    };
    let server = server::serve(runtime.clone(), options)
        .await
        .expect("serve");
    Env {
        runtime,
        browser,
        fixtures,
        server,
    }
}

/// A running client scenario: JSON lines out, lines in.
pub struct Client {
    child: tokio::process::Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Client {
    pub fn start(scenario: &str, transport: &[String], fixtures: &[String]) -> Client {
        let mut command = tokio::process::Command::new(python());
        command.arg(client_script()).arg(scenario);
        for f in fixtures {
            command.arg("--fixture").arg(f);
        }
        command.args(transport);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("start the python client");
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Client { child, lines }
    }

    /// The client's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("the client runs")
    }

    /// The next JSON line (the client fails the test by exiting instead).
    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(60), self.lines.next_line())
            .await
            .expect("the client answers within a minute")
            .unwrap()
            .unwrap_or_else(|| panic!("the client exited early"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    pub async fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
    }

    pub async fn finish(mut self) {
        let status = tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("client exits")
            .unwrap();
        assert!(status.success(), "client failed: {status}");
    }
}

/// One scenario to its single JSON result.
pub async fn run(scenario: &str, transport: &[String], fixtures: &[String]) -> Value {
    let mut client = Client::start(scenario, transport, fixtures);
    let value = client.next().await;
    client.finish().await;
    value
}

pub fn over_http(env: &Env) -> Vec<String> {
    vec!["--url".into(), env.server.mcp_url()]
}

/// A raw HTTP/1.1 request (so tests control every header); returns status and body.
pub async fn raw_http(addr: std::net::SocketAddr, request: &str) -> (u16, String) {
    let (status, _, body) = raw_http_whole(addr, request).await;
    (status, body)
}

/// [`raw_http`] with the response's head (status line and headers) too.
pub async fn raw_http_whole(addr: std::net::SocketAddr, request: &str) -> (u16, String, String) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    // Written while the answer is read: a server may answer a body over its limit and close before
    // the rest is written (a broken pipe here), and its answer still counts.
    let (mut read, mut write) = stream.into_split();
    let request = request.as_bytes().to_vec();
    let writer = tokio::spawn(async move {
        let _ = write.write_all(&request).await;
        write
    });
    let mut response = Vec::new();
    let _ = tokio::io::AsyncReadExt::read_to_end(&mut read, &mut response).await;
    drop(writer.await);
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (head, body) = response
        .split_once("\r\n\r\n")
        .map(|(h, b)| (h.to_owned(), b.to_owned()))
        .unwrap_or_default();
    (status, head, body)
}

/// The page targets of the browser (to see a session's tabs close after its client leaves).
pub async fn page_count(browser: &browser::Chromium) -> usize {
    let reply = browser
        .connection()
        .unwrap()
        .browser()
        .call(cdp::domains::target::GetTargets {})
        .await
        .unwrap();
    reply
        .target_infos
        .iter()
        .filter(|t| t.target_type == "page")
        .count()
}

/// Waits (up to 15 s) until the browser is back to `baseline` page targets.
pub async fn until_pages(browser: &browser::Chromium, baseline: usize) -> usize {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let n = page_count(browser).await;
        if n <= baseline || tokio::time::Instant::now() > deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
