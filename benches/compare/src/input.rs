//! What the harness hands Cedar and regorus for one request: the request's
//! own data plus what mcppol derives inside `decide` (folded names, the
//! taint from other servers, canonical paths, effective annotations).
//! Building it is part of the end-to-end timing of those engines.

use std::collections::HashSet;

use serde_json::{json, Map, Value};

use crate::gen::{canonical, fold, Ann, RequestSpec};

/// Argument keys that path predicates read.
pub const PATH_KEYS: [&str; 1] = ["path"];

/// The policy facts the harness needs to prepare a request.
pub struct Prep {
    trusted: HashSet<String>,
}

impl Prep {
    pub fn new(trusted: &[String]) -> Self {
        Prep {
            trusted: trusted.iter().cloned().collect(),
        }
    }

    /// The JSON input (Rego `input`, Cedar `context`).
    pub fn input(&self, r: &RequestSpec) -> Value {
        let mut canon = Map::new();
        for key in PATH_KEYS {
            if let Some(v) = r.args.get(key) {
                // A path that fails to canonicalize (or is no string) is "",
                // which is inside no root.
                let c = v.as_str().and_then(canonical).unwrap_or_default();
                canon.insert(key.to_string(), Value::String(c));
            }
        }
        let trusted = self.trusted.contains(&r.server);
        let mut ann = Map::new();
        for a in Ann::ALL {
            let value = if trusted {
                r.annotations
                    .get(a.hint())
                    .and_then(Value::as_bool)
                    .unwrap_or(a.mcp_default())
            } else {
                a.conservative()
            };
            ann.insert(a.key().to_string(), Value::Bool(value));
        }
        let foreign: Vec<&String> = r.taint.iter().filter(|t| **t != r.server).collect();
        json!({
            "server": r.server,
            "tool": r.tool,
            "server_f": fold(&r.server),
            "tool_f": fold(&r.tool),
            "args": r.args,
            "canon": canon,
            "ann": ann,
            "taint": r.taint,
            "foreign_taint": foreign,
            "principal": r.principal,
            "assigns": r.assigns,
        })
    }
}
