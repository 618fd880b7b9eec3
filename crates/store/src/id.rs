//! Id newtypes for the store's records. They carry no validation: callers (the runtime,
//! `protocol`) check shapes; the store records the strings it is given.

use std::fmt;

macro_rules! text_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            /// Wraps a string as this id.
            pub fn new(value: impl Into<String>) -> Self {
                Self(value.into())
            }

            /// The id as a string slice.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self(value.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self(value)
            }
        }
    };
}

macro_rules! number_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u64);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
    };
}

text_id!(
    /// A runtime session (one agent/chat session across many turns).
    SessionId
);
text_id!(
    /// A resource record (a tab descriptor), stable across process restarts.
    ResourceId
);
text_id!(
    /// A live handle: the CDP target id a process saw. Meaningless after that process ends.
    TargetId
);
text_id!(
    /// One chat turn; marks are scoped to one.
    TurnId
);
text_id!(
    /// One agent run.
    RunId
);

number_id!(
    /// One process start against the store; later starts have greater ids.
    InstanceId
);
number_id!(
    /// One recovery record.
    RecoveryId
);
number_id!(
    /// One audit entry's position; later entries have greater sequence numbers.
    /// `AuditSeq(0)` precedes every entry.
    AuditSeq
);
