//! Which server ids a policy names: its rules' targets, its `tools {}`
//! block and its `trusted` setting. `mcppol proxy` warns at start when
//! none names its `--server-id` (a misspelt id makes every call `no_rule`
//! and hides nothing).

use std::collections::BTreeSet;

use super::glob::Glob;
use super::names::fold;
use super::{Policy, Trusted};

/// The server part of a target or pattern as written: `None` when it
/// names every server (`*`, a bare tool name, a `*` server segment, or a
/// form this reading does not know, which counts as naming every server
/// so that it never warns falsely).
fn server_of(text: &str) -> Option<&str> {
    let mut t = text.trim();
    // `resource "..."`, `prompt "..."`: the keyword first.
    if !t.starts_with('"') && !t.starts_with('*') {
        if let Some((_, rest)) = t.split_once(char::is_whitespace) {
            t = rest.trim_start();
        }
    }
    let inner = t.strip_prefix('"')?;
    let end = inner.find('"')?;
    let quoted = &inner[..end];
    let after = inner[end + 1..].trim_start();
    let server = if after.starts_with('~') {
        quoted
    } else {
        quoted.split_once('/')?.0
    };
    if server.is_empty() || server.bytes().all(|b| b == b'*') {
        None
    } else {
        Some(server)
    }
}

/// What a policy says about server ids.
pub(crate) struct ServerNames {
    /// Some rule, pattern or setting names every server.
    pub(crate) every: bool,
    /// The server segments written (globs as written), sorted.
    pub(crate) written: BTreeSet<String>,
}

impl ServerNames {
    /// Whether `server` is named: exactly, or loosely (folded), as the
    /// deny, ask and exclude lists match.
    pub(crate) fn names(&self, server: &str) -> bool {
        self.every
            || self
                .written
                .iter()
                .any(|w| Glob::new(w).matches(server) || Glob::new(&fold(w)).matches(&fold(server)))
    }

    /// The written id closest to `server`, when it is close enough to be
    /// a likely misspelling.
    pub(crate) fn closest(&self, server: &str) -> Option<&str> {
        self.written
            .iter()
            .filter(|w| !w.contains(['*', '?']))
            .map(|w| (strsim::damerau_levenshtein(w, server), w))
            .filter(|(d, w)| *d <= (w.chars().count().max(server.chars().count()) / 3).max(2))
            .min()
            .map(|(_, w)| w.as_str())
    }
}

impl Policy {
    /// The server ids the policy's rules, `tools {}` block and `trusted`
    /// setting name.
    pub(crate) fn server_names(&self) -> ServerNames {
        let mut names = ServerNames {
            every: false,
            written: BTreeSet::new(),
        };
        let mut add = |text: &str| match server_of(text) {
            None => names.every = true,
            Some(s) => {
                names.written.insert(s.to_string());
            }
        };
        for rule in self.all_rules() {
            if rule.targets.is_empty() {
                // A rule with a condition only: every server.
                add("*");
            }
            for target in &rule.targets {
                add(target.text(&self.source));
            }
        }
        if let Some(vis) = &self.visibility {
            for p in &vis.patterns {
                add(self.source.text_of(p.span));
            }
        }
        match &self.settings.trusted {
            Trusted::None => {}
            Trusted::All => names.every = true,
            Trusted::Servers(set) => {
                names.written.extend(set.iter().map(|s| s.to_string()));
            }
        }
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PolicySet;

    fn names(text: &str) -> ServerNames {
        let set = PolicySet::from_text("p.mcppol", text).unwrap();
        set.get("p").unwrap().server_names()
    }

    #[test]
    fn reads_the_server_of_each_form() {
        assert_eq!(server_of("\"fs/read_*\""), Some("fs"));
        assert_eq!(server_of("\"read_file\""), None);
        assert_eq!(server_of("*"), None);
        assert_eq!(server_of("\"*/x\""), None);
        assert_eq!(server_of("\"gh*\" ~ /^get_/"), Some("gh*"));
        assert_eq!(server_of("resource \"fs/file:///srv/*\""), Some("fs"));
        assert_eq!(server_of("prompt \"p/x\""), Some("p"));
    }

    #[test]
    fn names_the_servers_of_rules_visibility_and_trust() {
        let n = names(
            "policy p {\n  trusted \"gh\"\n  tools { exclude \"hidden/x\" }\n  deny \"fs/rm\"\n  allow \"fs-*/read\"\n}",
        );
        assert!(!n.every);
        assert_eq!(
            n.written.iter().map(String::as_str).collect::<Vec<_>>(),
            ["fs", "fs-*", "gh", "hidden"]
        );
        assert!(n.names("fs") && n.names("FS") && n.names("fs-2") && n.names("gh"));
        assert!(!n.names("filesystem"));
        assert_eq!(n.closest("fss"), Some("fs"));
        assert_eq!(n.closest("github"), None);
        assert!(names("policy p {\n  deny \"fs/rm\"\n  allow \"read_file\"\n}").every);
        assert!(names("policy p {\n  deny *\n}").every);
    }
}
