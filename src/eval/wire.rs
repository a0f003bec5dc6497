//! A request straight from the wire: the `params` of an MCP `tools/call`
//! as JSON bytes, read without building a `Value`: the arguments stay JSON
//! text that conditions read key by key.

use std::borrow::Cow;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::raw_args::{self, RawArgs};
use super::Request;

/// The `params` of an MCP `tools/call` request, read from its JSON bytes:
/// the tool's `name` (borrowed from the bytes unless it holds an escape)
/// and its `arguments`, checked (valid JSON, an object, nested at most as
/// deep as `serde_json` builds) but kept as text borrowed from the bytes.
/// A condition on `args.KEY` reads that key's value alone, so a call whose
/// deciding rules read no argument builds no `Value` tree at all; the
/// decision is the one a [`Request`] with the arguments built would get.
/// Other members (`_meta`, ...) are skipped without being built.
///
/// ```
/// use mcppol::{PolicySet, ToolCallParams, Verdict};
///
/// let set = PolicySet::from_text("p.mcppol", r#"
///     policy p { allow "fs/read_file" when args.path inside "/srv" }
/// "#).map_err(|e| e.render(false))?;
/// let p = set.get("p").ok_or("no policy")?;
///
/// let bytes = br#"{"name":"read_file","arguments":{"path":"/srv/a.txt"},"_meta":{"progressToken":1}}"#;
/// let params = ToolCallParams::from_json(bytes)?;
/// assert_eq!(params.name(), "read_file");
/// let decision = p.decide(&params.request("fs"));
/// assert_eq!(decision.decision, Verdict::Allow);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ToolCallParams<'b> {
    name: Cow<'b, str>,
    arguments: Option<RawArgs<'b>>,
    /// The arguments built, once [`ToolCallParams::arguments`] is called.
    built: OnceLock<Option<Value>>,
}

impl PartialEq for ToolCallParams<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.arguments() == other.arguments()
    }
}

/// Why `tools/call` params could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamsError {
    /// The bytes are longer than [`ToolCallParams::MAX_BYTES`].
    #[error("tools/call params of {len} bytes, over the limit of {limit}")]
    TooLarge {
        /// Their length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// Not JSON, not an object with a string `name`, `arguments` not an
    /// object, or nested deeper than `serde_json` reads (128 levels).
    #[error("invalid tools/call params: {0}")]
    Invalid(String),
}

#[derive(Deserialize)]
struct Raw<'b> {
    #[serde(borrow)]
    name: Cow<'b, str>,
    #[serde(default, borrow)]
    arguments: Option<&'b RawValue>,
}

impl<'b> ToolCallParams<'b> {
    /// The longest params read: 16 MiB, the MCP transport's line bound.
    pub const MAX_BYTES: usize = 16 * 1024 * 1024;

    /// Reads the params object of a `tools/call` request. `arguments` may
    /// be absent or `null` (then conditions read `{}`); anything but an
    /// object there is an error, as is a missing or non-string `name`.
    pub fn from_json(bytes: &'b [u8]) -> Result<Self, ParamsError> {
        if bytes.len() > Self::MAX_BYTES {
            return Err(ParamsError::TooLarge {
                len: bytes.len(),
                limit: Self::MAX_BYTES,
            });
        }
        // UTF-8 checked once here, not string by string while parsing.
        let text = std::str::from_utf8(bytes).map_err(|e| ParamsError::Invalid(e.to_string()))?;
        let (name, arguments) = match read_fast(text) {
            Some(read) => read,
            None => read_with_serde(text)?,
        };
        Ok(ToolCallParams {
            name,
            arguments,
            built: OnceLock::new(),
        })
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The arguments object, if the call has one, built on the first call
    /// (deciding never needs it).
    pub fn arguments(&self) -> Option<&Value> {
        self.built
            .get_or_init(|| self.arguments.and_then(|raw| raw_args::parse(raw).ok()))
            .as_ref()
    }

    /// The arguments object as JSON text, as it came.
    pub fn arguments_json(&self) -> Option<&'b str> {
        self.arguments.map(RawArgs::get)
    }

    /// A request to call this tool on `server`, with these arguments and
    /// otherwise the defaults of [`Request::tool`] (add taint, principal,
    /// annotations ... with its `with_*` methods).
    pub fn request<'a>(&'a self, server: &'a str) -> Request<'a> {
        let request = Request::tool(server, &self.name);
        match self.arguments {
            Some(args) => request.with_raw_args(args),
            None => request,
        }
    }
}

/// Name and arguments as [`ToolCallParams::from_json`] reads them.
type Read<'b> = (Cow<'b, str>, Option<RawArgs<'b>>);

/// The params read in one pass over the text, building nothing: an object
/// whose `name` is a string without escapes and whose `arguments` (at most
/// once) are `null` or an object that [`raw_args::scan_value`] finds
/// `serde_json` would build, other members skipped the same way. `None`
/// when any of that does not hold or the pass is not sure: then
/// [`read_with_serde`] reads the text and decides, so this path accepts
/// nothing that one refuses and gives the same name and arguments.
/// The position of the closing quote of the string at `i`, when there is
/// one and it holds no escape (an escaped key or name is left to
/// `serde_json`, which compares them decoded).
fn plain_string(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut escaped = false;
    let close = raw_args::scan_string(b, i + 1, &mut escaped)?;
    (!escaped).then_some(close)
}

fn read_fast(text: &str) -> Option<Read<'_>> {
    let b = text.as_bytes();
    let mut i = raw_args::skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = raw_args::skip_ws(b, i + 1);
    let mut name = None;
    let mut arguments = None;
    loop {
        // A key: serde's field names compare with it decoded, so an escape
        // is left to serde_json.
        let close = plain_string(b, i)?;
        let key = b.get(i + 1..close)?;
        i = raw_args::skip_ws(b, close + 1);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = raw_args::skip_ws(b, i + 1);
        match key {
            b"name" if name.is_none() => {
                let close = plain_string(b, i)?;
                name = Some(text.get(i + 1..close)?);
                i = close + 1;
            }
            b"arguments" if arguments.is_none() => match b.get(i) {
                Some(b'{') => {
                    let end = raw_args::scan_value(b, i)?;
                    arguments = Some(Some(RawArgs::checked(text.get(i..end)?)));
                    i = end;
                }
                Some(b'n') if b.get(i..i + 4) == Some(b"null") => {
                    arguments = Some(None);
                    i += 4;
                }
                _ => return None,
            },
            // Written twice: serde refuses that.
            b"name" | b"arguments" => return None,
            _ => i = raw_args::scan_value(b, i)?,
        }
        i = raw_args::skip_ws(b, i);
        match b.get(i) {
            Some(b',') => i = raw_args::skip_ws(b, i + 1),
            Some(b'}') => break,
            _ => return None,
        }
    }
    if raw_args::skip_ws(b, i + 1) != b.len() {
        return None;
    }
    Some((Cow::Borrowed(name?), arguments.flatten()))
}

/// The params read by `serde_json` into [`Raw`] (skipping other members),
/// then the arguments checked by [`raw_args::check`]: the reference for
/// [`read_fast`], and the reader of what it leaves (escaped names and
/// keys, exponents, errors, which this one words).
pub(super) fn read_with_serde(text: &str) -> Result<Read<'_>, ParamsError> {
    let raw: Raw<'_> =
        serde_json::from_str(text).map_err(|e| ParamsError::Invalid(e.to_string()))?;
    let arguments = match raw.arguments.map(RawValue::get) {
        // `null` reads as no arguments.
        None | Some("null") => None,
        Some(args) if args.starts_with('{') => Some(args),
        Some(_) => {
            return Err(ParamsError::Invalid(
                "`arguments` is not an object".to_string(),
            ))
        }
    };
    if let Some(args) = arguments {
        raw_args::check(args).map_err(ParamsError::Invalid)?;
    }
    Ok((raw.name, arguments.map(RawArgs::checked)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_name_and_arguments_and_borrows_the_name() {
        let bytes = br#"{"name":"push","arguments":{"ref":"main","n":[1,2]},"_meta":{"x":[{}]}}"#;
        let p = ToolCallParams::from_json(bytes).unwrap();
        assert!(matches!(p.name, Cow::Borrowed("push")));
        assert_eq!(
            p.arguments(),
            Some(&serde_json::json!({"ref": "main", "n": [1, 2]}))
        );
        let r = p.request("git");
        assert_eq!((r.server, r.name), ("git", "push"));
        assert!(r.args.is_none() && r.raw_args.is_some());
        assert_eq!(p.arguments_json(), Some(r#"{"ref":"main","n":[1,2]}"#));
    }

    #[test]
    fn escapes_null_and_absent_arguments() {
        let p = ToolCallParams::from_json(br#"{"name":"a\u002db","arguments":null}"#).unwrap();
        assert_eq!(p.name(), "a-b");
        assert_eq!(p.arguments(), None);
        let p = ToolCallParams::from_json(br#"{"name":"x"}"#).unwrap();
        assert!(p.request("s").args.is_none() && p.request("s").raw_args.is_none());
    }

    #[test]
    fn refuses_what_is_not_tools_call_params() {
        for bad in [
            &br#"{"arguments":{}}"#[..],
            br#"{"name":3}"#,
            br#"{"name":"x","arguments":[1]}"#,
            br#"{"name":"x","arguments":"{}"}"#,
            br#"[1]"#,
            br#"{"name":"x""#,
            b"",
        ] {
            assert!(
                matches!(ToolCallParams::from_json(bad), Err(ParamsError::Invalid(_))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let deep = format!(
            r#"{{"name":"x","arguments":{{"a":{}1{}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(ToolCallParams::from_json(deep.as_bytes()).is_err());
        let big = vec![b' '; ToolCallParams::MAX_BYTES + 1];
        assert!(matches!(
            ToolCallParams::from_json(&big),
            Err(ParamsError::TooLarge { .. })
        ));
    }

    /// Params texts: `name`, `arguments` and other members in any order,
    /// some written twice or escaped, odd values, whitespace around.
    fn params() -> impl Strategy<Value = String> {
        use raw_args::texts;
        let name = prop_oneof![
            8 => Just(r#""name":"get_schema""#.to_string()),
            8 => texts::string().prop_map(|v| format!(r#""name":{v}"#)),
            1 => prop_oneof![texts::number(), texts::literal(), texts::object()]
                .prop_map(|v| format!(r#""name" :{v}"#)),
            1 => texts::value().prop_map(|v| format!(r#""n\u0061me":{v}"#)),
        ];
        let arguments = prop_oneof![
            8 => texts::object().prop_map(|v| format!(r#""arguments": {v}"#)),
            1 => prop_oneof![Just("null".to_string()), texts::value()]
                .prop_map(|v| format!("\"arguments\"\t:{v}")),
        ];
        let other = (texts::key(), texts::value()).prop_map(|(k, v)| format!("{k}:{v}"));
        let members = (
            prop::option::weighted(0.9, name.clone()),
            prop::option::weighted(0.8, arguments.clone()),
            prop::collection::vec(prop_oneof![12 => other, 1 => name, 1 => arguments], 0..3),
        )
            .prop_map(|(name, arguments, others)| {
                name.into_iter()
                    .chain(arguments)
                    .chain(others)
                    .collect::<Vec<_>>()
            })
            .prop_shuffle();
        (
            texts::ws(),
            members,
            prop::collection::vec(texts::ws(), 4),
            prop_oneof![
                10 => prop::sample::select(vec!["", " \n"]),
                1 => prop::sample::select(vec!["x", "}", ","]),
            ],
        )
            .prop_map(|(w, members, ws, tail)| {
                let body: Vec<String> = members
                    .into_iter()
                    .enumerate()
                    .map(|(i, m)| format!("{m}{}", ws[i % 4]))
                    .collect();
                format!("{w}{{{w}{}}}{tail}", body.join(","))
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

        /// The one pass gives what serde_json and the old check give, or
        /// leaves the text to them: never accepts what they refuse.
        #[test]
        fn one_pass_reads_as_serde_json_does(text in raw_args::texts::edited(params())) {
            let slow = read_with_serde(&text);
            if let Some(fast) = read_fast(&text) {
                prop_assert_eq!(Ok(fast), slow.clone(), "{}", text);
            }
            let read = ToolCallParams::from_json(text.as_bytes())
                .map(|p| (p.name, p.arguments));
            prop_assert_eq!(read, slow, "{}", text);
        }
    }

    #[test]
    fn the_common_params_take_the_one_pass() {
        for sure in [
            r#"{"name":"get_schema","arguments":{"id":909,"query":"status:open"}}"#,
            r#" { "arguments" : null , "_meta" : {"progressToken":[1, {"a":"\u00e9"}]}, "name" : "é" } "#,
            r#"{"name":"x","arguments":{"a":"\u0041"},"x":1}"#,
            r#"{"name":"x"}"#,
        ] {
            assert!(read_fast(sure).is_some(), "{sure}");
            assert_eq!(
                read_fast(sure).map(Ok),
                Some(read_with_serde(sure)),
                "{sure}"
            );
        }
        for unsure in [
            r#"{"name":"a\u002db"}"#,
            r#"{"n\u0061me":"x"}"#,
            r#"{"name":"x","_meta":1e3}"#,
            r#"["x",{"a":1}]"#,
        ] {
            assert!(read_fast(unsure).is_none(), "{unsure}");
            assert!(read_with_serde(unsure).is_ok(), "{unsure}");
        }
        // serde reads a struct from an array too: so do the params.
        let p = ToolCallParams::from_json(br#"["x",{"a":1}]"#).unwrap();
        assert_eq!((p.name(), p.arguments_json()), ("x", Some(r#"{"a":1}"#)));
    }

    /// Deep nesting is refused in the arguments and skipped elsewhere,
    /// without recursion: 16 MiB of `[` do not overflow the stack.
    #[test]
    fn deep_nesting_is_bounded_without_recursion() {
        let head = r#"{"name":"x","_meta":"#;
        let meta = format!("{head}{}1{}}}", "[".repeat(300), "]".repeat(300));
        assert!(read_fast(&meta).is_none());
        assert!(ToolCallParams::from_json(meta.as_bytes()).is_ok());
        for head in [head, r#"{"name":"x","arguments":{"a":"#] {
            let mut bytes = head.as_bytes().to_vec();
            bytes.resize(ToolCallParams::MAX_BYTES, b'[');
            assert!(matches!(
                ToolCallParams::from_json(&bytes),
                Err(ParamsError::Invalid(_))
            ));
        }
    }
}
