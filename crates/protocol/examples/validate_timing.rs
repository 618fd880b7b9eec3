//! Measures `validate_action` on a typical action: median of 51 batches of 1,000 calls.
//! Run with `cargo run --release -p protocol --example validate_timing`. Not a test: timing
//! assertions flake on shared machines.
use std::time::Instant;

fn main() {
    let action = serde_json::json!({
        "type": "click",
        "expected_frame_id": "frame_7f3a9c",
        "target": {"kind": "element", "ref": "e12"},
        "intent": "Open the settings page"
    });
    // Warm up: compiles the validators once.
    protocol::validate_action(&action).expect("the typical action is valid");
    let mut per_call_us: Vec<f64> = (0..51)
        .map(|_| {
            let start = Instant::now();
            for _ in 0..1_000 {
                std::hint::black_box(
                    protocol::validate_action(std::hint::black_box(&action)).is_ok(),
                );
            }
            start.elapsed().as_secs_f64() * 1e6 / 1_000.0
        })
        .collect();
    per_call_us.sort_by(f64::total_cmp);
    println!(
        "validate_action (typical click): median {:.2} µs per call",
        per_call_us[per_call_us.len() / 2]
    );
    let bad = serde_json::json!({"type": "scroll", "expected_frame_id": "f1", "delta_y": 2500, "foo": 1, "intent": ""});
    println!("{}", protocol::validate_action(&bad).expect_err("invalid"));
    let bad = serde_json::json!({"type": "type", "expected_frame_id": "frame_1", "target": {"kind":"point","x":1,"y":2}, "text": "hi", "intent": "x"});
    println!("{}", protocol::validate_action(&bad).expect_err("invalid"));
}
