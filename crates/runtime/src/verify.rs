//! Completion assertions the runtime checks against the page itself — never a planner's claim.

use protocol::{CompletionEvidence, EvidenceKind, Observation};
use serde::{Deserialize, Serialize};

/// Something that must hold on the page for a run to succeed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Assertion {
    /// This text appears in the page's text as observed (not in the snapshot's syntax).
    TextPresent { text: String },
    /// The (redacted) URL contains this.
    UrlContains { text: String },
    /// The element with this name holds exactly this value.
    ElementValue { name: String, value: String },
    /// The element with this name has this state (`checked`, `expanded`, `selected`, …).
    ElementState { name: String, state: String },
}

/// The most checks one run may carry.
pub const ASSERTIONS_MAX: usize = 16;
/// The longest text (or name, value, state) a check may name, in characters.
pub const ASSERTION_TEXT_MAX_CHARS: usize = 1_000;

/// The most unmet conditions an `infeasible` answer lists, and the longest one (characters).
pub const UNMET_MAX: usize = 16;
pub const UNMET_MAX_CHARS: usize = 300;

/// The longest summary or reason a planner may end a run with (`done`, `give_up`,
/// `infeasible`), in characters.
pub const SUMMARY_MAX_CHARS: usize = 4_000;

/// Refuses a planner's summary or reason longer than [`SUMMARY_MAX_CHARS`]. The runner checks
/// every planner's ending with it; a model's planner checks first, so the model is told and may
/// answer again.
pub fn check_summary(what: &str, text: &str) -> Result<(), crate::PlannerError> {
    let chars = text.chars().count();
    if chars > SUMMARY_MAX_CHARS {
        return Err(crate::PlannerError::Failed(format!(
            "{what} has {chars} characters; at most {SUMMARY_MAX_CHARS}"
        )));
    }
    Ok(())
}

/// The JSON Schema of one [`Assertion`] (for a model's `done` tool), without its `$schema`.
pub fn assertion_schema() -> serde_json::Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(Assertion)).unwrap_or_default();
    if let Some(o) = schema.as_object_mut() {
        o.remove("$schema");
        o.remove("title");
    }
    schema
}

/// A planner's proposed completion checks, within the same bounds as a caller's.
pub fn proposed_checks(checks: Vec<Assertion>) -> Result<Vec<Assertion>, crate::PlannerError> {
    if checks.len() > ASSERTIONS_MAX {
        return Err(crate::PlannerError::Failed(format!(
            "at most {ASSERTIONS_MAX} checks, not {}",
            checks.len()
        )));
    }
    for check in &checks {
        check
            .check_bounds()
            .map_err(|e| crate::PlannerError::Failed(e.to_string()))?;
    }
    Ok(checks)
}

/// The conditions an `infeasible` answer found unmet: trimmed, non-empty, bounded in number and
/// length (model text; shown as the planner's claim, never as the runtime's finding).
pub fn unmet_conditions(unmet: Vec<String>) -> Vec<String> {
    unmet
        .into_iter()
        .map(|u| u.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|u| !u.is_empty())
        .take(UNMET_MAX)
        .map(|u| {
            if u.chars().count() > UNMET_MAX_CHARS {
                format!("{}…", u.chars().take(UNMET_MAX_CHARS).collect::<String>())
            } else {
                u
            }
        })
        .collect()
}

impl Assertion {
    /// Within the limits: at most [`ASSERTION_TEXT_MAX_CHARS`] per text, none empty.
    pub fn check_bounds(&self) -> Result<(), crate::RuntimeError> {
        let texts: &[&String] = match self {
            Assertion::TextPresent { text } | Assertion::UrlContains { text } => &[text],
            Assertion::ElementValue { name, value } => &[name, value],
            Assertion::ElementState { name, state } => &[name, state],
        };
        for text in texts {
            let n = text.chars().count();
            if n > ASSERTION_TEXT_MAX_CHARS {
                return Err(crate::RuntimeError::InvalidAction(format!(
                    "a success_when text has {n} characters (at most {ASSERTION_TEXT_MAX_CHARS})"
                )));
            }
        }
        if let Assertion::TextPresent { text } | Assertion::UrlContains { text } = self
            && text.trim().is_empty()
        {
            return Err(crate::RuntimeError::InvalidAction(
                "a success_when text is empty".into(),
            ));
        }
        Ok(())
    }

    /// What the check says, in words (events, summaries): never Rust's debug text.
    pub fn describe(&self) -> String {
        match self {
            Assertion::TextPresent { text } => format!("text {text:?} is on the page"),
            Assertion::UrlContains { text } => format!("the URL contains {text:?}"),
            Assertion::ElementValue { name, value } => format!("{name:?} holds {value:?}"),
            Assertion::ElementState { name, state } => format!("{name:?} is {state}"),
        }
    }

    /// Checks against one observation; the evidence names that frame.
    pub fn check(&self, observation: &Observation) -> (bool, CompletionEvidence) {
        let frame = observation.frame_id().clone();
        let element = |name: &str| {
            observation
                .interactive_elements()
                .iter()
                .find(|e| e.name() == name)
        };
        let (passed, kind) = match self {
            Assertion::TextPresent { text } => {
                // The page's text only — names, text lines, values, inline text, unescaped —
                // never the snapshot's syntax (`button`, `[e1]`), whitespace folded as the
                // snapshot folds it.
                let wanted = text.split_whitespace().collect::<Vec<_>>().join(" ");
                let page = surface::snapshot_text(observation.aria_snapshot());
                (
                    !wanted.is_empty() && page.iter().any(|t| t.contains(wanted.as_str())),
                    EvidenceKind::Assertion,
                )
            }
            Assertion::UrlContains { text } => (
                observation.url().contains(text.as_str()),
                EvidenceKind::UrlMatch,
            ),
            Assertion::ElementValue { name, value } => (
                element(name).and_then(|e| e.value()) == Some(value.as_str()),
                EvidenceKind::ElementState,
            ),
            Assertion::ElementState { name, state } => (
                element(name).is_some_and(|e| e.states().iter().any(|s| s == state)),
                EvidenceKind::ElementState,
            ),
        };
        (
            passed,
            CompletionEvidence::new(kind, self.describe(), frame),
        )
    }
}
