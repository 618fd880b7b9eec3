//! `bench agent`: a model-driven run against the providers' reference loops.

use super::*;

/// The agent bench's task: four fields at fixed places and a button (a 1280×720 viewport).
const SHIPPING_PAGE: &str = r#"<!doctype html><html><head><meta charset=utf-8><title>Shipping</title>
<style>body{margin:0;font:16px sans-serif} label{position:absolute;left:40px;width:140px} input{position:absolute;left:200px;width:300px;height:30px;font:16px sans-serif}
button{position:absolute;left:200px;top:340px;width:160px;height:40px}</style></head><body>
<h1 style="position:absolute;left:40px;top:10px;margin:0">Shipping address</h1>
<label for=name style="top:105px">Name</label><input id=name style="top:100px">
<label for=email style="top:165px">Email</label><input id=email type=email style="top:160px">
<label for=city style="top:225px">City</label><input id=city style="top:220px">
<label for=zip style="top:285px">Zip</label><input id=zip style="top:280px">
<button id=ship>Ship it</button><p id=out style="position:absolute;left:40px;top:400px"></p>
<script>document.getElementById('ship').onclick = () => { const v = (id) => document.getElementById(id).value;
document.getElementById('out').textContent = (v('name') === 'Ada' && v('email') === 'ada@example.com' && v('city') === 'London' && v('zip') === 'N1 9GU') ? 'Order placed for Ada' : 'Something is missing'; };</script>
</body></html>"#;

/// The fields the task fills: (label, value, the field's centre in CSS pixels).
const SHIPPING_FIELDS: [(&str, &str, (f64, f64)); 4] = [
    ("Name", "Ada", (350.0, 115.0)),
    ("Email", "ada@example.com", (350.0, 175.0)),
    ("City", "London", (350.0, 235.0)),
    ("Zip", "N1 9GU", (350.0, 295.0)),
];

/// Prefixes in the scripted model's prompt cache (hashes of their content).
static PROMPT_CACHE: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());

/// The estimated tokens (four characters each) of the tool definitions in the scripted model's
/// latest request: what every request of a run carries before any page.
static TOOL_TOKENS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// What Anthropic's prompt cache would make of `body`, as (tokens read, tokens written): each
/// breakpoint's prefix (tools and system, then the messages up to a marked block) of at least
/// 1,024 tokens is written; a later request reads the longest cached prefix that ends at one of
/// its breakpoints or at a message boundary before one (the cache looks back from each
/// breakpoint), and writes the rest up to its last breakpoint. Markers are not content.
fn cache_usage(body: &serde_json::Value) -> (u64, u64) {
    fn unmarked(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => m
                .iter()
                .filter(|(k, _)| *k != "cache_control")
                .map(|(k, v)| (k.clone(), unmarked(v)))
                .collect(),
            serde_json::Value::Array(a) => a.iter().map(unmarked).collect(),
            other => other.clone(),
        }
    }
    let marked = |v: &serde_json::Value| v.to_string().contains("\"cache_control\"");
    // Every prefix at a message boundary, and whether a breakpoint ends it.
    let mut prefix = unmarked(&json!([body["tools"], body["system"]])).to_string();
    let mut boundaries = vec![(prefix.clone(), marked(&body["system"]))];
    for m in body["messages"].as_array().into_iter().flatten() {
        prefix.push_str(&unmarked(m).to_string());
        boundaries.push((prefix.clone(), marked(m)));
    }
    let last = boundaries
        .iter()
        .rposition(|(_, marked)| *marked)
        .map_or(0, |i| i + 1);
    boundaries.truncate(last);
    let hash = |text: &str| {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        h.finish()
    };
    let mut cache = PROMPT_CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let sized: Vec<(u64, u64, bool)> = boundaries
        .iter()
        .map(|(b, marked)| (hash(b), b.len() as u64 / 4, *marked))
        .filter(|(_, tokens, _)| *tokens >= 1024)
        .collect();
    let read = sized
        .iter()
        .filter(|(h, _, _)| cache.contains(h))
        .map(|(_, t, _)| *t)
        .max()
        .unwrap_or(0);
    let write = sized
        .iter()
        .filter(|(_, _, marked)| *marked)
        .map(|(_, t, _)| *t)
        .max()
        .unwrap_or(0)
        .saturating_sub(read);
    for (h, _, marked) in sized {
        if marked && !cache.contains(&h) {
            cache.push(h);
        }
    }
    (read, write)
}

/// A scripted model behind the Anthropic Messages wire format. With Glovebox's tools it reads
/// the outline (as a model reads text): it types each empty field by ref, then clicks the
/// button. With only the computer tool and screenshots it is a perfect vision model that knows
/// where the page's fields are in the picture: click a field, type, next, click the button.
/// Either says done with the check the page shows. Usage is counted as the provider would bill
/// it: text at four characters a token, images at width × height / 750, and the prompt cache's
/// share apart ([`cache_usage`]).
async fn scripted_model(
    axum::Json(body): axum::Json<serde_json::Value>,
) -> axum::Json<serde_json::Value> {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let mut image_tokens = 0u64;
    let mut text = body.clone();
    for m in text["messages"].as_array_mut().into_iter().flatten() {
        for block in m["content"].as_array_mut().into_iter().flatten() {
            if block["type"] == "image" {
                let data = block["source"]["data"].as_str().unwrap_or_default();
                if let Some(h) =
                    ::runtime::decode_base64(&data[..data.len().min(44)]).filter(|h| h.len() >= 24)
                {
                    let (w, hh) = (
                        u32::from_be_bytes([h[16], h[17], h[18], h[19]]),
                        u32::from_be_bytes([h[20], h[21], h[22], h[23]]),
                    );
                    image_tokens += (u64::from(w) * u64::from(hh)).div_ceil(750);
                }
                block["source"]["data"] = json!("");
            }
        }
    }
    let input_tokens = text.to_string().len() as u64 / 4 + image_tokens;
    TOOL_TOKENS.store(
        body["tools"].to_string().len() as u64 / 4,
        std::sync::atomic::Ordering::Relaxed,
    );
    let (read, write) = cache_usage(&text);
    let latest: String = messages
        .iter()
        .rev()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|b| {
            b["text"]
                .as_str()
                .or(b["content"].as_str())
                .map(str::to_owned)
        })
        .find(|t| t.contains("frame_id: "))
        .unwrap_or_default();
    let frame = latest
        .split("frame_id: ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_default()
        .to_owned();
    let computer = body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "computer"));
    let done = json!({"summary": "shipped", "checks": [{"kind": "text_present", "text": "Order placed for Ada"}]});
    let (tool, input) = if latest.contains("Order placed for Ada") {
        ("done", done)
    } else if computer {
        // The plan a vision model follows, one action per answer, by what it already did.
        let acted = messages.iter().filter(|m| m["role"] == "assistant").count();
        let scale = 1.0; // the bench's viewport is captured at 1:1
        match acted {
            n if n < 8 && n % 2 == 0 => {
                let (x, y) = SHIPPING_FIELDS[n / 2].2;
                (
                    "computer",
                    json!({"action": "left_click", "coordinate": [x * scale, y * scale]}),
                )
            }
            n if n < 8 => (
                "computer",
                json!({"action": "type", "text": SHIPPING_FIELDS[n / 2].1}),
            ),
            8 => (
                "computer",
                json!({"action": "left_click", "coordinate": [280.0 * scale, 360.0 * scale]}),
            ),
            _ => ("done", done),
        }
    } else {
        let reference = |role: &str, name: &str| {
            let needle = format!("{role} \"{name}\" [");
            latest
                .split(&needle)
                .nth(1)
                .and_then(|r| r.split([' ', ']']).next())
                .map(str::to_owned)
        };
        let empty = SHIPPING_FIELDS.iter().find(|(label, value, _)| {
            !latest.lines().any(|l| {
                l.contains(&format!("textbox \"{label}\"")) && l.contains(&format!(": \"{value}\""))
            })
        });
        match empty {
            Some((label, value, _)) => match reference("textbox", label) {
                Some(r) => (
                    "act",
                    json!({"type": "type", "expected_frame_id": frame, "target": {"kind": "element", "ref": r}, "text": value, "intent": format!("fill in {label}")}),
                ),
                None => ("give_up", json!({"reason": format!("no {label} field")})),
            },
            None => match reference("button", "Ship it") {
                Some(b) => (
                    "act",
                    json!({"type": "click", "expected_frame_id": frame, "target": {"kind": "element", "ref": b}, "intent": "ship"}),
                ),
                None => ("give_up", json!({"reason": "no button"})),
            },
        }
    };
    let output_tokens = input.to_string().len() as u64 / 4 + 10;
    axum::Json(json!({
        "id": "msg_bench", "type": "message", "role": "assistant", "model": body["model"],
        "content": [{"type": "tool_use", "id": format!("toolu_{}", messages.len()), "name": tool, "input": input}],
        "stop_reason": "tool_use", "usage": {"input_tokens": input_tokens.saturating_sub(read + write), "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write, "output_tokens": output_tokens},
    }))
}

pub(super) async fn bench_agent(
    global: &Global,
    iterations: usize,
    ratios: &mut Vec<(String, f64)>,
) -> anyhow::Result<Vec<(String, Stats)>> {
    use ::runtime::{Assertion, RunRequest, Runtime};
    let pages =
        crate::pages::LoopbackPages::serve([("/ship".to_owned(), SHIPPING_PAGE.to_owned())].into())
            .await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base_url = format!("http://{}", listener.local_addr()?);
    let app = axum::Router::new().route("/v1/messages", axum::routing::post(scripted_model));
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let (settings, config) = super::trusting(global, &pages)?;
    let rt = Runtime::start(config, settings.adapter()).await?;
    let mut results = Vec::new();
    for (label, screenshots) in [("glovebox dom-first", false), ("screenshot-only", true)] {
        let (mut requests, mut tokens, mut steps_taken, mut images) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut billed = Vec::new();
        let mut per_step = Vec::new();
        for _ in 0..iterations.max(1) {
            let session = rt.create_session().await?;
            rt.open_tab(&session, &pages.url("/ship"), Duration::ZERO)
                .await?;
            let choice = agent::ModelChoice {
                provider: agent::ProviderKind::Anthropic,
                model: "scripted".into(),
                base_url: Some(base_url.clone()),
                api_key_env: Some(String::new()),
                computer_tool: screenshots,
                computer_tool_version: None,
            };
            let accounting =
                std::sync::Arc::new(std::sync::Mutex::new(agent::Accounting::default()));
            let mut planner = agent::ModelPlanner::for_choice(&choice, accounting.clone())?;
            if screenshots {
                planner = planner.screenshot_only();
            }
            let mut request = RunRequest::new(
                "Fill in the shipping address for Ada (ada@example.com, London, N1 9GU) and ship it",
            );
            request.max_steps = 16;
            request.max_seconds = 120;
            request.assertions = vec![Assertion::TextPresent {
                text: "Order placed for Ada".into(),
            }];
            let result = rt.run(&session, request, Box::new(planner)).await?;
            anyhow::ensure!(
                result.status() == protocol::RunStatus::Succeeded,
                "{label}: the task did not complete: {result:?}"
            );
            let query = ::runtime::LogQuery {
                session: Some(session.as_str().to_owned()),
                run: None,
                limit: 0,
            };
            let time = rt
                .log(&query)?
                .into_iter()
                .rev()
                .find(|e| e["kind"] == "run_ended")
                .map(|e| e["accounting"]["time"].clone())
                .unwrap_or_default();
            let a = accounting.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let steps = u64::from(result.steps_taken()).max(1);
            let without_model = time["total_ms"]
                .as_u64()
                .unwrap_or(0)
                .saturating_sub(time["model_ms"].as_u64().unwrap_or(0));
            per_step.push(Duration::from_micros(without_model * 1000 / steps));
            requests.push(a.model_requests as f64);
            tokens.push((a.input_tokens + a.output_tokens) as f64);
            // Input as billed: cache reads at a tenth of the base price, writes at 1.25 times it.
            let uncached = a
                .input_tokens
                .saturating_sub(a.cache_read_tokens + a.cache_write_tokens)
                as f64;
            billed.push(
                uncached + 0.1 * a.cache_read_tokens as f64 + 1.25 * a.cache_write_tokens as f64,
            );
            images.push(a.image_tokens as f64);
            steps_taken.push(steps as f64);
            rt.close_session(&session).await?;
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(|a, b| a.total_cmp(b));
            v[v.len() / 2]
        };
        let (r, t, s, i) = (
            median(&mut requests),
            median(&mut tokens),
            median(&mut steps_taken),
            median(&mut images),
        );
        ratios.push((
            format!("{label}: tool definitions, est. tokens per request"),
            TOOL_TOKENS.load(std::sync::atomic::Ordering::Relaxed) as f64,
        ));
        ratios.push((format!("{label}: model requests per run"), r));
        ratios.push((format!("{label}: model requests per step"), r / s));
        ratios.push((format!("{label}: tokens per run (image tokens {i:.0})"), t));
        ratios.push((format!("{label}: tokens per step"), t / s));
        ratios.push((
            format!("{label}: input tokens per run as billed with the prompt cache"),
            median(&mut billed),
        ));
        results.push((
            format!("{label}: runtime per step without the model"),
            Stats::of(&mut per_step),
        ));
    }
    let value = |name: &str| {
        ratios
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0.0, |(_, v)| *v)
    };
    let request_ratio = value("screenshot-only: model requests per run")
        / value("glovebox dom-first: model requests per run").max(1.0);
    ratios.push((
        "screenshot-only ÷ glovebox: model requests".into(),
        request_ratio,
    ));
    let token_key = |label: &str| {
        ratios
            .iter()
            .find(|(n, _)| n.starts_with(&format!("{label}: tokens per run")))
            .map_or(0.0, |(_, v)| *v)
    };
    ratios.push((
        "screenshot-only ÷ glovebox: tokens".into(),
        token_key("screenshot-only") / token_key("glovebox dom-first").max(1.0),
    ));
    rt.shutdown(Duration::from_secs(5)).await;
    server.abort();
    Ok(results)
}
