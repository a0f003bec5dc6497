//! JSON-RPC 2.0 messages as MCP uses them: requests, notifications and
//! responses, one JSON object a line (batches are not part of MCP since
//! 2025-06-18 and are refused).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A request id: MCP allows a number or a string (never null).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    /// A numeric id (this client's own requests use these).
    Number(i64),
    /// A string id.
    String(String),
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// The standard JSON-RPC error codes, for an [`RpcError`] a
/// [`RequestHandler`](super::RequestHandler) or a scripted server answers
/// with.
pub mod codes {
    /// The message is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// The JSON is not a valid request object.
    pub const INVALID_REQUEST: i64 = -32600;
    /// The method does not exist or is not supported.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The method's params are invalid (MCP also uses it for an unknown
    /// tool, resource or prompt).
    pub const INVALID_PARAMS: i64 = -32602;
    /// The receiver failed while handling the request.
    pub const INTERNAL_ERROR: i64 = -32603;
}

/// The `error` member of a response: what a server answered instead of
/// a result (in [`McpError::Rpc`](super::McpError::Rpc)), or what a
/// [`RequestHandler`](super::RequestHandler) answers a server with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("JSON-RPC error {code}: {message}")]
pub struct RpcError {
    /// The error code (see [`codes`] for the standard ones).
    pub code: i64,
    /// A short description. From a server it is untrusted text: show it,
    /// never log it as if it were the client's own.
    pub message: String,
    /// Extra data the sender attached, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with `code` and `message` and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The "method not found" error ([`codes::METHOD_NOT_FOUND`]) for
    /// `method`.
    pub fn method_not_found(method: &str) -> Self {
        RpcError::new(
            codes::METHOD_NOT_FOUND,
            format!("method `{method}` is not supported"),
        )
    }
}

/// A request: a method, its params, and the id the answer will carry.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id the answer will carry.
    pub id: Id,
    /// The method (`tools/call`, `ping`, ...).
    pub method: String,
    /// The params (an object or a list), if any.
    pub params: Option<Value>,
}

/// A notification: a method and params, no answer. What
/// [`Transport::subscribe`](super::Transport::subscribe) hands on from a
/// server (`notifications/tools/list_changed`, progress, logging, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method (`notifications/tools/list_changed`, ...).
    pub method: String,
    /// The params, if any.
    pub params: Option<Value>,
}

/// A response: the request's id and a result or an error.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request it answers.
    pub id: Id,
    /// The result, or the error.
    pub outcome: Result<Value, RpcError>,
}

/// One message on the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request (it has an id and a method).
    Request(Request),
    /// A notification (a method, no id).
    Notification(Notification),
    /// A response (an id, a result or an error).
    Response(Response),
}

/// Why a line is not a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    /// The line does not parse as JSON.
    #[error("the line is not JSON")]
    NotJson,
    /// The JSON is not an object (a batch, a bare value).
    #[error("a JSON-RPC message is an object (batches are not part of MCP)")]
    NotAnObject,
    /// `jsonrpc` is missing or not `"2.0"`.
    #[error("`jsonrpc` is not \"2.0\"")]
    BadVersion,
    /// A member has the wrong type, or the members do not make a message.
    #[error("bad message: {0}")]
    Malformed(&'static str),
}

impl Message {
    /// Reads one message from a line's bytes (without the newline).
    pub fn parse(line: &[u8]) -> Result<Message, MessageError> {
        let value: Value = serde_json::from_slice(line).map_err(|_| MessageError::NotJson)?;
        Message::from_value(value)
    }

    /// Reads one message from a JSON value.
    pub fn from_value(value: Value) -> Result<Message, MessageError> {
        let Value::Object(mut obj) = value else {
            return Err(MessageError::NotAnObject);
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(MessageError::BadVersion);
        }
        let id = match obj.remove("id") {
            None => None,
            Some(v) => Some(
                serde_json::from_value::<Id>(v)
                    .map_err(|_| MessageError::Malformed("`id` is not a number or a string"))?,
            ),
        };
        let params = obj.remove("params");
        if let Some(p) = &params {
            if !(p.is_object() || p.is_array()) {
                return Err(MessageError::Malformed("`params` is not an object"));
            }
        }
        match obj.remove("method") {
            Some(Value::String(method)) => Ok(match id {
                Some(id) => Message::Request(Request { id, method, params }),
                None => Message::Notification(Notification { method, params }),
            }),
            Some(_) => Err(MessageError::Malformed("`method` is not a string")),
            None => {
                let id = id.ok_or(MessageError::Malformed("a response without `id`"))?;
                let outcome = match (obj.remove("result"), obj.remove("error")) {
                    (Some(result), None) => Ok(result),
                    (None, Some(error)) => Err(serde_json::from_value::<RpcError>(error)
                        .map_err(|_| MessageError::Malformed("`error` is not an error object"))?),
                    _ => {
                        return Err(MessageError::Malformed(
                            "a response has exactly one of `result` and `error`",
                        ))
                    }
                };
                Ok(Message::Response(Response { id, outcome }))
            }
        }
    }

    /// The message as a JSON value (what [`Message::to_line`] writes).
    #[cfg(any(test, feature = "http"))]
    pub fn to_value(&self) -> Value {
        let mut obj = serde_json::Map::new();
        obj.insert("jsonrpc".into(), Value::from("2.0"));
        match self {
            Message::Request(r) => {
                obj.insert("id".into(), id_value(&r.id));
                obj.insert("method".into(), Value::from(r.method.as_str()));
                if let Some(p) = &r.params {
                    obj.insert("params".into(), p.clone());
                }
            }
            Message::Notification(n) => {
                obj.insert("method".into(), Value::from(n.method.as_str()));
                if let Some(p) = &n.params {
                    obj.insert("params".into(), p.clone());
                }
            }
            Message::Response(r) => {
                obj.insert("id".into(), id_value(&r.id));
                match &r.outcome {
                    Ok(v) => {
                        obj.insert("result".into(), v.clone());
                    }
                    Err(e) => {
                        obj.insert(
                            "error".into(),
                            serde_json::to_value(e).unwrap_or(Value::Null),
                        );
                    }
                }
            }
        }
        Value::Object(obj)
    }

    /// The message as one line of bytes, newline included: what
    /// [`Message::to_value`] gives, written without copying the params or
    /// the result first (a message can be large).
    pub fn to_line(&self) -> Vec<u8> {
        /// The members in `to_value`'s order, borrowed.
        #[derive(Serialize)]
        struct Line<'a> {
            jsonrpc: &'static str,
            #[serde(skip_serializing_if = "Option::is_none")]
            id: Option<&'a Id>,
            #[serde(skip_serializing_if = "Option::is_none")]
            method: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            params: Option<&'a Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            result: Option<&'a Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            error: Option<&'a RpcError>,
        }
        let mut line = Line {
            jsonrpc: "2.0",
            id: None,
            method: None,
            params: None,
            result: None,
            error: None,
        };
        match self {
            Message::Request(r) => {
                line.id = Some(&r.id);
                line.method = Some(&r.method);
                line.params = r.params.as_ref();
            }
            Message::Notification(n) => {
                line.method = Some(&n.method);
                line.params = n.params.as_ref();
            }
            Message::Response(r) => {
                line.id = Some(&r.id);
                match &r.outcome {
                    Ok(v) => line.result = Some(v),
                    Err(e) => line.error = Some(e),
                }
            }
        }
        let mut bytes = serde_json::to_vec(&line).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }
}

#[cfg(any(test, feature = "http"))]
fn id_value(id: &Id) -> Value {
    match id {
        Id::Number(n) => Value::from(*n),
        Id::String(s) => Value::from(s.as_str()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn classifies_each_kind_and_round_trips() {
        let cases = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}),
            json!({"jsonrpc": "2.0", "id": "a", "method": "ping"}),
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
            json!({"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}),
            json!({"jsonrpc": "2.0", "id": 8, "error": {"code": -32601, "message": "no"}}),
        ];
        let kinds: Vec<&str> = cases
            .iter()
            .map(|c| match Message::from_value(c.clone()).unwrap() {
                Message::Request(_) => "request",
                Message::Notification(_) => "notification",
                Message::Response(r) if r.outcome.is_ok() => "result",
                Message::Response(_) => "error",
            })
            .collect();
        assert_eq!(
            kinds,
            ["request", "request", "notification", "result", "error"]
        );
        for c in cases {
            let m = Message::from_value(c.clone()).unwrap();
            assert_eq!(m.to_value(), c);
            let line = m.to_line();
            assert_eq!(line.last(), Some(&b'\n'));
            // The line is the value, member for member and in order.
            let mut from_value = serde_json::to_vec(&m.to_value()).unwrap();
            from_value.push(b'\n');
            assert_eq!(line, from_value);
            assert_eq!(Message::parse(&line[..line.len() - 1]).unwrap(), m);
        }
    }

    #[test]
    fn refuses_what_is_not_a_message() {
        assert_eq!(Message::parse(b"{nope"), Err(MessageError::NotJson));
        assert_eq!(Message::parse(b"[]"), Err(MessageError::NotAnObject));
        assert_eq!(
            Message::parse(br#"{"jsonrpc":"1.0","id":1,"result":1}"#),
            Err(MessageError::BadVersion)
        );
        assert!(matches!(
            Message::parse(br#"{"jsonrpc":"2.0","id":null,"result":1}"#),
            Err(MessageError::Malformed(_))
        ));
        assert!(matches!(
            Message::parse(
                br#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"x"}}"#
            ),
            Err(MessageError::Malformed(_))
        ));
        assert!(matches!(
            Message::parse(br#"{"jsonrpc":"2.0","result":1}"#),
            Err(MessageError::Malformed(_))
        ));
    }
}
