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

use json_scan::find;
pub(crate) use json_scan::{scan_string, scan_value, skip_ws};

mod json_scan;

/// Arrays and objects nested deeper than this, the arguments object
/// counted, are refused when the params are read: what `serde_json`
/// refuses when it builds the params' `Value` (at most 127 levels, one
/// taken by the params object).
pub(crate) const MAX_DEPTH: usize = 126;

/// The arguments object of a `tools/call` as JSON text, borrowed from the
/// params' bytes and checked when they were read
/// ([`crate::ToolCallParams::from_json`]): valid JSON, an object, values
/// that build into a `Value` (numbers in range, escapes that decode),
/// nested at most [`MAX_DEPTH`] levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawArgs<'a>(&'a str);

impl<'a> RawArgs<'a> {
    /// Text already checked as above (by [`check`] or [`scan_value`]).
    pub(crate) fn checked(text: &'a str) -> Self {
        RawArgs(text)
    }

    /// The text.
    pub(crate) fn get(self) -> &'a str {
        self.0
    }
}

/// Whether the arguments text would build into a `Value`: read through
/// once as `serde_json` reads it to build one (numbers in range, escapes
/// that decode, nesting within [`MAX_DEPTH`]), building nothing. The
/// reference for [`scan_value`], and what the params reader falls back
/// on when that one is not sure.
pub(crate) fn check(args: &str) -> Result<(), String> {
    if depth(args) > MAX_DEPTH {
        return Err(format!("`arguments` nests deeper than {MAX_DEPTH} levels"));
    }
    let mut de = serde_json::Deserializer::from_str(args);
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
pub(crate) fn get<'b>(args: RawArgs<'b>, key: &str) -> Result<Option<Found<'b>>, ()> {
    let text = args.get();
    if !text.starts_with('{') {
        return Ok(None);
    }
    let found = match find(text.as_bytes(), key) {
        Some(Some((start, end))) => text.get(start..end).ok_or(())?,
        Some(None) => return Ok(None),
        // An escaped key, or a value the one pass is not sure of: serde_json
        // reads it.
        None => {
            let mut de = serde_json::Deserializer::from_str(text);
            match de.deserialize_map(Lookup { key }).map_err(|_| ())? {
                Some(raw) => raw.get(),
                None => return Ok(None),
            }
        }
    };
    if let Some(inner) = found.strip_prefix('"') {
        let mut escaped = false;
        if scan_string(inner.as_bytes(), 0, &mut escaped).is_some() && !escaped {
            let s = inner.strip_suffix('"').ok_or(())?;
            return Ok(Some(Found::Str(Cow::Borrowed(s))));
        }
        return serde_json::from_str::<String>(found)
            .map(|s| Some(Found::Str(Cow::Owned(s))))
            .map_err(|_| ());
    }
    serde_json::from_str::<Value>(found)
        .map(|v| Some(Found::Json(v)))
        .map_err(|_| ())
}

/// The whole arguments object as a `Value` (for an observer, a host
/// predicate, or a selector that does not start with a key).
pub(crate) fn parse(args: RawArgs<'_>) -> Result<Value, ()> {
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

/// What the `params` fuzz target compares (feature `fuzzing`, hidden, not
/// API): the serde-only reading of the params next to
/// [`crate::ToolCallParams::from_json`]'s, and a key read from the
/// arguments text next to the built object's.
#[cfg(feature = "fuzzing")]
impl<'b> crate::ToolCallParams<'b> {
    /// Name and arguments text as `serde_json` alone reads the params (the
    /// reference of the one pass), after the same length and UTF-8 checks
    /// as [`crate::ToolCallParams::from_json`].
    #[doc(hidden)]
    pub fn fuzzing_read_with_serde(
        bytes: &'b [u8],
    ) -> Result<(Cow<'b, str>, Option<&'b str>), super::ParamsError> {
        if bytes.len() > Self::MAX_BYTES {
            return Err(super::ParamsError::TooLarge {
                len: bytes.len(),
                limit: Self::MAX_BYTES,
            });
        }
        let text =
            std::str::from_utf8(bytes).map_err(|e| super::ParamsError::Invalid(e.to_string()))?;
        super::wire::read_with_serde(text).map(|(name, args)| (name, args.map(RawArgs::get)))
    }

    /// The value of `key` in the arguments as a condition reads it from
    /// their text ([`get`]), built; `Ok(None)` if absent or there are no
    /// arguments.
    #[doc(hidden)]
    pub fn fuzzing_get(&self, key: &str) -> Result<Option<Value>, String> {
        let Some(text) = self.arguments_json() else {
            return Ok(None);
        };
        let found = get(RawArgs::checked(text), key)
            .map_err(|()| format!("{key:?} did not read from {text}"))?;
        Ok(found.map(|found| match found {
            Found::Str(s) => Value::String(s.into_owned()),
            Found::Json(v) => v,
        }))
    }
}

/// JSON-ish texts for the differential tests of the one-pass reader
/// against `serde_json`: valid and invalid escapes (lone surrogates), big
/// and malformed numbers, control characters, whitespace everywhere, keys
/// written twice or escaped, deep nesting, then random edits.
#[cfg(test)]
pub(crate) mod texts {
    use proptest::prelude::*;

    /// Whitespace, JSON's and not.
    pub fn ws() -> impl Strategy<Value = &'static str> {
        prop_oneof![
            80 => prop::sample::select(vec!["", "", " ", "\n\t", "\r "]),
            1 => prop::sample::select(vec!["\u{a0}", "\u{c}"]),
        ]
    }

    /// One of `good` mostly, one of `dubious` at times.
    fn mostly(good: Vec<String>, dubious: Vec<String>) -> impl Strategy<Value = String> {
        prop_oneof![
            30 => prop::sample::select(good),
            1 => prop::sample::select(dubious),
        ]
    }

    fn owned(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|s| s.to_string()).collect()
    }

    /// A string literal, or something close.
    pub fn string() -> impl Strategy<Value = String> {
        mostly(
            owned(&[
                r#""a""#,
                r#""""#,
                r#""é ✓""#,
                r#""q\"r""#,
                r#""\u0041\u00e9""#,
                r#""\ud83d\ude00""#,
                "\"del\u{7f}\"",
                r#""\/\b\f\n\r\t\\""#,
                r#""/srv/a/../b""#,
                r#""a long string of more than eight bytes \" with a quote""#,
            ]),
            owned(&[
                r#""\ud800""#,
                r#""\udc00x""#,
                r#""\ud800\u0041""#,
                r#""\ud800\udbff""#,
                r#""\x""#,
                "\"tab\there\"",
                "\"ctl\u{1}\"",
                r#""\u00""#,
                r#""\uZZZZ""#,
                r#""\""#,
                r#""unterminated"#,
            ]),
        )
    }

    /// A number, or something close.
    pub fn number() -> impl Strategy<Value = String> {
        let nines = |n: usize| "9".repeat(n);
        mostly(
            vec![
                "0".to_string(),
                "-0".to_string(),
                "1.5".to_string(),
                "1e5".to_string(),
                "2e-400".to_string(),
                "-12".to_string(),
                "18446744073709551616".to_string(),
                "-9223372036854775809".to_string(),
                "0.12345678901234567890123456789".to_string(),
                nines(300),
                format!("-{}.{}", nines(300), nines(40)),
                nines(301),
            ],
            vec![
                "01".to_string(),
                "1.".to_string(),
                "-".to_string(),
                "-a".to_string(),
                "1E+400".to_string(),
                ".5".to_string(),
                "+1".to_string(),
                nines(309),
                format!("{}.5", nines(400)),
            ],
        )
    }

    /// A literal, or something close.
    pub fn literal() -> impl Strategy<Value = String> {
        mostly(
            owned(&["true", "false", "null"]),
            owned(&["nul", "tru", "nullx", "True"]),
        )
    }

    /// A key: plain, escaped, or one the params reader looks for.
    pub fn key() -> impl Strategy<Value = String> {
        mostly(
            owned(&[
                r#""a""#,
                r#""b""#,
                r#""path""#,
                r#""p\u0061th""#,
                r#""name""#,
                r#""n\u0061me""#,
                r#""arguments""#,
                r#""_meta""#,
                r#""é""#,
            ]),
            owned(&[r#""\ud800""#, "\"k\u{1}\"", "a"]),
        )
    }

    /// A value, or something close, with whitespace around its parts.
    pub fn value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![string(), number(), literal()];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec((ws(), inner.clone(), ws()), 0..4).prop_map(|v| {
                    let items: Vec<String> = v
                        .into_iter()
                        .map(|(a, x, b)| format!("{a}{x}{b}"))
                        .collect();
                    format!("[{}]", items.join(","))
                }),
                prop::collection::vec((key(), ws(), inner), 0..4).prop_map(|kv| {
                    let items: Vec<String> = kv
                        .into_iter()
                        .map(|(k, w, v)| format!("{k}{w}:{w}{v}"))
                        .collect();
                    format!("{{{}}}", items.join(","))
                }),
            ]
        })
    }

    /// An object of `value`s (the arguments), nested up to 130 levels
    /// deep at times.
    pub fn object() -> impl Strategy<Value = String> {
        (
            prop::collection::vec((key(), ws(), value()), 0..5),
            prop_oneof![12 => Just(0usize), 1 => 120usize..130],
        )
            .prop_map(|(kv, deep)| {
                let mut items: Vec<String> = kv
                    .into_iter()
                    .map(|(k, w, v)| format!("{k}{w}:{w}{v}"))
                    .collect();
                if deep > 0 {
                    items.push(format!(r#""d":{}1{}"#, "[".repeat(deep), "]".repeat(deep)));
                }
                format!("{{{}}}", items.join(" , "))
            })
    }

    /// Random edits of a text: a byte deleted, or one of JSON's
    /// punctuation inserted.
    pub fn edited(text: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
        (
            text,
            prop_oneof![
                3 => Just(Vec::new()),
                1 => prop::collection::vec((any::<prop::sample::Index>(), 0usize..12), 1..3),
            ],
        )
            .prop_map(|(text, edits)| {
                let mut bytes = text.into_bytes();
                for (at, op) in edits {
                    if bytes.is_empty() {
                        break;
                    }
                    let at = at.index(bytes.len());
                    match op {
                        0..=3 => {
                            bytes.remove(at);
                        }
                        _ => bytes.insert(at, b"{}[],:\"\\e"[op - 4]),
                    }
                }
                // Edits may split a character: keep the texts `&str`.
                String::from_utf8_lossy(&bytes).into_owned()
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Arguments text, checked as the params reader checks it.
    fn raw(text: &str) -> RawArgs<'_> {
        check(text).unwrap();
        RawArgs::checked(text)
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
            as_value(get(args, "a").unwrap()),
            Some(serde_json::json!([2, {"b": "c"}]))
        );
        assert_eq!(as_value(get(args, "path").unwrap()), Some("/x".into()));
        assert!(matches!(
            get(args, "path").unwrap(),
            Some(Found::Str(Cow::Borrowed("/x")))
        ));
        assert_eq!(as_value(get(args, "s").unwrap()), Some("q\"r".into()));
        assert!(get(args, "z").unwrap().is_none());
        assert!(get(raw("[1]"), "a").unwrap().is_none());
        assert!(get(raw("{}"), "a").unwrap().is_none());
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
                prop_assert_eq!(as_value(get(args, key).unwrap()), built.get(key).cloned(), "{}", key);
            }
            prop_assert_eq!(parse(args).unwrap(), built);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        /// The one pass accepts only arguments `serde_json` builds (and
        /// the old check accepts), ending where the value ends; keys read
        /// from checked text are the built object's, however written.
        #[test]
        fn one_pass_agrees_with_serde_json(text in texts::edited(texts::object())) {
            let scanned = scan_value(text.as_bytes(), 0);
            let built = serde_json::from_str::<Value>(&text);
            let checked = check(&text);
            if scanned == Some(text.len()) {
                prop_assert!(built.is_ok(), "{}", text);
                prop_assert!(checked.is_ok(), "{}", text);
            }
            if let Some(end) = scanned {
                prop_assert!(check(&text[..end]).is_ok(), "{}", text);
            }
            if let (Ok(built), Ok(())) = (built, checked) {
                let args = RawArgs::checked(&text);
                for key in ["a", "b", "path", "name", "é", "\u{fffd}", "d", "z"] {
                    prop_assert_eq!(
                        as_value(get(args, key).unwrap()),
                        built.get(key).cloned(),
                        "{} in {}", key, text
                    );
                }
            }
        }
    }
}
