//! The package's exceptions: `PolicyError` (a policy that does not load,
//! with its diagnostics) and `RequestError` (a request the caller built
//! wrong: a bad target, an argument that is not JSON or past a bound).

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::policy::py_str;

create_exception!(
    _mcppol,
    PolicyError,
    PyException,
    "A policy that does not load: the message is the rendered diagnostic, \
     `.diagnostics` the list of `Diagnostic`s."
);

create_exception!(
    _mcppol,
    RequestError,
    PyValueError,
    "A request that cannot be decided as given (a bad target, an argument \
     that is not JSON or is past a bound): the message says what and how to fix it."
);

/// One diagnostic of a policy that did not load, for programs: what
/// `mcppol check --format json` prints for it.
#[pyclass(module = "mcppol", frozen, get_all)]
pub struct Diagnostic {
    /// The diagnostic's code (`mcppol::syntax::...`), see docs/diagnostics.md.
    pub code: String,
    /// `error` or `warning`.
    pub severity: String,
    /// The file (or the name given to `from_str`).
    pub file: String,
    /// 1-based line of the start.
    pub line: usize,
    /// 1-based column of the start.
    pub column: usize,
    /// 1-based line of the end.
    pub end_line: usize,
    /// 1-based column of the end.
    pub end_column: usize,
    /// What is wrong.
    pub message: String,
    /// How to fix it, when known.
    pub help: Option<String>,
}

#[pymethods]
impl Diagnostic {
    fn __repr__(&self) -> String {
        format!(
            "Diagnostic(code={}, file={}, line={}, column={}, message={})",
            py_str(&self.code),
            py_str(&self.file),
            self.line,
            self.column,
            py_str(&self.message)
        )
    }
}

impl From<&mcppol::Diagnostic> for Diagnostic {
    fn from(d: &mcppol::Diagnostic) -> Self {
        let (line, column) = d.line_col();
        let (end_line, end_column) = d.source.line_col(d.span.end);
        Diagnostic {
            code: d.code.to_string(),
            severity: d.severity.as_str().to_string(),
            file: d.source.name.clone(),
            line,
            column,
            end_line,
            end_column,
            message: d.message.clone(),
            help: d.help.clone(),
        }
    }
}

/// A `PolicyError` whose message is `rendered` and whose `.diagnostics`
/// holds `diagnostics`.
pub fn policy_error(py: Python<'_>, rendered: String, diagnostics: &[mcppol::Diagnostic]) -> PyErr {
    let err = PolicyError::new_err(rendered);
    let list = PyList::empty(py);
    for d in diagnostics {
        let converted = Bound::new(py, Diagnostic::from(d)).and_then(|d| list.append(d));
        if let Err(e) = converted {
            return e;
        }
    }
    if let Err(e) = err.value(py).setattr("diagnostics", list) {
        return e;
    }
    err
}
