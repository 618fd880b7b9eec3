//! Sensitivity of form fields from the facts the browser adapter reads off an element, and
//! the value an observation may show for one. Page content can only raise a field to
//! secret, never lower one (design invariant 1): no fact makes a `type=password` field
//! public. Text the runtime itself typed as a secret is redacted by
//! [`crate::SecretRegistry`], whatever this classification says.
//!
//! Rules, first match wins:
//! 1. `autocomplete` tokens: `cc-*` → credit card, `one-time-code` → one-time code,
//!    `current-password` / `new-password` → password.
//! 2. `type=password` → secret; the kind comes from the names below if they name one
//!    (`name=cvv` → credit card), else password.
//! 3. Controls that carry no typed text (checkbox, radio, button, submit, reset, image,
//!    range, color, file; `<button>`; roles button, link, checkbox, radio, switch, tab,
//!    menuitem) → public.
//! 4. Words of `name` and `id`, then of `aria_label`, `label` and `placeholder`, against
//!    the phrase tables below (whole words split at `_`, `-`, camelCase and digits), kinds tried in the order
//!    credit card, one-time code, password, token. Some non-Latin labels are matched as
//!    substrings (`密码`, `验证码`, `パスワード`, `비밀번호`, …).
//!
//! Deliberately public: `monkey`, `keyboard`, `author`, `passport`, `bypass`,
//! `tokenizer_settings`, `max_tokens`, `cc` (an e-mail copy field), `username`, `email`.

use serde::{Deserialize, Serialize};

use crate::REDACTED;
use crate::words::{contains_phrase, words};

/// What kind of secret a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretKind {
    /// A password, passphrase or PIN (current or new).
    Password,
    /// A card number, security code, expiry or other `cc-*` field.
    CreditCard,
    /// A one-time or second-factor code.
    OneTimeCode,
    /// An API key, access token, session id, client secret or similar credential.
    Token,
}

/// Whether a field's value may be shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sensitivity {
    /// The value may appear in observations.
    Public,
    /// The value is replaced by [`REDACTED`] everywhere it would leave the runtime.
    Secret(SecretKind),
}

impl Sensitivity {
    /// Whether this is [`Sensitivity::Secret`].
    pub fn is_secret(self) -> bool {
        matches!(self, Self::Secret(_))
    }
}

/// What the adapter knows about a form control. All optional; absent facts are unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FieldFacts<'a> {
    /// Element tag name (`input`, `textarea`, `select`, `div`, …), any case.
    pub tag: Option<&'a str>,
    /// The `type` attribute of an `<input>`.
    pub input_type: Option<&'a str>,
    /// The `autocomplete` attribute (space-separated tokens).
    pub autocomplete: Option<&'a str>,
    /// The `name` attribute.
    pub name: Option<&'a str>,
    /// The `id` attribute.
    pub id: Option<&'a str>,
    /// The accessible name from `aria-label`.
    pub aria_label: Option<&'a str>,
    /// The text of an associated `<label>`.
    pub label: Option<&'a str>,
    /// The `placeholder` attribute.
    pub placeholder: Option<&'a str>,
    /// The ARIA role (explicit or computed).
    pub role: Option<&'a str>,
}

const CREDIT_CARD: &[&[&str]] = &[
    &["card", "number"],
    &["cardnumber"],
    &["card", "num"],
    &["cc", "number"],
    &["ccnumber"],
    &["cc", "num"],
    &["ccnum"],
    &["cc", "csc"],
    &["cc", "exp"],
    &["cc", "expiry"],
    &["card", "exp"],
    &["card", "expiry"],
    &["card", "verification"],
    &["credit", "card"],
    &["creditcard"],
    &["security", "code"],
    &["cvc"],
    &["cvv"],
    &["cvn"],
    &["csc"],
];

const ONE_TIME_CODE: &[&[&str]] = &[
    &["one", "time", "code"],
    &["one", "time", "password"],
    &["onetimecode"],
    &["otp"],
    &["totp"],
    &["hotp"],
    &["2", "fa"],
    &["mfa"],
    &["two", "factor"],
    &["twofactor"],
    &["verification", "code"],
    &["sms", "code"],
    &["passcode"],
];

const PASSWORD: &[&[&str]] = &[
    &["password"],
    &["passwords"],
    &["passwd"],
    &["pwd"],
    &["pass"],
    &["passphrase"],
    &["pin"],
    &["passwort"],
    &["kennwort"],
    &["contraseña"],
    &["contrasena"],
    &["mot", "de", "passe"],
    &["senha"],
    &["wachtwoord"],
    &["пароль"],
];

pub(crate) const TOKEN: &[&[&str]] = &[
    &["token"],
    &["api", "key"],
    &["api", "keys"],
    &["apikey"],
    &["secret"],
    &["secrets"],
    &["access", "key"],
    &["accesskey"],
    &["private", "key"],
    &["privatekey"],
    &["session"],
    &["sessionid"],
    &["auth"],
    &["authorization"],
    &["bearer"],
    &["credential"],
    &["credentials"],
    &["csrf"],
    &["xsrf"],
    &["csrfmiddlewaretoken"],
    &["jwt"],
];

/// Scripts without spaces between words: matched as substrings of labels.
const SUBSTRINGS: &[(&str, SecretKind)] = &[
    ("密码", SecretKind::Password),
    ("密碼", SecretKind::Password),
    ("口令", SecretKind::Password),
    ("パスワード", SecretKind::Password),
    ("暗証番号", SecretKind::Password),
    ("비밀번호", SecretKind::Password),
    ("验证码", SecretKind::OneTimeCode),
    ("驗證碼", SecretKind::OneTimeCode),
    ("認証コード", SecretKind::OneTimeCode),
    ("인증번호", SecretKind::OneTimeCode),
    ("卡号", SecretKind::CreditCard),
    ("卡號", SecretKind::CreditCard),
    ("安全码", SecretKind::CreditCard),
    ("カード番号", SecretKind::CreditCard),
];

const KIND_TABLES: &[(SecretKind, &[&[&str]])] = &[
    (SecretKind::CreditCard, CREDIT_CARD),
    (SecretKind::OneTimeCode, ONE_TIME_CODE),
    (SecretKind::Password, PASSWORD),
    (SecretKind::Token, TOKEN),
];

/// Classifies a form field. See the module docs for the rules.
pub fn classify_field(facts: &FieldFacts<'_>) -> Sensitivity {
    let from_autocomplete = facts.autocomplete.and_then(autocomplete_kind);
    let from_words = || {
        kind_from_texts(&[facts.name, facts.id])
            .or_else(|| kind_from_texts(&[facts.aria_label, facts.label, facts.placeholder]))
    };
    if let Some(kind) = from_autocomplete {
        return Sensitivity::Secret(kind);
    }
    if is(facts.input_type, "password") {
        return Sensitivity::Secret(from_words().unwrap_or(SecretKind::Password));
    }
    if carries_no_text(facts) {
        return Sensitivity::Public;
    }
    from_words().map_or(Sensitivity::Public, Sensitivity::Secret)
}

/// Classifies what a page's `prompt()` asks for by its message, as a field is by its label: a
/// prompt for a password, a code or a card number is a secret field.
pub fn classify_prompt(message: &str) -> Sensitivity {
    kind_from_texts(&[Some(message)]).map_or(Sensitivity::Public, Sensitivity::Secret)
}

/// The value an observation may show for a field: [`REDACTED`] for a secret with a value,
/// the exact value (whitespace included) otherwise. An empty secret field stays empty so an
/// agent can see it still needs filling; emptiness is not a secret.
pub fn redact_value_for_field(value: &str, sensitivity: Sensitivity) -> String {
    match sensitivity {
        Sensitivity::Secret(_) if !value.is_empty() => REDACTED.to_owned(),
        _ => value.to_owned(),
    }
}

fn is(fact: Option<&str>, expected: &str) -> bool {
    fact.is_some_and(|f| f.trim().eq_ignore_ascii_case(expected))
}

fn autocomplete_kind(autocomplete: &str) -> Option<SecretKind> {
    let tokens: Vec<String> = autocomplete
        .split_ascii_whitespace()
        .map(str::to_ascii_lowercase)
        .collect();
    if tokens.iter().any(|t| t.starts_with("cc-")) {
        Some(SecretKind::CreditCard)
    } else if tokens.iter().any(|t| t == "one-time-code") {
        Some(SecretKind::OneTimeCode)
    } else if tokens
        .iter()
        .any(|t| t == "current-password" || t == "new-password")
    {
        Some(SecretKind::Password)
    } else {
        None
    }
}

fn carries_no_text(facts: &FieldFacts<'_>) -> bool {
    const NO_TEXT_TYPES: &[&str] = &[
        "checkbox", "radio", "button", "submit", "reset", "image", "range", "color", "file",
    ];
    const NO_TEXT_ROLES: &[&str] = &[
        "button", "link", "checkbox", "radio", "switch", "tab", "menuitem",
    ];
    NO_TEXT_TYPES.iter().any(|t| is(facts.input_type, t))
        || is(facts.tag, "button")
        || NO_TEXT_ROLES.iter().any(|r| is(facts.role, r))
}

/// The first kind, in table order, any of `texts` names.
fn kind_from_texts(texts: &[Option<&str>]) -> Option<SecretKind> {
    let texts: Vec<&str> = texts.iter().flatten().copied().collect();
    if texts.is_empty() {
        return None;
    }
    let all_words: Vec<Vec<String>> = texts.iter().map(|t| words(t)).collect();
    for (kind, table) in KIND_TABLES {
        let named = all_words
            .iter()
            .any(|w| table.iter().any(|phrase| contains_phrase(w, phrase)));
        if named {
            return Some(*kind);
        }
    }
    SUBSTRINGS
        .iter()
        .find(|(needle, _)| texts.iter().any(|t| t.contains(needle)))
        .map(|(_, kind)| *kind)
}

/// Whether an identifier (header name, parameter name) names a credential.
pub(crate) fn names_credential(identifier: &str) -> bool {
    let w = words(identifier);
    [TOKEN, PASSWORD]
        .iter()
        .any(|table| table.iter().any(|phrase| contains_phrase(&w, phrase)))
}
