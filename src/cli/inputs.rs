//! Reading the JSON that flags carry: inline text or `@FILE`.

use serde_json::Value;

/// The JSON of a flag: the text itself, or with `@FILE` the file's text
/// (`@-` reads standard input).
pub fn json_arg(flag: &str, text: &str) -> Result<Value, String> {
    let (body, origin) = match text.strip_prefix('@') {
        Some("-") => (
            crate::io::read_stdin(crate::io::MAX_JSON_BYTES).map_err(|e| format!("{flag}: {e}"))?,
            "standard input".to_string(),
        ),
        Some(path) => (
            crate::io::read_text(
                std::path::Path::new(path),
                crate::io::MAX_JSON_BYTES,
                "JSON file",
            )
            .map_err(|e| format!("{flag}: {e}"))?,
            format!("`{path}`"),
        ),
        None => (text.to_string(), "its value".to_string()),
    };
    serde_json::from_str(&body).map_err(|e| format!("{flag}: {origin} is not valid JSON: {e}"))
}

/// Like [`json_arg`], and the value must be an object.
pub fn json_object_arg(flag: &str, text: &str) -> Result<Value, String> {
    let value = json_arg(flag, text)?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(format!("{flag} takes a JSON object, not `{value}`"))
    }
}
