//! The files an enforcement point protects whatever its policy says: the
//! policy files it enforces, the `.mcppoltest` and lock files beside them,
//! and its own state folder. An agent that could write one of them could
//! rewrite the rules it is held to (one `Write` of `.claude/policy.mcppol`
//! and `rm -rf ~` goes from deny to allow), so every enforcement point
//! refuses such a write before any rule is read: `deny`, `source:
//! protected`, `reason: protected_policy`.
//!
//! A candidate path is compared as the file system will resolve it: made
//! absolute lexically (as Claude Code and Node do: `..` removes the
//! segment before it), then the longest part of it that exists is resolved
//! through its symbolic links (`std::fs::canonicalize`), and what does not
//! exist yet is appended. A path whose existing part cannot be resolved (a
//! loop, a dangling link, a permission error) counts as protected: the
//! check fails closed. On Unix an existing file is also compared by device
//! and inode, so a hard link to a protected file is protected too.

use std::path::{Component, Path, PathBuf};

/// The files protected beside a policy file, by how their names end: its
/// tests and mcppol's lock files (`mcppol.lock`, `tools.mcppol.lock`; not
/// every `.lock`, which would take in `Cargo.lock` when the policy lies in
/// a project's root).
pub const BESIDE_POLICY: &[&str] = &[".mcppoltest", "mcppol.lock"];

/// Whether `candidate` (an absolute path, lexically normal or not) is, or
/// lies inside, one of `protected` (canonical paths of files and folders).
/// A candidate that is not absolute, or whose existing part cannot be
/// resolved, is protected (fails closed). The proxy can use this with its
/// own list.
pub fn is_protected(protected: &[PathBuf], candidate: &Path) -> bool {
    match resolve(candidate) {
        Some(resolved) => protected.iter().any(|p| resolved.starts_with(p)),
        None => true,
    }
}

/// `path` made lexically normal: `.` and empty segments dropped, `..`
/// removing the segment before it (and staying at `/` at the top). `None`
/// for a relative path.
pub fn lexical(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(s) => out.push(s),
        }
    }
    Some(out)
}

/// Where `path` resolves to: lexically normal, its longest existing part
/// through `std::fs::canonicalize`, the rest appended. `None` when it is
/// not absolute or its existing part cannot be resolved.
pub fn resolve(path: &Path) -> Option<PathBuf> {
    let normal = lexical(path)?;
    let mut existing = normal.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        match std::fs::symlink_metadata(existing) {
            Ok(_) => {
                // It exists (maybe as a dangling link): resolve it, or fail.
                let mut out = std::fs::canonicalize(existing).ok()?;
                for name in rest.iter().rev() {
                    out.push(name);
                }
                return Some(out);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let name = existing.file_name()?;
                rest.push(name);
                existing = existing.parent()?;
            }
            Err(_) => return None,
        }
    }
}

/// The protected paths of one enforcement point.
#[derive(Debug, Clone, Default)]
pub struct Protected {
    /// Files and folders: each protects itself and what lies inside.
    paths: Vec<PathBuf>,
    /// Folders holding a policy file: their `.mcppoltest` and lock files
    /// are protected, those that exist now and those made later.
    policy_dirs: Vec<PathBuf>,
    /// The protected folders (as written and as resolved).
    folders: Vec<PathBuf>,
    /// Device and inode of the protected files that exist (Unix).
    #[cfg(unix)]
    inodes: Vec<(u64, u64)>,
    /// The names a relative string must hold to be looked up
    /// ([`Protected::named_in`]), made once, not on every call.
    names: std::sync::OnceLock<Vec<String>>,
}

impl Protected {
    /// Nothing protected yet.
    pub fn new() -> Self {
        Protected::default()
    }

    /// Protects a policy file, and the `.mcppoltest` and lock files of its
    /// folder. `policy` may be relative (to the current folder).
    pub fn policy_file(&mut self, policy: &Path) {
        let Some(abs) = absolute(policy) else {
            return;
        };
        self.add_path(&abs);
        if let Some(dir) = abs.parent() {
            for dir in [Some(dir.to_path_buf()), resolve(dir)]
                .into_iter()
                .flatten()
            {
                if let Ok(entries) = std::fs::read_dir(&dir) {
                    for entry in entries.flatten() {
                        let path = entry.path();
                        if beside_policy(&path) {
                            self.add_path(&path);
                        }
                    }
                }
                if !self.policy_dirs.contains(&dir) {
                    self.policy_dirs.push(dir);
                }
            }
        }
    }

    /// Protects one file (an audit file).
    pub fn file(&mut self, file: &Path) {
        if let Some(abs) = absolute(file) {
            self.add_path(&abs);
        }
    }

    /// Protects a folder (a state folder) and all it holds.
    pub fn folder(&mut self, dir: &Path) {
        if let Some(abs) = absolute(dir) {
            self.add_path(&abs);
            for p in [lexical(&abs), resolve(&abs)].into_iter().flatten() {
                if !self.folders.contains(&p) {
                    self.folders.push(p);
                    self.names = std::sync::OnceLock::new();
                }
            }
        }
    }

    fn add_path(&mut self, abs: &Path) {
        self.names = std::sync::OnceLock::new();
        for p in [lexical(abs), resolve(abs)].into_iter().flatten() {
            if !self.paths.contains(&p) {
                self.paths.push(p);
            }
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            if let Ok(m) = std::fs::metadata(abs) {
                if m.is_file() && !self.inodes.contains(&(m.dev(), m.ino())) {
                    self.inodes.push((m.dev(), m.ino()));
                }
            }
        }
    }

    /// Whether writing `candidate` (absolute) would write a protected file.
    pub fn covers(&self, candidate: &Path) -> bool {
        let Some(resolved) = resolve(candidate) else {
            return true;
        };
        let Some(normal) = lexical(candidate) else {
            return true;
        };
        if is_protected(&self.paths, &resolved) || self.paths.iter().any(|p| normal.starts_with(p))
        {
            return true;
        }
        let beside = |p: &Path| {
            p.parent()
                .is_some_and(|dir| self.policy_dirs.iter().any(|d| d == dir))
                && beside_policy(p)
        };
        if beside(&resolved) || beside(&normal) {
            return true;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            if let Ok(m) = std::fs::metadata(&resolved) {
                if self.inodes.contains(&(m.dev(), m.ino())) {
                    return true;
                }
            }
        }
        false
    }

    /// The words a shell command line is searched for: each protected
    /// file's name, and each protected folder's whole path (and, for a
    /// folder under `home`, its path from there, which `~/...` and
    /// `$HOME/...` spell). A substring test; docs/claude-code.md says what
    /// it does not catch.
    pub fn shell_words(&self, home: Option<&str>) -> Vec<String> {
        let mut words: Vec<String> = Vec::new();
        let mut add = |w: String| {
            if !w.is_empty() && w != "/" && !words.contains(&w) {
                words.push(w);
            }
        };
        for p in &self.paths {
            if self.folders.contains(p) {
                add(p.to_string_lossy().into_owned());
                if let Some(rest) = home.and_then(|h| p.strip_prefix(h).ok()) {
                    add(rest.to_string_lossy().into_owned());
                }
            } else if let Some(name) = p.file_name() {
                add(name.to_string_lossy().into_owned());
            }
        }
        words
    }
}

/// How many path-shaped strings of a call's arguments
/// [`Protected::named_in`] looks up (past it, the call is taken to name a
/// protected file: fails closed), and how long a string, and one of its
/// segments, may be to be read as a path.
const MAX_NAMED_STRINGS: usize = 1024;
const MAX_PATH_BYTES: usize = 4096;
const MAX_NAME_BYTES: usize = 255;

impl Protected {
    /// Whether any string in `args` (a tool call's arguments, at any depth)
    /// names a protected file: an absolute path, a `file:` URI, or a
    /// relative path from this process's folder (where a stdio server it
    /// started resolves one) that holds a protected file's name. Text that
    /// cannot be a path (control characters, longer than a path or a file
    /// name can be) is not read as one; nor is a relative string that holds
    /// no protected name (a link made to reach one gets past this).
    pub fn named_in(&self, args: &serde_json::Value) -> bool {
        if self.paths.is_empty() && self.policy_dirs.is_empty() {
            return false;
        }
        let names = self.names.get_or_init(|| {
            let mut names = self.shell_words(None);
            names.extend(BESIDE_POLICY.iter().map(|s| (*s).to_string()));
            names
        });
        let shaped = |s: &str| {
            let s = s.trim_start();
            s.starts_with('/')
                || s.starts_with("file:")
                || names.iter().any(|n| s.contains(n.as_str()))
        };
        let mut stack = vec![args];
        let mut seen = 0usize;
        while let Some(v) = stack.pop() {
            match v {
                serde_json::Value::String(s) if shaped(s) => {
                    seen += 1;
                    if seen > MAX_NAMED_STRINGS {
                        return true;
                    }
                    if let Some(path) = path_in(s) {
                        if absolute(&path).is_some_and(|abs| self.covers(&abs)) {
                            return true;
                        }
                    }
                }
                serde_json::Value::Array(items) => stack.extend(items),
                serde_json::Value::Object(map) => stack.extend(map.values()),
                _ => {}
            }
        }
        false
    }
}

/// The path a string argument names, if it can name one.
fn path_in(s: &str) -> Option<PathBuf> {
    let s = s.trim();
    if s.is_empty() || s.len() > MAX_PATH_BYTES || s.chars().any(char::is_control) {
        return None;
    }
    // A segment longer than a file name can be (NAME_MAX) names no file:
    // text, not a path (and looking it up would fail, not find one).
    if s.split('/').any(|segment| segment.len() > MAX_NAME_BYTES) {
        return None;
    }
    if let Some(rest) = s.strip_prefix("file:") {
        let rest = rest.strip_prefix("//localhost").unwrap_or(rest);
        let rest = rest.trim_start_matches('/');
        let decoded = percent_decoded(rest)?;
        return Some(PathBuf::from(format!("/{decoded}")));
    }
    Some(PathBuf::from(s))
}

/// `%XX` decoded, for a `file:` URI's path; `None` when that is not UTF-8.
fn percent_decoded(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Whether `path` is a `.mcppoltest` or mcppol lock file by its name.
fn beside_policy(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| BESIDE_POLICY.iter().any(|end| n.ends_with(end)))
}

fn absolute(path: &Path) -> Option<PathBuf> {
    std::path::absolute(path).ok().and_then(|p| lexical(&p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_paths() {
        let l = |p: &str| lexical(Path::new(p)).map(|p| p.display().to_string());
        assert_eq!(l("/a/./b/../c//d/"), Some("/a/c/d".into()));
        assert_eq!(l("/../../x"), Some("/x".into()));
        assert_eq!(l("a/b"), None);
    }

    #[test]
    fn the_policy_its_tests_and_the_state_folder_are_protected() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let claude = root.join(".claude");
        std::fs::create_dir(&claude).unwrap();
        let policy = claude.join("policy.mcppol");
        std::fs::write(&policy, "policy p {}").unwrap();
        std::fs::write(claude.join("policy.mcppoltest"), "").unwrap();
        let state = root.join("state");
        let mut p = Protected::new();
        p.policy_file(&policy);
        p.folder(&state);

        assert!(p.covers(&policy));
        assert!(p.covers(&claude.join("x/../policy.mcppol")));
        assert!(p.covers(&claude.join("policy.mcppoltest")));
        assert!(p.covers(&claude.join("new.mcppoltest")));
        assert!(p.covers(&claude.join("mcppol.lock")));
        assert!(p.covers(&claude.join("tools.mcppol.lock")));
        assert!(!p.covers(&claude.join("Cargo.lock")));
        assert!(p.covers(&state.join("s-1.taint")));
        assert!(p.covers(&state));
        assert!(p.covers(Path::new("relative/path")));
        assert!(!p.covers(&claude.join("settings.local.json")));
        assert!(!p.covers(&root.join("src/main.rs")));
        assert!(!p.covers(&root.join("statement")));
        assert!(is_protected(&p.paths, &policy));
        assert!(!is_protected(&p.paths, &root.join("a")));
        let words = p.shell_words(Some(&root.display().to_string()));
        assert!(words.contains(&"policy.mcppol".to_string()), "{words:?}");
        assert!(
            words.contains(&"policy.mcppoltest".to_string()),
            "{words:?}"
        );
        assert!(words.contains(&state.display().to_string()), "{words:?}");
        assert!(words.contains(&"state".to_string()), "{words:?}");
        assert!(!words.contains(&".claude".to_string()), "{words:?}");
    }

    #[cfg(unix)]
    #[test]
    fn links_to_protected_files_are_protected() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let policy = root.join("policy.mcppol");
        std::fs::write(&policy, "policy p {}").unwrap();
        let mut p = Protected::new();
        p.policy_file(&policy);
        let link = root.join("innocent.txt");
        std::os::unix::fs::symlink(&policy, &link).unwrap();
        assert!(p.covers(&link));
        let linked_dir = root.join("d");
        std::os::unix::fs::symlink(&root, &linked_dir).unwrap();
        assert!(p.covers(&linked_dir.join("policy.mcppol")));
        let hard = root.join("sub");
        std::fs::create_dir(&hard).unwrap();
        std::fs::hard_link(&policy, hard.join("h.txt")).unwrap();
        assert!(p.covers(&hard.join("h.txt")));
        // A dangling link fails closed: the write would create its target.
        let dangling = root.join("dangling");
        std::os::unix::fs::symlink(root.join("nowhere/x"), &dangling).unwrap();
        assert!(p.covers(&dangling));
        assert!(!p.covers(&root.join("other.txt")));
    }

    #[test]
    fn a_call_naming_a_protected_file_anywhere_in_its_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let policy = dir.path().join("p.mcppol");
        std::fs::write(&policy, "policy p {}").unwrap();
        let mut p = Protected::new();
        p.policy_file(&policy);
        let path = policy.to_str().unwrap();
        let uri = format!("file://{path}");
        let tests = dir.path().join("p.mcppoltest");
        for args in [
            serde_json::json!({"path": path}),
            serde_json::json!({"edits": [{"file": {"path": format!(" {path}")}}]}),
            serde_json::json!({"uri": uri}),
            serde_json::json!({"to": tests.to_str().unwrap()}),
        ] {
            assert!(p.named_in(&args), "{args}");
        }
        for args in [
            serde_json::json!({"path": dir.path().join("other.txt").to_str().unwrap()}),
            serde_json::json!({"content": format!("{path}\nwritten into a file")}),
            serde_json::json!({"n": 1, "content": "x".repeat(10_000)}),
            serde_json::json!({"content": "A".repeat(2_100), "path": "/etc/cron.d/evil"}),
        ] {
            assert!(!p.named_in(&args), "{args}");
        }
        // Nothing protected: nothing named.
        assert!(!Protected::new().named_in(&serde_json::json!({"path": path})));
    }
}
