//! OSWorld's own endpoints as its clients call them, against the guest without a token: its
//! own `PythonController` (the `desktop-env` wheel, installed without its dependencies by
//! `scripts/ensure-python-osworld.sh`), and the same requests from Rust with bad input beside.

use std::time::Duration;

use crate::fixture;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn osworld_endpoints_answer_as_its_client_expects() {
    let f = fixture();
    let _b = f.b.lock.lock().await;
    let http = reqwest::Client::new();
    let base = &f.b.endpoint;
    // GET /screenshot: PNG bytes.
    let shot = http
        .get(format!("{base}/screenshot"))
        .send()
        .await
        .expect("screenshot");
    assert!(shot.status().is_success());
    let bytes = shot.bytes().await.expect("bytes");
    assert!(bytes.starts_with(b"\x89PNG"));
    // POST /execute with a list and with a shell line.
    for body in [
        serde_json::json!({"command": ["echo", "osworld"], "shell": false}),
        serde_json::json!({"command": "echo osworld", "shell": true}),
    ] {
        let answer: serde_json::Value = http
            .post(format!("{base}/execute"))
            .json(&body)
            .send()
            .await
            .expect("execute")
            .json()
            .await
            .expect("json");
        assert_eq!(answer["status"], "success", "{answer}");
        assert_eq!(answer["output"], "osworld\n");
        assert_eq!(answer["returncode"], 0);
    }
    let size: serde_json::Value = http
        .post(format!("{base}/screen_size"))
        .send()
        .await
        .expect("size")
        .json()
        .await
        .expect("json");
    assert_eq!(size, serde_json::json!({"width": 800, "height": 600}));
    let at: serde_json::Value = http
        .post(format!("{base}/cursor_position"))
        .send()
        .await
        .expect("cursor")
        .json()
        .await
        .expect("json");
    assert!(at.as_array().is_some_and(|a| a.len() == 2), "{at}");
    let tree: serde_json::Value = http
        .get(format!("{base}/accessibility"))
        .send()
        .await
        .expect("a11y")
        .json()
        .await
        .expect("json");
    assert!(
        tree["AT"]
            .as_str()
            .is_some_and(|x| x.starts_with("<desktop-frame"))
    );
    // `/file` as OSWorld sends it (a form).
    let file = http
        .post(format!("{base}/file"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("file_path=%2Fetc%2Fhostname")
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("file");
    assert!(file.status().is_success() || file.status().as_u16() == 404);
    // A bad body is a structured refusal, not a crash.
    let bad = http
        .post(format!("{base}/execute"))
        .body("{not json")
        .send()
        .await
        .expect("bad");
    assert_eq!(bad.status().as_u16(), 400);
    let fault: vm::wire::GuestFault = bad.json().await.expect("fault");
    assert_eq!(fault.code, "invalid");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn osworlds_own_python_controller_gets_a_screenshot_and_runs_a_command() {
    let f = fixture();
    let _b = f.b.lock.lock().await;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let setup = std::process::Command::new(root.join("scripts/ensure-python-osworld.sh"))
        .output()
        .expect("ensure-python-osworld.sh");
    assert!(
        setup.status.success(),
        "{}",
        String::from_utf8_lossy(&setup.stderr)
    );
    let python = String::from_utf8_lossy(&setup.stdout).trim().to_owned();
    let port = f.b.endpoint.rsplit(':').next().expect("port").to_owned();
    let out = tokio::process::Command::new(python)
        .arg(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/clients/osworld_client.py"),
        )
        .arg(port)
        .output()
        .await
        .expect("the client runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the client's JSON");
    assert_eq!(got["screenshot_png"], true, "{got}");
    assert_eq!(
        got["screen_size"],
        serde_json::json!({"width": 800, "height": 600})
    );
    assert_eq!(got["script"]["status"], "success", "{got}");
    assert_eq!(got["script"]["output"], "osworld-42\n", "{got}");
    assert_eq!(got["script"]["returncode"], 0);
    assert_eq!(got["tree_root"], "<desktop-frame", "{got}");
    assert_eq!(got["hostname"], "glovebox", "{got}");
    assert_eq!(got["listing_has_hostname"], true, "{got}");
}
