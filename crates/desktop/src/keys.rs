//! Keys as X names them: a chord in xdotool's syntax (`ctrl+shift+t`, `Return`, `super+F5`) or
//! a character, to keysyms. Key names go through `protocol::keys::canonical` first, so what the
//! runtime's judge calls Enter is what the display presses as Enter.

/// The keysym of a DOM key name (`Enter`, `ArrowUp`, `F5`, `Control`).
fn named(key: &str) -> Option<u32> {
    Some(match key {
        "Enter" => 0xff0d,
        "Tab" => 0xff09,
        "Escape" => 0xff1b,
        "Backspace" => 0xff08,
        "Delete" => 0xffff,
        "Insert" => 0xff63,
        " " => 0x20,
        "ArrowUp" => 0xff52,
        "ArrowDown" => 0xff54,
        "ArrowLeft" => 0xff51,
        "ArrowRight" => 0xff53,
        "Home" => 0xff50,
        "End" => 0xff57,
        "PageUp" => 0xff55,
        "PageDown" => 0xff56,
        "Shift" => 0xffe1,
        "Control" => 0xffe3,
        "Alt" => 0xffe9,
        "Meta" => 0xffeb,
        f if f.starts_with('F') => {
            let n: u32 = f[1..].parse().ok()?;
            if !(1..=12).contains(&n) {
                return None;
            }
            0xffbe + n - 1
        }
        _ => return None,
    })
}

/// The keysym that types `c`: Latin-1 by code point, a line break as Return, a tab as Tab,
/// anything else as a Unicode keysym (`0x0100_0000 + code point`).
pub fn char_keysym(c: char) -> u32 {
    match c {
        '\n' | '\r' => 0xff0d,
        '\t' => 0xff09,
        c if (' '..='~').contains(&c) || ('\u{a0}'..='\u{ff}').contains(&c) => c as u32,
        c => 0x0100_0000 + c as u32,
    }
}

/// Whether `keysym` is a modifier (Shift, Control, Alt, Meta).
pub fn is_modifier(keysym: u32) -> bool {
    matches!(keysym, 0xffe1 | 0xffe3 | 0xffe9 | 0xffeb)
}

/// One key of a chord as a keysym: a named key (with its aliases) or one character.
pub fn key_keysym(name: &str) -> Option<u32> {
    let name = name.trim();
    if let Some(canonical) = protocol::keys::canonical(name) {
        return named(canonical);
    }
    // xdotool's own spellings the DOM names lack.
    let lower = name.to_ascii_lowercase();
    let alias = match lower.as_str() {
        "super_l" | "super_r" | "win" => Some(0xffeb),
        "control_l" | "control_r" => Some(0xffe3),
        "shift_l" | "shift_r" => Some(0xffe1),
        "alt_l" | "alt_r" => Some(0xffe9),
        "kp_enter" => Some(0xff8d),
        "minus" => Some(u32::from(b'-')),
        "plus" => Some(u32::from(b'+')),
        "comma" => Some(u32::from(b',')),
        "period" => Some(u32::from(b'.')),
        "slash" => Some(u32::from(b'/')),
        _ => None,
    };
    if alias.is_some() {
        return alias;
    }
    let mut chars = name.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => Some(char_keysym(c)),
        _ => None,
    }
}

/// A chord (`ctrl+a`, `Shift+Return`, `+`) as keysyms, modifiers first; `None` when a part
/// names no key.
pub fn chord(text: &str) -> Option<Vec<u32>> {
    if text == "+" {
        return Some(vec![u32::from(b'+')]);
    }
    let mut keys = Vec::new();
    for part in text.split('+') {
        keys.push(key_keysym(part)?);
    }
    if keys.is_empty() {
        return None;
    }
    let (mods, rest): (Vec<u32>, Vec<u32>) = keys.into_iter().partition(|k| is_modifier(*k));
    Some(mods.into_iter().chain(rest).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chords_read_like_xdotool() {
        assert_eq!(chord("ctrl+a"), Some(vec![0xffe3, u32::from(b'a')]));
        assert_eq!(chord("Return"), Some(vec![0xff0d]));
        assert_eq!(chord("shift+Tab"), Some(vec![0xffe1, 0xff09]));
        assert_eq!(chord("super+F5"), Some(vec![0xffeb, 0xffc2]));
        assert_eq!(chord("+"), Some(vec![u32::from(b'+')]));
        assert_eq!(chord("ctrl+nosuchkey"), None);
        assert_eq!(chord("F13"), None);
    }

    #[test]
    fn characters_have_keysyms() {
        assert_eq!(char_keysym('a'), 0x61);
        assert_eq!(char_keysym('é'), 0xe9);
        assert_eq!(char_keysym('\n'), 0xff0d);
        assert_eq!(char_keysym('€'), 0x0100_20ac);
        assert_eq!(char_keysym('中'), 0x0100_4e2d);
    }
}
