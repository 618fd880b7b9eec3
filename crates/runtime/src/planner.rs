//! The planner side of the loop: something that looks at an observation and proposes one step.
//! Models arrive in a later issue; [`ScriptedPlanner`] drives tests and demos. A planner proposes;
//! only the runtime decides what happens and how a run ends.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use protocol::{ActionError, ErrorCode, ExtendedAction, Observation, Receipt};
use serde_json::json;

/// What the planner sees each step (owned, so planners may hold it across awaits).
#[derive(Debug, Clone)]
pub struct PlanInput {
    pub task: String,
    pub observation: Observation,
    pub step: u32,
    /// What happened to the previous step, if any.
    pub last: Option<StepReport>,
    /// A screenshot of this observation's viewport, when the step is visual (the caller asked
    /// for screenshots, or the planner asked to look): at most one per observation. A point
    /// target is valid on this observation's frame only when it came with one.
    pub screenshot: Option<protocol::Screenshot>,
}

/// The result of the previous step, as the planner is told it.
#[derive(Debug, Clone)]
pub struct StepReport {
    pub action: String,
    pub receipt: Option<Receipt>,
    pub error: Option<(ErrorCode, String)>,
}

impl StepReport {
    /// The step as a planner tells its model — `click confirmed`, `type failed`, `click refused:
    /// stale_observation (why)` — and whether it did not take effect (refused or failed).
    pub fn outcome(&self) -> (String, bool) {
        match (&self.error, &self.receipt) {
            (Some((code, message)), _) => (
                format!("{} refused: {} ({message})", self.action, code.as_str()),
                true,
            ),
            (None, Some(receipt)) => {
                let state = serde_json::to_value(receipt.state())
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                (format!("{} {state}", self.action), state == "failed")
            }
            (None, None) => (self.action.clone(), false),
        }
    }

    /// What the receipt says beyond its state — why it failed, what the network boundary
    /// blocked, a download nobody captured. It names page content: a model reads it inside the
    /// untrusted markers.
    pub fn receipt_detail(&self) -> Option<&str> {
        self.receipt
            .as_ref()
            .and_then(Receipt::detail)
            .filter(|d| !d.is_empty())
    }
}

/// One proposal.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one step exists at a time; boxing it buys nothing
pub enum PlannerStep {
    /// Perform this action (one state-changing action per step).
    Act(ExtendedAction),
    /// Perform this action only if a person approves it, whatever policy would decide (a
    /// provider flagged the model's own action: OpenAI's `pending_safety_checks`). `why` is the
    /// provider's words, shown to the person; the action goes through the same path as `Act`
    /// and its approval is never automatic: no grant covers it.
    Confirm { action: ExtendedAction, why: String },
    /// The planner believes the task is done. The runtime verifies before anything succeeds:
    /// the caller's checks, and the planner's own proposed `checks` (each must hold now and must
    /// not have held before the run acted; without caller checks they are the only evidence).
    Done {
        summary: String,
        checks: Vec<crate::Assertion>,
    },
    /// The planner asks to see the page as an image: the next observation comes with a
    /// viewport screenshot (a read; it counts as a step, so a loop of looks ends).
    Look,
    /// The planner cannot continue.
    GiveUp { summary: String },
    /// The planner holds that the task cannot be done at all, with the conditions it found
    /// unmet (a claim: the run fails with reason `infeasible` and lists them).
    Infeasible { summary: String, unmet: Vec<String> },
}

impl PlannerStep {
    /// The summary or reason a step ends the run with (`done`, `give_up`, `infeasible`).
    pub fn summary(&self) -> Option<&str> {
        match self {
            PlannerStep::Done { summary, .. }
            | PlannerStep::GiveUp { summary }
            | PlannerStep::Infeasible { summary, .. } => Some(summary),
            PlannerStep::Act(_) | PlannerStep::Confirm { .. } | PlannerStep::Look => None,
        }
    }
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
pub type PlanFuture<'a> =
    Pin<Box<dyn Future<Output = Result<PlannerStep, PlannerError>> + Send + 'a>>;

/// Proposes the next step from the current observation.
pub trait Planner: Send {
    fn next(&mut self, input: PlanInput) -> PlanFuture<'_>;

    /// The resolved model choice this planner plans with (`provider/model`, `sampling`,
    /// `program`), for the run's record.
    fn model(&self) -> Option<String> {
        None
    }

    /// What its model calls have cost so far (JSON), for the run's record.
    fn accounting(&self) -> Option<serde_json::Value> {
        None
    }

    /// Whether every step is visual (a provider's computer tool sees the screen only): each
    /// observation then comes with its screenshot.
    fn sees_screenshots(&self) -> bool {
        false
    }
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
    /// Accept (`true`) or dismiss the JavaScript dialog the page shows.
    Dialog(bool),
    /// Raw JSON as a model might emit it (validated like model output).
    Raw(serde_json::Value),
    /// An action of the act schema without `expected_frame_id`: the frame the planner is shown
    /// is filled in (locators, points, `expect_download`, uploads — what the named steps lack).
    Act(serde_json::Value),
    /// Takes this long to "think" (for cancellation tests).
    Think(Duration),
    Done(String),
    /// Done, with the planner's own proposed completion checks.
    DoneWith(String, Vec<crate::Assertion>),
    GiveUp(String),
    Infeasible(String, Vec<String>),
    /// Ask for a screenshot with the next observation.
    Look,
}

/// Replays a script. Runs out → gives up.
#[derive(Debug, Clone)]
pub struct ScriptedPlanner {
    steps: std::collections::VecDeque<Scripted>,
}

impl ScriptedPlanner {
    pub fn new(steps: impl IntoIterator<Item = Scripted>) -> Self {
        ScriptedPlanner {
            steps: steps.into_iter().collect(),
        }
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
    fn model(&self) -> Option<String> {
        Some("scripted".into())
    }

    fn next(&mut self, input: PlanInput) -> PlanFuture<'_> {
        Box::pin(async move {
            loop {
                let Some(step) = self.steps.pop_front() else {
                    return Ok(PlannerStep::GiveUp {
                        summary: "the script ran out".into(),
                    });
                };
                let o = &input.observation;
                let frame = o.frame_id().as_str();
                let value = match step {
                    Scripted::Think(d) => {
                        tokio::time::sleep(d).await;
                        continue;
                    }
                    Scripted::Done(summary) => {
                        return Ok(PlannerStep::Done {
                            summary,
                            checks: Vec::new(),
                        });
                    }
                    Scripted::DoneWith(summary, checks) => {
                        return Ok(PlannerStep::Done { summary, checks });
                    }
                    Scripted::GiveUp(summary) => return Ok(PlannerStep::GiveUp { summary }),
                    Scripted::Infeasible(summary, unmet) => {
                        return Ok(PlannerStep::Infeasible { summary, unmet });
                    }
                    Scripted::Look => return Ok(PlannerStep::Look),
                    Scripted::Raw(value) => value,
                    Scripted::Act(mut value) => {
                        if let Some(fields) = value.as_object_mut() {
                            fields.insert("expected_frame_id".into(), json!(frame));
                        }
                        value
                    }
                    Scripted::Click(name) => {
                        json!({"type": "click", "expected_frame_id": frame, "target": {"kind": "element", "ref": ref_of(o, &name)?}, "intent": format!("click {name}")})
                    }
                    Scripted::Type(name, text) => {
                        json!({"type": "type", "expected_frame_id": frame, "target": {"kind": "element", "ref": ref_of(o, &name)?}, "text": text, "intent": format!("type into {name}")})
                    }
                    Scripted::Press(name, key) => {
                        json!({"type": "press", "expected_frame_id": frame, "target": {"kind": "element", "ref": ref_of(o, &name)?}, "key": key, "intent": format!("press {key}")})
                    }
                    Scripted::Select(name, value) => {
                        json!({"type": "select", "expected_frame_id": frame, "target": {"kind": "element", "ref": ref_of(o, &name)?}, "value": value, "intent": format!("choose {value}")})
                    }
                    Scripted::Navigate(url) => {
                        json!({"type": "navigate", "expected_frame_id": frame, "url": url, "intent": "open the page"})
                    }
                    Scripted::Scroll(dy) => {
                        json!({"type": "scroll", "expected_frame_id": frame, "delta_y": dy, "intent": "scroll"})
                    }
                    Scripted::Wait(ms) => {
                        json!({"type": "wait", "expected_frame_id": frame, "duration_ms": ms, "intent": "wait"})
                    }
                    Scripted::Dialog(accept) => {
                        json!({"type": "dialog", "expected_frame_id": frame, "accept": accept, "intent": "answer the dialog"})
                    }
                };
                return Ok(PlannerStep::Act(protocol::validate_extended_action(
                    &value,
                )?));
            }
        })
    }
}

/// A planner that is another program (a model client, a script): started once per run, it gets
/// one JSON line per step on its stdin and answers with one JSON line on its stdout.
///
/// What it reads: `{"task": …, "step": n, "observation": <the Observation, page content marked
/// untrusted_content>, "last": null | {"action": …, "receipt": …, "error": {"code", "message"}}}`.
/// What it answers: `{"action": <one action of the act schema>}`, `{"done": "summary"}` or
/// `{"give_up": "summary"}`. Its stderr is inherited (logs). It is killed when the run ends.
/// Whatever it answers is validated like any model output, and only the runtime's own checks
/// decide how the run ends: `done` is a claim the runtime verifies.
pub struct CommandPlanner {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    reader: tokio::io::BufReader<tokio::process::ChildStdout>,
}

/// One line of at most `max` bytes (without its newline); `None` at the end of the stream. A
/// longer line is an error as soon as it passes `max`, without reading the rest into memory.
async fn read_line_bounded<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    use tokio::io::AsyncBufReadExt;
    let mut line = Vec::new();
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok((!line.is_empty()).then_some(line));
        }
        let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if line.len() + take > max {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a line over {max} bytes"),
            ));
        }
        line.extend_from_slice(&chunk[..take]);
        reader.consume(if done { take + 1 } else { take });
        if done {
            return Ok(Some(line));
        }
    }
}

impl CommandPlanner {
    /// Starts `command` (program and arguments).
    pub fn start(command: &[String]) -> Result<Self, PlannerError> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| PlannerError::Failed("the planner command is empty".into()))?;
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            // Its own process group, so the run's end takes its children too (`sh -c …`).
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                PlannerError::Failed(format!("cannot start the planner {program:?}: {e}"))
            })?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| PlannerError::Failed("the planner has no stdin".into()))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| PlannerError::Failed("the planner has no stdout".into()))?;
        Ok(CommandPlanner {
            child,
            stdin,
            reader: tokio::io::BufReader::new(stdout),
        })
    }
}

impl Drop for CommandPlanner {
    /// The planner's whole process group goes with the run (the child itself is also killed by
    /// `kill_on_drop`).
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            // SAFETY: a signal to the process group this planner was started in (pgid = its pid).
            unsafe {
                libc::killpg(pid as libc::pid_t, libc::SIGKILL);
            }
        }
    }
}

/// An action's point targets from the pixels of the screenshot a model saw to the viewport's CSS
/// pixels (the image may be scaled: device pixels, page zoom, a provider's downscale), for every
/// planner that shows screenshots. Without a screenshot of this page a point target is refused.
pub fn points_from_screenshot(
    action: &serde_json::Value,
    shot: Option<&(protocol::ImageSize, protocol::Viewport)>,
) -> Result<serde_json::Value, PointError> {
    let mut action = action.clone();
    for key in ["target", "source", "destination"] {
        let Some(t) = action.get_mut(key).filter(|t| t["kind"] == "point") else {
            continue;
        };
        let Some((size, viewport)) = shot else {
            return Err(PointError::NoScreenshot);
        };
        let (x, y) = (
            t["x"].as_f64().ok_or(PointError::NotANumber("x"))?,
            t["y"].as_f64().ok_or(PointError::NotANumber("y"))?,
        );
        let off = |source| PointError::OffTheImage { x, y, source };
        let css = protocol::coords::image_to_css(x, y, *size, viewport).map_err(off)?;
        let point = protocol::coords::to_point_target(css, viewport).map_err(off)?;
        t["x"] = serde_json::json!(point.x);
        t["y"] = serde_json::json!(point.y);
    }
    Ok(action)
}

/// Why a point target could not be mapped from a screenshot (the model hears it and tries again).
#[derive(Debug, Clone, thiserror::Error)]
pub enum PointError {
    #[error("a point target needs a screenshot of this page: look first")]
    NoScreenshot,
    #[error("a point's {0} is a number")]
    NotANumber(&'static str),
    #[error("point ({x}, {y}) of the screenshot: {source}")]
    OffTheImage {
        x: f64,
        y: f64,
        #[source]
        source: protocol::coords::CoordError,
    },
}

/// One line of a command planner's answer, as it must be (anything else is refused).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    action: Option<serde_json::Value>,
    done: Option<String>,
    /// With `done`: the planner's proposed completion checks.
    #[serde(default)]
    checks: Vec<crate::Assertion>,
    give_up: Option<String>,
    infeasible: Option<String>,
    /// With `infeasible`: the conditions found unmet.
    #[serde(default)]
    unmet: Vec<String>,
    /// `{"look": true}`: see the next page as an image too.
    #[serde(default)]
    look: bool,
}

/// The largest answer line a command planner may send.
const ANSWER_MAX_BYTES: usize = 256 * 1024;

impl Planner for CommandPlanner {
    fn next(&mut self, input: PlanInput) -> PlanFuture<'_> {
        Box::pin(async move {
            use tokio::io::AsyncWriteExt;
            let last = input.last.as_ref().map(|l| {
                json!({
                    "action": l.action,
                    "receipt": l.receipt,
                    "error": l.error.as_ref().map(|(code, message)| json!({"code": code.as_str(), "message": message})),
                })
            });
            let line = json!({"task": input.task, "step": input.step, "observation": input.observation, "last": last});
            let mut text = line.to_string();
            text.push('\n');
            let gone = |e: std::io::Error| {
                PlannerError::Failed(format!("the planner stopped reading: {e}"))
            };
            self.stdin.write_all(text.as_bytes()).await.map_err(gone)?;
            self.stdin.flush().await.map_err(gone)?;
            let answer = match read_line_bounded(&mut self.reader, ANSWER_MAX_BYTES).await {
                Ok(Some(answer)) => String::from_utf8(answer).map_err(|_| {
                    PlannerError::Failed("the planner's answer is not UTF-8".into())
                })?,
                Ok(None) => {
                    let status = self
                        .child
                        .try_wait()
                        .ok()
                        .flatten()
                        .map(|s| format!(" ({s})"))
                        .unwrap_or_default();
                    return Err(PlannerError::Failed(format!(
                        "the planner exited without an answer{status}"
                    )));
                }
                Err(e) => {
                    return Err(PlannerError::Failed(format!(
                        "the planner's answer is unreadable: {e}"
                    )));
                }
            };
            parse_answer(&answer)
        })
    }

    fn model(&self) -> Option<String> {
        Some("program".into())
    }
}

/// Reads a planner's (or a model's) answer: exactly one JSON object `{"action": …}` (validated
/// like any model output), `{"done": "summary", "checks"?: [assertion…]}`, `{"give_up": "why"}`
/// or `{"infeasible": "why", "unmet"?: ["…"]}`. A model that wraps the object in a Markdown code
/// fence is read too; anything else is refused.
pub fn parse_answer(answer: &str) -> Result<PlannerStep, PlannerError> {
    parse_answer_seen(answer, None)
}

/// [`parse_answer`] for a planner that showed the model `shot` (a screenshot of the page, its
/// size and the viewport): the answer's point targets are in that image's pixels and are mapped
/// to CSS pixels first ([`points_from_screenshot`]).
pub fn parse_answer_seen(
    answer: &str,
    shot: Option<&(protocol::ImageSize, protocol::Viewport)>,
) -> Result<PlannerStep, PlannerError> {
    if answer.len() > ANSWER_MAX_BYTES {
        return Err(PlannerError::Failed(format!(
            "the answer is over {ANSWER_MAX_BYTES} bytes"
        )));
    }
    let trimmed = answer.trim();
    let unfenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .map(str::trim)
        .unwrap_or(trimmed);
    let parsed: Answer = serde_json::from_str(unfenced).map_err(|e| {
        PlannerError::Failed(format!(
            "the planner's answer is not {{\"action\"|\"done\"|\"give_up\": …}}: {e}"
        ))
    })?;
    let Answer {
        action,
        done,
        checks,
        give_up,
        infeasible,
        unmet,
        look,
    } = parsed;
    if look {
        return match (action, done, give_up, infeasible) {
            (None, None, None, None) => Ok(PlannerStep::Look),
            _ => Err(PlannerError::Failed("look goes alone".into())),
        };
    }
    if !checks.is_empty() && done.is_none() {
        return Err(PlannerError::Failed("checks go with done".into()));
    }
    if !unmet.is_empty() && infeasible.is_none() {
        return Err(PlannerError::Failed("unmet goes with infeasible".into()));
    }
    match (action, done, give_up, infeasible) {
        (Some(action), None, None, None) => {
            let action = match shot {
                Some(_) => points_from_screenshot(&action, shot)
                    .map_err(|e| PlannerError::Failed(e.to_string()))?,
                None => action,
            };
            Ok(PlannerStep::Act(protocol::validate_extended_action(
                &action,
            )?))
        }
        (None, Some(summary), None, None) => Ok(PlannerStep::Done {
            summary,
            checks: crate::verify::proposed_checks(checks)?,
        }),
        (None, None, Some(summary), None) => Ok(PlannerStep::GiveUp { summary }),
        (None, None, None, Some(summary)) => Ok(PlannerStep::Infeasible {
            summary,
            unmet: crate::verify::unmet_conditions(unmet),
        }),
        _ => Err(PlannerError::Failed(
            "the planner must answer exactly one of action, done, give_up, infeasible".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::read_line_bounded;

    /// Every planner tells its model a step the same way: refused, failed or its state, and the
    /// receipt's detail apart (for the untrusted markers).
    #[test]
    fn a_step_is_told_by_its_outcome_and_receipt_detail() {
        use protocol::{ErrorCode, ExtendedKind, FrameId, Receipt};
        let frame = FrameId::new("frame_1").unwrap();
        let report =
            |receipt: Option<Receipt>, error: Option<(ErrorCode, String)>| super::StepReport {
                action: "click".into(),
                receipt,
                error,
            };
        let confirmed = report(
            Some(Receipt::confirmed(ExtendedKind::Click, frame.clone())),
            None,
        );
        assert_eq!(
            (confirmed.outcome(), confirmed.receipt_detail()),
            (("click confirmed".to_owned(), false), None)
        );
        let noted = report(
            Some(
                Receipt::confirmed(ExtendedKind::Click, frame.clone())
                    .with_note("the page began a download (\"a.csv\")"),
            ),
            None,
        );
        assert_eq!(
            noted.receipt_detail(),
            Some("the page began a download (\"a.csv\")")
        );
        let failed = report(
            Some(Receipt::failed(
                ExtendedKind::Click,
                frame,
                ErrorCode::InvalidAction,
                true,
                "nothing changed",
            )),
            None,
        );
        assert_eq!(
            (failed.outcome(), failed.receipt_detail()),
            (("click failed".to_owned(), true), Some("nothing changed"))
        );
        let refused = report(
            None,
            Some((ErrorCode::StaleObservation, "observe again".into())),
        );
        assert_eq!(
            refused.outcome(),
            (
                "click refused: stale_observation (observe again)".to_owned(),
                true
            )
        );
    }

    #[tokio::test]
    async fn answer_lines_are_bounded() {
        let mut input: &[u8] = b"{\"done\": \"x\"}\nlast";
        assert_eq!(
            read_line_bounded(&mut input, 64).await.unwrap().unwrap(),
            b"{\"done\": \"x\"}"
        );
        assert_eq!(
            read_line_bounded(&mut input, 64).await.unwrap().unwrap(),
            b"last"
        );
        assert!(read_line_bounded(&mut input, 64).await.unwrap().is_none());
        let long = vec![b'x'; 100];
        assert!(read_line_bounded(&mut long.as_slice(), 64).await.is_err());
    }
}
