//! MCP 2026-07-28 on the host side: a stateless host sends no
//! `initialize` and has no session; each request carries its protocol
//! version and the client's capabilities in `_meta`
//! (`io.modelcontextprotocol/protocolVersion`, `.../clientCapabilities`),
//! `server/discover` tells it what the gateway is, each result says its
//! `resultType`, and over HTTP the `MCP-Protocol-Version`, `Mcp-Method`
//! and `Mcp-Name` headers repeat the body. The gateway routes by the body
//! only: a header that disagrees with it is refused (`-32020`, HTTP 400),
//! never followed.
//!
//! Followed: the 2026-07-28 specification's "Versioning" (no handshake,
//! per-request `_meta`), "server/discover", "Transports" (the routing
//! headers and their `=?base64?...?=` form) and "Multi Round-Trip
//! Requests" (`input_required.rs`), as the official Python SDK (`mcp`
//! 2.3.0) sends and checks them.

use serde_json::{json, Value};

use crate::mcp::jsonrpc::codes;
use crate::mcp::{
    RpcError, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, PROTOCOL_VERSIONS,
    STATELESS_PROTOCOL_VERSIONS,
};

/// A routing header that disagrees with the body.
#[cfg(feature = "http")]
pub(crate) const HEADER_MISMATCH: i64 = -32020;
/// A protocol version the gateway does not speak.
pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The `_meta` key of the server's own description in a 2026 result.
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The protocol version a request's `_meta` names, when it names one.
fn meta_version(params: &Value) -> Option<&Value> {
    params.get("_meta")?.get(META_PROTOCOL_VERSION)
}

/// Whether a request is a stateless host's: its `_meta` names a protocol
/// version (checked by [`check_envelope`]).
pub(crate) fn is_stateless(params: &Value) -> bool {
    meta_version(params).is_some()
}

/// Checks a stateless request's envelope: a version the gateway speaks,
/// the client's capabilities an object.
pub(crate) fn check_envelope(params: &Value) -> Result<(), RpcError> {
    let Some(version) = meta_version(params) else {
        return Err(RpcError::new(
            codes::INVALID_PARAMS,
            format!("params._meta must carry `{META_PROTOCOL_VERSION}` and `{META_CLIENT_CAPABILITIES}` (MCP 2026-07-28)"),
        ));
    };
    let Some(version) = version.as_str() else {
        return Err(RpcError::new(
            codes::INVALID_PARAMS,
            format!("params._meta `{META_PROTOCOL_VERSION}` must be a string"),
        ));
    };
    if !STATELESS_PROTOCOL_VERSIONS.contains(&version) {
        let mut e = RpcError::new(
            UNSUPPORTED_PROTOCOL_VERSION,
            format!(
                "Unsupported protocol version {version:?}: the gateway speaks {} without a session, {} after `initialize`",
                STATELESS_PROTOCOL_VERSIONS.join(", "),
                PROTOCOL_VERSIONS.join(", ")
            ),
        );
        e.data = Some(json!({"supported": STATELESS_PROTOCOL_VERSIONS, "requested": version}));
        return Err(e);
    }
    match params
        .get("_meta")
        .and_then(|m| m.get(META_CLIENT_CAPABILITIES))
    {
        Some(Value::Object(_)) => Ok(()),
        _ => Err(RpcError::new(
            codes::INVALID_PARAMS,
            format!("params._meta `{META_CLIENT_CAPABILITIES}` must be an object (the client's capabilities)"),
        )),
    }
}

/// The client capabilities a stateless request declares (`{}` when none).
pub(crate) fn client_capabilities(params: &Value) -> Value {
    params
        .get("_meta")
        .and_then(|m| m.get(META_CLIENT_CAPABILITIES))
        .filter(|c| c.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}))
}

/// A stateless host's result of `method`: `resultType` `complete` unless
/// it says otherwise (an `input_required` one); a cacheable one (a
/// listing, a resource read) is never to be reused (`ttlMs` 0) nor shared
/// across callers (`cacheScope` `private`), since the policy decides it
/// per caller and may change at any time.
pub(crate) fn complete(method: &str, mut result: Value) -> Value {
    if let Value::Object(map) = &mut result {
        map.entry("resultType")
            .or_insert_with(|| Value::from("complete"));
        let cacheable = matches!(
            method,
            "tools/list"
                | "prompts/list"
                | "resources/list"
                | "resources/templates/list"
                | "resources/read"
        );
        if cacheable {
            map.entry("ttlMs").or_insert_with(|| Value::from(0));
            map.entry("cacheScope")
                .or_insert_with(|| Value::from("private"));
        }
    }
    result
}

/// The answer to `server/discover`: every version the gateway speaks, its
/// capabilities and the servers' instructions, never cached across
/// callers (each principal sees its own servers' state).
pub(crate) fn discover(capabilities: Value, instructions: Option<String>) -> Value {
    let mut versions: Vec<&str> = STATELESS_PROTOCOL_VERSIONS.to_vec();
    versions.extend(PROTOCOL_VERSIONS);
    let mut result = json!({
        "supportedVersions": versions,
        "capabilities": capabilities,
        "resultType": "complete",
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {META_SERVER_INFO: {"name": "mcppol-gateway", "version": env!("CARGO_PKG_VERSION")}},
    });
    if let Some(text) = instructions {
        result["instructions"] = Value::from(text);
    }
    result
}

/// The `_meta` a server is sent for a stateless host's request: the
/// host's own keys, without the 2026 envelope (a 2025 server negotiated
/// its version and capabilities with the gateway at `initialize`).
pub(crate) fn server_meta(meta: &Value) -> Option<Value> {
    let Value::Object(map) = meta else {
        return Some(meta.clone());
    };
    let kept: serde_json::Map<String, Value> = map
        .iter()
        .filter(|(k, _)| !k.starts_with("io.modelcontextprotocol/"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (!kept.is_empty()).then_some(Value::Object(kept))
}

/// Checks the HTTP routing headers of a stateless request against its
/// body (`header` reads one header by its lower-case name): the protocol
/// version, the method, and the tool's or prompt's name or the resource's
/// URI. A mismatch is `-32020`.
#[cfg(feature = "http")]
pub(crate) fn check_headers<'a>(
    message: &Value,
    header: impl Fn(&str) -> Option<&'a str>,
) -> Result<(), RpcError> {
    let mismatch = |what: &str| {
        RpcError::new(
            HEADER_MISMATCH,
            format!(
                "the {what} header does not match the request's body; send the same value in both"
            ),
        )
    };
    let params = message.get("params").unwrap_or(&Value::Null);
    if let Some(version) = meta_version(params).and_then(Value::as_str) {
        if header("mcp-protocol-version") != Some(version) {
            return Err(mismatch("MCP-Protocol-Version"));
        }
    }
    let method = message.get("method").and_then(Value::as_str);
    if header("mcp-method") != method {
        return Err(mismatch("Mcp-Method"));
    }
    let key = match method {
        Some("tools/call" | "prompts/get") => "name",
        Some("resources/read") => "uri",
        _ => return Ok(()),
    };
    if let Some(name) = params.get(key).and_then(Value::as_str) {
        if !header("mcp-name").is_some_and(|h| header_value_matches(h, name)) {
            return Err(mismatch("Mcp-Name"));
        }
    }
    Ok(())
}

/// Whether a header value carries `value`: as it is (printable ASCII
/// without edge blanks), or in the `=?base64?...?=` form the
/// specification gives any other value.
#[cfg(feature = "http")]
fn header_value_matches(header: &str, value: &str) -> bool {
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b)) && value.trim() == value;
    (plain && header == value) || header == format!("=?base64?{}?=", base64(value.as_bytes()))
}

#[cfg(feature = "http")]
use crate::mcp::http::base64;

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(version: Value) -> Value {
        json!({"_meta": {META_PROTOCOL_VERSION: version, META_CLIENT_CAPABILITIES: {}}})
    }

    #[test]
    fn the_envelope_names_a_version_the_gateway_speaks() {
        assert!(check_envelope(&meta(json!("2026-07-28"))).is_ok());
        let e = check_envelope(&meta(json!("2031-01-01"))).unwrap_err();
        assert_eq!(e.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(e.data.unwrap()["supported"], json!(["2026-07-28"]));
        assert_eq!(
            check_envelope(&meta(json!(2026))).unwrap_err().code,
            codes::INVALID_PARAMS
        );
        let no_caps = json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}});
        assert_eq!(
            check_envelope(&no_caps).unwrap_err().code,
            codes::INVALID_PARAMS
        );
        assert!(!is_stateless(&json!({"name": "x"})));
    }

    #[test]
    fn results_discover_and_the_meta_a_server_is_sent() {
        let listed = complete("tools/list", json!({"tools": []}));
        assert_eq!(
            listed,
            json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
        );
        let asked = json!({"resultType": "input_required"});
        assert_eq!(complete("tools/call", asked.clone()), asked);
        assert_eq!(complete("tools/call", json!({}))["resultType"], "complete");
        let d = discover(json!({"tools": {}}), Some("hi".into()));
        assert_eq!(
            d["supportedVersions"],
            json!(["2026-07-28", "2025-11-25", "2025-06-18"])
        );
        assert_eq!(d["instructions"], "hi");
        let mut m = meta(json!("2026-07-28"))["_meta"].clone();
        assert_eq!(server_meta(&m), None);
        m["progressToken"] = json!(3);
        assert_eq!(server_meta(&m), Some(json!({"progressToken": 3})));
    }

    #[cfg(feature = "http")]
    #[test]
    fn the_routing_headers_must_repeat_the_body() {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "a__echo", "_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}}});
        let headers = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
        };
        let good: &'static [(&str, &str)] = &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "a__echo"),
        ];
        assert!(check_headers(&body, headers(good)).is_ok());
        for bad in [
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/list"),
                ("mcp-name", "a__echo"),
            ][..],
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "b__echo"),
            ],
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
            ],
            &[
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "a__echo"),
            ],
        ] {
            let e = check_headers(&body, headers(bad)).unwrap_err();
            assert_eq!(e.code, HEADER_MISMATCH, "{bad:?}");
        }
        // Another value goes in the base64 form.
        assert_eq!(base64(b"caf\xc3\xa9"), "Y2Fmw6k=");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
        assert!(header_value_matches("=?base64?Y2Fmw6k=?=", "café"));
        assert!(header_value_matches("=?base64?YWJj?=", "abc"));
        assert!(!header_value_matches("café", "café"));
        assert!(!header_value_matches(" a", " a"));
    }
}
