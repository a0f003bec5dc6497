//! Arguments read from their JSON text, one key at a time: a condition on
//! `args.KEY...` reads the value of `KEY` and nothing else, so a call whose
//! deciding rules read no argument never builds a `Value` tree.
//!
//! What a condition sees is what it would see in the `Value` that
//! `serde_json` builds from the same text: a key written twice has the
//! value written last (as `serde_json::Map::insert` keeps it), escapes in
//! keys are decoded before comparing.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Value;

/// Arrays and objects nested deeper than this, the arguments object
/// counted, are refused when the params are read: what `serde_json`
/// refuses when it builds the params' `Value` (at most 127 levels, one
/// taken by the params object).
pub(crate) const MAX_DEPTH: usize = 126;

/// Whether the arguments text would build into a `Value`: read through
/// once as `serde_json` reads it to build one (numbers in range, escapes
/// that decode, nesting within [`MAX_DEPTH`]), building nothing.
pub(crate) fn check(args: &RawValue) -> Result<(), String> {
    if depth(args.get()) > MAX_DEPTH {
        return Err(format!("`arguments` nests deeper than {MAX_DEPTH} levels"));
    }
    let mut de = serde_json::Deserializer::from_str(args.get());
    <Check as serde::Deserialize>::deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())
}

/// Any JSON value, read and dropped.
struct Check;

impl<'de> serde::Deserialize<'de> for Check {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Check, D::Error> {
        d.deserialize_any(CheckVisitor)
    }
}

struct CheckVisitor;

impl<'de> Visitor<'de> for CheckVisitor {
    type Value = Check;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Check, E> {
        Ok(Check)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Check, E> {
        Ok(Check)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Check, E> {
        Ok(Check)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Check, E> {
        Ok(Check)
    }
    fn visit_str<E>(self, _: &str) -> Result<Check, E> {
        Ok(Check)
    }
    fn visit_unit<E>(self) -> Result<Check, E> {
        Ok(Check)
    }
    fn visit_none<E>(self) -> Result<Check, E> {
        Ok(Check)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Check, A::Error> {
        while seq.next_element::<Check>()?.is_some() {}
        Ok(Check)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Check, A::Error> {
        while map.next_key::<Check>()?.is_some() {
            map.next_value::<Check>()?;
        }
        Ok(Check)
    }
}

/// How deep arrays and objects nest in a JSON text (already known to be
/// valid JSON): the deepest count of open brackets.
pub(crate) fn depth(json: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &b in json.as_bytes() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// One value found under a key.
#[derive(Debug)]
pub(crate) enum Found<'b> {
    /// A string, borrowed from the text when it holds no escape.
    Str(Cow<'b, str>),
    /// Anything else, built.
    Json(Value),
}

/// The value of `key` in the arguments object `args` (the last one if the
/// key is written twice); `Ok(None)` when it is absent or `args` is not an
/// object. `Err` only if the text is not the valid JSON the params reader
/// checked.
pub(crate) fn get<'b>(args: &'b RawValue, key: &str) -> Result<Option<Found<'b>>, ()> {
    let text = args.get();
    if !text.starts_with('{') {
        return Ok(None);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let raw = de.deserialize_map(Lookup { key }).map_err(|_| ())?;
    let Some(raw) = raw else {
        return Ok(None);
    };
    let text = raw.get();
    if text.starts_with('"') {
        if let Ok(s) = serde_json::from_str::<&'b str>(text) {
            return Ok(Some(Found::Str(Cow::Borrowed(s))));
        }
        return serde_json::from_str::<String>(text)
            .map(|s| Some(Found::Str(Cow::Owned(s))))
            .map_err(|_| ());
    }
    serde_json::from_str::<Value>(text)
        .map(|v| Some(Found::Json(v)))
        .map_err(|_| ())
}

/// The whole arguments object as a `Value` (for an observer, a host
/// predicate, or a selector that does not start with a key).
pub(crate) fn parse(args: &RawValue) -> Result<Value, ()> {
    serde_json::from_str(args.get()).map_err(|_| ())
}

/// Finds one key of a map, skipping every other value unbuilt.
struct Lookup<'k> {
    key: &'k str,
}

impl<'de> Visitor<'de> for Lookup<'_> {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(same) = map.next_key_seed(KeyIs { key: self.key })? {
            if same {
                found = Some(map.next_value::<&'de RawValue>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// Reads a key and says whether it is the one looked for, without copying
/// it (an escaped key is compared decoded, in serde_json's scratch space).
struct KeyIs<'k> {
    key: &'k str,
}

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E>(self, s: &str) -> Result<bool, E> {
        Ok(s == self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).unwrap()
    }

    fn as_value(found: Option<Found<'_>>) -> Option<Value> {
        found.map(|f| match f {
            Found::Str(s) => Value::String(s.into_owned()),
            Found::Json(v) => v,
        })
    }

    #[test]
    fn finds_the_last_of_a_repeated_key_and_decodes_escapes() {
        let args = raw(r#"{"a":1,"p\u0061th":"/x","a":[2,{"b":"c"}],"s":"q\"r"}"#);
        assert_eq!(
            as_value(get(&args, "a").unwrap()),
            Some(serde_json::json!([2, {"b": "c"}]))
        );
        assert_eq!(as_value(get(&args, "path").unwrap()), Some("/x".into()));
        assert!(matches!(
            get(&args, "path").unwrap(),
            Some(Found::Str(Cow::Borrowed("/x")))
        ));
        assert_eq!(as_value(get(&args, "s").unwrap()), Some("q\"r".into()));
        assert!(get(&args, "z").unwrap().is_none());
        assert!(get(&raw("[1]"), "a").unwrap().is_none());
        assert!(get(&raw("{}"), "a").unwrap().is_none());
    }

    #[test]
    fn depth_counts_brackets_outside_strings() {
        assert_eq!(depth(r#"{"a":[1,{"b":"[[[{"}]]}"#), 3);
        assert_eq!(depth(r#""\"[""#), 0);
        assert_eq!(depth("1"), 0);
    }

    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| n.into()),
            (-1e6f64..1e6).prop_map(|f| f.into()),
            "[a-c\"\\\\é/]{0,4}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec(("[a-c]{1,2}", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Every key of an object, and some absent ones, read from the
        /// text are the values the built `Value` holds; with keys written
        /// twice too.
        #[test]
        fn agrees_with_the_built_value(
            pairs in prop::collection::vec(("[a-c]{1,2}", json()), 0..6),
        ) {
            let text = format!(
                "{{{}}}",
                pairs
                    .iter()
                    .map(|(k, v)| format!("{}:{}", serde_json::to_string(k).unwrap(), v))
                    .collect::<Vec<_>>()
                    .join(",")
            );
            let built: Value = serde_json::from_str(&text).unwrap();
            let args = raw(&text);
            for key in ["a", "b", "c", "aa", "ab", "bc", "cc", "d"] {
                prop_assert_eq!(as_value(get(&args, key).unwrap()), built.get(key).cloned(), "{}", key);
            }
            prop_assert_eq!(parse(&args).unwrap(), built);
        }
    }
}
