//! The snapshot text format every surface writes and every transport reads: one line per node,
//! `role "name"`, one bracket with the ref (`eN`) first and then the states, ` -> ` a link's
//! target, `: ` a value (quoted) or the node's own text; a line that is a quoted string is text.
//! [`quote`] writes a string in it and [`snapshot_text`] reads the text back out, kept side by
//! side so one module knows the format; [`observation_text`] is an observation as a model reads it.

/// A string as the format quotes it: escapes keep one node per line.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            // One node per line: a value's line breaks are written as escapes, so a field's
            // text can never look like the next node (the value stays exact).
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The page's own text in a snapshot, one entry per piece — quoted text lines, names and values
/// unescaped, and a node's inline text — without the format's syntax (indentation, roles, the
/// ref and state bracket, link targets). The inverse of the writer above, kept beside it so one
/// module knows the format; used to check text on a page without matching `button` or `[e1]`.
pub fn snapshot_text(snapshot: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in snapshot.lines() {
        let line = line.trim_start_matches(' ');
        if line.starts_with('"') {
            if let Some((text, _)) = unquote(line) {
                out.push(text);
            }
            continue;
        }
        // `role`, then an optional quoted name, bracket, link target and `: ` tail.
        let role_end = line
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(line.len());
        let mut rest = &line[role_end..];
        if let Some(quoted) = rest.strip_prefix(' ').filter(|r| r.starts_with('"'))
            && let Some((name, after)) = unquote(quoted)
        {
            out.push(name);
            rest = after;
        }
        if let Some(bracket) = rest.strip_prefix(" [")
            && let Some(end) = bracket.find(']')
        {
            rest = &bracket[end + 1..];
        }
        if let Some(link) = rest.strip_prefix(" -> ") {
            rest = link.find(": ").map_or("", |i| &link[i..]);
        }
        if let Some(tail) = rest.strip_prefix(": ") {
            match unquote(tail) {
                Some((value, "")) => out.push(value),
                _ => out.push(tail.to_owned()),
            }
        }
    }
    out
}

/// A quoted string at the start of `text` (as `quote` writes it), unescaped, and what follows.
fn unquote(text: &str) -> Option<(String, &str)> {
    let body = text.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &body[i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'u' => {
                    let hex: String = chars
                        .by_ref()
                        .map(|(_, c)| c)
                        .skip(1)
                        .take_while(|c| *c != '}')
                        .collect();
                    out.push(
                        u32::from_str_radix(&hex, 16)
                            .ok()
                            .and_then(char::from_u32)?,
                    );
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

/// A state as the format allows it: letters, digits and `=-_`, nothing that could end the
/// bracket or the line.
pub fn is_state_token(state: &str) -> bool {
    !state.is_empty()
        && state
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'=' | b'-' | b'_'))
}

/// The page-derived part of an observation as the model reads it: URL, title, the snapshot (refs
/// inline), then only what the snapshot does not already say — interactive elements it left out
/// to fit its budget, and console errors. The runtime's own facts (frame id, viewport, what was
/// cut) travel in the trusted header; the full `Observation` stays the host API's shape.
pub fn observation_text(o: &protocol::Observation) -> String {
    model_text(o, false)
}

/// [`observation_text`], with the snapshot written as its changes against the action's base
/// observation when the observation carries them (`Observation::snapshot_diff`): the text's
/// snapshot part then begins `changes since frame_…`, and interactive elements the snapshot
/// left out are not listed again. For a transport whose model read the base (an `act` result).
pub fn observation_text_or_changes(o: &protocol::Observation) -> String {
    model_text(o, true)
}

fn model_text(o: &protocol::Observation, changes: bool) -> String {
    let diff = o.snapshot_diff().filter(|_| changes);
    let snapshot = diff.map_or(o.aria_snapshot(), |d| d.text());
    let mut out = String::with_capacity(snapshot.len() + 128);
    // First line: the URL and the quoted title (both are page-controlled, so inside the markers).
    out.push_str(o.url());
    if !o.title().is_empty() {
        out.push(' ');
        out.push_str(&serde_json::Value::String(o.title().to_owned()).to_string());
    }
    out.push('\n');
    out.push_str(snapshot);
    let left_out: Vec<_> = o
        .interactive_elements()
        .iter()
        .filter(|e| !e.in_snapshot() && diff.is_none())
        .collect();
    if !left_out.is_empty() {
        out.push_str("interactive elements outside the text above:\n");
        for e in left_out {
            out.push_str(&format!(
                "{} {:?} [{}",
                e.role(),
                e.name(),
                e.element().as_str()
            ));
            // States are tokens; anything else is not written into the line.
            for state in e.states().iter().filter(|s| is_state_token(s)) {
                out.push(' ');
                out.push_str(state);
            }
            out.push(']');
            if let Some(value) = e.value().filter(|v| !v.is_empty()) {
                out.push_str(&format!(": {value:?}"));
            }
            out.push('\n');
        }
    }
    if !o.console_errors().is_empty() {
        out.push_str("console errors:\n");
        for c in o.console_errors() {
            out.push_str(&serde_json::Value::String(c.clone()).to_string());
            out.push('\n');
        }
    }
    if out.ends_with('\n') {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_text_reads_back_the_page_text_and_none_of_the_syntax() {
        let text = format!(
            "main\n heading {} [level=1]\n {}\n button \"Save\" [e1]\n textbox \"Bio\" [e2 focused]: {}\n link \"Help\" [e3] -> /help\n paragraph: see the [e6] notes\n",
            quote("Sign \"in\""),
            quote("two\nlines\u{7}"),
            quote("a\\b")
        );
        let got = snapshot_text(&text);
        assert_eq!(
            got,
            [
                "Sign \"in\"",
                "two\nlines\u{7}",
                "Save",
                "Bio",
                "a\\b",
                "Help",
                "see the [e6] notes"
            ]
        );
        assert!(
            !got.iter()
                .any(|t| t.contains("button") || t.contains("[e1]") || t.contains("/help"))
        );
    }

    #[test]
    fn quoted_text_cannot_break_the_line_structure() {
        assert_eq!(
            quote("a\"b\\c\nd\re\tf\u{7}"),
            "\"a\\\"b\\\\c\\nd\\re\\tf\\u{7}\""
        );
    }
}
