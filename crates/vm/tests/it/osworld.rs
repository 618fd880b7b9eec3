//! OSWorld's own endpoints as its clients call them (the requests `desktop_env`'s
//! `PythonController` sends), against the guest without a token.

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
