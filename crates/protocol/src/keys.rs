//! Key names, normalised once: the aliases a key may be sent by (`Return`, `enter`, `esc`), and
//! which actions press Enter. The browser's key parser and the runtime's judge both read them
//! here, so what the judge calls "Enter" is exactly what the surface sends as Enter.

use crate::ExtendedAction;

const FUNCTION_KEYS: [&str; 12] = [
    "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12",
];

/// The DOM key a key name means, case-insensitively, with its aliases (`return` → `Enter`,
/// `esc` → `Escape`, `cmd` → `Meta`, `f5` → `F5`); `None` for a single character or a name
/// that is no key.
pub fn canonical(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    Some(match lower.as_str() {
        "enter" | "return" => "Enter",
        "tab" => "Tab",
        "escape" | "esc" => "Escape",
        "backspace" => "Backspace",
        "delete" | "del" => "Delete",
        "insert" => "Insert",
        "space" | "spacebar" => " ",
        "arrowup" | "up" => "ArrowUp",
        "arrowdown" | "down" => "ArrowDown",
        "arrowleft" | "left" => "ArrowLeft",
        "arrowright" | "right" => "ArrowRight",
        "home" => "Home",
        "end" => "End",
        "pageup" => "PageUp",
        "pagedown" => "PageDown",
        "shift" => "Shift",
        "control" | "ctrl" => "Control",
        "alt" | "option" => "Alt",
        "meta" | "cmd" | "command" | "super" => "Meta",
        other => {
            let n: usize = other.strip_prefix('f')?.parse().ok()?;
            return FUNCTION_KEYS.get(n.checked_sub(1)?).copied();
        }
    })
}

/// Whether typing `text` presses Enter: a line break (`\n` or `\r`) is typed as Enter.
pub fn text_presses_enter(text: &str) -> bool {
    text.contains(['\n', '\r'])
}

/// Whether a chord (`Enter`, `Shift+Return`) presses Enter.
pub fn chord_presses_enter(chord: &str) -> bool {
    chord
        .split('+')
        .any(|k| canonical(k.trim()) == Some("Enter"))
}

impl ExtendedAction {
    /// Whether this action presses Enter — a `press` or `key_down` of Enter under any name,
    /// or typed text with a line break — which submits a form the way clicking its submitter
    /// does.
    pub fn presses_enter(&self) -> bool {
        match self {
            ExtendedAction::Press(p) => chord_presses_enter(p.key.as_str()),
            ExtendedAction::KeyDown(k) | ExtendedAction::KeyUp(k) => {
                canonical(k.key.as_str()) == Some("Enter")
            }
            ExtendedAction::Type(t) => text_presses_enter(t.text.as_str()),
            _ => false,
        }
    }

    /// Whether this action puts text into the page: typed text, a key that is a character
    /// (`press`/`key_down` of `a`, `Shift+A`, a space; a chord with Control or Meta may paste),
    /// or text answered to a `prompt()`. What the page holds from then on came from the agent,
    /// so the surface's network boundary keeps guarding it (design: data the agent typed stays
    /// where the person sent it).
    pub fn types_text(&self) -> bool {
        use crate::extended::DialogResponse;
        match self {
            ExtendedAction::Type(t) => !t.text.as_str().is_empty(),
            ExtendedAction::Press(p) => chord_types_text(p.key.as_str()),
            ExtendedAction::KeyDown(k) => chord_types_text(k.key.as_str()),
            ExtendedAction::Dialog(d) => matches!(
                &d.response,
                DialogResponse::Accept { prompt_text: Some(t) } if !t.as_str().is_empty()
            ),
            _ => false,
        }
    }
}

/// Whether a chord may put text into the page: one of its keys is a character (or a space), or
/// it holds Control or Meta (a paste, or a shortcut that inserts).
fn chord_types_text(chord: &str) -> bool {
    chord.split('+').map(str::trim).any(|k| match canonical(k) {
        None => !k.is_empty(),
        Some(named) => matches!(named, " " | "Control" | "Meta"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_and_cases_name_one_key() {
        for name in ["Enter", "enter", "RETURN", "Return"] {
            assert_eq!(canonical(name), Some("Enter"), "{name}");
        }
        assert_eq!(canonical("f12"), Some("F12"));
        assert_eq!(canonical("F13"), None);
        assert_eq!(canonical("f0"), None);
        assert_eq!(canonical("a"), None);
        assert!(chord_presses_enter("Shift+return"));
        assert!(!chord_presses_enter("Shift+Tab"));
        assert!(
            text_presses_enter("ada\r")
                && text_presses_enter("ada\n")
                && !text_presses_enter("ada")
        );
    }

    #[test]
    fn characters_and_pastes_type_text_named_keys_do_not() {
        for chord in ["a", "Shift+A", "space", "Control+v", "Meta+V", "é"] {
            assert!(chord_types_text(chord), "{chord}");
        }
        for chord in ["Enter", "Tab", "Shift+Tab", "ArrowDown", "Escape", "F5"] {
            assert!(!chord_types_text(chord), "{chord}");
        }
    }
}
