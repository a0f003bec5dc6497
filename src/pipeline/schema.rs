//! Tool schemas: refused when unsafe, else compiled for validation.
//!
//! A server's schemas are untrusted. Before any validator sees one it must
//! be an object or a boolean, nest at most [`MAX_DEPTH`] levels, hold at
//! most [`MAX_SUBSCHEMAS`] objects, encode to at most [`MAX_SCHEMA_BYTES`]
//! and have only local `$ref`/`$dynamicRef` (`#...`). The validator is
//! built without file or network resolution.

use std::sync::Arc;

use serde_json::Value;

/// The deepest a schema may nest.
pub const MAX_DEPTH: usize = 64;
/// The most objects (subschemas) a schema may hold.
pub const MAX_SUBSCHEMAS: usize = 1_000;
/// The largest a schema may encode to.
pub const MAX_SCHEMA_BYTES: usize = 256 * 1024;
/// The most validation errors reported for one value.
pub const MAX_REPORTED_ERRORS: usize = 10;

/// A tool's schema, ready for use.
#[derive(Clone, Default)]
pub enum SchemaState {
    /// No schema.
    #[default]
    Absent,
    /// Safe, and compiled.
    Ready(Arc<jsonschema::Validator>),
    /// Refused; why.
    Unsafe(String),
}

impl std::fmt::Debug for SchemaState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SchemaState::Absent => f.write_str("Absent"),
            SchemaState::Ready(_) => f.write_str("Ready"),
            SchemaState::Unsafe(why) => write!(f, "Unsafe({why})"),
        }
    }
}

impl SchemaState {
    /// Whether the schema was refused.
    pub fn is_unsafe(&self) -> bool {
        matches!(self, SchemaState::Unsafe(_))
    }
}

/// Why a schema is unsafe, or `Ok`.
pub fn check(schema: &Value) -> Result<(), String> {
    if !(schema.is_object() || schema.is_boolean()) {
        return Err("the schema is not an object or a boolean".into());
    }
    let bytes = serde_json::to_vec(schema)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    if bytes > MAX_SCHEMA_BYTES {
        return Err(format!(
            "the schema is {bytes} bytes, over {MAX_SCHEMA_BYTES}"
        ));
    }
    let mut objects = 0usize;
    // Iterative walk: a deep schema cannot overflow the stack.
    let mut stack: Vec<(&Value, usize)> = vec![(schema, 1)];
    while let Some((v, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(format!("the schema nests deeper than {MAX_DEPTH} levels"));
        }
        match v {
            Value::Object(map) => {
                objects += 1;
                if objects > MAX_SUBSCHEMAS {
                    return Err(format!(
                        "the schema has more than {MAX_SUBSCHEMAS} subschemas"
                    ));
                }
                for (k, child) in map {
                    if k == "$ref" || k == "$dynamicRef" {
                        if let Value::String(r) = child {
                            if !r.starts_with('#') {
                                return Err(format!("`{k}` is not a local `#...` pointer"));
                            }
                        }
                    }
                    stack.push((child, depth + 1));
                }
            }
            Value::Array(items) => {
                for child in items {
                    stack.push((child, depth + 1));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Checks and compiles a schema (`None`: the tool has none).
pub fn compile(schema: Option<&Value>) -> SchemaState {
    let Some(schema) = schema else {
        return SchemaState::Absent;
    };
    if let Err(why) = check(schema) {
        return SchemaState::Unsafe(why);
    }
    match jsonschema::validator_for(schema) {
        Ok(v) => SchemaState::Ready(Arc::new(v)),
        Err(e) => SchemaState::Unsafe(format!("the schema does not compile: {e}")),
    }
}

/// Validates a value; the error lists (a bounded number of) the
/// validator's messages. They may quote the value: never log them.
pub fn validate(validator: &jsonschema::Validator, value: &Value) -> Result<(), String> {
    if validator.is_valid(value) {
        return Ok(());
    }
    let errors: Vec<String> = validator
        .iter_errors(value)
        .take(MAX_REPORTED_ERRORS)
        .map(|e| format!("{}: {e}", e.instance_path))
        .collect();
    Err(errors.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(depth: usize) -> Value {
        let mut v = json!({"type": "string"});
        for _ in 0..depth {
            v = json!({"type": "object", "properties": {"a": v}});
        }
        v
    }

    #[test]
    fn refuses_each_unsafe_kind() {
        assert!(check(&json!({"type": "object"})).is_ok());
        assert!(check(&json!(true)).is_ok());
        assert!(check(&json!("object"))
            .unwrap_err()
            .contains("not an object"));
        assert!(check(&json!([])).unwrap_err().contains("not an object"));
        assert!(check(&nested(40)).unwrap_err().contains("nests"));
        assert!(check(&nested(20)).is_ok());
        let wide: serde_json::Map<String, Value> =
            (0..1001).map(|i| (format!("p{i}"), json!({}))).collect();
        assert!(check(&json!({"properties": wide}))
            .unwrap_err()
            .contains("subschemas"));
        let big = "x".repeat(MAX_SCHEMA_BYTES);
        assert!(check(&json!({"description": big}))
            .unwrap_err()
            .contains("bytes"));
        assert!(check(&json!({"$ref": "https://evil.example/s.json"}))
            .unwrap_err()
            .contains("local"));
        assert!(check(&json!({"$dynamicRef": "other.json#x"})).is_err());
        assert!(check(&json!({"$defs": {"a": {}}, "$ref": "#/$defs/a"})).is_ok());
    }

    #[test]
    fn compiles_and_validates() {
        let SchemaState::Ready(v) = compile(Some(
            &json!({"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}),
        )) else {
            panic!("not ready");
        };
        assert!(validate(&v, &json!({"path": "/a"})).is_ok());
        let e = validate(&v, &json!({"path": 1})).unwrap_err();
        assert!(e.contains("/path"), "{e}");
        assert!(matches!(compile(None), SchemaState::Absent));
        assert!(compile(Some(&json!(3))).is_unsafe());
    }
}
