//! Reading the files a user names: policy files, test files, JSON given
//! with `@FILE`, lock files, tool listings, request files and standard
//! input. Every read goes through here, so every one is bounded and only
//! regular files are read.
//!
//! A path that names a folder, a FIFO, a socket or a device (`/dev/zero`,
//! `/dev/stdin`, a link to one) is refused before it is opened, and again
//! if the file opened is not a regular file (a swap between the look and
//! the open does not help; on Unix the open does not block on a FIFO
//! either). However large the metadata says the file is, no more than the
//! limit plus one byte is ever read.

use std::fs::{File, Metadata};
use std::io::Read;
use std::path::Path;

/// The most a JSON input file may have: `@FILE` arguments, tool
/// definitions, lock files and tool listings.
pub const MAX_JSON_BYTES: u64 = 16 * 1024 * 1024;

/// The most a policy test file (`*.mcppoltest`) may have.
#[cfg(feature = "cli")]
pub const MAX_TEST_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// What kind of thing is at a path, for the message that refuses it.
fn kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
    }
    "not a regular file"
}

fn not_regular(path: &Path, what: &str, meta: &Metadata) -> String {
    format!(
        "`{}` is {}, not a regular file: give the path of the {what} itself",
        path.display(),
        kind(meta)
    )
}

fn too_large(path: &Path, what: &str, limit: u64) -> String {
    format!(
        "`{}` is more than {limit} bytes, the most a {what} may have: \
         give a smaller file",
        path.display()
    )
}

#[cfg(unix)]
fn open(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // Non-blocking, so that a FIFO swapped in after the look does not
    // block the open; a regular file reads the same either way.
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

#[cfg(not(unix))]
fn open(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

/// Reads at most `limit` bytes of the regular file at `path`. `what` names
/// the file in messages ("policy file", "lock file"). Errors name the
/// file, what is wrong and the fix.
pub fn read_bounded(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>, String> {
    let cannot = |e: std::io::Error| format!("cannot read `{}`: {e}", path.display());
    let meta = std::fs::metadata(path).map_err(cannot)?;
    if !meta.is_file() {
        return Err(not_regular(path, what, &meta));
    }
    if meta.len() > limit {
        return Err(too_large(path, what, limit));
    }
    let file = open(path).map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(not_regular(path, what, &meta));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len().min(limit)).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(path, what, limit));
    }
    Ok(bytes)
}

/// Like [`read_bounded`], and the text must be UTF-8.
pub fn read_text(path: &Path, limit: u64, what: &str) -> Result<String, String> {
    let bytes = read_bounded(path, limit, what)?;
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "`{}` is not UTF-8 text ({e}): save the {what} as UTF-8",
            path.display()
        )
    })
}

/// Reads at most `limit` bytes of UTF-8 text from `reader` (standard
/// input); `origin` names it in messages.
#[cfg(feature = "cli")]
pub fn read_text_from(mut reader: impl Read, limit: u64, origin: &str) -> Result<String, String> {
    let mut bytes = Vec::new();
    (&mut reader)
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {origin}: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(format!(
            "{origin} has more than {limit} bytes, the most it may have"
        ));
    }
    String::from_utf8(bytes).map_err(|e| format!("{origin} is not UTF-8 text: {e}"))
}

/// Reads standard input, bounded.
#[cfg(feature = "cli")]
pub fn read_stdin(limit: u64) -> Result<String, String> {
    read_text_from(std::io::stdin().lock(), limit, "standard input")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_regular_file_up_to_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        std::fs::write(&path, "0123456789").unwrap();
        assert_eq!(read_bounded(&path, 10, "file").unwrap(), b"0123456789");
        let err = read_bounded(&path, 9, "JSON file").unwrap_err();
        assert!(err.contains("more than 9 bytes"), "{err}");
        assert!(err.contains("a.json"), "{err}");
    }

    #[test]
    fn refuses_folders() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_bounded(dir.path(), 10, "policy file").unwrap_err();
        assert!(err.contains("is a folder"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn refuses_devices_and_links_to_them_whatever_their_size() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("zero.mcppol");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        for path in [Path::new("/dev/zero"), link.as_path()] {
            let err = read_bounded(path, 1 << 30, "policy file").unwrap_err();
            assert!(err.contains("is a device"), "{err}");
        }
    }

    #[cfg(feature = "cli")]
    #[test]
    fn a_reader_is_bounded_too() {
        let endless = std::io::repeat(b'a');
        let err = read_text_from(endless, 1000, "standard input").unwrap_err();
        assert!(err.contains("more than 1000 bytes"), "{err}");
        let text = read_text_from(&b"{}"[..], 1000, "standard input").unwrap();
        assert_eq!(text, "{}");
    }

    #[test]
    fn not_utf8_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.mcppol");
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        let err = read_text(&path, 10, "policy file").unwrap_err();
        assert!(err.contains("bad.mcppol") && err.contains("UTF-8"), "{err}");
    }
}
