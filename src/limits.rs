//! The bounds this crate adds on hostile input beyond those that live
//! beside their code (the policy file's size and nesting in `syntax`, the
//! regex budget in `compile`, the line length and listing bounds in `mcp`,
//! the schema bounds in `pipeline::schema`). `docs/security.md` lists every
//! bound with what happens when it is exceeded (a clear error, never a
//! crash, a hang or wider access), and `tests/suite/limits.rs` exceeds each one.

/// The most rule statements one policy file may hold (over all its
/// policies): a file with more does not load
/// (`mcppol::compile::too_many_rules`). The benchmarks load 80,000.
pub const MAX_RULES: usize = 100_000;

/// The most bytes a governed call's arguments may take as JSON: a call
/// with more fails before any hook or policy sees it (`protocol`,
/// `invalid_arguments`), and nothing is sent.
#[cfg(feature = "pipeline")]
pub const MAX_ARGUMENT_BYTES: usize = 4 * 1024 * 1024;

/// The deepest a governed call's arguments may nest (arrays and objects):
/// a call nested deeper fails like one over [`MAX_ARGUMENT_BYTES`].
#[cfg(feature = "pipeline")]
pub const MAX_ARGUMENT_DEPTH: usize = 64;

/// The most bytes one tool's definition in a server's `tools/list` may
/// take as JSON: a larger one is left out of the catalog (a call to it is
/// `not_found`), with a warning.
#[cfg(feature = "pipeline")]
pub const MAX_TOOL_DEFINITION_BYTES: usize = 1024 * 1024;

/// Whether `value` nests at most `max_depth` arrays and objects deep and
/// encodes to at most `max_bytes` bytes of JSON; else what it exceeds.
/// Walks without recursion and stops at the first bound crossed, so a
/// hostile value costs no more than the bound.
#[cfg(feature = "pipeline")]
pub(crate) fn check_json(
    value: &serde_json::Value,
    max_bytes: usize,
    max_depth: usize,
) -> Result<(), String> {
    use serde_json::Value;
    let mut stack: Vec<(&Value, usize)> = vec![(value, 1)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        if depth > max_depth {
            return Err(format!("it nests deeper than {max_depth} levels"));
        }
        stack.extend(children.map(|c| (c, depth + 1)));
    }
    let mut counter = Counter {
        bytes: 0,
        max: max_bytes,
    };
    if serde_json::to_writer(&mut counter, value).is_err() || counter.bytes > max_bytes {
        return Err(format!("it takes more than {max_bytes} bytes as JSON"));
    }
    Ok(())
}

/// Counts bytes written, and fails once past `max`.
#[cfg(feature = "pipeline")]
struct Counter {
    bytes: usize,
    max: usize,
}

#[cfg(feature = "pipeline")]
impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes = self.bytes.saturating_add(buf.len());
        if self.bytes > self.max {
            return Err(std::io::Error::other("over the bound"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(all(test, feature = "pipeline"))]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn nested(depth: usize) -> Value {
        let mut v = json!(1);
        for _ in 0..depth {
            v = json!([v]);
        }
        v
    }

    #[test]
    fn depth_and_size_are_bounded() {
        assert_eq!(check_json(&json!({"a": [1, {"b": 2}]}), 100, 3), Ok(()));
        assert!(check_json(&json!({"a": [1, {"b": 2}]}), 100, 2).is_err());
        assert_eq!(check_json(&nested(64), 1000, 64), Ok(()));
        assert!(check_json(&nested(65), 1000, 64)
            .unwrap_err()
            .contains("deeper than 64"));
        let s = json!({"s": "x".repeat(90)});
        assert_eq!(check_json(&s, 100, 2), Ok(()));
        assert!(check_json(&s, 50, 2)
            .unwrap_err()
            .contains("more than 50 bytes"));
        // Scalars have no depth.
        assert_eq!(check_json(&json!("x"), 10, 0), Ok(()));
    }
}
