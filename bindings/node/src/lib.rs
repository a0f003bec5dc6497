//! mcppol for Node.js: the engine in process, as a napi-rs native addon.
//!
//! This is the addon's low level (`native.js`); the package's API is the
//! JS wrapper `index.js`, which turns each request into JSON text (a
//! bounded conversion, see [`request`]) and each error into a
//! `PolicyError` or a `TypeError`. The addon maps the engine's
//! [`mcppol::Decision`] to a JS object and decides nothing itself.

#![deny(missing_docs)]
#![cfg_attr(test, allow(clippy::panic))]

mod error;
mod request;

use std::sync::Arc;

use mcppol::{Decision, LoadOptions, PolicySet, Watch};
use napi::bindgen_prelude::*;
use napi_derive::napi;

use error::{load_error, pick_error, request_error, store_error};

/// One decision, as JS reads it (field names in camelCase).
#[napi(object)]
pub struct NativeDecision {
    /// `allow`, `ask` or `deny`.
    pub decision: String,
    /// The stage that decided (`deny`, `pin`, `default`, ...).
    pub source: String,
    /// Why (`deny_rule`, `no_rule`, ...).
    pub reason: String,
    /// The deciding rule's id, when a rule decided.
    pub rule_id: Option<String>,
    /// The name of the policy that decided (none for `no_policy`).
    pub policy: Option<String>,
    /// The 1-based line of the deciding rule.
    pub line: Option<u32>,
    /// Whether the call goes through without asking.
    pub allowed: bool,
}

impl From<Decision> for NativeDecision {
    fn from(d: Decision) -> Self {
        NativeDecision {
            decision: d.decision.as_str().to_string(),
            source: d.source.as_str().to_string(),
            reason: d.reason.as_str().to_string(),
            allowed: d.is_allow(),
            rule_id: d.rule_id.map(|r| r.to_string()),
            policy: d.policy.map(|p| p.to_string()),
            line: d.line,
        }
    }
}

/// The text a model reads for a call that did not go through, worded by
/// the engine's one renderer (`mcppol::refusal_text`): `reason` replaces
/// the decision's own (an ask a person refused: `ask_denied`). A decision
/// whose names the engine does not know is an error, never other words.
#[napi]
pub fn refusal_text(decision: NativeDecision, reason: Option<String>) -> napi::Result<String> {
    let unknown = |what: &str, name: &str| {
        napi::Error::new(
            napi::Status::InvalidArg,
            format!("refusalText: `{name}` is not a {what} the engine gives"),
        )
    };
    let mut d = Decision::no_policy();
    d.decision = mcppol::Verdict::from_name(&decision.decision)
        .ok_or_else(|| unknown("decision", &decision.decision))?;
    d.source = mcppol::Source::from_name(&decision.source)
        .ok_or_else(|| unknown("source", &decision.source))?;
    d.reason = mcppol::Reason::from_name(&decision.reason)
        .ok_or_else(|| unknown("reason", &decision.reason))?;
    d.rule_id = decision.rule_id.map(Into::into);
    d.policy = decision.policy.map(Into::into);
    d.line = decision.line;
    Ok(mcppol::refusal_text(&d, reason.as_deref()))
}

/// One loaded policy.
#[napi]
pub struct NativePolicy {
    policy: Arc<mcppol::Policy>,
}

fn pick(set: &PolicySet, name: Option<&str>) -> Result<NativePolicy> {
    set.pick(name)
        .map(|p| NativePolicy {
            policy: Arc::clone(p),
        })
        .map_err(|e| pick_error(&e))
}

#[napi]
impl NativePolicy {
    /// Loads policy text; `origin` names it in diagnostics, `name` picks a
    /// policy when the text holds several.
    #[napi(factory)]
    pub fn from_text(origin: String, text: String, name: Option<String>) -> Result<NativePolicy> {
        let set = PolicySet::from_text(&origin, &text).map_err(|e| load_error(&e))?;
        pick(&set, name.as_deref())
    }

    /// Reads and loads a policy file.
    #[napi(factory)]
    pub fn from_file(path: String, name: Option<String>) -> Result<NativePolicy> {
        let set = PolicySet::from_file(std::path::Path::new(&path), &LoadOptions::default())
            .map_err(|e| load_error(&e))?;
        pick(&set, name.as_deref())
    }

    /// The policy's name.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.policy.name().to_string()
    }

    /// Decides the request given as JSON text.
    #[napi]
    pub fn decide(&self, request_json: String) -> Result<NativeDecision> {
        let request = request::parse(&request_json).map_err(|e| request_error(&e))?;
        Ok(request.with_request(|r| self.policy.decide(r)).into())
    }

    /// Explains the request given as JSON text: the text `mcppol explain`
    /// prints, or (with `json`) its JSON object as text.
    #[napi]
    pub fn explain(&self, request_json: String, json: bool) -> Result<String> {
        let request = request::parse(&request_json).map_err(|e| request_error(&e))?;
        let explanation = request.with_request(|r| self.policy.explain(r));
        Ok(if json {
            explanation.to_json(&self.policy).to_string()
        } else {
            explanation.render(&self.policy)
        })
    }

    /// Whether the policy's `tools {}` block lets the model see the tool.
    #[napi]
    pub fn is_visible(&self, server: String, tool: String) -> bool {
        self.policy.is_visible(&server, &tool)
    }
}

/// The fingerprint `mcppol lock` records for a tool's `tools/list` entry
/// (given as JSON text, bounded as a request is).
#[napi]
pub fn fingerprint(tool_def_json: String) -> Result<String> {
    if tool_def_json.len() > request::MAX_REQUEST_BYTES {
        return Err(request_error(&format!(
            "the tool definition is {} bytes of JSON, more than the {} allowed",
            tool_def_json.len(),
            request::MAX_REQUEST_BYTES
        )));
    }
    let def: serde_json::Value =
        serde_json::from_str(&tool_def_json).map_err(|e| request_error(&format!("{e}")))?;
    mcppol::fingerprint(&def).map_err(|e| request_error(&format!("tool definition: {e}")))
}

/// What one `reload()` did.
#[napi(object)]
pub struct NativeReloaded {
    /// Files whose new text is now in force.
    pub loaded: u32,
    /// Files whose new text did not load (their last good version stays).
    pub failed: u32,
    /// Files that disappeared (their last good version stays).
    pub removed: u32,
}

// JS numbers: a count or generation past their range (never in practice)
// saturates rather than wrapping.
fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn generation(g: u64) -> i64 {
    i64::try_from(g).unwrap_or(i64::MAX)
}

/// Named policies from files and folders, optionally hot-reloaded.
#[napi]
pub struct NativeStore {
    store: mcppol::Store,
}

#[napi]
impl NativeStore {
    /// Loads every policy of `paths` (files, or folders of `*.mcppol`);
    /// with `watch`, reloads on change and keeps the last good version
    /// (`poll`: reads the files every second instead of file events).
    #[napi(constructor)]
    pub fn new(paths: Vec<String>, watch: bool, poll: bool) -> Result<NativeStore> {
        let store =
            mcppol::Store::open(&paths, LoadOptions::default()).map_err(|e| store_error(&e))?;
        if watch {
            let how = if poll { Watch::poll() } else { Watch::events() };
            store.watch(how).map_err(|e| store_error(&e))?;
        }
        Ok(NativeStore { store })
    }

    /// How many times the policies in force have been swapped.
    #[napi(getter)]
    pub fn generation(&self) -> i64 {
        generation(self.store.generation())
    }

    /// Replaces a policy (by name, or a file the store holds) with new
    /// text; a text that does not load is an error and the old policy
    /// stays. Returns the new generation.
    #[napi]
    pub fn update(&self, name_or_file: String, text: String) -> Result<i64> {
        let g = self
            .store
            .update(&name_or_file, &text)
            .map_err(|e| store_error(&e))?;
        Ok(generation(g))
    }

    /// Reads every file now and loads the changed ones.
    #[napi]
    pub fn reload(&self) -> NativeReloaded {
        let r = self.store.reload();
        NativeReloaded {
            loaded: count(r.loaded),
            failed: count(r.failed),
            removed: count(r.removed),
        }
    }

    /// Decides the request (JSON text) against the policy named `name`; a
    /// name not loaded is denied (`no_policy`).
    #[napi]
    pub fn decide(&self, name: String, request_json: String) -> Result<NativeDecision> {
        let request = request::parse(&request_json).map_err(|e| request_error(&e))?;
        Ok(request.with_request(|r| self.store.decide(&name, r)).into())
    }

    /// The store's status as JSON text (what `mcppol watch` reports).
    #[napi]
    pub fn status(&self) -> String {
        self.store.status().to_json().to_string()
    }

    /// The names of the policies in force.
    #[napi]
    pub fn names(&self) -> Vec<String> {
        self.store.names()
    }

    /// Stops hot reload; the policies in force stay.
    #[napi]
    pub fn close(&self) {
        self.store.unwatch();
    }
}
