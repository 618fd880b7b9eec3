//! A person's live view of the exact page and their real entry into it (`004_…` Resources 与统一
//! 操作预览, 让出控制的规则). The view has its own attachment to the tab (never an agent's lease,
//! `SurfaceAdapter::person_view`): frames bounded in rate and single-flight (the adapter sends
//! the next frame only once the previous one is acknowledged, and the acknowledgement waits out
//! the minimum interval), each frame carrying the tab's resource id, the view's binding
//! generation, a sequence number and its capture time.
//!
//! Human input through the view (the real entry) is dispatched to the page as the person's own.
//! Input that acts — a pointer press (a click, the start of a text selection), a wheel scroll, a
//! key that types or commands (not Tab or Shift+Tab, not a lone modifier), a navigation — first
//! blocks new agent dispatch on the page's input scope at once and asks the run to pause, the
//! same single stop request as "pause agent, I'll take over" (`control.rs`); hover, pointer
//! release and key release do not. The person's input is never delayed for it.

use std::time::Duration;

use std::sync::Arc;

use serde::Serialize;
use surface::{PersonCast, PersonInput, PersonInputRefused};

use crate::RuntimeError;
use crate::control::Control;
use crate::runtime::Runtime;

/// At most this many frames a second reach a view.
pub const VIEW_MAX_FPS: u32 = 10;
/// How long a liveness probe of the page may take before the view counts as stalled.
const PROBE_DEADLINE: Duration = Duration::from_millis(1000);

/// One frame of a view.
#[derive(Debug, Clone, Serialize)]
pub struct ViewFrame {
    /// The tab record (`GET /api/tabs`).
    pub resource: String,
    /// The view's binding generation: a frame of an older one is dropped by the viewer.
    pub generation: u64,
    /// In capture order, from 1 per binding.
    pub seq: u64,
    /// Capture time (ms since the epoch, the browser's clock).
    pub captured_at: u64,
    /// JPEG, base64.
    pub data: String,
    /// The page's viewport in CSS px (pointer coordinates are in it).
    pub width: f64,
    pub height: f64,
    /// The page's scroll offset when captured (a marker drawn for an older offset is stale).
    pub scroll_x: f64,
    pub scroll_y: f64,
}

/// A person's live view of one tab (see the module docs). Detaches when dropped.
pub struct PersonView {
    entry: PersonEntry,
    cast: Box<dyn PersonCast>,
    generation: u64,
    seq: u64,
}

impl Runtime {
    /// Opens a person's view of a tab record that is open in this browser.
    pub async fn person_view(&self, resource: &str) -> Result<PersonView, RuntimeError> {
        let target = self.person_target(resource)?;
        let cast = self.adapter().person_view(target.clone()).await?;
        let generation = self
            .inner
            .view_generation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let entry = PersonEntry {
            runtime: self.clone(),
            resource: resource.to_owned(),
            target,
            input: cast.entry(),
        };
        Ok(PersonView {
            entry,
            cast,
            generation,
            seq: 0,
        })
    }

    /// The live target of a tab record of this process (not one a person closed).
    pub(crate) fn person_target(&self, resource: &str) -> Result<String, RuntimeError> {
        let gone = || {
            RuntimeError::Surface(surface::SurfaceError::lost(
                "the tab is not open in this browser",
            ))
        };
        let record = self
            .inner
            .store
            .get_resource(&store::ResourceId::new(resource))
            .map_err(|_| RuntimeError::UnknownSurface {
                name: resource.to_owned(),
                known: "a tab of GET /api/tabs".into(),
            })?;
        record
            .cdp_target_id
            .filter(|_| {
                record.instance == Some(self.inner.instance)
                    && !record.handle_lost
                    && !record.closed_by_person
            })
            .map(|t| t.to_string())
            .ok_or_else(gone)
    }
}

/// The real entry of a view: input, liveness and control state; cheap to clone, so input can be
/// dispatched in order beside the frames.
#[derive(Clone)]
pub struct PersonEntry {
    runtime: Runtime,
    resource: String,
    target: String,
    input: Arc<dyn surface::PersonEntry>,
}

impl PersonView {
    /// The view's real entry.
    pub fn entry(&self) -> PersonEntry {
        self.entry.clone()
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Starts (or resumes) the picture: while the view is shown and on screen.
    pub async fn start(&mut self) -> Result<(), RuntimeError> {
        Ok(self.cast.start().await?)
    }

    /// Stops the picture (the view is hidden or off screen): no capture costs the page.
    pub async fn stop(&mut self) -> Result<(), RuntimeError> {
        Ok(self.cast.stop().await?)
    }

    /// The next frame (waits while the picture is stopped or the page does not change). The
    /// previous frame is acknowledged first, no sooner than the minimum interval after it was
    /// delivered, so frames are single-flight and at most [`VIEW_MAX_FPS`] a second. Cancel-safe.
    pub async fn next_frame(&mut self) -> Result<ViewFrame, RuntimeError> {
        let frame = self
            .cast
            .next_frame(Duration::from_millis(1000 / u64::from(VIEW_MAX_FPS)))
            .await?;
        self.seq += 1;
        Ok(ViewFrame {
            resource: self.entry.resource.clone(),
            generation: self.generation,
            seq: self.seq,
            captured_at: frame.captured_at.unwrap_or_else(crate::runtime::now_ms),
            data: frame.data,
            width: frame.width,
            height: frame.height,
            scroll_x: frame.scroll_x,
            scroll_y: frame.scroll_y,
        })
    }
}

impl PersonEntry {
    /// Whether the page answers within a second (a page that does not paint because it is stuck
    /// is "last frame", not "live"; a page that does not change is live).
    pub async fn alive(&self) -> bool {
        self.runtime.person_target(&self.resource).is_ok() && self.input.alive(PROBE_DEADLINE).await
    }

    /// The tab's control state for the person.
    pub fn control(&self) -> Control {
        self.runtime.control_of(&self.resource)
    }

    /// A person's input, dispatched to the page as theirs. Input that acts blocks the agent's
    /// dispatch on this page first (see the module docs); the answer is the control state after.
    pub async fn input(&self, input: PersonInput) -> Result<Control, RuntimeError> {
        input.check().map_err(|e| match e {
            PersonInputRefused::Invalid(why) => RuntimeError::InvalidAction(why),
            PersonInputRefused::Scheme => RuntimeError::OriginDenied {
                reason: e.to_string(),
            },
        })?;
        if input.acts() {
            self.runtime.person_acts(&self.resource, &self.target);
        }
        self.input.input(input).await?;
        Ok(self.control())
    }
}
