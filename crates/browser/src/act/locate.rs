//! Locators (role and name, label, text, test id) and frame chains, resolved afresh against
//! the live page on every action: exactly one match or an error (none: "no element matches";
//! several: the candidates listed, never a guess); not refs (see `element.rs`).
//!
//! Matching follows `protocol::extended::locator`: whitespace folded on both sides;
//! `exact: false` is a case-insensitive substring, `exact: true` the case-sensitive whole
//! string; roles and test ids always exact. Roles and names come from Chromium's own
//! accessibility tree (`Accessibility.queryAXTree`); labels, text and test ids from one script
//! run over the document and its open shadow roots. Only rendered elements match (hidden ones
//! could not take the action anyway), and only in the document searched: a frame's content is
//! searched only by entering it with a `frame` chain.

use cdp::Session;
use cdp::domains::accessibility::{AxNode, GetPartialAxTree};
use cdp::domains::dom::{GetContentQuads, Node, ResolveNode};
use cdp::domains::runtime::{CallArgument, CallFunctionOn, Evaluate};
use protocol::extended::{FrameStep, Locator};
use protocol::{ElementSpec, Target};
use serde_json::{Value, json};

use super::element::{Resolved, describe};
use crate::BrowserError;
use crate::observe::ObservationRecord;
use crate::tab::Tab;

/// How many candidates an ambiguity error lists.
const LISTED: usize = 8;

/// How long what a locator resolved to when the runtime judged an action stays for that
/// action's dispatch.
const LOCATED_KEPT: std::time::Duration = std::time::Duration::from_secs(1);

/// What a locator resolved to when the runtime judged the action (its policy reads the element's
/// role, name and whether it is a secret field), kept for the next dispatch that resolves the
/// same locator on the same frame — that action's, since the runtime judges each action right
/// before dispatching it: the element judged is the element acted on (resolving it again could
/// find another, had the page changed in between), and the second resolution's round trips are
/// saved. Used once, within [`LOCATED_KEPT`]; the frame's world check before dispatch has already
/// refused a page whose structure changed since.
pub(crate) struct Located {
    frame_id: protocol::FrameId,
    locator: Locator,
    resolved: Resolved,
    at: std::time::Instant,
}

impl std::fmt::Debug for Located {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Located")
            .field("frame_id", &self.frame_id)
            .field("label", &self.resolved.label)
            .finish()
    }
}

/// A document to search: its frame's session, the document object, and where the session's
/// viewport sits in the top-level viewport.
struct Scope {
    session: Session,
    document: String,
    offset: (f64, f64),
    /// ` in frame "Payment"`, or empty for the page.
    within: String,
}

/// One element a locator matched.
struct Match {
    object_id: String,
    backend: i64,
}

impl Tab {
    /// An element by ref (re-checked against the expected observation) or by locator.
    pub(super) async fn resolve_spec(
        &self,
        record: &ObservationRecord,
        spec: &ElementSpec,
    ) -> Result<Resolved, BrowserError> {
        match spec {
            ElementSpec::Ref(e) => self.resolve(record, &e.element).await,
            ElementSpec::Locator(l) => self.locate(record, l).await,
        }
    }

    /// An element target of a click, hover or drag end; `None` for a point.
    pub(super) async fn resolve_target(
        &self,
        record: &ObservationRecord,
        target: &Target,
    ) -> Result<Option<Resolved>, BrowserError> {
        match target {
            Target::Ref(e) => self.resolve(record, &e.element).await.map(Some),
            Target::Locator(l) => self.locate(record, l).await.map(Some),
            Target::Point(_) => Ok(None),
        }
    }

    /// Resolves a locator to exactly one live element.
    pub(super) async fn locate(
        &self,
        record: &ObservationRecord,
        locator: &Locator,
    ) -> Result<Resolved, BrowserError> {
        let kept = crate::tab::lock(&self.state).located.take();
        if let Some(kept) = kept
            && kept.frame_id == record.frame_id
            && kept.locator == *locator
            && kept.at.elapsed() < LOCATED_KEPT
        {
            return Ok(kept.resolved);
        }
        self.locate_afresh(record, locator).await
    }

    /// [`Tab::locate`], kept for the same action's dispatch ([`Located`]).
    pub(super) async fn locate_to_keep(
        &self,
        record: &ObservationRecord,
        locator: &Locator,
    ) -> Result<Resolved, BrowserError> {
        let resolved = self.locate_afresh(record, locator).await?;
        crate::tab::lock(&self.state).located = Some(Located {
            frame_id: record.frame_id.clone(),
            locator: locator.clone(),
            resolved: resolved.clone(),
            at: std::time::Instant::now(),
        });
        Ok(resolved)
    }

    async fn locate_afresh(
        &self,
        record: &ObservationRecord,
        locator: &Locator,
    ) -> Result<Resolved, BrowserError> {
        let mut scope = self.top_scope().await?;
        if let Some(chain) = locator.frame() {
            for step in chain.steps() {
                scope = self.enter_frame(record, &scope, step).await?;
            }
        }
        let matches = match locator {
            Locator::Role {
                role, name, exact, ..
            } => {
                self.by_role(
                    &scope,
                    role.as_str(),
                    name.as_ref().map(|n| n.as_str()),
                    *exact,
                )
                .await?
            }
            Locator::Label { text, exact, .. } => {
                self.by_script(
                    &scope,
                    json!({ "kind": "label", "text": text.as_str(), "exact": exact }),
                )
                .await?
            }
            Locator::Text { text, exact, .. } => {
                self.by_script(
                    &scope,
                    json!({ "kind": "text", "text": text.as_str(), "exact": exact }),
                )
                .await?
            }
            Locator::TestId { id, .. } => {
                self.by_script(&scope, json!({ "kind": "test_id", "id": id.as_str() }))
                    .await?
            }
        };
        let what = format!("{}{}", describe_locator(locator), scope.within);
        let found = self
            .only_one(record, &scope, matches, &what, "element")
            .await?;
        let (role, name) = ax_role_name(&scope.session, found.backend).await;
        Ok(Resolved {
            label: format!("{role} \"{name}\" (found by {what})"),
            session: scope.session.clone(),
            backend_node_id: found.backend,
            object_id: found.object_id,
            frame_offset: scope.offset,
            observed_bounds: None,
            role,
            name,
            last_facts: Default::default(),
        })
    }

    /// Exactly one match, or an error: none matches, or several do (listed, with refs where the
    /// latest observation has one).
    async fn only_one(
        &self,
        record: &ObservationRecord,
        scope: &Scope,
        mut matches: Vec<Match>,
        what: &str,
        noun: &str,
    ) -> Result<Match, BrowserError> {
        match matches.len() {
            0 => Err(BrowserError::NotActionable {
                reason: format!("no {noun} matches {what}"),
            }),
            1 => Ok(matches.remove(0)),
            n => {
                let mut listed = Vec::new();
                for m in matches.iter().take(LISTED) {
                    let (role, name) = ax_role_name(&scope.session, m.backend).await;
                    let dom = describe(&scope.session, &m.object_id).await;
                    let reference = record
                        .refs
                        .iter()
                        .find(|(_, b)| {
                            b.backend_node_id == m.backend
                                && self.live_session(&b.session).id() == scope.session.id()
                        })
                        .map(|(r, _)| format!(" [{r}]"))
                        .unwrap_or_default();
                    listed.push(format!("{role} \"{name}\" ({dom}){reference}"));
                }
                let more = if n > LISTED {
                    format!(", and {} more", n - LISTED)
                } else {
                    String::new()
                };
                Err(BrowserError::NotActionable {
                    reason: format!(
                        "{n} {noun}s match {what}; make it more specific (exact, a name, a frame) or use a ref: {}{more}",
                        listed.join("; ")
                    ),
                })
            }
        }
    }

    /// The top document of the tab.
    async fn top_scope(&self) -> Result<Scope, BrowserError> {
        let document = document_object(&self.session).await?;
        Ok(Scope {
            session: self.session.clone(),
            document,
            offset: (0.0, 0.0),
            within: String::new(),
        })
    }

    /// Enters the frame one step names, inside `scope`.
    async fn enter_frame(
        &self,
        record: &ObservationRecord,
        scope: &Scope,
        step: &FrameStep,
    ) -> Result<Scope, BrowserError> {
        let (session, backend, offset, label) = match step {
            FrameStep::Element { element } => {
                let r = self.resolve_frame(record, element).await?;
                // The chain's rule holds for refs too: each step's frame is in the document
                // the previous step entered (the page's, for the first).
                if !self.owned_by(&r, scope).await? {
                    let searched = if scope.within.is_empty() {
                        "the page's document".to_owned()
                    } else {
                        format!("the document{}", scope.within)
                    };
                    return Err(BrowserError::NotActionable {
                        reason: format!(
                            "{} is not in {searched}; name the frames that hold it first, outermost first",
                            r.label
                        ),
                    });
                }
                (
                    r.session.clone(),
                    r.backend_node_id,
                    r.frame_offset,
                    r.label.clone(),
                )
            }
            FrameStep::Title { text, exact } => {
                let what = format!(
                    "title {:?}{}{}",
                    text.as_str(),
                    if *exact { " (exact)" } else { "" },
                    scope.within
                );
                let matches = self
                    .by_script(
                        scope,
                        json!({ "kind": "frame_title", "text": text.as_str(), "exact": exact }),
                    )
                    .await?;
                let found = self
                    .only_one(record, scope, matches, &what, "frame")
                    .await?;
                (
                    scope.session.clone(),
                    found.backend,
                    scope.offset,
                    format!("frame {:?}", text.as_str()),
                )
            }
            FrameStep::TestId { id } => {
                let what = format!("test id {:?}{}", id.as_str(), scope.within);
                let matches = self
                    .by_script(scope, json!({ "kind": "frame_test_id", "id": id.as_str() }))
                    .await?;
                let found = self
                    .only_one(record, scope, matches, &what, "frame")
                    .await?;
                (
                    scope.session.clone(),
                    found.backend,
                    scope.offset,
                    format!("frame with test id {:?}", id.as_str()),
                )
            }
        };
        let timeout = session.connection().default_timeout();
        let described = session
            .send_raw(
                "DOM.describeNode",
                json!({ "backendNodeId": backend, "depth": 0, "pierce": true }),
                timeout,
            )
            .await?;
        let node: Node = serde_json::from_value(
            described.get("node").cloned().unwrap_or(Value::Null),
        )
        .map_err(|e| BrowserError::Internal {
            reason: format!("node did not decode: {e}"),
        })?;
        if !node.node_name.eq_ignore_ascii_case("iframe")
            && !node.node_name.eq_ignore_ascii_case("frame")
        {
            return Err(BrowserError::NotActionable {
                reason: format!("{label} is not a frame (<iframe> or <frame>)"),
            });
        }
        let within = format!(" in {label}{}", scope.within);
        // Same-process frame: its document is in this session, coordinates already top-level.
        if let Some(doc) = node
            .content_document
            .as_ref()
            .filter(|d| d.backend_node_id != 0)
        {
            let object = session
                .call(ResolveNode {
                    backend_node_id: Some(doc.backend_node_id),
                    execution_context_id: None,
                })
                .await?;
            let document = object
                .object
                .object_id
                .ok_or_else(|| BrowserError::NotActionable {
                    reason: format!("{label} has no document yet"),
                })?;
            return Ok(Scope {
                session,
                document,
                offset,
                within,
            });
        }
        // Out-of-process frame: its own session; its coordinates start at the host's content box.
        let frame = node.frame_id.ok_or_else(|| BrowserError::NotActionable {
            reason: format!("{label} has no document yet"),
        })?;
        let child = self
            .children
            .list()
            .into_iter()
            .find(|c| c.info.target_id.as_ref().is_some_and(|t| t.0 == frame))
            .ok_or_else(|| BrowserError::NotActionable {
                reason: format!("{label} has not loaded yet"),
            })?;
        let quads = session
            .call(GetContentQuads {
                backend_node_id: Some(backend),
                object_id: None,
            })
            .await?;
        let corner = quads
            .quads
            .first()
            .filter(|q| q.len() == 8)
            .map(|q| (q[0], q[1]))
            .ok_or_else(|| BrowserError::NotActionable {
                reason: format!("{label} is not visible"),
            })?;
        let document = document_object(&child.session).await?;
        Ok(Scope {
            session: child.session,
            document,
            offset: (offset.0 + corner.0, offset.1 + corner.1),
            within,
        })
    }

    /// Whether an element belongs to the scope's document (shadow roots included). Objects of
    /// two frames live in two JavaScript worlds and cannot meet in one call, so the element's
    /// owner document and the scope's document are compared as DOM nodes.
    async fn owned_by(&self, r: &Resolved, scope: &Scope) -> Result<bool, BrowserError> {
        if r.session.id() != scope.session.id() {
            return Ok(false);
        }
        let owner = scope
            .session
            .call(CallFunctionOn {
                function_declaration: "function () { return this.ownerDocument; }".to_owned(),
                object_id: Some(r.object_id.clone()),
                return_by_value: Some(false),
                ..Default::default()
            })
            .await?;
        let Some(owner) = owner.result.object_id else {
            return Ok(false);
        };
        let timeout = scope.session.connection().default_timeout();
        let backend = |object: String| {
            let session = scope.session.clone();
            async move {
                let described = session
                    .send_raw("DOM.describeNode", json!({ "objectId": object }), timeout)
                    .await?;
                Ok::<_, BrowserError>(
                    described
                        .pointer("/node/backendNodeId")
                        .and_then(Value::as_i64),
                )
            }
        };
        let (owner, document) = tokio::join!(backend(owner), backend(scope.document.clone()));
        Ok(matches!((owner?, document?), (Some(a), Some(b)) if a == b))
    }

    /// Role (and name) matches from the accessibility tree of the scope's document.
    async fn by_role(
        &self,
        scope: &Scope,
        role: &str,
        name: Option<&str>,
        exact: bool,
    ) -> Result<Vec<Match>, BrowserError> {
        // Chromium answers `queryAXTree` for a background tab (a window it opened is in front)
        // only once the tab paints, which it never does there: a role locator waited out its
        // whole deadline (issue 35's 30 s click). The action brings the tab to the front anyway.
        let hidden =
            crate::capture::evaluate_world(self, "document.visibilityState === 'hidden'").await?;
        if hidden == Value::Bool(true) {
            self.session
                .call(cdp::domains::page::BringToFront {})
                .await?;
        }
        let timeout = scope.session.connection().default_timeout();
        let reply = scope
            .session
            .send_raw(
                "Accessibility.queryAXTree",
                json!({ "objectId": scope.document, "role": role }),
                timeout,
            )
            .await?;
        let nodes: Vec<AxNode> =
            serde_json::from_value(reply.get("nodes").cloned().unwrap_or(Value::Null))
                .unwrap_or_default();
        let mut matches = Vec::new();
        for node in nodes.iter().filter(|n| !n.ignored) {
            let Some(backend) = node.backend_dom_node_id else {
                continue;
            };
            let have = node
                .name
                .as_ref()
                .and_then(|n| n.text())
                .unwrap_or_default();
            if name.is_some_and(|want| !text_matches(&have, want, exact)) {
                continue;
            }
            let Ok(object) = scope
                .session
                .call(ResolveNode {
                    backend_node_id: Some(backend),
                    execution_context_id: None,
                })
                .await
            else {
                continue;
            };
            let Some(object_id) = object.object.object_id else {
                continue;
            };
            let in_scope = scope
                .session
                .call(CallFunctionOn {
                    function_declaration: IN_SCOPE_JS.to_owned(),
                    object_id: Some(object_id.clone()),
                    arguments: vec![CallArgument {
                        value: None,
                        object_id: Some(scope.document.clone()),
                    }],
                    return_by_value: Some(true),
                    ..Default::default()
                })
                .await?;
            if in_scope.result.value == Some(Value::Bool(true)) {
                matches.push(Match { object_id, backend });
            }
        }
        Ok(matches)
    }

    /// Label, text, test id and frame matches from one script over the scope's document.
    async fn by_script(&self, scope: &Scope, spec: Value) -> Result<Vec<Match>, BrowserError> {
        let reply = scope
            .session
            .call(CallFunctionOn {
                function_declaration: LOCATE_JS.to_owned(),
                object_id: Some(scope.document.clone()),
                arguments: vec![CallArgument {
                    value: Some(spec),
                    object_id: None,
                }],
                return_by_value: Some(false),
                ..Default::default()
            })
            .await?;
        if let Some(exception) = reply.exception_details {
            return Err(BrowserError::Internal {
                reason: format!("locator script failed: {}", exception.message()),
            });
        }
        let Some(array) = reply.result.object_id else {
            return Ok(Vec::new());
        };
        let timeout = scope.session.connection().default_timeout();
        let properties = scope
            .session
            .send_raw(
                "Runtime.getProperties",
                json!({ "objectId": array, "ownProperties": true }),
                timeout,
            )
            .await?;
        let mut found: Vec<(usize, String)> = properties
            .get("result")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let index = p.get("name")?.as_str()?.parse::<usize>().ok()?;
                let object = p.pointer("/value/objectId")?.as_str()?.to_owned();
                Some((index, object))
            })
            .collect();
        found.sort();
        let mut matches = Vec::new();
        for (_, object_id) in found {
            let described = scope
                .session
                .send_raw(
                    "DOM.describeNode",
                    json!({ "objectId": object_id }),
                    timeout,
                )
                .await?;
            if let Some(backend) = described
                .pointer("/node/backendNodeId")
                .and_then(Value::as_i64)
            {
                matches.push(Match { object_id, backend });
            }
        }
        Ok(matches)
    }
}

/// The `document` object of a session's main frame (its default world).
async fn document_object(session: &Session) -> Result<String, BrowserError> {
    let reply = session
        .call(Evaluate {
            expression: "document".into(),
            return_by_value: Some(false),
            ..Default::default()
        })
        .await?;
    reply
        .result
        .object_id
        .ok_or_else(|| BrowserError::Internal {
            reason: "the frame has no document".into(),
        })
}

/// Chromium's role and (folded) name of a node, for messages.
async fn ax_role_name(session: &Session, backend: i64) -> (String, String) {
    let Ok(ax) = session
        .call(GetPartialAxTree {
            backend_node_id: Some(backend),
            fetch_relatives: Some(false),
        })
        .await
    else {
        return ("element".into(), String::new());
    };
    let node = ax
        .nodes
        .iter()
        .find(|n| n.backend_dom_node_id == Some(backend))
        .or(ax.nodes.first());
    let role = node
        .and_then(|n| n.role.as_ref())
        .and_then(|r| r.text())
        .unwrap_or_else(|| "element".into());
    let name = node
        .and_then(|n| n.name.as_ref())
        .and_then(|r| r.text())
        .map(|n| crate::model::fold(&n))
        .unwrap_or_default();
    (role, name)
}

/// The locator rule: whitespace folded; exact = case-sensitive whole string, else
/// case-insensitive substring.
fn text_matches(have: &str, want: &str, exact: bool) -> bool {
    let (have, want) = (crate::model::fold(have), crate::model::fold(want));
    if exact {
        have == want
    } else {
        have.to_lowercase().contains(&want.to_lowercase())
    }
}

fn describe_locator(locator: &Locator) -> String {
    let exact = |e: bool| if e { " (exact)" } else { "" };
    match locator {
        Locator::Role {
            role,
            name: Some(name),
            exact: e,
            ..
        } => format!("role {role} named {:?}{}", name.as_str(), exact(*e)),
        Locator::Role {
            role, name: None, ..
        } => format!("role {role}"),
        Locator::Label { text, exact: e, .. } => format!("label {:?}{}", text.as_str(), exact(*e)),
        Locator::Text { text, exact: e, .. } => format!("text {:?}{}", text.as_str(), exact(*e)),
        Locator::TestId { id, .. } => format!("test id {:?}", id.as_str()),
    }
}

/// True when `this` is rendered and belongs to `doc` (shadow roots included, other frames not).
const IN_SCOPE_JS: &str = include_str!("../js/in-scope.js");

/// Runs with `this` = a document; returns the matching rendered elements in document order.
const LOCATE_JS: &str = include_str!("../js/locate.js");

#[cfg(test)]
mod tests {
    use super::text_matches;

    #[test]
    fn the_exact_rule_of_the_protocol() {
        assert!(text_matches("Log in now", "log  in", false));
        assert!(text_matches("Please LOG IN", "log in", false));
        assert!(!text_matches("Log in now", "Log in", true));
        assert!(text_matches(" Log  in ", "Log in", true));
        assert!(!text_matches("log in", "Log in", true));
    }
}
