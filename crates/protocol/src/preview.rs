//! `Preview`: the bounded, screenshot-free summary of a surface sent at turn start (`000_…`
//! §06, Surface Context); not its capture under the snapshot barrier (the backend's job).
//!
//! [`Preview::ready`] applies the per-field limits (text ≤ 2,000 characters after folding
//! whitespace, ≤ 12 landmarks with names ≤ 160 characters, title ≤ 300 characters) and then
//! the 8 KiB budget of the whole serialized preview: it shrinks the text excerpt first, then
//! drops landmarks from the end, then shortens the title and origin, and sets
//! `payload_truncated` (plus the flag of each field it cut).

use serde::Serialize;

use crate::ids::FrameId;
use crate::limits::*;
use crate::text::{BoundedText, fold_whitespace, json_byte_len, truncate_chars, truncate_list};

/// Whether the preview could be captured consistently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PreviewStatus {
    /// Captured within one snapshot barrier.
    Ready,
    /// Epochs changed twice, the deadline passed, or the page was unreadable; the model
    /// should observe with the tool instead.
    Unavailable,
}

/// One ARIA landmark (`main`, `navigation`, …) with its bounded name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Landmark {
    role: String,
    name: String,
    #[serde(skip_serializing_if = "is_false")]
    name_truncated: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Landmark {
    /// A landmark, with `role` cut to [`PREVIEW_LANDMARK_ROLE_MAX_CHARS`] and `name` to
    /// [`PREVIEW_LANDMARK_NAME_MAX_CHARS`] (flagged).
    pub fn new(role: impl Into<String>, name: impl Into<String>) -> Self {
        let role = BoundedText::new(role, PREVIEW_LANDMARK_ROLE_MAX_CHARS).text;
        let name = BoundedText::new(name, PREVIEW_LANDMARK_NAME_MAX_CHARS);
        Self {
            role,
            name: name.text,
            name_truncated: name.truncated,
        }
    }
    /// The landmark role.
    pub fn role(&self) -> &str {
        &self.role
    }
    /// The accessible name (bounded).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Whether the name was cut.
    pub fn name_truncated(&self) -> bool {
        self.name_truncated
    }
}

/// What the backend captured for a preview, before limits.
#[derive(Debug, Clone, PartialEq)]
pub struct PreviewParts {
    /// The frame the preview was read from.
    pub preview_frame_id: FrameId,
    /// The content epoch, equal before and after capture.
    pub content_epoch: u64,
    /// Capture time, milliseconds since the Unix epoch.
    pub captured_at: u64,
    /// The document title.
    pub title: String,
    /// The page origin.
    pub origin: String,
    /// Viewport-visible text in DOM order (whitespace is folded here).
    pub visible_text: String,
    /// ARIA landmarks in DOM order.
    pub aria_landmarks: Vec<Landmark>,
    /// The number of interactive elements in the viewport.
    pub interactive_count: u32,
}

/// A bounded turn-start preview. Field order is the seed's serialization order: status and
/// frame, then title, origin, visible text, landmarks, interactive count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Preview {
    preview_status: PreviewStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    preview_frame_id: Option<FrameId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_epoch: Option<u64>,
    captured_at: u64,
    title: String,
    #[serde(skip_serializing_if = "is_false")]
    title_truncated: bool,
    origin: String,
    visible_text_excerpt: String,
    text_truncated: bool,
    aria_landmarks: Vec<Landmark>,
    landmarks_truncated: bool,
    interactive_count: u32,
    payload_truncated: bool,
}

/// Shrinks `s` to the most characters for which `fits` holds, by binary search; `fits`
/// must be monotone (fewer characters never hurt).
fn shrink_to_fit(s: &mut String, mut fits: impl FnMut(&str) -> bool) {
    let total = s.chars().count();
    let (mut lo, mut hi) = (0usize, total);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(truncate_chars(s, mid).0) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let keep = truncate_chars(s, lo).0.len();
    s.truncate(keep);
}

impl Preview {
    /// Builds a ready preview and enforces every limit, the 8 KiB payload last.
    pub fn ready(parts: PreviewParts) -> Self {
        let PreviewParts {
            preview_frame_id,
            content_epoch,
            captured_at,
            title,
            origin,
            visible_text,
            mut aria_landmarks,
            interactive_count,
        } = parts;
        let title = BoundedText::new(title, PREVIEW_TITLE_MAX_CHARS);
        let text = BoundedText::new(fold_whitespace(&visible_text), PREVIEW_TEXT_MAX_CHARS);
        let landmarks_truncated = truncate_list(&mut aria_landmarks, PREVIEW_LANDMARKS_MAX);
        let mut preview = Self {
            preview_status: PreviewStatus::Ready,
            preview_frame_id: Some(preview_frame_id),
            content_epoch: Some(content_epoch),
            captured_at,
            title: title.text,
            title_truncated: title.truncated,
            origin,
            visible_text_excerpt: text.text,
            text_truncated: text.truncated,
            aria_landmarks,
            landmarks_truncated,
            interactive_count,
            payload_truncated: false,
        };
        preview.fit_payload();
        preview
    }

    /// An unavailable preview: no content, only what the model needs to know it should
    /// observe with the tool. Title and origin come from the target, not the page body.
    pub fn unavailable(
        title: impl Into<String>,
        origin: impl Into<String>,
        captured_at: u64,
    ) -> Self {
        let title = BoundedText::new(title, PREVIEW_TITLE_MAX_CHARS);
        let mut preview = Self {
            preview_status: PreviewStatus::Unavailable,
            preview_frame_id: None,
            content_epoch: None,
            captured_at,
            title: title.text,
            title_truncated: title.truncated,
            origin: origin.into(),
            visible_text_excerpt: String::new(),
            text_truncated: false,
            aria_landmarks: Vec::new(),
            landmarks_truncated: false,
            interactive_count: 0,
            payload_truncated: false,
        };
        preview.fit_payload();
        preview
    }

    fn fits(&self) -> bool {
        json_byte_len(self) <= PREVIEW_PAYLOAD_MAX_BYTES
    }

    /// Shrinks text, then landmarks, then title, then origin until the payload fits.
    fn fit_payload(&mut self) {
        if self.fits() {
            return;
        }
        // Flags first: their own length counts ("true" is shorter than "false").
        self.payload_truncated = true;
        if self.fits() {
            return;
        }
        let mut text = std::mem::take(&mut self.visible_text_excerpt);
        let original_len = text.len();
        shrink_to_fit(&mut text, |candidate| {
            self.visible_text_excerpt.clear();
            self.visible_text_excerpt.push_str(candidate);
            self.fits()
        });
        self.text_truncated |= text.len() < original_len;
        self.visible_text_excerpt = text;
        while !self.fits() && self.aria_landmarks.pop().is_some() {
            self.landmarks_truncated = true;
        }
        if !self.fits() {
            let mut title = std::mem::take(&mut self.title);
            let before = title.len();
            shrink_to_fit(&mut title, |candidate| {
                self.title.clear();
                self.title.push_str(candidate);
                self.fits()
            });
            self.title_truncated |= title.len() < before;
            self.title = title;
        }
        if !self.fits() {
            let mut origin = std::mem::take(&mut self.origin);
            shrink_to_fit(&mut origin, |candidate| {
                self.origin.clear();
                self.origin.push_str(candidate);
                self.fits()
            });
            self.origin = origin;
        }
    }

    /// `ready` or `unavailable`.
    pub fn preview_status(&self) -> PreviewStatus {
        self.preview_status
    }
    /// The frame the preview was read from (ready only).
    pub fn preview_frame_id(&self) -> Option<&FrameId> {
        self.preview_frame_id.as_ref()
    }
    /// The content epoch of the capture (ready only).
    pub fn content_epoch(&self) -> Option<u64> {
        self.content_epoch
    }
    /// Capture time, milliseconds since the Unix epoch.
    pub fn captured_at(&self) -> u64 {
        self.captured_at
    }
    /// The title (bounded).
    pub fn title(&self) -> &str {
        &self.title
    }
    /// Whether the title was cut.
    pub fn title_truncated(&self) -> bool {
        self.title_truncated
    }
    /// The origin.
    pub fn origin(&self) -> &str {
        &self.origin
    }
    /// The visible text excerpt (folded, bounded).
    pub fn visible_text_excerpt(&self) -> &str {
        &self.visible_text_excerpt
    }
    /// Whether the text was cut, by its own limit or the payload budget.
    pub fn text_truncated(&self) -> bool {
        self.text_truncated
    }
    /// The landmarks (bounded).
    pub fn aria_landmarks(&self) -> &[Landmark] {
        &self.aria_landmarks
    }
    /// Whether landmarks were dropped.
    pub fn landmarks_truncated(&self) -> bool {
        self.landmarks_truncated
    }
    /// Interactive elements in the viewport.
    pub fn interactive_count(&self) -> u32 {
        self.interactive_count
    }
    /// Whether the 8 KiB payload budget cut anything.
    pub fn payload_truncated(&self) -> bool {
        self.payload_truncated
    }
}
