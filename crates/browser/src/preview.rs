//! `Tab::preview`: the bounded turn-start preview — title, origin, viewport-visible text,
//! landmarks, interactive count — with no screenshot, no refs and no hidden content.

use std::time::Duration;

use protocol::limits::{PREVIEW_LANDMARKS_MAX, PREVIEW_TEXT_MAX_CHARS};
use protocol::{Landmark, Preview, PreviewParts};
use serde::Deserialize;

use crate::capture::{WorldState, evaluate_in, forget_context, world_context};
use crate::observe::{frame_id, now_ms};
use crate::tab::Tab;

const PREVIEW_JS: &str = include_str!("js/preview.js");

#[derive(Deserialize)]
struct RawLandmark {
    role: String,
    name: String,
}

#[derive(Deserialize)]
struct RawPreview {
    state: WorldState,
    title: String,
    text: String,
    landmarks: Vec<RawLandmark>,
    interactive_count: u32,
}

impl Tab {
    /// A preview for the start of a turn. Never fails: a capture that keeps changing, overruns
    /// `deadline`, or cannot read the page yields `preview_status: unavailable`.
    pub async fn preview(&self, deadline: Duration) -> Preview {
        let captured_at = now_ms();
        let attempt = async {
            let _read = self.barrier.read().await;
            for _ in 0..2 {
                match self.preview_once().await {
                    Some(Ok(preview)) => return Some(preview),
                    Some(Err(())) => continue,
                    None => return None,
                }
            }
            None
        };
        match tokio::time::timeout(deadline, attempt).await {
            Ok(Some(preview)) => preview,
            _ => Preview::unavailable(String::new(), String::new(), captured_at),
        }
    }

    /// `Some(Err(()))` = the page changed during capture (retry); `None` = cannot read it.
    async fn preview_once(&self) -> Option<Result<Preview, ()>> {
        self.check_alive().ok()?;
        let navigation = self.navigation_epoch();
        let context = world_context(self).await.ok()?;
        // One synchronous turn in the page: text, landmarks and the world state cannot tear.
        let expression = format!(
            "({PREVIEW_JS})({}, {})",
            PREVIEW_TEXT_MAX_CHARS, PREVIEW_LANDMARKS_MAX
        );
        let value = match evaluate_in(&self.session, context, &expression).await {
            Ok(value) => value,
            Err(_) => {
                forget_context(&self.state, context);
                return Some(Err(()));
            }
        };
        let raw: RawPreview = serde_json::from_value(value).ok()?;
        if self.navigation_epoch() != navigation {
            return Some(Err(()));
        }
        let frame = frame_id(self.target_id().0.as_str(), navigation, &raw.state, None);
        // Text this tab typed into secret fields never comes back, wherever the page echoes it:
        // in a preview as in an observation.
        let secrets = crate::tab::lock(&self.state).secrets.clone();
        // …and no credential the page shows (`policy::redact_text`: URLs' query values, tokens,
        // `password=…` pairs), in its text, names, values, title and console.
        let scrub = |t: &str| secrets.redact(&policy::redact_text(t)).into_owned();
        Some(Ok(Preview::ready(PreviewParts {
            preview_frame_id: frame,
            content_epoch: raw.state.structural,
            captured_at: now_ms(),
            title: scrub(&raw.title),
            origin: policy::web_origin(&raw.state.url),
            visible_text: scrub(&raw.text),
            aria_landmarks: raw
                .landmarks
                .into_iter()
                .map(|l| Landmark::new(l.role, scrub(&l.name)))
                .collect(),
            interactive_count: raw.interactive_count,
        })))
    }
}
