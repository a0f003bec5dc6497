//! RFC 8785 canonical JSON and fingerprints: the digest of any JSON value
//! is `sha256:` + 64 hex digits, does not depend on key order or on the
//! whitespace of the text, and a tool's fingerprint covers exactly the
//! fingerprinted fields.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcppol::fuzzing::digest;
use serde_json::{Map, Value};

/// The value with every object's keys in reverse order.
fn reversed(v: &Value) -> Value {
    match v {
        Value::Array(items) => Value::Array(items.iter().map(reversed).collect()),
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m.iter().rev() {
                out.insert(k.clone(), reversed(v));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Ok(d) = digest(&value) else {
        return;
    };
    assert!(mcppol::fuzzing::is_fingerprint(&d), "{d}");
    assert_eq!(
        digest(&reversed(&value)).ok(),
        Some(d.clone()),
        "key order changed the digest"
    );
    let pretty = serde_json::to_string_pretty(&value).unwrap_or_default();
    if let Ok(again) = serde_json::from_str::<Value>(&pretty) {
        assert_eq!(
            digest(&again).ok(),
            Some(d.clone()),
            "whitespace changed the digest"
        );
    }
    if let Value::Object(fields) = &value {
        if let Ok(fp) = mcppol::fingerprint(&value) {
            assert!(mcppol::fuzzing::is_fingerprint(&fp));
            // A field the fingerprint does not cover changes nothing.
            let mut extra = fields.clone();
            extra.insert("mcppolFuzzExtra".into(), Value::from(1));
            assert_eq!(
                mcppol::fingerprint(&Value::Object(extra)).ok(),
                Some(fp.clone())
            );
            assert_eq!(
                mcppol::fingerprint(&reversed(&value)).ok(),
                Some(fp.clone())
            );
            // Any covered field's change is a new fingerprint.
            if let Some(Value::String(desc)) = fields.get("description") {
                let mut changed = fields.clone();
                changed.insert("description".into(), Value::from(format!("{desc} ")));
                assert_ne!(mcppol::fingerprint(&Value::Object(changed)).ok(), Some(fp));
            }
        }
    }
});
