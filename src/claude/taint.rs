//! Session taint: which servers' output is in a Claude Code session's
//! context, kept in one small file per session so that the separate hook
//! processes of one session share it.
//!
//! The file is `STATE_DIR/<name>.taint`, its first line `mcppol taint 1`,
//! then one server id a line, each a JSON string. Every change appends
//! under an exclusive lock on the file; readers take a shared lock. A file
//! is created whole (written aside, then hard-linked into place, which
//! fails if another process created it first), so it never exists without
//! its first line. Anything else the hook finds (an empty or cut file, a
//! line that is not a JSON string, a file too large, a lock not granted in
//! time, a folder it cannot write) means the taint is unknown, and every
//! `tainted` test of the session fails closed. When an append fails, the
//! file is truncated to nothing so that the loss is seen, not hidden.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// The first line of every taint file.
pub const HEADER: &str = "mcppol taint 1";

/// The largest taint file read; a larger one is an unknown taint.
pub const MAX_TAINT_FILE_BYTES: u64 = 64 * 1024;

/// How long a hook waits for the file's lock before giving up (and
/// failing closed).
pub const LOCK_WAIT: Duration = Duration::from_secs(5);

/// The longest session id used as a file name as it is; longer ones, and
/// ids with other characters than ASCII letters, digits, `-` and `_`, are
/// hashed.
const MAX_PLAIN_ID: usize = 128;

/// Where the session taint files live.
#[derive(Debug, Clone)]
pub struct TaintStore {
    dir: PathBuf,
}

impl TaintStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        TaintStore { dir: dir.into() }
    }

    /// `$XDG_STATE_HOME/mcppol`, or `~/.local/state/mcppol`.
    pub fn default_dir() -> Result<PathBuf, String> {
        if let Some(state) = std::env::var_os("XDG_STATE_HOME") {
            let state = PathBuf::from(state);
            // The XDG spec ignores a relative value.
            if state.is_absolute() {
                return Ok(state.join("mcppol"));
            }
        }
        match std::env::var_os("HOME") {
            Some(home) if Path::new(&home).is_absolute() => {
                Ok(Path::new(&home).join(".local/state/mcppol"))
            }
            _ => Err(
                "no state folder: neither XDG_STATE_HOME nor HOME is an absolute path \
                 (give --state-dir)"
                    .to_string(),
            ),
        }
    }

    /// The file of one session.
    pub fn file(&self, session: &str) -> PathBuf {
        self.dir.join(format!("{}.taint", file_stem(session)))
    }

    /// The servers that taint `session`. Creates the session's file when
    /// it is missing, so that a folder the hook cannot write is found
    /// before the first taint is lost in it.
    pub fn read(&self, session: &str) -> Result<Vec<String>, String> {
        let path = self.file(session);
        let mut file = self.open(&path)?;
        lock(&file, false, &path)?;
        let result = read_servers(&mut file, &path);
        let _ = file.unlock();
        result
    }

    /// Adds `servers` to the session's taint (those not there yet).
    pub fn add(&self, session: &str, servers: &[&str]) -> Result<(), String> {
        let path = self.file(session);
        let mut file = self.open(&path)?;
        lock(&file, true, &path)?;
        let result = append_missing(&mut file, &path, servers);
        let _ = file.unlock();
        result
    }

    /// Removes the session's file (a missing one is fine).
    pub fn remove(&self, session: &str) -> Result<(), String> {
        let path = self.file(session);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("cannot remove `{}`: {e}", path.display())),
        }
    }

    /// Opens the session's file for reading and writing, creating it (with
    /// its first line) when missing.
    fn open(&self, path: &Path) -> Result<File, String> {
        let open = || OpenOptions::new().read(true).write(true).open(path);
        match open() {
            Ok(f) => return Ok(f),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot open `{}`: {e}", path.display())),
        }
        self.create(path)?;
        open().map_err(|e| format!("cannot open `{}`: {e}", path.display()))
    }

    /// Creates the file whole: written under a private name, then linked
    /// into place; if another process was first, its file stands.
    fn create(&self, path: &Path) -> Result<(), String> {
        create_private_dir(&self.dir)
            .map_err(|e| format!("cannot create `{}`: {e}", self.dir.display()))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let tmp = path.with_extension(format!("{}.{nanos}.new", std::process::id()));
        let written = (|| {
            let mut f = private_file_options().open(&tmp)?;
            f.write_all(format!("{HEADER}\n").as_bytes())?;
            f.sync_all()
        })();
        let linked = written.and_then(|()| match std::fs::hard_link(&tmp, path) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            other => other,
        });
        let _ = std::fs::remove_file(&tmp);
        linked.map_err(|e| format!("cannot create `{}`: {e}", path.display()))
    }
}

/// The file name for a session id: the id itself when it is short and
/// plain (Claude Code's ids are UUIDs), else a hash of it.
fn file_stem(session: &str) -> String {
    let plain = !session.is_empty()
        && session.len() <= MAX_PLAIN_ID
        && session
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if plain {
        format!("s-{session}")
    } else {
        let digest = Sha256::digest(session.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("h-{hex}")
    }
}

#[cfg(unix)]
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

pub(crate) fn private_file_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// Takes the file's lock, waiting at most [`LOCK_WAIT`].
fn lock(file: &File, exclusive: bool, path: &Path) -> Result<(), String> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        let attempt = if exclusive {
            file.try_lock()
        } else {
            file.try_lock_shared()
        };
        match attempt {
            Ok(()) => return Ok(()),
            Err(TryLockError::WouldBlock) if start.elapsed() < LOCK_WAIT => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            Err(TryLockError::WouldBlock) => {
                return Err(format!(
                    "`{}` stayed locked for {} s",
                    path.display(),
                    LOCK_WAIT.as_secs()
                ))
            }
            Err(TryLockError::Error(e)) => {
                return Err(format!("cannot lock `{}`: {e}", path.display()))
            }
        }
    }
}

/// Reads and checks the whole file.
fn read_servers(file: &mut File, path: &Path) -> Result<Vec<String>, String> {
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0))
        .and_then(|_| {
            Read::by_ref(file)
                .take(MAX_TAINT_FILE_BYTES + 1)
                .read_to_end(&mut bytes)
        })
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_TAINT_FILE_BYTES {
        return Err(format!(
            "`{}` is larger than {} KiB",
            path.display(),
            MAX_TAINT_FILE_BYTES / 1024
        ));
    }
    parse(&bytes).map_err(|why| format!("`{}` {why}", path.display()))
}

/// The servers of a taint file's text.
pub fn parse(bytes: &[u8]) -> Result<Vec<String>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "is not UTF-8".to_string())?;
    let Some(body) = text.strip_prefix(HEADER).and_then(|t| t.strip_prefix('\n')) else {
        return Err("does not start with its header line (cut short or damaged)".into());
    };
    if !body.is_empty() && !body.ends_with('\n') {
        return Err("ends in a cut line".into());
    }
    let mut servers = Vec::new();
    for (i, line) in body.lines().enumerate() {
        match serde_json::from_str::<String>(line) {
            Ok(s) => servers.push(s),
            Err(_) => return Err(format!("line {} is not a server id", i + 2)),
        }
    }
    Ok(servers)
}

fn append_missing(file: &mut File, path: &Path, servers: &[&str]) -> Result<(), String> {
    let known = read_servers(file, path)?;
    let mut lines = String::new();
    let mut added: Vec<&str> = Vec::new();
    for s in servers {
        if !known.iter().any(|k| k == s) && !added.contains(s) {
            added.push(s);
            lines.push_str(&serde_json::Value::String((*s).to_string()).to_string());
            lines.push('\n');
        }
    }
    if lines.is_empty() {
        return Ok(());
    }
    let written = file
        .seek(SeekFrom::End(0))
        .and_then(|end| {
            if end + lines.len() as u64 > MAX_TAINT_FILE_BYTES {
                Err(std::io::Error::other(format!(
                    "the taint would pass {} KiB",
                    MAX_TAINT_FILE_BYTES / 1024
                )))
            } else {
                Ok(())
            }
        })
        .and_then(|()| file.write_all(lines.as_bytes()))
        .and_then(|()| file.flush());
    if let Err(e) = written {
        // Make the loss visible: an empty file is an unknown taint.
        let poisoned = file.set_len(0).is_ok();
        return Err(format!(
            "cannot add {} to `{}`: {e}{}",
            added.join(", "),
            path.display(),
            if poisoned {
                "; the file was emptied, so the session's taint now reads as unknown"
            } else {
                ""
            }
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_become_safe_file_names() {
        assert_eq!(file_stem("0b6e-41_x"), "s-0b6e-41_x");
        for bad in ["../../etc/passwd", "a/b", "", "x y", "é"] {
            let stem = file_stem(bad);
            assert!(stem.starts_with("h-") && stem.len() == 66, "{bad}: {stem}");
        }
        assert!(file_stem(&"a".repeat(129)).starts_with("h-"));
        // A plain id cannot pass for a hashed one.
        let hashed = file_stem("x/y");
        assert_ne!(file_stem(&hashed[2..]), hashed);
    }

    #[test]
    fn add_read_remove() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaintStore::new(dir.path().join("state"));
        assert_eq!(store.read("s1").unwrap(), Vec::<String>::new());
        store.add("s1", &["github", "web"]).unwrap();
        store.add("s1", &["web", "a\"b\nc"]).unwrap();
        assert_eq!(store.read("s1").unwrap(), ["github", "web", "a\"b\nc"]);
        assert_eq!(store.read("s2").unwrap(), Vec::<String>::new());
        let text = std::fs::read_to_string(store.file("s1")).unwrap();
        assert_eq!(
            text,
            "mcppol taint 1\n\"github\"\n\"web\"\n\"a\\\"b\\nc\"\n"
        );
        store.remove("s1").unwrap();
        assert!(!store.file("s1").exists());
        store.remove("s1").unwrap();
    }

    #[test]
    fn damaged_files_are_unknown_taint() {
        assert_eq!(parse(b"mcppol taint 1\n").unwrap(), Vec::<String>::new());
        for bad in [
            &b""[..],
            b"mcppol taint 1",
            b"mcppol taint 1\n\"web",
            b"mcppol taint 1\nweb\n",
            b"mcppol taint 2\n",
            b"\xff",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        let store = TaintStore::new(dir.path());
        store.add("s", &["web"]).unwrap();
        std::fs::write(store.file("s"), "").unwrap();
        assert!(store.read("s").unwrap_err().contains("header"));
        // An emptied file stays unknown: adding does not repair it.
        assert!(store.add("s", &["x"]).is_err());
        std::fs::write(
            store.file("s"),
            format!("{HEADER}\n{}", "\"x\"\n".repeat(20_000)),
        )
        .unwrap();
        assert!(store.read("s").unwrap_err().contains("larger than"));
    }

    #[test]
    fn a_taint_that_would_pass_the_bound_empties_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaintStore::new(dir.path());
        let long = "x".repeat(40_000);
        store.add("s", &[&long]).unwrap();
        let err = store.add("s", &[&"y".repeat(40_000)]).unwrap_err();
        assert!(err.contains("emptied"), "{err}");
        assert!(store.read("s").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_that_cannot_be_written_is_unknown_taint() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("ro");
        std::fs::create_dir(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o500)).unwrap();
        let store = TaintStore::new(&state);
        // Root ignores permissions; only check where they apply.
        if std::fs::write(state.join("probe"), "").is_err() {
            assert!(store.read("s").is_err());
            assert!(store.add("s", &["web"]).is_err());
        }
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    }

    #[test]
    fn the_default_folder_follows_xdg() {
        // Only the shape: the environment is the process's own.
        if let Ok(dir) = TaintStore::default_dir() {
            assert!(dir.is_absolute() && dir.ends_with("mcppol"));
        }
    }
}
