//! One file's part of a refresh: finding the files under the roots,
//! reading one, compiling it, checking it against the policies in force and
//! swapping in its version; and recording what did not load.

use crate::diagnostics::codes;
use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use arc_swap::ArcSwap;

use super::{digest, Entry, Owner, Root, Snapshot, State, Version};
use crate::compile;
use crate::diagnostics::{Diagnostic, LoadError, SourceFile};
use crate::store::status::LastError;
use crate::syntax::Span;

pub(super) fn io_error(path: &Path, message: impl Into<String>) -> LoadError {
    let source = SourceFile::new(path.display().to_string(), String::new());
    LoadError::new(vec![Diagnostic::error(
        &source,
        codes::IO_READ,
        Span::default(),
        message,
    )
    .with_help("check the path and its permissions")])
}

/// Every `*.mcppol` file below `dir`, in a stable order. Entries whose name
/// starts with `.` are skipped (editor swap files, `.git`, and the `..data`
/// links of Kubernetes volumes, which would give every file twice), and so
/// are symbolic links to folders (no cycles); links to files are followed.
pub(super) fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            walk(&path, files)?;
        } else if path.extension().is_some_and(|e| e == "mcppol") && path.is_file() {
            files.push(path);
        }
    }
    Ok(())
}

/// The help of a `duplicate_policy`: a link that reaches a file the store
/// already reads is named as such.
fn same_file_help(path: &Path, other: &Path) -> String {
    let same = match (std::fs::canonicalize(path), std::fs::canonicalize(other)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        format!(
            "`{}` and `{}` are the same file (a link): the store reads it twice; remove the \
             link or keep it out of the policy folder",
            path.display(),
            other.display()
        )
    } else {
        "a policy name may be defined in one file only: rename one".to_string()
    }
}

pub(super) fn is_clash(e: &LoadError) -> bool {
    e.diagnostics
        .iter()
        .any(|d| d.code == codes::STORE_DUPLICATE_POLICY)
}

pub(super) enum Outcome {
    Unchanged,
    Loaded,
    Failed(LoadError),
    Removed,
}

impl State {
    /// The files the roots hold now.
    pub(super) fn files_on_disk(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for root in &self.roots {
            match root {
                Root::File(path) => out.push(path.clone()),
                Root::Dir(dir) => {
                    if let Err(e) = walk(dir, &mut out) {
                        tracing::warn!(
                            target: "mcppol::store",
                            folder = %dir.display(),
                            "cannot read the policy folder: {e}"
                        );
                    }
                }
            }
        }
        out
    }

    /// Reads one file and loads it if its text changed since last read.
    pub(super) fn refresh_file(&mut self, current: &ArcSwap<Snapshot>, path: &Path) -> Outcome {
        match std::fs::metadata(path) {
            Err(e) if e.kind() == ErrorKind::NotFound => return self.mark_removed(path),
            _ => {}
        }
        let text = match crate::read_policy_file(path) {
            Ok(text) => text,
            Err(message) => {
                // Gone between the two looks: the next refresh sees it removed.
                if !path.exists() {
                    return self.mark_removed(path);
                }
                let e = io_error(path, message);
                self.fail_file(path, None, &e, "policy file cannot be read");
                return Outcome::Failed(e);
            }
        };
        let digest = digest(&text);
        let file = self.files.entry(path.to_path_buf()).or_default();
        if file.last_seen.as_deref() == Some(digest.as_str()) {
            return Outcome::Unchanged;
        }
        match self.load_file(current, path, &text, &digest) {
            Ok(_) => Outcome::Loaded,
            Err(e) => {
                let conflict = is_clash(&e);
                self.fail_file(path, Some(digest.clone()), &e, "policy file did not load");
                // A name clash may clear without this text changing (the
                // other file drops the name): try it again next time.
                if !conflict {
                    if let Some(file) = self.files.get_mut(path) {
                        file.last_seen = Some(digest);
                    }
                }
                Outcome::Failed(e)
            }
        }
    }

    pub(super) fn mark_removed(&mut self, path: &Path) -> Outcome {
        let Some(file) = self.files.get_mut(path) else {
            return Outcome::Unchanged;
        };
        file.last_seen = None;
        if file.removed {
            return Outcome::Unchanged;
        }
        file.removed = true;
        tracing::warn!(
            target: "mcppol::store",
            file = %path.display(),
            policies = ?file.owned,
            "policy file removed; its last good policies stay in force until a new version loads"
        );
        Outcome::Removed
    }

    /// Records a text that did not load; logs it unless it is the same
    /// failure as last time.
    pub(super) fn fail_file(
        &mut self,
        path: &Path,
        digest: Option<String>,
        e: &LoadError,
        what: &str,
    ) {
        let rendered = e.render(false);
        let file = self.files.entry(path.to_path_buf()).or_default();
        let same = file
            .error
            .as_ref()
            .is_some_and(|old| old.digest == digest && old.rendered == rendered);
        if !same {
            let in_force = match &file.in_force {
                Some(_) => "the last good version stays in force",
                None => "no version of it is in force",
            };
            tracing::error!(
                target: "mcppol::store",
                file = %path.display(),
                digest = digest.as_deref().unwrap_or("-"),
                "{what}; {in_force}\n{rendered}"
            );
        }
        file.error = Some(LastError {
            rendered,
            digest,
            at: SystemTime::now(),
        });
    }

    /// Compiles a new version of a file and, if it is good, swaps it in.
    pub(super) fn load_file(
        &mut self,
        current: &ArcSwap<Snapshot>,
        path: &Path,
        text: &str,
        digest: &str,
    ) -> Result<u64, LoadError> {
        let source = SourceFile::new(path.display().to_string(), text);
        let set = compile::load(Arc::clone(&source), &self.options)?;
        if set.is_empty() {
            return Err(LoadError::new(vec![Diagnostic::error(
                &source,
                codes::STORE_NO_POLICY,
                Span::default(),
                format!("`{}` defines no policy", path.display()),
            )
            .with_help(
                "a policy file must define at least one policy; an empty file is taken for a \
                 write in progress, so the last good version stays in force",
            )]));
        }
        let old = current.load_full();
        let conflicts: Vec<Diagnostic> = set
            .iter()
            .filter_map(|p| match old.policies.get(&p.name).map(|e| &e.owner) {
                Some(Owner::File(other))
                    if other != path && self.files.get(other).is_some_and(|f| !f.removed) =>
                {
                    Some(
                        Diagnostic::error(
                            &source,
                            codes::STORE_DUPLICATE_POLICY,
                            p.name_span,
                            format!(
                                "policy `{}` is already loaded from `{}`",
                                p.name,
                                other.display()
                            ),
                        )
                        .with_label("defined again here")
                        .with_help(same_file_help(path, other)),
                    )
                }
                _ => None,
            })
            .collect();
        if !conflicts.is_empty() {
            return Err(LoadError::new(conflicts));
        }

        let generation = old.generation + 1;
        let loaded_at = SystemTime::now();
        let digest: Arc<str> = Arc::from(digest);
        let mut policies = old.policies.clone();
        let previous = self
            .files
            .get(path)
            .map(|f| f.owned.clone())
            .unwrap_or_default();
        for name in &previous {
            if policies
                .get(name)
                .is_some_and(|e| e.owner == Owner::File(path.to_path_buf()))
            {
                policies.remove(name);
            }
        }
        let mut owned = BTreeSet::new();
        for policy in set.iter() {
            let entry = Entry {
                policy: Arc::clone(policy),
                owner: Owner::File(path.to_path_buf()),
                generation,
                digest: Arc::clone(&digest),
                loaded_at,
            };
            // Taken over from a removed file or from an update by name.
            if let Some(Entry {
                owner: Owner::File(other),
                ..
            }) = policies.insert(policy.name.clone(), entry)
            {
                if other != path {
                    if let Some(f) = self.files.get_mut(&other) {
                        f.owned.remove(&policy.name);
                    }
                }
            }
            self.update_errors.remove(&policy.name);
            owned.insert(policy.name.clone());
        }
        let removed: Vec<String> = previous
            .iter()
            .filter(|name| !owned.contains(*name) && !policies.contains_key(*name))
            .cloned()
            .collect();
        current.store(Arc::new(Snapshot {
            generation,
            policies,
            bundle: super::old_bundle(current),
        }));
        self.notify(&super::Swapped {
            generation,
            loaded: owned.iter().cloned().collect(),
            removed,
            file: Some(path.to_path_buf()),
        });

        let file = self.files.entry(path.to_path_buf()).or_default();
        file.in_force = Some(Version {
            digest: Arc::clone(&digest),
            generation,
            loaded_at,
        });
        file.owned = owned;
        file.removed = false;
        file.error = None;
        file.last_seen = Some(digest.to_string());
        tracing::info!(
            target: "mcppol::store",
            file = %path.display(),
            generation,
            digest = %digest,
            policies = ?file.owned,
            "policy file loaded"
        );
        Ok(generation)
    }

    /// Forgets removed files that no longer provide any policy.
    pub(super) fn prune(&mut self) {
        self.files.retain(|_, f| !(f.removed && f.owned.is_empty()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_skip_hidden_entries_and_other_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/..data")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        for file in [
            "z.mcppol",
            "a/b.mcppol",
            "a/..data/b.mcppol",
            ".git/c.mcppol",
            ".d.mcppol",
            "e.txt",
        ] {
            std::fs::write(root.join(file), "").unwrap();
        }
        let mut found = Vec::new();
        walk(root, &mut found).unwrap();
        assert_eq!(found, [root.join("a/b.mcppol"), root.join("z.mcppol")]);
    }
}
