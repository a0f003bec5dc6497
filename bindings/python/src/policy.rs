//! `mcppol.Policy` and `mcppol.Decision`: one loaded policy, and the
//! engine's decision as Python sees it. Deciding runs with the GIL
//! released; nothing here decides, it maps the engine's `Decision`.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use mcppol::{LoadOptions, PickError, PolicySet};

use crate::convert::to_python;
use crate::error::{policy_error, RequestError};
use crate::request::OwnedRequest;

/// The engine's decision on one request.
#[pyclass(module = "mcppol", frozen)]
pub struct Decision {
    inner: mcppol::Decision,
}

impl From<mcppol::Decision> for Decision {
    fn from(inner: mcppol::Decision) -> Self {
        Decision { inner }
    }
}

#[pymethods]
impl Decision {
    /// `allow`, `ask` or `deny`.
    #[getter]
    fn decision(&self) -> &'static str {
        self.inner.decision.as_str()
    }

    /// The stage that decided (`deny`, `ask`, `allow`, `pin`, `default`, ...).
    #[getter]
    fn source(&self) -> &'static str {
        self.inner.source.as_str()
    }

    /// Why (`deny_rule`, `no_rule`, `no_approver`, ...).
    #[getter]
    fn reason(&self) -> &'static str {
        self.inner.reason.as_str()
    }

    /// The deciding rule's id, or None.
    #[getter]
    fn rule_id(&self) -> Option<&str> {
        self.inner.rule_id.as_deref()
    }

    /// The name of the policy that decided, or None (`no_policy`).
    #[getter]
    fn policy(&self) -> Option<&str> {
        self.inner.policy.as_deref()
    }

    /// The 1-based line of the deciding rule, or None.
    #[getter]
    fn line(&self) -> Option<u32> {
        self.inner.line
    }

    /// Whether the call goes through without asking.
    #[getter]
    fn allowed(&self) -> bool {
        self.inner.is_allow()
    }

    /// The JSON object `mcppol eval` prints, as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.inner.to_json())
    }

    /// The text a model reads for a call that did not go through, in the
    /// words `mcppol proxy` uses: the decision, the reason word, the rule
    /// and the policy. `reason` is the outcome's own reason when it is not
    /// the policy's (`ask_denied`: a person said no).
    #[pyo3(signature = (reason=None))]
    fn refusal_text(&self, reason: Option<&str>) -> String {
        mcppol::refusal_text(&self.inner, reason)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Decision>()
            .is_ok_and(|o| o.get().inner == self.inner)
    }

    fn __repr__(&self) -> String {
        let d = &self.inner;
        let opt = |s: Option<&str>| s.map_or("None".to_string(), py_str);
        format!(
            "Decision(decision={}, source={}, reason={}, rule_id={}, policy={}, line={})",
            py_str(d.decision.as_str()),
            py_str(d.source.as_str()),
            py_str(d.reason.as_str()),
            opt(d.rule_id.as_deref()),
            opt(d.policy.as_deref()),
            d.line.map_or("None".to_string(), |l| l.to_string()),
        )
    }
}

/// A str as Python's `repr` writes it (single quotes), for `__repr__`.
pub fn py_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            c if c.is_control() => out.push_str(&c.escape_default().to_string()),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// One loaded policy.
#[pyclass(module = "mcppol", frozen)]
pub struct Policy {
    policy: Arc<mcppol::Policy>,
}

impl Policy {
    fn picked(py: Python<'_>, set: &PolicySet, name: Option<&str>) -> PyResult<Policy> {
        match set.pick(name) {
            Ok(policy) => Ok(Policy {
                policy: Arc::clone(policy),
            }),
            Err(e) => Err(policy_error(py, pick_message(&e, set), &[])),
        }
    }
}

fn pick_message(e: &PickError, set: &PolicySet) -> String {
    let known: Vec<&str> = set.names().collect();
    match e {
        PickError::Ambiguous { .. } => format!(
            "the file holds several policies ({}); name one with name=...",
            known.join(", ")
        ),
        other => other.to_string(),
    }
}

#[pymethods]
impl Policy {
    /// Reads, parses and compiles a policy file; `name` picks a policy of
    /// a file that holds several.
    #[staticmethod]
    #[pyo3(signature = (path, name=None))]
    fn from_file(py: Python<'_>, path: PathBuf, name: Option<&str>) -> PyResult<Policy> {
        let loaded = py.detach(|| PolicySet::from_file(&path, &LoadOptions::default()));
        match loaded {
            Ok(set) => Policy::picked(py, &set, name),
            Err(e) => Err(policy_error(py, e.render(false), &e.diagnostics)),
        }
    }

    /// Parses and compiles policy text; `origin` names it in diagnostics.
    #[staticmethod]
    #[pyo3(signature = (text, name=None, origin="<string>"))]
    fn from_str(py: Python<'_>, text: &str, name: Option<&str>, origin: &str) -> PyResult<Policy> {
        match PolicySet::from_text(origin, text) {
            Ok(set) => Policy::picked(py, &set, name),
            Err(e) => Err(policy_error(py, e.render(false), &e.diagnostics)),
        }
    }

    /// The policy's name.
    #[getter]
    fn name(&self) -> &str {
        self.policy.name()
    }

    /// Decides one request (keywords as in the type stubs). The GIL is
    /// released while the engine decides.
    #[pyo3(signature = (tool=None, **kwargs))]
    fn decide(
        &self,
        py: Python<'_>,
        tool: Option<&str>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Decision> {
        let request = OwnedRequest::from_python(tool, kwargs)?;
        let policy = &self.policy;
        let decision = py.detach(|| request.with_request(|r| policy.decide(r)));
        Ok(decision.into())
    }

    /// Explains one request: the text `mcppol explain` prints, or with
    /// `format="json"` its JSON text.
    #[pyo3(signature = (tool=None, *, format="text", **kwargs))]
    fn explain(
        &self,
        py: Python<'_>,
        tool: Option<&str>,
        format: &str,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<String> {
        if format != "text" && format != "json" {
            return Err(RequestError::new_err(format!(
                "format takes \"text\" or \"json\", not {format:?}"
            )));
        }
        let request = OwnedRequest::from_python(tool, kwargs)?;
        let policy = &self.policy;
        Ok(py.detach(|| {
            let explanation = request.with_request(|r| policy.explain(r));
            if format == "json" {
                explanation.to_json(policy).to_string()
            } else {
                explanation.render(policy)
            }
        }))
    }

    /// Whether `server/tool` is listed to the model at all.
    fn is_visible(&self, server: &str, tool: &str) -> bool {
        self.policy.is_visible(server, tool)
    }

    fn __repr__(&self) -> String {
        format!("Policy(name={})", py_str(self.policy.name()))
    }
}
