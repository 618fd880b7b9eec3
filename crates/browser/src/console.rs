//! The last console errors of a tab: a bounded ring filled from Runtime and Log events.

use std::collections::VecDeque;

use protocol::limits::{CONSOLE_ERROR_MAX_CHARS, CONSOLE_ERRORS_MAX};

/// Errors newest-last, at most [`CONSOLE_ERRORS_MAX`]; `dropped` counts what fell off the front.
#[derive(Debug, Default, Clone)]
pub(crate) struct ConsoleLog {
    entries: VecDeque<String>,
    dropped: u64,
}

impl ConsoleLog {
    pub(crate) fn push(&mut self, text: &str) {
        // Keep a little more than the limit per entry so the protocol's own cut sets the flag.
        let cut: String = text.chars().take(CONSOLE_ERROR_MAX_CHARS + 1).collect();
        if self.entries.len() == CONSOLE_ERRORS_MAX {
            self.entries.pop_front();
            self.dropped += 1;
        }
        self.entries.push_back(cut);
    }

    /// The entries and whether older ones were dropped.
    pub(crate) fn snapshot(&self) -> (Vec<String>, bool) {
        (self.entries.iter().cloned().collect(), self.dropped > 0)
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.dropped = 0;
    }
}
