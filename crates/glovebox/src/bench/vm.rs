//! `bench vm`: VM guests under QEMU (TCG where KVM does not work): the guest image's build
//! (cold, with the kernel's download, and cached), boot to a guest server that answers (one
//! guest, and two side by side), screenshot and click round trips through the adapter per guest,
//! two guests driven in parallel against one after the other, and each guest's memory.

use std::sync::Arc;

use protocol::{ExtendedAction, ImageMime};
use surface::{ActOptions, ObserveOptions, Surface, SurfaceAdapter as _};

use super::*;

fn rss_mb(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn boot(
    image: &::vm::qemu::GuestImage,
    dir: &std::path::Path,
    name: &str,
) -> anyhow::Result<::vm::qemu::Guest> {
    Ok(::vm::qemu::Guest::boot(
        image,
        &::vm::qemu::BootOptions {
            name: name.into(),
            dir: dir.join(name),
            memory_mb: 512,
            screen: [1024, 768],
            token: Some(::vm::Token::generate()),
            port: None,
        },
        false,
    )?)
}

fn click(frame: &protocol::FrameId, x: u32, y: u32) -> anyhow::Result<ExtendedAction> {
    Ok(serde_json::from_value(json!({
        "type": "click",
        "expected_frame_id": frame.as_str(),
        "target": {"kind": "point", "x": x, "y": y},
        "intent": "bench"
    }))?)
}

/// Clicks `n` times on `screen`, each on the frame the previous one returned.
async fn clicks(
    screen: &Arc<dyn Surface>,
    n: usize,
    samples: &mut Vec<Duration>,
) -> anyhow::Result<()> {
    let options = ActOptions::default();
    let mut frame = screen
        .observe(&ObserveOptions::default())
        .await?
        .frame_id()
        .clone();
    for i in 0..n {
        let started = Instant::now();
        let out = screen
            .act(&click(&frame, 100 + (i as u32 % 50), 100)?, &options)
            .await?;
        samples.push(started.elapsed());
        frame = match out.observation {
            Some(o) => o.frame_id().clone(),
            None => screen
                .observe(&ObserveOptions::default())
                .await?
                .frame_id()
                .clone(),
        };
    }
    Ok(())
}

pub async fn bench_vm(
    global: &Global,
    iterations: usize,
    ratios: &mut Vec<(String, f64)>,
) -> anyhow::Result<Vec<(String, Stats)>> {
    let settings = crate::config::resolve(global, None)?;
    let guest_binary = ::vm::qemu::guest_binary()?;
    let scratch = std::env::temp_dir().join(format!("glovebox-bench-vm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch)?;
    let mut results = Vec::new();

    // The image: cold in a directory of its own (the kernel package fetched and unpacked), then
    // cached.
    let cold_dir = scratch.join("image");
    let started = Instant::now();
    let gb = guest_binary.clone();
    let cd = cold_dir.clone();
    tokio::task::spawn_blocking(move || ::vm::qemu::build_image(&cd, &gb)).await??;
    results.push((
        "vm image build, cold (kernel fetched)".to_owned(),
        Stats::of(&mut [started.elapsed()]),
    ));
    let mut cached = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        let gb = guest_binary.clone();
        let cd = cold_dir.clone();
        tokio::task::spawn_blocking(move || ::vm::qemu::build_image(&cd, &gb)).await??;
        cached.push(started.elapsed());
    }
    results.push(("vm image build, cached".to_owned(), Stats::of(&mut cached)));
    let image_dir = crate::vm::image_dir(&settings.runtime.data_dir);
    let gb = guest_binary.clone();
    let image =
        tokio::task::spawn_blocking(move || ::vm::qemu::build_image(&image_dir, &gb)).await??;
    let accel = ::vm::qemu::Accelerator::detect();
    out!("accelerator: {} ({})", accel.name, accel.why);

    // Boot to ready, one guest at a time.
    let mut one = Vec::new();
    for i in 0..iterations.max(1) {
        let mut g = boot(&image, &scratch, &format!("one{i}"))?;
        one.push(g.wait_ready(Duration::from_secs(180)).await?);
    }
    results.push((
        "vm boot to ready, one guest".to_owned(),
        Stats::of(&mut one),
    ));
    // Two side by side: until both answer.
    let mut two = Vec::new();
    let mut kept = Vec::new();
    for i in 0..iterations.max(1).div_ceil(2) {
        let started = Instant::now();
        let mut a = boot(&image, &scratch, &format!("a{i}"))?;
        let mut b = boot(&image, &scratch, &format!("b{i}"))?;
        let (ra, rb) = tokio::join!(
            a.wait_ready(Duration::from_secs(180)),
            b.wait_ready(Duration::from_secs(180))
        );
        ra?;
        rb?;
        two.push(started.elapsed());
        kept = vec![a, b];
    }
    results.push((
        "vm boot to ready, two side by side (both)".to_owned(),
        Stats::of(&mut two),
    ));
    let [a, b] = <[::vm::qemu::Guest; 2]>::try_from(kept)
        .map_err(|_| anyhow::anyhow!("two guests were not kept"))?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    ratios.push(("vm rss per guest, MB (a)".into(), rss_mb(a.pid)));
    ratios.push(("vm rss per guest, MB (b)".into(), rss_mb(b.pid)));

    let configs = [&a, &b]
        .iter()
        .map(|g| ::vm::GuestConfig {
            name: g.name.clone(),
            endpoint: g.endpoint(),
            token: g.token.clone(),
        })
        .collect::<Vec<_>>();
    let adapter = ::vm::VmAdapter::new(configs);
    adapter.connect().await?;
    let sa = adapter.attach(format!("vm:{}", a.name), None).await?;
    let sb = adapter.attach(format!("vm:{}", b.name), None).await?;
    // A window to click in (xterm, the image's real app).
    for g in [&a, &b] {
        g.client()
            .execute(
                "DISPLAY=:0 xterm -geometry 80x24+20+20 >/dev/null 2>&1 &",
                Duration::from_secs(10),
            )
            .await?;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;

    let shot = ObserveOptions {
        screenshot: Some(ImageMime::Png),
        ..ObserveOptions::default()
    };
    let n = 20;
    for (name, screen) in [("a", &sa), ("b", &sb)] {
        let mut samples = Vec::new();
        for _ in 0..n {
            let started = Instant::now();
            screen.observe(&shot).await?;
            samples.push(started.elapsed());
        }
        results.push((
            format!("vm observe with screenshot 1024x768 (guest {name})"),
            Stats::of(&mut samples),
        ));
        let mut samples = Vec::new();
        clicks(screen, n, &mut samples).await?;
        results.push((
            format!("vm click + fresh observation (guest {name})"),
            Stats::of(&mut samples),
        ));
    }
    // Two guests driven one after the other, then at once.
    let started = Instant::now();
    let mut sink = Vec::new();
    clicks(&sa, n, &mut sink).await?;
    clicks(&sb, n, &mut sink).await?;
    let sequential = started.elapsed();
    let started = Instant::now();
    let (mut da, mut db) = (Vec::new(), Vec::new());
    let (ra, rb) = tokio::join!(clicks(&sa, n, &mut da), clicks(&sb, n, &mut db));
    ra?;
    rb?;
    let parallel = started.elapsed();
    results.push((
        format!("vm {n} clicks on each of two guests, one after the other"),
        Stats::of(&mut [sequential]),
    ));
    results.push((
        format!("vm {n} clicks on each of two guests, at once"),
        Stats::of(&mut [parallel]),
    ));
    ratios.push((
        "vm two guests: sequential / parallel".into(),
        sequential.as_secs_f64() / parallel.as_secs_f64().max(1e-9),
    ));
    drop((sa, sb));
    drop((a, b));
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(results)
}
