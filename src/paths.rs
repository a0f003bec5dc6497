//! Path canonicalization for `inside` and `escapes`.
//!
//! In order: the value must be a string; Unicode NFC; a NUL, a backslash,
//! a control character, or white space at its start or end fails; a path
//! starting with `~` fails (an enforcement point whose host expands `~`
//! does so before asking); a relative path is placed against the request's
//! working folder, and fails without one (never against the root: a server
//! resolves it from its own folder, which the policy does not know); empty
//! and `.` segments are dropped, `..` removes the previous segment (and at
//! the top stays at `/`); trailing slashes do not count.
//!
//! With links resolved ([`Links`]), the part of the path that exists on
//! this machine is then read through its symbolic links, the root too, and
//! the path is inside only when both readings are: the lexical one (what a
//! server that normalizes first, as Node's `path.resolve` does, opens) and
//! the physical one (`..` after a link climbs from the link's target, as
//! the kernel reads it). Resolving can only narrow what is inside.

use std::path::{Component, Path, PathBuf};

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
    /// The path holds a control character (a tab, a line break, ...).
    #[error("it holds a control character")]
    Control,
    /// The path starts or ends with white space.
    #[error("it starts or ends with white space")]
    EdgeSpace,
    /// The path starts with `~`, which only the host can expand.
    #[error("it starts with `~`, which only the agent's host can expand")]
    Tilde,
    /// The path is relative and the request has no working folder.
    #[error("it is relative and the request has no working folder to place it against")]
    Relative,
    /// Its symbolic links could not be resolved (a loop, a permission
    /// error, a link that is not UTF-8, too many segments).
    #[error("its symbolic links could not be resolved")]
    Links,
}

pub use crate::model::{LinkResolver, Links};

/// How many segments (with those links add) a path may have when its links
/// are resolved: each is a system call.
const MAX_RESOLVED_SEGMENTS: usize = 4096;
/// How many links one path may pass through (Linux's own bound).
const MAX_LINKS: usize = 40;

/// The checks every path passes before it is placed, on its NFC form.
fn check(normalized: &str) -> Result<(), PathError> {
    if normalized.contains('\0') {
        return Err(PathError::Nul);
    }
    if normalized.contains('\\') {
        return Err(PathError::Backslash);
    }
    if normalized.chars().any(char::is_control) {
        return Err(PathError::Control);
    }
    let edge = |c: Option<char>| c.is_some_and(char::is_whitespace);
    if edge(normalized.chars().next()) || edge(normalized.chars().next_back()) {
        return Err(PathError::EdgeSpace);
    }
    if normalized.starts_with('~') {
        return Err(PathError::Tilde);
    }
    Ok(())
}

/// `path`'s segments after `base`'s, `..` and `.` applied lexically.
fn lexical(path: &str, base: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    if !path.starts_with('/') {
        segments.extend(base.split('/').filter(|s| !s.is_empty()));
    }
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            s => segments.push(s),
        }
    }
    let mut out = String::with_capacity(path.len() + base.len() + 1);
    for s in &segments {
        out.push('/');
        out.push_str(s);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

/// The canonical working folder, if `cwd` can be one (absolute, and a
/// path that passes the checks).
pub fn canonical_cwd(cwd: Option<&str>) -> Option<String> {
    let cwd: String = cwd?.nfc().collect();
    if !cwd.starts_with('/') || check(&cwd).is_err() {
        return None;
    }
    Some(lexical(&cwd, "/"))
}

/// The canonical form of `path`, a relative path placed against `cwd`
/// (the request's working folder, already canonical); without one a
/// relative path fails.
pub fn canonicalize(path: &str, cwd: Option<&str>) -> Result<String, PathError> {
    let normalized: String = path.nfc().collect();
    check(&normalized)?;
    let canonical = if normalized.starts_with('/') {
        lexical(&normalized, "/")
    } else {
        let cwd = cwd
            .filter(|c| c.starts_with('/'))
            .ok_or(PathError::Relative)?;
        lexical(&normalized, cwd)
    };
    // Trailing slashes and `..` do not count: `a /` and `a /b/..` end
    // with white space as surely as `a ` does.
    if canonical
        .chars()
        .next_back()
        .is_some_and(char::is_whitespace)
    {
        return Err(PathError::EdgeSpace);
    }
    Ok(canonical)
}

/// The canonical form of a root as written in a policy (a relative root is
/// taken from `/`; the checker warns about it).
pub fn canonical_root(root: &str) -> Result<String, PathError> {
    let normalized: String = root.nfc().collect();
    if normalized.contains('\0') {
        return Err(PathError::Nul);
    }
    if normalized.contains('\\') {
        return Err(PathError::Backslash);
    }
    Ok(lexical(&normalized, "/"))
}

/// Whether a canonical path lies within a canonical root (the root itself
/// counts).
pub fn is_within(path: &str, root: &str) -> bool {
    if root == "/" {
        return true;
    }
    path == root || (path.starts_with(root) && path.as_bytes().get(root.len()) == Some(&b'/'))
}

/// Whether `value` is a path inside `root` (canonical), placed against
/// `cwd` (canonical, or `None`), its links resolved as `links` says.
pub fn inside(value: &str, root: &str, cwd: Option<&str>, links: Links<'_>) -> bool {
    let lexically = match (inside_ascii(value, root), links) {
        (Some(false), _) => return false,
        (Some(true), Links::Off) => return true,
        (Some(true), _) => true,
        (None, _) => false,
    };
    let Ok(path) = canonicalize(value, cwd) else {
        return false;
    };
    if !lexically && !is_within(&path, root) {
        return false;
    }
    match links {
        Links::Off => true,
        Links::ThisMachine => {
            let Ok(root) = resolve_on_machine(root) else {
                return false;
            };
            // The physical reading: `value` itself, links before `..`.
            let written: String = value.nfc().collect();
            let absolute = match written.starts_with('/') {
                true => written,
                false => format!("{}/{written}", cwd.unwrap_or("/")),
            };
            [path.as_str(), absolute.as_str()]
                .iter()
                .all(|p| resolve_on_machine(p).is_ok_and(|r| is_within(&r, &root)))
        }
        Links::Host(resolver) => {
            let Some(root) = resolver.resolve(root) else {
                return false;
            };
            let root = lexical(&root, "/");
            resolver
                .resolve(&path)
                .is_some_and(|r| r.starts_with('/') && is_within(&lexical(&r, "/"), &root))
        }
    }
}

/// `absolute` read through this machine's symbolic links, as the kernel
/// does: segment by segment, a link's target put in its place (from `/`
/// when absolute), `..` climbing from where the links led. What does not
/// exist is kept as written. A loop, more than [`MAX_LINKS`] links, a
/// permission error or a link that is not UTF-8 fails.
pub fn resolve_on_machine(absolute: &str) -> Result<String, PathError> {
    // The segments still to walk, the next one last.
    let mut pending: Vec<String> = absolute
        .split('/')
        .rev()
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let mut here = PathBuf::from("/");
    let (mut links, mut walked) = (0, 0);
    while let Some(segment) = pending.pop() {
        walked += 1;
        if walked > MAX_RESOLVED_SEGMENTS {
            return Err(PathError::Links);
        }
        match segment.as_str() {
            "." => continue,
            ".." => {
                here.pop();
                continue;
            }
            _ => here.push(&segment),
        }
        match std::fs::symlink_metadata(&here) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(PathError::Links);
                }
                let target = std::fs::read_link(&here).map_err(|_| PathError::Links)?;
                let target = target.to_str().ok_or(PathError::Links)?.to_owned();
                here.pop();
                if target.starts_with('/') {
                    here = PathBuf::from("/");
                }
                pending.extend(
                    target
                        .split('/')
                        .rev()
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned),
                );
            }
            Ok(_) => {}
            Err(e) if is_absent(&e) => {}
            Err(_) => return Err(PathError::Links),
        }
    }
    path_text(&here)
}

/// Whether a metadata error means the path is not there (so is kept as
/// written), not that it cannot be looked at.
fn is_absent(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::NotFound || e.kind() == std::io::ErrorKind::NotADirectory
}

fn path_text(path: &Path) -> Result<String, PathError> {
    let mut out = String::new();
    for c in path.components() {
        if let Component::Normal(s) = c {
            out.push('/');
            out.push_str(s.to_str().ok_or(PathError::Links)?);
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    Ok(out)
}

/// [`inside`] for an absolute ASCII path, in one pass and without building
/// the canonical path: NFC leaves ASCII as it is, and the canonical path is
/// inside the root exactly when its segments begin with the root's. So the
/// pass keeps only how deep the path is so far and how many of its leading
/// segments are the root's (a `..` can only shorten that run, and a segment
/// lengthens it only when it follows the whole run). `None` for a path that
/// is relative or not ASCII (then [`canonicalize`] decides).
fn inside_ascii(value: &str, root: &str) -> Option<bool> {
    let root = root.as_bytes();
    // A canonical root is `/` or `/a/b`: its segments follow each `/`.
    let root_segments = root.iter().filter(|&&b| b == b'/').count() - usize::from(root == b"/");
    let bytes = value.as_bytes();
    if bytes.first() != Some(&b'/') {
        return None;
    }
    if bytes.contains(&b' ') {
        // Where white space ends the canonical path depends on the
        // segments after it: [`canonicalize`] decides.
        return None;
    }
    // The path's depth, how many of its leading segments match the root's,
    // and where in `root` the `/` before the next root segment is.
    let (mut depth, mut matched, mut at) = (0usize, 0usize, 0usize);
    let mut start = 0;
    for i in 0..=bytes.len() {
        match bytes.get(i) {
            Some(0..=0x1f | 0x7f | b'\\') => return Some(false),
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

    fn inside_lexically(path: &str, cwd: Option<&str>) -> bool {
        inside(path, ROOT, cwd, Links::Off)
    }

    #[test]
    fn the_contract_examples() {
        let cwd = Some(ROOT);
        for p in [
            "/srv/sandbox",
            "/srv/sandbox/a/../b",
            "a/b",
            "./x",
            "/srv/sandbox/",
        ] {
            assert!(inside_lexically(p, cwd), "{p} should be inside");
        }
        for p in [
            "/srv/sandboxed",
            "/srv/sandbox/../x",
            "../x",
            "/etc/passwd",
            "a\\b",
            "x\u{0}y",
            " /srv/sandbox/a",
            "/srv/sandbox/a ",
            "/srv/sandbox/a /",
            "/srv/sandbox/a /b/..",
            "/srv/sandbox/a\u{a0}",
            "\u{2003}/srv/sandbox/a",
            "/srv/sandbox/a\tb",
            "/srv/sandbox/a\nb",
            "/srv/sandbox/a\u{85}b",
            "~/x",
            "~",
        ] {
            assert!(!inside_lexically(p, cwd), "{p:?} should escape");
        }
        // No working folder: nothing relative can be placed.
        for p in ["a/b", "./x", "~/x", "x"] {
            assert!(!inside_lexically(p, None), "{p} should escape");
        }
        assert!(inside_lexically("/srv/sandbox/a", None));
        // Placed against the working folder, never the root.
        assert!(!inside_lexically("src/main.rs", Some("/srv")));
        assert!(inside_lexically("sandbox/x", Some("/srv")));
    }

    #[test]
    fn errors_are_named() {
        let cwd = Some(ROOT);
        assert_eq!(canonicalize("a\\b", cwd), Err(PathError::Backslash));
        assert_eq!(canonicalize("a\0b", cwd), Err(PathError::Nul));
        assert_eq!(canonicalize("a\tb", cwd), Err(PathError::Control));
        assert_eq!(canonicalize(" /a", cwd), Err(PathError::EdgeSpace));
        assert_eq!(canonicalize("~/a", cwd), Err(PathError::Tilde));
        assert_eq!(canonicalize("a", None), Err(PathError::Relative));
        assert_eq!(canonicalize("a", Some("rel")), Err(PathError::Relative));
    }

    #[test]
    fn dotdot_stops_at_the_top_and_nfc_applies() {
        assert_eq!(canonicalize("/../../etc", None), Ok("/etc".to_string()));
        assert_eq!(canonicalize("/..", None), Ok("/".to_string()));
        assert_eq!(canonicalize("../../..", Some("/a")), Ok("/".to_string()));
        assert_eq!(
            canonicalize("e\u{301}", Some(ROOT)),
            Ok("/srv/sandbox/\u{e9}".to_string())
        );
        let root_nfc = canonical_root("/caf\u{e9}").unwrap_or_default();
        assert!(inside("/cafe\u{301}/x", &root_nfc, None, Links::Off));
    }

    #[test]
    fn root_slash_holds_everything_and_cwd_is_canonical() {
        assert!(inside("/etc/passwd", "/", None, Links::Off));
        assert_eq!(
            canonical_root("srv//sandbox/"),
            Ok("/srv/sandbox".to_string())
        );
        assert_eq!(canonical_cwd(Some("/a//b/../c/")), Some("/a/c".to_string()));
        assert_eq!(canonical_cwd(Some("a")), None);
        assert_eq!(canonical_cwd(Some("/a\tb")), None);
        assert_eq!(canonical_cwd(None), None);
    }

    /// The absolute ASCII path without allocating agrees with
    /// canonicalizing.
    #[test]
    fn ascii_paths_agree_with_canonicalize() {
        let parts = [
            "",
            ".",
            "..",
            "a",
            "b",
            "srv",
            "sandbox",
            "sandboxed",
            "~",
            " ",
            "\t",
        ];
        let roots = ["/", "/srv", "/srv/sandbox", "/a/b"];
        let mut checked = 0;
        for x in parts {
            for y in parts {
                for z in parts {
                    for tail in ["", "/"] {
                        let path = format!("/{x}/{y}/{z}{tail}");
                        for root in roots {
                            let slow = canonicalize(&path, None).is_ok_and(|p| is_within(&p, root));
                            match inside_ascii(&path, root) {
                                Some(fast) => assert_eq!(fast, slow, "{path:?} in {root}"),
                                None => assert!(path.contains(' '), "{path:?}"),
                            }
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 10_000);
        assert_eq!(inside_ascii("/srv/sandbox/a\\b", ROOT), Some(false));
        assert_eq!(inside_ascii("/srv/sandbox/\u{e9}", ROOT), None);
        assert_eq!(inside_ascii("srv/sandbox", ROOT), None);
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
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["", ".", "..", "a", "srv", "sandbox", "sandboxed", "b\\c", "~", "a b"]),
                0..24,
            ),
            root in proptest::sample::select(vec!["/", "/srv", "/srv/sandbox", "/a/a", "/a"]),
        ) {
            let path = format!("/{}", parts.join("/"));
            let slow = canonicalize(&path, None).is_ok_and(|p| is_within(&p, root));
            match inside_ascii(&path, root) {
                Some(fast) => proptest::prop_assert_eq!(fast, slow, "{} in {}", path, root),
                None => proptest::prop_assert!(path.contains(' ')),
            }
        }
    }

    #[cfg(unix)]
    #[test]
    fn links_that_leave_the_root_escape() {
        let dir = tempfile::tempdir().unwrap();
        let base = canonical_root(dir.path().to_str().unwrap()).unwrap();
        let base = resolve_on_machine(&base).unwrap();
        let root = format!("{base}/sandbox");
        std::fs::create_dir_all(format!("{root}/real")).unwrap();
        std::fs::create_dir_all(format!("{base}/outside")).unwrap();
        std::os::unix::fs::symlink(format!("{base}/outside"), format!("{root}/link")).unwrap();
        std::os::unix::fs::symlink("real", format!("{root}/rel")).unwrap();
        std::os::unix::fs::symlink("loop", format!("{root}/loop")).unwrap();
        let cwd = Some(root.as_str());
        let on = |p: &str| inside(p, &root, cwd, Links::ThisMachine);
        // Lexically inside, but the link leads out.
        assert!(inside(
            &format!("{root}/link/secret.txt"),
            &root,
            cwd,
            Links::Off
        ));
        assert!(!on(&format!("{root}/link/secret.txt")));
        assert!(!on("link/secret.txt"));
        assert!(!on("link"));
        // A link that stays inside, and paths that do not exist yet.
        assert!(on("rel/x"));
        assert!(on("new/deeper/file"));
        assert!(on(&root));
        // `..` after a link climbs from its target: `link/..` is `base`,
        // so `link/../x` is `base/x`, though it reads as `root/x`.
        assert!(inside("link/../x", &root, cwd, Links::Off));
        assert!(!on("link/../x"));
        assert!(on("link/../sandbox/real"));
        // A loop fails.
        assert!(!on("loop/x"));
        assert_eq!(
            resolve_on_machine(&format!("{root}/loop")),
            Err(PathError::Links)
        );
        // A root that is itself a link (macOS's /tmp) is read through it
        // too; a path must be inside it both as written and as read.
        let alias = format!("{base}/alias");
        std::os::unix::fs::symlink(&root, &alias).unwrap();
        assert!(inside(
            &format!("{alias}/real/x"),
            &alias,
            None,
            Links::ThisMachine
        ));
        assert!(!inside(
            &format!("{root}/real/x"),
            &alias,
            None,
            Links::ThisMachine
        ));
        assert!(!inside(
            &format!("{alias}/link/x"),
            &alias,
            None,
            Links::ThisMachine
        ));
    }

    #[test]
    fn a_host_resolver_is_asked() {
        struct Moved;
        impl LinkResolver for Moved {
            fn resolve(&self, path: &str) -> Option<String> {
                match path.strip_prefix("/srv/sandbox/link") {
                    Some(rest) => Some(format!("/etc{rest}")),
                    None if path.contains("fail") => None,
                    None => Some(path.to_owned()),
                }
            }
        }
        let host = Links::Host(&Moved);
        assert!(!inside("/srv/sandbox/link/passwd", ROOT, None, host));
        assert!(!inside("/srv/sandbox/fail", ROOT, None, host));
        assert!(inside("/srv/sandbox/ok", ROOT, None, host));
    }
}
