//! `glovebox log`: the operation log a person reads — runs, every action on the one action
//! path (direct calls and runs alike) with its receipt state, and approvals — from the store in
//! the data directory (or the shared database of `--store`), while a server runs or after it
//! died.

use std::process::ExitCode;

use serde_json::Value;

use crate::cli::{Global, LogArgs};

pub fn run(global: &Global, args: &LogArgs) -> anyhow::Result<ExitCode> {
    let query = runtime::LogQuery {
        session: args.session.clone(),
        run: args.run.clone(),
        limit: args.limit,
    };
    let settings = crate::config::resolve(global, None)?;
    let entries = runtime::read_log(&settings.runtime, &query)?;
    for entry in &entries {
        if args.json {
            out!("{entry}");
        } else {
            out!("{}", line(entry));
        }
    }
    if entries.is_empty() && !args.json {
        out!(
            "(no records{})",
            args.session
                .as_deref()
                .map(|s| format!(" for {s}"))
                .unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `YYYY-MM-DD HH:MM:SS.mmm` (UTC) of milliseconds since the epoch.
fn time(ms: u64) -> String {
    let (days, rest) = (ms / 86_400_000, ms % 86_400_000);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, milli) = (
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000,
    );
    format!("{year:04}-{month:02}-{day:02} {h:02}:{m:02}:{s:02}.{milli:03}")
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

fn line(e: &Value) -> String {
    let at = time(e["at"].as_u64().unwrap_or(0));
    let scope = match e["run_id"].as_str().filter(|r| *r != text(e, "session_id")) {
        Some(run) => format!("{} {run}", text(e, "session_id")),
        None => text(e, "session_id").to_owned(),
    };
    match text(e, "kind") {
        "run_started" => {
            format!(
                "{at}  {scope}  run started on {} ({}): {:?}",
                text(e, "surface"),
                e["model"].as_str().unwrap_or("no model recorded"),
                text(e, "task")
            )
        }
        "run_ended" => {
            let cost = e["accounting"]["model_requests"]
                .as_u64()
                .map(|n| format!(", {n} model request(s)"))
                .unwrap_or_default();
            format!(
                "{at}  {scope}  run ended {} ({}) after {} step(s){cost}: {}",
                text(e, "status"),
                text(e, "reason"),
                e["steps"],
                text(e, "summary")
            )
        }
        "approval" => format!(
            "{at}  {scope}  approval {} for {} on {} → {}",
            text(e, "tier"),
            text(e, "action"),
            text(e, "origin"),
            e["outcome"].as_str().unwrap_or("pending")
        ),
        _ => {
            let typed = match e["text_chars"].as_u64() {
                Some(n) if e["secret"] == true => format!(" ({n} secret chars)"),
                Some(n) => format!(" ({n} chars)"),
                None => String::new(),
            };
            let frames = match e["frame_after"].as_str() {
                Some(after) => format!("{} → {after}", text(e, "frame_before")),
                None => text(e, "frame_before").to_owned(),
            };
            let why = match (e["error"].as_str(), e["detail"].as_str()) {
                (Some(code), Some(detail)) => format!(": {code}: {detail}"),
                (Some(code), None) => format!(": {code}"),
                (None, Some(detail)) => format!(": {detail}"),
                (None, None) => String::new(),
            };
            let uncertain = if e["effect_uncertain"] == true {
                " (effect uncertain)"
            } else {
                ""
            };
            format!(
                "{at}  {scope}  {} {}{typed} on {} at {} [{frames}] → {}{uncertain}{why}",
                text(e, "action"),
                text(e, "target"),
                text(e, "surface"),
                e["url"].as_str().unwrap_or("(no page)"),
                text(e, "state")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::time;

    #[test]
    fn times_are_utc_civil_dates() {
        assert_eq!(time(0), "1970-01-01 00:00:00.000");
        assert_eq!(time(1_796_125_201_123), "2026-12-01 11:40:01.123");
        assert_eq!(time(951_782_400_000), "2000-02-29 00:00:00.000");
    }
}
