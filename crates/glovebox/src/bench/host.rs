//! `bench host` and `bench console`: the host API and the live view end to end.

use super::*;

/// The resident set size of this process, in bytes.
pub(super) fn rss_bytes() -> u64 {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        });
    pages.unwrap_or(0) * 4096
}

/// The host API end to end: a renderer WebSocket on the server's own listener.
pub(super) async fn bench_host(
    global: &Global,
    ratios: &mut Vec<(String, f64)>,
) -> anyhow::Result<Vec<(String, Stats)>> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let pages = crate::pages::LoopbackPages::serve(
        [
            ("/login".to_owned(), crate::pages::LOGIN_PAGE.to_owned()),
            ("/shop".to_owned(), STORE_PAGE.to_owned()),
        ]
        .into(),
    )
    .await?;
    let settings = crate::config::resolve(global, None)?;
    let config = settings.runtime.clone();
    let rt = ::runtime::Runtime::start(config, settings.adapter()).await?;
    let options = server::HttpOptions {
        bind: "127.0.0.1:0".parse()?,
        ..server::HttpOptions::default()
    };
    let http = server::serve(rt.clone(), options).await?;
    let url = format!("ws://{}{}", http.local_addr, server::RENDERER_PATH);
    type Ws = tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >;
    async fn call(ws: &mut Ws, message: serde_json::Value) -> anyhow::Result<serde_json::Value> {
        ws.send(Message::Text(message.to_string().into())).await?;
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(t))) => return Ok(serde_json::from_str(&t)?),
                Some(Ok(_)) => continue,
                _ => anyhow::bail!("the renderer socket closed"),
            }
        }
    }
    async fn window(
        rt: &::runtime::Runtime,
        url: &str,
        id: &str,
        tabs: &[String],
    ) -> anyhow::Result<Ws> {
        let ticket = rt.register_window(id, &format!("{id}-r"))?;
        // The clients' own buffers small too: the figure is meant to be the server's.
        let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
            .read_buffer_size(8 << 10)
            .write_buffer_size(8 << 10);
        let (mut ws, _) =
            tokio_tungstenite::connect_async_with_config(url, Some(config), false).await?;
        let welcome = call(&mut ws, json!({"type": "hello", "nonce": ticket.nonce})).await?;
        anyhow::ensure!(welcome["type"] == "welcome", "{welcome}");
        let mut events = vec![
            json!({"op": "open", "registry_surface_id": "chat", "surface_revision": 1, "kind": "chat", "group_id": "g"}),
        ];
        for (i, tab) in tabs.iter().enumerate() {
            let region = if i == 0 { "right" } else { "center" };
            events.push(json!({"op": "open", "registry_surface_id": format!("web{i}"), "surface_revision": 1, "kind": "web_tab", "group_id": "g", "local_surface_id": tab, "region": region, "order": i}));
        }
        for (n, mut event) in events.into_iter().enumerate() {
            event["window_revision"] = json!(n + 1);
            event["layout_revision"] = json!(n + 1);
            let ack = call(
                &mut ws,
                json!({"type": "registry", "id": n, "event": event}),
            )
            .await?;
            anyhow::ensure!(ack["type"] == "ack", "{ack}");
        }
        Ok(ws)
    }
    let login = rt.register_user_tab(&pages.url("/login")).await?;
    let shop = rt.register_user_tab(&pages.url("/shop")).await?;
    tokio::time::sleep(Duration::from_millis(500)).await; // both pages load
    let tabs = vec![login, shop];
    let mut ws = window(&rt, &url, "bench-1", &tabs).await?;
    let refs = |revision: u64| {
        json!({"type": "chat_turn", "id": "t", "surface_refs": {"chat_session_id": "bench-chat", "chat_surface_id": "chat", "window_revision": revision, "layout_revision": revision,
            "visible": [{"registry_surface_id": "web0", "surface_revision": 1}, {"registry_surface_id": "web1", "surface_revision": 1}]}})
    };
    let mut results = Vec::new();
    // The first command of a turn binds the tabs (claims); later ones of the turn reuse them.
    let first = call(&mut ws, refs(3)).await?;
    anyhow::ensure!(first["type"] == "surface_context", "{first}");
    for s in first["context"]["surfaces"]
        .as_array()
        .into_iter()
        .flatten()
    {
        anyhow::ensure!(
            s["preview"]["preview_status"] == "ready",
            "a preview was not ready: {first}"
        );
    }
    let mut turns = Vec::new();
    for _ in 0..60 {
        let started = Instant::now();
        let turn = call(&mut ws, refs(3)).await?;
        turns.push(started.elapsed());
        anyhow::ensure!(turn["type"] == "surface_context", "{turn}");
    }
    results.push((
        "chat command → Surface Context (2 tabs, previews)".to_owned(),
        Stats::of(&mut turns),
    ));
    let mut fresh = Vec::new();
    for _ in 0..15 {
        let turn_id = call(&mut ws, refs(3)).await?["context"]["turn_id"].clone();
        call(&mut ws, json!({"type": "turn_end", "id": "e", "chat_session_id": "bench-chat", "turn_id": turn_id})).await?;
        let started = Instant::now();
        let turn = call(&mut ws, refs(3)).await?;
        fresh.push(started.elapsed());
        anyhow::ensure!(turn["type"] == "surface_context", "{turn}");
    }
    results.push((
        "first chat command of a turn (binds 2 tabs)".to_owned(),
        Stats::of(&mut fresh),
    ));
    let mut events = Vec::new();
    for n in 0..200u64 {
        let revision = 4 + n;
        let event = json!({"op": "update", "registry_surface_id": "web1", "window_revision": revision, "layout_revision": revision, "surface_revision": 2 + n, "order": n % 5});
        let started = Instant::now();
        let ack = call(
            &mut ws,
            json!({"type": "registry", "id": n, "event": event}),
        )
        .await?;
        events.push(started.elapsed());
        anyhow::ensure!(ack["type"] == "ack", "{ack}");
    }
    results.push((
        "registry event round trip (WebSocket)".to_owned(),
        Stats::of(&mut events),
    ));
    // Memory: 200 more windows, each with a chat and two tabs registered.
    let before = rss_bytes();
    let mut windows = Vec::new();
    for i in 0..200 {
        windows.push(window(&rt, &url, &format!("bench-w{i}"), &tabs).await?);
    }
    let after = rss_bytes();
    ratios.push((
        "memory per registered window, 3 surfaces, client included (KiB)".to_owned(),
        after.saturating_sub(before) as f64 / 200.0 / 1024.0,
    ));
    drop(windows);
    drop(ws);
    http.shutdown().await?;
    rt.shutdown(Duration::from_secs(5)).await;
    Ok(results)
}

/// CPU time (user + system) of this process and of every Chromium process, in seconds.
pub(super) fn cpu_seconds() -> f64 {
    let ticks = 100.0; // USER_HZ on Linux
    let of = |stat: &str| -> f64 {
        // Fields after the command name (which may hold spaces) start at state (field 3).
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let utime = fields
            .get(11)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        let stime = fields
            .get(12)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        (utime + stime) / ticks
    };
    let mut total = std::fs::read_to_string("/proc/self/stat")
        .map(|s| of(&s))
        .unwrap_or(0.0);
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if comm.starts_with("chrom") {
            total += std::fs::read_to_string(entry.path().join("stat"))
                .map(|s| of(&s))
                .unwrap_or(0.0);
        }
    }
    total
}

/// The console's live view end to end: the view WebSocket on the server's own listener, a page
/// changed over CDP, a session holding the tab for the pause figures.
pub(super) async fn bench_console(
    global: &Global,
    ratios: &mut Vec<(String, f64)>,
) -> anyhow::Result<Vec<(String, Stats)>> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    const PAGE: &str = "<!doctype html><title>Live</title><body style='margin:0;font:40px sans-serif'><p id=n>0</p><button style='width:200px;height:80px'>Press</button>\
        <script>let on = false; function tick() { if (on) document.getElementById('n').textContent = String(performance.now() | 0); requestAnimationFrame(tick); } tick();</script>";
    let pages =
        crate::pages::LoopbackPages::serve([("/live".to_owned(), PAGE.to_owned())].into()).await?;
    let (settings, config) = super::trusting(global, &pages)?;
    let chromium = ::browser::Chromium::new(settings.browser.clone());
    let rt = ::runtime::Runtime::start(config, chromium.clone()).await?;
    let http = server::serve(
        rt.clone(),
        server::HttpOptions {
            bind: "127.0.0.1:0".parse()?,
            ..server::HttpOptions::default()
        },
    )
    .await?;
    let session = rt.create_session().await?;
    rt.open_tab(&session, &pages.url("/live"), Duration::from_secs(10))
        .await?;
    let tabs = rt.tabs_for_person()?;
    let live = pages.url("/live");
    let resource = tabs
        .iter()
        .find(|t| t["url"] == live.as_str() && t["state"] == "open")
        .and_then(|t| t["tab"].as_str())
        .unwrap_or_default()
        .to_owned();
    anyhow::ensure!(
        !resource.is_empty(),
        "the page's tab record is missing: {tabs:?}"
    );
    let page = chromium.scratch_attach("/live").await?;
    let eval = async |expression: &str| page.eval(expression).await;

    let url = format!("ws://{}/api/tabs/{resource}/view", http.local_addr);
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await?;
    ws.send(Message::Text(
        json!({"type": "hello", "token": http.person.token})
            .to_string()
            .into(),
    ))
    .await?;
    ws.send(Message::Text(json!({"type": "show"}).to_string().into()))
        .await?;
    type Ws = tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >;
    /// The next message of `kind` within `within`.
    async fn next_of(ws: &mut Ws, kind: &str, within: Duration) -> Option<serde_json::Value> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let message = tokio::time::timeout_at(deadline, ws.next()).await.ok()??;
            if let Ok(Message::Text(t)) = message
                && let Ok(v) = serde_json::from_str::<serde_json::Value>(&t)
            {
                if v["type"] == kind {
                    return Some(v);
                }
                if v["type"] == "error" {
                    tracing::warn!(%v, "the view refused something");
                }
            }
        }
    }
    let bound = next_of(&mut ws, "bound", Duration::from_secs(10)).await;
    anyhow::ensure!(bound.is_some(), "the view did not bind");
    anyhow::ensure!(
        next_of(&mut ws, "frame", Duration::from_secs(10))
            .await
            .is_some(),
        "no first frame"
    );
    let mut results = Vec::new();

    // Page change → the frame showing it at the viewer (the frame after a quiet page).
    let mut latency = Vec::new();
    for i in 0..30 {
        while next_of(&mut ws, "frame", Duration::from_millis(300))
            .await
            .is_some()
        {}
        let started = Instant::now();
        eval(&format!(
            "document.getElementById('n').textContent = 'change {i}'; 1"
        ))
        .await?;
        if next_of(&mut ws, "frame", Duration::from_secs(5))
            .await
            .is_some()
        {
            latency.push(started.elapsed());
        }
    }
    results.push((
        "page change → frame at the viewer".to_owned(),
        Stats::of(&mut latency),
    ));

    // A page that changes every animation frame: frames per second and CPU, shown vs hidden.
    eval("on = true; 1").await?;
    let window = Duration::from_secs(5);
    let cpu = cpu_seconds();
    let started = Instant::now();
    let mut frames = 0u32;
    while started.elapsed() < window {
        if next_of(&mut ws, "frame", window.saturating_sub(started.elapsed()))
            .await
            .is_some()
        {
            frames += 1;
        }
    }
    let shown_cpu = (cpu_seconds() - cpu) / started.elapsed().as_secs_f64();
    ratios.push((
        "frames per second of one live preview (cap 10)".to_owned(),
        f64::from(frames) / started.elapsed().as_secs_f64(),
    ));
    ws.send(Message::Text(json!({"type": "hide"}).to_string().into()))
        .await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cpu = cpu_seconds();
    let started = Instant::now();
    while started.elapsed() < window {
        let _ = next_of(&mut ws, "frame", window.saturating_sub(started.elapsed())).await;
    }
    let hidden_cpu = (cpu_seconds() - cpu) / started.elapsed().as_secs_f64();
    ratios.push((
        "CPU (cores) with the preview shown, animating page".to_owned(),
        shown_cpu,
    ));
    ratios.push((
        "CPU (cores) with the preview hidden, same page".to_owned(),
        hidden_cpu,
    ));
    ratios.push((
        "CPU cost of one live preview (cores)".to_owned(),
        shown_cpu - hidden_cpu,
    ));
    eval("on = false; 1").await?;
    ws.send(Message::Text(json!({"type": "show"}).to_string().into()))
        .await?;

    // A person's press in the real entry → agent dispatch blocked, → pause confirmed.
    let mut blocked = Vec::new();
    let mut paused = Vec::new();
    for i in 0..20 {
        let started = Instant::now();
        let press = json!({"type": "input", "id": i, "input": "pointer", "event": "down", "x": 100.0, "y": 120.0, "button": "left", "click_count": 1});
        ws.send(Message::Text(press.to_string().into())).await?;
        loop {
            match rt.control_of(&resource) {
                ::runtime::Control::Pausing => {
                    blocked.push(started.elapsed());
                    break;
                }
                ::runtime::Control::Paused | ::runtime::Control::PauseFailed => {
                    // Confirmed before the first look: blocked no later than now.
                    blocked.push(started.elapsed());
                    break;
                }
                _ if started.elapsed() > Duration::from_secs(5) => {
                    anyhow::bail!("the press never blocked the agent")
                }
                _ => tokio::task::yield_now().await,
            }
        }
        while !matches!(rt.control_of(&resource), ::runtime::Control::Paused) {
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(10),
                "the pause was never confirmed ({:?})",
                rt.control_of(&resource)
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        paused.push(started.elapsed());
        let release = json!({"type": "input", "id": 1000 + i, "input": "pointer", "event": "up", "x": 100.0, "y": 120.0, "button": "left", "click_count": 1});
        ws.send(Message::Text(release.to_string().into())).await?;
        next_of(&mut ws, "input_done", Duration::from_secs(5)).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        rt.hand_back(&resource)?;
    }
    results.push((
        "person's press → agent dispatch blocked".to_owned(),
        Stats::of(&mut blocked),
    ));
    results.push((
        "person's press → pause confirmed".to_owned(),
        Stats::of(&mut paused),
    ));
    drop(ws);
    http.shutdown().await?;
    rt.shutdown(Duration::from_secs(5)).await;
    Ok(results)
}
