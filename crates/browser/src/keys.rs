//! Key names and chords (`Enter`, `Control+A`, `Shift+Tab`) to CDP key events.

/// One key as CDP wants it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyDef {
    pub(crate) key: String,
    pub(crate) code: String,
    pub(crate) key_code: i64,
    /// The text the key types, when it types one.
    pub(crate) text: Option<String>,
}

/// Modifier bits of `Input.dispatchKeyEvent`.
pub(crate) const ALT: i64 = 1;
pub(crate) const CONTROL: i64 = 2;
pub(crate) const META: i64 = 4;
pub(crate) const SHIFT: i64 = 8;

/// A parsed chord: modifiers (in press order) and the main key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chord {
    pub(crate) modifiers: Vec<(i64, KeyDef)>,
    pub(crate) key: KeyDef,
}

fn named(name: &str) -> Option<KeyDef> {
    // The name and its aliases are normalised in one place, which the runtime's judge reads too.
    let key = protocol::keys::canonical(name)?;
    let (code, key_code, text): (&str, i64, Option<&str>) = match key {
        "Enter" => ("Enter", 13, Some("\r")),
        "Tab" => ("Tab", 9, None),
        "Escape" => ("Escape", 27, None),
        "Backspace" => ("Backspace", 8, None),
        "Delete" => ("Delete", 46, None),
        "Insert" => ("Insert", 45, None),
        " " => ("Space", 32, Some(" ")),
        "ArrowUp" => ("ArrowUp", 38, None),
        "ArrowDown" => ("ArrowDown", 40, None),
        "ArrowLeft" => ("ArrowLeft", 37, None),
        "ArrowRight" => ("ArrowRight", 39, None),
        "Home" => ("Home", 36, None),
        "End" => ("End", 35, None),
        "PageUp" => ("PageUp", 33, None),
        "PageDown" => ("PageDown", 34, None),
        "Shift" => ("ShiftLeft", 16, None),
        "Control" => ("ControlLeft", 17, None),
        "Alt" => ("AltLeft", 18, None),
        "Meta" => ("MetaLeft", 91, None),
        function => {
            let n: i64 = function.strip_prefix('F')?.parse().ok()?;
            (function, 111 + n, None)
        }
    };
    Some(KeyDef {
        key: key.into(),
        code: code.into(),
        key_code,
        text: text.map(Into::into),
    })
}

fn character(c: char, shift: bool) -> KeyDef {
    let (code, key_code) = if c.is_ascii_alphabetic() {
        (
            format!("Key{}", c.to_ascii_uppercase()),
            i64::from(c.to_ascii_uppercase() as u8),
        )
    } else if c.is_ascii_digit() {
        (format!("Digit{c}"), i64::from(c as u8))
    } else {
        let code = match c {
            '-' => "Minus",
            '=' => "Equal",
            ',' => "Comma",
            '.' => "Period",
            '/' => "Slash",
            ';' => "Semicolon",
            '\'' => "Quote",
            '[' => "BracketLeft",
            ']' => "BracketRight",
            '\\' => "Backslash",
            '`' => "Backquote",
            _ => "",
        };
        (code.to_owned(), 0)
    };
    let typed = if shift && c.is_ascii_alphabetic() {
        c.to_ascii_uppercase()
    } else {
        c
    };
    KeyDef {
        key: typed.to_string(),
        code,
        key_code,
        text: Some(typed.to_string()),
    }
}

pub(crate) fn modifier_bit(key: &KeyDef) -> Option<i64> {
    match key.key.as_str() {
        "Alt" => Some(ALT),
        "Control" => Some(CONTROL),
        "Meta" => Some(META),
        "Shift" => Some(SHIFT),
        _ => None,
    }
}

/// Parses `Enter`, `a`, `Control+A`, `Shift+Tab`, `Control++`. `None` for an unknown key name.
pub(crate) fn parse_chord(chord: &str) -> Option<Chord> {
    let mut parts: Vec<&str> = chord.split('+').collect();
    // "Control++" splits into ["Control", "", ""]: the key is "+".
    if chord.ends_with("++") || chord == "+" {
        parts.retain(|p| !p.is_empty());
        parts.push("+");
    }
    let (last, modifiers) = parts.split_last()?;
    let mut mods = Vec::new();
    let mut bits = 0;
    for m in modifiers {
        let def = named(m.trim())?;
        let bit = modifier_bit(&def)?;
        bits |= bit;
        mods.push((bit, def));
    }
    let last = last.trim_matches(|c: char| c == ' ' && last.len() > 1);
    let key = match named(last) {
        Some(def) => def,
        None => {
            let mut chars = last.chars();
            let c = chars.next()?;
            if chars.next().is_some() {
                return None;
            }
            character(c, bits & SHIFT != 0)
        }
    };
    Some(Chord {
        modifiers: mods,
        key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chords_parse() {
        let c = parse_chord("Control+A").unwrap();
        assert_eq!(c.modifiers.len(), 1);
        assert_eq!(c.key.code, "KeyA");
        assert_eq!(
            parse_chord("Enter").unwrap().key.text.as_deref(),
            Some("\r")
        );
        assert_eq!(parse_chord("Shift+Tab").unwrap().key.key, "Tab");
        assert_eq!(parse_chord("Control++").unwrap().key.key, "+");
        assert_eq!(parse_chord("F5").unwrap().key.key_code, 116);
        assert_eq!(parse_chord("Shift+a").unwrap().key.key, "A");
        assert!(parse_chord("Hyper+Q").is_none());
        assert!(parse_chord("NoSuchKey").is_none());
    }
}
