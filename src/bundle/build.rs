//! `mcppol bundle build`: a folder's policy and lock files, checked, with
//! a signed manifest, in one file.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use ed25519_dalek::{Signer, SigningKey};

use super::check::check_files;
use super::{
    hex, is_bundled_name, key_id, path_problem, revision_problem, sha256, BundleError, Envelope,
    FileText, Manifest, ManifestFile, Step, FORMAT, MAX_BUNDLE_BYTES, MAX_FILES, MAX_FILE_BYTES,
    MAX_PATH_DEPTH,
};
use crate::Diagnostic;

/// What a build is told besides the folder and the key.
pub(crate) struct BuildOptions {
    /// The revision; `None` takes the digest of the files (the same files
    /// make the same revision).
    pub(crate) revision: Option<String>,
    /// The build time the manifest records.
    pub(crate) built_at: SystemTime,
}

/// A bundle made.
pub(crate) struct Built {
    /// The bundle file's bytes.
    pub(crate) bytes: Vec<u8>,
    pub(crate) manifest: Manifest,
    /// The policy files' warnings (a build with warnings still succeeds).
    pub(crate) warnings: Vec<Diagnostic>,
}

/// Reads every policy and lock file below `dir`, checks them, and signs
/// their manifest with `key`.
pub(crate) fn build(
    dir: &Path,
    key: &SigningKey,
    options: &BuildOptions,
) -> Result<Built, BundleError> {
    if !dir.is_dir() {
        return Err(
            BundleError::new(Step::Read, format!("`{}` is not a folder", dir.display()))
                .help("give the folder that holds the `*.mcppol` files"),
        );
    }
    let mut paths = Vec::new();
    walk(dir, 0, &mut paths)?;
    let mut files = Vec::with_capacity(paths.len());
    for path in &paths {
        let name = relative_name(dir, path)?;
        if let Some(problem) = path_problem(&name) {
            return Err(BundleError::new(
                Step::Format,
                format!("`{}` cannot go in a bundle: {problem}", path.display()),
            ));
        }
        let text = crate::io::read_text(path, MAX_FILE_BYTES as u64, "bundled file")
            .map_err(|e| BundleError::new(Step::Read, e))?;
        files.push(FileText { path: name, text });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    if !files.iter().any(|f| super::is_policy_path(&f.path)) {
        return Err(BundleError::new(
            Step::Policy,
            format!("`{}` holds no `*.mcppol` file", dir.display()),
        ));
    }
    let checked = check_files(&files)?;
    let manifest_files: Vec<ManifestFile> = files
        .iter()
        .map(|f| ManifestFile {
            path: f.path.clone(),
            sha256: sha256(f.text.as_bytes()),
            bytes: f.text.len() as u64,
        })
        .collect();
    let revision = match &options.revision {
        Some(r) => {
            if let Some(problem) = revision_problem(r) {
                return Err(BundleError::new(
                    Step::Format,
                    format!("--revision `{r}`: {problem}"),
                ));
            }
            r.clone()
        }
        None => content_revision(&manifest_files),
    };
    let manifest = Manifest {
        mcppol_bundle: FORMAT,
        revision,
        built_at: humantime::format_rfc3339_seconds(options.built_at).to_string(),
        key: key_id(&key.verifying_key()),
        policies: checked.policies.keys().cloned().collect(),
        files: manifest_files,
    };
    let manifest_text = serde_json::to_string(&manifest)
        .map_err(|e| BundleError::new(Step::Format, format!("cannot write the manifest: {e}")))?;
    let signature = key.sign(manifest_text.as_bytes());
    let envelope = Envelope {
        mcppol_bundle: FORMAT,
        manifest: manifest_text,
        signature: hex(&signature.to_bytes()),
        files,
    };
    let mut bytes = serde_json::to_vec(&envelope)
        .map_err(|e| BundleError::new(Step::Format, format!("cannot write the bundle: {e}")))?;
    bytes.push(b'\n');
    if bytes.len() as u64 > MAX_BUNDLE_BYTES {
        return Err(BundleError::new(
            Step::Format,
            format!(
                "the bundle would hold {} bytes, over the {MAX_BUNDLE_BYTES}-byte limit",
                bytes.len()
            ),
        )
        .help("split the policies into several bundles"));
    }
    Ok(Built {
        bytes,
        manifest,
        warnings: checked.warnings,
    })
}

/// The revision of a bundle built without `--revision`: the digest of its
/// files' paths and digests, shortened.
fn content_revision(files: &[ManifestFile]) -> String {
    let listing: String = files
        .iter()
        .map(|f| format!("{} {}\n", f.sha256, f.path))
        .collect();
    let digest = sha256(listing.as_bytes());
    let hex = digest.trim_start_matches("sha256:");
    format!("sha256:{}", hex.get(..16).unwrap_or(hex))
}

/// The file's path below `dir`, `/`-separated.
fn relative_name(dir: &Path, path: &Path) -> Result<String, BundleError> {
    let relative = path.strip_prefix(dir).unwrap_or(path);
    let mut parts = Vec::new();
    for part in relative.components() {
        match part.as_os_str().to_str() {
            Some(p) => parts.push(p),
            None => {
                return Err(BundleError::new(
                    Step::Format,
                    format!("`{}`: the path is not UTF-8", path.display()),
                ))
            }
        }
    }
    Ok(parts.join("/"))
}

/// Every file below `dir` whose name makes it part of a bundle, skipping
/// names that start with `.` (as the store does) and links to folders.
fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<(), BundleError> {
    if depth >= MAX_PATH_DEPTH {
        return Err(BundleError::new(
            Step::Format,
            format!(
                "`{}` is more than {MAX_PATH_DEPTH} folders deep",
                dir.display()
            ),
        ));
    }
    let cannot = |e: std::io::Error| {
        BundleError::new(Step::Read, format!("cannot read `{}`: {e}", dir.display()))
    };
    let mut entries: Vec<std::fs::DirEntry> = std::fs::read_dir(dir)
        .map_err(cannot)?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            walk(&path, depth + 1, out)?;
        } else if kind.is_symlink() && path.is_dir() {
            continue;
        } else if is_bundled_name(&name) {
            out.push(path);
            if out.len() > MAX_FILES {
                return Err(BundleError::new(
                    Step::Format,
                    format!("the folder holds more than {MAX_FILES} policy and lock files"),
                )
                .help("split the policies into several bundles"));
            }
        }
    }
    Ok(())
}
