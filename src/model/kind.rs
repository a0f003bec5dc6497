//! What a rule or a request is about: the kind of target (a tool call, a
//! resource read, a prompt get) and a rule's effect (`deny`, `ask`,
//! `allow`).
//!
//! The parser, the compiled policy, the evaluator and every front door
//! speak of these, so they live at the bottom, with no dependency on any
//! of them. The keyword table (`syntax::keywords`) lists `Effect`'s words
//! from here.

/// What a rule's targets name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TargetKind {
    /// A tool call (`tools/call`).
    Tool,
    /// A resource read (`resources/read`); the name is the URI.
    Resource,
    /// A prompt get (`prompts/get`).
    Prompt,
}

impl TargetKind {
    /// Every kind, in this order.
    pub const ALL: [TargetKind; 3] = [TargetKind::Tool, TargetKind::Resource, TargetKind::Prompt];
    /// `tool`, `resource` or `prompt`.
    pub fn as_str(self) -> &'static str {
        match self {
            TargetKind::Tool => "tool",
            TargetKind::Resource => "resource",
            TargetKind::Prompt => "prompt",
        }
    }
    /// The kind's position in [`TargetKind::ALL`] (the slot of its index in
    /// a compiled policy).
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// `deny`, `ask` or `allow`: what a rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Effect {
    /// `deny`
    Deny,
    /// `ask`
    Ask,
    /// `allow`
    Allow,
}

impl Effect {
    /// Every effect, in the order of precedence (and of the rule lists).
    pub const ALL: &'static [Effect] = &[Effect::Deny, Effect::Ask, Effect::Allow];

    /// The word as written in a policy.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Deny => "deny",
            Effect::Ask => "ask",
            Effect::Allow => "allow",
        }
    }

    /// Deny and ask rules match names loosely (case and `-`, `.`, `_`
    /// folded); allow rules match them exactly.
    pub fn loose(self) -> bool {
        self != Effect::Allow
    }

    /// The effect spelt `word`, if any.
    pub fn from_name(word: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|k| k.as_str() == word)
    }

    /// The words, for suggestions and messages.
    pub fn names() -> impl Iterator<Item = &'static str> + Clone {
        Self::ALL.iter().map(|k| k.as_str())
    }

    /// The rule list of this effect in the compiled policy.
    pub fn index(self) -> usize {
        match self {
            Effect::Deny => 0,
            Effect::Ask => 1,
            Effect::Allow => 2,
        }
    }
}

impl std::fmt::Display for Effect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
