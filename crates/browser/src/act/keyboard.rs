//! The keyboard: keys and chords, text entry (paste or keystrokes), keys held across actions
//! (`key_down`/`key_up`) and their release; not pointer input (see `pointer.rs`).

use cdp::domains::dom::Focus;
use cdp::domains::input::{DispatchKeyEvent, DispatchMouseEvent, InsertText};
use serde_json::{Value, json};

use super::element::{Facts, Resolved, is_settable_input};
use crate::BrowserError;
use crate::Typing;
use crate::keys::{Chord, KeyDef, modifier_bit, parse_chord};
use crate::tab::{Tab, lock};

/// How long `release_input` waits for a running action to finish.
const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Keys and mouse buttons held down across actions, per tab: what `Tab::release_input` lets go.
#[derive(Debug, Default)]
pub(crate) struct Held {
    /// Keys pressed by `key_down` and not yet released, in press order.
    keys: Vec<KeyDef>,
    /// Mouse buttons pressed and not yet released (a drag in progress), with where.
    buttons: Vec<(&'static str, f64, f64)>,
}

impl Held {
    /// The modifier bits of the held keys, for every later key and mouse event.
    pub(crate) fn modifiers(&self) -> i64 {
        self.keys
            .iter()
            .filter_map(modifier_bit)
            .fold(0, |bits, bit| bits | bit)
    }

    /// The `buttons` bitmask of the held mouse buttons.
    pub(crate) fn buttons(&self) -> i64 {
        self.buttons
            .iter()
            .map(|(b, _, _)| button_bit(b))
            .fold(0, |bits, bit| bits | bit)
    }

    pub(crate) fn holds_key(&self, def: &KeyDef) -> bool {
        self.keys
            .iter()
            .any(|k| k.key == def.key && k.code == def.code)
    }

    pub(crate) fn press_button(&mut self, button: &'static str, x: f64, y: f64) {
        self.buttons.retain(|(b, _, _)| *b != button);
        self.buttons.push((button, x, y));
    }

    pub(crate) fn release_button(&mut self, button: &str) {
        self.buttons.retain(|(b, _, _)| *b != button);
    }
}

/// The `buttons` bit of a CDP mouse button name.
pub(super) fn button_bit(button: &str) -> i64 {
    match button {
        "left" => 1,
        "right" => 2,
        "middle" => 4,
        _ => 0,
    }
}

/// One key named by a `key_down`/`key_up` (`Shift`, `a`, `Enter`, `+`).
pub(super) fn single_key(name: &str) -> Result<KeyDef, BrowserError> {
    match parse_chord(name) {
        Some(chord) if chord.modifiers.is_empty() => Ok(chord.key),
        _ => Err(BrowserError::NotActionable {
            reason: format!(
                "unknown key {name:?}: use one key name like Shift, Control, Alt, Meta, Enter, ArrowDown, or one character"
            ),
        }),
    }
}

impl Tab {
    pub(super) async fn key(
        &self,
        event_type: &str,
        def: &KeyDef,
        modifiers: i64,
        with_text: bool,
    ) -> Result<(), BrowserError> {
        if lock(&self.state).dialog.is_some() {
            return Ok(());
        }
        // Read the held modifiers first: a lock guard must not live across the await below.
        let held = lock(&self.state).held.modifiers();
        self.input(DispatchKeyEvent {
            event_type: event_type.into(),
            modifiers: Some(modifiers | held),
            text: if with_text { def.text.clone() } else { None },
            unmodified_text: if with_text { def.text.clone() } else { None },
            key: Some(def.key.clone()),
            code: Some(def.code.clone()),
            windows_virtual_key_code: Some(def.key_code),
            ..Default::default()
        })
        .await
    }

    pub(super) async fn press_chord(&self, chord: &Chord) -> Result<(), BrowserError> {
        let mut held = 0;
        for (bit, def) in &chord.modifiers {
            held |= bit;
            self.key("rawKeyDown", def, held, false).await?;
        }
        // Text is typed only without Control, Alt or Meta (those make shortcuts, not characters).
        let types = chord.key.text.is_some()
            && held & (crate::keys::CONTROL | crate::keys::ALT | crate::keys::META) == 0;
        self.key(
            if types { "keyDown" } else { "rawKeyDown" },
            &chord.key,
            held,
            types,
        )
        .await?;
        self.key("keyUp", &chord.key, held, false).await?;
        for (bit, def) in chord.modifiers.iter().rev() {
            held &= !bit;
            self.key("keyUp", def, held, false).await?;
        }
        Ok(())
    }

    /// Replaces the field's content with `text`; returns the value it then holds.
    pub(super) async fn enter_text(
        &self,
        r: &Resolved,
        facts: &Facts,
        text: &str,
        typing: Typing,
    ) -> Result<Option<String>, BrowserError> {
        r.session
            .call(Focus {
                backend_node_id: Some(r.backend_node_id),
                object_id: None,
            })
            .await?;
        if is_settable_input(facts) {
            // Native date, time and similar inputs take ISO values; no keystrokes can reach them reliably.
            self.call_on(r, SET_VALUE_JS, vec![json!(text)], false)
                .await?;
            return Ok(self.facts(r).await?.value);
        }
        if typing != Typing::Keystrokes {
            self.call_on(r, SELECT_ALL_JS, vec![], false).await?;
            if text.is_empty() {
                self.press_chord(&parse_chord("Backspace").expect("a known key"))
                    .await?;
            } else {
                self.session
                    .call(InsertText {
                        text: text.to_owned(),
                    })
                    .await?;
            }
            self.call_on(r, CHANGE_JS, vec![], false).await?;
            let value = self.facts(r).await?.value;
            if value.as_deref() == Some(text) || typing == Typing::Paste {
                return Ok(value);
            }
        }
        // Keystrokes: clear, then one key per character.
        self.call_on(r, SELECT_ALL_JS, vec![], false).await?;
        self.press_chord(&parse_chord("Backspace").expect("a known key"))
            .await?;
        for c in text.chars() {
            let chord = match c {
                // A line break is typed as Enter (`protocol::keys::text_presses_enter`).
                '\n' | '\r' => parse_chord("Enter"),
                '\t' => parse_chord("Tab"),
                _ => None,
            };
            match chord {
                Some(chord) => self.press_chord(&chord).await?,
                None => {
                    let def = KeyDef {
                        key: c.to_string(),
                        code: String::new(),
                        key_code: 0,
                        text: Some(c.to_string()),
                    };
                    self.key("keyDown", &def, 0, true).await?;
                    self.key("keyUp", &def, 0, false).await?;
                }
            }
        }
        self.call_on(r, CHANGE_JS, vec![], false).await?;
        Ok(self.facts(r).await?.value)
    }

    /// What a locator resolves to right now, for policy before anything is sent: its role and
    /// name, whether it is a secret field, and its observed structure when the observation
    /// listed it. `None` when it resolves to nothing (the action itself then says why).
    pub async fn locator_facts(
        &self,
        record: &crate::ObservationRecord,
        locator: &protocol::extended::Locator,
    ) -> Option<crate::LocatedFacts> {
        let r = self.locate_to_keep(record, locator).await.ok()?;
        let secret = self.is_secret_field(&r).await?;
        let structure = record
            .refs
            .values()
            .find(|b| {
                b.backend_node_id == r.backend_node_id
                    && self.live_session(&b.session).id() == r.session.id()
            })
            .map(|b| b.structure.clone());
        Some(crate::LocatedFacts {
            role: r.role.clone(),
            name: r.name.clone(),
            secret,
            structure,
        })
    }

    /// Whether a resolved element is a secret field (password, card, one-time code, token), as
    /// `policy::classify_field` reads its attributes; `None` when they cannot be read.
    async fn is_secret_field(&self, r: &Resolved) -> Option<bool> {
        let attrs = self.call_on(r, ATTRS_JS, vec![], false).await.ok()?;
        let get = |k: &str| attrs.get(k).and_then(Value::as_str);
        let facts = policy::FieldFacts {
            tag: get("tag"),
            input_type: get("type"),
            autocomplete: get("autocomplete"),
            name: get("name"),
            id: get("id"),
            aria_label: get("aria_label"),
            label: Some(r.name.as_str()),
            placeholder: get("placeholder"),
            role: Some(r.role.as_str()),
        };
        Some(policy::classify_field(&facts).is_secret())
    }

    /// Text typed into a secret field is scrubbed from every later observation of this tab.
    pub(super) async fn register_secret_if_needed(&self, r: &Resolved, text: &str) {
        if self.is_secret_field(r).await == Some(true) {
            // Shorter than the registry's minimum cannot be scrubbed safely from text; the field's
            // own value is redacted by its classification anyway.
            let _ = lock(&self.state).secrets.add(text);
        }
    }

    /// Presses one key and keeps it down (tracked until `key_up` or `release_input`). Fails,
    /// sending nothing, when the key is held already.
    pub(super) async fn key_down(&self, def: &KeyDef) -> Result<(), BrowserError> {
        let modifiers = {
            let held = lock(&self.state).held.modifiers();
            if lock(&self.state).held.holds_key(def) {
                return Err(BrowserError::NotActionable {
                    reason: format!(
                        "{} is held down already; release it with key_up first",
                        def.key
                    ),
                });
            }
            held | modifier_bit(def).unwrap_or(0)
        };
        // A printable key types its character once (no auto-repeat); modifiers and named keys type nothing.
        let types = def.text.is_some()
            && modifiers & (crate::keys::CONTROL | crate::keys::ALT | crate::keys::META) == 0;
        lock(&self.state).held.keys.push(def.clone());
        let sent = self
            .input(DispatchKeyEvent {
                event_type: if types { "keyDown" } else { "rawKeyDown" }.into(),
                modifiers: Some(modifiers),
                text: if types { def.text.clone() } else { None },
                unmodified_text: if types { def.text.clone() } else { None },
                key: Some(def.key.clone()),
                code: Some(def.code.clone()),
                windows_virtual_key_code: Some(def.key_code),
                ..Default::default()
            })
            .await;
        if sent.is_err() {
            lock(&self.state).held.keys.retain(|k| k != def);
        }
        sent
    }

    /// Releases one key held by `key_down`. Fails, sending nothing, when it is not held.
    pub(super) async fn key_up(&self, def: &KeyDef) -> Result<(), BrowserError> {
        let modifiers = {
            let mut state = lock(&self.state);
            let Some(at) = state
                .held
                .keys
                .iter()
                .position(|k| k.key == def.key && k.code == def.code)
            else {
                return Err(BrowserError::NotActionable {
                    reason: format!("{} is not held down (key_down it first)", def.key),
                });
            };
            state.held.keys.remove(at);
            state.held.modifiers()
        };
        self.send_key_up(def, modifiers).await
    }

    async fn send_key_up(&self, def: &KeyDef, modifiers: i64) -> Result<(), BrowserError> {
        self.input(DispatchKeyEvent {
            event_type: "keyUp".into(),
            modifiers: Some(modifiers),
            key: Some(def.key.clone()),
            code: Some(def.code.clone()),
            windows_virtual_key_code: Some(def.key_code),
            ..Default::default()
        })
        .await
    }

    /// Presses the modifier keys a pointer action holds (`modifiers: ["Shift"]`) that are not
    /// held already; returns them (to release with [`Tab::modifiers_up`]) and the full bitmask.
    pub(super) async fn modifiers_down(
        &self,
        modifiers: &protocol::extended::Modifiers,
    ) -> Result<(Vec<KeyDef>, i64), BrowserError> {
        let mut bits = lock(&self.state).held.modifiers();
        let mut pressed = Vec::new();
        for m in modifiers.iter() {
            let name = match m {
                protocol::extended::Modifier::Alt => "Alt",
                protocol::extended::Modifier::Control => "Control",
                protocol::extended::Modifier::Meta => "Meta",
                protocol::extended::Modifier::Shift => "Shift",
            };
            let def = single_key(name)?;
            let bit = modifier_bit(&def).unwrap_or(0);
            if bits & bit != 0 {
                continue;
            }
            bits |= bit;
            self.input(DispatchKeyEvent {
                event_type: "rawKeyDown".into(),
                modifiers: Some(bits),
                key: Some(def.key.clone()),
                code: Some(def.code.clone()),
                windows_virtual_key_code: Some(def.key_code),
                ..Default::default()
            })
            .await?;
            pressed.push(def);
        }
        Ok((pressed, bits))
    }

    /// Releases modifiers pressed by [`Tab::modifiers_down`], last first.
    pub(super) async fn modifiers_up(
        &self,
        pressed: &[KeyDef],
        mut bits: i64,
    ) -> Result<(), BrowserError> {
        for def in pressed.iter().rev() {
            bits &= !modifier_bit(def).unwrap_or(0);
            self.send_key_up(def, bits).await?;
        }
        Ok(())
    }

    /// Releases every key and mouse button still held on this tab (`key_down` without
    /// `key_up`, a drag cut short): the runtime calls it when a run ends or is cancelled.
    /// Sends `keyUp` for each held key (last pressed first) and `mouseReleased` for each held
    /// button, where it was pressed. Idempotent; on a lost tab it only forgets them. File-chooser
    /// interception that a cancelled upload left on is turned off too.
    pub async fn release_input(&self) -> Result<(), BrowserError> {
        // Never interleaved with an action: a cancelled action has dropped the barrier already.
        let _write = tokio::time::timeout(RELEASE_WAIT, self.barrier.write())
            .await
            .map_err(|_| BrowserError::Timeout {
                what: "waiting for the tab's write barrier to release input".into(),
                after_ms: RELEASE_WAIT.as_millis() as u64,
            })?;
        self.stop_intercepting_choosers().await;
        let (keys, buttons) = {
            let mut state = lock(&self.state);
            (
                std::mem::take(&mut state.held.keys),
                std::mem::take(&mut state.held.buttons),
            )
        };
        if self.check_alive().is_err() || lock(&self.state).dialog.is_some() {
            // A dialog blocks input; the renderer drops held state when the page goes anyway.
            return Ok(());
        }
        let mut bits = keys
            .iter()
            .filter_map(modifier_bit)
            .fold(0, |b, bit| b | bit);
        let mut mask = buttons
            .iter()
            .map(|(b, _, _)| button_bit(b))
            .fold(0, |m, bit| m | bit);
        let mut first_error = None;
        for (button, x, y) in buttons.iter().rev() {
            mask &= !button_bit(button);
            let released = self
                .input(DispatchMouseEvent {
                    event_type: "mouseReleased".into(),
                    x: *x,
                    y: *y,
                    modifiers: Some(bits),
                    button: Some((*button).into()),
                    buttons: Some(mask),
                    click_count: Some(1),
                    ..Default::default()
                })
                .await;
            first_error = first_error.or(released.err());
        }
        for def in keys.iter().rev() {
            bits &= !modifier_bit(def).unwrap_or(0);
            first_error = first_error.or(self.send_key_up(def, bits).await.err());
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Keys held down on this tab right now (`key_down` without `key_up`), by key name.
    pub fn held_keys(&self) -> Vec<String> {
        lock(&self.state)
            .held
            .keys
            .iter()
            .map(|k| k.key.clone())
            .collect()
    }
}

const SELECT_ALL_JS: &str = "function () { if (typeof this.select === 'function') { this.select(); return; } \
    if (this.isContentEditable) { const r = document.createRange(); r.selectNodeContents(this); const s = getSelection(); s.removeAllRanges(); s.addRange(r); } }";
const CHANGE_JS: &str = "function () { if (!this.isContentEditable) this.dispatchEvent(new Event('change', { bubbles: true })); }";
const SET_VALUE_JS: &str = "function (v) { this.value = v; this.dispatchEvent(new Event('input', { bubbles: true })); this.dispatchEvent(new Event('change', { bubbles: true })); }";
const ATTRS_JS: &str = "function () { const a = (n) => this.getAttribute ? this.getAttribute(n) : null; \
    return { tag: (this.tagName || '').toLowerCase(), type: a('type'), autocomplete: a('autocomplete'), name: a('name'), id: a('id'), aria_label: a('aria-label'), placeholder: a('placeholder') }; }";
