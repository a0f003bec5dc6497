//! A policy's settings, with the defaults of the contract.

use std::collections::HashSet;

use super::index::TextHashState;

/// What happens when no rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultDecision {
    /// `default ask`: a person is asked (denied when there is none).
    Ask,
    /// `default deny`.
    Deny,
}

/// Which servers' annotations are believed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Trusted {
    /// No `trusted` setting: no server's annotations are believed.
    #[default]
    None,
    /// `trusted all`.
    All,
    /// `trusted "id", ...`: these servers'.
    Servers(HashSet<Box<str>>),
}

impl Trusted {
    /// Whether this server's annotations are believed.
    pub fn contains(&self, server: &str) -> bool {
        match self {
            Trusted::None => false,
            Trusted::All => true,
            Trusted::Servers(set) => set.contains(server),
        }
    }
}

/// The `trusted` setting as deciding reads it, made once at load: the ids
/// in a set hashed as the index's tables are. (The setting's own
/// `HashSet` hashes with SipHash, which was an eighth of a decision that
/// reads an annotation at 10,000 rules.) `eval::trusts` is the one place
/// that decides trust from it.
#[derive(Debug, Clone, Default)]
pub(crate) struct TrustedIds {
    /// `trusted all`.
    all: bool,
    /// The ids written, exactly.
    ids: HashSet<Box<str>, TextHashState>,
}

impl TrustedIds {
    /// The setting's ids.
    pub(crate) fn of(setting: &Trusted) -> Self {
        match setting {
            Trusted::None => TrustedIds::default(),
            Trusted::All => TrustedIds {
                all: true,
                ids: HashSet::default(),
            },
            Trusted::Servers(ids) => TrustedIds {
                all: false,
                ids: ids.iter().cloned().collect(),
            },
        }
    }

    /// Whether the setting names `server` (exactly as written), or is
    /// `trusted all`: what [`Trusted::contains`] answers.
    #[inline]
    pub(crate) fn contains(&self, server: &str) -> bool {
        self.all || (!self.ids.is_empty() && self.ids.contains(server))
    }
}

/// Which kinds of request the policy governs. Tool calls always are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Scope {
    /// Resource reads are governed (`scope tools, resources`).
    pub resources: bool,
    /// Prompt gets are governed (`scope tools, prompts`).
    pub prompts: bool,
}

/// The settings of one policy.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Settings {
    /// `default ask|deny` (`ask` if not written).
    pub default: DefaultDecision,
    /// `scope ...` (tools only if not written).
    pub scope: Scope,
    /// `pin_tools on|off` (on if not written).
    pub pin_tools: bool,
    /// `allow_new_tools on|off` (off if not written).
    pub allow_new_tools: bool,
    /// `resolve_links on|off`; `None` when not written: then the
    /// enforcement point's own default holds (on where the tool acts on
    /// this machine, off for a remote server).
    pub resolve_links: Option<bool>,
    /// `trusted ...` (none if not written).
    pub trusted: Trusted,
    /// `roots "/srv/work", ...`: the folders a server may be given, each
    /// canonical; `None` when the policy does not set them.
    pub roots: Option<Box<[String]>>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            default: DefaultDecision::Ask,
            scope: Scope {
                resources: false,
                prompts: false,
            },
            pin_tools: true,
            allow_new_tools: false,
            resolve_links: None,
            trusted: Trusted::None,
            roots: None,
        }
    }
}
