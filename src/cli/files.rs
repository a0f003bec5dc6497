//! The files a verb reads from its PATH arguments: a file as given, a
//! folder searched for files with one extension.

use std::path::{Path, PathBuf};

/// How deep below a named folder files are looked for.
const MAX_DEPTH: usize = 64;
/// The most files the paths of one command may hold.
const MAX_FILES: usize = 100_000;

/// Every file under `paths` with the given extension, in a stable order: a
/// folder is searched (sorted, recursively; links to folders are not
/// followed, so a link cycle cannot loop), a file is taken as it is,
/// whatever its extension. Whether each is a regular file is checked when
/// it is read.
pub fn under(paths: &[PathBuf], extension: &str) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, extension, 0, &mut files)?;
        } else if path.exists() {
            files.push(path.clone());
        } else {
            return Err(format!("`{}` does not exist", path.display()));
        }
        if files.len() > MAX_FILES {
            return Err(format!(
                "the paths hold more than {MAX_FILES} `*.{extension}` files: name fewer folders"
            ));
        }
    }
    Ok(files)
}

fn walk(dir: &Path, extension: &str, depth: usize, files: &mut Vec<PathBuf>) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "`{}` is more than {MAX_DEPTH} folders deep: name a folder nearer the files",
            dir.display()
        ));
    }
    let cannot = |e: std::io::Error| format!("cannot read `{}`: {e}", dir.display());
    let mut entries: Vec<std::fs::DirEntry> = std::fs::read_dir(dir)
        .map_err(cannot)?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            walk(&path, extension, depth + 1, files)?;
        } else if kind.is_symlink() && path.is_dir() {
            // Not followed: a link to a folder may make a cycle.
            continue;
        } else if path.extension().is_some_and(|e| e == extension) {
            files.push(path);
            if files.len() > MAX_FILES {
                return Ok(());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn links_to_folders_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("a.mcppol"), "").unwrap();
        std::os::unix::fs::symlink(root, root.join("loop")).unwrap();
        let found = under(&[root.to_path_buf()], "mcppol").unwrap();
        assert_eq!(found, [root.join("a.mcppol")]);
    }
}
