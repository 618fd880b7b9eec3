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

impl Assertion {
    /// Within the limits: at most [`ASSERTION_TEXT_MAX_CHARS`] per text, none empty.
    pub(crate) fn check_bounds(&self) -> Result<(), crate::RuntimeError> {
        let texts: &[&String] = match self {
            Assertion::TextPresent { text } | Assertion::UrlContains { text } => &[text],
            Assertion::ElementValue { name, value } => &[name, value],
            Assertion::ElementState { name, state } => &[name, state],
        };
        for text in texts {
            let n = text.chars().count();
            if n > ASSERTION_TEXT_MAX_CHARS {
                return Err(crate::RuntimeError::InvalidAction(format!("a success_when text has {n} characters (at most {ASSERTION_TEXT_MAX_CHARS})")));
            }
        }
        if let Assertion::TextPresent { text } | Assertion::UrlContains { text } = self
            && text.trim().is_empty()
        {
            return Err(crate::RuntimeError::InvalidAction("a success_when text is empty".into()));
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
        let element = |name: &str| observation.interactive_elements().iter().find(|e| e.name() == name);
        let (passed, kind) = match self {
            Assertion::TextPresent { text } => {
                // The page's text only — names, text lines, values, inline text, unescaped —
                // never the snapshot's syntax (`button`, `[e1]`), whitespace folded as the
                // snapshot folds it.
                let wanted = text.split_whitespace().collect::<Vec<_>>().join(" ");
                let page = browser::snapshot_text(observation.aria_snapshot());
                (!wanted.is_empty() && page.iter().any(|t| t.contains(wanted.as_str())), EvidenceKind::Assertion)
            }
            Assertion::UrlContains { text } => (observation.url().contains(text.as_str()), EvidenceKind::UrlMatch),
            Assertion::ElementValue { name, value } => (element(name).and_then(|e| e.value()) == Some(value.as_str()), EvidenceKind::ElementState),
            Assertion::ElementState { name, state } => (element(name).is_some_and(|e| e.states().iter().any(|s| s == state)), EvidenceKind::ElementState),
        };
        (passed, CompletionEvidence::new(kind, self.describe(), frame))
    }
}
