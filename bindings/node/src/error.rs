//! Errors as the JS wrapper reads them. A policy that does not load is an
//! error with the code `PolicyError` whose message is JSON text: the
//! rendered diagnostic and the diagnostics as objects; the wrapper turns
//! it into a `PolicyError`. A bad request is an `InvalidArg` error whose
//! message says what is wrong (the wrapper throws a `TypeError`).

use mcppol::{Diagnostic, LoadError, PickError, StoreError};
use napi::{Error, Status};
use serde_json::{json, Value};

/// The code of an error that carries a policy error's JSON.
pub const POLICY_ERROR: &str = "PolicyError";

fn diagnostic(d: &Diagnostic) -> Value {
    let (line, column) = d.line_col();
    json!({
        "code": d.code,
        "severity": d.severity.as_str(),
        "file": d.source.name,
        "line": line,
        "column": column,
        "message": d.message,
        "help": d.help,
    })
}

fn policy_error(message: &str, diagnostics: &[Diagnostic]) -> Error {
    let body = json!({
        "message": message.trim_end(),
        "diagnostics": diagnostics.iter().map(diagnostic).collect::<Vec<_>>(),
    });
    Error::new(Status::GenericFailure, format!("{POLICY_ERROR}:{body}"))
}

/// A policy that did not load.
pub fn load_error(e: &LoadError) -> Error {
    policy_error(&e.render(false), &e.diagnostics)
}

/// A store that did not open or watch.
pub fn store_error(e: &StoreError) -> Error {
    policy_error(&e.render(false), e.diagnostics())
}

/// No policy of that name, or a name was needed.
pub fn pick_error(e: &PickError) -> Error {
    let message = match e {
        PickError::Ambiguous { known } => format!(
            "the file holds several policies ({}); name one with the `name` option",
            known.join(", ")
        ),
        other => other.to_string(),
    };
    policy_error(&message, &[])
}

/// A request the engine cannot be asked about.
pub fn request_error(message: &str) -> Error {
    Error::new(Status::InvalidArg, format!("mcppol request: {message}"))
}
