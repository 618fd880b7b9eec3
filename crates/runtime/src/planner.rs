//! The planner side of the loop: something that looks at an observation and proposes one step.
//! Models arrive in a later issue; [`ScriptedPlanner`] drives tests and demos. A planner proposes;
//! only the runtime decides what happens and how a run ends.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use protocol::{Action, ActionError, ErrorCode, Observation, Receipt};
use serde_json::json;

/// What the planner sees each step (owned, so planners may hold it across awaits).
#[derive(Debug, Clone)]
pub struct PlanInput {
    pub task: String,
    pub observation: Observation,
    pub step: u32,
    /// What happened to the previous step, if any.
    pub last: Option<StepReport>,
}

/// The result of the previous step, as the planner is told it.
#[derive(Debug, Clone)]
pub struct StepReport {
    pub action: String,
    pub receipt: Option<Receipt>,
    pub error: Option<(ErrorCode, String)>,
}

/// One proposal.
#[derive(Debug, Clone)]
pub enum PlannerStep {
    /// Perform this action (one state-changing action per step).
    Act(Action),
    /// The planner believes the task is done. The runtime verifies before anything succeeds.
    Done { summary: String },
    /// The planner cannot continue.
    GiveUp { summary: String },
}

/// Why a planner produced nothing usable.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PlannerError {
    #[error("the planner's action is invalid: {0}")]
    Invalid(#[from] ActionError),
    #[error("the planner named an element the observation does not have: {0}")]
    NoSuchElement(String),
    #[error("the planner failed: {0}")]
    Failed(String),
}

/// A boxed planner future.
pub type PlanFuture<'a> = Pin<Box<dyn Future<Output = Result<PlannerStep, PlannerError>> + Send + 'a>>;

/// Proposes the next step from the current observation.
pub trait Planner: Send {
    fn next(&mut self, input: PlanInput) -> PlanFuture<'_>;
}

/// A scripted step; elements are named as the observation names them, so refs are looked up
/// afresh from each observation.
#[derive(Debug, Clone)]
pub enum Scripted {
    Click(String),
    Type(String, String),
    Press(String, String),
    Select(String, String),
    Navigate(String),
    Scroll(i32),
    Wait(u32),
    /// Raw JSON as a model might emit it (validated like model output).
    Raw(serde_json::Value),
    /// Takes this long to "think" (for cancellation tests).
    Think(Duration),
    Done(String),
    GiveUp(String),
}

/// Replays a script. Runs out → gives up.
#[derive(Debug, Clone)]
pub struct ScriptedPlanner {
    steps: std::collections::VecDeque<Scripted>,
}

impl ScriptedPlanner {
    pub fn new(steps: impl IntoIterator<Item = Scripted>) -> Self {
        ScriptedPlanner { steps: steps.into_iter().collect() }
    }
}

fn ref_of(observation: &Observation, name: &str) -> Result<String, PlannerError> {
    observation
        .interactive_elements()
        .iter()
        .find(|e| e.name() == name)
        .map(|e| e.element().as_str().to_owned())
        .ok_or_else(|| PlannerError::NoSuchElement(name.to_owned()))
}

impl Planner for ScriptedPlanner {
    fn next(&mut self, input: PlanInput) -> PlanFuture<'_> {
        Box::pin(async move {
            loop {
                let Some(step) = self.steps.pop_front() else {
                    return Ok(PlannerStep::GiveUp { summary: "the script ran out".into() });
                };
                let o = &input.observation;
                let frame = o.frame_id().as_str();
                let value = match step {
                    Scripted::Think(d) => {
                        tokio::time::sleep(d).await;
                        continue;
                    }
                    Scripted::Done(summary) => return Ok(PlannerStep::Done { summary }),
                    Scripted::GiveUp(summary) => return Ok(PlannerStep::GiveUp { summary }),
                    Scripted::Raw(value) => value,
                    Scripted::Click(name) => json!({"type": "click", "expected_frame_id": frame, "target": {"kind": "element", "ref": ref_of(o, &name)?}, "intent": format!("click {name}")}),
                    Scripted::Type(name, text) => json!({"type": "type", "expected_frame_id": frame, "target": {"kind": "element", "ref": ref_of(o, &name)?}, "text": text, "intent": format!("type into {name}")}),
                    Scripted::Press(name, key) => json!({"type": "press", "expected_frame_id": frame, "target": {"kind": "element", "ref": ref_of(o, &name)?}, "key": key, "intent": format!("press {key}")}),
                    Scripted::Select(name, value) => json!({"type": "select", "expected_frame_id": frame, "target": {"kind": "element", "ref": ref_of(o, &name)?}, "value": value, "intent": format!("choose {value}")}),
                    Scripted::Navigate(url) => json!({"type": "navigate", "expected_frame_id": frame, "url": url, "intent": "open the page"}),
                    Scripted::Scroll(dy) => json!({"type": "scroll", "expected_frame_id": frame, "delta_y": dy, "intent": "scroll"}),
                    Scripted::Wait(ms) => json!({"type": "wait", "expected_frame_id": frame, "duration_ms": ms, "intent": "wait"}),
                };
                return Ok(PlannerStep::Act(protocol::validate_action(&value)?));
            }
        })
    }
}
