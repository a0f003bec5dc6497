//! Resource URI normalization: a normalized URI is a fixed point, holds no
//! white space, control or non-ASCII character (what WHATWG and Python
//! parsers would drop or read otherwise), no `.` or `..` segment in an
//! absolute path, and a `file` URI is `file:///...` with one leading slash.
//! A URI with white space or a control character anywhere is refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcppol::fuzzing::normalize_uri;

fuzz_target!(|uri: String| {
    let normalized = normalize_uri(&uri);
    if uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        assert!(normalized.is_err(), "{uri:?} was accepted");
    }
    let Ok(n) = normalized else { return };
    assert!(n.is_ascii(), "{n:?}");
    assert!(!n.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()), "{n:?}");
    assert_eq!(normalize_uri(&n).as_deref(), Ok(&*n), "{uri:?} -> {n:?} is not a fixed point");
    if let Some(rest) = n.strip_prefix("file:") {
        let path = rest.split(['?', '#']).next().unwrap_or_default();
        assert!(path.starts_with("///") && !path.starts_with("////"), "{n:?}");
        assert!(!path.split('/').any(|s| s == "." || s == ".."), "{n:?}");
    }
});
