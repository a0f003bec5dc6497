//! Python values to JSON and back, with bounds: what a caller passes as
//! `args`, `annotations`, `assigns`, `tool_def` or `lock` becomes the
//! `serde_json::Value` the engine reads, or a clear `RequestError` naming
//! where it went wrong and how to fix it. Never a panic, never unbounded
//! work: the walk stops at the first value past a bound.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

use crate::error::RequestError;

/// The deepest a value may nest (lists and dicts), as the engine's own
/// bound on a governed call's arguments (`MAX_ARGUMENT_DEPTH`).
pub const MAX_DEPTH: usize = 64;

/// The most bytes a value may take (its strings and keys counted as
/// UTF-8, every other item as 8 bytes), as the engine's bound on a
/// governed call's arguments (`MAX_ARGUMENT_BYTES`, 4 MiB as JSON).
pub const MAX_BYTES: usize = 4 * 1024 * 1024;

/// Where in the value the walk is: `args.items[3].path`.
struct Walk<'a> {
    what: &'a str,
    bytes: usize,
}

/// Why a value could not be converted, and where (path segments, innermost
/// last, collected while unwinding).
struct Failure {
    path: Vec<String>,
    message: String,
}

impl Failure {
    fn new(message: String) -> Self {
        Failure {
            path: Vec::new(),
            message,
        }
    }

    fn at(mut self, segment: String) -> Self {
        self.path.push(segment);
        self
    }
}

/// Converts `value` (named `what` in errors, e.g. `args`) to JSON.
pub fn to_json(what: &str, value: &Bound<'_, PyAny>) -> PyResult<Value> {
    let mut walk = Walk { what, bytes: 0 };
    walk.value(value, 0).map_err(|f| {
        let mut place = what.to_string();
        for segment in f.path.iter().rev() {
            place.push_str(segment);
        }
        RequestError::new_err(format!("{place}: {}", f.message))
    })
}

/// Converts `value` to a JSON object, or says it must be a dict.
pub fn to_json_object(what: &str, value: &Bound<'_, PyAny>) -> PyResult<Value> {
    if !value.is_instance_of::<PyDict>() {
        return Err(RequestError::new_err(format!(
            "{what} takes a dict (a JSON object), not {}",
            type_name(value)
        )));
    }
    to_json(what, value)
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value
        .get_type()
        .name()
        .map(|n| format!("`{n}`"))
        .unwrap_or_else(|_| "an unnamed type".to_string())
}

impl Walk<'_> {
    fn count(&mut self, bytes: usize) -> Result<(), Failure> {
        self.bytes = self.bytes.saturating_add(bytes);
        if self.bytes > MAX_BYTES {
            return Err(Failure::new(format!(
                "{} is over {} MiB; pass less data (the engine's bound on a call's arguments)",
                self.what,
                MAX_BYTES / (1024 * 1024)
            )));
        }
        Ok(())
    }

    fn value(&mut self, value: &Bound<'_, PyAny>, depth: usize) -> Result<Value, Failure> {
        self.count(8)?;
        if value.is_none() {
            return Ok(Value::Null);
        }
        // `bool` before `int`: in Python a bool is an int.
        if let Ok(b) = value.cast::<PyBool>() {
            return Ok(Value::Bool(b.is_true()));
        }
        if value.is_instance_of::<PyInt>() {
            return int(value);
        }
        if let Ok(f) = value.cast::<PyFloat>() {
            return Number::from_f64(f.value())
                .map(Value::Number)
                .ok_or_else(|| {
                    Failure::new(
                        "NaN and infinity are not JSON numbers; pass a finite float".into(),
                    )
                });
        }
        if let Ok(s) = value.cast::<PyString>() {
            let text = s
                .to_cow()
                .map_err(|e| Failure::new(format!("a string that is not UTF-8: {e}")))?;
            self.count(text.len())?;
            return Ok(Value::String(text.into_owned()));
        }
        if depth >= MAX_DEPTH {
            return Err(Failure::new(format!(
                "nested deeper than {MAX_DEPTH} lists and dicts; flatten the value"
            )));
        }
        if let Ok(dict) = value.cast::<PyDict>() {
            let mut map = Map::new();
            for (key, item) in dict.iter() {
                let key = key.cast::<PyString>().map_err(|_| {
                    Failure::new(format!(
                        "a dict key of type {} (JSON object keys are strings); use str keys",
                        type_name(&key)
                    ))
                })?;
                let key = key
                    .to_cow()
                    .map_err(|e| Failure::new(format!("a key that is not UTF-8: {e}")))?;
                self.count(key.len())?;
                let item = self
                    .value(&item, depth + 1)
                    .map_err(|f| f.at(format!("[{key:?}]")))?;
                map.insert(key.to_string(), item);
            }
            return Ok(Value::Object(map));
        }
        if let Ok(list) = value.cast::<PyList>() {
            return self.sequence(list.iter(), depth);
        }
        if let Ok(tuple) = value.cast::<PyTuple>() {
            return self.sequence(tuple.iter(), depth);
        }
        Err(Failure::new(format!(
            "a value of type {} is not JSON; pass dict, list, tuple, str, int, float, bool or None",
            type_name(value)
        )))
    }

    fn sequence<'py>(
        &mut self,
        items: impl Iterator<Item = Bound<'py, PyAny>>,
        depth: usize,
    ) -> Result<Value, Failure> {
        let mut out = Vec::new();
        for (i, item) in items.enumerate() {
            out.push(
                self.value(&item, depth + 1)
                    .map_err(|f| f.at(format!("[{i}]")))?,
            );
        }
        Ok(Value::Array(out))
    }
}

fn int(value: &Bound<'_, PyAny>) -> Result<Value, Failure> {
    if let Ok(i) = value.extract::<i64>() {
        return Ok(Value::Number(i.into()));
    }
    if let Ok(u) = value.extract::<u64>() {
        return Ok(Value::Number(u.into()));
    }
    Err(Failure::new(
        "an int outside 64 bits (JSON numbers here are 64-bit); pass it as a str or a float".into(),
    ))
}

/// JSON to Python: what `to_dict()`, `status()` and explain's JSON give.
pub fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, to_python(py, item)?)?;
            }
            dict.into_any()
        }
    })
}
