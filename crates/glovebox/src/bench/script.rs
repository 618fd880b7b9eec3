//! `glovebox bench script`: a deterministic 10-step form task done as one `gui_exec` call and as
//! ten `act` calls on the same runtime (each `act` is a model round trip in a real agent; the
//! script is one), and the sandboxed runner's start-up, cold (a new session's first call) and
//! warm (its next call).

use std::time::{Duration, Instant};

use ::runtime::{ActOptions, ObserveOptions, Runtime};

use super::Stats;
use crate::cli::Global;

/// The form: nine fields and a save button, all in the page (nothing leaves it).
const FORM: &str = r#"<!doctype html><title>Profile</title><h1>Edit profile</h1>
<form id=f>
<label>First name <input name=first></label><label>Last name <input name=last></label>
<label>Email <input name=email></label><label>Phone <input name=phone></label>
<label>City <input name=city></label><label>Street <input name=street></label>
<label>Postcode <input name=postcode></label><label>Company <input name=company></label>
<label>Notes <textarea name=notes></textarea></label>
<button>Save profile</button></form><p id=out></p>
<script>document.getElementById('f').onsubmit = e => { e.preventDefault(); document.getElementById('out').textContent = 'Saved ' + new FormData(e.target).get('first'); }</script>"#;

const FIELDS: [(&str, &str); 9] = [
    ("First name", "Ada"),
    ("Last name", "Lovelace"),
    ("Email", "ada@example.org"),
    ("Phone", "+44 20 7946 0000"),
    ("City", "London"),
    ("Street", "1 Analytical Row"),
    ("Postcode", "N1 9GU"),
    ("Company", "Engines Ltd"),
    ("Notes", "ten steps"),
];

pub(super) async fn bench_script(
    global: &Global,
    iterations: usize,
    ratios: &mut Vec<(String, f64)>,
) -> anyhow::Result<Vec<(String, Stats)>> {
    let pages =
        crate::pages::LoopbackPages::serve([("/form".to_owned(), FORM.to_owned())].into()).await?;
    let (settings, config) = super::trusting(global, &pages)?;
    let rt = Runtime::start(config, settings.adapter()).await?;
    if let Err(why) = rt.script_sandbox().await {
        anyhow::bail!("gui_exec is unavailable here: {why}");
    }
    let url = pages.url("/form");
    let runs = iterations.clamp(3, 15);
    let mut results = Vec::new();

    // Start-up: a new session's first call starts its sandbox (cold); its second call reuses it.
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let session = rt.create_session().await?;
        let first = rt.gui_exec(&session, None, "pass", Duration::ZERO).await?;
        cold.push(Duration::from_millis(first.timing.total_ms));
        let started = Instant::now();
        rt.gui_exec(&session, None, "pass", Duration::ZERO).await?;
        warm.push(started.elapsed());
        rt.close_session(&session).await?;
    }
    results.push((
        "gui_exec start-up, cold (sandbox + interpreter)".to_owned(),
        Stats::of(&mut cold),
    ));
    results.push((
        "gui_exec call, warm (an empty script)".to_owned(),
        Stats::of(&mut warm),
    ));

    // The task both ways, each on a fresh tab.
    let mut script_times = Vec::new();
    let mut act_times = Vec::new();
    let (mut fills, mut clicks) = (Vec::new(), Vec::new());
    let code = {
        let mut code = String::from("page = ui.page()\n");
        for (label, value) in FIELDS {
            code.push_str(&format!(
                "await page.get_by_label({label:?}).fill({value:?})\n"
            ));
        }
        code.push_str("await page.get_by_role('button', name='Save profile').click()\n");
        code.push_str("obs = await page.observe()\nassert 'Saved Ada' in obs.text, obs.text\n");
        code
    };
    for _ in 0..runs {
        let session = rt.create_session().await?;
        rt.open_tab(&session, &url, Duration::ZERO).await?;
        rt.gui_exec(&session, None, "pass", Duration::ZERO).await?;
        let started = Instant::now();
        let result = rt.gui_exec(&session, None, &code, Duration::ZERO).await?;
        script_times.push(started.elapsed());
        anyhow::ensure!(
            result.status == script::ExecStatus::Ok,
            "the script failed: {:?}",
            result.error
        );
        let acts: Vec<_> = result
            .operations
            .iter()
            .filter(|o| o.method == script::Method::Act)
            .map(|o| Duration::from_millis(o.ms))
            .collect();
        if let Some((click, typed)) = acts.split_last() {
            fills.extend_from_slice(typed);
            clicks.push(*click);
        }
        rt.close_session(&session).await?;

        let session = rt.create_session().await?;
        rt.open_tab(&session, &url, Duration::ZERO).await?;
        let started = Instant::now();
        let mut frame = rt
            .observe(&session, None, &ObserveOptions::default())
            .await?
            .frame_id()
            .as_str()
            .to_owned();
        let mut steps: Vec<serde_json::Value> = FIELDS
            .iter()
            .map(|(label, value)| serde_json::json!({"type": "type", "target": {"kind": "label", "text": label}, "text": value, "intent": "fill"}))
            .collect();
        steps.push(serde_json::json!({"type": "click", "target": {"kind": "role", "role": "button", "name": "Save profile"}, "intent": "save"}));
        for mut step in steps {
            step["expected_frame_id"] = serde_json::json!(frame);
            let action = protocol::validate_extended_action(&step)?;
            let outcome = rt
                .act(
                    &session,
                    None,
                    &action,
                    &ActOptions::default(),
                    Duration::ZERO,
                )
                .await?;
            frame = match outcome.observation {
                Some(o) => o.frame_id().as_str().to_owned(),
                None => rt
                    .observe(&session, None, &ObserveOptions::default())
                    .await?
                    .frame_id()
                    .as_str()
                    .to_owned(),
            };
        }
        act_times.push(started.elapsed());
        rt.close_session(&session).await?;
    }
    results.push((
        "  of which: one fill (label locator, type, settle, observe)".to_owned(),
        Stats::of(&mut fills),
    ));
    results.push((
        "  of which: the save click (+ settle, observe)".to_owned(),
        Stats::of(&mut clicks),
    ));
    let script = Stats::of(&mut script_times);
    let acts = Stats::of(&mut act_times);
    results.push((
        "10-step form: one gui_exec call (1 model round trip)".to_owned(),
        script,
    ));
    results.push((
        "10-step form: ten act calls (10 model round trips)".to_owned(),
        acts,
    ));
    ratios.push((
        "ten act calls / one gui_exec (runtime time, median)".to_owned(),
        acts.median.as_secs_f64() / script.median.as_secs_f64().max(1e-9),
    ));
    ratios.push(("model round trips saved per task".to_owned(), 9.0));
    Ok(results)
}
