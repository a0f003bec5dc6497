//! Lexical path canonicalization for `inside` and `escapes`.
//!
//! Nothing touches the file system. In order: the value must be a string;
//! Unicode NFC; a NUL or a backslash fails; a relative path is joined to the
//! root; empty and `.` segments are dropped, `..` removes the previous
//! segment (and at the top stays at `/`); trailing slashes do not count.
//! `~` is not expanded.

use unicode_normalization::UnicodeNormalization;

/// Why a path has no canonical form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path holds a NUL character.
    #[error("it holds a NUL character")]
    Nul,
    /// The path holds a backslash.
    #[error("it holds a backslash")]
    Backslash,
}

/// The canonical form of `path`, relative paths joined to `root` (which must
/// already be canonical).
pub fn canonicalize(path: &str, root: &str) -> Result<String, PathError> {
    let normalized: String = path.nfc().collect();
    if normalized.contains('\0') {
        return Err(PathError::Nul);
    }
    if normalized.contains('\\') {
        return Err(PathError::Backslash);
    }
    let mut segments: Vec<&str> = Vec::new();
    if !normalized.starts_with('/') {
        segments.extend(root.split('/').filter(|s| !s.is_empty()));
    }
    for segment in normalized.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    let mut out = String::with_capacity(normalized.len() + root.len() + 1);
    for s in &segments {
        out.push('/');
        out.push_str(s);
    }
    if out.is_empty() {
        out.push('/');
    }
    Ok(out)
}

/// The canonical form of a root as written in a policy (a relative root is
/// taken from `/`).
pub fn canonical_root(root: &str) -> Result<String, PathError> {
    canonicalize(root, "/")
}

/// Whether a canonical path lies within a canonical root (the root itself
/// counts).
pub fn is_within(path: &str, root: &str) -> bool {
    if root == "/" {
        return true;
    }
    path == root || (path.starts_with(root) && path.as_bytes().get(root.len()) == Some(&b'/'))
}

/// Whether `value` is a string path inside `root` (canonical).
pub fn inside(value: &str, root: &str) -> bool {
    match inside_ascii(value, root) {
        Some(inside) => inside,
        None => canonicalize(value, root).is_ok_and(|p| is_within(&p, root)),
    }
}

/// [`inside`] for an ASCII path, in one pass and without building the
/// canonical path: NFC leaves ASCII as it is, and the canonical path is
/// inside the root exactly when its segments begin with the root's. So the
/// pass keeps only how deep the path is so far and how many of its leading
/// segments are the root's (a `..` can only shorten that run, and a segment
/// lengthens it only when it follows the whole run). `None` for a path that
/// is not ASCII (then [`canonicalize`] decides).
fn inside_ascii(value: &str, root: &str) -> Option<bool> {
    let root = root.as_bytes();
    // A canonical root is `/` or `/a/b`: its segments follow each `/`.
    let root_segments = root.iter().filter(|&&b| b == b'/').count() - usize::from(root == b"/");
    let bytes = value.as_bytes();
    // The path's depth, how many of its leading segments match the root's,
    // and where in `root` the `/` before the next root segment is.
    let (mut depth, mut matched, mut at) = if bytes.first() == Some(&b'/') {
        (0, 0, 0)
    } else {
        (root_segments, root_segments, root.len())
    };
    let mut start = 0;
    for i in 0..=bytes.len() {
        match bytes.get(i) {
            Some(0 | b'\\') => return Some(false),
            Some(b) if !b.is_ascii() => return None,
            Some(b'/') | None => {}
            Some(_) => continue,
        }
        let segment = bytes.get(start..i).unwrap_or_default();
        start = i + 1;
        match segment {
            b"" | b"." => {}
            b".." => {
                depth = depth.saturating_sub(1);
                if matched > depth {
                    matched = depth;
                    at = root.get(..at)?.iter().rposition(|&b| b == b'/')?;
                }
            }
            s => {
                if matched == depth && matched < root_segments {
                    let rest = root.get(at + 1..)?;
                    let len = rest.iter().position(|&b| b == b'/').unwrap_or(rest.len());
                    if rest.get(..len) == Some(s) {
                        matched += 1;
                        at += 1 + len;
                    }
                }
                depth += 1;
            }
        }
    }
    Some(matched == root_segments)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "/srv/sandbox";

    #[test]
    fn the_contract_examples_inside() {
        for p in [
            "/srv/sandbox",
            "/srv/sandbox/a/../b",
            "a/b",
            "./x",
            "/srv/sandbox/",
        ] {
            assert!(inside(p, ROOT), "{p} should be inside");
        }
    }

    #[test]
    fn the_contract_examples_escape() {
        for p in [
            "/srv/sandboxed",
            "/srv/sandbox/../x",
            "../x",
            "/etc/passwd",
            "a\\b",
            "x\u{0}y",
        ] {
            assert!(!inside(p, ROOT), "{p} should escape");
        }
    }

    #[test]
    fn dotdot_stops_at_the_top() {
        assert_eq!(canonicalize("/../../etc", ROOT), Ok("/etc".to_string()));
        assert_eq!(canonicalize("/..", ROOT), Ok("/".to_string()));
    }

    #[test]
    fn tilde_is_not_expanded_and_nfc_applies() {
        assert_eq!(
            canonicalize("~/x", ROOT),
            Ok("/srv/sandbox/~/x".to_string())
        );
        let decomposed = "/srv/sandbox/e\u{301}";
        assert_eq!(
            canonicalize(decomposed, ROOT),
            Ok("/srv/sandbox/\u{e9}".to_string())
        );
        let root_nfc = canonical_root("/caf\u{e9}").unwrap_or_default();
        assert!(inside("/cafe\u{301}/x", &root_nfc));
    }

    #[test]
    fn root_slash_holds_everything() {
        assert!(inside("/etc/passwd", "/"));
        assert_eq!(
            canonical_root("srv//sandbox/"),
            Ok("/srv/sandbox".to_string())
        );
    }

    /// The ASCII path without allocating agrees with canonicalizing.
    #[test]
    fn ascii_paths_agree_with_canonicalize() {
        let parts = ["", ".", "..", "a", "b", "srv", "sandbox", "sandboxed", "~"];
        let roots = ["/", "/srv", "/srv/sandbox", "/a/b"];
        let mut checked = 0;
        for lead in ["", "/"] {
            for x in parts {
                for y in parts {
                    for z in parts {
                        for tail in ["", "/"] {
                            let path = format!("{lead}{x}/{y}/{z}{tail}");
                            for root in roots {
                                let slow =
                                    canonicalize(&path, root).is_ok_and(|p| is_within(&p, root));
                                assert_eq!(
                                    inside_ascii(&path, root),
                                    Some(slow),
                                    "{path} in {root}"
                                );
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 10_000);
        assert_eq!(inside_ascii("/srv/sandbox/a\\b", ROOT), Some(false));
        assert_eq!(inside_ascii("/srv/sandbox/\u{e9}", ROOT), None);
        // No bound on the depth: the pass keeps counts, not segments.
        let deep = "/srv/sandbox".to_string() + &"/a".repeat(40);
        assert_eq!(inside_ascii(&deep, ROOT), Some(true));
        let out = deep.clone() + &"/..".repeat(41);
        assert_eq!(inside_ascii(&out, ROOT), Some(false));
        assert_eq!(inside_ascii(&(out + "/../srv/sandbox"), ROOT), Some(true));
    }

    proptest::proptest! {
        /// Longer paths than the exhaustive test's, with runs of `..` that
        /// climb out of the root and back in: the one pass agrees with
        /// canonicalizing.
        #[test]
        fn ascii_paths_of_any_depth_agree_with_canonicalize(
            lead in proptest::bool::ANY,
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["", ".", "..", "a", "srv", "sandbox", "sandboxed", "b\\c", "~"]),
                0..24,
            ),
            root in proptest::sample::select(vec!["/", "/srv", "/srv/sandbox", "/a/a", "/a"]),
        ) {
            let path = format!("{}{}", if lead { "/" } else { "" }, parts.join("/"));
            let slow = canonicalize(&path, root).is_ok_and(|p| is_within(&p, root));
            proptest::prop_assert_eq!(inside_ascii(&path, root), Some(slow), "{} in {}", path, root);
        }
    }

    #[test]
    fn errors_are_named() {
        assert_eq!(canonicalize("a\\b", ROOT), Err(PathError::Backslash));
        assert_eq!(canonicalize("a\0b", ROOT), Err(PathError::Nul));
    }
}
