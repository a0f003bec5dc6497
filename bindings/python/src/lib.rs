//! The `mcppol` Python package's native module (`mcppol._mcppol`): the
//! engine's `Policy`, `Decision` and `Store`, the package's exceptions,
//! and the bounds on what Python passes in. It maps the engine's results;
//! it decides nothing itself. The Python side (`python/mcppol/`) re-exports
//! it and holds the framework integrations.

use pyo3::prelude::*;

mod convert;
mod error;
mod policy;
mod request;
mod store;

#[pymodule]
fn _mcppol(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<policy::Policy>()?;
    m.add_class::<policy::Decision>()?;
    m.add_class::<store::Store>()?;
    m.add_class::<error::Diagnostic>()?;
    m.add("PolicyError", py.get_type::<error::PolicyError>())?;
    m.add("RequestError", py.get_type::<error::RequestError>())?;
    m.add("MAX_ARGUMENT_DEPTH", convert::MAX_DEPTH)?;
    m.add("MAX_ARGUMENT_BYTES", convert::MAX_BYTES)?;
    m.add("MAX_TAINT", request::MAX_TAINT)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(fingerprint, m)?)?;
    Ok(())
}

/// The `sha256:` fingerprint of a tool's `tools/list` entry, as `mcppol
/// lock` records it.
#[pyfunction]
fn fingerprint(tool_def: &Bound<'_, PyAny>) -> PyResult<String> {
    let def = convert::to_json_object("tool_def", tool_def)?;
    mcppol::fingerprint(&def).map_err(|e| error::RequestError::new_err(format!("tool_def: {e}")))
}
