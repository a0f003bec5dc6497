//! What can go wrong when a store loads, updates or starts watching.

use std::fmt;
use std::path::PathBuf;

use crate::diagnostics::LoadError;

/// Why a store did not open, or why an update was refused.
///
/// A refused update changes nothing: the policies in force stay as they were.
///
/// `Debug` is `Display` (the drawn diagnostics), so a host's `main` that
/// returns this error prints a readable message, not a structure dump.
#[derive(Clone)]
pub enum StoreError {
    /// Policy text that did not load: every diagnostic of every file,
    /// drawn with its snippet by [`StoreError::render`] (and by `Display`,
    /// without colour).
    Load(LoadError),
    /// [`Store::update_file`](super::Store::update_file) named a file the
    /// store does not hold.
    UnknownFile(PathBuf),
    /// The file watcher could not start, and neither could polling.
    Watch(String),
}

impl StoreError {
    /// The error as a terminal shows it: for a load error, every diagnostic
    /// with its file, line, snippet and help.
    pub fn render(&self, color: bool) -> String {
        match self {
            StoreError::Load(e) => e.render(color),
            other => format!("{other}\n"),
        }
    }

    /// The diagnostics of a load error (none for the other kinds).
    pub fn diagnostics(&self) -> &[crate::Diagnostic] {
        match self {
            StoreError::Load(e) => &e.diagnostics,
            _ => &[],
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The whole drawing: a startup error must say which file, which
            // line and what to do, however the host prints it.
            StoreError::Load(e) => f.write_str(e.render(false).trim_end()),
            StoreError::UnknownFile(path) => write!(
                f,
                "`{}` is not a file of this store; update a loaded file or a policy by name",
                path.display()
            ),
            StoreError::Watch(message) => write!(f, "cannot watch the policy files: {message}"),
        }
    }
}

impl fmt::Debug for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for StoreError {}

impl miette::Diagnostic for StoreError {
    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn miette::Diagnostic> + 'a>> {
        match self {
            StoreError::Load(e) => miette::Diagnostic::related(e),
            _ => None,
        }
    }
}

impl From<LoadError> for StoreError {
    fn from(e: LoadError) -> Self {
        StoreError::Load(e)
    }
}
