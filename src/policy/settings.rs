//! A policy's settings, with the defaults of the contract.

use std::collections::HashSet;

/// What happens when no rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultDecision {
    Ask,
    Deny,
}

/// Which servers' annotations are believed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Trusted {
    #[default]
    None,
    All,
    Servers(HashSet<Box<str>>),
}

impl Trusted {
    pub fn contains(&self, server: &str) -> bool {
        match self {
            Trusted::None => false,
            Trusted::All => true,
            Trusted::Servers(set) => set.contains(server),
        }
    }
}

/// Which kinds of request the policy governs. Tool calls always are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope {
    pub resources: bool,
    pub prompts: bool,
}

/// The settings of one policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub default: DefaultDecision,
    pub scope: Scope,
    pub pin_tools: bool,
    pub allow_new_tools: bool,
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
            trusted: Trusted::None,
            roots: None,
        }
    }
}
