//! Path canonicalization: the canonical form is absolute, has no empty,
//! `.` or `..` segment and no trailing slash, is a fixed point, and
//! `inside` agrees with canonicalize + `is_within`. A relative path is
//! placed against the working folder and never inside without one; a path
//! with a control character, white space at an edge or a leading `~` is
//! never inside. With links resolved (over a small tree of links made once,
//! some pointing out of the root), `inside` only narrows: inside with links
//! resolved is inside without.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcppol::fuzzing::{
    canonical_cwd, canonical_root, canonicalize, inside, is_within, resolve_on_machine, Links,
};

/// A folder with `sandbox/{real, in -> real, out -> ../outside, up -> ..,
/// loop -> loop, abs -> /etc}`; its resolved path.
fn tree() -> Option<&'static str> {
    static TREE: OnceLock<Option<String>> = OnceLock::new();
    TREE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("mcppol-fuzz-paths-{}", std::process::id()));
        let sandbox = dir.join("sandbox");
        std::fs::create_dir_all(sandbox.join("real")).ok()?;
        std::fs::create_dir_all(dir.join("outside")).ok()?;
        for (name, target) in [
            ("in", "real"),
            ("out", "../outside"),
            ("up", ".."),
            ("loop", "loop"),
            ("abs", "/etc"),
        ] {
            let _ = std::os::unix::fs::symlink(target, sandbox.join(name));
        }
        resolve_on_machine(dir.to_str()?).ok()
    })
    .as_deref()
}

fuzz_target!(|input: (String, String, Option<String>, bool)| {
    let (path, root, cwd, under_tree) = input;
    let Ok(mut root) = canonical_root(&root) else {
        assert!(root.contains('\0') || root.contains('\\'));
        return;
    };
    assert_eq!(
        canonical_root(&root).as_deref(),
        Ok(root.as_str()),
        "root not a fixed point"
    );
    let mut cwd = canonical_cwd(cwd.as_deref());
    if under_tree {
        let Some(base) = tree() else { return };
        root = format!("{base}/sandbox");
        cwd = Some(root.clone());
    }
    let cwd = cwd.as_deref();
    let first = path.chars().next();
    let last = path.chars().next_back();
    let refused = path.chars().any(char::is_control)
        || first.is_some_and(char::is_whitespace)
        || last.is_some_and(char::is_whitespace)
        || path.starts_with('~')
        || path.contains('\\');
    match canonicalize(&path, cwd) {
        Ok(c) => {
            assert!(!refused, "{path:?} was placed as {c:?}");
            assert!(path.starts_with('/') || cwd.is_some(), "{path:?} placed without a cwd");
            assert!(c.starts_with('/'), "{c:?}");
            assert!(c == "/" || !c.ends_with('/'), "{c:?}");
            for seg in c.split('/').skip(1) {
                assert!(
                    c == "/" || !(seg.is_empty() || seg == "." || seg == ".."),
                    "{c:?}"
                );
            }
            assert!(!c.contains('\0') && !c.contains('\\'));
            assert_eq!(canonicalize(&c, None).as_deref(), Ok(c.as_str()), "not a fixed point");
            assert_eq!(inside(&path, &root, cwd, Links::Off), is_within(&c, &root));
            // Within means equal or below, never a sibling sharing a prefix.
            if is_within(&c, &root) && root != "/" {
                assert!(c == root || c.starts_with(&format!("{root}/")));
            }
        }
        Err(_) => assert!(!inside(&path, &root, cwd, Links::Off)),
    }
    if under_tree && inside(&path, &root, cwd, Links::ThisMachine) {
        assert!(inside(&path, &root, cwd, Links::Off), "resolving widened {path:?}");
        // What the kernel would open is inside too.
        let Ok(c) = canonicalize(&path, cwd) else {
            panic!("{path:?} inside but not canonical")
        };
        let resolved = resolve_on_machine(&c).unwrap_or_default();
        assert!(is_within(&resolved, &root), "{path:?} reads as {resolved:?}");
    }
});
