//! Path arguments placed as Claude Code places them before a tool runs.
//!
//! Claude Code hands a built-in tool's `tool_input` to the hook as the
//! model wrote it, and only then resolves its paths: it trims white space
//! from both ends (JavaScript's `trim`), reads an empty path as the
//! session's folder, expands `~` and a leading `~/` to the home folder, and
//! resolves a relative path against the session's `cwd`. A policy that saw
//! the raw text would decide on another path than the tool opens
//! (`Grep path:"~/.aws"` is not `$CWD/~/.aws`), so the hook rewrites each
//! path argument of a built-in tool to the path the tool will use before
//! the policy sees it. A relative path is joined to the event's `cwd`
//! (which the hook also passes as the request's working folder); with a
//! `cwd` that is not absolute it cannot be placed, and the call fails
//! closed.

use std::borrow::Cow;

use serde_json::Value;

/// The built-in tools that take a path, and the argument that holds it.
pub const PATH_ARGUMENTS: &[(&str, &str)] = &[
    ("Read", "file_path"),
    ("Write", "file_path"),
    ("Edit", "file_path"),
    ("MultiEdit", "file_path"),
    ("NotebookEdit", "notebook_path"),
    // Older releases.
    ("NotebookRead", "notebook_path"),
    ("LS", "path"),
    ("Grep", "path"),
    ("Glob", "path"),
];

/// The built-in tools that write the file their path names.
pub const WRITE_TOOLS: &[&str] = &["Write", "Edit", "MultiEdit", "NotebookEdit"];

/// The argument that holds the path of built-in tool `tool`, if it takes
/// one.
pub fn path_argument(tool: &str) -> Option<&'static str> {
    PATH_ARGUMENTS
        .iter()
        .find(|(t, _)| *t == tool)
        .map(|(_, arg)| *arg)
}

/// Whether JavaScript's `String.prototype.trim` removes `c`: its
/// `WhiteSpace` and `LineTerminator` characters.
fn js_space(c: char) -> bool {
    matches!(
        c,
        '\u{9}'..='\u{d}'
            | ' '
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
            | '\u{feff}'
    )
}

/// One path as Claude Code places it: trimmed, an empty one as `cwd`, `~`
/// and `~/...` under `home`, a relative one under `cwd` (`..` is left to
/// the engine's canonicalization). `home` is
/// `None` when the hook knows no home folder (no absolute `HOME`): a path
/// that needs it cannot be placed, and the call fails closed.
pub fn place_path<'a>(
    path: &'a str,
    cwd: &str,
    home: Option<&str>,
) -> Result<Cow<'a, str>, String> {
    let trimmed = path.trim_matches(js_space);
    if trimmed.is_empty() {
        return Ok(Cow::Owned(cwd.to_string()));
    }
    let rest = if trimmed == "~" {
        Some("")
    } else {
        trimmed.strip_prefix("~/")
    };
    let Some(rest) = rest else {
        if trimmed.starts_with('/') {
            return Ok(Cow::Borrowed(trimmed));
        }
        // Relative: from the session's folder, as the tool resolves it.
        if !cwd.starts_with('/') {
            return Err(format!(
                "the path `{}` is relative and the event's cwd `{}` is not an absolute path, so mcppol cannot tell which file it names",
                path.escape_debug(),
                cwd.escape_debug()
            ));
        }
        return Ok(Cow::Owned(format!(
            "{}/{trimmed}",
            cwd.trim_end_matches('/')
        )));
    };
    let Some(home) = home else {
        return Err(format!(
            "the path `{}` starts with `~`, which Claude Code expands to the home folder, and HOME is not an absolute path here, so mcppol cannot tell which file it names",
            path.escape_debug()
        ));
    };
    let home = home.trim_end_matches('/');
    Ok(Cow::Owned(if rest.is_empty() {
        if home.is_empty() {
            "/".to_string()
        } else {
            home.to_string()
        }
    } else {
        format!("{home}/{rest}")
    }))
}

/// The home folder Claude Code expands `~` to: `HOME`, when it is an
/// absolute path.
pub fn home_from_env() -> Option<String> {
    std::env::var("HOME").ok().filter(|h| h.starts_with('/'))
}

/// `input` with the path argument of built-in tool `tool` placed (see
/// [`place_path`]); unchanged for other tools and for a path argument that
/// is missing or not a string (the policy's path tests fail on those).
pub fn place_input<'a>(
    tool: &str,
    input: &'a Value,
    cwd: &str,
    home: Option<&str>,
) -> Result<Cow<'a, Value>, String> {
    match path_argument(tool) {
        Some(key) => place_key(tool, key, input, cwd, home),
        None => Ok(Cow::Borrowed(input)),
    }
}

/// `input` with its argument `key` (the path of tool `tool`) placed; see
/// [`place_input`].
pub fn place_key<'a>(
    tool: &str,
    key: &str,
    input: &'a Value,
    cwd: &str,
    home: Option<&str>,
) -> Result<Cow<'a, Value>, String> {
    let Some(Value::String(path)) = input.get(key) else {
        return Ok(Cow::Borrowed(input));
    };
    let placed = place_path(path, cwd, home).map_err(|e| format!("{tool} `{key}`: {e}"))?;
    if placed == path.as_str() {
        return Ok(Cow::Borrowed(input));
    }
    let mut out = input.clone();
    if let Some(map) = out.as_object_mut() {
        map.insert(key.to_string(), Value::String(placed.into_owned()));
    }
    Ok(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CWD: &str = "/home/dev/project";

    fn placed(p: &str, home: Option<&str>) -> Result<String, String> {
        place_path(p, CWD, home).map(Cow::into_owned)
    }

    #[test]
    fn paths_are_placed_as_claude_code_does() {
        let home = Some("/home/dev");
        assert_eq!(placed("~/.aws", home).unwrap(), "/home/dev/.aws");
        assert_eq!(placed("~", home).unwrap(), "/home/dev");
        assert_eq!(placed("  ~/x ", home).unwrap(), "/home/dev/x");
        assert_eq!(placed(" /etc", home).unwrap(), "/etc");
        assert_eq!(placed("\u{feff}\t/etc\n\u{3000}", home).unwrap(), "/etc");
        assert_eq!(placed("", home).unwrap(), CWD);
        assert_eq!(placed("   ", home).unwrap(), CWD);
        assert_eq!(
            placed("src/a.rs", home).unwrap(),
            "/home/dev/project/src/a.rs"
        );
        assert_eq!(placed(" ../x", home).unwrap(), "/home/dev/project/../x");
        // Only `~` and `~/`: `~user` and `~x` are names in the folder.
        assert_eq!(
            placed("~root/x", home).unwrap(),
            "/home/dev/project/~root/x"
        );
        assert_eq!(placed("a/~/b", home).unwrap(), "/home/dev/project/a/~/b");
        // A relative path and a cwd that is not absolute: unplaceable.
        assert!(place_path("src", "project", home).is_err());
        assert_eq!(place_path("/etc", "project", home).unwrap(), "/etc");
        assert_eq!(placed("~", Some("/")).unwrap(), "/");
        assert_eq!(placed("~/x", Some("/home/dev/")).unwrap(), "/home/dev/x");
    }

    #[test]
    fn without_a_home_a_tilde_path_fails() {
        for p in ["~", "~/x", " ~/.ssh"] {
            let e = placed(p, None).unwrap_err();
            assert!(e.contains("HOME"), "{e}");
        }
        assert_eq!(placed("/etc", None).unwrap(), "/etc");
    }

    #[test]
    fn only_the_path_argument_of_a_builtin_is_rewritten() {
        let home = Some("/home/dev");
        let input = json!({"pattern": "~/x", "path": " ~/.aws"});
        let out = place_input("Grep", &input, CWD, home).unwrap();
        assert_eq!(*out, json!({"pattern": "~/x", "path": "/home/dev/.aws"}));
        assert!(matches!(
            place_input("Bash", &input, CWD, home).unwrap(),
            Cow::Borrowed(_)
        ));
        let plain = json!({"file_path": "/home/dev/project/a"});
        assert!(matches!(
            place_input("Write", &plain, CWD, home).unwrap(),
            Cow::Borrowed(_)
        ));
        let number = json!({"notebook_path": 3});
        assert_eq!(
            *place_input("NotebookEdit", &number, CWD, home).unwrap(),
            number
        );
        let nb = json!({"notebook_path": "~/n.ipynb"});
        assert_eq!(
            place_input("NotebookEdit", &nb, CWD, home).unwrap()["notebook_path"],
            "/home/dev/n.ipynb"
        );
        assert!(place_input("Glob", &json!({"path": "~"}), CWD, None).is_err());
    }
}
