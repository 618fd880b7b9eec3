//! The sample deployment (issue 34): `deploy/compose.yaml`, `deploy/prometheus.yml` and the
//! `Dockerfile` parse and agree with each other (`tests/deploy.py`, PyYAML), and the binary
//! serves what they rely on: the server started with the compose file's environment (on a
//! loopback port here) passes the compose file's own health check command, and the scrape
//! Prometheus is configured for gets the metrics with the token, by the name it uses — with
//! its records in PostgreSQL (a schema of the test server standing in for the postgres
//! service) and a pool of two browsers (a second local one standing in for the chromium service).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{data_dir, glovebox};

#[test]
fn the_sample_deployment_agrees_with_itself_and_with_the_binary() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = crate::mcp::python();
    let out = Command::new(&python)
        .arg(root.join("crates/glovebox/tests/deploy.py"))
        .arg(&root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let facts: Value = serde_json::from_slice(&out.stdout).unwrap();
    let compose_port = facts["port"].as_u64().unwrap().to_string();

    let dir = data_dir("deploy");
    let _ = std::fs::remove_dir_all(&dir);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let token = "deploy-test-token-0123456789abcdef0123";
    let mut serve = glovebox(&dir);
    for (k, v) in facts["env"].as_object().unwrap() {
        // The chromium service's endpoint is a second local browser here.
        let mut v = v.as_str().unwrap().to_owned();
        for remote in facts["pool_remote"].as_array().unwrap() {
            v = v.replace(remote.as_str().unwrap(), "local");
        }
        serve.env(k, v);
    }
    // The postgres service is a schema of the test's PostgreSQL server.
    let store_url = test_support::postgres::server().fresh_url("deploy");
    // The compose file's environment, on a loopback port of this machine and its data dir.
    let mut child = serve
        .env("GLOVEBOX_BIND", format!("127.0.0.1:{port}"))
        .env("GLOVEBOX_DATA_DIR", &dir)
        .env("GLOVEBOX_TOKEN", token)
        .env("GLOVEBOX_STORE", &store_url)
        .env("GLOVEBOX_CONFIG", "/dev/null")
        .arg("serve")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let check: Vec<String> = facts["health_check"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s.as_str()
                .unwrap()
                .replace(&format!("/{compose_port}"), &format!("/{port}"))
                .replace(&format!(":{compose_port}"), &format!(":{port}"))
        })
        .collect();
    // The health check passes once Chromium is up (as Docker retries it).
    let started = Instant::now();
    let healthy = loop {
        let status = Command::new(&check[0]).args(&check[1..]).status().unwrap();
        if status.success() || started.elapsed() > Duration::from_secs(60) {
            break status.success();
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let scraped = Command::new(&python)
        .arg(root.join("crates/server/tests/metrics.py"))
        .arg(format!(
            "http://127.0.0.1:{port}{}",
            facts["metrics_path"].as_str().unwrap()
        ))
        .arg(token)
        .arg(format!("glovebox:{compose_port}"))
        .output()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        healthy,
        "the compose file's health check never passed: {check:?}"
    );
    assert!(
        scraped.status.success(),
        "{}",
        String::from_utf8_lossy(&scraped.stderr)
    );
    let scraped: Value = serde_json::from_slice(&scraped.stdout).unwrap();
    assert_eq!(scraped["status"], 200, "{scraped}");
    assert!(
        scraped["samples"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s[0] == "glovebox_backend_up" && s[2] == 1.0),
        "{scraped}"
    );
    // It ran on the database: its instance is recorded there, ended when it stopped or left
    // for a takeover.
    let shared = store::PgStore::connect(&store_url).unwrap();
    assert!(
        store::Store::current_instance(&shared).unwrap().is_some(),
        "the instance is recorded in the shared store"
    );
}
