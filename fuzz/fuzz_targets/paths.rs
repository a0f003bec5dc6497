//! Lexical path canonicalization: the canonical form is absolute, has no
//! empty, `.` or `..` segment and no trailing slash, is a fixed point, and
//! `inside` agrees with canonicalize + `is_within`. A path inside a root
//! stays inside whatever the root's children are called.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcppol::fuzzing::{canonical_root, canonicalize, inside, is_within};

fuzz_target!(|input: (String, String)| {
    let (path, root) = input;
    let Ok(root) = canonical_root(&root) else {
        assert!(root.contains('\0') || root.contains('\\'));
        return;
    };
    assert_eq!(
        canonical_root(&root).as_deref(),
        Ok(root.as_str()),
        "root not a fixed point"
    );
    match canonicalize(&path, &root) {
        Ok(c) => {
            assert!(c.starts_with('/'), "{c:?}");
            assert!(c == "/" || !c.ends_with('/'), "{c:?}");
            for seg in c.split('/').skip(1) {
                assert!(
                    c == "/" || !(seg.is_empty() || seg == "." || seg == ".."),
                    "{c:?}"
                );
            }
            assert!(!c.contains('\0') && !c.contains('\\'));
            assert_eq!(
                canonicalize(&c, "/").as_deref(),
                Ok(c.as_str()),
                "not a fixed point"
            );
            assert_eq!(canonicalize(&c, &root).as_deref(), Ok(c.as_str()));
            assert_eq!(inside(&path, &root), is_within(&c, &root));
            // A relative path with no `..` never leaves its root.
            if !path.starts_with('/') && !path.split('/').any(|s| s == "..") {
                assert!(is_within(&c, &root), "{path:?} left {root:?} as {c:?}");
            }
            // Within means equal or below, never a sibling sharing a prefix.
            if is_within(&c, &root) && root != "/" {
                assert!(c == root || c.starts_with(&format!("{root}/")));
            }
        }
        Err(_) => {
            assert!(!inside(&path, &root));
        }
    }
});
