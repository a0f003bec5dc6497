//! One Claude Code hook event, read from the JSON Claude Code writes on the
//! hook's stdin. Only the fields mcppol uses are read; the rest are ignored.

use serde_json::{Map, Value};

/// The most a hook reads from stdin. A `Write` of a large file carries the
/// whole file in `tool_input`, so this is generous; beyond it the event is
/// refused (exit status 2, which blocks a `PreToolUse`).
pub const MAX_INPUT_BYTES: usize = 16 << 20;

/// The longest `tool_name` accepted. Claude Code's own names are far
/// shorter; the bound keeps the splits of an `mcp__` name few.
pub const MAX_TOOL_NAME_BYTES: usize = 512;

/// The longest `session_id` and `cwd` accepted.
pub const MAX_FIELD_BYTES: usize = 4096;

/// The events the hook handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// Before a tool runs: the policy decides.
    PreToolUse,
    /// After a tool ran: its server's output is now in the context (taint).
    PostToolUse,
    /// After a tool ran and failed: its error text is in the context too.
    PostToolUseFailure,
    /// The session ended: its taint file is removed.
    SessionEnd,
}

impl EventKind {
    pub const ALL: [EventKind; 4] = [
        EventKind::PreToolUse,
        EventKind::PostToolUse,
        EventKind::PostToolUseFailure,
        EventKind::SessionEnd,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::PreToolUse => "PreToolUse",
            EventKind::PostToolUse => "PostToolUse",
            EventKind::PostToolUseFailure => "PostToolUseFailure",
            EventKind::SessionEnd => "SessionEnd",
        }
    }

    pub fn from_name(name: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// Why an input is not an event the hook can handle, before its kind is
/// known.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    #[error("the hook input is larger than {} MiB", MAX_INPUT_BYTES >> 20)]
    TooLarge,
    #[error("the hook input is not JSON: {0}")]
    NotJson(String),
    #[error("the hook input is not a JSON object")]
    NotObject,
    #[error("the hook input has no `hook_event_name`")]
    NoEventName,
    #[error(
        "`{0}` is not an event mcppol claude-hook handles (PreToolUse, PostToolUse, \
         PostToolUseFailure, SessionEnd); install it with the block that \
         `mcppol claude-hook --print-settings` prints"
    )]
    UnknownEvent(String),
}

/// An event whose kind is known; its other fields are checked when they
/// are needed, so that a missing one still ends in the event's own way of
/// refusing.
#[derive(Debug, Clone)]
pub struct Event {
    pub kind: EventKind,
    fields: Map<String, Value>,
}

impl Event {
    /// Parses the bytes read from stdin.
    pub fn parse(input: &[u8]) -> Result<Event, InputError> {
        if input.len() > MAX_INPUT_BYTES {
            return Err(InputError::TooLarge);
        }
        let value: Value =
            serde_json::from_slice(input).map_err(|e| InputError::NotJson(e.to_string()))?;
        let Value::Object(fields) = value else {
            return Err(InputError::NotObject);
        };
        let name = match fields.get("hook_event_name") {
            Some(Value::String(s)) => s.as_str(),
            _ => return Err(InputError::NoEventName),
        };
        let kind = EventKind::from_name(name).ok_or_else(|| {
            let shown: String = name.chars().take(64).collect();
            InputError::UnknownEvent(shown.escape_debug().to_string())
        })?;
        Ok(Event { kind, fields })
    }

    /// A string field that must be there, non-empty and at most `max`
    /// bytes.
    pub fn string(&self, key: &str, max: usize) -> Result<&str, String> {
        match self.fields.get(key) {
            Some(Value::String(s)) if s.is_empty() => Err(format!(
                "the {} event's `{key}` is empty",
                self.kind.as_str()
            )),
            Some(Value::String(s)) if s.len() > max => Err(format!(
                "the {} event's `{key}` is longer than {max} bytes",
                self.kind.as_str()
            )),
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(format!(
                "the {} event's `{key}` is not a string",
                self.kind.as_str()
            )),
            None => Err(format!("the {} event has no `{key}`", self.kind.as_str())),
        }
    }

    pub fn session_id(&self) -> Result<&str, String> {
        self.string("session_id", MAX_FIELD_BYTES)
    }

    pub fn tool_name(&self) -> Result<&str, String> {
        self.string("tool_name", MAX_TOOL_NAME_BYTES)
    }

    pub fn cwd(&self) -> Result<&str, String> {
        self.string("cwd", MAX_FIELD_BYTES)
    }

    /// `tool_input`, which must be a JSON object.
    pub fn tool_input(&self) -> Result<&Value, String> {
        match self.fields.get("tool_input") {
            Some(v @ Value::Object(_)) => Ok(v),
            Some(_) => Err(format!(
                "the {} event's `tool_input` is not a JSON object",
                self.kind.as_str()
            )),
            None => Err(format!(
                "the {} event has no `tool_input`",
                self.kind.as_str()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_refusals() {
        let e = Event::parse(br#"{"hook_event_name": "SessionEnd", "session_id": "s"}"#).unwrap();
        assert_eq!(e.kind, EventKind::SessionEnd);
        assert_eq!(e.session_id(), Ok("s"));
        assert!(e.tool_name().unwrap_err().contains("has no `tool_name`"));
        assert!(matches!(Event::parse(b"{"), Err(InputError::NotJson(_))));
        assert_eq!(Event::parse(b"[1]").unwrap_err(), InputError::NotObject);
        assert_eq!(Event::parse(b"{}").unwrap_err(), InputError::NoEventName);
        assert!(matches!(
            Event::parse(br#"{"hook_event_name": "Stop"}"#),
            Err(InputError::UnknownEvent(n)) if n == "Stop"
        ));
        let big = vec![b' '; MAX_INPUT_BYTES + 1];
        assert_eq!(Event::parse(&big).unwrap_err(), InputError::TooLarge);
    }

    #[test]
    fn fields_are_checked() {
        let e = Event::parse(
            br#"{"hook_event_name": "PreToolUse", "session_id": "", "cwd": 3,
                 "tool_name": "Bash", "tool_input": []}"#,
        )
        .unwrap();
        assert!(e.session_id().unwrap_err().contains("is empty"));
        assert!(e.cwd().unwrap_err().contains("not a string"));
        assert!(e.tool_input().unwrap_err().contains("not a JSON object"));
        let long = format!(
            r#"{{"hook_event_name": "PreToolUse", "tool_name": "{}"}}"#,
            "x".repeat(MAX_TOOL_NAME_BYTES + 1)
        );
        let e = Event::parse(long.as_bytes()).unwrap();
        assert!(e.tool_name().unwrap_err().contains("longer than"));
    }
}
