//! `Tab::act`: one protocol action (the extended set; v1 actions arrive converted), executed only against the element
//! or point the model saw (or a locator resolved afresh), on the frame it saw, after
//! Playwright-style actionability checks; then settle, verify, receipt, and a fresh observation.
//!
//! Before anything is sent: the `expected_frame_id` must be the tab's latest observation; the page
//! must still show the same document, URL and viewport (size, scale, zoom, scroll); a ref must
//! still resolve to the same node with the same role and name; a locator must match exactly one
//! element; upload files must be authorised. A failed check returns an error and sends nothing.
//! An upload whose target is not a file input clicks it and answers the file chooser it opens
//! (`files.rs`).
//! Actionability (visible, stable across two animation frames, enabled, editable for text, in
//! the viewport, and receiving the pointer at the click point) is retried within the action's
//! deadline; a covered element is refused with the covering element named.
//!
//! Files: `mod.rs` (entry point, freshness), `dispatch.rs` (which body runs an action),
//! `basic.rs` (navigate, wait, click, type and press bodies), `element.rs` (refs and actionability),
//! `locate.rs` (locators and frame chains), `pointer.rs`, `keyboard.rs`, `select.rs`,
//! `files.rs` (uploads and downloads), `settle.rs`.

mod basic;
mod dispatch;
mod element;
mod files;
mod keyboard;
mod locate;
mod marker;
mod pointer;
mod select;
mod settle;

use std::time::{Duration, Instant};

use protocol::extended::{DialogAction, DialogResponse};
use protocol::{ExtendedAction, ExtendedKind, FrameId, PointTarget, Receipt};

pub(crate) use keyboard::Held;
pub(crate) use locate::Located;
pub(crate) use marker::Trace;

use crate::BrowserError;
use crate::capture::{WorldState, evaluate_world};
use crate::observe::ObservationRecord;
use crate::tab::{Tab, lock};
use crate::{ActOptions, ActOutcome, ActTiming, DownloadInfo};

/// How long the fresh observation after an action may take once the action's deadline is spent.
const OBSERVE_PAST_DEADLINE: Duration = Duration::from_secs(1);

/// A check before anything is sent, bounded by the action's deadline (`until`): past it the
/// action ends `timeout` with nothing sent, whatever the browser is doing (a frozen browser
/// answers no call, and each call's own timeout is longer than an action's deadline may be).
async fn before_sending<T>(
    until: Instant,
    deadline: Duration,
    check: impl Future<Output = Result<T, BrowserError>>,
) -> Result<T, BrowserError> {
    tokio::time::timeout_at(until.into(), check)
        .await
        .unwrap_or_else(|_| {
            Err(BrowserError::Timeout {
                what: "the action's checks before sending (nothing was sent; the same action may be tried again)".into(),
                after_ms: deadline.as_millis() as u64,
            })
        })
}

/// What an action was checked against before it was sent: the viewport's size and scroll, and
/// the observation its frame id named.
struct Checked {
    viewport: ([f64; 2], [f64; 2]),
    base: std::sync::Arc<ObservationRecord>,
}

/// What dispatch produced, before the fresh observation.
pub(super) struct Dispatched {
    receipt: Receipt,
    downloads: Vec<DownloadInfo>,
}

impl From<Receipt> for Dispatched {
    fn from(receipt: Receipt) -> Self {
        Dispatched {
            receipt,
            downloads: Vec::new(),
        }
    }
}

impl Tab {
    /// Runs one action. `Err` means nothing was sent (stale frame, stale ref, not actionable,
    /// invalid); `Ok` carries a receipt that says what happened after dispatch. A v1 action is
    /// converted first (`ExtendedAction::from`): there is one path.
    pub async fn act(
        &self,
        action: &ExtendedAction,
        options: &ActOptions,
    ) -> Result<ActOutcome, BrowserError> {
        if let ExtendedAction::Dialog(answer) = action {
            return self.answer_dialog(answer, options).await;
        }
        self.run(action, options).await
    }

    async fn run(
        &self,
        action: &ExtendedAction,
        options: &ActOptions,
    ) -> Result<ActOutcome, BrowserError> {
        let what = action.kind().as_str();
        self.check_alive()?;
        let started = Instant::now();
        let until = started + options.deadline;
        let opened_before = lock(&self.state).opened.len();
        // Set once the network boundary is armed; its window ends when this is dropped, on
        // every way out below.
        let mut disarm = None;
        let (dispatched, before, base) = {
            let _write = self.write_barrier(options.deadline).await?;
            if let Some(dialog) = lock(&self.state).dialog.clone() {
                return Err(BrowserError::NotActionable {
                    reason: format!(
                        "a {} dialog is open (\"{}\"); accept or dismiss it first",
                        dialog.kind, dialog.message
                    ),
                });
            }
            let record = self
                .latest_observation()
                .ok_or_else(|| BrowserError::Stale {
                    reason: "this tab has not been observed yet".into(),
                })?;
            check_frame(&record.frame_id, action.expected_frame_id())?;
            let now = before_sending(until, options.deadline, self.read_world_now()).await?;
            check_world(&record, &now)?;
            self.take_trace();
            {
                let mut state = lock(&self.state);
                state.settled = Duration::ZERO;
                state.awaited_requests = 0;
                state.action_started = Some(Instant::now());
                state.downloads_began.clear();
            }
            if let Some(allowed) = &options.allowed_origins {
                if options.guard_typed {
                    self.refuse_open_sockets(allowed)?;
                }
                // Armed before anything is sent: whatever the action causes is judged (and
                // what the boundary refused since the last action is in this receipt).
                let typed_into = options.guard_typed.then(|| record.document_url());
                // Disarmed on every way out from here, an arming that failed or ran out of
                // time included (the guard is marked acting before it asks the browser).
                disarm = Some(self.guard.disarm_on_drop());
                let arm = self.guard.arm(allowed.clone(), typed_into);
                before_sending(until, options.deadline, arm).await?;
                if options.guard_typed {
                    before_sending(until, options.deadline, self.seal_sockets()).await?;
                }
            }
            let before = ([now.width, now.height], [now.scroll_x, now.scroll_y]);
            let dispatched = tokio::time::timeout_at(
                until.into(),
                self.dispatch(action, &record, &now, options, until),
            )
            .await;
            // An upload through a file chooser intercepts choosers only while it waits for one;
            // whatever ended the dispatch (a refusal, the deadline), interception ends with it.
            self.stop_intercepting_choosers().await;
            match dispatched {
                Ok(result) => (result?, before, record),
                Err(_) => {
                    return Err(BrowserError::Timeout {
                        what: format!("{what} action"),
                        after_ms: options.deadline.as_millis() as u64,
                    });
                }
            }
        };
        let mut outcome = self
            .finish(
                action.kind(),
                dispatched,
                opened_before,
                Some(Checked {
                    viewport: before,
                    base,
                }),
                options,
                until,
            )
            .await;
        if disarm.is_some() && !outcome.opened.is_empty() {
            self.guard
                .await_windows(&outcome.opened, Duration::from_secs(5))
                .await;
        }
        if disarm.take().is_some() {
            self.note_blocked(&mut outcome);
        }
        // A download the page began that no capture took (a link answered as an attachment, or
        // a click without `expect_download`): the model hears of it, and how to ask for it.
        let began = std::mem::take(&mut lock(&self.state).downloads_began);
        let uncaptured: Vec<String> = began
            .into_iter()
            .filter(|(guid, _)| !outcome.downloads.iter().any(|d| d.guid == *guid))
            .map(|(_, name)| format!("{:?}", name.chars().take(80).collect::<String>()))
            .collect();
        if !uncaptured.is_empty() {
            let note = format!(
                "the page began a download ({}) that Glovebox did not capture, so there is no artifact of it; a download is a person's to approve: act again with expect_download",
                uncaptured.join(", ")
            );
            outcome.receipt = outcome.receipt.clone().with_note(&note);
        }
        Ok(outcome)
    }

    /// Refuses to type while the page holds a WebSocket open to an origin the typing may not
    /// reach: the network boundary cannot block what it sends.
    fn refuse_open_sockets(&self, allowed: &[policy::Origin]) -> Result<(), BrowserError> {
        let held = self.guard.held_allowed().unwrap_or_default();
        let state = lock(&self.state);
        let outside = state.sockets.iter().find(|(_, url, _)| {
            !policy::Origin::parse(url)
                .ok()
                .and_then(|o| crate::guard::as_web(&o))
                .is_some_and(|o| allowed.contains(&o) || held.contains(&o))
        });
        match outside {
            Some((_, url, _)) => Err(BrowserError::NotActionable {
                reason: format!(
                    "the page has a WebSocket open to {}, which Glovebox's network boundary cannot block, so what is typed here could leave through it; nothing was typed (reload or leave the page to close it)",
                    policy::web_origin(url)
                ),
            }),
            None => Ok(()),
        }
    }

    /// Closes the document typed into to WebSockets the hold does not allow, before the text
    /// is in it: `Fetch` cannot pause a WebSocket handshake (whose URL alone can carry the
    /// text), but a Content-Security-Policy can refuse it. The policy is put in as a `<meta>`
    /// from Glovebox's isolated world and taken out at once; a policy, once applied, stays for
    /// the document's life and policies only add up, so the page can neither see it coming nor
    /// lift it. `http:`/`https:` sources leave every other request to the guard (they match no
    /// `ws:` URL); a WebSocket to an origin allowed later works from the next document.
    async fn seal_sockets(&self) -> Result<(), BrowserError> {
        let Some(allowed) = self.guard.held_allowed() else {
            return Ok(());
        };
        let mut sources: Vec<String> = ["http:", "https:", "data:", "blob:", "'self'"]
            .map(str::to_owned)
            .into();
        sources.extend(allowed.iter().filter_map(|origin| {
            let web = origin.serialize_web();
            web.strip_prefix("https://")
                .map(|rest| format!("wss://{rest}"))
                .or_else(|| {
                    web.strip_prefix("http://")
                        .map(|rest| format!("ws://{rest}"))
                })
        }));
        let policy = serde_json::to_string(&format!("connect-src {}", sources.join(" ")))
            .unwrap_or_default();
        let script = format!(
            "(() => {{ const m = document.createElement('meta'); m.httpEquiv = 'Content-Security-Policy'; m.content = {policy}; (document.head || document.documentElement).appendChild(m); m.remove(); return true; }})()"
        );
        evaluate_world(self, &script).await?;
        Ok(())
    }

    /// What the network boundary blocked since the last action (during this action's window,
    /// and before it while the tab was held), in its outcome and its receipt; and WebSockets a
    /// held tab opened meanwhile, which it could not block.
    fn note_blocked(&self, outcome: &mut ActOutcome) {
        outcome.blocked = self.guard.take_blocked();
        if let Some(held) = self.guard.held_allowed() {
            let mut state = lock(&self.state);
            let unblocked: Vec<String> = state
                .sockets
                .iter_mut()
                .filter(|(_, url, noted)| {
                    !*noted
                        && !policy::Origin::parse(url)
                            .ok()
                            .and_then(|o| crate::guard::as_web(&o))
                            .is_some_and(|o| held.contains(&o))
                })
                .map(|(_, url, noted)| {
                    *noted = true;
                    policy::web_origin(url)
                })
                .collect();
            drop(state);
            if !unblocked.is_empty() {
                let note = format!(
                    "this tab holds text the agent typed, and its page opened a WebSocket to {}, which the network boundary cannot block",
                    unblocked.join(", ")
                );
                outcome.receipt = outcome.receipt.clone().with_note(&note);
            }
        }
        if !outcome.blocked.is_empty() {
            let listed: Vec<String> = outcome
                .blocked
                .iter()
                .take(4)
                .map(|b| format!("{} {} ({})", b.method, b.url, b.resource_type))
                .collect();
            let note = format!(
                "the network boundary blocked {} request(s) to origins this page may not reach: {}",
                outcome.blocked.len(),
                listed.join(", ")
            );
            outcome.receipt = outcome.receipt.clone().with_note(&note);
        }
    }

    /// The outcome: what the action opened, and a fresh observation unless a dialog blocks it.
    async fn finish(
        &self,
        action: ExtendedKind,
        dispatched: Dispatched,
        opened_before: usize,
        checked: Option<Checked>,
        options: &ActOptions,
        until: Instant,
    ) -> ActOutcome {
        let (before, base) = checked.map_or((None, None), |c| (Some(c.viewport), Some(c.base)));
        // A window the page just asked for (a modifier or middle click on a link) becomes a tab a
        // moment later: wait briefly for the browser to name it, so the outcome can.
        let grace = Instant::now() + Duration::from_millis(1000);
        let pending = || {
            let state = lock(&self.state);
            state.opened.len() <= opened_before
                && state
                    .window_opens
                    .iter()
                    .any(|(_, at)| at.elapsed() < Duration::from_secs(2))
        };
        while pending() && Instant::now() < grace {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (opened, dialog) = {
            let state = lock(&self.state);
            (
                state.opened[opened_before.min(state.opened.len())..].to_vec(),
                state.dialog.clone(),
            )
        };
        let observing = Instant::now();
        // The snapshot may come as changes against the observation the action was checked
        // against (its base), unless the whole one was asked for.
        let base = base.filter(|_| !options.full_snapshot);
        // Within what is left of the action's deadline, or a short time past it: an action that
        // settled up to its deadline still answers soon, its receipt with or without a view.
        let mut observe = options.observe.clone();
        observe.deadline = observe.deadline.min(
            until
                .saturating_duration_since(Instant::now())
                .max(OBSERVE_PAST_DEADLINE),
        );
        let observation = if dialog.is_none() && self.check_alive().is_ok() {
            self.observe_against(&observe, base.as_deref()).await.ok()
        } else {
            None
        };
        let (settle, settled_by, awaited_requests) = {
            let mut state = lock(&self.state);
            (
                std::mem::take(&mut state.settled),
                std::mem::take(&mut state.settled_by),
                std::mem::take(&mut state.awaited_requests),
            )
        };
        let timing = ActTiming {
            settle,
            observe: observing.elapsed(),
            settled_by,
            awaited_requests,
        };
        // A dialog that opened as the observation began ends it: the dialog is the outcome's,
        // and the blocked page has no observation of its own here.
        let dialog = dialog.or_else(|| lock(&self.state).dialog.clone());
        let observation = if dialog.is_some() { None } else { observation };
        let after = self.latest_observation().map(|r| {
            (
                [r.world.width, r.world.height],
                [r.world.scroll_x, r.world.scroll_y],
            )
        });
        let trace = self.take_trace();
        let marker = before.and_then(|before| marker::marker(&trace, after.unwrap_or(before)));
        ActOutcome {
            action,
            receipt: dispatched.receipt,
            observation,
            opened,
            dialog,
            downloads: dispatched.downloads,
            marker,
            timing,
            blocked: Vec::new(),
        }
    }

    async fn write_barrier(
        &self,
        deadline: Duration,
    ) -> Result<tokio::sync::RwLockWriteGuard<'_, ()>, BrowserError> {
        tokio::time::timeout(deadline, self.barrier.write())
            .await
            .map_err(|_| BrowserError::Timeout {
                what: "waiting for the tab's write barrier".into(),
                after_ms: deadline.as_millis() as u64,
            })
    }

    /// `dialog`: accepts or dismisses the open dialog. The page is blocked while it is open, so
    /// only the frame id is checked (the page itself cannot be read until it is answered).
    async fn answer_dialog(
        &self,
        answer: &DialogAction,
        options: &ActOptions,
    ) -> Result<ActOutcome, BrowserError> {
        self.check_alive()?;
        let until = Instant::now() + options.deadline;
        let opened_before = lock(&self.state).opened.len();
        // Set once the network boundary is armed; its window ends when this is dropped.
        let mut disarm = None;
        let receipt = {
            let _write = self.write_barrier(options.deadline).await?;
            let record = self
                .latest_observation()
                .ok_or_else(|| BrowserError::Stale {
                    reason: "this tab has not been observed yet".into(),
                })?;
            check_frame(&record.frame_id, &answer.expected_frame_id)?;
            let (open, default_prompt) = {
                let state = lock(&self.state);
                (state.dialog.clone(), state.dialog_default_prompt.clone())
            };
            let Some(open) = open else {
                return Err(BrowserError::NotActionable {
                    reason: "no dialog is open; there is nothing to accept or dismiss".into(),
                });
            };
            let (accept, text) = match &answer.response {
                DialogResponse::Accept { prompt_text } => {
                    let text = prompt_text.as_ref().map(|t| t.as_str().to_owned());
                    if text.is_some() && open.kind != "prompt" {
                        return Err(BrowserError::NotActionable {
                            reason: format!(
                                "prompt_text answers a prompt; the open dialog is a {}",
                                open.kind
                            ),
                        });
                    }
                    (
                        true,
                        if open.kind == "prompt" {
                            text.or(default_prompt)
                        } else {
                            None
                        },
                    )
                }
                DialogResponse::Dismiss => (false, None),
            };
            // Text typed into a prompt for a secret never comes back, wherever the page echoes it.
            if let Some(text) = &text
                && open.kind == "prompt"
                && policy::classify_prompt(&open.message).is_secret()
            {
                let _ = lock(&self.state).secrets.add(text);
            }
            // Answering is an action: what the page does once answered is judged like a click's.
            if let Some(allowed) = &options.allowed_origins {
                if options.guard_typed {
                    self.refuse_open_sockets(allowed)?;
                }
                let url = self
                    .latest_observation()
                    .map(|r| r.document_url().to_owned());
                let typed_into = url.as_deref().filter(|_| options.guard_typed);
                disarm = Some(self.guard.disarm_on_drop());
                let arm = self.guard.arm(allowed.clone(), typed_into);
                before_sending(until, options.deadline, arm).await?;
            }
            let mut nav = self.session.subscribe(settle::NAVIGATION_EVENTS);
            self.handle_dialog(accept, text).await?;
            self.settle(&mut nav, until).await;
            Receipt::confirmed(ExtendedKind::Dialog, answer.expected_frame_id.clone())
        };
        let mut outcome = self
            .finish(
                ExtendedKind::Dialog,
                receipt.into(),
                opened_before,
                None,
                options,
                until,
            )
            .await;
        if disarm.take().is_some() {
            self.note_blocked(&mut outcome);
        }
        Ok(outcome)
    }

    pub(super) async fn read_world_now(&self) -> Result<WorldState, BrowserError> {
        let value = evaluate_world(self, "globalThis.__glovebox.read()").await?;
        serde_json::from_value(value).map_err(|e| BrowserError::Internal {
            reason: format!("world state did not decode: {e}"),
        })
    }
}

fn check_frame(latest: &FrameId, expected: &FrameId) -> Result<(), BrowserError> {
    if latest != expected {
        return Err(BrowserError::Stale {
            reason: format!(
                "frame {} is not the latest observation of this tab (that is {})",
                expected.as_str(),
                latest.as_str()
            ),
        });
    }
    Ok(())
}

/// The page must still show what was observed: same document, URL and viewport.
fn check_world(record: &ObservationRecord, now: &WorldState) -> Result<(), BrowserError> {
    let was = &record.world;
    let reason = if was.doc != now.doc || was.url != now.url {
        Some("the page navigated since that observation")
    } else if was.width != now.width || was.height != now.height {
        Some("the viewport was resized since that observation")
    } else if was.dpr != now.dpr || was.scale != now.scale {
        Some("the device scale or zoom changed since that observation")
    } else if was.scroll_x != now.scroll_x || was.scroll_y != now.scroll_y {
        Some("the page scrolled since that observation")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(BrowserError::Stale {
            reason: reason.into(),
        }),
        None => Ok(()),
    }
}

/// A point target: only from an observation that had a screenshot, inside its viewport, and only
/// while the page's structure is what the screenshot showed.
fn point_target(
    record: &ObservationRecord,
    now: &WorldState,
    point: PointTarget,
) -> Result<(f64, f64), BrowserError> {
    if record.screenshot_size.is_none() {
        return Err(BrowserError::NotActionable {
            reason: "a point target needs an observation with a screenshot; observe with a screenshot and use its frame_id".into(),
        });
    }
    protocol::coords::check_point_target(point, &record.viewport).map_err(|e| {
        BrowserError::NotActionable {
            reason: format!(
                "point ({}, {}) is not in the viewport: {e}",
                point.x, point.y
            ),
        }
    })?;
    if record.world.structural != now.structural {
        return Err(BrowserError::Stale {
            reason: "the page's elements changed since the screenshot".into(),
        });
    }
    Ok((f64::from(point.x), f64::from(point.y)))
}

fn same_document_url(landed: &str, wanted: &str) -> bool {
    let strip = |u: &str| {
        u.split('#')
            .next()
            .unwrap_or(u)
            .trim_end_matches('/')
            .to_owned()
    };
    strip(landed) == strip(wanted)
}
