//! `RunResult`, the result contract of a run (`000_…` §06, "结果契约"); not the runner that
//! decides it.
//!
//! `summary` may be written by a model, but `status` and `reason_code` only by the runtime
//! from its verification record. So `status` is derived from the reason (never set on its
//! own), the fields are private, and the only way to a `succeeded` result is
//! [`RunResult::succeeded`], which takes the `verified` reason implicitly and needs at
//! least one piece of completion evidence.

use serde::Serialize;

use crate::ids::{ArtifactId, FrameId, TabId};
use crate::limits::{EVIDENCE_MAX, EVIDENCE_TEXT_MAX_CHARS, SUMMARY_MAX_CHARS};
use crate::observation::SurfaceKind;
use crate::text::{BoundedText, truncate_list};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The task is done and verified.
    Succeeded,
    /// The run stopped without reaching the goal.
    Failed,
    /// Someone stopped the run.
    Cancelled,
    /// A person has to act (approve, log in, choose a new surface).
    NeedsUser,
}

/// Why a run ended. Closed; each reason belongs to exactly one [`RunStatus`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasonCode {
    /// Completion was verified against the page (succeeded).
    Verified,
    /// The step budget ran out (failed).
    StepLimit,
    /// The time budget ran out (failed).
    Timeout,
    /// The leased target went away (failed).
    TargetLost,
    /// Stopped by the user or the caller (cancelled).
    Cancelled,
    /// The planner produced no valid action (failed).
    InvalidPlan,
    /// An action failed and could not be recovered (failed).
    ActionFailed,
    /// The planner claimed completion but verification disagreed (failed).
    VerificationFailed,
    /// The planner holds that the task cannot be done, listing the conditions it found unmet
    /// (failed; a claim, not a finding of the runtime).
    Infeasible,
    /// A person must approve the next action (needs_user).
    NeedsApproval,
    /// A person refused an approval (failed).
    ApprovalDenied,
    /// The target opened a popup or tab (needs_user).
    NewSurfaceCreated,
    /// The page needs the user to log in (needs_user).
    LoginRequired,
    /// The surface lacks a needed capability (failed).
    CapabilityDenied,
    /// Policy refused the origin (failed).
    OriginDenied,
    /// Another holder has the tab's lease (failed).
    LeaseConflict,
    /// The browser backend is unreachable (failed).
    BackendUnavailable,
    /// A bug in Glovebox (failed).
    Internal,
}

impl ReasonCode {
    /// The one status this reason belongs to.
    pub fn status(self) -> RunStatus {
        match self {
            Self::Verified => RunStatus::Succeeded,
            Self::Cancelled => RunStatus::Cancelled,
            Self::NeedsApproval | Self::NewSurfaceCreated | Self::LoginRequired => {
                RunStatus::NeedsUser
            }
            Self::StepLimit
            | Self::Timeout
            | Self::TargetLost
            | Self::InvalidPlan
            | Self::ActionFailed
            | Self::VerificationFailed
            | Self::Infeasible
            | Self::ApprovalDenied
            | Self::CapabilityDenied
            | Self::OriginDenied
            | Self::LeaseConflict
            | Self::BackendUnavailable
            | Self::Internal => RunStatus::Failed,
        }
    }
}

/// What kind of check a piece of evidence records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    /// A checked statement about the page.
    Assertion,
    /// The URL matched what the task expected.
    UrlMatch,
    /// An element had the expected state or value.
    ElementState,
}

/// One verification record that supports the result, tied to the frame it was read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompletionEvidence {
    kind: EvidenceKind,
    text: String,
    frame_id: FrameId,
}

impl CompletionEvidence {
    /// Evidence with `text` cut to [`EVIDENCE_TEXT_MAX_CHARS`].
    pub fn new(kind: EvidenceKind, text: impl Into<String>, frame_id: FrameId) -> Self {
        Self {
            kind,
            text: BoundedText::new(text, EVIDENCE_TEXT_MAX_CHARS).text,
            frame_id,
        }
    }
    /// The kind.
    pub fn kind(&self) -> EvidenceKind {
        self.kind
    }
    /// The statement (bounded).
    pub fn text(&self) -> &str {
        &self.text
    }
    /// The frame it was read from.
    pub fn frame_id(&self) -> &FrameId {
        &self.frame_id
    }
}

/// What an artifact is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactKind {
    /// A screenshot.
    Screenshot,
    /// A downloaded file.
    Download,
    /// A trace or recording of the run.
    Trace,
}

/// An opaque artifact handle; never a local path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ArtifactRef {
    /// The kind.
    pub kind: ArtifactKind,
    /// The opaque id.
    pub artifact_id: ArtifactId,
    /// Whether it outlives the run.
    pub retained: bool,
}

/// The target a run acted on: `{"kind":"web_tab","tab_id":"…","url":"…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunTarget {
    /// The target kind.
    pub kind: SurfaceKind,
    /// The tab.
    pub tab_id: TabId,
    /// The final URL, redacted.
    pub url: String,
}

/// Why a [`RunResult`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunResultError {
    /// `succeeded` without completion evidence.
    #[error("a succeeded result needs at least one piece of completion evidence")]
    NoEvidence,
    /// [`RunResult::ended`] with `verified`: only [`RunResult::succeeded`] may claim success.
    #[error("only RunResult::succeeded may use the verified reason")]
    VerifiedWithoutSuccess,
}

/// The result of one run, as returned to the agent and the transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunResult {
    status: RunStatus,
    reason_code: ReasonCode,
    summary: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<RunTarget>,
    steps_taken: u32,
    completion_evidence: Vec<CompletionEvidence>,
    artifacts: Vec<ArtifactRef>,
}

impl RunResult {
    /// A verified success. Needs at least one piece of evidence (at most
    /// [`EVIDENCE_MAX`] are kept). Only retained artifacts are listed; deleting the others
    /// before returning is the runtime's job.
    pub fn succeeded(
        summary: impl Into<String>,
        target: RunTarget,
        steps_taken: u32,
        completion_evidence: Vec<CompletionEvidence>,
        artifacts: Vec<ArtifactRef>,
    ) -> Result<Self, RunResultError> {
        if completion_evidence.is_empty() {
            return Err(RunResultError::NoEvidence);
        }
        Ok(Self::build(
            ReasonCode::Verified,
            summary,
            Some(target),
            steps_taken,
            completion_evidence,
            artifacts,
        ))
    }

    /// Any other ending: failed, cancelled or needs_user, by `reason`. The target is absent
    /// when the run never got one (e.g. `backend_unavailable` before a lease).
    pub fn ended(
        reason: ReasonCode,
        summary: impl Into<String>,
        target: Option<RunTarget>,
        steps_taken: u32,
        completion_evidence: Vec<CompletionEvidence>,
        artifacts: Vec<ArtifactRef>,
    ) -> Result<Self, RunResultError> {
        if reason == ReasonCode::Verified {
            return Err(RunResultError::VerifiedWithoutSuccess);
        }
        Ok(Self::build(
            reason,
            summary,
            target,
            steps_taken,
            completion_evidence,
            artifacts,
        ))
    }

    fn build(
        reason: ReasonCode,
        summary: impl Into<String>,
        target: Option<RunTarget>,
        steps_taken: u32,
        mut completion_evidence: Vec<CompletionEvidence>,
        mut artifacts: Vec<ArtifactRef>,
    ) -> Self {
        truncate_list(&mut completion_evidence, EVIDENCE_MAX);
        artifacts.retain(|a| a.retained);
        Self {
            status: reason.status(),
            reason_code: reason,
            summary: BoundedText::new(summary, SUMMARY_MAX_CHARS).text,
            target,
            steps_taken,
            completion_evidence,
            artifacts,
        }
    }

    /// The status (derived from the reason).
    pub fn status(&self) -> RunStatus {
        self.status
    }
    /// The reason.
    pub fn reason_code(&self) -> ReasonCode {
        self.reason_code
    }
    /// The user-facing summary (bounded).
    pub fn summary(&self) -> &str {
        &self.summary
    }
    /// The target acted on.
    pub fn target(&self) -> Option<&RunTarget> {
        self.target.as_ref()
    }
    /// Steps taken.
    pub fn steps_taken(&self) -> u32 {
        self.steps_taken
    }
    /// The evidence.
    pub fn completion_evidence(&self) -> &[CompletionEvidence] {
        &self.completion_evidence
    }
    /// The retained artifacts.
    pub fn artifacts(&self) -> &[ArtifactRef] {
        &self.artifacts
    }
}
