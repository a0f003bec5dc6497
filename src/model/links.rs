//! How a request's path tests read symbolic links: a setting a request
//! carries (the resolving itself is `crate::paths`'s).

/// A resolver of symbolic links that a host supplies (for a tool that acts
/// on a machine the host can see and this process cannot).
pub trait LinkResolver: Send + Sync {
    /// The absolute path `path` (lexically canonical) with the existing
    /// part read through its links; `None` when that fails.
    fn resolve(&self, path: &str) -> Option<String>;
}

/// Whether and how symbolic links are resolved before a path test.
#[derive(Clone, Copy, Default)]
pub enum Links<'a> {
    /// Not resolved: the path is read as written.
    #[default]
    Off,
    /// Through this machine's file system.
    ThisMachine,
    /// Through the host's resolver.
    Host(&'a dyn LinkResolver),
}

impl std::fmt::Debug for Links<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Links::Off => "Off",
            Links::ThisMachine => "ThisMachine",
            Links::Host(_) => "Host",
        })
    }
}
