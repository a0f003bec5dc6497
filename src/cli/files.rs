//! The files a verb reads from its PATH arguments: a file as given, a
//! folder searched for files with one extension.

use std::path::{Path, PathBuf};

/// Every file under `paths` with the given extension, in a stable order: a
/// folder is searched (sorted, recursively), a file is taken as it is,
/// whatever its extension.
pub fn under(paths: &[PathBuf], extension: &str) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, extension, &mut files)
                .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
        } else if path.exists() {
            files.push(path.clone());
        } else {
            return Err(format!("`{}` does not exist", path.display()));
        }
    }
    Ok(files)
}

fn walk(dir: &Path, extension: &str, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, extension, files)?;
        } else if path.extension().is_some_and(|e| e == extension) {
            files.push(path);
        }
    }
    Ok(())
}
