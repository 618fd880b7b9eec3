//! The secrets a person gave a run (`protocol::secret`; issue 29: "secrets given in a task never
//! go to the model"): read once when the run starts, shown to its planner only as placeholders,
//! and put into an action's text in one place — [`Given::fill`], on the one path, after the
//! field's origin is checked against the origins the person named. Not the redaction registry
//! (`policy::SecretRegistry`, which the surface and the records use): this decides where a
//! secret may go; the registry keeps it out of what comes back.

use std::borrow::Cow;

use protocol::ExtendedAction;
use protocol::secret::{self, PLACEHOLDER_OPEN, SecretName, SecretValue};

use crate::error::RuntimeError;

/// One secret with its origins read.
#[derive(Debug, Clone)]
struct One {
    name: SecretName,
    value: SecretValue,
    origins: Vec<policy::Origin>,
}

/// A run's secrets (empty for a direct call: no secret is ever filled in there).
#[derive(Debug, Clone, Default)]
pub(crate) struct Given {
    secrets: Vec<One>,
}

/// No secrets: a direct call's (a placeholder there names nothing).
pub(crate) static NONE: Given = Given {
    secrets: Vec::new(),
};

/// An action with its placeholders filled in: what is sent.
pub(crate) struct Filled {
    pub(crate) action: ExtendedAction,
}

impl Given {
    /// Reads a request's secrets: every origin must be a web origin (`http`/`https`).
    pub(crate) fn read(secrets: &protocol::Secrets) -> Result<Given, RuntimeError> {
        let mut out = Vec::new();
        for (name, given) in secrets.iter() {
            let mut origins = Vec::new();
            for o in &given.origins {
                let origin = policy::Origin::parse(o)
                    .ok()
                    .filter(|origin| matches!(origin.scheme().as_str(), "http" | "https"))
                    .ok_or_else(|| {
                        RuntimeError::InvalidAction(format!(
                            "the secret {name}'s origin {o:?} is not a web origin (https://host[:port])"
                        ))
                    })?;
                origins.push(origin);
            }
            out.push(One {
                name: name.clone(),
                value: given.value.clone(),
                origins,
            });
        }
        Ok(Given { secrets: out })
    }

    /// Whether the run has none.
    pub(crate) fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// Every value, for the registries that take them out of text (the surface, the record).
    pub(crate) fn values(&self) -> Vec<String> {
        self.secrets
            .iter()
            .map(|s| s.value.expose().to_owned())
            .collect()
    }

    /// The task as the planner reads it: a value the person wrote into the task anyway is
    /// replaced by its placeholder, and the placeholders it may write are listed with where
    /// each may be typed.
    pub(crate) fn planner_task(&self, task: &str) -> String {
        if self.secrets.is_empty() {
            return task.to_owned();
        }
        let mut task = task.to_owned();
        // Longest first: a value inside another is not cut out of it.
        let mut by_length: Vec<&One> = self.secrets.iter().collect();
        by_length.sort_by_key(|s| std::cmp::Reverse(s.value.expose().len()));
        for s in by_length {
            task = task.replace(s.value.expose(), &s.name.placeholder());
        }
        let list: Vec<String> = self
            .secrets
            .iter()
            .map(|s| {
                let origins: Vec<String> = s.origins.iter().map(|o| o.serialize_web()).collect();
                format!("{} (only on {})", s.name.placeholder(), origins.join(", "))
            })
            .collect();
        format!(
            "{task}\n\nSecrets the person gave for this task, which you never see: to type one, write its placeholder as (part of) the text of a `type` action, and Glovebox types the value: {}.",
            list.join("; ")
        )
    }

    /// Whether a person named `origin` for one of these secrets: credential fields there are
    /// what they asked to be filled, not a step to ask about again.
    pub(crate) fn gives_credentials(&self, origin: &policy::Origin) -> bool {
        self.secrets.iter().any(|s| s.origins.contains(origin))
    }

    /// The action with its placeholders filled in, or `None` when it has none. A placeholder
    /// goes only in the text of `type`, into a field whose document is on an origin the person
    /// named for that secret (`field_origin`: where the field was observed; `None` when that is
    /// not known, which refuses). Refused: an unknown name, a placeholder anywhere else.
    pub(crate) fn fill(
        &self,
        action: &ExtendedAction,
        field_origin: Option<&policy::Origin>,
    ) -> Result<Option<Filled>, RuntimeError> {
        let ExtendedAction::Type(typed) = action else {
            // Any other action carrying a placeholder of a run that has secrets would send the
            // marker itself (a URL, an option, a prompt's answer): refused rather than sent as
            // written. Without secrets there is nothing a marker could stand for.
            if self.secrets.is_empty() {
                return Ok(None);
            }
            let json = serde_json::to_string(action).unwrap_or_default();
            if let Some(name) = secret::placeholders(&json).first() {
                return Err(RuntimeError::InvalidAction(format!(
                    "{PLACEHOLDER_OPEN}{name}… goes only in the text of a `type` action (into a page's field)"
                )));
            }
            return Ok(None);
        };
        let names = secret::placeholders(typed.text.as_str());
        if names.is_empty() {
            return Ok(None);
        }
        for name in &names {
            let Some(one) = self.secrets.iter().find(|s| s.name.as_str() == *name) else {
                return Err(RuntimeError::InvalidAction(
                    secret::SecretError::Unknown((*name).to_owned()).to_string(),
                ));
            };
            let allowed: Vec<String> = one.origins.iter().map(|o| o.serialize_web()).collect();
            match field_origin {
                Some(origin) if one.origins.contains(origin) => {}
                Some(origin) => {
                    return Err(RuntimeError::OriginDenied {
                        reason: format!(
                            "the secret {name} may be typed only on {}; this field is on {}",
                            allowed.join(", "),
                            origin.serialize_web()
                        ),
                    });
                }
                None => {
                    return Err(RuntimeError::OriginDenied {
                        reason: format!(
                            "the secret {name} may be typed only on {}; where this field is cannot be told (name it by a ref of the latest observation)",
                            allowed.join(", ")
                        ),
                    });
                }
            }
        }
        let text = secret::fill(typed.text.as_str(), |name| {
            self.secrets
                .iter()
                .find(|s| s.name.as_str() == name)
                .map(|s| s.value.expose())
        })
        .map_err(|e| RuntimeError::InvalidAction(e.to_string()))?;
        let text = protocol::action::TypedText::new(Cow::into_owned(text))
            .map_err(|e| RuntimeError::InvalidAction(format!("with its secrets filled in, {e}")))?;
        let mut filled = typed.clone();
        filled.text = text;
        Ok(Some(Filled {
            action: ExtendedAction::Type(filled),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given() -> Given {
        let secrets: protocol::Secrets = serde_json::from_value(serde_json::json!({
            "pw": {"value": "hunter22", "origins": ["https://a.test"]},
            "user": {"value": "ada@a.test", "origins": ["https://a.test", "http://b.test:8080"]},
        }))
        .unwrap();
        Given::read(&secrets).unwrap()
    }

    fn type_action(text: &str) -> ExtendedAction {
        protocol::validate_extended_action(&serde_json::json!({
            "type": "type", "expected_frame_id": "frame_1", "target": {"kind": "element", "ref": "e1"},
            "text": text, "intent": "sign in"
        }))
        .unwrap()
    }

    fn origin(o: &str) -> policy::Origin {
        policy::Origin::parse(o).unwrap()
    }

    #[test]
    fn a_placeholder_is_filled_only_on_its_origins() {
        let g = given();
        let a = type_action("<secret>user</secret>");
        let filled = g
            .fill(&a, Some(&origin("http://b.test:8080")))
            .unwrap()
            .unwrap();
        let ExtendedAction::Type(t) = &filled.action else {
            panic!("not a type")
        };
        assert_eq!(t.text.as_str(), "ada@a.test");
        for (field, says) in [
            (Some(origin("https://c.test")), "only on https://a.test"),
            (None, "cannot be told"),
        ] {
            let e = g
                .fill(&type_action("<secret>pw</secret>"), field.as_ref())
                .err()
                .unwrap();
            assert!(
                matches!(&e, RuntimeError::OriginDenied { reason } if reason.contains(says)),
                "{e}"
            );
        }
        // Two secrets in one text: both must be allowed there.
        assert!(
            g.fill(
                &type_action("<secret>user</secret>:<secret>pw</secret>"),
                Some(&origin("http://b.test:8080"))
            )
            .is_err()
        );
    }

    #[test]
    fn unknown_names_and_other_actions_are_refused() {
        let g = given();
        let e = g
            .fill(
                &type_action("<secret>card</secret>"),
                Some(&origin("https://a.test")),
            )
            .err()
            .unwrap();
        assert!(matches!(e, RuntimeError::InvalidAction(_)), "{e}");
        let nav = protocol::validate_extended_action(&serde_json::json!({
            "type": "navigate", "expected_frame_id": "frame_1",
            "url": "https://c.test/?p=<secret>pw</secret>", "intent": "leak"
        }))
        .unwrap();
        assert!(matches!(
            g.fill(&nav, Some(&origin("https://a.test"))),
            Err(RuntimeError::InvalidAction(_))
        ));
        // No placeholder: nothing to fill, whatever the origin.
        assert!(g.fill(&type_action("plain"), None).unwrap().is_none());
        // A direct call has no secrets: a placeholder names nothing.
        assert!(
            Given::default()
                .fill(
                    &type_action("<secret>pw</secret>"),
                    Some(&origin("https://a.test"))
                )
                .is_err()
        );
    }

    #[test]
    fn the_planner_reads_placeholders_never_values() {
        let g = given();
        let task = g.planner_task("Sign in as ada@a.test with password hunter22");
        assert!(
            !task.contains("hunter22") && !task.contains("ada@a.test"),
            "{task}"
        );
        assert!(
            task.contains("<secret>pw</secret> (only on https://a.test)"),
            "{task}"
        );
        assert_eq!(Given::default().planner_task("as is"), "as is");
    }
}
