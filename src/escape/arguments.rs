//! What a person is shown of a call's arguments (the approval dialog):
//! every value on its own line, each cut on its own with the cut said,
//! every name and value escaped. Only the proxy's dialog shows these, so
//! only a build with the command line and the pipeline has them.

use super::{cut_at, escape};

/// How many values [`show_arguments`] would list for `value`.
fn count_leaves(value: &serde_json::Value, depth: usize) -> usize {
    use serde_json::Value;
    match value {
        Value::Object(map) if depth < 64 && !map.is_empty() => {
            map.values().map(|v| count_leaves(v, depth + 1)).sum()
        }
        Value::Array(items) if depth < 64 && !items.is_empty() => {
            items.iter().map(|v| count_leaves(v, depth + 1)).sum()
        }
        _ => 1,
    }
}

/// The most values [`show_arguments`] lists.
pub const MAX_SHOWN_VALUES: usize = 64;
/// The most bytes of one value [`show_arguments`] shows.
pub const MAX_SHOWN_VALUE_BYTES: usize = 200;

/// One value as a person reads it: its JSON, escaped, and cut to `max`
/// bytes with the cut said (`"AAA…" (cut: 2102 bytes in all)`).
pub fn show_value(value: &serde_json::Value, max: usize) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    let shown = escape(&text);
    if shown.len() <= max {
        return shown.into_owned();
    }
    format!(
        "{}… (cut: {} bytes in all)",
        cut_at(&shown, max),
        text.len()
    )
}

/// A key of a path as a person reads it: `.name`, or `["odd key"]`
/// escaped.
fn show_key(key: &str, first: bool) -> String {
    let plain = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        if first {
            key.to_string()
        } else {
            format!(".{key}")
        }
    } else {
        let quoted = serde_json::to_string(key).unwrap_or_default();
        format!("[{}]", escape(&quoted))
    }
}

/// Every value of a call's arguments, for a person who must approve it:
/// one line a value (nested objects and lists are walked, each value named
/// by its path, `files[0].path`), in the caller's order. Each value is cut
/// on its own (never the whole, so no key can hide behind a long one); at
/// most [`MAX_SHOWN_VALUES`] are listed and how many more there are is
/// said; every name and value is escaped ([`escape`]).
pub fn show_arguments(arguments: &serde_json::Value) -> String {
    let mut leaves = Vec::new();
    let mut total = 0usize;
    let empty = match arguments {
        serde_json::Value::Object(m) => m.is_empty(),
        _ => false,
    };
    if !empty {
        walk(arguments, String::new(), 0, &mut leaves, &mut total);
    }
    let mut out = match total {
        0 => "Arguments: none".to_string(),
        1 => "Arguments (1 value):".to_string(),
        n => format!("Arguments ({n} values):"),
    };
    for (path, value) in &leaves {
        out.push_str("\n  ");
        if path.is_empty() {
            out.push_str("(the arguments)");
        } else if path.len() > MAX_SHOWN_VALUE_BYTES {
            // A long name is cut like a value, and the cut said.
            out.push_str(cut_at(path, MAX_SHOWN_VALUE_BYTES));
            out.push_str(&format!("… (name cut: {} bytes in all)", path.len()));
        } else {
            out.push_str(path);
        }
        out.push_str(" = ");
        out.push_str(&show_value(value, MAX_SHOWN_VALUE_BYTES));
    }
    if total > leaves.len() {
        out.push_str(&format!(
            "\n  … and {} more values, not shown: do not allow a call you cannot see whole",
            total - leaves.len()
        ));
    }
    out
}

fn walk<'a>(
    value: &'a serde_json::Value,
    path: String,
    depth: usize,
    leaves: &mut Vec<(String, &'a serde_json::Value)>,
    total: &mut usize,
) {
    use serde_json::Value;
    if leaves.len() >= MAX_SHOWN_VALUES {
        // Past the bound only the count is needed: no paths are made.
        *total += count_leaves(value, depth);
        return;
    }
    // Arguments nest at most 64 deep (`MAX_ARGUMENT_DEPTH`); deeper is
    // shown as one (cut) value.
    let nested = depth < 64;
    match value {
        Value::Object(map) if nested && !map.is_empty() => {
            for (k, v) in map {
                walk(
                    v,
                    format!("{path}{}", show_key(k, path.is_empty())),
                    depth + 1,
                    leaves,
                    total,
                );
            }
        }
        Value::Array(items) if nested && !items.is_empty() => {
            for (i, v) in items.iter().enumerate() {
                walk(v, format!("{path}[{i}]"), depth + 1, leaves, total);
            }
        }
        _ => {
            *total += 1;
            if leaves.len() < MAX_SHOWN_VALUES {
                leaves.push((path, value));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_key_is_shown_each_value_cut_on_its_own() {
        let shown =
            show_arguments(&json!({"content": "A".repeat(2100), "path": "/etc/cron.d/evil"}));
        assert!(shown.contains("path = \"/etc/cron.d/evil\""), "{shown}");
        assert!(shown.contains("(cut: 2102 bytes in all)"), "{shown}");
        assert!(shown.starts_with("Arguments (2 values):"), "{shown}");
        let nested = show_arguments(&json!({"files": [{"path": "a"}], "odd key\u{202e}": 1}));
        assert!(nested.contains("files[0].path = \"a\""), "{nested}");
        assert!(nested.contains("[\"odd key\\u{202e}\"] = 1"), "{nested}");
        let many: serde_json::Map<String, serde_json::Value> =
            (0..70).map(|i| (format!("k{i}"), json!(i))).collect();
        let shown = show_arguments(&serde_json::Value::Object(many));
        assert!(shown.contains("6 more values"), "{shown}");
        let nested: Vec<serde_json::Value> =
            (0..10).map(|i| json!({"a": i, "b": [i, i]})).collect();
        let shown = show_arguments(&json!({"first": nested, "last": 1}));
        assert!(shown.starts_with("Arguments (31 values):"), "{shown}");
        let long_key = "k".repeat(500);
        let shown = show_arguments(&json!({ long_key: 1 }));
        assert!(shown.contains("(name cut: 500 bytes in all)"), "{shown}");
        assert_eq!(show_arguments(&json!({})), "Arguments: none");
    }
}
