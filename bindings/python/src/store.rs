//! `mcppol.Store`: named policies from files and folders, hot reload with
//! the last good version kept (the engine's `Store`). Deciding is
//! lock-free and runs with the GIL released.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use mcppol::{LoadOptions, StoreError, Watch};

use crate::convert::to_python;
use crate::error::{policy_error, RequestError};
use crate::policy::Decision;
use crate::request::OwnedRequest;

/// The most files and folders one store may be opened on.
const MAX_PATHS: usize = 4096;

/// Named policies from files and folders, reloaded when they change.
#[pyclass(module = "mcppol", frozen)]
pub struct Store {
    store: mcppol::Store,
}

fn store_error(py: Python<'_>, e: &StoreError) -> PyErr {
    policy_error(py, e.render(false), e.diagnostics())
}

fn paths_of(paths: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    // One path (str or os.PathLike), or an iterable of them.
    if paths.is_instance_of::<PyString>() || paths.hasattr("__fspath__")? {
        return Ok(vec![paths.extract::<PathBuf>()?]);
    }
    let mut out = Vec::new();
    for item in paths.try_iter().map_err(|_| {
        RequestError::new_err("Store takes a path, or a list of paths (files and folders)")
    })? {
        if out.len() >= MAX_PATHS {
            return Err(RequestError::new_err(format!(
                "Store takes at most {MAX_PATHS} paths; name a folder instead of its files"
            )));
        }
        out.push(item?.extract::<PathBuf>()?);
    }
    Ok(out)
}

#[pymethods]
impl Store {
    /// Loads every policy of `paths` (a file or folder, or a list of
    /// them); with `watch=True` the files are reloaded when they change
    /// (`poll=True`: read every second instead of file events).
    #[new]
    #[pyo3(signature = (paths, watch=true, poll=false))]
    fn new(py: Python<'_>, paths: &Bound<'_, PyAny>, watch: bool, poll: bool) -> PyResult<Store> {
        let paths = paths_of(paths)?;
        let opened = py.detach(|| {
            let store = mcppol::Store::open(&paths, LoadOptions::default())?;
            if watch {
                store.watch(if poll { Watch::poll() } else { Watch::events() })?;
            }
            Ok::<_, StoreError>(store)
        });
        match opened {
            Ok(store) => Ok(Store { store }),
            Err(e) => Err(store_error(py, &e)),
        }
    }

    /// Decides a request against the policy `name`; a name not loaded is
    /// denied (`reason: no_policy`).
    #[pyo3(signature = (name, tool=None, **kwargs))]
    fn decide(
        &self,
        py: Python<'_>,
        name: &str,
        tool: Option<&str>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Decision> {
        let request = OwnedRequest::from_python(tool, kwargs)?;
        let store = &self.store;
        let decision = py.detach(|| request.with_request(|r| store.decide(name, r)));
        Ok(decision.into())
    }

    /// The names of the policies in force, sorted.
    fn names(&self) -> Vec<String> {
        self.store.names()
    }

    /// How many times the policies in force have been swapped.
    #[getter]
    fn generation(&self) -> u64 {
        self.store.generation()
    }

    /// Replaces a policy (by name, or a file the store holds) with new
    /// text; raises `PolicyError` and keeps the old one if it does not
    /// load. Returns the new generation.
    fn update(&self, py: Python<'_>, name_or_file: &str, text: &str) -> PyResult<u64> {
        let updated = py.detach(|| self.store.update(name_or_file, text));
        updated.map_err(|e| store_error(py, &e))
    }

    /// Reads every file now and loads the changed ones: a dict of how many
    /// files loaded, failed and were removed.
    fn reload<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = py.detach(|| self.store.reload());
        let dict = PyDict::new(py);
        dict.set_item("loaded", r.loaded)?;
        dict.set_item("failed", r.failed)?;
        dict.set_item("removed", r.removed)?;
        Ok(dict)
    }

    /// The state of every file and policy (what `mcppol watch` reports),
    /// as a dict.
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let status = py.detach(|| self.store.status().to_json());
        to_python(py, &status)
    }

    /// Stops hot reload (the policies in force stay).
    fn unwatch(&self) {
        self.store.unwatch();
    }

    fn __repr__(&self) -> String {
        format!(
            "Store(policies={:?}, generation={})",
            self.store.names(),
            self.store.generation()
        )
    }
}
